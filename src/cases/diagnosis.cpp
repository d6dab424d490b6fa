// Naming known wrong-output patterns (diagnosis.h): each pattern computes what the familiar bug
// would return, in plain float64 code, and matches it against the kernel's whole output.
#include "gauntlet/cases/diagnosis.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "gauntlet/cases/judge.h"
#include "gauntlet/common/numerics.h"
#include "gauntlet/common/wire.h"
#include "gauntlet/oracle/oracle.h"

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
// The inputs with every value subnormal in its dtype read as a zero of the same sign (what
// denormals-are-zero does to operands: CUDA's --use_fast_math, a CPU's DAZ flag); empty when no
// input holds a subnormal.
std::vector<at::Tensor> subnormals_as_zero(const std::vector<at::Tensor>& inputs) {
  bool any = false;
  std::vector<at::Tensor> out;
  for (const at::Tensor& t : inputs) {
    if (!t.defined() || !t.is_floating_point() || t.numel() == 0) {
      out.push_back(t);
      continue;
    }
    const double min_normal = num::limits(dtype_of(t)).min_normal;
    const at::Tensor x = t.to(at::kDouble);
    const at::Tensor sub = (x.abs() < min_normal) & (x != 0);
    if (!sub.any().item<bool>()) {
      out.push_back(t);
      continue;
    }
    any = true;
    out.push_back(at::where(sub, x * 0, x).to(t.scalar_type()));
  }
  return any ? out : std::vector<at::Tensor>{};
}

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

// --- Accumulation in the input's 16-bit dtype ---------------------------------------------------
//
// A sum or dot product that keeps its running sum in float16/bfloat16 (a scalar_t or at::Half
// accumulator, or float32 partials added into a 16-bit one) rounds that sum to the 16-bit dtype after
// every add. The order of the adds differs between kernels, so no single simulation reproduces every
// such kernel; the criterion (docs/diagnoses.md) names the failure only when
//   (1) the kernel's output is beyond a float32 accumulator's bound on at least half of its
//       elements (the failure is broad, not one wrong element), and
//   (2) one simulated 16-bit accumulation order (sequential; sequential with each product rounded to
//       the dtype first; float32 chunk partials combined in the dtype) reproduces every element to
//       within kRunningSumUlps ulps at the running sum's magnitude, and that simulation is itself
//       beyond the float32 bound and farther than that tolerance from the exact result on at least
//       half the elements (so matching it says more than "near the exact result").
// Orders outside that family (interleaved lanes, trees, reversed) are left undiagnosed.

// What a float32 accumulator can return for an output of K terms of total magnitude scale = sum|t|:
// at most K u32 scale from the exact sum in any order of the adds (the reduction schemas' hard
// ceiling, u32 = 2^-24; the products' own roundings included), plus kFloat32Ulps ulps of the output
// for its final rounding. Past it no float32 accumulation can be; on random data at large K a 16-bit
// one often is not past it either (this worst case grows like K, 16-bit rounding noise like sqrt(K)),
// and such outputs are left unnamed.
constexpr double kFloat32Ulps = 2;
// How close the kernel must be to a simulated 16-bit accumulation. A rounding tie decided the other
// way (a float32 rather than an exact partial sum, a sum or product rounded through float first)
// moves the running sum by one ulp of the 16-bit dtype at the magnitude it has then, and the later
// adds keep that offset (both sums lie on the same grid): two such are allowed, at the running sum's
// largest magnitude (and at least 2 ulps of the output itself, for a mean's division).
constexpr double kRunningSumUlps = 2;
// The two-level orders: float32 partial sums of C consecutive terms, C a power of two in this range
// (split-K chunks, block and warp partials), combined in the 16-bit dtype; at least two chunks.
constexpr int64_t kMinChunk = 32;
constexpr int64_t kMaxChunk = 1024;
// Larger cases (outputs x K terms) are not simulated: about a second of plain loops at this size. The
// accumulation gate's cases hold 2^17-2^18 terms.
constexpr int64_t kMaxSimulatedTerms = int64_t(1) << 24;

// The terms each output element of a sum-like op adds up, in their order along K: sum and mean (x
// along dim; a mean divides the sum by K), matmul and bmm (a_ik * b_kj, exact in double: a product of
// two 16-bit values has at most 22 significant bits).
struct ReductionTerms {
  int64_t outputs = 0, K = 0;
  bool products = false;
  double divisor = 1;                          // mean: K
  at::Tensor scale;                            // [outputs] float64: sum_k |t_k| / divisor
  std::function<void(int64_t, double*)> fill;  // writes output i's K terms
};

// Nothing (not simulated) for other ops, malformed inputs, K = 0, or more than kMaxSimulatedTerms.
std::optional<ReductionTerms> reduction_terms(const std::string& op, const Case& c, const std::vector<at::Tensor>& in) {
  ReductionTerms r;
  if (op == "sum" || op == "mean") {
    if (in.size() != 1 || !in[0].defined() || in[0].dim() == 0) return std::nullopt;
    auto it = c.attrs.find("dim");
    int64_t dim = it != c.attrs.end() && std::holds_alternative<int64_t>(it->second) ? std::get<int64_t>(it->second) : -1;
    if (dim < -in[0].dim() || dim >= in[0].dim()) return std::nullopt;
    if (dim < 0) dim += in[0].dim();
    r.K = in[0].size(dim);
    if (r.K == 0 || in[0].numel() == 0 || in[0].numel() > kMaxSimulatedTerms) return std::nullopt;
    const at::Tensor rows = in[0].to(at::kDouble).movedim(dim, -1).contiguous().reshape({-1, r.K});
    r.outputs = rows.size(0);
    r.divisor = op == "mean" ? double(r.K) : 1.0;
    r.scale = rows.abs().sum(1) / r.divisor;
    const int64_t K = r.K;
    r.fill = [rows, K](int64_t i, double* t) { std::copy_n(rows.data_ptr<double>() + i * K, K, t); };
    return r;
  }
  if (op == "matmul" || op == "bmm") {
    const int64_t rank = op == "bmm" ? 3 : 2;
    if (in.size() != 2 || !in[0].defined() || !in[1].defined() || in[0].dim() != rank || in[1].dim() != rank) return std::nullopt;
    if (in[0].size(-1) != in[1].size(-2) || (rank == 3 && in[0].size(0) != in[1].size(0))) return std::nullopt;
    if (in[0].numel() == 0 || in[1].numel() == 0 || in[0].numel() > kMaxSimulatedTerms / in[1].size(-1)) return std::nullopt;
    const at::Tensor a = in[0].to(at::kDouble).reshape({-1, in[0].size(-2), in[0].size(-1)}).contiguous();
    const at::Tensor b = in[1].to(at::kDouble).reshape({-1, in[1].size(-2), in[1].size(-1)});
    const int64_t M = a.size(1), K = a.size(2), N = b.size(2);
    const at::Tensor bt = b.transpose(1, 2).contiguous();  // [batch, N, K]
    r.K = K;
    r.outputs = a.size(0) * M * N;
    r.products = true;
    r.scale = at::matmul(a.abs(), b.abs()).reshape({-1});
    r.fill = [a, bt, M, N, K](int64_t i, double* t) {
      const int64_t batch = i / (M * N), row = i / N % M, col = i % N;
      const double* pa = a.data_ptr<double>() + (batch * M + row) * K;
      const double* pb = bt.data_ptr<double>() + (batch * N + col) * K;
      for (int64_t k = 0; k < K; ++k) t[k] = pa[k] * pb[k];
    };
    return r;
  }
  return std::nullopt;
}

// One 16-bit accumulation order: a running sum in `dt` of the terms one at a time (chunk 1;
// `round_terms`: each term rounded to dt first, as scalar_t arithmetic rounds a product), or of the
// float32 partial sums of `chunk` consecutive terms.
struct HalfOrder {
  int64_t chunk = 1;
  bool round_terms = false;
  bool alive = true;      // every element so far reproduced
  int64_t distinct = 0;   // elements where this order is beyond float32 and beyond the tolerance
  double example = NAN;   // its value at the example element
};

// The order's result for terms t[0..K), and the largest magnitude its running sum took.
double accumulate_in(DType dt, const double* t, int64_t K, const HalfOrder& o, double* largest) {
  double sum = 0;
  *largest = 0;
  for (int64_t k0 = 0; k0 < K; k0 += o.chunk) {
    double add = 0;
    if (o.chunk == 1) {
      add = o.round_terms ? num::round_to(dt, t[k0]) : t[k0];
    } else {
      for (int64_t k = k0; k < std::min(K, k0 + o.chunk); ++k) add += t[k];
      add = num::round_to(DType::Float32, add);
    }
    sum = num::round_to(dt, sum + add);
    if (std::isfinite(sum)) *largest = std::max(*largest, std::fabs(sum));
  }
  return sum;
}

std::string order_text(const HalfOrder& o, const char* dt, int64_t K, bool products) {
  const std::string terms = std::to_string(K) + (products ? " products" : " terms");
  if (o.chunk == 1)
    return std::string("a ") + dt + " running sum of its " + terms + " in order" +
           (o.round_terms ? std::string(", each product rounded to ") + dt + " first (scalar_t arithmetic)" : "");
  return std::string("float32 partial sums of ") + std::to_string(o.chunk) + " consecutive" + (products ? " products" : " terms") +
         " (of " + std::to_string(K) + ") added up in a " + dt + " accumulator";
}

std::optional<Diagnosis> half_accumulation(const OpSchema& schema, const Case& c, const std::vector<at::Tensor>& inputs,
                                           const at::Tensor& got, const at::Tensor& expected, const std::string& output) {
  if (inputs.empty() || !inputs[0].defined()) return std::nullopt;
  if (inputs[0].scalar_type() != at::kHalf && inputs[0].scalar_type() != at::kBFloat16) return std::nullopt;
  const DType dt = dtype_of(inputs[0]);
  if (got.sizes() != expected.sizes() || got.numel() == 0) return std::nullopt;
  const std::optional<ReductionTerms> terms = reduction_terms(schema.oracle, c, inputs);
  if (!terms || terms->outputs != got.numel()) return std::nullopt;
  const int64_t n = terms->outputs, K = terms->K;
  const at::Tensor g = got.to(at::kDouble).contiguous().reshape({-1});
  const at::Tensor e = expected.to(at::kDouble).contiguous().reshape({-1});
  const at::Tensor s = terms->scale.contiguous();
  const double* gp = g.data_ptr<double>();
  const double* ep = e.data_ptr<double>();
  const double* sp = s.data_ptr<double>();
  const double float32_term = double(K) * num::limits(DType::Float32).unit_roundoff;
  // Whether v is beyond a float32 accumulator's bound at element i (whose exact result is finite in dt).
  auto beyond = [&](int64_t i, double v) {
    if (!std::isfinite(v)) return true;
    return std::fabs(v - ep[i]) > kFloat32Ulps * num::ulp_at(dt, ep[i]) + float32_term * sp[i];
  };
  // (1) The kernel: beyond float32 on at least half of the elements whose exact result is finite.
  int64_t finite = 0, kernel_beyond = 0, example = -1;
  std::vector<char> counted(size_t(n), 0);
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(num::round_to(dt, ep[i]))) continue;
    counted[size_t(i)] = 1;
    ++finite;
    if (beyond(i, gp[i])) {
      ++kernel_beyond;
      if (example < 0) example = i;
    }
  }
  if (finite == 0 || 2 * kernel_beyond < finite) return std::nullopt;
  // (2) A simulated 16-bit order that reproduces every element, and is itself beyond float32 and
  // farther than its match tolerance from the exact result on at least half of them.
  std::vector<HalfOrder> orders{{1, false}};
  if (terms->products) orders.push_back({1, true});
  for (int64_t chunk = kMinChunk; chunk <= kMaxChunk && 2 * chunk <= K; chunk *= 2) orders.push_back({chunk, false});
  std::vector<double> t(static_cast<size_t>(K));
  for (int64_t i = 0; i < n; ++i) {
    terms->fill(i, t.data());
    bool any = false;
    for (HalfOrder& o : orders) {
      if (!o.alive) continue;
      double largest = 0;
      double sim = accumulate_in(dt, t.data(), K, o, &largest);
      if (terms->divisor != 1) sim = num::round_to(dt, sim / terms->divisor);
      if (i == example) o.example = sim;
      if (!std::isfinite(sim) || !std::isfinite(gp[i])) {
        // An overflow (inf) or NaN is reproduced exactly, or not at all.
        o.alive = std::isnan(sim) ? std::isnan(gp[i]) : sim == gp[i];
      } else {
        const double tol = kRunningSumUlps * std::max(num::ulp_at(dt, largest) / terms->divisor, num::ulp_at(dt, sim));
        o.alive = std::fabs(gp[i] - sim) <= tol;
        if (counted[size_t(i)] && beyond(i, sim) && std::fabs(sim - ep[i]) > tol) ++o.distinct;
      }
      if (o.alive && !std::isfinite(sim) && counted[size_t(i)]) ++o.distinct;
      any = any || o.alive;
    }
    if (!any) return std::nullopt;
  }
  const char* dname = dtype_name(dt);
  for (const HalfOrder& o : orders) {
    if (!o.alive || 2 * o.distinct < finite) continue;
    return Diagnosis{"half-accumulation",
                     std::string("accumulated in ") + dname + ": every output is " + order_text(o, dname, K, terms->products) +
                         (terms->divisor != 1 ? ", divided by " + std::to_string(K) : "") + " (to " + number(kRunningSumUlps) +
                         " " + dname + " ulps at the running sum's magnitude), and " + std::to_string(kernel_beyond) + " of " +
                         std::to_string(finite) + " are past any float32 accumulator's error bound (" + output +
                         index_text(got.sizes(), example) + " = " + number(gp[example]) + " where the exact result is " +
                         number(ep[example]) + " and that sum gives " + number(o.example) + ")"};
  }
  return std::nullopt;
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
    if (t.defined() && t.is_floating_point() && t.numel() > 0)
      nan_input = nan_input || wire::nan_testable(t).isnan().any().item<bool>();
  for (size_t i = 0; i < n; ++i) {
    if (!floating(got[i]) || !expected[i].defined() || got[i].sizes() != expected[i].sizes()) continue;
    if (nan_input)
      if (auto d = nan_dropped(got[i], expected[i].to(at::kDouble), output_name(i))) return d;
    if (auto d = flushed_to_zero(got[i], expected[i].to(at::kDouble), output_name(i))) return d;
  }
  // Subnormal operands read as zero: the op on the flushed inputs reproduces every output.
  const std::vector<at::Tensor> flushed = subnormals_as_zero(inputs);
  if (!flushed.empty()) {
    const OracleResult r = run_oracle(schema.oracle, flushed, c.attrs);
    if (r.ok())
      for (size_t i = 0; i < n && i < r.outputs.size(); ++i)
        if (floating(got[i]) && explains(got[i], r.outputs[i], expected[i], kPatternRel, output_name(i), &example))
          return Diagnosis{"subnormal-inputs-as-zero",
                           "subnormal inputs are read as zero (denormals-are-zero: --use_fast_math, or a DAZ/FTZ "
                           "flag): the output is the op on the inputs with every subnormal replaced by 0 (" + example + ")"};
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
  // A kernel that keeps to its matrices' structure (a triangular one reads only its triangle) and
  // reads a transposed one's storage row-major sees that storage projected onto the structure.
  bool structured = false;
  for (const TensorRecipe& r : c.tensors) structured = structured || !r.structure.empty();
  if (!raw.empty() && structured) {
    std::vector<at::Tensor> projected = raw;
    for (size_t t = 0; t < projected.size() && t < c.tensors.size(); ++t)
      if (projected[t].defined() && projected[t].is_floating_point())
        projected[t] = with_structure(projected[t], c.tensors[t].structure);
    const OracleResult r = run_oracle(schema.oracle, projected, c.attrs);
    if (r.ok())
      for (size_t i = 0; i < n && i < r.outputs.size(); ++i)
        if (floating(got[i]) && explains(got[i], r.outputs[i], expected[i], 1e-3, output_name(i), &example))
          return Diagnosis{"contiguous-read", "a non-contiguous input is read as contiguous storage, of which the kernel "
                                              "keeps only the promised structure: the output is the op on " +
                                                  nonconti_text(c) + " read row-major from its data pointer and made " +
                                                  "triangular, symmetric or diagonal again (" + example + ")"};
  }
  if (n >= 1 && floating(got[0]) && expected[0].defined())
    if (auto d = half_accumulation(schema, c, inputs, got[0], expected[0], output_name(0))) return d;
  return std::nullopt;
}

}  // namespace gauntlet
