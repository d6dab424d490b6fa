// A few CUDA runtime/driver calls reached through the libraries the kernel already loaded (dlsym),
// so the worker needs no CUDA headers or libraries at build time and the CPU path never touches CUDA.
#pragma once
#include <string>

namespace gauntlet::worker::cuda_rt {

// True once the CUDA runtime (libcudart, loaded by a CUDA kernel or torch_cuda) is found in the
// process and its symbols resolved; the reason otherwise. Cheap after the first call.
bool available(std::string* why = nullptr);

// Every call below returns false (with *error) when the runtime is absent or a CUDA call fails.
// Events live on the legacy default stream (stream 0), which cpp_extension kernels use unless
// they set another current stream.
struct Event {
  void* handle = nullptr;
};
bool event_create(Event* e, std::string* error);
void event_destroy(Event* e);
bool event_record(const Event& e, std::string* error);
// Milliseconds between two recorded events, after waiting for `end`.
bool event_elapsed_ms(const Event& start, const Event& end, float* ms, std::string* error);
// cudaMemsetAsync of `bytes` at device pointer `p` on the legacy default stream (stream 0).
bool memset_async(void* p, int value, size_t bytes, std::string* error);
// Waits for all work on the device, every stream included (a kernel may launch on its own stream).
bool device_synchronize(std::string* error);

// Whether `host_stub` is a registered CUDA kernel of this process's runtime, asked through
// cudaFuncGetAttributes, which loads its module under lazy loading; any other address answers an
// error (CUDA 13 on the H100: 400, "invalid resource handle"), cleared again. False when the
// runtime is absent.
bool load_kernel_function(const void* host_stub);

struct DeviceInfo {
  std::string name;       // e.g. "NVIDIA H200"
  int ordinal = 0;        // index within the child's CUDA_VISIBLE_DEVICES
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
  long long l2_bytes = 0;
  int driver_version = 0;   // e.g. 13000
  int runtime_version = 0;
};
bool device_info(DeviceInfo* info, std::string* error);

}  // namespace gauntlet::worker::cuda_rt
