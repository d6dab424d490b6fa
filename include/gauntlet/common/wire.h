// Wire format between the parent and the sandboxed worker: checked frames over pipes, tensors as raw bytes.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gauntlet/common/aten_dtypes.h"
#include "gauntlet/common/types.h"

namespace gauntlet::wire {

// Frame: magic, type, payload length, payload, checksum of the payload. A child that writes
// garbage onto its reply channel fails the magic or checksum test: a protocol violation.
constexpr uint32_t kMagic = 0x31544E47;  // "GNT1"
// A sanity bound on one frame, both ends (python/gauntlet_worker/wire.py MAX_FRAME): a KernelBench
// level-2 reference's float64 and float32 outputs together reach 10 GiB; --memory-limit is the real bound.
constexpr uint64_t kMaxFrameBytes = uint64_t(64) << 30;

enum class FrameType : uint32_t {
  Load = 1,        // parent -> worker: LoadRequest
  LoadReply = 2,   // worker -> parent: LoadReply
  Case = 3,        // parent -> worker: CaseRequest
  CaseReply = 4,   // worker -> parent: CaseReply
  Violation = 5,   // worker -> parent: the seccomp filter trapped a forbidden system call
  Bye = 6,         // parent -> worker: exit cleanly
  Signal = 7,      // worker -> parent: a fatal signal it sent itself (pid-namespace init cannot die of it)
  Time = 8,        // parent -> worker: TimeRequest (timing gate, include/gauntlet/common/timing.h)
  TimeReply = 9,   // worker -> parent: TimeReply
  Peaks = 10,      // parent -> worker: measure the device's peaks (empty payload)
  PeaksReply = 11, // worker -> parent: DevicePeaks
  // A case's GPU turn (CaseRequest::turn_handshake): the worker asks once it has decoded the case,
  // the parent answers when the GPU is this child's, the worker hands it back once its outputs
  // are on the host. Empty payloads.
  TurnRequest = 12,  // worker -> parent
  TurnGrant = 13,    // parent -> worker
  TurnRelease = 14,  // worker -> parent
  // The field's standard check of a Python module (include/gauntlet/run/standard_check.h): a child
  // loaded with entry "kbcheck:<ModelNew>" runs KernelBench's trials on Check (empty payload) and
  // answers its verdict as JSON text.
  Check = 15,        // parent -> worker
  CheckReply = 16,   // worker -> parent
};

struct Frame {
  FrameType type;
  std::string payload;
};

// Little-endian builder / parser. Reader methods return false once the payload is exhausted or
// malformed (sticky), so a truncated message is detected instead of read past.
class Writer {
 public:
  void u8(uint8_t v) { bytes_.push_back(char(v)); }
  void u32(uint32_t v);
  void u64(uint64_t v);
  void i64(int64_t v) { u64(uint64_t(v)); }
  void f64(double v);
  void str(const std::string& s);
  void raw(const void* p, size_t n) { bytes_.append(static_cast<const char*>(p), n); }
  std::string& bytes() { return bytes_; }

 private:
  std::string bytes_;
};

class Reader {
 public:
  explicit Reader(const std::string& bytes) : bytes_(bytes) {}
  bool u8(uint8_t* v);
  bool u32(uint32_t* v);
  bool u64(uint64_t* v);
  bool i64(int64_t* v);
  bool f64(double* v);
  bool str(std::string* s, size_t max_len = size_t(1) << 20);
  bool raw(void* dst, size_t n);
  bool ok() const { return ok_; }
  bool at_end() const { return pos_ == bytes_.size(); }

 private:
  bool need(size_t n);
  const std::string& bytes_;
  size_t pos_ = 0;
  bool ok_ = true;
};

// Frame IO on file descriptors. write_frame retries on EINTR; read_frame waits until
// `deadline_ms` (CLOCK_MONOTONIC milliseconds, <0: forever) and reports why it failed.
enum class ReadStatus { Ok, Eof, Timeout, Garbage, IoError };
bool write_frame(int fd, FrameType type, const std::string& payload);
ReadStatus read_frame(int fd, Frame* out, int64_t deadline_ms, std::string* why);
int64_t now_ms();

// A tensor on the wire: dtype, sizes, strides and storage offset, and the bytes of its whole
// storage, so the worker rebuilds exactly the view the parent made (non-contiguous layouts too).
void put_tensor(Writer& w, const at::Tensor& t);
bool get_tensor(Reader& r, at::Tensor* out, std::string* why);

// Kernel call arguments: tensors or attributes, in the schema's order.
struct Arg {
  enum class Kind : uint8_t { Tensor = 0, Int = 1, Double = 2, Bool = 3 } kind = Kind::Tensor;
  at::Tensor tensor;
  int64_t i = 0;
  double d = 0;
  bool b = false;
};

struct LoadRequest {
  std::string so_path;
  std::string entry;         // entry function name
  uint8_t poison_byte = 0xA5;  // fresh allocations are filled with this (unwritten output detection)
  int intra_op_threads = 1;
  bool record_ops = false;   // record the ATen operators the entry calls (provenance gate)
  // Memory gate: >0 puts this many canary bytes (a multiple of 64, so returned pointers keep
  // their 64-byte alignment) before and after every fresh CPU allocation and reports breaches.
  uint32_t guard_bytes = 0;
  // "cpu" or "cuda" (the manifest's device). For "cuda" the worker copies each case's inputs to the
  // GPU before the call and the outputs back after it. Encoded only when not "cpu", so a CPU
  // LoadRequest's bytes are what they were before the field existed.
  std::string device = "cpu";
  // Python modules only: the module's build directory (module_build.h). Encoded only when not
  // empty (after device), so every other LoadRequest's bytes are unchanged.
  std::string build_dir;
  // device=cuda: >0 sets CUDA_DEVICE_MAX_CONNECTIONS (hardware queues per context) before the
  // child first uses CUDA; 0 leaves the driver's default. Fewer queues make a fresh context much
  // cheaper (docs/gpu.md). Encoded only when >0 (after device and build_dir).
  uint32_t hardware_queues = 0;
};
struct LoadReply {
  bool ok = false;
  std::string error;         // load-error message
  std::string signature;     // the entry's deduced signature
  std::string sandbox_notes; // which isolation layers are active in this child
  // device=cuda only: the GPU as the child saw it, a JSON object (name, compute capability, memory,
  // driver; docs/gpu.md). Encoded only when not empty, so a CPU LoadReply's bytes are unchanged.
  std::string device_info;
};

struct CaseRequest {
  uint64_t case_id = 0;
  std::vector<Arg> args;
  uint32_t repeat = 1;       // call the entry this many times; every output is returned
  // The worker asks for the GPU turn (FrameType::TurnRequest) after reading the case and hands it
  // back before writing its reply, so a turn covers the copies to and from the GPU and the calls,
  // not the case's trip through the pipe. Inside a case it may hand the turn back and ask again
  // (while Triton compiles, with the GPU idle); a request while holding it, or a release while not,
  // is a protocol violation. Encoded only when set (an optional trailing byte).
  bool turn_handshake = false;
};

// One call's outputs. alias_input[i] >= 0: output i shares storage with that input;
// alias_output[i] >= 0: with that earlier output.
struct CallOutputs {
  std::vector<at::Tensor> outputs;     // contiguous CPU copies
  std::vector<std::string> devices;    // device of each output as the kernel returned it
  std::vector<int32_t> alias_input;
  std::vector<int32_t> alias_output;
  std::vector<bool> output_contiguous; // as returned
  // alias_previous_call[i] >= 0: output i shares storage with that output of the previous call of
  // the same request (a kernel handing out one static buffer: the caller's earlier result changes
  // under it). Empty or -1: fresh storage.
  std::vector<int32_t> alias_previous_call;
};

// A memory defect the worker saw. Canary breaches need LoadRequest.guard_bytes; a modified input is
// always reported. offset is in bytes from the buffer's first byte (negative: before it);
// bytes counts the changed bytes (the first run of them for a canary).
struct MemoryFinding {
  enum class Kind : uint8_t { CanaryBefore = 0, CanaryAfter = 1, InputModified = 2 } kind = Kind::CanaryAfter;
  enum class Buffer : uint8_t { Input = 0, Output = 1, Temporary = 2, Other = 3 } buffer = Buffer::Other;
  int32_t index = -1;        // input (tensor argument) or output index; -1 for other buffers
  int64_t offset = 0;
  int64_t bytes = 0;
  int64_t buffer_bytes = 0;  // the buffer's size as allocated
};

// One device-to-host transfer made inside the call (CaseReply::host_copies).
struct HostCopy {
  std::string op;            // the ATen operator that made it, e.g. "aten::copy_"
  int32_t input = -1;        // the tensor argument whose device storage the source lies in; -1: another buffer
  std::string from;          // the source's device, e.g. "cuda:0"
  int64_t bytes = 0;         // bytes transferred (the source view's elements times their size)
};

struct CaseReply {
  uint64_t case_id = 0;
  int32_t code = 0;          // KernelCallCode
  std::string message;
  std::vector<CallOutputs> calls;  // one per repeat
  bool inputs_unchanged = true;    // every input's storage bytes equal before and after the calls
  double kernel_seconds = 0;       // wall time inside the entry, summed over repeats
  // LoadRequest.record_ops: every ATen operator the entry invoked (RecordFunction names, e.g.
  // "aten::sum"), each once, in first-call order, summed over repeats.
  std::vector<std::string> aten_ops;
  std::vector<MemoryFinding> memory_findings;  // memory gate: canary breaches, modified inputs
  // device=cuda with record_ops (provenance gate): device-to-host transfers the entry made through
  // ATen while it ran (aten::copy_ to a CPU tensor from a CUDA one, aten::_local_scalar_dense of a
  // CUDA tensor, as .cpu(), .to(kCPU) and .item() end in them). Raw cudaMemcpy calls are not seen.
  // Encoded only when not empty (a tagged trailing section), so other replies' bytes are unchanged.
  std::vector<HostCopy> host_copies;
  // device=cuda, native worker: where the worker's time for this case went, in seconds of host
  // wall time: poisoning the device cache, copying the inputs to the device, and the outputs back
  // (the entry itself is kernel_seconds), reading the inputs back to see that the entry left them
  // unchanged (check), and the whole case from its first poisoning to its last check (case: what
  // its GPU turn held, less the handshake). For "where the time goes" on a GPU (docs/gpu.md).
  // Encoded only when set (a tagged trailing section), so other replies' bytes are unchanged.
  bool has_phases = false;
  double poison_seconds = 0, to_device_seconds = 0, from_device_seconds = 0, check_seconds = 0, case_seconds = 0;
  double reserve_seconds = 0;  // before the turn: the poison blocks' device memory (device_poison.h)
  double poison_release_seconds = 0;  // of poison_seconds: the cache released and taken afresh in the turn
  // device=cuda, native worker with LibTorch >= 2.9: the caching allocator's calls to the driver
  // during this case (its reservation, poisoning and calls): device memory taken (cudaMalloc) and
  // given back (cudaFree). -1: not counted. A tagged trailing section when counted.
  int64_t driver_allocs = -1, driver_frees = -1;
};

// Building blocks for messages defined elsewhere (timing.h): kernel arguments, and the end-of-message
// check (everything read, nothing left over).
void put_args(Writer& w, const std::vector<Arg>& args);
bool get_args(Reader& r, std::vector<Arg>* args, std::string* why);
bool finish_message(Reader& r, std::string* why);

std::string encode(const LoadRequest& m);
std::string encode(const LoadReply& m);
std::string encode(const CaseRequest& m);
std::string encode(const CaseReply& m);
bool decode(const std::string& bytes, LoadRequest* m, std::string* why);
bool decode(const std::string& bytes, LoadReply* m, std::string* why);
bool decode(const std::string& bytes, CaseRequest* m, std::string* why);
bool decode(const std::string& bytes, CaseReply* m, std::string* why);

}  // namespace gauntlet::wire
