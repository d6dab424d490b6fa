// Gate 11, gradients: the kernel's backward entry against the fp64 Jacobian of the oracle, per dtype.
#include <algorithm>
#include <chrono>

#include "gauntlet/cases/gate.h"
#include "gauntlet/oracle/gradient_oracle.h"
#include "gauntlet/cases/judge.h"
#include "gauntlet/common/rng.h"

namespace gauntlet {
namespace {

// The reference builds the whole Jacobian (one reverse pass per output element), so cases stay
// small: a few hundred elements per tensor still cover multi-row, multi-column reductions.
constexpr int64_t kMaxElements = 384;
constexpr int64_t kMaxJacobian = int64_t(1) << 18;  // input x output elements (matmul's output is M*N)
constexpr int kCasesPerDtype = 3;     // per budget unit
constexpr uint64_t kVariantsTried = 48;

int64_t numel_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

// Why an op has no gradient to check whatever its manifest declares: an integer output (a quantizer's
// levels are piecewise constant in x), integer data operands (int8_matmul's a and b) or float8 ones
// (fp8_matmul's: a storage format autograd does not differentiate); "" otherwise.
std::string integer_op_reason(const OpSchema& s) {
  for (const OutputSpec& o : s.outputs) {
    auto d = dtype_from_name(o.dtype);
    if (d && !dtype_is_floating(*d)) return "output " + o.name + " is " + o.dtype + ": piecewise constant, no gradient";
  }
  for (const InputSpec& in : s.inputs)
    if (!in.dtypes.empty() && in.values.kind == "integer" &&
        std::none_of(in.dtypes.begin(), in.dtypes.end(), dtype_is_floating))
      return "input " + in.name + " holds integer data (" + dtype_name(in.dtypes[0]) + "): no gradient with respect to it";
  for (const InputSpec& in : s.inputs)
    if (!in.dtypes.empty() && std::all_of(in.dtypes.begin(), in.dtypes.end(), [](DType d) { return d == DType::Float8E4M3; }))
      return "input " + in.name + " is " + dtype_name(in.dtypes[0]) + ", a storage format: no gradient with respect to it";
  return "";
}

class GradientsGate : public Gate {
 public:
  std::string name() const override { return "gradients"; }

  GateVerdict run(GateContext& ctx) override {
    GateVerdict v;
    v.name = name();
    if (ctx.manifest.backward_entry.empty()) {
      v.status = Status::Skip;
      v.message = "skip: the manifest names no backward entry (field \"backward\"), so there is no gradient to check";
      return v;
    }
    if (const std::string why = integer_op_reason(ctx.schema); !why.empty()) {
      v.status = Status::Skip;
      v.message = "skip: " + why;
      return v;
    }
    auto session = open_session(ctx, name(), &v, ctx.manifest.backward_entry);
    if (!session) return v;
    int cases = 0, evidence = 0;
    std::vector<std::string> judged;
    const Distribution dists[] = {Distribution::Normal, Distribution::Uniform};
    const uint64_t first_variant = ctx.case_seed(name(), ~uint64_t(0)) % 64;
    for (DType dtype : ctx.space.dtypes()) {
      int taken = 0;
      for (uint64_t step = 0; step < kVariantsTried && taken < kCasesPerDtype * ctx.budget; ++step) {
        Case c;
        std::string error;
        const uint64_t index = uint64_t(cases);
        // The master seed picks where the walk through shapes and attributes starts.
        const uint64_t variant = first_variant + step;
        if (!ctx.space.typical_case(variant, dtype, dists[variant % 2], ctx.case_seed(name(), index), &c, &error))
          continue;
        relabel(c);
        if (!small(ctx, c) && !shrink(ctx, &c)) continue;
        c.index = index;
        bool vacuous = true;
        GateVerdict one = check(ctx, *session, c, &vacuous);
        ++cases;
        if (one.status != Status::Pass) return one;
        // A zero reference gradient (softmax over a dim of size 1) proves nothing: look further.
        if (!vacuous) ++evidence, ++taken, judged.push_back(c.label);
      }
    }
    v.cases = cases;
    if (evidence == 0) {
      v.status = Status::HarnessError;
      v.category = Category::HarnessError;
      v.message = "no typical case, capped at " + std::to_string(kMaxElements) +
                  " elements per tensor, had a nonzero reference gradient: nothing was verified";
      return v;
    }
    v.message = std::to_string(evidence) + " cases of backward within tolerance of the fp64 Jacobian (" + method_ +
                ")";
    if (cases > evidence) v.message += "; " + std::to_string(cases - evidence) + " vacuous cases not counted";
    v.evidence["cases"] = cases;
    v.evidence["evidence_cases"] = evidence;
    v.evidence["reference"] = method_;
    v.evidence["judged_cases"] = judged;
    return v;
  }

  GateVerdict check_one(GateContext& ctx, const Case& c) override {
    GateVerdict failed;
    if (ctx.manifest.backward_entry.empty()) {
      failed.name = name();
      failed.status = Status::HarnessError;
      failed.category = Category::HarnessError;
      failed.message = "the replayed kernel's manifest names no backward entry";
      return failed;
    }
    auto session = open_session(ctx, name(), &failed, ctx.manifest.backward_entry);
    if (!session) return failed;
    bool vacuous = true;
    return check(ctx, *session, c, &vacuous);
  }

 private:
  std::string method_ = "autograd";

  // One output gradient per forward output, a pure function of the case (its first tensor's seed),
  // so a replay regenerates the same bytes without storing them.
  static std::vector<at::Tensor> output_gradients(const GateContext& ctx, const Case& c, const OracleResult& fwd) {
    std::vector<at::Tensor> g;
    for (size_t i = 0; i < fwd.outputs.size(); ++i) {
      TensorRecipe r;
      r.name = "grad_" + (i < ctx.schema.outputs.size() ? ctx.schema.outputs[i].name : std::to_string(i));
      r.dtype = expected_output_dtype(ctx.schema, i, c);
      r.shape.assign(fwd.outputs[i].sizes().begin(), fwd.outputs[i].sizes().end());
      r.distribution = Distribution::Normal;
      r.seed = rng::derive_seed(c.tensors.empty() ? 0 : c.tensors[0].seed, "output-gradient", "gradients", i);
      g.push_back(materialize(r));
    }
    return g;
  }

  GateVerdict fail(GateContext& ctx, CaseRun& run, Category category, const std::string& message) {
    GateVerdict v;
    v.name = name();
    v.cases = 1;
    v.status = category == Category::HarnessError ? Status::HarnessError : Status::Fail;
    v.category = category;
    v.message = "case " + run.c.label + ": " + message;
    note_outputs(v, run);
    if (category != Category::HarnessError) v.replay = write_replay(ctx, name(), run, v);
    return v;
  }

  GateVerdict check(GateContext& ctx, WorkerSession& session, const Case& c, bool* vacuous) {
    CaseRun run;
    run.c = c;
    const auto t0 = std::chrono::steady_clock::now();
    run.inputs = materialize_all(c);
    const auto generated = std::chrono::steady_clock::now();
    ctx.timing.inputs += std::chrono::duration<double>(generated - t0).count();
    const OracleResult fwd = run_oracle(ctx.schema.oracle, run.inputs, c.attrs);
    if (!fwd.ok()) return fail(ctx, run, Category::HarnessError, "the oracle rejected a generated case: " + fwd.error);
    const std::vector<at::Tensor> gy = output_gradients(ctx, c, fwd);
    const GradientReference ref = gradient_reference(ctx.schema.oracle, run.inputs, c.attrs, gy);
    const auto t1 = std::chrono::steady_clock::now();
    ctx.timing.oracle += std::chrono::duration<double>(t1 - generated).count();
    if (!ref.ok()) return fail(ctx, run, Category::HarnessError, "no gradient reference: " + ref.error);
    method_ = ref.method;

    // Calling convention (docs/schema-format.md): the forward's arguments, then one gradient per output.
    wire::CaseRequest req;
    req.case_id = c.index;
    req.args = make_args(ctx.schema, run.inputs, c.attrs);
    for (const at::Tensor& g : gy) {
      wire::Arg a;
      a.kind = wire::Arg::Kind::Tensor;
      a.tensor = g;
      req.args.push_back(a);
    }
    run.outcome = session.call(req);
    ctx.timing.call += std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
    ctx.timing.kernel += run.outcome.reply.kernel_seconds;
    if (run.outcome.kind != Outcome::Kind::Ok) {
      GateVerdict v = verdict_from_outcome(ctx, name(), run);
      v.cases = 1;
      v.message = "backward " + v.message;
      v.replay = write_replay(ctx, name(), run, v);
      return v;
    }

    // Contract of the backward's results: one gradient per tensor input, each the input's shape and dtype.
    const std::vector<at::Tensor>& got = run.outcome.reply.calls.at(0).outputs;
    if (got.size() != run.inputs.size())
      return fail(ctx, run, Category::WrongResult,
                  "backward returned " + std::to_string(got.size()) + " tensors, expected one gradient per tensor input (" +
                      std::to_string(run.inputs.size()) + ")");
    for (size_t k = 0; k < got.size(); ++k) {
      if (!ref.grads[k].defined()) continue;  // an index input has no gradient to compare
      const std::string in = ctx.schema.inputs[k].name;
      if (!got[k].sizes().equals(run.inputs[k].sizes()))
        return fail(ctx, run, Category::WrongResult, "gradient of " + in + " has shape " + shape_text(got[k]) +
                                                         ", expected the input's " + shape_text(run.inputs[k]));
      if (got[k].scalar_type() != run.inputs[k].scalar_type())
        return fail(ctx, run, Category::WrongResult, "gradient of " + in + " has dtype " +
                                                         std::string(c10::toString(got[k].scalar_type())) +
                                                         ", expected the input's " +
                                                         c10::toString(run.inputs[k].scalar_type()));
    }

    const DType dtype = case_dtype(ctx.schema, c);
    auto tol_it = ctx.schema.tolerance.find(dtype);
    if (tol_it == ctx.schema.tolerance.end())
      return fail(ctx, run, Category::HarnessError, std::string("the schema declares no tolerance for ") + dtype_name(dtype));
    const Tolerance tol = gradient_tolerance(tol_it->second);
    for (size_t k = 0; k < got.size(); ++k) {
      if (!ref.grads[k].defined()) continue;
      // K differs per gradient element (a weight gradient sums over rows, an input gradient over
      // its row), so sqrt(K) is folded into the scale and the judge sees K = 1.
      const at::Tensor scale = ref.scales[k] * ref.terms[k].clamp_min(1).to(at::kDouble).sqrt();
      Judgement j = judge_output("d" + ctx.schema.inputs[k].name, got[k], ref.grads[k], scale, c.tensors[k].dtype, tol, 1);
      if (!j.vacuous) *vacuous = false;
      if (!j.pass) {
        GateVerdict v = fail(ctx, run, Category::WrongResult, j.message + " (reference: " + ref.method + ")");
        v.evidence = {{"got", j.got}, {"expected", j.expected}, {"error", j.error}, {"allowed", j.allowed},
                      {"bad_elements", j.bad}, {"elements", j.checked}, {"reference", ref.method}};
        return v;
      }
    }
    GateVerdict v;
    v.name = name();
    v.cases = 1;
    note_outputs(v, run);
    return v;
  }

  // typical_case rotates dim attributes after writing the label, which then shows the default
  // dim; the label is rebuilt from the case so messages name the dim actually used.
  static void relabel(Case& c) {
    if (c.tensors.empty()) return;
    c.label = std::string(dtype_name(c.tensors[0].dtype)) + " " + distribution_name(c.tensors[0].distribution);
    for (const TensorRecipe& r : c.tensors) {
      c.label += " " + r.name + "=[";
      for (size_t k = 0; k < r.shape.size(); ++k) c.label += (k ? "," : "") + std::to_string(r.shape[k]);
      c.label += "]";
    }
    for (const auto& [k, v] : c.attrs) c.label += " " + k + "=" + attr_to_string(v);
  }

  static bool small(const GateContext& ctx, const Case& c) {
    int64_t in = 0, out = 0;
    for (const TensorRecipe& r : c.tensors) {
      if (numel_of(r.shape) > kMaxElements) return false;
      in += numel_of(r.shape);
    }
    const OracleResult fwd = run_oracle(ctx.schema.oracle, materialize_all(c), c.attrs);
    for (const at::Tensor& o : fwd.outputs) out += o.numel();
    return in * out <= kMaxJacobian;  // an oracle refusal passes here and is reported by check()
  }

  // A typical case too large for the Jacobian keeps its rank, attributes and values' recipe with
  // every dim capped (7, a prime, then smaller) until each tensor fits; false when none fits.
  static bool shrink(const GateContext& ctx, Case* c) {
    if (c->tensors.empty() || ctx.schema.inputs.empty()) return false;
    size_t alt = 0;
    const auto& shapes = ctx.schema.inputs[0].shapes;
    for (size_t a = 0; a < shapes.size(); ++a)
      if (shapes[a].size() == c->tensors[0].shape.size()) {
        alt = a;
        break;
      }
    for (int64_t cap : {7, 4, 2, 1}) {
      std::map<std::string, int64_t> dims;
      for (const auto& [dim, size] : c->dims)
        dims[dim] = std::max(ctx.space.limits_for(dim).first, std::min(size, cap));
      Case smaller;
      std::string error;
      const TensorRecipe& r = case_recipe(ctx.schema, *c);
      if (ctx.space.build(dims, alt, c->attrs, r.dtype, r.distribution, r.seed,
                          &smaller, &error) &&
          small(ctx, smaller)) {
        smaller.index = c->index;
        *c = smaller;
        relabel(*c);
        return true;
      }
    }
    return false;
  }

  static std::string shape_text(const at::Tensor& t) {
    std::string s = "[";
    for (int64_t d = 0; d < t.dim(); ++d) s += (d ? "," : "") + std::to_string(t.size(d));
    return s + "]";
  }
};

}  // namespace

std::unique_ptr<Gate> make_gradients_gate() { return std::make_unique<GradientsGate>(); }

}  // namespace gauntlet
