// gauntlet corpus, correct control: scatter_add, nondeterministic within the declared bound.
// A native CPU kernel that adds the way GPU float atomics do: 4 std::threads split the terms and
// each adds its terms into float32 buckets with a compare-and-swap loop, in the order the threads
// arrive, so a bucket's rounding errors depend on the schedule and repeated runs may differ in the
// last bits. The schema declares exactly that ("determinism": "tolerance"): every run stays within
// the float32-accumulator bound of the exact sum, which the gates check instead of bitwise
// equality. The threads start in an order rotated by the call count (by whole steps of 100 us, far
// beyond a scheduler's noise), so the arrival order changes from call to call on an idle machine
// too, not only under a GPU's or a loaded machine's scheduling. Expected to pass every gate.
#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <thread>
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

inline void check_float_cpu(const torch::Tensor& t) {
  TORCH_CHECK(t.defined(), "input tensor is undefined");
  TORCH_CHECK(t.device().is_cpu(), "this kernel runs on the CPU only");
  TORCH_CHECK(t.layout() == at::kStrided, "only strided (dense) tensors are supported");
  const auto s = t.scalar_type();
  TORCH_CHECK(s == at::kFloat || s == at::kHalf || s == at::kBFloat16,
              "unsupported dtype: expected float32, float16 or bfloat16");
}

// The indices as a plain vector after checking them: 1-D int64 of length n, each in [0, size).
// A bad index is refused before any thread starts, so no bucket past the output is ever touched.
std::vector<int64_t> checked_index(const torch::Tensor& index, int64_t n, int64_t size) {
  TORCH_CHECK(index.defined() && index.device().is_cpu(), "scatter_add: index must be a CPU tensor");
  TORCH_CHECK(index.layout() == at::kStrided, "scatter_add: index must be a dense tensor");
  TORCH_CHECK(index.scalar_type() == at::kLong, "scatter_add: index must be int64");
  TORCH_CHECK(index.dim() == 1 && index.size(0) == n, "scatter_add: index must be 1-D with as many elements as x");
  const torch::Tensor ic = index.contiguous();
  const int64_t* p = ic.data_ptr<int64_t>();
  std::vector<int64_t> v(p, p + n);
  for (int64_t i = 0; i < n; ++i)
    TORCH_CHECK(v[size_t(i)] >= 0 && v[size_t(i)] < size, "scatter_add: every index must lie in [0, size)");
  return v;
}

// atomicAdd on a float, as CUDA's: read, add in float32, compare-and-swap, retry on contention.
inline void atomic_add(std::atomic<float>& bucket, float term) {
  float seen = bucket.load(std::memory_order_relaxed);
  while (!bucket.compare_exchange_weak(seen, seen + term, std::memory_order_relaxed)) {
  }
}

constexpr int64_t kWorkers = 4;
constexpr int64_t kThreadedFrom = 32;  // fewer terms: one thread (thread start-up would dominate)

}  // namespace

// scatter_add(x[N], index[N] int64, size): out[v] sums the x[i] with index[i] == v in float32,
// in arrival order, rounded once to x's dtype; a bucket no index names gives 0. NaN and
// infinities propagate as IEEE addition (their outcome does not depend on the order).
torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& index, int64_t size) {
  check_float_cpu(x);
  TORCH_CHECK(x.dim() == 1, "scatter_add: x must be 1-D [N]");
  TORCH_CHECK(size >= 0, "scatter_add: size must not be negative");
  const int64_t N = x.size(0);
  const std::vector<int64_t> idx = checked_index(index, N, size);
  const torch::Tensor xc = x.contiguous();
  torch::Tensor out = torch::empty({size}, xc.options());
  if (size == 0) return out;
  static std::atomic<int64_t> calls{0};
  const int64_t call = calls.fetch_add(1);
  std::vector<std::atomic<float>> acc(static_cast<size_t>(size));
  for (auto& a : acc) a.store(0.0f);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "scatter_add_control", [&] {
    const scalar_t* in = xc.data_ptr<scalar_t>();
    const int64_t workers = N >= kThreadedFrom ? kWorkers : 1;
    auto work = [&](int64_t w) {
      if (workers > 1) {
        const auto wait = std::chrono::microseconds(((w + call) % workers) * 100);
        std::this_thread::sleep_for(wait);
      }
      // float32 terms: a float16/bfloat16 value widens exactly.
      for (int64_t i = N * w / workers; i < N * (w + 1) / workers; ++i)
        atomic_add(acc[size_t(idx[size_t(i)])], static_cast<float>(in[i]));
    };
    std::vector<std::thread> pool;
    for (int64_t w = 1; w < workers; ++w) pool.emplace_back(work, w);
    work(0);
    for (auto& t : pool) t.join();
    scalar_t* y = out.data_ptr<scalar_t>();
    // float32 to the dtype is one rounding (RNE); for float32 it is the value itself.
    for (int64_t v = 0; v < size; ++v) y[v] = round_out<scalar_t>(static_cast<double>(acc[size_t(v)].load()));
  });
  return out;
}
