// Kernel builder: light/full preludes, Python-free cpp_extension sources, the entry table, the cache.
#include "gauntlet/build/builder.h"

#include <ATen/ATen.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../test_files.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gauntlet/kernel_abi.h"

namespace gauntlet {
namespace {

std::string make_temp_dir(const char* stem) {
  std::string tmpl = std::string("/tmp/") + stem + "-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) return "";
  return buf.data();
}

// One cache per test run: $GAUNTLET_CACHE (ctest shares one across its test processes, so the
// precompiled preludes are built once), else a temporary directory for this process.
class BuilderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const char* env = std::getenv("GAUNTLET_CACHE");
    own_cache_ = !(env && *env);
    cache_dir_ = own_cache_ ? make_temp_dir("gauntlet-builder-cache") : env;
    kernel_dir_ = make_temp_dir("gauntlet-builder-kernels");
    // Unique per process, for tests that must see a real (uncached) build.
    nonce_ = std::to_string(getpid()) + "-" +
             std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  }

  static void TearDownTestSuite() {
    gauntlet::testing::remove_tree(kernel_dir_);
    if (own_cache_) gauntlet::testing::remove_tree(cache_dir_);  // precompiled preludes are ~1 GB
  }

  static std::string write_kernel(const std::string& name, const std::string& text) {
    std::string path = kernel_dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  static BuildConfig config() {
    BuildConfig c = default_build_config();
    c.cache_dir = cache_dir_;
    return c;
  }

  static BuildResult build(const std::string& path, std::vector<std::string> entries = {"forward"},
                           const BuildConfig& cfg = config()) {
    BuildRequest r;
    r.source_path = path;
    r.entries = std::move(entries);
    return build_kernel(r, cfg);
  }

  // dlopens the built kernel and returns its entry `name` (nullptr when absent).
  static const KernelEntry* entry(const BuildResult& b, const std::string& name) {
    void* h = dlopen(b.so_path.c_str(), RTLD_NOW | RTLD_LOCAL);
    EXPECT_NE(h, nullptr) << dlerror();
    if (!h) return nullptr;
    auto fn = reinterpret_cast<GauntletEntriesFn>(dlsym(h, GAUNTLET_ENTRIES_SYMBOL));
    EXPECT_NE(fn, nullptr) << "no " << GAUNTLET_ENTRIES_SYMBOL;
    if (!fn) return nullptr;
    for (const KernelEntry* e = fn(); e->name; ++e) {
      if (name == e->name) return e;
    }
    return nullptr;
  }

  static KernelArg tensor_arg(const at::Tensor& t) {
    KernelArg a;
    a.kind = KernelArg::Kind::Tensor;
    a.tensor = t;
    return a;
  }

  static std::string relu_source() {
    return "#include <torch/torch.h>\n"
           "torch::Tensor forward(const torch::Tensor& x) { return torch::relu(x); }\n"
           "torch::Tensor scaled(torch::Tensor x, int64_t k, double s, bool neg) {\n"
           "  auto y = x * static_cast<double>(k) * s;\n"
           "  return neg ? -y : y;\n"
           "}\n";
  }

  static bool own_cache_;
  static std::string cache_dir_;
  static std::string kernel_dir_;
  static std::string nonce_;
};
bool BuilderTest::own_cache_ = false;
std::string BuilderTest::cache_dir_;
std::string BuilderTest::kernel_dir_;
std::string BuilderTest::nonce_;

TEST_F(BuilderTest, ReluBuildsWithLightPreludeAndRunsThroughTheTable) {
  std::string path = write_kernel("relu.cpp", relu_source());
  BuildResult b = build(path, {"forward", "scaled"});
  ASSERT_TRUE(b.ok) << b.error << "\n" << b.log_head;
  EXPECT_EQ(b.prelude, "light");
  EXPECT_EQ(b.source_hash.size(), 64u);
  EXPECT_EQ(b.cache_key.size(), 64u);
  EXPECT_EQ(b.so_path, cache_dir_ + "/" + b.cache_key + ".so");
  struct stat st;
  EXPECT_EQ(stat((cache_dir_ + "/" + b.cache_key + ".json").c_str(), &st), 0);

  const KernelEntry* fwd = entry(b, "forward");
  ASSERT_NE(fwd, nullptr);
  EXPECT_STREQ(fwd->signature, "T->T");
  std::vector<KernelArg> args = {tensor_arg(at::tensor({-1.0f, 0.0f, 2.5f}))};
  std::vector<at::Tensor> out;
  std::string error;
  ASSERT_EQ(fwd->invoke(&args, &out, &error), kCallOk) << error;
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(at::equal(out[0], at::tensor({0.0f, 0.0f, 2.5f})));

  const KernelEntry* sc = entry(b, "scaled");
  ASSERT_NE(sc, nullptr);
  EXPECT_STREQ(sc->signature, "T,i64,f64,b->T");
  KernelArg k, s, neg;
  k.kind = KernelArg::Kind::Int;
  k.i = 3;
  s.kind = KernelArg::Kind::Double;
  s.d = 0.5;
  neg.kind = KernelArg::Kind::Bool;
  neg.b = true;
  args = {tensor_arg(at::tensor({1.0f, -2.0f})), k, s, neg};
  ASSERT_EQ(sc->invoke(&args, &out, &error), kCallOk) << error;
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(at::equal(out[0], at::tensor({-1.5f, 3.0f})));
}

TEST_F(BuilderTest, WrongArgumentsGiveBadArguments) {
  BuildResult b = build(write_kernel("relu.cpp", relu_source()), {"forward", "scaled"});
  ASSERT_TRUE(b.ok) << b.error;
  const KernelEntry* fwd = entry(b, "forward");
  ASSERT_NE(fwd, nullptr);
  std::vector<KernelArg> args = {tensor_arg(at::ones({2})), tensor_arg(at::ones({2}))};
  std::vector<at::Tensor> out;
  std::string error;
  EXPECT_EQ(fwd->invoke(&args, &out, &error), kCallBadArguments);
  EXPECT_NE(error.find("(T)"), std::string::npos) << error;
  EXPECT_NE(error.find("(T,T)"), std::string::npos) << error;
  EXPECT_TRUE(out.empty());

  // Right count, wrong kind: a Double where the entry takes an int64_t.
  const KernelEntry* sc = entry(b, "scaled");
  ASSERT_NE(sc, nullptr);
  KernelArg d, b2;
  d.kind = KernelArg::Kind::Double;
  b2.kind = KernelArg::Kind::Bool;
  args = {tensor_arg(at::ones({2})), d, d, b2};
  EXPECT_EQ(sc->invoke(&args, &out, &error), kCallBadArguments);
  EXPECT_NE(error.find("(T,i64,f64,b)"), std::string::npos) << error;
  EXPECT_NE(error.find("(T,f64,f64,b)"), std::string::npos) << error;
}

TEST_F(BuilderTest, CppExtensionSourceWithPybindModuleBuildsWithoutPython) {
  std::string path = write_kernel("ext.cpp", R"(#include <torch/extension.h>
#include <pybind11/pybind11.h>
#include <vector>
namespace py = pybind11;

torch::Tensor forward(torch::Tensor x, double alpha) {
  TORCH_CHECK(x.is_contiguous(), "x must be contiguous");
  return x * alpha + 1;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "scaled plus one";
  m.def("forward", &forward, "x * alpha + 1", py::arg("x"), py::arg("alpha") = 1.0);
  m.def("forward_noguard", &forward, py::call_guard<py::gil_scoped_release>());
}
)");
  BuildResult b = build(path);
  ASSERT_TRUE(b.ok) << b.error << "\n" << b.log_head;
  EXPECT_EQ(b.prelude, "light");
  const KernelEntry* fwd = entry(b, "forward");
  ASSERT_NE(fwd, nullptr);
  EXPECT_STREQ(fwd->signature, "T,f64->T");
  KernelArg alpha;
  alpha.kind = KernelArg::Kind::Double;
  alpha.d = 2.0;
  std::vector<KernelArg> args = {tensor_arg(at::tensor({1.0, 2.0})), alpha};
  std::vector<at::Tensor> out;
  std::string error;
  ASSERT_EQ(fwd->invoke(&args, &out, &error), kCallOk) << error;
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(at::equal(out[0], at::tensor({3.0, 5.0})));
}

TEST_F(BuilderTest, KernelNeedingTheFullTorchHeaderBuildsWithTheFullPrelude) {
  std::string path = write_kernel("full.cpp", R"(#include <torch/torch.h>
namespace F = torch::nn::functional;
torch::Tensor forward(const torch::Tensor& x) {
  torch::NoGradGuard no_grad;
  return F::relu(x, F::ReLUFuncOptions().inplace(false));
}
)");
  BuildResult b = build(path);
  ASSERT_TRUE(b.ok) << b.error << "\n" << b.log_head;
  EXPECT_EQ(b.prelude, "full");
  const KernelEntry* fwd = entry(b, "forward");
  ASSERT_NE(fwd, nullptr);
  std::vector<KernelArg> args = {tensor_arg(at::tensor({-3.0f, 4.0f}))};
  std::vector<at::Tensor> out;
  std::string error;
  ASSERT_EQ(fwd->invoke(&args, &out, &error), kCallOk) << error;
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(at::equal(out[0], at::tensor({0.0f, 4.0f})));
}

TEST_F(BuilderTest, TupleResultGivesTwoOutputs) {
  std::string path = write_kernel("tuple.cpp", R"(#include <torch/torch.h>
#include <tuple>
std::tuple<torch::Tensor, torch::Tensor> forward(const torch::Tensor& x, int64_t dim) {
  return std::make_tuple(x.amax(dim), x.sum(dim));
}
std::vector<torch::Tensor> pieces(const torch::Tensor& x) { return x.chunk(3); }
)");
  BuildResult b = build(path, {"forward", "pieces"});
  ASSERT_TRUE(b.ok) << b.error << "\n" << b.log_head;
  const KernelEntry* fwd = entry(b, "forward");
  ASSERT_NE(fwd, nullptr);
  EXPECT_STREQ(fwd->signature, "T,i64->T*");
  KernelArg dim;
  dim.kind = KernelArg::Kind::Int;
  dim.i = 1;
  std::vector<KernelArg> args = {tensor_arg(at::arange(6, at::kFloat).reshape({2, 3})), dim};
  std::vector<at::Tensor> out;
  std::string error;
  ASSERT_EQ(fwd->invoke(&args, &out, &error), kCallOk) << error;
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(at::equal(out[0], at::tensor({2.0f, 5.0f})));
  EXPECT_TRUE(at::equal(out[1], at::tensor({3.0f, 12.0f})));

  const KernelEntry* pieces = entry(b, "pieces");
  ASSERT_NE(pieces, nullptr);
  EXPECT_STREQ(pieces->signature, "T->T*");
  args = {tensor_arg(at::arange(6))};
  ASSERT_EQ(pieces->invoke(&args, &out, &error), kCallOk) << error;
  EXPECT_EQ(out.size(), 3u);
}

TEST_F(BuilderTest, TorchCheckFailureGivesExceptionWithItsMessage) {
  std::string path = write_kernel("check.cpp", R"(#include <torch/torch.h>
torch::Tensor forward(const torch::Tensor& x) {
  TORCH_CHECK(x.dim() == 2, "expected a 2-d input, got ", x.dim(), " dims");
  return x.t().contiguous();
}
torch::Tensor oom(const torch::Tensor& x) { throw std::bad_alloc(); }
)");
  BuildResult b = build(path, {"forward", "oom"});
  ASSERT_TRUE(b.ok) << b.error << "\n" << b.log_head;
  const KernelEntry* fwd = entry(b, "forward");
  ASSERT_NE(fwd, nullptr);
  std::vector<KernelArg> args = {tensor_arg(at::ones({3}))};
  std::vector<at::Tensor> out;
  std::string error;
  EXPECT_EQ(fwd->invoke(&args, &out, &error), kCallException);
  EXPECT_EQ(error, "expected a 2-d input, got 1 dims");
  EXPECT_EQ(error.find('\n'), std::string::npos);

  const KernelEntry* oom = entry(b, "oom");
  ASSERT_NE(oom, nullptr);
  EXPECT_EQ(oom->invoke(&args, &out, &error), kCallOutOfMemory);
  EXPECT_NE(error.find("out of memory"), std::string::npos) << error;
}

TEST_F(BuilderTest, SyntaxErrorIsABuildErrorWithTheCompilerLine) {
  std::string path = write_kernel("syntax.cpp",
                                  "#include <torch/torch.h>\n"
                                  "torch::Tensor forward(const torch::Tensor& x) {\n"
                                  "  return x +\n"
                                  "}\n");
  BuildResult b = build(path);
  EXPECT_FALSE(b.ok);
  EXPECT_EQ(b.error.rfind("compile error: ", 0), 0u) << b.error;
  EXPECT_NE(b.error.find("syntax.cpp:"), std::string::npos) << b.error;
  EXPECT_NE(b.error.find("error:"), std::string::npos) << b.error;
  EXPECT_EQ(b.error.find('\n'), std::string::npos);
  EXPECT_NE(b.log_head.find("syntax.cpp:"), std::string::npos) << b.log_head;
  EXPECT_EQ(b.prelude, "light");  // a syntax error is not retried with the full prelude
  EXPECT_TRUE(b.so_path.empty());
}

TEST_F(BuilderTest, MissingEntryIsABuildError) {
  BuildResult b = build(write_kernel("relu.cpp", relu_source()), {"no_such_entry"});
  EXPECT_FALSE(b.ok);
  EXPECT_NE(b.error.find("no_such_entry"), std::string::npos) << b.error;
  EXPECT_EQ(b.prelude, "light");
}

TEST_F(BuilderTest, MissingSourceIsAOneLineError) {
  std::string path = kernel_dir_ + "/does_not_exist.cpp";
  BuildResult b = build(path);
  EXPECT_FALSE(b.ok);
  EXPECT_EQ(b.error, "cannot read kernel source " + path + ": No such file or directory");
}

TEST_F(BuilderTest, MissingCompilerIsAOneLineError) {
  BuildConfig cfg = config();
  cfg.cxx = "/nonexistent/bin/g++";
  BuildResult b = build(write_kernel("relu.cpp", relu_source()), {"forward"}, cfg);
  EXPECT_FALSE(b.ok);
  EXPECT_EQ(b.error.rfind("compiler not found: /nonexistent/bin/g++", 0), 0u) << b.error;
}

TEST_F(BuilderTest, CompilerRunningPastTheTimeoutIsKilled) {
  std::string pidfile = kernel_dir_ + "/slow.pid";
  std::string script = write_kernel("slow-cxx.sh", "#!/bin/sh\nsleep 60 &\necho $! > " + pidfile + "\nwait\n");
  chmod(script.c_str(), 0755);
  BuildConfig cfg = config();
  cfg.cxx = script;
  cfg.timeout_seconds = 1;
  auto t0 = std::chrono::steady_clock::now();
  BuildResult b = build(write_kernel("relu.cpp", relu_source()), {"forward"}, cfg);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_FALSE(b.ok);
  EXPECT_EQ(b.error.rfind("compile timeout: ", 0), 0u) << b.error;
  EXPECT_LT(secs, 10.0);
  // The compiler's whole process group is gone (the backgrounded sleep too).
  std::ifstream pf(pidfile);
  pid_t grandchild = 0;
  pf >> grandchild;
  ASSERT_GT(grandchild, 0);
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    std::ifstream stat_file("/proc/" + std::to_string(grandchild) + "/stat");
    std::string pid_s, comm, state;
    gone = !(stat_file >> pid_s >> comm >> state) || state == "Z";
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(gone);
}

// A hit runs no compiler: both builds go through a compiler wrapper that counts its runs, and
// the second adds none (a count, not a wall-clock bound, which a loaded CI machine would break).
TEST_F(BuilderTest, SecondBuildIsACacheHitThatRunsNoCompiler) {
  std::string path = write_kernel("hit.cpp", "// " + nonce_ + "\n" + relu_source());
  const std::string runs = path + ".compiler-runs";
  std::string wrapper = write_kernel("counting-cxx-" + nonce_ + ".sh",
                                     "#!/bin/sh\necho run >> " + runs + "\nexec g++ \"$@\"\n");
  chmod(wrapper.c_str(), 0755);
  BuildConfig counted = config();
  counted.cxx = wrapper;
  auto count_runs = [&] {
    std::ifstream in(runs);
    int n = 0;
    for (std::string line; std::getline(in, line);) ++n;
    return n;
  };
  BuildResult first = build(path, {"forward"}, counted);
  ASSERT_TRUE(first.ok) << first.error;
  EXPECT_FALSE(first.cache_hit);
  const int compiled = count_runs();
  EXPECT_GE(compiled, 1);
  BuildResult second = build(path, {"forward"}, counted);
  ASSERT_TRUE(second.ok) << second.error;
  EXPECT_TRUE(second.cache_hit);
  EXPECT_EQ(count_runs(), compiled) << "a cache hit ran the compiler";
  EXPECT_EQ(second.so_path, first.so_path);
  EXPECT_EQ(second.cache_key, first.cache_key);
  EXPECT_EQ(second.prelude, first.prelude);
  std::printf("cold light build %.2f s, cache hit %.2f ms\n", first.seconds, second.seconds * 1e3);
}

TEST_F(BuilderTest, ConcurrentBuildsOfOneKernelAgree) {
  std::string path = write_kernel("concurrent.cpp", "// concurrent " + nonce_ + "\n" + relu_source());
  BuildResult a, b;
  std::thread t1([&] { a = build(path); });
  std::thread t2([&] { b = build(path); });
  t1.join();
  t2.join();
  ASSERT_TRUE(a.ok) << a.error;
  ASSERT_TRUE(b.ok) << b.error;
  EXPECT_EQ(a.so_path, b.so_path);
  EXPECT_TRUE(a.cache_hit || b.cache_hit);  // the second waited for the first, then hit
  EXPECT_NE(entry(a, "forward"), nullptr);
}

TEST_F(BuilderTest, KeyDependsOnSourceBytesAndEntries) {
  std::string p1 = write_kernel("key1.cpp", relu_source());
  std::string p2 = write_kernel("key2.cpp", relu_source() + "// one more comment\n");
  BuildResult b1 = build(p1), b2 = build(p2), b1again = build(p1);
  ASSERT_TRUE(b1.ok && b2.ok) << b1.error << b2.error;
  EXPECT_NE(b1.cache_key, b2.cache_key);
  EXPECT_NE(b1.source_hash, b2.source_hash);
  EXPECT_EQ(b1.cache_key, b1again.cache_key);
  EXPECT_EQ(b1.source_hash, sha256_hex(relu_source()));
  EXPECT_EQ(sha256_file_hex(p1), b1.source_hash);
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  // The same file with more entries is another shared object.
  BuildResult both = build(p1, {"forward", "scaled"});
  ASSERT_TRUE(both.ok) << both.error;
  EXPECT_NE(both.cache_key, b1.cache_key);
}

TEST_F(BuilderTest, LocalHeaderBytesAreInTheKey) {
  std::string header = write_kernel("helper_" + nonce_ + ".h", "inline double factor() { return 2.0; }\n");
  std::string path = write_kernel("uses_helper.cpp", "#include <torch/torch.h>\n#include \"helper_" + nonce_ +
                                                         ".h\"\n"
                                                         "torch::Tensor forward(const torch::Tensor& x) "
                                                         "{ return x * factor(); }\n");
  BuildResult b1 = build(path);
  ASSERT_TRUE(b1.ok) << b1.error << "\n" << b1.log_head;
  write_kernel("helper_" + nonce_ + ".h", "inline double factor() { return 3.0; }\n");
  BuildResult b2 = build(path);
  ASSERT_TRUE(b2.ok) << b2.error;
  EXPECT_NE(b1.cache_key, b2.cache_key);
  EXPECT_FALSE(b2.cache_hit);
}

// Needs nvcc and a CUDA LibTorch (libtorch_cuda) with a GPU: run where they exist.
//
// The build runs here; everything that touches CUDA (loading libtorch_cuda, the device check, the
// kernel run) runs in a forked child that leaves with _exit. Run in this process, CUDA's
// teardown at exit killed the whole test binary with SIGSEGV after the last test had passed (seen
// twice on the H200, docs/gpu.md): static destructors of the dlopen'ed kernel, libtorch_cuda and
// the CUDA runtime ran in an order that crashed. _exit skips them, and the test process itself
// never initializes CUDA (like gauntlet's parent).
TEST_F(BuilderTest, CudaExtensionSourceBuildsWithNvccAndRuns) {
  BuildConfig cfg = config();
  std::string nvcc = cfg.nvcc;
  if (system(("command -v " + nvcc + " >/dev/null 2>&1").c_str()) != 0) {
    GTEST_SKIP() << "nvcc (" << nvcc << ") is not on PATH";
  }
  if (access("/dev/nvidiactl", F_OK) != 0) GTEST_SKIP() << "no CUDA device (/dev/nvidiactl absent)";
  std::string path = write_kernel("relu_cuda.cu", R"CU(#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void relu_kernel(const float* x, float* y, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}

torch::Tensor forward(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "float32 CUDA input expected");
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  int64_t n = xc.numel();
  int threads = 256;
  int blocks = (int)((n + threads - 1) / threads);
  if (n > 0) {
    relu_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), n);
  }
  return y;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "relu (CUDA)"); }
)CU");
  BuildRequest r;
  r.source_path = path;
  r.entries = {"forward"};
  r.device = "cuda";
  BuildResult b = build_kernel(r, cfg);
  ASSERT_TRUE(b.ok) << b.error << "\n" << b.log_head;
  std::printf("cold nvcc build %.2f s (prelude %s)\n", b.seconds, b.prelude.c_str());
  int pipe_fd[2];
  ASSERT_EQ(pipe(pipe_fd), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Child: no gtest assertions here (they would not reach the parent); the verdict goes back
    // as "ok", "skip: why" or "fail: why" through the pipe.
    ::close(pipe_fd[0]);
    auto leave = [&](const std::string& verdict) {
      ssize_t ignored = ::write(pipe_fd[1], verdict.data(), verdict.size());
      (void)ignored;
      _exit(0);  // never exit(): see above
    };
    if (!dlopen("libtorch_cuda.so", RTLD_NOW | RTLD_GLOBAL))
      leave("skip: this LibTorch has no CUDA (libtorch_cuda.so not loadable)");
    if (!at::hasCUDA()) leave("skip: no CUDA device");
    void* h = dlopen(b.so_path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) leave(std::string("fail: dlopen: ") + dlerror());
    auto fn = reinterpret_cast<GauntletEntriesFn>(dlsym(h, GAUNTLET_ENTRIES_SYMBOL));
    const KernelEntry* fwd = nullptr;
    for (const KernelEntry* e = fn ? fn() : nullptr; e && e->name; ++e)
      if (std::string(e->name) == "forward") fwd = e;
    if (!fwd) leave("fail: no forward entry");
    at::Tensor x = at::randn({1000}).to(at::kCUDA);
    std::vector<KernelArg> args = {tensor_arg(x)};
    std::vector<at::Tensor> out;
    std::string error;
    if (fwd->invoke(&args, &out, &error) != kCallOk) leave("fail: invoke: " + error);
    if (out.size() != 1u) leave("fail: " + std::to_string(out.size()) + " outputs");
    if (!at::equal(out[0].cpu(), at::relu(x).cpu())) leave("fail: the output is not relu(x)");
    args = {tensor_arg(at::ones({3}))};
    if (fwd->invoke(&args, &out, &error) != kCallException) leave("fail: a CPU input was not refused");
    if (error != "float32 CUDA input expected") leave("fail: refusal message: " + error);
    leave("ok");
  }
  ::close(pipe_fd[1]);
  std::string verdict;
  char buf[512];
  for (ssize_t n; (n = ::read(pipe_fd[0], buf, sizeof buf)) > 0;) verdict.append(buf, size_t(n));
  ::close(pipe_fd[0]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "the CUDA child died (wait status " << status << "); it said: " << verdict;
  if (verdict.rfind("skip: ", 0) == 0) GTEST_SKIP() << verdict.substr(6);
  EXPECT_EQ(verdict, "ok");
}

}  // namespace
}  // namespace gauntlet
