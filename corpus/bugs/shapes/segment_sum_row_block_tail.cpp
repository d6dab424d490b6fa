// PLANTED BUG (shapes): segment_sum walks x in blocks of 32 rows, adding each row to the segment
// it falls in, and handles the remainder with a loop written `for (i = full; i < N % 32; ++i)`:
// the bound is the remainder's length where it should be N. For N < 32 (full = 0) and for N a
// multiple of 32 that is harmless; for N = 33, 63, 65, 1025, ... the last N % 32 rows are dropped
// from the last segment(s). Typical N (1, 7, 64, 1024) and the KernelBench-style check's 64 rows
// never see it; the shapes gate's tile-edge sizes do.
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

// The offsets as a plain vector after checking them: 1-D int64, S + 1 >= 1 values running
// non-decreasing from 0 to N. Anything else is refused before a row is read, so a bad offset can
// never send the loop below past x.
std::vector<int64_t> checked_offsets(const torch::Tensor& offsets, int64_t N) {
  TORCH_CHECK(offsets.defined() && offsets.device().is_cpu(), "segment_sum: offsets must be a CPU tensor");
  TORCH_CHECK(offsets.layout() == at::kStrided, "segment_sum: offsets must be a dense tensor");
  TORCH_CHECK(offsets.scalar_type() == at::kLong, "segment_sum: offsets must be int64");
  TORCH_CHECK(offsets.dim() == 1 && offsets.size(0) >= 1, "segment_sum: offsets must be 1-D with S + 1 >= 1 values");
  const torch::Tensor oc = offsets.contiguous();
  const int64_t* p = oc.data_ptr<int64_t>();
  std::vector<int64_t> o(p, p + oc.size(0));
  TORCH_CHECK(o.front() == 0, "segment_sum: offsets must start at 0");
  TORCH_CHECK(o.back() == N, "segment_sum: offsets must end at N, the row count of x");
  for (size_t s = 1; s < o.size(); ++s) TORCH_CHECK(o[s] >= o[s - 1], "segment_sum: offsets must not decrease");
  return o;
}

// Adds row i of x to the accumulators of the segment it falls in; `seg` only moves forward.
template <typename scalar_t>
void add_row(const scalar_t* in, int64_t i, int64_t D, const std::vector<int64_t>& o, int64_t* seg,
             std::vector<Acc>* acc) {
  while (i >= o[size_t(*seg + 1)]) ++*seg;  // skips empty segments; offsets end at N, so it stops
  for (int64_t j = 0; j < D; ++j) (*acc)[size_t(*seg * D + j)].add(static_cast<double>(in[i * D + j]));
}

}  // namespace

torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& offsets) {
  check_float_cpu(x);
  TORCH_CHECK(x.dim() == 2, "segment_sum: x must be 2-D [N, D]");
  const int64_t N = x.size(0), D = x.size(1);
  const std::vector<int64_t> o = checked_offsets(offsets, N);
  const int64_t S = int64_t(o.size()) - 1;
  const torch::Tensor xc = x.contiguous();
  torch::Tensor out = torch::empty({S, D}, xc.options());
  if (S == 0 || D == 0) return out;
  constexpr int64_t kBlock = 32;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "segment_sum_block_tail", [&] {
    const scalar_t* in = xc.data_ptr<scalar_t>();
    scalar_t* y = out.data_ptr<scalar_t>();
    std::vector<Acc> acc(static_cast<size_t>(S * D));
    int64_t seg = 0;
    const int64_t full = N - N % kBlock;
    for (int64_t b = 0; b < full; b += kBlock)
      for (int64_t i = b; i < b + kBlock; ++i) add_row(in, i, D, o, &seg, &acc);
    for (int64_t i = full; i < N % kBlock; ++i) add_row(in, i, D, o, &seg, &acc);  // BUG: should be i < N
    for (int64_t k = 0; k < S * D; ++k) y[k] = round_out<scalar_t>(acc[size_t(k)].value());
  });
  return out;
}
