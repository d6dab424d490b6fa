// Benchmark: float64 oracle calls at a problem's own size, side by side, with and without run_oracle's turns.
//
// An audit runs many gates at once, each computing its float64 oracle on the CPU while the kernel
// runs. At KernelBench's sizes (1_Square_matrix_multiplication_: a, b [2048, 2048]) each call is
// seconds of every core. This measures, in one run on one machine:
//   floor  one matmul oracle call alone (ATen's full thread team), the best a call can do;
//   turns  K calls at once through run_oracle (heavy calls take turns, oracle.h);
//   free   K calls at once of the same float64 work without turns (what run_oracle did before).
// and prints each as the ratio of its wall time to K x floor (1.0: the CPU did K calls at the
// floor's rate). Then, with B busy processes spinning beside it (what an audit's module builds do
// to the CPU), the same K calls with each thread count T given (permits: cores / T).
// Usage: gauntlet_oracle_bench [N=2048] [K=8] [B=0] [T...]
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "gauntlet/oracle/oracle.h"

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

template <typename Fn>
double side_by_side(int k, Fn fn) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int i = 0; i < k; ++i) threads.emplace_back(fn);
  for (std::thread& t : threads) t.join();
  return seconds_since(t0);
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : 2048;
  const int k = argc > 2 ? std::atoi(argv[2]) : 8;
  if (n <= 0 || k <= 0) {
    std::fprintf(stderr, "usage: %s [N>0] [K>0]\n", argv[0]);
    return 2;
  }
  at::manual_seed(1);
  const std::vector<at::Tensor> inputs = {at::randn({n, n}), at::randn({n, n})};
  const double flops = 2.0 * 2.0 * double(n) * n * n;  // the result and its |a|@|b| scale
  auto through_oracle = [&] {
    const gauntlet::OracleResult r = gauntlet::run_oracle("matmul", inputs, {});
    if (!r.error.empty()) std::fprintf(stderr, "oracle failed: %s\n", r.error.c_str());
  };
  auto without_turns = [&] {
    const at::Tensor a = inputs[0].to(at::kDouble), b = inputs[1].to(at::kDouble);
    (void)at::mm(a, b).sum().item<double>();
    (void)at::mm(a.abs(), b.abs()).sum().item<double>();
  };
  through_oracle();  // warm: ATen's thread pool, the first allocation
  double floor = 1e30;
  for (int i = 0; i < 2; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    through_oracle();
    floor = std::min(floor, seconds_since(t0));
  }
  const double turns = side_by_side(k, through_oracle);
  const double free = side_by_side(k, without_turns);
  std::printf("# oracle concurrency: matmul [%lld, %lld] float64 (result and scale), %d at once, %d ATen threads, %u cores\n",
              (long long)n, (long long)n, k, at::get_num_threads(), std::thread::hardware_concurrency());
  std::printf("| run | wall s | GFLOP/s | wall / (K x floor) |\n|---|---|---|---|\n");
  std::printf("| floor (one call alone) | %.2f | %.1f | - |\n", floor, flops / floor / 1e9);
  std::printf("| %d at once, turns (run_oracle) | %.2f | %.1f | %.2f |\n", k, turns, k * flops / turns / 1e9, turns / (k * floor));
  std::printf("| %d at once, no turns | %.2f | %.1f | %.2f |\n", k, free, k * flops / free / 1e9, free / (k * floor));
  const int busy = argc > 3 ? std::atoi(argv[3]) : 0;
  std::vector<int> team_sizes;
  for (int i = 4; i < argc; ++i) team_sizes.push_back(std::max(1, std::atoi(argv[i])));
  if (team_sizes.empty()) return 0;
  std::vector<pid_t> burners;
  for (int i = 0; i < busy; ++i) {
    const pid_t pid = fork();
    if (pid == 0) {
      volatile unsigned long x = 0;
      for (;;) x = x + 1;
    }
    if (pid > 0) burners.push_back(pid);
  }
  std::printf("\n# the same %d calls with %d busy processes beside them, by threads per call\n", k, busy);
  std::printf("| threads per call | permits | wall s | GFLOP/s | wall / (K x floor) |\n|---|---|---|---|---|\n");
  for (int t : team_sizes) {
    gauntlet::set_heavy_oracle_threads(t);
    const double wall = side_by_side(k, through_oracle);
    std::printf("| %d | %d | %.2f | %.1f | %.2f |\n", t, gauntlet::heavy_oracle_permits(), wall, k * flops / wall / 1e9,
                wall / (k * floor));
    std::fflush(stdout);
  }
  gauntlet::set_heavy_oracle_threads(16);
  const double free_busy = side_by_side(k, without_turns);
  std::printf("| no turns (ATen's default) | - | %.2f | %.1f | %.2f |\n", free_busy, k * flops / free_busy / 1e9,
              free_busy / (k * floor));
  for (pid_t pid : burners) kill(pid, SIGKILL);
  for (pid_t pid : burners) waitpid(pid, nullptr, 0);
  return 0;
}
