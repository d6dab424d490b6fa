// Benchmark: sandbox overhead per gate process (spawn to verdict, trivial kernel) and build-cache hits.
// Zygote-forked children are measured against fork+exec children in the same run (the baseline).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "gauntlet/build/builder.h"
#include "gauntlet/cases/case.h"
#include "gauntlet/sandbox/sandbox.h"

using namespace gauntlet;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

struct Stats {
  double median, p10, p90;
};
Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v[size_t(q * double(v.size() - 1))]; };
  return {at(0.5), at(0.1), at(0.9)};
}

// One gate process's life: spawn, load the kernel, one case, verdict-ready reply, exit.
// Phase times of the last gate process: spawn, load, call, finish (ms).
double g_phase[4];

double one_gate_process(Launcher& launcher, const std::string& so, const wire::CaseRequest& req) {
  const auto t0 = Clock::now();
  std::string error;
  auto s = launcher.spawn(&error);
  g_phase[0] = ms_since(t0);
  if (!s) {
    std::fprintf(stderr, "spawn failed: %s\n", error.c_str());
    std::exit(2);
  }
  Outcome load = s->load(so, "forward");
  g_phase[1] = ms_since(t0);
  Outcome call = s->call(req);
  g_phase[2] = ms_since(t0);
  if (load.kind != Outcome::Kind::Ok || call.kind != Outcome::Kind::Ok) {
    std::fprintf(stderr, "worker failed: %s %s\n", load.message.c_str(), call.message.c_str());
    std::exit(2);
  }
  s->finish();
  return ms_since(t0);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string source = argc > 1 ? argv[1] : std::string(GAUNTLET_SOURCE_DIR) + "/corpus/controls/relu.cpp";
  const int iterations = argc > 2 ? std::atoi(argv[2]) : 60;
  BuildRequest br;
  br.source_path = source;
  br.entries = {"forward"};
  BuildResult b = build_kernel(br, default_build_config());
  if (!b.ok) {
    std::fprintf(stderr, "build failed: %s\n", b.error.c_str());
    return 2;
  }
  std::vector<double> hits;
  for (int i = 0; i < 50; ++i) {
    const auto t0 = Clock::now();
    BuildResult again = build_kernel(br, default_build_config());
    hits.push_back(ms_since(t0));
    if (!again.cache_hit) return (std::fprintf(stderr, "expected a cache hit\n"), 2);
  }
  TensorRecipe r;
  r.name = "x";
  r.shape = {16};
  r.seed = 1;
  wire::CaseRequest req;
  wire::Arg a;
  a.tensor = materialize(r);
  req.args = {a};

  SandboxOptions zyg;
  SandboxOptions exe;
  exe.use_zygote = false;
  SandboxOptions bare;
  bare.namespaces = false;
  Launcher zl(zyg), el(exe), bl(bare);
  std::string note;
  const auto z0 = Clock::now();
  one_gate_process(zl, b.so_path, req);  // starts the zygote
  const double zygote_start = ms_since(z0);
  for (int i = 0; i < 3; ++i) one_gate_process(el, b.so_path, req);
  one_gate_process(bl, b.so_path, req);
  std::vector<double> z, e, nb, phases[4];
  for (int i = 0; i < iterations; ++i) {
    z.push_back(one_gate_process(zl, b.so_path, req));
    for (int p = 0; p < 3; ++p) phases[p].push_back(g_phase[p] - (p ? g_phase[p - 1] : 0));
    phases[3].push_back(z.back() - g_phase[2]);
    nb.push_back(one_gate_process(bl, b.so_path, req));
    if (i % 3 == 0) e.push_back(one_gate_process(el, b.so_path, req));  // interleaved baseline
  }
  Stats sz = stats(z), se = stats(e), sh = stats(hits), sb = stats(nb);
  std::printf("sandbox benchmark: kernel %s\n", source.c_str());
  std::printf("isolation: %s\n", zl.isolation_note().c_str());
  std::printf("  %-38s %9s %9s %9s %5s\n", "measure", "median", "p10", "p90", "n");
  std::printf("  %-38s %7.2fms %7.2fms %7.2fms %5zu\n", "gate process via zygote (spawn..verdict)", sz.median, sz.p10, sz.p90, z.size());
  std::printf("  %-38s %7.2fms %7.2fms %7.2fms %5zu\n", "gate process via fork+exec (baseline)", se.median, se.p10, se.p90, e.size());
  std::printf("  %-38s %7.2fms %7.2fms %7.2fms %5zu\n", "zygote, no namespaces (cost of ns)", sb.median, sb.p10, sb.p90, nb.size());
  std::printf("  %-38s %7.2fms\n", "zygote start (once per run)", zygote_start);
  std::printf("  %-38s %7.3fms %7.3fms %7.3fms %5zu\n", "build-cache hit", sh.median, sh.p10, sh.p90, hits.size());
  const char* names[4] = {"  spawn (fork, namespaces)", "  load (sandbox setup, dlopen)", "  one case", "  finish (exit, reap)"};
  for (int p = 0; p < 4; ++p) {
    Stats sp = stats(phases[p]);
    std::printf("  %-38s %7.2fms %7.2fms %7.2fms %5zu\n", names[p], sp.median, sp.p10, sp.p90, phases[p].size());
  }
  std::printf("  fork+exec / zygote ratio: %.1fx\n", se.median / sz.median);
  return 0;
}
