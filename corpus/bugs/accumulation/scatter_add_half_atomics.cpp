// PLANTED BUG (accumulation): a float16 scatter_add with float16 atomics. The kernel takes float16
// x (its manifest declares float16 only) and adds every term straight into its float16 output
// bucket with a compare-and-swap on the 16 bits (a GPU kernel's atomicAdd on __half into the
// output: no float32 scratch, no second pass), so each addition rounds to float16's 11
// significant bits. A handful of terms per bucket (a KernelBench-style check: uniform indices over
// 64 buckets, values in [0, 1)) stays far inside allclose's 1e-2 and near the float16 rounding of
// the result; a hot bucket of many terms (zipf or all-equal indices) drifts by many float16 ulps
// of its partial sums, beyond the float32-accumulator bound the schema declares, and an integer
// sum past 2048 stalls, which the accumulation gate's exact, once-rounded sum shows. The threads
// and their arrival order are the control's.
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

#include <c10/util/Half.h>

namespace {

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

// atomicAdd on a __half, as CUDA's: read the 16 bits, add in float, round to float16, swap.
inline void atomic_add_half(std::atomic<uint16_t>& bucket, float term) {
  uint16_t seen = bucket.load(std::memory_order_relaxed);
  for (;;) {
    const c10::Half sum(static_cast<float>(c10::Half(seen, c10::Half::from_bits())) + term);
    if (bucket.compare_exchange_weak(seen, sum.x, std::memory_order_relaxed)) return;
  }
}

constexpr int64_t kWorkers = 4;
constexpr int64_t kThreadedFrom = 32;

}  // namespace

torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& index, int64_t size) {
  check_float_cpu(x);
  TORCH_CHECK(x.scalar_type() == at::kHalf, "scatter_add: this kernel takes float16 x");
  TORCH_CHECK(x.dim() == 1, "scatter_add: x must be 1-D [N]");
  TORCH_CHECK(size >= 0, "scatter_add: size must not be negative");
  const int64_t N = x.size(0);
  const std::vector<int64_t> idx = checked_index(index, N, size);
  const torch::Tensor xc = x.contiguous();
  torch::Tensor out = torch::empty({size}, xc.options());
  if (size == 0) return out;
  static std::atomic<int64_t> calls{0};
  const int64_t call = calls.fetch_add(1);
  std::vector<std::atomic<uint16_t>> acc(static_cast<size_t>(size));
  for (auto& a : acc) a.store(c10::Half(0.0f).x);
  {
    const at::Half* in = xc.data_ptr<at::Half>();
    const int64_t workers = N >= kThreadedFrom ? kWorkers : 1;
    auto work = [&](int64_t w) {
      if (workers > 1) std::this_thread::sleep_for(std::chrono::microseconds(((w + call) % workers) * 100));
      for (int64_t i = N * w / workers; i < N * (w + 1) / workers; ++i)
        atomic_add_half(acc[size_t(idx[size_t(i)])], static_cast<float>(in[i]));
    };
    std::vector<std::thread> pool;
    for (int64_t w = 1; w < workers; ++w) pool.emplace_back(work, w);
    work(0);
    for (auto& t : pool) t.join();
    at::Half* y = out.data_ptr<at::Half>();
    for (int64_t v = 0; v < size; ++v) y[v] = c10::Half(acc[size_t(v)].load(), c10::Half::from_bits());
  }
  return out;
}
