// CUDA runtime calls through dlsym on the already loaded libcudart/libcuda (see cuda_rt.h).
#include "cuda_rt.h"

#include <dlfcn.h>
#include <link.h>

#include <cstring>
#include <mutex>

namespace gauntlet::worker::cuda_rt {
namespace {

// Attribute numbers of cudaDeviceAttr (stable across CUDA releases).
constexpr int kAttrMultiProcessorCount = 16;
constexpr int kAttrComputeCapabilityMajor = 75;
constexpr int kAttrComputeCapabilityMinor = 76;
constexpr int kAttrL2CacheSize = 89;

struct Api {
  bool ok = false;
  std::string why;
  int (*event_create)(void**) = nullptr;
  int (*event_destroy)(void*) = nullptr;
  int (*event_record)(void*, void*) = nullptr;
  int (*event_synchronize)(void*) = nullptr;
  int (*event_elapsed)(float*, void*, void*) = nullptr;
  int (*device_synchronize)() = nullptr;
  int (*memset_async)(void*, int, size_t, void*) = nullptr;
  int (*get_device)(int*) = nullptr;
  int (*device_attribute)(int*, int, int) = nullptr;
  int (*driver_version)(int*) = nullptr;
  int (*runtime_version)(int*) = nullptr;
  const char* (*error_string)(int) = nullptr;
  int (*func_get_attributes)(void*, const void*) = nullptr;  // optional (kernel_preload.h)
  int (*get_last_error)() = nullptr;
  // Driver API, for the device name (the runtime's properties struct changes layout between releases).
  int (*cu_device_get)(int*, int) = nullptr;
  int (*cu_device_get_name)(char*, int, int) = nullptr;
};

// The path of the first loaded object whose file name starts with `prefix`.
std::string loaded_library(const char* prefix) {
  struct Search {
    const char* prefix;
    std::string found;
  } s{prefix, ""};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* s = static_cast<Search*>(data);
        if (!info->dlpi_name || !*info->dlpi_name) return 0;
        const char* base = std::strrchr(info->dlpi_name, '/');
        base = base ? base + 1 : info->dlpi_name;
        if (std::strncmp(base, s->prefix, std::strlen(s->prefix)) == 0) {
          s->found = info->dlpi_name;
          return 1;
        }
        return 0;
      },
      &s);
  return s.found;
}

template <typename F>
bool bind(void* lib, const char* name, F* fn, std::string* why) {
  *fn = reinterpret_cast<F>(dlsym(lib, name));
  if (!*fn) *why = std::string("symbol ") + name + " not found";
  return *fn != nullptr;
}

Api load() {
  Api a;
  const std::string rt = loaded_library("libcudart.so");
  if (rt.empty()) return (a.why = "the CUDA runtime (libcudart) is not loaded in this process", a);
  void* lib = dlopen(rt.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (!lib) return (a.why = "cannot reopen " + rt, a);
  bool ok = bind(lib, "cudaEventCreate", &a.event_create, &a.why) &&
            bind(lib, "cudaEventDestroy", &a.event_destroy, &a.why) &&
            bind(lib, "cudaEventRecord", &a.event_record, &a.why) &&
            bind(lib, "cudaEventSynchronize", &a.event_synchronize, &a.why) &&
            bind(lib, "cudaEventElapsedTime", &a.event_elapsed, &a.why) &&
            bind(lib, "cudaDeviceSynchronize", &a.device_synchronize, &a.why) &&
            bind(lib, "cudaMemsetAsync", &a.memset_async, &a.why) &&
            bind(lib, "cudaGetDevice", &a.get_device, &a.why) &&
            bind(lib, "cudaDeviceGetAttribute", &a.device_attribute, &a.why) &&
            bind(lib, "cudaDriverGetVersion", &a.driver_version, &a.why) &&
            bind(lib, "cudaRuntimeGetVersion", &a.runtime_version, &a.why) &&
            bind(lib, "cudaGetErrorString", &a.error_string, &a.why);
  if (!ok) return a;
  std::string optional;
  if (!bind(lib, "cudaFuncGetAttributes", &a.func_get_attributes, &optional) ||
      !bind(lib, "cudaGetLastError", &a.get_last_error, &optional))
    a.func_get_attributes = nullptr;
  // libcuda is loaded by the runtime once it initialized; the name is optional.
  const std::string drv = loaded_library("libcuda.so");
  if (void* dlib = drv.empty() ? nullptr : dlopen(drv.c_str(), RTLD_NOW | RTLD_NOLOAD)) {
    std::string ignored;
    if (!bind(dlib, "cuDeviceGet", &a.cu_device_get, &ignored) ||
        !bind(dlib, "cuDeviceGetName", &a.cu_device_get_name, &ignored))
      a.cu_device_get = nullptr;
  }
  a.ok = true;
  return a;
}

Api& api() {
  static std::mutex mu;
  static Api a;
  static bool loaded = false;
  std::lock_guard<std::mutex> lock(mu);
  // Retried until found: the runtime is loaded with the kernel, possibly after the first ask.
  if (!loaded || !a.ok) {
    a = load();
    loaded = true;
  }
  return a;
}

bool check(int rc, const char* what, std::string* error) {
  if (rc == 0) return true;
  if (error) *error = std::string(what) + ": " + api().error_string(rc) + " (CUDA error " + std::to_string(rc) + ")";
  return false;
}

bool ready(std::string* error) {
  if (api().ok) return true;
  if (error) *error = api().why;
  return false;
}

}  // namespace

bool available(std::string* why) { return ready(why); }

bool event_create(Event* e, std::string* error) {
  return ready(error) && check(api().event_create(&e->handle), "cudaEventCreate", error);
}

void event_destroy(Event* e) {
  if (e->handle && api().ok) api().event_destroy(e->handle);
  e->handle = nullptr;
}

bool event_record(const Event& e, std::string* error) {
  return ready(error) && check(api().event_record(e.handle, nullptr), "cudaEventRecord", error);
}

bool event_elapsed_ms(const Event& start, const Event& end, float* ms, std::string* error) {
  return ready(error) && check(api().event_synchronize(end.handle), "cudaEventSynchronize", error) &&
         check(api().event_elapsed(ms, start.handle, end.handle), "cudaEventElapsedTime", error);
}

bool device_synchronize(std::string* error) {
  return ready(error) && check(api().device_synchronize(), "cudaDeviceSynchronize", error);
}

bool memset_async(void* p, int value, size_t bytes, std::string* error) {
  return ready(error) && check(api().memset_async(p, value, bytes, nullptr), "cudaMemsetAsync", error);
}

bool load_kernel_function(const void* host_stub) {
  if (!ready(nullptr) || !api().func_get_attributes) return false;
  // cudaFuncAttributes has grown between releases; this is larger than any of them.
  alignas(16) unsigned char attributes[4096];
  if (api().func_get_attributes(attributes, host_stub) == 0) return true;
  api().get_last_error();  // not a sticky error; cleared so no later call sees it
  return false;
}

bool device_info(DeviceInfo* info, std::string* error) {
  if (!ready(error)) return false;
  Api& a = api();
  int dev = 0, l2 = 0;
  if (!check(a.get_device(&dev), "cudaGetDevice", error)) return false;
  info->ordinal = dev;
  if (!check(a.device_attribute(&info->sm_count, kAttrMultiProcessorCount, dev), "cudaDeviceGetAttribute", error) ||
      !check(a.device_attribute(&info->cc_major, kAttrComputeCapabilityMajor, dev), "cudaDeviceGetAttribute", error) ||
      !check(a.device_attribute(&info->cc_minor, kAttrComputeCapabilityMinor, dev), "cudaDeviceGetAttribute", error) ||
      !check(a.device_attribute(&l2, kAttrL2CacheSize, dev), "cudaDeviceGetAttribute", error) ||
      !check(a.driver_version(&info->driver_version), "cudaDriverGetVersion", error) ||
      !check(a.runtime_version(&info->runtime_version), "cudaRuntimeGetVersion", error))
    return false;
  info->l2_bytes = l2;
  info->name = "CUDA device " + std::to_string(dev);
  if (a.cu_device_get && a.cu_device_get_name) {
    int cu_dev = 0;
    char name[256] = {0};
    if (a.cu_device_get(&cu_dev, dev) == 0 && a.cu_device_get_name(name, sizeof name - 1, cu_dev) == 0) info->name = name;
  }
  return true;
}

}  // namespace gauntlet::worker::cuda_rt
