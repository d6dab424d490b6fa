// A failing case as a standalone PyTorch reproducer (replay_emit.h).
#include "gauntlet/cases/replay_emit.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "gauntlet/build/build_cache.h"
#include "gauntlet/common/atomic_file.h"
#include "gauntlet/cases/gate.h"
#include "gauntlet/cases/judge.h"
#include "gauntlet/common/numerics.h"
#include "gauntlet/common/wire.h"

namespace gauntlet::replay_emit {
namespace {

std::string base_name(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

bool read_file(const std::string& path, std::string* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream s;
  s << f.rdbuf();
  *out = s.str();
  return true;
}

bool write_bytes(const std::string& path, const void* data, size_t n) {
  return write_file_atomic(path, std::string(static_cast<const char*>(data), n));
}

// torch's name of the dtype (gauntlet's names are torch's): "" for one gauntlet does not know.
const char* torch_dtype(at::ScalarType t) {
  const std::optional<DType> d = wire::from_scalar_type(t);
  return d ? dtype_name(*d) : "";
}

// A tensor as its whole storage's bytes plus the view on it: the script rebuilds the same
// sizes, strides and offset (a transposed, strided or expanded input stays one).
nlohmann::json write_view(const std::string& dir, const std::string& name, const at::Tensor& t) {
  const size_t bytes = t.storage().nbytes();
  write_bytes(dir + "/data/" + name + ".bin", t.storage().data(), bytes);
  return {{"name", name},       {"file", "data/" + name + ".bin"}, {"dtype", torch_dtype(t.scalar_type())},
          {"size", t.sizes()},  {"stride", t.strides()},           {"offset", t.storage_offset()}};
}

bool write_doubles(const std::string& path, const at::Tensor& t) {
  const at::Tensor d = t.to(at::kDouble).contiguous();
  return write_bytes(path, d.data_ptr(), size_t(d.numel()) * sizeof(double));
}

}  // namespace

bool emit(const std::string& dir, const EmitInput& in, std::string* error) {
  const std::string source = in.manifest.source;
  const bool module = is_python_module(in.manifest);
  std::string text;
  if (!read_file(source, &text)) return (*error = "cannot read the kernel source " + source, false);
  if (!module && in.manifest.device == "cuda" && text.find("PYBIND11_MODULE") == std::string::npos)
    return (*error = "a CUDA source without a PYBIND11_MODULE block has no standalone loader; --dump writes its data", false);
  if (!build_internal::make_dirs(dir + "/data", nullptr) || !build_internal::make_dirs(dir + "/kernel", nullptr))
    return (*error = "cannot create " + dir, false);

  nlohmann::json j;
  j["format"] = "gauntlet-repro-v1";
  j["op"] = in.schema.name;
  j["gate"] = in.gate;
  j["case"] = in.c.label;
  j["kind"] = module ? "module" : "native";
  j["device"] = in.manifest.device;
  j["entry"] = in.manifest.entry;
  j["kernel"] = "kernel/" + base_name(source);
  if (!write_file_atomic(dir + "/" + j["kernel"].get<std::string>(), text)) return (*error = "cannot write " + dir, false);
  if (module && !in.manifest.reference.empty()) {
    std::string ref;
    if (!read_file(in.manifest.reference, &ref)) return (*error = "cannot read the reference module " + in.manifest.reference, false);
    j["reference"] = "kernel/reference_" + base_name(in.manifest.reference);
    write_file_atomic(dir + "/" + j["reference"].get<std::string>(), ref);
  }
  j["constants"] = in.manifest.module_constants.empty() ? nlohmann::json::array()
                                                        : nlohmann::json::parse(in.manifest.module_constants, nullptr, false);
  nlohmann::json inputs = nlohmann::json::array();
  for (size_t i = 0; i < in.inputs.size(); ++i)
    inputs.push_back(write_view(dir, i < in.c.tensors.size() ? in.c.tensors[i].name : "input" + std::to_string(i), in.inputs[i]));
  j["inputs"] = inputs;
  // Attributes follow the tensors in the schema's order (a module fixes its own at construction).
  nlohmann::json attrs = nlohmann::json::array();
  if (!module)
    for (const AttrSpec& a : in.schema.attributes)
      if (auto it = in.c.attrs.find(a.name); it != in.c.attrs.end())
        std::visit([&](auto v) { attrs.push_back({{"name", a.name}, {"value", v}}); }, it->second);
  j["attrs"] = attrs;

  // The reference rounded to the output dtype and the error gauntlet allows per element.
  const DType dtype = case_dtype(in.schema, in.c);
  auto tol = in.schema.tolerance.find(dtype);
  const int64_t K = reduction_terms(in.schema, in.c);
  nlohmann::json outputs = nlohmann::json::array();
  for (size_t i = 0; i < in.oracle.outputs.size(); ++i) {
    const std::string name = i < in.schema.outputs.size() ? in.schema.outputs[i].name : "output" + std::to_string(i);
    const DType odt = expected_output_dtype(in.schema, i, in.c);
    at::Tensor ref = in.oracle.outputs[i].to(at::kDouble).contiguous();
    at::Tensor scale = i < in.oracle.scales.size() && in.oracle.scales[i].defined()
                           ? in.oracle.scales[i].to(at::kDouble).contiguous() : at::Tensor();
    at::Tensor rounded = at::empty_like(ref), allowed = at::empty_like(ref);
    const double* r = ref.data_ptr<double>();
    const double* s = scale.defined() ? scale.data_ptr<double>() : nullptr;
    for (int64_t k = 0; k < ref.numel(); ++k) {
      rounded.data_ptr<double>()[k] = dtype_is_floating(odt) ? num::round_to(odt, r[k]) : r[k];
      allowed.data_ptr<double>()[k] =
          tol == in.schema.tolerance.end() ? 0 : allowed_error(odt, tol->second, r[k], s ? s[k] : NAN, K);
    }
    write_doubles(dir + "/data/expected_" + name + ".bin", rounded);
    write_doubles(dir + "/data/allowed_" + name + ".bin", allowed);
    outputs.push_back({{"name", name}, {"size", ref.sizes()}, {"dtype", dtype_name(odt)},
                       {"expected", "data/expected_" + name + ".bin"}, {"allowed", "data/allowed_" + name + ".bin"}});
  }
  j["outputs"] = outputs;
  j["recorded"] = in.recorded;
  if (!write_file_atomic(dir + "/case.json", j.dump(2) + "\n") ||
      !write_file_atomic(dir + "/repro.py", repro_script()))
    return (*error = "cannot write " + dir, false);
  return true;
}

const char* repro_script() {
  return R"PY(#!/usr/bin/env python3
"""Standalone reproducer written by `gauntlet replay --emit`: needs PyTorch, not gauntlet.

Loads the kernel in kernel/ (a KernelBench-style module, or a LibTorch source built with
torch.utils.cpp_extension), runs it once on the exact inputs in data/ (sizes, strides and storage
offsets as gauntlet sent them), and compares every output with gauntlet's float64 reference,
rounded to the output dtype, under the error gauntlet allows per element. Prints the first
mismatch and the recorded diagnosis; exit 1 when the kernel is still wrong, 0 when it is right.
`python3 repro.py --device cpu` runs a module on the CPU (the reference is the same).
"""
import importlib.util, json, math, os, sys, types

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
CASE = json.load(open(os.path.join(HERE, "case.json")))
DEVICE = sys.argv[sys.argv.index("--device") + 1] if "--device" in sys.argv else CASE["device"]


def view(meta):
    raw = bytearray(open(os.path.join(HERE, meta["file"]), "rb").read())
    dtype = getattr(torch, meta["dtype"])
    base = torch.frombuffer(raw, dtype=dtype) if raw else torch.empty(0, dtype=dtype)
    return base.to(DEVICE).as_strided(meta["size"], meta["stride"], meta["offset"])


def doubles(path, size):
    raw = bytearray(open(os.path.join(HERE, path), "rb").read())
    t = torch.frombuffer(raw, dtype=torch.float64) if raw else torch.empty(0, dtype=torch.float64)
    return t.reshape(size)


def load_source(path, name):
    mod = types.ModuleType(name)
    mod.__file__ = path
    sys.modules[name] = mod
    exec(compile(open(path).read(), path, "exec"), mod.__dict__)
    return mod


def load_kernel():
    path = os.path.join(HERE, CASE["kernel"])
    if CASE["kind"] == "module":
        ref = load_source(os.path.join(HERE, CASE["reference"]), "reference") if CASE.get("reference") else None
        mod = load_source(path, "kernel")
        init = getattr(mod, "get_init_inputs", None) or getattr(ref, "get_init_inputs", None)
        torch.manual_seed(0)  # as gauntlet builds it: the same weights
        model = getattr(mod, CASE["entry"])(*(init() if init else []))
        model = model.eval() if hasattr(model, "eval") else model
        return model.to(DEVICE) if DEVICE == "cuda" and hasattr(model, "to") else model
    from torch.utils import cpp_extension
    build = os.path.join(HERE, "build")
    os.makedirs(build, exist_ok=True)
    text = open(path).read()
    if "PYBIND11_MODULE" in text:
        ext = cpp_extension.load(name="gauntlet_repro", sources=[path], build_directory=build)
    else:
        ext = cpp_extension.load_inline(name="gauntlet_repro", cpp_sources=[text], functions=[CASE["entry"]],
                                        build_directory=build)
    return getattr(ext, CASE["entry"])


def main():
    print("gauntlet reproducer: op %s, gate %s, case %s" % (CASE["op"], CASE["gate"], CASE["case"]))
    kernel = load_kernel()
    args = [view(m) for m in CASE["inputs"]]
    for c in CASE["constants"]:
        args.insert(min(c["index"], len(args)), c["value"])
    args += [a["value"] for a in CASE["attrs"]]
    with torch.no_grad():
        result = kernel(*args)
    outs = list(result) if isinstance(result, (list, tuple)) else [result]
    wrong = False
    for i, meta in enumerate(CASE["outputs"]):
        if i >= len(outs):
            print("%s: missing (the kernel returned %d outputs)" % (meta["name"], len(outs)))
            wrong = True
            continue
        got = outs[i].detach().cpu()
        if list(got.shape) != meta["size"]:
            print("%s: shape %s, expected %s" % (meta["name"], list(got.shape), meta["size"]))
            wrong = True
            continue
        got = got.to(torch.float64).reshape(-1)
        want = doubles(meta["expected"], meta["size"]).reshape(-1)
        allowed = doubles(meta["allowed"], meta["size"]).reshape(-1)
        both_nan = got.isnan() & want.isnan()
        same_inf = got.isinf() & want.isinf() & (got == want)
        bad = ~(both_nan | same_inf) & ~((got - want).abs() <= allowed)
        n = int(bad.sum())
        if n == 0:
            print("%s: all %d elements within gauntlet's tolerance" % (meta["name"], got.numel()))
            continue
        k = int(bad.nonzero()[0])
        index, rest = [], k
        for extent in reversed(meta["size"]):
            index.insert(0, rest % extent)
            rest //= extent
        print("%s%s: got %.9g, expected %.9g (allowed error %.3g); %d of %d elements wrong" % (
            meta["name"], [int(x) for x in index], float(got[k]), float(want[k]), float(allowed[k]), n, got.numel()))
        wrong = True
    diagnosis = CASE.get("recorded", {}).get("diagnosis")
    if diagnosis:
        print("diagnosis: %s: %s" % (diagnosis.get("name"), diagnosis.get("text")))
    if not wrong:
        print("the kernel is right on this case (gauntlet recorded: %s %s; a property beyond one call, such as "
              "determinism or statelessness, is not checked here)" % (
                  CASE.get("recorded", {}).get("status"), CASE.get("recorded", {}).get("category")))
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
)PY";
}

}  // namespace gauntlet::replay_emit
