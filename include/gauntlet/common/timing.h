// The timing gate's wire messages and its arithmetic: sample summaries, the roofline floor, cubin resources.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gauntlet/common/wire.h"

namespace gauntlet {
namespace wire {

// FrameType::Time. The worker calls the candidate once per input set untimed (the outputs the
// parent verifies against the oracle), warms up, then times `iterations` calls of the candidate
// interleaved with as many of the library baseline, rotating over the sets, and compares every
// timed output bitwise with its set's verified one.
struct TimeRequest {
  std::vector<std::vector<Arg>> sets;  // distinct input sets of one shape and dtype
  std::string baseline_op;             // the op whose ATen implementation is the baseline; "" for none
  uint32_t warmup = 3;                 // untimed calls of each before the timed ones
  uint32_t min_iterations = 10;        // timed calls of each, at least ...
  uint32_t max_iterations = 100;       // ... and at most; within them the budget decides
  double budget_seconds = 1.0;         // wall time the timed loop may take (estimated from warm-up)
  uint64_t flush_bytes = 0;            // GPU: bytes written to a scratch buffer before every timed call
  int32_t threads = 1;                 // CPU: intra-op threads for candidate and baseline alike
  // The worker asks for the GPU turn once the request is decoded and gives it back once the
  // verified outputs are on the host, before it encodes its reply (FrameType::TurnRequest ...,
  // as CaseRequest::turn_handshake), so the input sets and outputs crossing the pipe, tens of
  // megabytes at the timed shape, do not hold the GPU. Encoded only when set (a trailing byte).
  bool turn_handshake = false;
};

// Measured peaks of the device the worker runs on (FrameType::PeaksReply), cached by the parent.
struct DevicePeaks {
  std::string device;            // "NVIDIA H200" or the CPU's model name
  double copy_bytes_per_s = 0;   // device-memory copy: bytes read + written per second
  double matmul_flops_f32 = 0;   // matmul rate per dtype (float32: TF32 allowed on GPUs)
  double matmul_flops_f16 = 0;
  double matmul_flops_bf16 = 0;
  std::string how;               // what was measured, for the report
};

struct TimeReply {
  int32_t code = 0;                    // KernelCallCode of the candidate (0: every call returned)
  std::string message;
  std::string timer;                   // "cuda-events" or "steady-clock"
  std::string device;                  // device name as the worker saw it ("" on the CPU)
  int64_t l2_bytes = 0;
  std::vector<std::vector<at::Tensor>> verified;  // per set: the untimed call's outputs (CPU copies)
  std::vector<double> candidate_ms;    // one per timed call, in order
  std::vector<double> baseline_ms;     // empty when there is no baseline
  std::string baseline_error;          // why there is no baseline
  uint32_t iterations = 0;             // timed calls of each
  uint32_t mismatches = 0;             // timed calls whose outputs differ from their set's verified ones
  int32_t first_mismatch_set = -1;
  uint32_t first_mismatch_call = 0;
  std::vector<at::Tensor> mismatch_outputs;  // the first mismatching call's outputs (CPU copies)
  // Where the worker's time went, in seconds of host wall time: the sets to the device, the untimed
  // first calls with their outputs to the host, the warm-up, the timed loop. For "where the time
  // goes" (the timing gate's evidence `worker_seconds`); a trailing section, absent when empty.
  std::vector<double> phase_seconds;
};
// The names of TimeReply::phase_seconds, in order.
inline constexpr const char* kTimePhaseNames[] = {"sets_to_device", "first_calls", "warmup", "timed_loop"};

std::string encode(const TimeRequest& m);
std::string encode(const TimeReply& m);
std::string encode(const DevicePeaks& m);
bool decode(const std::string& bytes, TimeRequest* m, std::string* why);
bool decode(const std::string& bytes, TimeReply* m, std::string* why);
bool decode(const std::string& bytes, DevicePeaks* m, std::string* why);

}  // namespace wire

namespace timing {

// Order statistics of a sample of times (milliseconds). The confidence interval is the
// distribution-free one for the median: ranks n/2 -+ 1.96*sqrt(n)/2 of the sorted sample.
struct Summary {
  int n = 0;
  double median = 0, p25 = 0, p75 = 0, min = 0, max = 0;
  double ci_low = 0, ci_high = 0;  // 95% confidence interval of the median
  double spread() const { return median > 0 ? (p75 - p25) / median : 0; }  // relative IQR
};
Summary summarize(std::vector<double> samples);

// A timed run is unsteady when the candidate's times spread widely or its median sits far above
// the fastest run of the same candidate in the same child: something else had the machine for
// part of it. Seen on the H200: a Triton module's Python-side launches beside three nvcc builds,
// relative IQR 106% and a median 4.4x the next run's, which made eager Model look 5x faster.
// Why 25%: steady runs on both machines measured 0-6% (docs/timing.md), so a quarter is far
// outside a quiet run's spread; 1.5x likewise. An unsteady run is timed again (kRetimes more at
// most) and the steadiest attempt kept; one still unsteady is reported as such, not failed.
// The spread is taken within each group of calls alike (the same input set, the same place
// before or after the interleaved baseline) and its median over the groups: sets that differ in
// cost, or a cache the baseline warmed on the same inputs (measured: the embedding control, 54%
// pooled on the CPU), are the kernel and the method, not noise.
constexpr double kUnsteadyIqr = 0.25;
constexpr double kUnsteadyRatio = 1.5;
constexpr int kRetimes = 2;
struct Steadiness {
  int n = 0;
  double median = 0;  // of all the run's candidate times
  double spread = 0;  // median over input sets of each set's relative IQR
};
Steadiness steadiness(const std::vector<double>& candidate_ms, size_t sets);
bool unsteady(const Steadiness& run, double fastest_median);
// Whether attempt `b` should replace attempt `a` of the same run: steady beats unsteady, then
// the lower median (noise only ever adds time).
bool steadier(const Steadiness& b, const Steadiness& a, double fastest_median);

// A kernel faster than this fraction of its roofline time is implausible. Why a quarter: the
// bytes term counts outputs as written to memory, but a write-back L2 may hold them when the
// kernel ends (the time can be ~half the bytes term), and the measured copy rate is below the
// hardware's peak by 10-20%; a factor of 4 clears both while a kernel that skips its work
// (results cached, work launched on a stream nobody waits for) lands far below it.
constexpr double kImplausibleFraction = 0.25;

struct Roofline {
  double seconds = 0;   // max(flops / matmul peak, bytes / copy rate)
  double compute_seconds = 0, memory_seconds = 0;
  const char* bound = "memory";  // which term dominates
};
Roofline roofline(double flops, double bytes, double peak_flops, double peak_bytes_per_s);

// Per-function resources of a CUDA binary, from `cuobjdump --dump-resource-usage` output.
struct KernelResources {
  std::string function;      // mangled name
  int registers = 0;
  int64_t shared_bytes = 0;  // static shared memory per block
  int64_t local_bytes = 0;   // local memory per thread (register spills and stack arrays)
  int64_t stack_bytes = 0;
};
std::vector<KernelResources> parse_resource_usage(const std::string& cuobjdump_output);

}  // namespace timing
}  // namespace gauntlet
