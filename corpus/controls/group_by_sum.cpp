// gauntlet corpus, correct control: group_by_sum.
// A reference-grade native CPU kernel (SPEC kernel form 1): plain loops over data_ptr after
// .contiguous(), one error-free double accumulator per group, one rounding to the output dtype,
// NaN/Inf as PyTorch, out-of-contract inputs (keys outside [0, num_groups), lengths that differ)
// rejected with TORCH_CHECK before anything is written. Expected to pass every gate.
#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

namespace {

// Rounds a double to scalar_t exactly once, round-to-nearest-even. For float this is the plain
// conversion. For Half/BFloat16 a plain static_cast would round twice (double -> float -> 16 bit);
// instead the double is first rounded to float with round-to-odd (truncate, then set the last bit
// when inexact), which makes the final float -> 16-bit RNE conversion the correct rounding of d.
template <typename T>
inline T round_out(double d) {
  if constexpr (std::is_same<T, double>::value) {
    return d;
  } else if constexpr (std::is_same<T, float>::value) {
    return static_cast<float>(d);
  } else {
    float f = static_cast<float>(d);
    if (std::isfinite(d) && static_cast<double>(f) != d) {
      if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
      uint32_t u;
      std::memcpy(&u, &f, sizeof u);
      u |= 1u;
      std::memcpy(&f, &u, sizeof f);
    }
    return static_cast<T>(f);
  }
}

// Error-free summation (Knuth's TwoSum): s + c carries about twice double's precision, so sums
// and dot products of float32/float16/bfloat16 terms come out essentially exact before the one
// final rounding. Non-finite terms: the plain running sum s holds the IEEE answer (inf, NaN).
struct Acc {
  double s = 0.0;
  double c = 0.0;
  inline void add(double x) {
    const double t = s + x;
    const double bp = t - s;
    c += (s - (t - bp)) + (x - bp);
    s = t;
  }
  inline double value() const { return std::isfinite(s) ? s + c : s; }
};

inline void check_float_cpu(const torch::Tensor& t) {
  TORCH_CHECK(t.defined(), "input tensor is undefined");
  TORCH_CHECK(t.device().is_cpu(), "this kernel runs on the CPU only");
  TORCH_CHECK(t.layout() == at::kStrided, "only strided (dense) tensors are supported");
  const auto s = t.scalar_type();
  TORCH_CHECK(s == at::kFloat || s == at::kHalf || s == at::kBFloat16,
              "unsupported dtype: expected float32, float16 or bfloat16");
}

// The keys as a plain vector after checking them: 1-D int64 of length n, each in [0, groups).
// A bad key is refused before any accumulator is indexed with it.
std::vector<int64_t> checked_keys(const torch::Tensor& keys, int64_t n, int64_t groups) {
  TORCH_CHECK(keys.defined() && keys.device().is_cpu(), "group_by_sum: keys must be a CPU tensor");
  TORCH_CHECK(keys.layout() == at::kStrided, "group_by_sum: keys must be a dense tensor");
  TORCH_CHECK(keys.scalar_type() == at::kLong, "group_by_sum: keys must be int64");
  TORCH_CHECK(keys.dim() == 1 && keys.size(0) == n, "group_by_sum: keys must be 1-D with as many elements as values");
  const torch::Tensor kc = keys.contiguous();
  const int64_t* p = kc.data_ptr<int64_t>();
  std::vector<int64_t> k(p, p + n);
  for (int64_t i = 0; i < n; ++i)
    TORCH_CHECK(k[size_t(i)] >= 0 && k[size_t(i)] < groups, "group_by_sum: every key must lie in [0, num_groups)");
  return k;
}

}  // namespace

// group_by_sum(keys[N] int64, values[N], num_groups): out[g] sums the values whose key is g, with
// error-free transformations in double (essentially exact) and one rounding; a group no key names
// gives 0. NaN and infinities propagate as IEEE addition.
torch::Tensor forward(const torch::Tensor& keys, const torch::Tensor& values, int64_t num_groups) {
  check_float_cpu(values);
  TORCH_CHECK(values.dim() == 1, "group_by_sum: values must be 1-D [N]");
  TORCH_CHECK(num_groups >= 0, "group_by_sum: num_groups must not be negative");
  const int64_t N = values.size(0);
  const std::vector<int64_t> k = checked_keys(keys, N, num_groups);
  const torch::Tensor vc = values.contiguous();
  // Every output element is written below, empty groups included (torch::empty holds garbage).
  torch::Tensor out = torch::empty({num_groups}, vc.options());
  if (num_groups == 0) return out;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, vc.scalar_type(), "group_by_sum_control", [&] {
    const scalar_t* v = vc.data_ptr<scalar_t>();
    scalar_t* y = out.data_ptr<scalar_t>();
    std::vector<Acc> acc(static_cast<size_t>(num_groups));
    for (int64_t i = 0; i < N; ++i) acc[size_t(k[size_t(i)])].add(static_cast<double>(v[i]));
    for (int64_t g = 0; g < num_groups; ++g) y[g] = round_out<scalar_t>(acc[size_t(g)].value());
  });
  return out;
}
