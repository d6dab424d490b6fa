// RapidCheck-driven case search and shrinking for gates (see include/gauntlet/cases/property.h).
#include "gauntlet/cases/property.h"

#include <fcntl.h>
#include <rapidcheck.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <cstdio>

#include "gauntlet/common/numerics.h"
#include "gauntlet/common/rng.h"

namespace gauntlet {
namespace {

// RapidCheck's default listener prints to stderr; gauntlet reports through verdicts instead.
class SilentListener : public rc::detail::TestListener {
 public:
  void onTestCaseFinished(const rc::detail::CaseDescription&) override {}
  void onShrinkTried(const rc::detail::CaseDescription&, bool) override {}
  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}
};

// RapidCheck announces its global configuration on stderr the first time it is read; gauntlet's
// output is its own, so that first read happens with stderr parked on /dev/null.
void load_rapidcheck_configuration_quietly() {
  static bool done = false;
  if (done) return;
  done = true;
  std::fflush(stderr);
  const int saved = dup(2);
  const int null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (saved >= 0 && null_fd >= 0) dup2(null_fd, 2);
  (void)rc::detail::configuration();
  std::fflush(stderr);
  if (saved >= 0) dup2(saved, 2), close(saved);
  if (null_fd >= 0) close(null_fd);
}

// A gate's check runs outside RapidCheck, which used to turn a thrown exception into a failure: it
// is gauntlet's own, a harness error.
GateVerdict judged(const std::string& gate, const std::function<GateVerdict(const Case&)>& check, const Case& c) {
  try {
    return check(c);
  } catch (const std::exception& e) {
    GateVerdict v;
    v.name = gate;
    v.status = Status::HarnessError;
    v.category = Category::HarnessError;
    v.message = std::string("the gate's check of case ") + c.label + " threw: " + e.what();
    return v;
  }
}

}  // namespace

WorkerSession* SessionHolder::get(GateVerdict* failed) {
  if (!session_) session_ = open_session(ctx_, gate_, failed);
  return session_.get();
}

bool ends_search(const GateVerdict& v) {
  return v.category == Category::Crash || v.category == Category::Timeout || v.category == Category::OutOfMemory ||
         v.category == Category::LoadError;
}

OneChildCaseCheck::OneChildCaseCheck(GateContext& ctx, const std::string& gate, Judge judge)
    : ctx_(ctx), gate_(gate), judge_(std::move(judge)), holder_(ctx, gate) {}

GateVerdict OneChildCaseCheck::operator()(const Case& c) {
  GateVerdict pass;
  pass.name = gate_;
  if (halted_) return pass;
  GateVerdict failed;
  WorkerSession* session = holder_.get(&failed);
  if (!session) {
    halted_ = true;
    return failed;
  }
  CaseRun run = run_case(ctx_, *session, c);
  GateVerdict v = judge_(run);
  // Judged by what happened to the child rather than by the verdict's category: the child is gone
  // whatever the judge made of it.
  const auto kind = run.outcome.kind;
  if (kind == Outcome::Kind::Died || kind == Outcome::Kind::TimedOut || kind == Outcome::Kind::OutOfMemory ||
      kind == Outcome::Kind::LoadFailed) {
    holder_.reset();
    halted_ = true;
  }
  if (v.status != Status::Pass) {
    last_failure_ = std::move(run);
    have_failure_ = true;
  }
  return v;
}

std::recursive_mutex& rapidcheck_mutex() {
  static std::recursive_mutex m;
  return m;
}

PropertyOutcome run_property(GateContext& ctx, const std::string& gate, int max_cases,
                             const std::function<Case()>& pick,
                             const std::function<GateVerdict(const Case&)>& check, int max_shrink_steps) {
  // RapidCheck keeps its generation state in process-wide statics (two gates in it at once crashed
  // on the H200), but its search is a pure function of the seed and the outcomes it is told. So it
  // only ever runs under the lock, replaying the outcomes judged so far until it asks for one not
  // yet known; the cases it asks for are judged after the lock is released, while other gates
  // search. Before any failure it is told every new case passes, so one replay yields the whole
  // batch of cases a passing search judges; each shrink step is one replay.
  PropertyOutcome out;
  std::vector<bool> passed;  // per evaluation, in RapidCheck's order
  bool shrinking = false;    // a failure is known: RapidCheck is shrinking it
  bool finished = false;
  load_rapidcheck_configuration_quietly();
  rc::detail::TestParams params;
  params.seed = ctx.case_seed(gate, 0xC0DE);
  params.maxSuccess = std::max(1, max_cases);
  params.maxSize = 100;
  params.maxDiscardRatio = 10;
  while (!finished) {
    std::vector<Case> pending;  // asked for in this replay, not judged yet
    bool over_budget = false;
    {
      std::lock_guard<std::recursive_mutex> rapidcheck_lock(rapidcheck_mutex());
      size_t evaluation = 0;
      bool asked = false;  // while shrinking, one new case per replay: the rest of it passes unasked
      auto property = [&]() {
        Case c = pick();
        if (asked) return;
        const size_t i = evaluation++;
        if (i < passed.size()) {
          if (!passed[i]) RC_FAIL("failed before");
          return;
        }
        if (shrinking) {
          asked = true;
          if (out.shrink_steps >= max_shrink_steps) {
            over_budget = true;  // the shrink budget is spent: this and every later case passes
            return;
          }
        }
        c.index = uint64_t(i);
        pending.push_back(std::move(c));
      };
      SilentListener listener;
      rc::detail::TestMetadata metadata;
      metadata.id = gate;
      metadata.description = gate;
      try {
        rc::detail::checkTestable(property, metadata, params, listener);
      } catch (const std::exception& e) {
        out.failed = true;
        out.verdict.name = gate;
        out.verdict.status = Status::HarnessError;
        out.verdict.category = Category::HarnessError;
        out.verdict.message = std::string("property search failed: ") + e.what();
        return out;
      }
    }
    if (pending.empty() || over_budget) break;  // RapidCheck asked for nothing it was not told
    for (Case& c : pending) {
      GateVerdict v = judged(gate, check, c);
      const bool ok = v.status == Status::Pass || v.status == Status::Skip;
      passed.push_back(ok);
      if (shrinking) ++out.shrink_steps;
      else ++out.cases;
      if (ok) continue;
      out.failed = true;
      out.verdict = v;  // RapidCheck asks for smaller candidates later: the last failure is the smallest
      out.smallest = std::move(c);
      shrinking = true;
      if (v.status == Status::HarnessError) finished = true;  // harness errors are not shrunk
      break;  // the cases drawn after it assumed it passed
    }
  }
  return out;
}

std::map<std::string, int64_t> pick_dims(const CaseSpace& space,
                                         const std::function<std::vector<int64_t>(const std::string&)>& candidates_for) {
  std::map<std::string, int64_t> dims;
  for (const auto& [name, domain] : space.schema().dims) {
    std::vector<int64_t> candidates = candidates_for(name);
    if (candidates.empty()) candidates = {space.limits_for(name).first};
    const int64_t i = *rc::gen::inRange<int64_t>(0, int64_t(candidates.size()));
    dims[name] = candidates[size_t(i)];
  }
  return dims;
}

int64_t pick_index(int64_t n) { return n <= 1 ? 0 : *rc::gen::inRange<int64_t>(0, n); }

uint64_t pick_seed() { return *rc::gen::noShrink(rc::gen::arbitrary<uint64_t>()); }

int64_t draw_uniform(int64_t n) { return n <= 1 ? 0 : *rc::gen::resize(100, rc::gen::inRange<int64_t>(0, n)); }

std::vector<int64_t> small_dim_sizes(const CaseSpace& space, const std::string& dim, int64_t cap) {
  auto [lo, hi] = space.limits_for(dim);
  std::set<int64_t> s = {1, 2, 3, 5, 8};
  for (int64_t v : space.sizes_for(dim)) s.insert(v);
  std::vector<int64_t> out;
  for (int64_t v : s)
    if (v >= std::max<int64_t>(lo, 1) && v <= hi && v <= cap) out.push_back(v);
  if (out.empty()) out.push_back(std::max<int64_t>(lo, 1));
  return out;
}

AttrMap draw_attrs(const CaseSpace& space, size_t alt) {
  const OpSchema& schema = space.schema();
  AttrMap attrs;
  for (const AttrSpec& a : schema.attributes) {
    auto fixed = space.manifest().attrs.find(a.name);
    if (fixed != space.manifest().attrs.end()) {
      attrs[a.name] = fixed->second;
    } else if (!a.dim_of.empty()) {
      const InputSpec* in = schema.input(a.dim_of);
      const size_t rank = !in || in->shapes.empty() ? 1 : in->shapes[in == &schema.inputs[0] ? alt : 0].size();
      const int64_t pick = draw_uniform(int64_t(rank) + 1);  // -1 first (the shrink target), then 0..rank-1
      attrs[a.name] = pick == 0 ? int64_t(-1) : pick - 1;
    } else if (!a.values.empty()) {
      attrs[a.name] = a.values[size_t(draw_uniform(int64_t(a.values.size())))];
    } else {
      attrs[a.name] = a.default_value;
    }
  }
  return attrs;
}

DType most_precise(const std::vector<DType>& dtypes) {
  return *std::max_element(dtypes.begin(), dtypes.end(), [](DType x, DType y) {
    return num::limits(x).mantissa_bits < num::limits(y).mantissa_bits;
  });
}

DType draw_precise_dtype(const std::vector<DType>& dtypes) {
  const DType widest = most_precise(dtypes);
  const size_t k = size_t(draw_uniform(2 * int64_t(dtypes.size())));  // indices n..2n-1: the widest
  return k < dtypes.size() ? dtypes[k] : widest;
}

}  // namespace gauntlet
