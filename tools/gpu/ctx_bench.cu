// How CUDA context starts scale with concurrency: N fresh processes start CUDA at once (cuInit,
// primary context, a 1 MiB allocation and copy), reporting each one's phases and the wall time.
// It answers whether a GPU's context creations overlap or queue in the driver, which bounds how
// many fresh-context sandboxes per second one GPU can start (docs/gpu.md, throughput).
// `--devices D` first spreads the processes round-robin over D GPUs (issue 21: does context
// creation queue per device or across the host? N processes on two GPUs against N on one).
// Build and run on the GPU host: nvcc -O2 -o ctx_bench tools/gpu/ctx_bench.cu -lcuda && ./ctx_bench 1 4 16
//   ./ctx_bench --devices 2 2 8 16
#include <cuda.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

static double now() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

// One child: its phases in seconds, written to `fd` as three doubles; exit 1 on a CUDA error.
static int child(int go_fd, int out_fd, int device) {
  char c;
  if (read(go_fd, &c, 1) != 1) return 1;
  double t[4];
  t[0] = now();
  CUdevice dev;
  CUcontext ctx;
  CUdeviceptr p;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, device) != CUDA_SUCCESS) return 1;
  t[1] = now();
  if (cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS) return 1;
  t[2] = now();
  std::vector<char> host(1 << 20, 1);
  if (cuMemAlloc(&p, host.size()) != CUDA_SUCCESS || cuMemcpyHtoD(p, host.data(), host.size()) != CUDA_SUCCESS ||
      cuCtxSynchronize() != CUDA_SUCCESS)
    return 1;
  t[3] = now();
  double phases[3] = {t[1] - t[0], t[2] - t[1], t[3] - t[2]};
  return write(out_fd, phases, sizeof phases) == sizeof phases ? 0 : 1;
}

int main(int argc, char** argv) {
  int devices = 1, first = 1;
  if (argc > 2 && std::string(argv[1]) == "--devices") devices = std::max(1, std::atoi(argv[2])), first = 3;
  std::printf("| processes at once | devices | wall s | per process: init median | context median | first copy median | total max |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  for (int a = first; a < argc; ++a) {
    const int n = std::atoi(argv[a]);
    int go[2], out[2];
    if (pipe(go) != 0 || pipe(out) != 0) return 2;
    std::vector<pid_t> kids;
    for (int i = 0; i < n; ++i) {
      pid_t pid = fork();
      if (pid == 0) _exit(child(go[0], out[1], i % devices));
      kids.push_back(pid);
    }
    usleep(200000);  // every child forked and waiting
    const double t0 = now();
    for (int i = 0; i < n; ++i)
      if (write(go[1], "g", 1) != 1) return 2;
    int failed = 0;
    for (pid_t k : kids) {
      int st = 0;
      waitpid(k, &st, 0);
      failed += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    const double wall = now() - t0;
    close(out[1]);
    std::vector<double> ph[3], total;
    double buf[3];
    while (read(out[0], buf, sizeof buf) == sizeof buf) {
      for (int j = 0; j < 3; ++j) ph[j].push_back(buf[j]);
      total.push_back(buf[0] + buf[1] + buf[2]);
    }
    close(out[0]), close(go[0]), close(go[1]);
    auto med = [](std::vector<double> v) {
      if (v.empty()) return 0.0;
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    std::printf("| %d | %d | %.3f | %.3f | %.3f | %.3f | %.3f |%s\n", n, devices, wall, med(ph[0]), med(ph[1]), med(ph[2]),
                total.empty() ? 0.0 : *std::max_element(total.begin(), total.end()),
                failed ? " (some children failed)" : "");
  }
  return 0;
}
