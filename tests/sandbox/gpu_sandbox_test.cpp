// The GPU side of the sandbox (docs/gpu.md, "Sandbox"): which GPU a child gets
// (CUDA_VISIBLE_DEVICES), /dev/nvidia* covered for CPU children, the parent's resident-memory
// watch, and CUDA failures categorized with the GPU usable by the next child.
// GpuSandboxOnCpu.* run anywhere (the node test fakes /dev/nvidiactl in a private mount namespace
// where the machine has none; root only); GpuSandbox.* need a CUDA device and nvcc and skip
// without them, with the reason (tools/gpu/run-on-h200.sh runs them with GPU_TESTS=1).
#include <ATen/ATen.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "gauntlet/build/builder.h"
#include "gauntlet/sandbox/sandbox.h"

namespace gauntlet {
namespace {

std::string temp_dir(const char* stem) {
  std::string t = std::string("/tmp/") + stem + "-XXXXXX";
  return mkdtemp(t.data()) ? t : "";
}

BuildResult build_source(const std::string& name, const std::string& text, std::vector<std::string> entries,
                         const std::string& device) {
  static const std::string dir = temp_dir("gauntlet-gpu-sandbox-kernels");
  const std::string path = dir + "/" + name;
  std::ofstream(path) << text;
  BuildRequest r;
  r.source_path = path;
  r.entries = std::move(entries);
  r.device = device;
  return build_kernel(r, default_build_config());
}

wire::CaseRequest one_tensor_case(const at::Tensor& t) {
  wire::CaseRequest c;
  c.case_id = 7;
  wire::Arg a;
  a.kind = wire::Arg::Kind::Tensor;
  a.tensor = t;
  c.args.push_back(a);
  return c;
}

// A CPU kernel that reports, as its exception message, what a CPU child sees of the GPU.
const char* kProbeSource = R"CPP(#include <torch/torch.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cstdlib>
#include <string>
#include <sys/sysmacros.h>

static std::string probe(const char* path) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return "absent";
  struct stat st {};
  fstat(fd, &st);
  char buf[64] = {};
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  std::string kind = S_ISCHR(st.st_mode) ? "char " + std::to_string(major(st.st_rdev)) + ":" +
                                               std::to_string(minor(st.st_rdev))
                     : S_ISREG(st.st_mode) ? "file" : "other";
  return kind + " read=" + std::to_string(n) + "[" + std::string(buf, n > 0 ? size_t(n) : 0) + "]";
}

torch::Tensor forward(const torch::Tensor& x) {
  const char* v = std::getenv("CUDA_VISIBLE_DEVICES");
  TORCH_CHECK(false, "CUDA_VISIBLE_DEVICES=", v ? v : "(unset)", "; /dev/nvidiactl: ", probe("/dev/nvidiactl"));
  return x;
}
)CPP";

// Runs the probe kernel in a fresh sandboxed CPU child: "<message> | <sandbox notes>".
std::string run_probe(const std::string& so, SandboxOptions opts) {
  Launcher launcher(opts);
  std::string error;
  auto s = launcher.spawn(&error);
  if (!s) return "spawn failed: " + error;
  Outcome lo = s->load(so, "forward");
  if (lo.kind != Outcome::Kind::Ok) return "load failed: " + lo.message;
  Outcome o = s->call(one_tensor_case(at::ones({4})));
  return o.message + " | " + s->sandbox_notes();
}

TEST(GpuSandboxOnCpu, CudaVisibleDevicesIndexesTheInheritedList) {
  EXPECT_EQ(cuda_visible_devices_for(0, nullptr), "0");
  EXPECT_EQ(cuda_visible_devices_for(3, nullptr), "3");
  EXPECT_EQ(cuda_visible_devices_for(2, ""), "2");
  EXPECT_EQ(cuda_visible_devices_for(0, "4,5,6"), "4");
  EXPECT_EQ(cuda_visible_devices_for(2, "4,5,6"), "6");
  EXPECT_EQ(cuda_visible_devices_for(1, "GPU-8a1c,GPU-77f0"), "GPU-77f0");
  EXPECT_EQ(cuda_visible_devices_for(5, "4,5"), "5");  // past the list: the child finds no such GPU
}

TEST(GpuSandboxOnCpu, ChildGetsCudaVisibleDevicesOfItsGpu) {
  BuildResult b = build_source("probe.cpp", kProbeSource, {"forward"}, "cpu");
  ASSERT_TRUE(b.ok) << b.error;
  for (bool zygote : {true, false}) {
    SandboxOptions o;
    o.gpu_index = 1;
    o.use_zygote = zygote;
    const std::string got = run_probe(b.so_path, o);
    EXPECT_NE(got.find("CUDA_VISIBLE_DEVICES=" + cuda_visible_devices_for(1, std::getenv("CUDA_VISIBLE_DEVICES")) + ";"),
              std::string::npos)
        << got;
  }
}

// The CPU child sees /dev/nvidiactl as /dev/null. Where the machine has no GPU node, a forked
// process with its own mount namespace gets a /dev (a tmpfs with null, zero, random, urandom,
// full and tty bound from the real one) holding a fake regular-file /dev/nvidiactl; its children
// inherit it.
TEST(GpuSandboxOnCpu, CpuChildSeesNvidiaNodesAsDevNull) {
  BuildResult b = build_source("probe.cpp", kProbeSource, {"forward"}, "cpu");
  ASSERT_TRUE(b.ok) << b.error;
  const bool real = access("/dev/nvidiactl", F_OK) == 0;
  if (!real && getuid() != 0) GTEST_SKIP() << "no /dev/nvidiactl, and faking one needs root";
  int pfd[2];
  ASSERT_EQ(pipe(pfd), 0);
  const std::string olddev = temp_dir("gauntlet-olddev");
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(pfd[0]);
    auto leave = [&](const std::string& s) {
      ssize_t ignored = ::write(pfd[1], s.data(), s.size());
      (void)ignored;
      _exit(0);
    };
    if (!real) {
      if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
        leave(std::string("skip: no private mount namespace: ") + strerror(errno));
      if (mount("/dev", olddev.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0 ||
          mount("tmpfs", "/dev", "tmpfs", MS_NOSUID, "mode=0755") != 0)
        leave(std::string("skip: cannot replace /dev: ") + strerror(errno));
      for (const char* n : {"null", "zero", "random", "urandom", "full", "tty"}) {
        const std::string to = std::string("/dev/") + n;
        ::close(::open(to.c_str(), O_CREAT | O_WRONLY, 0666));
        if (mount((olddev + "/" + n).c_str(), to.c_str(), nullptr, MS_BIND, nullptr) != 0)
          leave("skip: cannot bind " + to + ": " + strerror(errno));
      }
      std::ofstream("/dev/nvidiactl") << "fake nvidiactl";
    }
    SandboxOptions o;
    std::string out = run_probe(b.so_path, o);
    o.use_zygote = false;
    out += "\n" + run_probe(b.so_path, o);
    leave(out);
  }
  ::close(pfd[1]);
  std::string got;
  char buf[1024];
  for (ssize_t k; (k = ::read(pfd[0], buf, sizeof buf)) > 0;) got.append(buf, size_t(k));
  ::close(pfd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  rmdir(olddev.c_str());
  if (got.rfind("skip: ", 0) == 0) GTEST_SKIP() << got.substr(6);
  std::stringstream lines(got);
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    ++n;
    // /dev/null is character device 1:3 and reads nothing.
    EXPECT_NE(line.find("/dev/nvidiactl: char 1:3 read=0[]"), std::string::npos) << line;
    EXPECT_NE(line.find("gpu-hidden("), std::string::npos) << line;
  }
  EXPECT_EQ(n, 2) << got;
}

// The parent's resident-memory watch (what bounds a CUDA child's host memory), tried on a CPU
// child: the hostile kernel that hoards memory is killed near the watch's bound, long before its
// 3 GiB RLIMIT_DATA.
TEST(GpuSandboxOnCpu, ResidentMemoryWatchKillsAGrowingChild) {
  BuildRequest r;
  r.source_path = std::string(GAUNTLET_SOURCE_DIR) + "/corpus/hostile/memory_exhaustion.cpp";
  r.entries = {"forward"};
  BuildResult b = build_kernel(r, default_build_config());
  ASSERT_TRUE(b.ok) << b.error;
  SandboxOptions o;
  o.memory_limit_bytes = int64_t(3) << 30;
  o.resident_limit_bytes = int64_t(512) << 20;
  Launcher launcher(o);
  std::string error;
  auto s = launcher.spawn(&error);
  ASSERT_TRUE(s) << error;
  Outcome lo = s->load(b.so_path, "forward");
  ASSERT_EQ(lo.kind, Outcome::Kind::Ok) << lo.message;
  std::printf("resident memory of a loaded CPU child: %lld MiB\n", (long long)(resident_memory_bytes(s->pid()) >> 20));
  const auto t0 = std::chrono::steady_clock::now();
  Outcome out = s->call(one_tensor_case(at::ones({16})));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(out.kind, Outcome::Kind::OutOfMemory) << out.message;
  EXPECT_EQ(out.category, Category::OutOfMemory);
  EXPECT_NE(out.message.find("resident memory reached"), std::string::npos) << out.message;
  EXPECT_NE(out.message.find("over the --memory-limit of 512 MiB"), std::string::npos) << out.message;
  EXPECT_LT(secs, 20.0);
  // The child is gone: a later call is refused without talking to it.
  EXPECT_EQ(s->call(one_tensor_case(at::ones({16}))).kind, Outcome::Kind::HarnessError);
}

TEST(GpuSandboxOnCpu, ResidentMemoryOfThisProcessIsReadable) {
  EXPECT_GT(resident_memory_bytes(getpid()), 0);
  EXPECT_EQ(resident_memory_bytes(-5), -1);
}

// ---- on a CUDA device ------------------------------------------------------------------------

const char* kCudaSource = R"CU(#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cstdint>
#include <memory>
#include <vector>

__global__ void relu_k(const float* x, float* y, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
__global__ void wild_write(float* p) { p[threadIdx.x * 1024 * 1024] = 1.f; }
__global__ void spin(volatile int* flag) { while (*flag == 0) {} }

static torch::Tensor relu(torch::Tensor x, int threads) {
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  int64_t n = xc.numel();
  relu_k<<<(int)((n + 255) / 256), threads, 0, at::cuda::getCurrentCUDAStream()>>>(xc.data_ptr<float>(), y.data_ptr<float>(), n);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}

torch::Tensor forward(torch::Tensor x) { return relu(x, 256); }

// Writes far outside any allocation: "an illegal memory access was encountered" (sticky).
torch::Tensor illegal_address(torch::Tensor x) {
  wild_write<<<1, 32, 0, at::cuda::getCurrentCUDAStream()>>>(reinterpret_cast<float*>(uintptr_t(1) << 40));
  return x.clone();
}

// 4096 threads per block: "invalid configuration argument" at launch (not sticky).
torch::Tensor bad_config(torch::Tensor x) { return relu(x, 4096); }

// 16 TiB on the device: c10's "CUDA out of memory".
torch::Tensor huge_alloc(torch::Tensor x) {
  auto big = torch::empty({int64_t(1) << 42}, x.options());
  return big.sum().reshape({1});
}

// Never terminates: only the parent's wall-clock timeout (SIGKILL to the group) ends it.
torch::Tensor spin_forever(torch::Tensor x) {
  auto flag = torch::zeros({1}, x.options().dtype(torch::kInt));
  spin<<<1, 1, 0, at::cuda::getCurrentCUDAStream()>>>(flag.data_ptr<int>());
  return x.clone();
}

// Hoards host memory (a CUDA child has no RLIMIT_DATA: the parent's resident watch must stop it).
torch::Tensor host_hog(torch::Tensor x) {
  std::vector<std::unique_ptr<char[]>> hoard;
  const size_t block = size_t(64) << 20;
  for (;;) {
    std::unique_ptr<char[]> b(new char[block]);
    for (size_t off = 0; off < block; off += 4096) b[off] = char(off | 1);
    hoard.push_back(std::move(b));
  }
  return x;
}
)CU";

std::string why_no_cuda() {
  if (access("/dev/nvidiactl", F_OK) != 0) return "no CUDA device (/dev/nvidiactl absent)";
  if (system("command -v nvcc >/dev/null 2>&1") != 0 && access("/usr/local/cuda/bin/nvcc", X_OK) != 0)
    return "nvcc not found";
  return "";
}

class GpuSandbox : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!why_no_cuda().empty()) return;
    build_ = new BuildResult(build_source("gpu_sandbox.cu", kCudaSource,
                                          {"forward", "illegal_address", "bad_config", "huge_alloc", "spin_forever", "host_hog"},
                                          "cuda"));
  }
  void SetUp() override {
    const std::string why = why_no_cuda();
    if (!why.empty()) GTEST_SKIP() << why;
    ASSERT_TRUE(build_ && build_->ok) << (build_ ? build_->error + "\n" + build_->log_head : "no build");
  }
  static std::unique_ptr<WorkerSession> open(Launcher& l, const std::string& entry) {
    std::string error;
    auto s = l.spawn(&error);
    EXPECT_TRUE(s) << error;
    if (!s) return nullptr;
    wire::LoadRequest req;
    req.so_path = build_->so_path;
    req.entry = entry;
    req.device = "cuda";
    Outcome o = s->load(req);
    EXPECT_EQ(o.kind, Outcome::Kind::Ok) << o.message;
    return o.kind == Outcome::Kind::Ok ? std::move(s) : nullptr;
  }
  // relu on a fresh child: the GPU works for the next kernel.
  static void expect_relu_works(Launcher& l) {
    auto s = open(l, "forward");
    ASSERT_TRUE(s);
    at::Tensor x = at::randn({1000});
    Outcome o = s->call(one_tensor_case(x));
    ASSERT_EQ(o.kind, Outcome::Kind::Ok) << o.message;
    EXPECT_TRUE(at::equal(o.reply.calls.at(0).outputs.at(0), at::relu(x)));
  }
  static BuildResult* build_;
};
BuildResult* GpuSandbox::build_ = nullptr;

TEST_F(GpuSandbox, CudaChildReportsItsGpuAndSeesOnlyTheChosenOne) {
  Launcher l{SandboxOptions{}};
  auto s = open(l, "forward");
  ASSERT_TRUE(s);
  std::printf("device info: %s\nnotes: %s\nresident memory of a loaded CUDA child: %lld MiB\n", s->device_info().c_str(),
              s->sandbox_notes().c_str(), (long long)(resident_memory_bytes(s->pid()) >> 20));
  auto j = nlohmann::json::parse(s->device_info(), nullptr, false);
  ASSERT_TRUE(j.is_object()) << s->device_info();
  EXPECT_TRUE(j.contains("name")) << j.dump();
  EXPECT_TRUE(j.contains("compute_capability")) << j.dump();
  EXPECT_TRUE(j.contains("memory_bytes")) << j.dump();
  EXPECT_EQ(j.value("cuda_visible_devices", "?"), cuda_visible_devices_for(0, std::getenv("CUDA_VISIBLE_DEVICES")));
  EXPECT_EQ(j.value("index", -1), 0);
  EXPECT_EQ(s->sandbox_notes().find("gpu-hidden"), std::string::npos) << "a CUDA child keeps its GPU nodes";
  EXPECT_EQ(l.device_info(), s->device_info());
  Outcome o = s->call(one_tensor_case(at::randn({64})));
  EXPECT_EQ(o.kind, Outcome::Kind::Ok) << o.message;
  std::printf("resident memory after a case: %lld MiB\n", (long long)(resident_memory_bytes(s->pid()) >> 20));
}

TEST_F(GpuSandbox, IllegalAddressIsACrashAndTheNextChildUsesTheGpu) {
  Launcher l{SandboxOptions{}};
  auto s = open(l, "illegal_address");
  ASSERT_TRUE(s);
  Outcome o = s->call(one_tensor_case(at::randn({64})));
  EXPECT_EQ(o.kind, Outcome::Kind::Died) << o.message;
  EXPECT_EQ(o.category, Category::Crash) << o.message;
  EXPECT_NE(o.message.find("illegal memory access"), std::string::npos) << o.message;
  EXPECT_NE(o.message.find("sticky"), std::string::npos) << o.message;
  EXPECT_EQ(s->call(one_tensor_case(at::randn({64}))).kind, Outcome::Kind::HarnessError) << "the child is not reused";
  expect_relu_works(l);
}

TEST_F(GpuSandbox, InvalidLaunchConfigurationIsARuntimeErrorAndTheChildGoesOn) {
  Launcher l{SandboxOptions{}};
  auto s = open(l, "bad_config");
  ASSERT_TRUE(s);
  Outcome o = s->call(one_tensor_case(at::randn({64})));
  EXPECT_EQ(o.kind, Outcome::Kind::KernelError) << o.message;
  EXPECT_EQ(o.category, Category::RuntimeError) << o.message;
  // CUDA 12 says "invalid configuration argument"; CUDA 13 on the H200 said "invalid argument".
  EXPECT_TRUE(o.message.find("invalid configuration argument") != std::string::npos ||
              o.message.find("invalid argument") != std::string::npos)
      << o.message;
  o = s->call(one_tensor_case(at::randn({64})));  // the same child still answers
  EXPECT_EQ(o.category, Category::RuntimeError) << o.message;
  expect_relu_works(l);
}

TEST_F(GpuSandbox, DeviceOutOfMemoryIsOutOfMemory) {
  Launcher l{SandboxOptions{}};
  auto s = open(l, "huge_alloc");
  ASSERT_TRUE(s);
  Outcome o = s->call(one_tensor_case(at::randn({64})));
  EXPECT_EQ(o.kind, Outcome::Kind::OutOfMemory) << o.message;
  EXPECT_EQ(o.category, Category::OutOfMemory) << o.message;
  expect_relu_works(l);
}

TEST_F(GpuSandbox, KernelThatNeverEndsTimesOutAndTheGpuIsFreed) {
  SandboxOptions opts;
  opts.timeout_seconds = 8;
  Launcher l(opts);
  auto s = open(l, "spin_forever");
  ASSERT_TRUE(s);
  const auto t0 = std::chrono::steady_clock::now();
  Outcome o = s->call(one_tensor_case(at::randn({64})));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("spinning kernel: %s after %.1f s\n", o.message.c_str(), secs);
  EXPECT_EQ(o.kind, Outcome::Kind::TimedOut) << o.message;
  EXPECT_EQ(o.category, Category::Timeout);
  EXPECT_LT(secs, 30.0) << "SIGKILL to the group must end a child stuck in a CUDA synchronize";
  Launcher fresh{SandboxOptions{}};
  expect_relu_works(fresh);
}

TEST_F(GpuSandbox, HostMemoryOfACudaChildIsBoundedByTheResidentWatch) {
  SandboxOptions opts;
  opts.memory_limit_bytes = int64_t(3) << 30;
  Launcher l(opts);
  auto s = open(l, "host_hog");
  ASSERT_TRUE(s);
  Outcome o = s->call(one_tensor_case(at::randn({64})));
  EXPECT_EQ(o.kind, Outcome::Kind::OutOfMemory) << o.message;
  EXPECT_NE(o.message.find("resident memory reached"), std::string::npos) << o.message;
  expect_relu_works(l);
}

}  // namespace
}  // namespace gauntlet
