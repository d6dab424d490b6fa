// device=cuda: the GPU as the worker child sees it, for the report's environment (docs/gpu.md).
// Queried through the CUDA driver API, looked up with dlsym in the libcuda.so.1 that LibTorch's
// CUDA runtime has loaded: no CUDA headers or link dependency are needed, and it compiles
// against any LibTorch. Only the child calls it; the parent never initializes CUDA.
#include <dlfcn.h>
#include <stdlib.h>

#include <cctype>

#include <c10/core/impl/VirtualGuardImpl.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "device_poison.h"
#include "worker.h"

namespace gauntlet::worker {
namespace {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if ((unsigned char)c < 32 || (unsigned char)c > 126) out += '?';
    else out += c;
  }
  return out + "\"";
}

// "580.159.04" from /proc/driver/nvidia/version ("NVRM version: NVIDIA UNIX ... Kernel Module  580.159.04  ...").
std::string kernel_driver_version() {
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  if (!std::getline(in, line)) return "";
  const size_t at = line.find("Module");
  if (at == std::string::npos) return "";
  size_t i = at;
  while (i < line.size()) {
    while (i < line.size() && !isdigit((unsigned char)line[i])) ++i;
    size_t j = i;
    while (j < line.size() && (isdigit((unsigned char)line[j]) || line[j] == '.')) ++j;
    std::string tok = line.substr(i, j - i);
    if (tok.find('.') != std::string::npos) return tok;
    i = j;
  }
  return "";
}

}  // namespace

std::string describe_cuda_device() {
  std::string out = "{";
  auto field = [&](const std::string& k, const std::string& json_value) {
    out += (out.size() > 1 ? "," : "") + json_string(k) + ":" + json_value;
  };
  const char* visible = getenv("CUDA_VISIBLE_DEVICES");
  field("cuda_visible_devices", json_string(visible ? visible : ""));
  int index = 0;
  try {
    // LibTorch's current CUDA device (initializes the CUDA runtime in this child, which the first
    // case would do anyway).
    c10::impl::VirtualGuardImpl guard(c10::DeviceType::CUDA);
    index = guard.getDevice().index();
  } catch (const std::exception& e) {
    field("error", json_string((std::string("no CUDA device: ") + e.what()).substr(0, 300)));
    return out + "}";
  }
  field("index", std::to_string(index));
  field("poison_method", json_string(cuda_poison_method()));  // device_poison.h
  using CUresult = int;
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!cuda) cuda = dlopen("libcuda.so.1", RTLD_NOW);
  if (!cuda) return out + "}";
  auto sym = [&](const char* name) { return dlsym(cuda, name); };
  auto cuInit = reinterpret_cast<CUresult (*)(unsigned)>(sym("cuInit"));
  auto cuDriverGetVersion = reinterpret_cast<CUresult (*)(int*)>(sym("cuDriverGetVersion"));
  auto cuDeviceGet = reinterpret_cast<CUresult (*)(int*, int)>(sym("cuDeviceGet"));
  auto cuDeviceGetName = reinterpret_cast<CUresult (*)(char*, int, int)>(sym("cuDeviceGetName"));
  auto cuDeviceGetAttribute = reinterpret_cast<CUresult (*)(int*, int, int)>(sym("cuDeviceGetAttribute"));
  auto cuDeviceTotalMem = reinterpret_cast<CUresult (*)(size_t*, int)>(sym("cuDeviceTotalMem_v2"));
  auto cuDeviceGetPCIBusId = reinterpret_cast<CUresult (*)(char*, int, int)>(sym("cuDeviceGetPCIBusId"));
  int dev = 0;
  if (!cuInit || !cuDeviceGet || cuInit(0) != 0 || cuDeviceGet(&dev, index) != 0) return out + "}";
  char name[256] = {};
  if (cuDeviceGetName && cuDeviceGetName(name, sizeof name - 1, dev) == 0) field("name", json_string(name));
  int major = -1, minor = -1, sms = -1;
  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75, _MINOR = 76, MULTIPROCESSOR_COUNT = 16.
  if (cuDeviceGetAttribute && cuDeviceGetAttribute(&major, 75, dev) == 0 && cuDeviceGetAttribute(&minor, 76, dev) == 0)
    field("compute_capability", json_string(std::to_string(major) + "." + std::to_string(minor)));
  if (cuDeviceGetAttribute && cuDeviceGetAttribute(&sms, 16, dev) == 0) field("multiprocessors", std::to_string(sms));
  size_t total = 0;
  if (cuDeviceTotalMem && cuDeviceTotalMem(&total, dev) == 0) field("memory_bytes", std::to_string(total));
  char bus[64] = {};
  if (cuDeviceGetPCIBusId && cuDeviceGetPCIBusId(bus, sizeof bus - 1, dev) == 0) field("pci_bus_id", json_string(bus));
  int v = 0;
  if (cuDriverGetVersion && cuDriverGetVersion(&v) == 0)
    field("cuda_driver_api", json_string(std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10)));
  const std::string kd = kernel_driver_version();
  if (!kd.empty()) field("driver", json_string(kd));
  return out + "}";
}

}  // namespace gauntlet::worker
