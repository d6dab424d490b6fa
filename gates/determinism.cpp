// Gate 7, determinism: the same inputs give bitwise-identical outputs (or, where the schema declares it, outputs within its tolerance) in one process and in a fresh, differently poisoned one.
#include <rapidcheck.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <set>

#include "gauntlet/cases/case_cost.h"
#include "gauntlet/cases/gate.h"
#include "gauntlet/cases/judge.h"
#include "gauntlet/common/numerics.h"
#include "gauntlet/cases/property.h"

namespace gauntlet {
namespace {

constexpr const char* kGate = "determinism";
constexpr int kCasesPerBudget = 12;
constexpr uint32_t kRepeats = 3;  // calls in the first process
// The first process is open_session's (allocator poison 0xA5, one intra-op thread); the second
// differs in both, so a result that depends on uninitialized memory or on how work is split
// across threads changes.
constexpr uint8_t kFirstPoison = 0xA5, kSecondPoison = 0x5A;
constexpr int kFirstThreads = 1, kSecondThreads = 2;
// Scheduling-dependent reductions only split long rows: each dim is short or long with equal odds
// (cases over the cost cap have their largest dims halved).
constexpr int64_t kShortBelow = 512;
constexpr int64_t kLongSizes[] = {512, 2048, 8192};
constexpr int64_t kSizeCap = 8192;
// The race probe: one long reduction repeated in one process. A race between threads that combine
// partial results in the order they finish shows only where each thread has long work and the
// result is taken many times (a dozen short cases in two processes rarely reorder anything).
constexpr int64_t kRaceTerms = int64_t(1) << 22;  // the reduced dim's length, at most
constexpr int64_t kRaceCostCap = int64_t(1) << 23;
constexpr uint32_t kRaceRepeats = 16;
constexpr const char* kRaceLabel = "race probe: ";

// A round trip outside run_case, counted in the gate's timing the way run_case counts its own.
Outcome timed_call(GateContext& ctx, WorkerSession& session, const wire::CaseRequest& req) {
  const auto t0 = std::chrono::steady_clock::now();
  Outcome o = session.call(req);
  ctx.timing.call += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ctx.timing.kernel += o.reply.kernel_seconds;
  return o;
}

// Candidate sizes of a dim, smallest first (the shrink target), inside the kernel's contract: short
// ones (small sizes and the schema's typical sizes below kShortBelow) or long ones (typical and
// fixed sizes from kShortBelow up to the cap). Empty when the contract has none of that kind.
std::vector<int64_t> sizes(const CaseSpace& space, const std::string& dim, bool long_sizes) {
  auto [lo, hi] = space.limits_for(dim);
  std::set<int64_t> s;
  if (long_sizes) s.insert(std::begin(kLongSizes), std::end(kLongSizes));
  else s = {1, 2, 3, 8};
  for (int64_t v : space.sizes_for(dim)) s.insert(v);
  std::vector<int64_t> out;
  for (int64_t v : s)
    if (v >= std::max<int64_t>(lo, 1) && v <= hi && v <= kSizeCap && (v >= kShortBelow) == long_sizes) out.push_back(v);
  return out;
}

// Draws dims (uniformly over the candidates), shape alternative, dtype, attributes, distribution
// and seed; false when the schema's constraints or the cost cap reject the combination.
bool draw_case(const CaseSpace& space, int64_t cost_cap, Case* out) {
  const OpSchema& schema = space.schema();
  if (space.dtypes().empty()) return false;
  std::map<std::string, int64_t> dims;
  for (const auto& [name, domain] : schema.dims) {
    const bool want_long = draw_uniform(2) == 1;
    std::vector<int64_t> c = sizes(space, name, want_long);
    if (c.empty()) c = sizes(space, name, !want_long);
    if (c.empty()) c = {std::max<int64_t>(space.limits_for(name).first, 1)};
    dims[name] = c[size_t(draw_uniform(int64_t(c.size())))];
  }
  const size_t nalt = schema.inputs.empty() ? 1 : schema.inputs[0].shapes.size();
  const size_t alt = size_t(draw_uniform(int64_t(nalt)));
  const DType dtype = draw_precise_dtype(space.dtypes());
  const AttrMap attrs = draw_attrs(space, alt);
  // Heavy tails and outliers make summation order visible in the low bits.
  static const Distribution dists[] = {Distribution::Normal, Distribution::HeavyTailed, Distribution::Outliers};
  const Distribution dist = dists[draw_uniform(3)];
  const uint64_t seed = pick_seed();
  std::string error;
  if (!space.build(dims, alt, attrs, dtype, dist, seed, out, &error)) return false;
  // Too costly: halve the largest dim (within its limits) until it fits, rather than discard.
  while (case_cost(schema, *out) > cost_cap) {
    auto largest = std::max_element(dims.begin(), dims.end(), [](auto& a, auto& b) { return a.second < b.second; });
    const int64_t half = largest->second / 2;
    if (half < std::max<int64_t>(space.limits_for(largest->first).first, 1)) return false;
    largest->second = half;
    if (!space.build(dims, alt, attrs, dtype, dist, seed, out, &error)) return false;
  }
  return true;
}

// The race probe's case: the reduced dim as long as the contract and kRaceCostCap allow, every
// other dim at its smallest, the widest dtype, heavy-tailed values (partial sums of very different
// magnitudes, so their order shows in the low bits). false when the op reduces over no single dim.
bool race_case(const CaseSpace& space, uint64_t seed, Case* out) {
  const OpSchema& schema = space.schema();
  if (!schema.reduction || schema.inputs.empty() || schema.inputs[0].shapes.empty() || space.dtypes().empty()) return false;
  AttrMap attrs;
  for (const AttrSpec& a : schema.attributes) {
    auto fixed = space.manifest().attrs.find(a.name);
    attrs[a.name] = fixed != space.manifest().attrs.end() ? fixed->second : a.default_value;
  }
  std::string reduced = schema.reduction->K;  // a plain dim name (matmul's K), or ...
  if (!schema.reduction->dim_attr.empty()) {   // ... the first input's dim the attribute names
    const auto& pattern = schema.inputs[0].shapes[0];
    auto it = attrs.find(schema.reduction->dim_attr);
    const int64_t rank = int64_t(pattern.size());
    int64_t d = it != attrs.end() && std::holds_alternative<int64_t>(it->second) ? std::get<int64_t>(it->second) : -1;
    if (d < 0) d += rank;
    if (d < 0 || d >= rank) return false;
    reduced = pattern[size_t(d)];
  }
  if (!schema.dims.count(reduced)) return false;
  std::map<std::string, int64_t> dims;
  for (const auto& [name, domain] : schema.dims) dims[name] = std::max<int64_t>(space.limits_for(name).first, 1);
  dims[reduced] = std::min(space.limits_for(reduced).second, kRaceTerms);
  const DType widest = most_precise(space.dtypes());
  std::string error;
  while (true) {
    if (!space.build(dims, 0, attrs, widest, Distribution::HeavyTailed, seed, out, &error)) return false;
    if (case_cost(schema, *out) <= kRaceCostCap) break;
    dims[reduced] /= 2;
    if (dims[reduced] < std::max<int64_t>(space.limits_for(reduced).first, 1)) return false;
  }
  out->label = kRaceLabel + out->label;
  return out->dims.at(reduced) >= 4096;  // shorter rows than that race in no kernel worth the probe
}

std::string value_text(const at::Tensor& t, int64_t flat) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", t.reshape({-1})[flat].item<double>());
  return buf;
}

std::string shape_text(at::IntArrayRef s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? "," : "") + std::to_string(s[i]);
  return t + "]";
}

}  // namespace

// Testable pieces (tests/gates/determinism_test.cpp declares them).
namespace determinism_gate {

// Byte-level comparison of two outputs (NaN payloads and the sign of zero included).
struct Difference {
  int64_t first = -1;  // flat index of the first differing element, -1: identical
  int64_t count = 0;
};
Difference byte_difference(const at::Tensor& a, const at::Tensor& b) {
  Difference d;
  const at::Tensor x = a.contiguous(), y = b.contiguous();
  const size_t es = size_t(x.element_size());
  const char* p = static_cast<const char*>(x.data_ptr());
  const char* q = static_cast<const char*>(y.data_ptr());
  for (int64_t i = 0; i < x.numel(); ++i)
    if (std::memcmp(p + size_t(i) * es, q + size_t(i) * es, es) != 0) {
      if (d.first < 0) d.first = i;
      ++d.count;
    }
  return d;
}

// A later run of a schema that declares "determinism": "tolerance" (bounded nondeterminism, e.g.
// float atomics adding in arrival order): "" when `later` is within the output's tolerance of the
// oracle `ref` (float64, with its `scale`) and of the `first` run (compared as if it were the
// reference, with the oracle's scale and K, so two runs may differ by no more than one may err).
// Bitwise equality is not asked for; NaN-ness and infinities must still match.
std::string tolerance_difference(const std::string& oname, const at::Tensor& first, const at::Tensor& later,
                                 const at::Tensor& ref, const at::Tensor& scale, DType dtype, const Tolerance& tol,
                                 int64_t K, nlohmann::json* evidence) {
  Judgement j = judge_output(oname, later, ref, scale, dtype, tol, K);
  std::string against = "the oracle";
  if (j.pass && first.defined()) {
    j = judge_output(oname, later, first.to(at::kDouble), scale, dtype, tol, K);
    against = "the first call";
  }
  if (j.pass) return "";
  *evidence = {{"got", j.got}, {"expected", j.expected}, {"error", j.error}, {"allowed", j.allowed}, {"against", against}};
  return "against " + against + ": " + j.message;
}

}  // namespace determinism_gate

namespace {

using determinism_gate::byte_difference;
using determinism_gate::Difference;

// The second process: its own child, loaded with the other poison byte and thread count, reopened
// after a crash.
class SecondProcess {
 public:
  explicit SecondProcess(GateContext& ctx) : ctx_(ctx) {}
  WorkerSession* get(GateVerdict* failed) {
    if (session_) return session_.get();
    failed->name = kGate;
    const auto t0 = std::chrono::steady_clock::now();
    struct AddSpawn {  // counted like open_session's children
      GateContext& ctx;
      std::chrono::steady_clock::time_point t0;
      ~AddSpawn() {
        ctx.timing.spawn += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        ++ctx.timing.children;
      }
    } add{ctx_, t0};
    std::string error;
    session_ = ctx_.launcher.spawn(&error);
    if (!session_) {
      failed->status = Status::HarnessError;
      failed->category = Category::HarnessError;
      failed->message = "cannot start a second sandboxed worker: " + error;
      return nullptr;
    }
    wire::LoadRequest second;
    second.so_path = ctx_.so_path;
    second.entry = python_load_entry(ctx_.manifest, ctx_.manifest.entry);
    second.build_dir = ctx_.manifest.module_build_dir;  // a Python module's prebuilt extensions
    second.poison_byte = kSecondPoison;
    second.intra_op_threads = kSecondThreads;
    set_load_device(ctx_, &second);
    Outcome o = session_->load(second);
    if (o.kind != Outcome::Kind::Ok) {
      session_.reset();
      failed->status = status_for(o.kind);
      failed->category = o.category;
      failed->message = "loading the kernel in the second process: " + o.message;
      return nullptr;
    }
    return session_.get();
  }
  void reset() { session_.reset(); }

 private:
  GateContext& ctx_;
  std::unique_ptr<WorkerSession> session_;
};

class DeterminismGate : public Gate {
 public:
  std::string name() const override { return kGate; }

  GateVerdict run(GateContext& ctx) override {
    SessionHolder first(ctx, kGate);
    SecondProcess second(ctx);
    {
      // A kernel that does not load fails here once, not once per shrink step.
      GateVerdict failed;
      if (!first.get(&failed) || !second.get(&failed)) return failed;
    }
    int judged = 0;
    const CaseBudget budget = case_budget(ctx.space, kCaseCostCap, kCasesPerBudget);
    auto pick = [&]() {
      Case c;
      RC_PRE(draw_case(ctx.space, budget.cap, &c));
      return c;
    };
    bool halted = false;  // after a crash or hang: later cases count as passing, which ends shrinking
    auto check = [&](const Case& c) {
      GateVerdict v;
      v.name = kGate;
      if (halted) return v;
      WorkerSession* a = first.get(&v);
      WorkerSession* b = a ? second.get(&v) : nullptr;
      if (!a || !b) {
        halted = true;
        return v;
      }
      bool first_died = false, second_died = false;
      v = check_case(ctx, *a, *b, c, &first_died, &second_died);
      if (first_died) first.reset();
      if (second_died) second.reset();
      if (ends_search(v)) halted = true;
      if (v.status == Status::Pass) ++judged;
      return v;
    };
    PropertyOutcome p = run_property(ctx, kGate, budget.cases * ctx.budget, pick, check);
    if (p.failed) {
      GateVerdict v = p.verdict;
      v.cases = p.cases + p.shrink_steps;
      if (v.status == Status::Fail)
        v.message += " (smallest of " + std::to_string(p.shrink_steps) + " shrink steps)";
      v.evidence["shrink_steps"] = p.shrink_steps;
      return v;
    }
    // The race probe, after the search (its case is large, so it is not shrunk): bitwise schemas only.
    int race_calls = 0;
    Case race;
    if (bitwise(ctx) && judged > 0 && race_case(ctx.space, ctx.case_seed(kGate, 0x9ACE), &race)) {
      GateVerdict failed;
      WorkerSession* a = first.get(&failed);
      WorkerSession* b = a ? second.get(&failed) : nullptr;
      if (!a || !b) return failed;
      bool first_died = false, second_died = false;
      race.index = uint64_t(p.cases);
      GateVerdict r = check_case(ctx, *a, *b, race, &first_died, &second_died);
      if (r.status != Status::Pass) {
        r.cases = p.cases + 1;
        if (r.status == Status::Fail)
          r.message += " (a race: " + std::to_string(kRaceRepeats) + " calls of one long reduction in one process)";
        return r;
      }
      race_calls = int(kRaceRepeats) + 1;
    }
    GateVerdict v;
    v.name = kGate;
    v.cases = p.cases + (race_calls > 0);
    if (judged == 0) {
      v.status = Status::HarnessError;
      v.category = Category::HarnessError;
      v.message = "no valid case could be generated from the schema and manifest";
      return v;
    }
    v.message = std::to_string(judged) + " cases: " + std::to_string(kRepeats) + " calls in one process and 1 in a fresh one (" +
                poison_text() + ") " + (bitwise(ctx) ? "bitwise identical" : "within tolerance");
    if (race_calls > 0) {
      v.message += "; race probe: " + race.label.substr(std::string(kRaceLabel).size()) + ", " +
                   std::to_string(kRaceRepeats) + " calls in one process and 1 in a fresh one, bitwise identical";
      v.evidence["race_probe"] = {{"case", race.label}, {"calls", race_calls}};
    }
    if (ctx.manifest.device == "cuda")
      v.message += "; on the GPU each poison is also written over the CUDA caching allocator's free memory before "
                   "every call (device buffers from LibTorch's allocator; cudaMalloc'd or static ones are not)";
    if (budget.raised()) {
      v.message += "; " + budget.note();
      v.evidence["case_cost_floor"] = budget.floor;
    }
    return v;
  }

  GateVerdict check_one(GateContext& ctx, const Case& c) override {
    GateVerdict failed;
    auto a = open_session(ctx, kGate, &failed);
    if (!a) return failed;
    SecondProcess second(ctx);
    WorkerSession* b = second.get(&failed);
    if (!b) return failed;
    bool first_died = false, second_died = false;
    return check_case(ctx, *a, *b, c, &first_died, &second_died);
  }

 private:
  static std::string poison_text() {
    char buf[160];
    std::snprintf(buf, sizeof buf, "allocator poison 0x%02X and %d intra-op thread%s, then 0x%02X and %d threads", kFirstPoison,
                  kFirstThreads, kFirstThreads == 1 ? "" : "s", kSecondPoison, kSecondThreads);
    return buf;
  }
  static bool bitwise(const GateContext& ctx) { return ctx.schema.determinism == "bitwise"; }
  // A race probe's case (its label says so, in a replay file too) is called kRaceRepeats times.
  static uint32_t repeats_for(const Case& c) { return c.label.rfind(kRaceLabel, 0) == 0 ? kRaceRepeats : kRepeats; }

  GateVerdict check_case(GateContext& ctx, WorkerSession& a, WorkerSession& b, const Case& c, bool* a_died, bool* b_died) {
    GateVerdict v;
    v.name = kGate;
    v.cases = 1;
    CaseRun run;
    if (bitwise(ctx)) {
      // Bitwise reproducibility needs no reference: skip the oracle's cost.
      run.c = c;
      const auto t0 = std::chrono::steady_clock::now();
      run.inputs = materialize_all(c);
      ctx.timing.inputs += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      wire::CaseRequest first;
      first.case_id = c.index;
      first.args = make_args(ctx.schema, run.inputs, c.attrs);
      first.repeat = repeats_for(c);
      run.outcome = timed_call(ctx, a, first);
    } else {
      run = run_case(ctx, a, c, repeats_for(c));
    }
    note_outputs(v, run);
    if (run.outcome.kind != Outcome::Kind::Ok) {
      *a_died = run.outcome.kind == Outcome::Kind::Died || run.outcome.kind == Outcome::Kind::TimedOut;
      v = verdict_from_outcome(ctx, kGate, run);
      v.cases = 1;
      if (v.status != Status::HarnessError) v.replay = write_replay(ctx, kGate, run, v);
      return v;
    }
    wire::CaseRequest req;
    req.case_id = c.index;
    req.args = make_args(ctx.schema, run.inputs, c.attrs);
    CaseRun fresh;
    fresh.c = c;
    fresh.c.label = c.label + " (second process)";
    fresh.outcome = timed_call(ctx, b, req);
    // Declared nondeterministic: judged like the first process's outputs, in the oracle's order.
    if (!bitwise(ctx)) fresh.unmatched = match_to_oracle(ctx, run.inputs, c.attrs, run.oracle.outputs, fresh.outcome);
    if (fresh.outcome.kind != Outcome::Kind::Ok) {
      *b_died = fresh.outcome.kind == Outcome::Kind::Died || fresh.outcome.kind == Outcome::Kind::TimedOut;
      v = verdict_from_outcome(ctx, kGate, fresh);
      v.cases = 1;
      v.message += " (the first process, " + poison_text().substr(0, poison_text().find(", then")) + ", returned outputs)";
      v.replay = write_replay(ctx, kGate, run, v);
      return v;
    }
    // Every later call against the first; the message names the first pair that differs.
    struct Named {
      const wire::CallOutputs* outs;
      std::string what;
    };
    std::vector<Named> others;
    // Declared nondeterministic: the first call is judged against the oracle like the others.
    if (!bitwise(ctx)) others.push_back({&run.outcome.reply.calls.at(0), "call 1"});
    for (size_t k = 1; k < run.outcome.reply.calls.size(); ++k)
      others.push_back({&run.outcome.reply.calls[k], "call " + std::to_string(k + 1) + " in the same process"});
    char second_name[96];
    std::snprintf(second_name, sizeof second_name, "a fresh process (allocator poison 0x%02X, %d intra-op threads)", kSecondPoison,
                  kSecondThreads);
    others.push_back({&fresh.outcome.reply.calls.at(0), second_name});
    const wire::CallOutputs& ref = run.outcome.reply.calls.at(0);
    for (const Named& o : others) {
      std::string why = compare(ctx, run, ref, *o.outs, &v.evidence);
      if (why.empty()) continue;
      v.status = Status::Fail;
      v.category = Category::WrongResult;
      v.message = "case " + c.label + ": " + o.what + (bitwise(ctx) ? " differs from the first call: " : " is outside the declared bound ") + why;
      v.evidence["differing_call"] = o.what;
      v.replay = write_replay(ctx, kGate, run, v);
      return v;
    }
    return v;
  }

  // "" when `got` reproduces `ref`: bitwise (schema determinism "bitwise"), else each within the
  // schema's tolerance of the oracle.
  std::string compare(GateContext& ctx, const CaseRun& run, const wire::CallOutputs& ref, const wire::CallOutputs& got,
                      nlohmann::json* evidence) {
    if (got.outputs.size() != ref.outputs.size())
      return std::to_string(got.outputs.size()) + " outputs instead of " + std::to_string(ref.outputs.size());
    for (size_t i = 0; i < ref.outputs.size(); ++i) {
      const std::string oname = i < ctx.schema.outputs.size() ? ctx.schema.outputs[i].name : "output" + std::to_string(i);
      const at::Tensor& x = ref.outputs[i];
      const at::Tensor& y = got.outputs[i];
      if (x.sizes() != y.sizes() || x.scalar_type() != y.scalar_type())
        return oname + " is " + std::string(c10::toString(y.scalar_type())) + shape_text(y.sizes()) + " instead of " +
               std::string(c10::toString(x.scalar_type())) + shape_text(x.sizes());
      // Runs that may differ only up to the outputs' equivalence (topk's tied indices) were each put
      // in the oracle's order (match_to_oracle): what is left must repeat bitwise. A wrong answer
      // that repeats is the accuracy gate's finding, not this one's.
      const bool equivalence = ctx.schema.determinism == "equivalence";
      if (bitwise(ctx) || equivalence) {
        const Difference d = byte_difference(x, y);
        if (d.first < 0) continue;
        *evidence = {{"index", d.first}, {"first", value_text(x, d.first)}, {"later", value_text(y, d.first)},
                     {"differing_elements", d.count}, {"elements", x.numel()}};
        return oname + index_text(x.sizes(), d.first) + " = " + value_text(y, d.first) + " instead of " + value_text(x, d.first) +
               " (" + std::to_string(d.count) + " of " + std::to_string(x.numel()) +
               (equivalence ? " elements differ in their bytes once both are put in the oracle's order; the schema lets runs "
                              "differ only up to that order)"
                            : " elements differ in their bytes; the schema declares bitwise determinism)");
      }
      // Declared nondeterministic within a bound: each result within the tolerance of the oracle
      // and of the first call; an integer output (no floating tolerance) stays bitwise.
      const DType case_dtype = gauntlet::case_dtype(ctx.schema, run.c);
      auto tol = ctx.schema.tolerance.find(case_dtype);
      const DType out_dtype = expected_output_dtype(ctx.schema, i, run.c);
      if (!dtype_is_floating(out_dtype) || tol == ctx.schema.tolerance.end()) {
        const Difference d = byte_difference(x, y);
        if (d.first < 0) continue;
        return oname + index_text(x.sizes(), d.first) + " = " + value_text(y, d.first) + " instead of " +
               value_text(x, d.first) + " (an output without a floating tolerance must repeat bitwise)";
      }
      if (i >= run.oracle.outputs.size() || y.sizes() != run.oracle.outputs[i].sizes()) continue;
      const at::Tensor scale = i < run.oracle.scales.size() ? run.oracle.scales[i] : at::Tensor();
      const at::Tensor first = &got == &ref ? at::Tensor() : x;
      const std::string why = determinism_gate::tolerance_difference(oname, first, y, run.oracle.outputs[i], scale, out_dtype,
                                                                     tol->second, reduction_terms(ctx.schema, run.c), evidence);
      if (why.empty()) continue;
      return why + " (the schema allows nondeterminism only within its tolerance: " + ctx.schema.determinism_notes + ")";
    }
    return "";
  }
};

}  // namespace

std::unique_ptr<Gate> make_determinism_gate() { return std::make_unique<DeterminismGate>(); }

}  // namespace gauntlet
