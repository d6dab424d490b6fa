// gauntlet corpus, planted bug (determinism): sum whose 8 threads add their chunk sums into one
// float with a compare-and-swap loop, in the order they finish. Each chunk is summed exactly (double,
// TwoSum) and only the 8 float additions race, so every result is within a few ulps of the exact
// sum, and on rows below 65536 terms it runs single-threaded and is bitwise reproducible: a
// determinism gate of small, few cases never sees it. Each thread waits before adding, by an amount
// the call count rotates (the scheduling noise of a loaded machine, or of a GPU, made large enough
// to show on an idle 2-core machine, where threads would otherwise finish in creation order), so
// the order changes call to call.
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <atomic>
#include <chrono>

#include <algorithm>
#include <mutex>
#include <thread>

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

inline void check_same_dtype(const torch::Tensor& a, const torch::Tensor& b) {
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "all floating inputs must have the same dtype");
}

// Validates dim against [-rank, rank) (rank >= 1) and wraps negative dims.
inline int64_t wrap_dim(int64_t dim, int64_t rank) {
  TORCH_CHECK(rank >= 1, "input must have at least one dimension");
  TORCH_CHECK(dim >= -rank && dim < rank, "dim out of range");
  return dim < 0 ? dim + rank : dim;
}

// Splits a contiguous shape around `d`: [outer, K, inner].
struct Split {
  int64_t outer = 1, K = 1, inner = 1;
};
inline Split split_at(at::IntArrayRef sizes, int64_t d) {
  Split s;
  for (int64_t i = 0; i < d; ++i) s.outer *= sizes[i];
  s.K = sizes[d];
  for (int64_t i = d + 1; i < static_cast<int64_t>(sizes.size()); ++i) s.inner *= sizes[i];
  return s;
}

}  // namespace

// sum(x, dim): x.sum(dim) for any rank >= 1 and dim in [-rank, rank). The terms are accumulated with
// error-free transformations in double (essentially exact) and rounded once to the dtype. An empty
// reduced dim gives 0.
torch::Tensor forward(const torch::Tensor& x, int64_t dim) {
  check_float_cpu(x);
  const int64_t d = wrap_dim(dim, x.dim());
  const torch::Tensor xc = x.contiguous();
  const Split sp = split_at(xc.sizes(), d);
  std::vector<int64_t> out_shape;
  for (int64_t i = 0; i < xc.dim(); ++i)
    if (i != d) out_shape.push_back(xc.size(i));
  torch::Tensor out = torch::empty(out_shape, xc.options());
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "sum_cas_race", [&] {
    const scalar_t* in = xc.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    // 8 threads over K on long rows; each adds its exact chunk sum into the shared float total
    // with a CAS loop as soon as it finishes: the order of those 8 roundings is the race.
    const int64_t workers = sp.K >= 65536 ? 8 : 1;
    static std::atomic<int64_t> calls{0};
    const int64_t call = calls.fetch_add(1);
    const size_t n_out = static_cast<size_t>(sp.outer * sp.inner);
    std::vector<std::atomic<float>> total(n_out);
    for (auto& t : total) t.store(0.0f);
    auto work = [&](int64_t w) {
      const int64_t k0 = sp.K * w / workers, k1 = sp.K * (w + 1) / workers;
      std::vector<Acc> part(n_out);
      for (int64_t p = 0; p < sp.outer; ++p)
        for (int64_t k = k0; k < k1; ++k) {
          const scalar_t* row = in + (p * sp.K + k) * sp.inner;
          for (int64_t i = 0; i < sp.inner; ++i) part[p * sp.inner + i].add(static_cast<double>(row[i]));
        }
      if (workers > 1) {
        // Whole steps of 300 us, rotated by the call count: the finishing order moves call to
        // call by far more than a scheduler's noise, so the race shows on an idle machine too.
        const auto jitter = std::chrono::microseconds(((w + call) % workers) * 300);
        std::this_thread::sleep_for(jitter);
      }
      for (int64_t p = 0; p < sp.outer; ++p)
        for (int64_t i = 0; i < sp.inner; ++i) {
          std::atomic<float>& t = total[static_cast<size_t>(p * sp.inner + i)];
          const float add = static_cast<float>(part[static_cast<size_t>(p * sp.inner + i)].value());
          float seen = t.load();
          while (!t.compare_exchange_weak(seen, seen + add)) {
          }
        }
    };
    std::vector<std::thread> pool;
    for (int64_t w = 1; w < workers; ++w) pool.emplace_back(work, w);
    work(0);
    for (auto& t : pool) t.join();
    for (size_t j = 0; j < n_out; ++j) o[j] = round_out<scalar_t>(static_cast<double>(total[j].load()));
  });
  return out;
}
