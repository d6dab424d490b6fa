// Parent side of the sandbox: starts worker children (through a zygote or fork+exec) and talks to them.
#include <sys/types.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gauntlet/sandbox/sandbox_policy.h"
#include "gauntlet/common/types.h"
#include "gauntlet/common/wire.h"

#pragma once

namespace gauntlet {

class GpuSlot;  // gpu_slots.h

struct SandboxOptions {
  int timeout_seconds = 60;                        // wall clock per request (case) to a gate process (--timeout)
  // A Python module builds while it loads (load_inline runs ninja and nvcc, Triton compiles):
  // its load gets the kernel builder's limit (BuildOptions::timeout_seconds), not the gate's, and
  // the gate's --timeout starts at the load's reply. Measured on the H200: a tiled matmul's
  // load_inline build alone took 56 s, so under a 60 s gate limit four children building at
  // once were all killed, every gate an error.
  int module_load_seconds = 600;
  int64_t memory_limit_bytes = int64_t(4) << 30;   // host memory per gate process (--memory-limit)
  bool use_zygote = true;      // fork children from a zygote that loaded LibTorch once
  bool namespaces = true;      // ask for user/net/mount/pid/ipc namespaces
  bool seccomp = true;
  std::string worker_path;     // default: $GAUNTLET_WORKER, else gauntlet-worker beside this binary
  // Added to fork+exec'd children's scrubbed environment (the memory gate's ASan child:
  // LD_PRELOAD of the sanitizer runtime and ASAN_OPTIONS). Zygote children ignore it.
  std::vector<std::string> extra_env;
  // fork+exec'd children only: a program and its arguments run in front of the worker's command
  // line (the memory gate's compute-sanitizer child: the sanitizer starts the worker as its child).
  std::vector<std::string> exec_prefix;
  // The compute-sanitizer child's relaxations (docs/memory.md), applied by the worker itself: it
  // keeps the host's /tmp and its seccomp filter allows Unix sockets (socket(AF_UNIX, any type),
  // connect, bind, listen, accept), so the sanitizer's injection can reach its front-end.
  bool tool_ipc = false;
  bool drop_privileges = true;  // root outside a user namespace becomes nobody (65534)
  // The GPU a CUDA child uses (--gpu): the index among the GPUs this process may use (those of its
  // own CUDA_VISIBLE_DEVICES when set), passed to every child as CUDA_VISIBLE_DEVICES, so the
  // child sees exactly one GPU, as cuda:0. CPU children get it too and cannot use it (their
  // /dev/nvidia* nodes are covered).
  int gpu_index = 0;
  // Resident host memory watch. CUDA children run without RLIMIT_DATA (the driver reserves tens of
  // GiB of address space), so the parent samples their resident memory (anonymous + shared) while
  // it waits for a reply and kills the group past memory_limit_bytes (out-of-memory). >0 also
  // watches CPU children, at this bound (tests; their RLIMIT_DATA stays memory_limit_bytes).
  int64_t resident_limit_bytes = 0;
  // Intra-op threads of the module oracle's reference child (op "module": the problem's own Model
  // in float64 on the CPU, docs/modules.md). Every gate of a kernel waits on that one child, and at
  // KernelBench's sizes a single thread made it the audit's bottleneck (a 4096^3 matmul in float64
  // is minutes on one core). 0: the online CPUs, shared out among the kernels in flight
  // (reference_threads_for). The float64 answer differs between thread counts in its last bits at
  // most (reduction order), which no float32/float16 verdict can see.
  int reference_threads = 0;
  // A GPU turn's bound (--gpu-turn-bound, gpu_turn.h): a CUDA child's request that has held its
  // GPU turn this long without replying gives the turn up and runs on beside the next holder,
  // time-sliced, until it replies or its own --timeout ends it. 1 s is many times the longest
  // request of a correct control (docs/gpu.md) and short beside any --timeout. 0: unbounded.
  double gpu_turn_bound_seconds = 1.0;
  // The bound for a kernel's requests once one of its requests overran (by the kernel's
  // so_path, for this launcher's life): at most this. A kernel that spun once has shown it may
  // spin again, and each of its later gates would otherwise keep the GPU to itself for the whole
  // bound before sharing it (on the H200 about a tenth of a spinner audit's wall time). 0.1 s is
  // still many times a correct control's longest request; a slow kernel that does finish keeps
  // running, time-sliced, and keeps its own --timeout.
  double gpu_turn_bound_after_overrun_seconds = 0.1;
  // While a child overruns its bound, how many children's cases may hold a turn at once (gpu_turn.h:
  // they share the overrunning child's time slices instead of queueing one by one for them). 1:
  // one at a time, as without an overrun. On an H100, an audit of six controls (16 children in
  // flight) beside a spinner ran at 43% of its speed alone with 1 slot and 74-75% with 4 or 8; with
  // the timing gate's short loop beside an overrun too, 83% with 4 and 97% with 8 (docs/gpu.md,
  // thirty-first session). GAUNTLET_GPU_TURN_SLOTS overrides it (measurements).
  int gpu_turn_slots_while_overrun = 8;
  // How many CUDA children of the GPU may start CUDA at once, host-wide (gpu_slots.h); 0: no
  // limit. The driver makes contexts one after another, and each costs more the more are made at
  // once: with 3, eight processes of four gates ran at 84-85% of the context ceiling on an H100
  // against 73% unlimited and 81% with 4 (docs/gpu.md, thirty-fourth session); beside a spinning
  // kernel an audit kept 74-87% of its speed alone (three runs, thirty-seventh).
  // GAUNTLET_GPU_START_SLOTS overrides it.
  int gpu_start_slots = 3;
  // How many CUDA gates of the GPU may run at once, host-wide, over every gauntlet process
  // (gpu_slots.h, GpuSlot::kGate); 0: no cap beyond each process's own --gpu-jobs. 16 keeps the
  // driver busy without more contexts alive than it makes cheaply (24: 2-3 points less; the same
  // measurements). GAUNTLET_GPU_GATE_SLOTS overrides it.
  int gpu_gate_slots = 16;
  // A load holding a start slot longer than this gives it up (gpu_slots.h): a context takes
  // 0.1-0.3 s to make with few starting at once (H100, thirty-third session), a hung load forever.
  double gpu_start_slot_bound_seconds = 3.0;
  // Tests (a fake device): CPU children take GPU turns on this lock file as CUDA children do.
  std::string fake_gpu_turn_lock;
};

// The reference child's threads under `options`: reference_threads when set, else the online CPUs
// divided among `kernels_in_flight` (at least one each).
int reference_threads_for(const SandboxOptions& options, int kernels_in_flight = 1);

// What happened to one request sent to a worker child.
struct Outcome {
  enum class Kind {
    Ok,              // the call returned outputs
    KernelError,     // the kernel threw (runtime-error) or reported bad arguments
    OutOfMemory,
    Died,            // crashed, exited, or broke the protocol (crash)
    TimedOut,
    LoadFailed,      // load-error
    HarnessError,
  } kind = Kind::Ok;
  Category category = Category::None;
  std::string message;
  wire::CaseReply reply;  // valid when kind == Ok
};

class WorkerSession;
class GpuTurn;
enum class TurnNeed;

// Where the parent's part of starting one child went (seconds), for "where the time goes": the
// wait for the launcher (its other gates' spawns, the zygote's start), starting the zygote (the
// launcher's first child only: exec, LibTorch's libraries, warm-up), the zygote's round trip, and
// within it the clone itself (copying the zygote's mappings, making the namespaces). Zero on
// fork+exec.
struct SpawnTimes {
  double lock_wait = 0;
  double zygote_start = 0;
  double zygote = 0;
  double clone = 0;
};

// Starts worker children. One per verify or per audit lane; owns the zygote. Thread-safe: the
// gates of one kernel run in parallel threads (VerifyOptions::jobs) and spawn through one launcher.
class Launcher {
 public:
  explicit Launcher(SandboxOptions options);
  ~Launcher();
  Launcher(const Launcher&) = delete;
  Launcher& operator=(const Launcher&) = delete;

  // A fresh child (one per gate). nullptr and *error when it cannot be started (harness error).
  std::unique_ptr<WorkerSession> spawn(std::string* error);

  const SandboxOptions& options() const { return options_; }
  // "zygote" or "fork+exec", plus the namespaces the last child got and why others are missing.
  std::string isolation_note() const {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    return note_;
  }
  // Whether this launcher's children share the host's network namespace: namespaces off or narrowed
  // without "net" (GAUNTLET_NAMESPACES), or the host refused one to the last child started. Abstract
  // Unix sockets are per network namespace, so such children can meet each other's (memory gate:
  // compute-sanitizer's front-end and target, memory_sanitizer.cpp).
  bool children_share_host_network() const {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    return !(wanted_ns_ & kNsNet) || (started_any_ && !(last_achieved_ns_ & kNsNet));
  }
  // The GPU the last CUDA child saw (LoadReply.device_info, a JSON object); empty before one loaded.
  std::string device_info() const {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    return device_info_;
  }

  // Python modules (docs/modules.md): while on, spawn() forks a child of the Python zygote
  // (`python3 python/gauntlet_pyworker.py --zygote`, started once, torch imported once), or with
  // use_zygote off (or the Python zygote unavailable) fork+execs
  // `python3 python/gauntlet_pyworker.py --serve --policy HEX`; never the native zygote.
  // verify_kernel turns it on for a manifest whose source ends in ".py" and off again afterwards.
  // The interpreter: $GAUNTLET_PYTHON, else /usr/bin/python3 (Debian's python3-torch), else
  // /usr/local/bin/python3. The script: $GAUNTLET_PYWORKER, else python/gauntlet_pyworker.py beside
  // this binary, else in the source tree gauntlet was built from.
  void set_python_module(bool on) { python_ = on; }
  bool python_module() const { return python_; }

 private:
  friend class WorkerSession;
  // The native zygote (gauntlet-worker --zygote), or with `python` the Python one
  // (gauntlet_pyworker.py --zygote: torch imported once); both speak zygote.cpp's protocol.
  bool start_zygote(std::string* error, bool python = false);
  // Reaps children that were told to exit; kills those past their grace period. With `block`,
  // waits for all of them.
  void reap_exiting(bool block);
  std::vector<std::pair<pid_t, int64_t>> exiting_;
  std::unique_ptr<WorkerSession> spawn_via_zygote(std::string* error, bool python = false);
  std::unique_ptr<WorkerSession> spawn_via_exec(std::string* error);
  // A started child as a session (either path): its pipes' ends, its deadline counted from now.
  std::unique_ptr<WorkerSession> adopt_child(pid_t pid, bool pid_ns, int req_fd, int rep_fd, int capture_fd);

  // Guards everything below that spawning and reaping change (zygote socket, exiting_, notes).
  mutable std::recursive_mutex mu_;
  std::unique_ptr<class ForkKeeper> keeper_;  // the thread zygotes are forked from
  SandboxOptions options_;
  bool python_ = false;
  std::string worker_path_;
  pid_t zygote_pid_ = -1;
  int zygote_sock_ = -1;
  bool zygote_failed_ = false;
  pid_t py_zygote_pid_ = -1;  // the Python zygote (Python modules; docs/modules.md)
  int py_zygote_sock_ = -1;
  bool py_zygote_failed_ = false;
  uint32_t wanted_ns_ = 0;
  uint32_t last_achieved_ns_ = 0;  // the namespaces the last child started got (under mu_)
  bool started_any_ = false;
  SpawnTimes spawn_times_;  // the spawn in progress (under mu_), copied into its session
  std::string note_;
  std::string device_info_;
  // This launcher's (one kernel's) children running past their GPU turn's bound: at most one.
  // Its siblings wait for it before they take a turn, so a kernel that spins in every gate shares
  // the GPU with one child, not with every gate it has in flight (measured on the H200: four
  // spinning gates at once slowed an audit beside them by 28%).
  std::mutex overrun_mu_;
  std::condition_variable overrun_cv_;
  int overrunning_ = 0;
  // Kernels (so_path) with a request that went past its bound: their later requests get
  // SandboxOptions::gpu_turn_bound_after_overrun_seconds. Guarded by overrun_mu_.
  std::set<std::string> overran_kernels_;
};

// One sandboxed child: load a kernel, then send it cases. Its deadline covers its whole life.
class WorkerSession {
 public:
  ~WorkerSession();
  Outcome load(const std::string& so_path, const std::string& entry, uint8_t poison_byte = 0xA5,
               int threads = 1);
  // The same with every LoadRequest field chosen by the caller (operator recording, ...).
  Outcome load(const wire::LoadRequest& request);
  Outcome call(const wire::CaseRequest& request);
  // How a request other than a case holds the GPU (CUDA children, or any under a fake device).
  enum class Turn {
    Bounded,     // the parent takes the turn before sending; past the bound it is shared (Check)
    Whole,       // the same, never given up early: the request measures the device (Peaks)
    WorkerAsks,  // the worker asks for it by handshake once the request is decoded and gives it
                 // back before replying (TimeRequest::turn_handshake); a timed run, so given up
                 // only past kTimedRunBoundFactor x the bound (its figures then uncertain)
  };
  // A timed run needs the device to itself, but not for as long as it likes: a correct but slow
  // kernel at the timing gate's size (measured on the H200: a scatter whose every thread retried
  // a compare-and-swap on one address, a 60 s timeout twice over) held every other child of the
  // GPU back for its whole --timeout. Ten bounds (10 s by default) is several times the longest
  // timed run of a correct control (1.3 s, int8_matmul at [512, 65536] x [65536, 128]).
  static constexpr double kTimedRunBoundFactor = 10.0;
  // Sends one frame and waits for a frame of `reply_type` (the timing gate's requests, the
  // standard check). Ok with *reply_payload, or how the child failed (died, timed out, broke the
  // protocol).
  Outcome exchange(wire::FrameType type, const std::string& payload, wire::FrameType reply_type,
                   std::string* reply_payload, Turn turn = Turn::Bounded);
  // Whether a GPU turn of an exchange() was granted while another child ran past its bound on the
  // same device (gpu_turn.h), or a timed run of its own ran past kTimedRunBoundFactor x the bound
  // and gave its turn up: its requests then shared the GPU, time-sliced (timed figures are
  // uncertain). No turn can start overrunning while this one holds the device.
  bool gpu_shared() const { return gpu_shared_; }
  std::string signature() const { return signature_; }
  std::string sandbox_notes() const { return notes_; }
  // device=cuda: the GPU as this child saw it (JSON object text); empty for CPU children.
  std::string device_info() const { return device_info_; }
  pid_t pid() const { return pid_; }
  // The parent's part of this child's start (Launcher::spawn).
  const SpawnTimes& spawn_times() const { return spawn_times_; }
  // The last `max_bytes` of what the child wrote to stdout/stderr (control characters as spaces).
  std::string captured_output(size_t max_bytes) const;
  // Ends the child politely (Bye), or kills it when it does not leave in time.
  void finish();

 private:
  friend class Launcher;
  WorkerSession() = default;
  Outcome fail_from_child(wire::ReadStatus status, const std::string& why);
  bool special_frame(const wire::Frame& f, Outcome* out);
  void kill_now();
  int wait_status(bool* exited);
  // read_frame, sampling the child's resident memory while it waits when watched (CUDA children;
  // `watch` false: never), and giving `turn` up once it has been held past its bound (GpuTurn::
  // overrun); *over_limit with *over filled (out-of-memory, child killed) past the memory limit.
  wire::ReadStatus read_reply(wire::Frame* f, std::string* why, Outcome* over, bool* over_limit,
                              GpuTurn* turn = nullptr, bool watch = true);
  // This session's GPU turn for one request (CUDA children, or any under a fake device); none
  // otherwise. The child's deadline moves by the wait: a queue is never the kernel's timeout.
  // `need`: a case's turn, or the whole device for a measurement (gpu_turn.h, TurnNeed).
  void take_gpu_turn(std::optional<GpuTurn>& turn, TurnNeed need);
  // The request in flight went past its turn's bound (counted on the launcher until it ends).
  void begin_overrun();
  void end_overrun();
  // The bound for this session's next request: the launcher's, or the shorter one once this
  // kernel has overrun (SandboxOptions::gpu_turn_bound_after_overrun_seconds). 0: unbounded.
  double turn_bound_seconds();
  // call's steps (worker_call.cpp). Serves the child's GPU turn requests and releases until its
  // case reply (*f); a turn frame out of order ends the wait with *turn_slip naming it. False with
  // *o final when the child failed (died, timed out, over its memory limit).
  // `bounded`: a turn held past the bound is given up (SandboxOptions::gpu_turn_bound_seconds);
  // `watch`: the child's resident memory is sampled against the limit (read_reply).
  bool await_case_reply(std::optional<GpuTurn>& turn, wire::Frame* f, std::string* why, std::string* turn_slip,
                        Outcome* o, TurnNeed need, bool bounded = true, bool watch = true);
  // Decodes the case reply into o->reply; false with *o final (the child killed) when it is malformed,
  // out of turn or for another case.
  bool check_case_reply(const wire::CaseRequest& request, const wire::Frame& f, const std::string& turn_slip,
                        std::string* why, Outcome* o);
  // A failed call on a CUDA child categorized by its CUDA error, if it is one.
  void categorize_cuda_error(Outcome* o);

  Launcher* launcher_ = nullptr;
  pid_t pid_ = -1;
  bool pid_ns_ = false;
  int req_fd_ = -1, rep_fd_ = -1, capture_fd_ = -1, status_fd_ = -1;
  int64_t deadline_ms_ = 0;
  int timeout_seconds_ = 0;
  bool finished_ = false;
  bool cuda_ = false;               // loaded with device=cuda
  int64_t resident_limit_ = 0;      // >0: resident memory watched at this bound
  bool overrunning_ = false;        // this request went past its GPU turn's bound
  std::string kernel_;              // LoadRequest.so_path: whose overruns shorten the bound
  bool gpu_shared_ = false;         // see gpu_shared()
  bool watch_shared_ = false;       // exchange() in progress: take_gpu_turn notes a shared device
  double timed_run_bound_ = 0;      // >0: a timed run's turn bound, while exchange() serves one
  SpawnTimes spawn_times_;
  int64_t started_ns_ = 0;          // CLOCK_MONOTONIC when spawned: the session's interval (common/trace.h)
  GpuSlot* start_slot_ = nullptr;  // held during load(): read_reply gives it up at its bound
  int64_t start_slot_release_ms_ = 0;
  std::string signature_, notes_, device_info_;
};

// Where CUDA workers' time went, summed over the case replies that said (CaseReply::has_phases:
// the native worker on a GPU) in this process: for "where the time goes" (verify reports each
// kernel's share as environment.worker_phases).
struct WorkerPhaseTotals {
  long cases = 0;
  double poison_seconds = 0, to_device_seconds = 0, kernel_seconds = 0, from_device_seconds = 0;
  double check_seconds = 0, case_seconds = 0, reserve_seconds = 0, poison_release_seconds = 0;
  long counted_cases = 0, driver_allocs = 0, driver_frees = 0;  // cases whose replies counted them
};
void add_worker_phases(const wire::CaseReply& reply);
WorkerPhaseTotals worker_phase_totals();

// The Python module worker's command line (interpreter, script), as Launcher::set_python_module
// describes; false with *error when the interpreter or the script is missing.
bool python_worker_command(const std::string& worker_path, std::vector<std::string>* argv, std::string* error);
// Reads the tail of a child's captured stdout/stderr (for evidence in messages).
std::string read_capture_tail(int fd, size_t max_bytes);
// CUDA_VISIBLE_DEVICES for a child that is to use GPU `gpu_index`: the index-th entry of the
// `inherited` list (this process's CUDA_VISIBLE_DEVICES, may be null), else the index itself.
std::string cuda_visible_devices_for(int gpu_index, const char* inherited);
// Resident memory of a process that counts against its host memory limit: anonymous plus shared
// (RssAnon + RssShmem of /proc/PID/status), in bytes; -1 when it cannot be read (gone).
int64_t resident_memory_bytes(pid_t pid);
// "4G", "512M", "1024K", "123" -> bytes; nullopt-like -1 on a malformed size.
int64_t parse_size(const std::string& text);

}  // namespace gauntlet
