// Private to the oracle files: input/attribute checking helpers shared by the op families.
#pragma once
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "gauntlet/oracle/oracle.h"
#include "gauntlet/oracle/superacc.h"
#include "gauntlet/common/types.h"

namespace gauntlet::oracle_impl {

using Inputs = std::vector<at::Tensor>;
using OracleFn = OracleResult (*)(const Inputs&, const AttrMap&);

// Thrown for inputs the oracle refuses; run_oracle turns it into OracleResult::error.
struct OracleFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};
[[noreturn]] void fail(const std::string& why);

std::string shape_str(const at::Tensor& t);
void expect_count(const Inputs& in, size_t n);
// Casts happen here, before any ATen arithmetic: LibTorch 1.13 computes bf16 matmul in bf16.
at::Tensor value_input(const Inputs& in, size_t i, const char* name);  // -> CPU float64, contiguous
at::Tensor index_input(const Inputs& in, size_t i, const char* name);  // -> CPU int64, contiguous
void expect_rank(const at::Tensor& t, const char* name, int64_t rank);
void expect_min_rank(const at::Tensor& t, const char* name, int64_t rank);

int64_t attr_int(const AttrMap& attrs, const char* name);
double attr_double(const AttrMap& attrs, const char* name);
bool attr_bool(const AttrMap& attrs, const char* name);

// PyTorch's dim wrapping: a 0-d tensor accepts dim 0 or -1 as if it were 1-d.
int64_t wrap_dim(int64_t dim, int64_t rank);

OracleResult make_result(const at::Tensor& out, const at::Tensor& scale = at::Tensor());

// Shared numerics (oracle_reductions.cpp); x has rank >= 1 and a non-empty `dim`.
at::Tensor amax_nan(const at::Tensor& x, int64_t dim, bool keepdim);
at::Tensor logsumexp_nan(const at::Tensor& x, int64_t dim, bool keepdim);
at::Tensor softmax_nan(const at::Tensor& x, int64_t dim);

// Op entry points, one per oracle id.
OracleResult relu(const Inputs&, const AttrMap&);
OracleResult gelu(const Inputs&, const AttrMap&);
OracleResult sigmoid(const Inputs&, const AttrMap&);
OracleResult add(const Inputs&, const AttrMap&);
OracleResult clamp(const Inputs&, const AttrMap&);

OracleResult sum(const Inputs&, const AttrMap&);
OracleResult mean(const Inputs&, const AttrMap&);
OracleResult amax(const Inputs&, const AttrMap&);
OracleResult logsumexp(const Inputs&, const AttrMap&);
OracleResult softmax(const Inputs&, const AttrMap&);
OracleResult log_softmax(const Inputs&, const AttrMap&);
OracleResult cumsum(const Inputs&, const AttrMap&);

OracleResult layer_norm(const Inputs&, const AttrMap&);
OracleResult rms_norm(const Inputs&, const AttrMap&);
OracleResult matmul(const Inputs&, const AttrMap&);
OracleResult linear_relu(const Inputs&, const AttrMap&);
OracleResult bmm(const Inputs&, const AttrMap&);
OracleResult conv2d(const Inputs&, const AttrMap&);
OracleResult sdpa(const Inputs&, const AttrMap&);
OracleResult embedding(const Inputs&, const AttrMap&);
OracleResult cross_entropy(const Inputs&, const AttrMap&);

// The database-style ops (oracle_database.cpp; no schema uses them yet, issue 20).
OracleResult filter(const Inputs&, const AttrMap&);
OracleResult sort(const Inputs&, const AttrMap&);
OracleResult unique(const Inputs&, const AttrMap&);
OracleResult topk(const Inputs&, const AttrMap&);
OracleResult segment_sum(const Inputs&, const AttrMap&);
OracleResult group_by_sum(const Inputs&, const AttrMap&);
OracleResult scatter_add(const Inputs&, const AttrMap&);
OracleResult hash_join(const Inputs&, const AttrMap&);
// Quantized ops (oracle_quantized.cpp).
OracleResult quantize_per_tensor(const Inputs&, const AttrMap&);
OracleResult dequantize(const Inputs&, const AttrMap&);
OracleResult int8_matmul(const Inputs&, const AttrMap&);
OracleResult fp8_matmul(const Inputs&, const AttrMap&);

// y[b,i,j] = sum_k a[b,i,k] * w(b,k,j) (+ bias[j]), each element exact and rounded once to `out`
// (relu'd after, where asked); a [B,M,K], w [B,K,N] (w_kn) or [B,N,K], all float64 contiguous.
// `scale` gets |a|@|w| (+ |bias|), as the fp64 oracle's (oracle_exact_gemm.cpp).
at::Tensor exact_gemm(const at::Tensor& a, const at::Tensor& w, const at::Tensor& bias, bool w_kn, bool relu,
                      DType out, ExactPath path, ExactOracleStats* stats, at::Tensor* scale);

// As many heavy calls at once as their thread teams fit in the machine's cores: eight teams of two
// on the H200's host (16 cores), two of one on a 2-core machine whose ATen runs one thread a call.
class HeavyOracleTurn {
 public:
  HeavyOracleTurn() {
    std::unique_lock<std::mutex> lock(mu());
    cv().wait(lock, [] { return running() < permits(); });
    ++running();
    peak() = std::max(peak(), running());
    const int t = threads();
    lock.unlock();
    // The calling thread's team (OpenMP's thread count is per calling thread), put back after:
    // the thread's later light calls keep the team they had.
    previous_threads_ = at::get_num_threads();
    if (previous_threads_ != t) at::set_num_threads(t);
  }
  ~HeavyOracleTurn() {
    if (at::get_num_threads() != previous_threads_) at::set_num_threads(previous_threads_);
    {
      std::lock_guard<std::mutex> lock(mu());
      --running();
    }
    cv().notify_one();
  }
  HeavyOracleTurn(const HeavyOracleTurn&) = delete;
  HeavyOracleTurn& operator=(const HeavyOracleTurn&) = delete;

  static int peak_seen() {
    std::lock_guard<std::mutex> lock(mu());
    return peak();
  }
  static int permits() { return std::max(1, cores() / threads()); }
  static int cores() { return std::max(1, int(std::thread::hardware_concurrency())); }
  // GAUNTLET_ORACLE_CALL_THREADS, else teams of two (one where ATen runs one thread). Measured on
  // the H200's 16 cores with 16 busy processes beside (an audit's module builds), 8 calls of a
  // 2048^3 matmul oracle: 16 threads a call 28 GFLOP/s, 8: 20, 4: 20, 2 (8 at once): 343; in an
  // audit of the leaderboard, 8 s a case with 16 or 4 threads, 0.4-0.7 s with 2 (docs/gpu.md).
  // A large team waits at every barrier for its slowest thread, which a busy CPU deschedules.
  static int& threads() {
    static int t = [] {
      const char* env = std::getenv("GAUNTLET_ORACLE_CALL_THREADS");
      const int n = env ? std::atoi(env) : 0;
      return n > 0 ? n : std::min(2, std::max(1, at::get_num_threads()));
    }();
    return t;
  }
  static void set_threads(int n) {
    std::lock_guard<std::mutex> lock(mu());
    threads() = std::max(1, n);
  }

 private:
  int previous_threads_ = 1;
  static std::mutex& mu() { static std::mutex m; return m; }
  static std::condition_variable& cv() { static std::condition_variable c; return c; }
  static int& running() { static int n = 0; return n; }
  static int& peak() { static int n = 0; return n; }
};

}  // namespace gauntlet::oracle_impl
