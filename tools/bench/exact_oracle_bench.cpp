// Benchmark: the accumulation gate's exact matmul oracle at a problem's own size, filtered against superaccumulating all.
//
// The accumulation gate judges matmul, bmm and linear_relu against the exact sum rounded once. At
// KernelBench's sizes (a, b [2048, 2048]) summing all M*N*K products in cpp_int takes minutes a
// case; the filtered path (oracle_exact_gemm.cpp) runs two float64 GEMMs and superaccumulates only
// the elements near a rounding boundary. This measures, in one run on one machine, per plan and
// output dtype at N x N x N:
//   fp64      run_oracle("matmul"): the float64 oracle every other gate uses (the baseline);
//   filtered  run_exact_oracle, and the share of elements it superaccumulated;
//   all       superaccumulating every element, timed at n x n x n and scaled by (N/n)^3 (its cost
//             is one cpp_int product-add per term).
// Ratios: filtered / fp64 (1.0: exactness costs nothing over the fp64 oracle), all / filtered.
// Usage: gauntlet_exact_bench [N=1024] [n=128]
#include <ATen/ATen.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "gauntlet/oracle/oracle.h"
#include "gauntlet/oracle/superacc.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The gate's plans, as data: `a` carries the pattern along K, `b` is near one (integers: small).
std::pair<at::Tensor, at::Tensor> operands(const std::string& plan, int64_t n, at::ScalarType st) {
  at::manual_seed(1);
  auto in_dtype = [&](const at::Tensor& t) { return t.to(st).to(at::kFloat); };
  if (plan == "integer-exact")
    return {at::randint(-7, 17, {n, n}).to(at::kFloat), at::randint(0, 4, {n, n}).to(at::kFloat)};
  const at::Tensor near_one = in_dtype(1 + at::rand({n, n}));
  if (plan == "cancellation") {
    // First half of each row x in [1,2), second half -x mirrored plus a few ulps.
    at::Tensor a = in_dtype(1 + at::rand({n, n}));
    const int64_t h = n / 2;
    a.slice(1, n - h, n).copy_(in_dtype(-a.slice(1, 0, h).flip(1) + at::randn({n, h}) * 1e-3));
    return {a, near_one};
  }
  return {in_dtype(at::randn({n, n})), in_dtype(at::randn({n, n}))};
}

struct Timed {
  double seconds = 0;
  gauntlet::ExactOracleStats stats;
};

Timed exact(const at::Tensor& a, const at::Tensor& b, gauntlet::DType out, gauntlet::ExactPath path) {
  Timed t;
  bool supported = false;
  const auto t0 = Clock::now();
  gauntlet::OracleResult r = gauntlet::run_exact_oracle("matmul", {a, b}, {}, out, &supported, path, &t.stats);
  t.seconds = seconds_since(t0);
  if (!r.ok()) {
    std::fprintf(stderr, "exact oracle failed: %s\n", r.error.c_str());
    std::exit(1);
  }
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t N = argc > 1 ? std::atoll(argv[1]) : 1024;
  const int64_t n = argc > 2 ? std::atoll(argv[2]) : 128;
  std::printf("exact matmul oracle, %lld^3 (all: timed at %lld^3, scaled by %.0fx); ATen threads per heavy call %d\n",
              (long long)N, (long long)n, double(N) * N * N / (double(n) * n * n), gauntlet::heavy_oracle_threads());
  std::printf("%-14s %-9s %9s %10s %12s %12s %14s %13s\n", "plan", "dtype", "fp64 s", "filtered s", "superacc'd",
              "all s (est)", "filtered/fp64", "all/filtered");
  const std::pair<at::ScalarType, gauntlet::DType> kinds[] = {{at::kFloat, gauntlet::DType::Float32},
                                                              {at::kHalf, gauntlet::DType::Float16}};
  for (const char* plan : {"random", "cancellation", "integer-exact"}) {
    for (const auto& [st, dt] : kinds) {
      auto [a, b] = operands(plan, N, st);
      const auto t0 = Clock::now();
      gauntlet::OracleResult fp64 = gauntlet::run_oracle("matmul", {a, b}, {});
      const double fp64_s = seconds_since(t0);
      if (!fp64.ok()) {
        std::fprintf(stderr, "fp64 oracle failed: %s\n", fp64.error.c_str());
        return 1;
      }
      const Timed filtered = exact(a, b, dt, gauntlet::ExactPath::Filtered);
      auto [sa, sb] = operands(plan, n, st);
      const Timed all = exact(sa, sb, dt, gauntlet::ExactPath::SuperaccumulateAll);
      const double all_est = all.seconds * double(N) * N * N / (double(n) * n * n);
      const double share = double(filtered.stats.superaccumulated) / double(std::max<int64_t>(filtered.stats.outputs, 1));
      std::printf("%-14s %-9s %9.2f %10.2f %11.4f%% %12.1f %14.2f %13.0f\n", plan, gauntlet::dtype_name(dt), fp64_s,
                  filtered.seconds, 100 * share, all_est, filtered.seconds / fp64_s, all_est / filtered.seconds);
      std::fflush(stdout);
    }
  }
  return 0;
}
