// Gate 1, contract: output count, shape, dtype and device exactly as the oracle's; no aliasing. Tolerance-free.
#include "gauntlet/cases/gate.h"

namespace gauntlet {
namespace {

class ContractGate : public Gate {
 public:
  std::string name() const override { return "contract"; }

  GateVerdict run(GateContext& ctx) override {
    GateVerdict failed;
    auto session = open_session(ctx, name(), &failed);
    if (!session) return failed;
    int cases = 0;
    for (DType dtype : ctx.space.dtypes()) {
      // Every shape alternative of the first input, at least twice over different sizes.
      const size_t alternatives = ctx.schema.inputs.empty() ? 1 : ctx.schema.inputs[0].shapes.size();
      const uint64_t n = std::max<uint64_t>(2, alternatives) * uint64_t(ctx.budget);
      for (uint64_t variant = 0; variant < n; ++variant) {
        Case c;
        std::string error;
        const uint64_t index = uint64_t(cases);
        if (!ctx.space.typical_case(variant, dtype, Distribution::Normal, ctx.case_seed(name(), index), &c, &error))
          continue;
        c.index = index;
        GateVerdict v = check(ctx, *session, c);
        ++cases;
        if (v.status != Status::Pass) return v;
      }
    }
    GateVerdict v;
    v.name = name();
    v.cases = cases;
    if (cases == 0) {
      v.status = Status::HarnessError;
      v.category = Category::HarnessError;
      v.message = "no valid case could be generated from the schema and manifest";
      return v;
    }
    v.message = std::to_string(cases) + " cases: output count, shape, dtype, device and aliasing as the oracle's";
    return v;
  }

  GateVerdict check_one(GateContext& ctx, const Case& c) override {
    GateVerdict failed;
    auto session = open_session(ctx, name(), &failed);
    if (!session) return failed;
    return check(ctx, *session, c);
  }

 private:
  GateVerdict check(GateContext& ctx, WorkerSession& session, const Case& c) {
    CaseRun run = run_case(ctx, session, c);
    GateVerdict v;
    v.name = name();
    v.cases = 1;
    note_outputs(v, run);
    if (run.outcome.kind != Outcome::Kind::Ok) {
      v = verdict_from_outcome(ctx, name(), run);
      v.cases = 1;
    } else {
      v.message = first_violation(ctx, run);
      if (!v.message.empty()) {
        v.status = Status::Fail;
        v.category = Category::WrongResult;
        v.message = "case " + c.label + ": " + v.message;
      }
    }
    if (v.status != Status::Pass) v.replay = write_replay(ctx, name(), run, v);
    return v;
  }

  static std::string shape_text(at::IntArrayRef s) {
    std::string t = "[";
    for (size_t i = 0; i < s.size(); ++i) t += (i ? "," : "") + std::to_string(s[i]);
    return t + "]";
  }

  std::string first_violation(GateContext& ctx, const CaseRun& run) {
    const wire::CallOutputs& got = run.outcome.reply.calls.at(0);
    const auto& want = run.oracle.outputs;
    if (got.outputs.size() != want.size())
      return "returned " + std::to_string(got.outputs.size()) + " outputs, the op has " + std::to_string(want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      const std::string oname = i < ctx.schema.outputs.size() ? ctx.schema.outputs[i].name : "output" + std::to_string(i);
      const at::Tensor& t = got.outputs[i];
      if (t.sizes() != want[i].sizes())
        return oname + " has shape " + shape_text(t.sizes()) + ", expected " + shape_text(want[i].sizes());
      const DType expected = expected_output_dtype(ctx.schema, i, run.c);
      auto actual = wire::from_scalar_type(t.scalar_type());
      if (!actual || *actual != expected)
        return oname + " has dtype " + std::string(c10::toString(t.scalar_type())) + ", expected " + dtype_name(expected);
      const std::string& dev = got.devices[i];
      if (dev.rfind(ctx.manifest.device, 0) != 0)
        return oname + " is on device " + dev + ", expected " + ctx.manifest.device;
      if (got.alias_input[i] >= 0) {
        const size_t k = size_t(got.alias_input[i]);
        const std::string in = k < ctx.schema.inputs.size() ? ctx.schema.inputs[k].name : std::to_string(k);
        return oname + " shares storage with input " + in + " (outputs must be fresh tensors)";
      }
      if (got.alias_output[i] >= 0)
        return oname + " shares storage with output " + std::to_string(got.alias_output[i]);
    }
    return "";
  }
};

}  // namespace

std::unique_ptr<Gate> make_contract_gate() { return std::make_unique<ContractGate>(); }

}  // namespace gauntlet
