// Gate 5, shapes: held-out sizes inside the kernel's contract judged against the oracle, and inputs outside it rejected.
#include <algorithm>
#include <chrono>

#include "gauntlet/cases/case_cost.h"
#include "gauntlet/cases/contract_scope.h"
#include "gauntlet/cases/gate.h"
#include "gauntlet/cases/integer_spread.h"
#include "gauntlet/cases/judge.h"
#include "gauntlet/oracle/module_oracle.h"
#include "gauntlet/cases/property.h"
#include "shapes_budget.h"
#include "shapes_outside.h"
#include "shapes_spot.h"

namespace gauntlet {

namespace {

using shapes_gate::attr_choices;
using shapes_gate::Budget;
using shapes_gate::fit;
using shapes_gate::make_case;
using shapes_gate::rank_of;
using shapes_gate::set_tied;
using shapes_gate::size_candidates;
using shapes_gate::Spot;
using shapes_gate::spot_for;
using shapes_gate::tied;
using shapes_gate::used_dims;
using shapes_gate::within_budget;

// Copies of `c` whose key inputs take each spread of their domain's [distribution, also...] that
// the case did not draw (one input at a time, the others as drawn); none for a case without keys
// that rotate, or an empty case.
std::vector<Case> every_other_spread(const OpSchema& schema, const Case& c) {
  std::vector<Case> out;
  for (size_t i = 0; i < c.tensors.size() && i < schema.inputs.size(); ++i) {
    const ValueDomain& v = schema.inputs[i].values;
    if (v.kind != "key" || v.also.empty() || c.tensors[i].name != schema.inputs[i].name) continue;
    std::vector<std::string> spreads = {v.distribution};
    spreads.insert(spreads.end(), v.also.begin(), v.also.end());
    for (const std::string& name : spreads) {
      const auto spread = spread_from_name(name);
      if (!spread || *spread == c.tensors[i].spread) continue;
      Case other = c;
      other.tensors[i].spread = *spread;
      other.label += " (" + schema.inputs[i].name + " " + name + ")";
      out.push_back(other);
    }
  }
  return out;
}

class ShapesGate : public Gate {
 public:
  std::string name() const override { return "shapes"; }

  GateVerdict run(GateContext& ctx) override {
    if (is_module_schema(ctx.schema)) {
      GateVerdict v = skipped();
      v.message = module_skip_reason(name());
      return v;
    }
    SessionHolder holder(ctx, name());
    stopped_ = false;
    int cases = 0, evidence = 0;
    auto count = [&](const GateVerdict& v, bool vacuous) {
      ++cases;
      if (v.status == Status::Pass && !vacuous) ++evidence;
    };

    // A contract of exact sizes (every dim fixed, as a KernelBench problem's get_inputs() fixes
    // them) has one in-contract shape: the search runs it a few times (values and seeds vary) at
    // whatever it costs, and the sizes around it are probed outside the contract (step 3).
    floor_ = contract_floor(ctx);
    const bool one_shape = every_dim_fixed(ctx);
    const Budget combo = floor_.tensors.empty() ? shapes_gate::combo_budget(ctx.budget)
                                                : shapes_gate::raised_to(ctx.schema, floor_, shapes_gate::combo_budget(ctx.budget));
    PropertyOutcome prop = run_property(
        ctx, name(), one_shape ? kMinCasesAtFloor : 24 * ctx.budget, [&] { return pick(ctx, combo); },
        [&](const Case& c) {
          if (c.tensors.empty()) return skipped();  // no valid case from these draws
          bool vacuous = false;
          GateVerdict v = check_in_contract(ctx, holder, c, &vacuous);
          count(v, vacuous);
          return v;
        });
    if (prop.failed) return shrunk_verdict(prop.verdict, prop.cases, prop.shrink_steps);

    // 2. Every candidate size of every dim at least once, the other dims small: guarantees each
    //    held-out size (up to the largest declared that fits the budget) is judged.
    std::vector<std::string> over_budget;
    GateVerdict swept = sweep(ctx, holder, &cases, &evidence, &over_budget);
    if (swept.status != Status::Pass) return swept;

    // 3. Outside the contract: shapes past the manifest's limits, then the schema's error inputs.
    int rejected = 0;
    std::vector<std::string> untested;
    int answered = 0;  // probes outside the contract that the kernel answered right (as it may)
    for (Case& c : shapes_gate::outside_cases(ctx, name(), sweep_caps(ctx), &untested)) {
      c.index = uint64_t(cases);
      if (!c.outside_contract.empty()) {  // an error input: the op itself has no answer
        GateVerdict v = check_outside(ctx, holder, c);
        ++cases;
        if (v.status != Status::Pass) return v;
        ++rejected;
        continue;
      }
      // Past the contract the op still has an answer: refusing it or giving it both pass.
      bool vacuous = false;
      GateVerdict v = check_in_contract(ctx, holder, c, &vacuous);
      ++cases;
      if (v.status != Status::Pass) return v;
      if (v.evidence.value("refused_outside_contract", false)) ++rejected;
      else ++answered;
    }

    GateVerdict v;
    v.name = name();
    v.cases = cases;
    if (evidence == 0) {
      v.status = Status::HarnessError;
      v.category = Category::HarnessError;
      v.message = "no held-out shape gave a non-constant reference output: nothing was verified";
      return v;
    }
    v.message = std::to_string(evidence) + " held-out shapes within tolerance";
    if (cases - rejected > evidence)
      v.message += " (" + std::to_string(cases - rejected - evidence) + " empty or constant not counted)";
    v.message += ", " + std::to_string(rejected) + " inputs outside the contract rejected";
    if (answered > 0) v.message += ", " + std::to_string(answered) + " outside the contract answered within tolerance";
    if (!over_budget.empty()) {
      v.message += "; above the case budget (--budget raises it):";
      for (const std::string& s : over_budget) v.message += " " + s;
    }
    for (size_t i = 0; i < untested.size(); ++i) v.message += (i ? ", " : "; not generated: ") + untested[i];
    v.evidence["cases"] = cases;
    v.evidence["evidence_cases"] = evidence;
    v.evidence["rejected_outside_contract"] = rejected;
    v.evidence["answered_outside_contract"] = answered;
    v.evidence["over_budget"] = over_budget;
    return v;
  }

  GateVerdict check_one(GateContext& ctx, const Case& c) override {
    SessionHolder holder(ctx, name());
    stopped_ = false;
    if (!c.outside_contract.empty()) return check_outside(ctx, holder, c);
    bool vacuous = false;
    return check_in_contract(ctx, holder, c, &vacuous);
  }

 private:
  // After a timeout every further case would cost the whole wall-clock limit again: the search
  // stops and keeps the case that hung.
  bool stopped_ = false;

  GateVerdict skipped() const {
    GateVerdict v;
    v.name = name();
    v.status = Status::Skip;
    return v;
  }

  // The contract's smallest case (every dim at its lower limit), empty when none builds.
  Case floor_;

  Case contract_floor(GateContext& ctx) const {
    std::map<std::string, int64_t> dims;
    for (const auto& [d, dom] : ctx.schema.dims) dims[d] = std::max<int64_t>(ctx.space.limits_for(d).first, 1);
    const size_t nalt = ctx.schema.inputs.empty() ? 1 : ctx.schema.inputs[0].shapes.size();
    for (size_t a = 0; a < nalt; ++a) {
      Case c;
      std::string why;
      if (make_case(ctx.space, spot_for(ctx, dims, a, 0), &c, &why)) return c;  // first dtype and attribute choices
    }
    return Case{};
  }

  // Whether the contract fixes every dim the schema's inputs use to one size.
  static bool every_dim_fixed(GateContext& ctx) {
    for (const auto& [d, dom] : ctx.schema.dims) {
      const auto [lo, hi] = ctx.space.limits_for(d);
      if (lo != hi) return false;
    }
    return true;
  }

  // The sweep's budget: its usual caps, raised to the contract's smallest case.
  Budget sweep_caps(GateContext& ctx) const {
    const Budget b = shapes_gate::sweep_budget(ctx.budget);
    return floor_.tensors.empty() ? b : shapes_gate::raised_to(ctx.schema, floor_, b);
  }

  // A case from RapidCheck draws: shape alternative, one candidate per dim, dtype, attributes.
  Case pick(GateContext& ctx, const Budget& budget) {
    const OpSchema& s = ctx.schema;
    Spot spot;
    spot.alt = size_t(pick_index(s.inputs.empty() ? 1 : int64_t(s.inputs[0].shapes.size())));
    spot.dims = pick_dims(ctx.space, [&](const std::string& d) { return size_candidates(ctx.space, d); });
    spot.dtype = ctx.space.dtypes()[size_t(pick_index(int64_t(ctx.space.dtypes().size())))];
    for (const AttrSpec& a : s.attributes) {
      const auto choices = attr_choices(a, ctx.manifest, rank_of(s, a.dim_of, spot.alt));
      spot.attrs[a.name] = choices[size_t(pick_index(int64_t(choices.size())))];
    }
    spot.seed = pick_seed();
    Case c;
    std::string why;
    if (!fit(ctx.space, budget, &spot, &c, &why)) return Case{};
    return c;
  }

  GateVerdict shrunk_verdict(GateVerdict v, int cases, int shrink_steps) const {
    if (v.status == Status::Fail || v.status == Status::Error)
      v.message += " (smallest failing shape after " + std::to_string(cases) + " cases and " +
                   std::to_string(shrink_steps) + " shrink steps)";
    v.evidence["cases_before_failure"] = cases;
    v.evidence["shrink_steps"] = shrink_steps;
    return v;
  }

  // One dim at a time through its candidates, the others at a small size (3, or their floor when
  // the budget or a constraint needs it). Dtype, shape alternative and attributes rotate per case.
  GateVerdict sweep(GateContext& ctx, SessionHolder& holder, int* cases, int* evidence,
                    std::vector<std::string>* over_budget) {
    const OpSchema& s = ctx.schema;
    const Budget budget = sweep_caps(ctx);
    const size_t nalt = s.inputs.empty() ? 1 : s.inputs[0].shapes.size();
    std::map<std::string, int64_t> base;
    for (const auto& [d, dom] : s.dims) {
      const auto [lo, hi] = ctx.space.limits_for(d);
      base[d] = std::clamp<int64_t>(3, std::max<int64_t>(lo, 1), std::max<int64_t>(hi, 1));
    }
    // One sweep case checked and counted; a failure or harness error ends the sweep with `v`.
    auto check_counted = [&](Case& c, GateVerdict* v) {
      c.index = uint64_t(*cases);
      bool vacuous = false;
      *v = check_in_contract(ctx, holder, c, &vacuous);
      ++*cases;
      if (v->status == Status::Pass && !vacuous) ++*evidence;
      return v->status == Status::Fail || v->status == Status::Error || v->status == Status::HarnessError;
    };
    uint64_t k = 0;
    bool swept_fixed = false;  // the dims fixed to one size all sweep the same case: run it once
    for (const auto& [d, dom] : s.dims) {
      if (const auto [lo, hi] = ctx.space.limits_for(d); lo == hi) {
        if (swept_fixed) continue;
        swept_fixed = true;
      }
      // The alternatives whose shapes this dim changes (rank variants of the first input).
      std::vector<size_t> alts;
      for (size_t a = 0; a < nalt; ++a) {
        Spot probe = spot_for(ctx, base, a, 0);
        Case c;
        std::string why;
        if (make_case(ctx.space, probe, &c, &why) && used_dims(ctx.space, probe, c).count(d)) alts.push_back(a);
      }
      if (alts.empty()) continue;
      Case top;  // the largest case of this dim's sweep that ran
      for (int64_t size : size_candidates(ctx.space, d)) {
        Spot spot = spot_for(ctx, base, alts[k % alts.size()], k);
        set_tied(ctx.space, spot.dims, d, size);
        spot.seed = ctx.case_seed(name(), 0x5EE9000 + k);
        ++k;
        Case c;
        std::string why;
        if (!make_case(ctx.space, spot, &c, &why) || !within_budget(s, c, budget, &why)) {
          // The others to their floor (1): the largest size of one dim with every other dim minimal.
          for (auto& [o, v] : spot.dims)
            if (!tied(ctx.space, o, d)) v = std::max<int64_t>(ctx.space.limits_for(o).first, 1);
          if (!make_case(ctx.space, spot, &c, &why)) continue;
          if (!within_budget(s, c, budget, &why)) {
            // Candidates ascend: report the smallest size of each dim left out.
            const std::string note = d + ">=" + std::to_string(size);
            if (over_budget->empty() || over_budget->back().rfind(d + ">=", 0) != 0) over_budget->push_back(note);
            continue;
          }
        }
        GateVerdict v;
        if (check_counted(c, &v)) return v.status == Status::HarnessError ? v : shrink_sweep(ctx, holder, spot, v);
        top = c;
      }
      // The largest size is where skew bites (a 16-bit counter of one hot key, a bucket's capacity),
      // and a case's seed picks one of a key domain's spreads: the largest case runs again with
      // each of the others, so the sweep meets all-equal keys at its largest size whatever the seed.
      for (Case& c : every_other_spread(ctx.schema, top)) {
        GateVerdict v;
        if (check_counted(c, &v)) return v;  // its shape is the largest: no shrink
      }
    }
    GateVerdict v;
    v.name = name();
    return v;
  }

  // A sweep failure was not drawn by RapidCheck, so it is shrunk here the same way: toward the first
  // dtype and the first attribute choices, then each dim in turn tries its smaller candidates
  // smallest first and keeps the first that still fails.
  GateVerdict shrink_sweep(GateContext& ctx, SessionHolder& holder, Spot spot, GateVerdict failing) {
    int steps = 0;
    auto still_fails = [&](const Spot& t) {
      Case c;
      std::string why;
      if (!make_case(ctx.space, t, &c, &why)) return false;
      ++steps;
      bool vacuous = false;
      GateVerdict r = check_in_contract(ctx, holder, c, &vacuous);
      if (r.status != Status::Fail && r.status != Status::Error) return false;
      failing = r;
      return true;
    };
    Spot simpler = spot;
    simpler.dtype = ctx.space.dtypes().front();
    for (const AttrSpec& a : ctx.schema.attributes)
      simpler.attrs[a.name] = attr_choices(a, ctx.manifest, rank_of(ctx.schema, a.dim_of, spot.alt)).front();
    if ((simpler.dtype != spot.dtype || simpler.attrs != spot.attrs) && still_fails(simpler)) spot = simpler;
    bool changed = true;
    while (changed && steps < 200 && !stopped_) {
      changed = false;
      for (auto& [d, v] : spot.dims) {
        for (int64_t smaller : size_candidates(ctx.space, d)) {
          if (smaller >= v || steps >= 200 || stopped_) break;
          Spot t = spot;
          set_tied(ctx.space, t.dims, d, smaller);
          if (still_fails(t)) {
            spot = t;
            changed = true;
            break;
          }
        }
      }
    }
    // The replay file on disk is the last failure's; rewrite it for the smallest.
    if (steps > 0) {
      Case c;
      std::string why;
      if (make_case(ctx.space, spot, &c, &why)) {
        bool vacuous = false;
        GateVerdict again = check_in_contract(ctx, holder, c, &vacuous);
        if (again.status == failing.status) failing = again;
      }
    }
    return shrunk_verdict(failing, 0, steps);
  }

  // Judges one in-contract case against the oracle under the schema's tolerance.
  GateVerdict check_in_contract(GateContext& ctx, SessionHolder& holder, const Case& c, bool* vacuous) {
    *vacuous = true;
    if (stopped_) return skipped();
    GateVerdict failed;
    WorkerSession* session = holder.get(&failed);
    if (!session) return failed;
    CaseRun run = run_case(ctx, *session, c);
    GateVerdict v;
    v.name = name();
    v.cases = 1;
    note_outputs(v, run);
    if (run.outcome.kind != Outcome::Kind::Ok) {
      after_failure(holder, run.outcome.kind);
      v = verdict_from_outcome(ctx, name(), run);
      v.cases = 1;
      if (v.status != Status::HarnessError) v.replay = write_replay(ctx, name(), run, v);
      return v;
    }
    const DType case_dtype = gauntlet::case_dtype(ctx.schema, c);
    auto tol = ctx.schema.tolerance.find(case_dtype);
    if (tol == ctx.schema.tolerance.end()) {
      v.status = Status::HarnessError;
      v.category = Category::HarnessError;
      v.message = std::string("the schema declares no tolerance for ") + dtype_name(case_dtype);
      return v;
    }
    const wire::CallOutputs& got = run.outcome.reply.calls.at(0);
    const int64_t K = reduction_terms(ctx.schema, c);
    // Output count and exact shape are the contract gate's; an element count that differs is a
    // wrong result here (judge_output reports it).
    for (size_t i = 0; i < run.oracle.outputs.size() && i < got.outputs.size(); ++i) {
      const std::string oname = i < ctx.schema.outputs.size() ? ctx.schema.outputs[i].name : "output";
      const at::Tensor scale = i < run.oracle.scales.size() ? run.oracle.scales[i] : at::Tensor();
      Judgement j = judge_output(oname, got.outputs[i], run.oracle.outputs[i], scale,
                                 expected_output_dtype(ctx.schema, i, c), tol->second, K);
      if (!j.vacuous) *vacuous = false;
      if (!j.pass) {
        v.status = Status::Fail;
        v.category = Category::WrongResult;
        v.message = "case " + c.label + ": " + j.message;
        v.evidence = {{"got", j.got},        {"expected", j.expected}, {"error", j.error},
                      {"allowed", j.allowed}, {"bad_elements", j.bad},  {"elements", j.checked},
                      {"dims", c.dims}};
        v.replay = write_replay(ctx, name(), run, v);
        return v;
      }
    }
    return v;
  }

  void after_failure(SessionHolder& holder, Outcome::Kind kind) {
    // A crash, a timeout or an exhausted memory limit leaves no usable child.
    if (kind == Outcome::Kind::Died || kind == Outcome::Kind::TimedOut || kind == Outcome::Kind::OutOfMemory)
      holder.reset();
    if (kind == Outcome::Kind::TimedOut) stopped_ = true;
  }

  // Runs a case the kernel must reject, without the oracle (it rejects such inputs too).
  GateVerdict check_outside(GateContext& ctx, SessionHolder& holder, const Case& c) {
    if (stopped_) return skipped();
    GateVerdict failed;
    WorkerSession* session = holder.get(&failed);
    if (!session) return failed;
    CaseRun run;
    run.c = c;
    note_case_scope(ctx, c);
    const auto t0 = std::chrono::steady_clock::now();
    run.inputs = materialize_all(c);
    const auto t1 = std::chrono::steady_clock::now();
    wire::CaseRequest req;
    req.case_id = c.index;
    req.args = make_args(ctx.schema, run.inputs, c.attrs);
    run.outcome = session->call(req);
    // Accounted like run_case's (verify reports where a gate's time goes).
    ctx.timing.inputs += std::chrono::duration<double>(t1 - t0).count();
    ctx.timing.call += std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
    ctx.timing.kernel += run.outcome.reply.kernel_seconds;
    GateVerdict v;
    v.name = name();
    v.cases = 1;
    note_outputs(v, run);
    if (run.outcome.kind == Outcome::Kind::KernelError) return v;  // rejected, as it must be
    if (run.outcome.kind == Outcome::Kind::Ok) {
      v.status = Status::Fail;
      v.category = Category::WrongResult;
      v.message = "case " + c.label + ": returned values for an input outside its contract (" + c.outside_contract + ")";
    } else {
      after_failure(holder, run.outcome.kind);
      v = verdict_from_outcome(ctx, name(), run);
      v.cases = 1;
      v.message += " (an input outside the contract: " + c.outside_contract + ")";
    }
    if (v.status != Status::HarnessError) v.replay = write_replay(ctx, name(), run, v);
    return v;
  }
};

}  // namespace

std::unique_ptr<Gate> make_shapes_gate() { return std::make_unique<ShapesGate>(); }

}  // namespace gauntlet
