// The timing gate's device peaks (measured once, cached on disk), CPU model and CUDA resource usage.
#include "timing_device.h"

#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <fstream>

#include "gauntlet/build/build_cache.h"

namespace gauntlet::timing_gate {
namespace {

// Device peaks, measured once per device and kept in the build cache directory.
bool load_peaks(const std::string& key, wire::DevicePeaks* p) {
  std::ifstream in(build_internal::default_cache_dir() + "/peaks/" + key + ".json");
  if (!in) return false;
  try {
    nlohmann::json j = nlohmann::json::parse(in);
    p->device = j.at("device");
    p->copy_bytes_per_s = j.at("copy_bytes_per_s");
    p->matmul_flops_f32 = j.at("matmul_flops_f32");
    p->matmul_flops_f16 = j.at("matmul_flops_f16");
    p->matmul_flops_bf16 = j.at("matmul_flops_bf16");
    p->how = j.value("how", "");
    return p->copy_bytes_per_s > 0;
  } catch (...) {
    return false;  // a damaged cache entry is measured again
  }
}

void store_peaks(const std::string& key, const wire::DevicePeaks& p) {
  const std::string dir = build_internal::default_cache_dir() + "/peaks";
  if (!build_internal::make_dirs(dir, nullptr)) return;
  nlohmann::json j = {{"device", p.device}, {"copy_bytes_per_s", p.copy_bytes_per_s},
                      {"matmul_flops_f32", p.matmul_flops_f32}, {"matmul_flops_f16", p.matmul_flops_f16},
                      {"matmul_flops_bf16", p.matmul_flops_bf16}, {"how", p.how}};
  const std::string path = dir + "/" + key + ".json", tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp);
    out << j.dump(2) << "\n";
  }
  std::rename(tmp.c_str(), path.c_str());
}

std::string cache_key(std::string s) {
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

}  // namespace

wire::DevicePeaks device_peaks(WorkerSession& session, bool cuda, const std::string& device_name) {
  wire::DevicePeaks peaks;
  const std::string key = cache_key((cuda ? "cuda-" : "cpu-") + device_name);
  if (!load_peaks(key, &peaks)) {
    std::string pp, why;
    Outcome po = session.exchange(wire::FrameType::Peaks, "", wire::FrameType::PeaksReply, &pp,
                                  WorkerSession::Turn::Whole);  // a measurement of the device alone
    if (po.kind == Outcome::Kind::Ok && wire::decode(pp, &peaks, &why) && peaks.copy_bytes_per_s > 0) {
      if (!cuda) peaks.device = device_name;
      // Measured beside an overrunning child (time-sliced): good enough for this run's roofline
      // remark, never kept as the device's peaks for every later run.
      if (!session.gpu_shared()) store_peaks(key, peaks);
    }
  }
  return peaks;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos)
      return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

double matmul_peak(const wire::DevicePeaks& p, DType d) {
  if (d == DType::Float16) return p.matmul_flops_f16;
  if (d == DType::BFloat16) return p.matmul_flops_bf16;
  return p.matmul_flops_f32;
}

nlohmann::json cubin_resources(const std::string& so_path) {
  std::string tool;
  for (const char* c : {"/usr/local/cuda/bin/cuobjdump", "/usr/bin/cuobjdump"})
    if (access(c, X_OK) == 0) tool = c;
  if (tool.empty()) return {{"note", "cuobjdump not found"}};
  const std::string cmd = tool + " --dump-resource-usage '" + so_path + "' 2>/dev/null";
  std::string text;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, n);
    pclose(p);
  }
  nlohmann::json out = nlohmann::json::array();
  for (const timing::KernelResources& k : timing::parse_resource_usage(text))
    out.push_back({{"function", k.function}, {"registers", k.registers}, {"shared_bytes", k.shared_bytes},
                   {"local_bytes", k.local_bytes}, {"spills", k.local_bytes > 0}});
  return out;
}

}  // namespace gauntlet::timing_gate
