// Parent side of one case (WorkerSession::call): the GPU turn handshake, the reply checked and categorized, phase totals.
#include <algorithm>
#include <mutex>
#include <optional>
#include <string>

#include "gauntlet/common/trace.h"
#include "gauntlet/sandbox/sandbox.h"
#include "gauntlet/sandbox/cuda_errors.h"
#include "gauntlet/sandbox/gpu_turn.h"
#include "gauntlet/kernel_abi.h"

namespace gauntlet {
namespace {

// The worker's reply code for its own failures (the worker's side: src/worker/worker.h).
constexpr int kWorkerInternalError = 100;

std::mutex g_phases_mu;
WorkerPhaseTotals g_phases;

// A well-formed reply's outcome by the call's code (kernel_abi.h).
void categorize_call_code(Outcome* out) {
  Outcome& o = *out;
  switch (o.reply.code) {
    case kCallOk: break;
    case kCallException:
      o.kind = Outcome::Kind::KernelError;
      o.category = Category::RuntimeError;
      o.message = o.reply.message;
      break;
    case kCallOutOfMemory:
      o.kind = Outcome::Kind::OutOfMemory;
      o.category = Category::OutOfMemory;
      o.message = o.reply.message;
      break;
    case kCallBadArguments:
      o.kind = Outcome::Kind::LoadFailed;
      o.category = Category::LoadError;
      o.message = "the entry's signature does not match the op schema: " + o.reply.message;
      break;
    default:
      o.kind = Outcome::Kind::HarnessError;
      o.category = Category::HarnessError;
      o.message = o.reply.message;
  }
}

}  // namespace

void add_worker_phases(const wire::CaseReply& reply) {
  std::lock_guard<std::mutex> lock(g_phases_mu);
  ++g_phases.cases;
  g_phases.poison_seconds += reply.poison_seconds;
  g_phases.to_device_seconds += reply.to_device_seconds;
  g_phases.kernel_seconds += reply.kernel_seconds;
  g_phases.from_device_seconds += reply.from_device_seconds;
  g_phases.check_seconds += reply.check_seconds;
  g_phases.case_seconds += reply.case_seconds;
  g_phases.reserve_seconds += reply.reserve_seconds;
  g_phases.poison_release_seconds += reply.poison_release_seconds;
  if (reply.driver_allocs >= 0) {
    ++g_phases.counted_cases;
    g_phases.driver_allocs += reply.driver_allocs;
    g_phases.driver_frees += reply.driver_frees;
  }
}

WorkerPhaseTotals worker_phase_totals() {
  std::lock_guard<std::mutex> lock(g_phases_mu);
  return g_phases;
}

Outcome WorkerSession::call(const wire::CaseRequest& request) {
  Outcome o;
  if (finished_) {
    o.kind = Outcome::Kind::HarnessError;
    o.category = Category::HarnessError;
    o.message = "call on a finished worker";
    return o;
  }
  deadline_ms_ = std::max(deadline_ms_, wire::now_ms() + int64_t(timeout_seconds_) * 1000);  // per case (exchange says why)
  // Every worker asks for its GPU turn once it has read the case and gives it back once its
  // outputs are on the host: a case crosses the pipe, and both sides (de)serialize it, while other
  // children use the GPU. On the H200 the pipe and the (de)serialization were most of a Python
  // module's turn at a problem's own sizes, and host work slows under load (docs/gpu.md). A CPU
  // child asks too and is granted at once (no turn to take), so the exchange is exercised by every
  // test that runs a case.
  struct OverrunEnd {  // after the turn below: a sibling waiting for this overrun may go
    WorkerSession* s;
    ~OverrunEnd() { s->end_overrun(); }
  } overrun_end{this};
  std::optional<GpuTurn> turn;
  struct TraceCall {  // the case's whole round trip, turn wait included (common/trace.h)
    int64_t begin = monotonic_ns();
    ~TraceCall() { trace::interval("call", begin, monotonic_ns()); }
  } trace_call;
  wire::CaseRequest sent = request;  // the tensors are shared, not copied
  sent.turn_handshake = true;
  wire::write_frame(req_fd_, wire::FrameType::Case, wire::encode(sent));
  wire::Frame f;
  std::string why, turn_slip;
  if (!await_case_reply(turn, &f, &why, &turn_slip, &o, TurnNeed::Case)) return o;
  if (!check_case_reply(request, f, turn_slip, &why, &o)) return o;
  if (o.reply.has_phases) add_worker_phases(o.reply);
  categorize_call_code(&o);
  if (cuda_ && (o.reply.code == kCallException || o.reply.code == kWorkerInternalError)) categorize_cuda_error(&o);
  return o;
}

bool WorkerSession::await_case_reply(std::optional<GpuTurn>& turn, wire::Frame* f, std::string* why,
                                     std::string* turn_slip, Outcome* o, TurnNeed need, bool bounded, bool watch) {
  bool over_limit = false;
  // The worker holds the turn from its TurnRequest's grant to its TurnRelease, and may give it
  // back and ask again inside one case (python/gauntlet_worker/turns.py: while Triton compiles).
  bool holding = false;
  while (true) {
    wire::ReadStatus rs = read_reply(f, why, o, &over_limit, turn && bounded ? &*turn : nullptr, watch);
    if (over_limit) return false;
    if (rs != wire::ReadStatus::Ok) {
      *o = fail_from_child(rs, *why);
      return false;
    }
    if (special_frame(*f, o)) return false;
    if (f->type != wire::FrameType::TurnRequest && f->type != wire::FrameType::TurnRelease) return true;
    if (f->type == wire::FrameType::TurnRelease) {
      if (!holding) {
        *turn_slip = "gave back a GPU turn it did not hold";
        return true;
      }
      holding = false;
      turn.reset();  // the GPU is the next child's while this one compiles, or replies
      continue;
    }
    if (holding) {
      *turn_slip = "asked for the GPU turn while holding it";
      return true;
    }
    holding = true;
    take_gpu_turn(turn, need);
    wire::write_frame(req_fd_, wire::FrameType::TurnGrant, "");
  }
}

bool WorkerSession::check_case_reply(const wire::CaseRequest& request, const wire::Frame& f,
                                     const std::string& turn_slip, std::string* why, Outcome* out) {
  Outcome& o = *out;
  // Every protocol violation names what was malformed (an empty reason hid which check failed).
  std::string bad;
  if (!turn_slip.empty()) {
    bad = turn_slip;
  } else if (f.type != wire::FrameType::CaseReply) {
    bad = "expected a case reply, got frame type " + std::to_string(uint32_t(f.type)) + " of " +
          std::to_string(f.payload.size()) + " bytes";
  } else if (!wire::decode(f.payload, &o.reply, why)) {
    bad = why->empty() ? "undecodable, " + std::to_string(f.payload.size()) + " bytes" : *why;
  } else if (o.reply.case_id != request.case_id && o.reply.code == kWorkerInternalError) {
    // The worker could not take the case at all (it could not decode it): gauntlet's fault.
    kill_now();
    bool exited;
    wait_status(&exited);
    o.kind = Outcome::Kind::HarnessError;
    o.category = Category::HarnessError;
    o.message = "the worker could not take case " + std::to_string(request.case_id) + ": " + o.reply.message;
    return false;
  } else if (o.reply.case_id != request.case_id) {
    bad = "reply for case " + std::to_string(o.reply.case_id) + ", expected case " + std::to_string(request.case_id);
  }
  if (bad.empty()) return true;
  *why = bad;
  kill_now();
  bool exited;
  wait_status(&exited);
  o.kind = Outcome::Kind::Died;
  o.category = Category::Crash;
  o.message = "protocol violation: malformed case reply (" + *why + ")";
  return false;
}

void WorkerSession::categorize_cuda_error(Outcome* out) {
  Outcome& o = *out;
  // A CUDA error: its category by its message (cuda_errors.h). After a sticky one the child's
  // CUDA context is dead: it is killed (the GPU is released for the next child) and reported
  // as died, so gates start a fresh child instead of sending it more cases.
  const CudaErrorClass c = classify_cuda_error(o.message);
  if (!c.is_cuda_error) return;
  o.category = c.category;
  o.kind = c.category == Category::OutOfMemory ? Outcome::Kind::OutOfMemory
           : c.category == Category::Crash     ? Outcome::Kind::Died
           : c.category == Category::Timeout   ? Outcome::Kind::TimedOut
           : c.category == Category::HarnessError ? Outcome::Kind::HarnessError
                                                  : Outcome::Kind::KernelError;
  if (c.context_lost) {
    kill_now();
    bool exited;
    wait_status(&exited);
    if (o.kind == Outcome::Kind::KernelError) o.kind = Outcome::Kind::Died;
    o.message += " (sticky CUDA error: the child's CUDA context is lost; the child was killed)";
  }
}

}  // namespace gauntlet
