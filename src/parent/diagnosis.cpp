// Naming known wrong-output patterns (diagnosis.h): each pattern computes what the familiar bug
// would return, in plain float64 code, and matches it against the kernel's whole output.
#include "gauntlet/diagnosis.h"

#include <cmath>
#include <functional>

#include "gauntlet/judge.h"
#include "gauntlet/numerics.h"
#include "gauntlet/oracle.h"

namespace gauntlet {
namespace {

// How close the kernel's value must be to a pattern's: a pattern is the bug's exact arithmetic,
// the kernel's own rounding adds a few ulps of its dtype (kPatternUlps) and, for patterns
// computed through a reduction, a relative slack (kPatternRel) far below the gap between the
// pattern and the exact result that the kernel was failed for.
constexpr double kPatternUlps = 8;
constexpr double kPatternRel = 1e-5;

DType dtype_of(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kHalf: return DType::Float16;
    case at::kBFloat16: return DType::BFloat16;
    case at::kDouble: return DType::Float64;
    default: return DType::Float32;
  }
}

bool same_value(double got, double want, DType dt, double rel, double ulps = kPatternUlps) {
  if (std::isnan(got) || std::isnan(want)) return std::isnan(got) && std::isnan(want);
  if (std::isinf(got) || std::isinf(want)) return got == want;
  return std::fabs(got - want) <= rel * std::fabs(want) + ulps * num::ulp_at(dt, want);
}

// Where the kernel differs from the exact result: more than a rounding or two of its dtype.
constexpr double kDifferUlps = 2;

std::string number(double x) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  return buf;
}

// Whether `got` equals `pattern` (a float64 tensor of the same shape) element for element, and
// the pattern differs from the exact result somewhere; *example names the first such element.
bool explains(const at::Tensor& got, const at::Tensor& pattern, const at::Tensor& expected, double rel,
              const std::string& output, std::string* example) {
  if (!got.defined() || got.sizes() != pattern.sizes() || got.sizes() != expected.sizes() || got.numel() == 0) return false;
  const DType dt = dtype_of(got);
  const at::Tensor g = got.to(at::kDouble).contiguous().reshape({-1});
  const at::Tensor p = pattern.to(at::kDouble).contiguous().reshape({-1});
  const at::Tensor e = expected.to(at::kDouble).contiguous().reshape({-1});
  const double* gp = g.data_ptr<double>();
  const double* pp = p.data_ptr<double>();
  const double* ep = e.data_ptr<double>();
  int64_t differs = -1;
  for (int64_t i = 0; i < g.numel(); ++i) {
    if (!same_value(gp[i], num::round_to(dt, pp[i]), dt, rel)) return false;
    if (differs < 0 && !same_value(gp[i], num::round_to(dt, ep[i]), dt, 0, kDifferUlps)) differs = i;
  }
  if (differs < 0) return false;
  *example = output + index_text(got.sizes(), differs) + " = " + number(gp[differs]) + " where the exact result is " +
             number(ep[differs]);
  return true;
}

// fmaxf(0, x), fminf and fmaxf-based max return the other operand for a NaN: the exact result
// is NaN (a NaN input propagates) and the kernel returns a number there (an all-NaN slice reduced
// from -inf gives -inf), and nowhere else differs. Only asked when an input holds a NaN.
std::optional<Diagnosis> nan_dropped(const at::Tensor& got, const at::Tensor& expected, const std::string& output) {
  if (got.sizes() != expected.sizes()) return std::nullopt;
  const DType dt = dtype_of(got);
  const at::Tensor g = got.to(at::kDouble).contiguous().reshape({-1});
  const at::Tensor e = expected.contiguous().reshape({-1});
  const double* gp = g.data_ptr<double>();
  const double* ep = e.data_ptr<double>();
  int64_t dropped = 0, first = -1;
  for (int64_t i = 0; i < g.numel(); ++i) {
    if (std::isnan(ep[i]) && !std::isnan(gp[i])) {
      dropped += 1;
      if (first < 0) first = i;
    } else if (std::isnan(gp[i]) != std::isnan(ep[i])) {
      return std::nullopt;
    } else if (!std::isnan(ep[i]) && !same_value(gp[i], num::round_to(dt, ep[i]), dt, kPatternRel)) {
      return std::nullopt;
    }
  }
  if (dropped == 0) return std::nullopt;
  return Diagnosis{"nan-dropped", std::to_string(dropped) + " outputs whose exact result is NaN (a NaN input) came back as numbers (" +
                                      output + index_text(got.sizes(), first) + " = " + number(gp[first]) +
                                      "), as fmaxf/fminf-style max and min do: they return the other operand"};
}

// Results that are subnormal in the output dtype came back as zero, and nothing else differs.
std::optional<Diagnosis> flushed_to_zero(const at::Tensor& got, const at::Tensor& expected, const std::string& output) {
  if (got.sizes() != expected.sizes()) return std::nullopt;
  const DType dt = dtype_of(got);
  const double min_normal = num::limits(dt).min_normal;
  const at::Tensor g = got.to(at::kDouble).contiguous().reshape({-1});
  const at::Tensor e = expected.contiguous().reshape({-1});
  const double* gp = g.data_ptr<double>();
  const double* ep = e.data_ptr<double>();
  int64_t flushed = 0, first = -1;
  for (int64_t i = 0; i < g.numel(); ++i) {
    const double want = num::round_to(dt, ep[i]);
    if (want != 0 && std::fabs(want) < min_normal && gp[i] == 0) {
      flushed += 1;
      if (first < 0) first = i;
    } else if (!same_value(gp[i], want, dt, kPatternRel)) {
      return std::nullopt;
    }
  }
  if (flushed == 0) return std::nullopt;
  return Diagnosis{"flush-to-zero", std::to_string(flushed) + " outputs whose correctly rounded result is subnormal came back 0 (" +
                                        output + index_text(got.sizes(), first) + ": exact " + number(ep[first]) +
                                        "): flush-to-zero arithmetic, not a gross error"};
}

// GELU's tanh form, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), where the op is erf GELU.
at::Tensor gelu_tanh(const at::Tensor& x) {
  const at::Tensor d = x.to(at::kDouble);
  return 0.5 * d * (1 + at::tanh(std::sqrt(2.0 / M_PI) * (d + 0.044715 * d * d * d)));
}

// exp(x) / sum(exp(x)) in the input's dtype: overflows to inf / inf = NaN for large logits.
at::Tensor softmax_without_max(const at::Tensor& x, int64_t dim, bool log) {
  const at::Tensor f = x.to(at::kFloat);
  const at::Tensor e = at::exp(f);
  const at::Tensor s = e.sum(dim, /*keepdim=*/true);
  return (log ? at::log(e / s) : e / s).to(at::kDouble);
}

// The op on each non-contiguous input's storage read row-major from its offset, as a kernel
// indexing data_ptr() does; undefined when a view's storage is too small to read that way.
std::vector<at::Tensor> storage_read_as_contiguous(const Case& c, const std::vector<at::Tensor>& inputs) {
  std::vector<at::Tensor> raw;
  bool any = false;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const at::Tensor& t = inputs[k];
    if (k >= c.tensors.size() || c.tensors[k].layout == "contiguous" || t.is_contiguous()) {
      raw.push_back(t);
      continue;
    }
    const int64_t available = int64_t(t.storage().nbytes() / size_t(t.element_size())) - t.storage_offset();
    if (available < t.numel()) return {};
    std::vector<int64_t> strides(size_t(t.dim()), 1);
    for (int64_t d = t.dim() - 2; d >= 0; --d) strides[size_t(d)] = strides[size_t(d) + 1] * t.size(d + 1);
    raw.push_back(t.as_strided(t.sizes(), strides, t.storage_offset()).clone());
    any = true;
  }
  return any ? raw : std::vector<at::Tensor>{};
}

std::string nonconti_text(const Case& c) {
  std::string s;
  for (const TensorRecipe& r : c.tensors)
    if (r.layout != "contiguous") s += (s.empty() ? "" : ", ") + r.name + " " + r.layout;
  return s;
}

}  // namespace

std::optional<Diagnosis> diagnose_wrong_output(const OpSchema& schema, const Case& c, const std::vector<at::Tensor>& inputs,
                                               const std::vector<at::Tensor>& got,
                                               const std::vector<at::Tensor>& expected) {
  auto output_name = [&](size_t i) { return i < schema.outputs.size() ? schema.outputs[i].name : "output" + std::to_string(i); };
  const size_t n = std::min(got.size(), expected.size());
  auto floating = [](const at::Tensor& t) { return t.defined() && t.is_floating_point(); };
  std::string example;
  if (schema.oracle == "gelu" && !inputs.empty() && n >= 1 && floating(got[0]) &&
      explains(got[0], gelu_tanh(inputs[0]), expected[0], kPatternRel, output_name(0), &example))
    return Diagnosis{"gelu-tanh", "the output is GELU's tanh approximation, gelu(x, approximate=\"tanh\"), not the exact erf "
                                  "form (" + example + ")"};
  if ((schema.oracle == "softmax" || schema.oracle == "log_softmax") && !inputs.empty() && n >= 1 && floating(got[0])) {
    auto dim = c.attrs.find("dim");
    const int64_t d = dim != c.attrs.end() && std::holds_alternative<int64_t>(dim->second) ? std::get<int64_t>(dim->second) : -1;
    if (inputs[0].dim() > 0 &&
        explains(got[0], softmax_without_max(inputs[0], d, schema.oracle == "log_softmax"), expected[0], 1e-3,
                 output_name(0), &example))
      return Diagnosis{"softmax-without-max", "the output is exp(x) / sum(exp(x)) without subtracting the row maximum: "
                                              "large inputs overflow exp to inf and the row to NaN (" + example + ")"};
  }
  bool nan_input = false;
  for (const at::Tensor& t : inputs)
    if (t.defined() && t.is_floating_point() && t.numel() > 0) nan_input = nan_input || t.isnan().any().item<bool>();
  for (size_t i = 0; i < n; ++i) {
    if (!floating(got[i]) || !expected[i].defined() || got[i].sizes() != expected[i].sizes()) continue;
    if (nan_input)
      if (auto d = nan_dropped(got[i], expected[i].to(at::kDouble), output_name(i))) return d;
    if (auto d = flushed_to_zero(got[i], expected[i].to(at::kDouble), output_name(i))) return d;
  }
  const std::vector<at::Tensor> raw = storage_read_as_contiguous(c, inputs);
  if (!raw.empty()) {
    const OracleResult r = run_oracle(schema.oracle, raw, c.attrs);
    if (r.ok())
      for (size_t i = 0; i < n && i < r.outputs.size(); ++i) {
        if (!floating(got[i])) continue;
        if (explains(got[i], r.outputs[i], expected[i], 1e-3, output_name(i), &example))
          return Diagnosis{"contiguous-read", "a non-contiguous input is read as contiguous storage: the output is the op on " +
                                                  nonconti_text(c) + " read row-major from its data pointer (" + example + ")"};
        // The output allocated like that input (empty_like keeps a dense view's strides) and written
        // row-major through its data pointer too: the logical output is the pattern seen through them.
        for (const at::Tensor& t : inputs)
          if (!t.is_contiguous() && t.sizes() == got[i].sizes() && t.is_non_overlapping_and_dense()) {
            const at::Tensor through = r.outputs[i].contiguous().reshape({-1}).as_strided(t.sizes(), t.strides(), 0);
            if (explains(got[i], through, expected[i], 1e-3, output_name(i), &example))
              return Diagnosis{"contiguous-read", "a non-contiguous input is read as contiguous storage, and the output, "
                                                  "allocated like it (empty_like), written as contiguous storage too: the op on " +
                                                      nonconti_text(c) + " read row-major from its data pointer (" + example + ")"};
          }
      }
  }
  return std::nullopt;
}

}  // namespace gauntlet
