// PLANTED BUG (accuracy): group_by_sum as a hash aggregation with a bounded staging region per key.
// Each row is appended to its key's slots (on a GPU, an atomicAdd on the key's counter picks the
// slot); every key gets cap = 1.5 * ceil(N / G) + 8 slots, half again the mean group size plus a few,
// so the whole staging buffer is one allocation of G * cap. A row whose slot is past cap goes to an
// overflow chain, and the overflow chain is never flushed into the sums: the hottest key loses
// every row beyond its cap. With uniform keys (a KernelBench-style check: torch.randint over 64
// groups, about one row each) no key comes near its cap and the result is exact; under skew
// (zipf: the hottest key holds about N / ln(G) rows; all keys equal: N rows in one group) the hot
// group's sum is short by everything past its cap.
#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>
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

// group_by_sum(keys[N] int64, values[N], num_groups): stage each row in its key's slots, then sum
// every key's staged rows with error-free transformations in double and one rounding.
torch::Tensor forward(const torch::Tensor& keys, const torch::Tensor& values, int64_t num_groups) {
  check_float_cpu(values);
  TORCH_CHECK(values.dim() == 1, "group_by_sum: values must be 1-D [N]");
  TORCH_CHECK(num_groups >= 0, "group_by_sum: num_groups must not be negative");
  const int64_t N = values.size(0);
  const std::vector<int64_t> k = checked_keys(keys, N, num_groups);
  const torch::Tensor vc = values.contiguous();
  torch::Tensor out = torch::empty({num_groups}, vc.options());
  if (num_groups == 0) return out;
  // Half again the mean group size plus a few: enough for any key of a uniform key draw.
  const int64_t mean = (N + num_groups - 1) / num_groups;
  const int64_t cap = mean + mean / 2 + 8;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, vc.scalar_type(), "group_by_sum_hot_key_overflow", [&] {
    const scalar_t* v = vc.data_ptr<scalar_t>();
    scalar_t* y = out.data_ptr<scalar_t>();
    std::vector<double> slots(static_cast<size_t>(num_groups * cap));
    std::vector<int64_t> count(static_cast<size_t>(num_groups), 0);
    std::vector<std::pair<int64_t, double>> overflow;  // rows past their key's cap
    for (int64_t i = 0; i < N; ++i) {
      const int64_t g = k[size_t(i)];
      const int64_t slot = count[size_t(g)]++;
      if (slot < cap) slots[size_t(g * cap + slot)] = static_cast<double>(v[i]);
      else overflow.emplace_back(g, static_cast<double>(v[i]));
    }
    for (int64_t g = 0; g < num_groups; ++g) {
      Acc acc;
      const int64_t staged = count[size_t(g)] < cap ? count[size_t(g)] : cap;
      for (int64_t s = 0; s < staged; ++s) acc.add(slots[size_t(g * cap + s)]);
      y[g] = round_out<scalar_t>(acc.value());
    }
    // The overflow chain was meant to be flushed here, after the slots: it never is.
  });
  return out;
}
