// Timed calls in the worker: candidate and library baseline interleaved, L2 flushed, outputs re-checked.
#include "timing_loop.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "cuda_rt.h"
#include "library_baseline.h"

namespace gauntlet::worker {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<KernelArg> to_kernel_args(const std::vector<wire::Arg>& wire_args, bool cuda) {
  std::vector<KernelArg> args(wire_args.size());
  for (size_t i = 0; i < wire_args.size(); ++i) {
    const wire::Arg& a = wire_args[i];
    args[i].kind = KernelArg::Kind(uint8_t(a.kind));
    args[i].tensor = (cuda && a.tensor.defined()) ? a.tensor.to(at::kCUDA) : a.tensor;
    args[i].i = a.i;
    args[i].d = a.d;
    args[i].b = a.b;
  }
  return args;
}

// Bitwise equality of two outputs (NaN payloads included), done on the device.
bool same_bits(const at::Tensor& a, const at::Tensor& b) {
  if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type() || a.device() != b.device()) return false;
  if (a.numel() == 0) return true;
  at::Tensor ac = a.contiguous(), bc = b.contiguous();
  if (at::equal(ac, bc)) return true;
  if (!at::isFloatingType(ac.scalar_type())) return false;
  // at::equal says NaN != NaN: compare NaN positions and the other values separately.
  at::Tensor an = ac.isnan(), bn = bc.isnan();
  return at::equal(an, bn) && at::equal(ac.masked_fill(an, 0), bc.masked_fill(bn, 0));
}

class Timer {
 public:
  explicit Timer(bool cuda) : cuda_(cuda) {
    if (cuda_) ok_ = cuda_rt::event_create(&start_, &error_) && cuda_rt::event_create(&end_, &error_);
  }
  ~Timer() {
    cuda_rt::event_destroy(&start_);
    cuda_rt::event_destroy(&end_);
  }
  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  void start() {
    if (cuda_) cuda_rt::event_record(start_, &error_);
    else t0_ = Clock::now();
  }
  // Milliseconds since start(); waits for the whole device on CUDA, so the outputs are complete.
  bool stop(double* ms) {
    if (!cuda_) {
      *ms = std::chrono::duration<double, std::milli>(Clock::now() - t0_).count();
      return true;
    }
    float f = 0;
    if (!cuda_rt::event_record(end_, &error_) || !cuda_rt::device_synchronize(&error_) ||
        !cuda_rt::event_elapsed_ms(start_, end_, &f, &error_))
      return false;
    *ms = f;
    return true;
  }

 private:
  bool cuda_;
  bool ok_ = true;
  std::string error_;
  cuda_rt::Event start_, end_;
  Clock::time_point t0_;
};

struct Callee {
  const KernelEntry* entry = nullptr;  // nullptr: the library baseline
  std::string op;
  int call(std::vector<KernelArg>* args, std::vector<at::Tensor>* outs, std::string* error) const {
    outs->clear();
    if (entry) return entry->invoke(args, outs, error);
    return library_baseline(op, *args, outs, error) ? kCallOk : kCallException;
  }
};

// One TimeRequest's run: its sets on the device, the candidate and the library baseline, and the
// reply filled in phase by phase (TimeReply::phase_seconds). A step that returns false has set the
// reply's code and message: the run ends there.
class TimingRun {
 public:
  TimingRun(const KernelEntry& entry, const wire::TimeRequest& req, bool cuda, wire::TimeReply* rep)
      : req_(req), cuda_(cuda), rep_(*rep), candidate_{&entry, ""}, baseline_{nullptr, req.baseline_op} {}

  // Ends the current phase (its host wall time to TimeReply::phase_seconds) and starts the next.
  void next_phase() {
    const auto now = Clock::now();
    rep_.phase_seconds.push_back(std::chrono::duration<double>(now - phase_).count());
    phase_ = now;
  }

  void sets_to_device() {
    for (const auto& s : req_.sets) sets_.push_back(to_kernel_args(s, cuda_));
    std::string why;
    if (cuda_) cuda_rt::device_synchronize(&why);
  }

  // The timer of the timed calls: CUDA events on the GPU, which must be available.
  bool start_timer() {
    timer_.emplace(cuda_);
    if (cuda_ && !timer_->ok()) return fail(100, "CUDA events unavailable: " + timer_->error());
    return true;
  }

  // The GPU's name and L2 size for the reply, and the buffer written before every timed call to
  // flush the L2.
  void prepare_device() {
    std::string why;
    cuda_rt::DeviceInfo info;
    if (cuda_ && cuda_rt::device_info(&info, &why)) {
      rep_.device = info.name;
      rep_.l2_bytes = info.l2_bytes;
    }
    if (cuda_ && req_.flush_bytes > 0)
      flush_ = at::empty({int64_t(req_.flush_bytes)}, at::TensorOptions().dtype(at::kByte).device(at::kCUDA));
  }

  // Untimed first calls: the outputs the parent verifies. *seconds: a call's mean wall time.
  bool first_calls(double* seconds) {
    verified_.resize(sets_.size());
    auto t_first = Clock::now();
    for (size_t s = 0; s < sets_.size(); ++s) {
      std::string error;
      const int code = call_synchronized(candidate_, &sets_[s], &verified_[s], &error);
      if (code != kCallOk) return fail(code, error);
      for (at::Tensor& t : verified_[s]) t = t.clone();  // the kernel may hand out a reused buffer
      std::vector<at::Tensor> host;
      for (const at::Tensor& t : verified_[s]) host.push_back(t.cpu().contiguous());
      rep_.verified.push_back(std::move(host));
    }
    *seconds = std::chrono::duration<double>(Clock::now() - t_first).count() / double(sets_.size());
    return true;
  }

  // The baseline's availability: none requested, or its first call fails.
  void probe_baseline() {
    have_baseline_ = !req_.baseline_op.empty();
    if (!have_baseline_) rep_.baseline_error = "no baseline requested";
    if (have_baseline_) {
      std::string error;
      if (baseline_.call(&sets_[0], &outs_, &error) != kCallOk) lose_baseline(error);
    }
  }

  // Warm-up, which also estimates a call's cost so the timed loop fits the budget (*seconds: the
  // warm-up's whole wall time).
  bool warm_up(double* seconds) {
    for (uint32_t w = 0; w < req_.warmup; ++w) {
      for (const Callee* who : {&candidate_, &baseline_}) {
        if (who == &baseline_ && !have_baseline_) continue;
        std::string error;
        auto t0 = Clock::now();
        const int code = call_synchronized(*who, &sets_[w % sets_.size()], &outs_, &error);
        *seconds += std::chrono::duration<double>(Clock::now() - t0).count();
        if (code != kCallOk) {
          if (who == &candidate_) return fail(code, error);
          lose_baseline(error);
        }
      }
    }
    return true;
  }

  bool timed_loop(uint32_t iterations) {
    for (uint32_t i = 0; i < iterations; ++i) {
      const size_t s = i % sets_.size();
      // Alternate which goes first, so neither always runs right after the other.
      const Callee* order[2] = {&candidate_, &baseline_};
      if (i % 2) std::swap(order[0], order[1]);
      for (const Callee* who : order) {
        if (who == &baseline_ && !have_baseline_) continue;
        std::string error;
        double ms = 0;
        const int code = timed_call(*who, &sets_[s], &ms, &error);
        if (code != kCallOk) {
          if (who == &candidate_) return fail(code, error);
          lose_baseline(error);
          rep_.baseline_ms.clear();
        } else if (who == &baseline_) {
          rep_.baseline_ms.push_back(ms);
        } else {
          rep_.candidate_ms.push_back(ms);
          compare_with_verified(s, i);
        }
      }
    }
    return true;
  }

 private:
  bool fail(int code, const std::string& message) {
    rep_.code = code;
    rep_.message = message;
    return false;
  }

  void lose_baseline(const std::string& error) {
    have_baseline_ = false;
    rep_.baseline_error = error;
  }

  // An untimed call; on CUDA its work must be complete (and its errors surface) before it returns.
  int call_synchronized(const Callee& who, std::vector<KernelArg>* args, std::vector<at::Tensor>* outs,
                        std::string* error) const {
    int code = who.call(args, outs, error);
    if (code == kCallOk && cuda_ && !cuda_rt::device_synchronize(error)) code = kCallException;
    return code;
  }

  int timed_call(const Callee& who, std::vector<KernelArg>* args, double* ms, std::string* error) {
    if (flush_.defined()) flush_.zero_();  // on the current stream, before the start event
    timer_->start();
    int code = who.call(args, &outs_, error);
    if (!timer_->stop(ms) && code == kCallOk) {
      code = kCallException;
      *error = "CUDA error after the call: " + timer_->error();
    }
    return code;
  }

  // A timed call's outputs against its set's verified ones, bit for bit; the first mismatching
  // call's outputs go back to the parent.
  void compare_with_verified(size_t s, uint32_t call) {
    bool same = outs_.size() == verified_[s].size();
    for (size_t k = 0; same && k < outs_.size(); ++k) same = outs_[k].defined() && same_bits(outs_[k], verified_[s][k]);
    if (!same) {
      if (rep_.mismatches++ == 0) {
        rep_.first_mismatch_set = int32_t(s);
        rep_.first_mismatch_call = call;
        for (const at::Tensor& t : outs_) rep_.mismatch_outputs.push_back(t.defined() ? t.cpu().contiguous() : at::Tensor());
      }
    }
  }

  const wire::TimeRequest& req_;
  const bool cuda_;
  wire::TimeReply& rep_;
  const Callee candidate_, baseline_;
  Clock::time_point phase_ = Clock::now();
  // In the order the run creates them, so they are released in reverse: the outputs before the
  // timer's events, the sets last.
  std::vector<std::vector<KernelArg>> sets_;
  std::optional<Timer> timer_;
  at::Tensor flush_;
  std::vector<std::vector<at::Tensor>> verified_;  // per set: the untimed call's outputs
  std::vector<at::Tensor> outs_;
  bool have_baseline_ = false;
};

// Timed calls of each: as many as the budget allows at the warm-up's cost per round (twice a first
// call's without a warm-up), within the request's bounds.
uint32_t iterations_for_budget(const wire::TimeRequest& req, double warm_seconds, double first_seconds) {
  const double per_round = std::max(1e-6, req.warmup > 0 ? warm_seconds / req.warmup : 2 * first_seconds);
  return uint32_t(std::clamp<double>(req.budget_seconds / per_round, req.min_iterations, req.max_iterations));
}

}  // namespace

wire::TimeReply run_timing(const KernelEntry& entry, const wire::TimeRequest& req, bool cuda) {
  wire::TimeReply rep;
  rep.timer = cuda ? "cuda-events" : "steady-clock";
  try {
    if (!cuda) at::set_num_threads(std::max(1, req.threads));
    TimingRun run(entry, req, cuda, &rep);
    run.sets_to_device();
    run.next_phase();
    if (!run.start_timer()) return rep;
    run.prepare_device();
    double first_seconds = 0, warm_seconds = 0;
    if (!run.first_calls(&first_seconds)) return rep;
    run.next_phase();
    run.probe_baseline();
    if (!run.warm_up(&warm_seconds)) return rep;
    run.next_phase();
    rep.iterations = iterations_for_budget(req, warm_seconds, first_seconds);
    if (!run.timed_loop(rep.iterations)) return rep;
    run.next_phase();
  } catch (const std::exception& e) {
    rep.code = 100;
    rep.message = std::string("worker error while timing: ") + e.what();
  }
  return rep;
}

namespace {

// Best (smallest) time of `reps` runs of `fn`, in seconds.
template <typename F>
double best_seconds(bool cuda, int reps, F fn) {
  Timer timer(cuda);
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    double ms = 0;
    timer.start();
    fn();
    if (!timer.stop(&ms)) return 0;
    best = std::min(best, ms / 1000.0);
  }
  return best;
}

}  // namespace

wire::DevicePeaks measure_peaks(bool cuda) {
  wire::DevicePeaks p;
  try {
    const at::TensorOptions opts = at::TensorOptions().device(cuda ? at::kCUDA : at::kCPU);
    std::string why;
    cuda_rt::DeviceInfo info;
    // A CPU's name is the parent's to give (it keys the cache with it); the GPU's only the child sees.
    if (cuda) p.device = cuda_rt::device_info(&info, &why) ? info.name : "CUDA device";
    // Copy rate. GPU: far larger than the L2, because the timing gate flushes the L2 before every
    // call, so a kernel's bytes come from device memory. CPU: there is no flush, and a few MB of
    // inputs stay in the last-level cache, so the fastest rate the data can move at is the
    // cache-resident one: a 256 KiB copy, best of many.
    const int64_t copy_bytes = cuda ? (int64_t(1) << 30) : (int64_t(1) << 18);
    at::Tensor src = at::empty({copy_bytes}, opts.dtype(at::kByte)).fill_(1);
    at::Tensor dst = at::empty({copy_bytes}, opts.dtype(at::kByte));
    const double copy_s = best_seconds(cuda, cuda ? 5 : 200, [&] { dst.copy_(src); });
    if (copy_s > 0) p.copy_bytes_per_s = 2.0 * double(copy_bytes) / copy_s;
    src.reset();
    dst.reset();
    // Matmul rates: square products large enough to reach the library's peak.
    auto rate = [&](at::ScalarType dtype, int64_t n) -> double {
      at::Tensor a = at::randn({n, n}, opts.dtype(dtype)), b = at::randn({n, n}, opts.dtype(dtype));
      at::Tensor c = at::mm(a, b);  // warm-up (library handles, kernel selection)
      const double s = best_seconds(cuda, 5, [&] { at::mm_out(c, a, b); });
      return s > 0 ? 2.0 * double(n) * double(n) * double(n) / s : 0;
    };
    if (cuda) {
      // A float32 kernel may use TF32 tensor cores: its floor is the TF32 rate.
      const bool tf32 = at::globalContext().allowTF32CuBLAS();
      at::globalContext().setAllowTF32CuBLAS(true);
      p.matmul_flops_f32 = rate(at::kFloat, 8192);
      at::globalContext().setAllowTF32CuBLAS(tf32);
      p.matmul_flops_f16 = rate(at::kHalf, 8192);
      p.matmul_flops_bf16 = rate(at::kBFloat16, 8192);
      p.how = "device copy of 1 GiB; at::mm 8192^3 (float32 with TF32 allowed), best of 5, CUDA events";
    } else {
      // A measured CPU matmul rate depends on which BLAS LibTorch was built with and on the load;
      // a hand-written kernel may beat it. The ceiling is nominal instead: every thread at 5 GHz
      // retiring two 16-wide float32 FMAs a cycle (AVX-512), 16 times that for float16/bfloat16
      // (AMX tiles). Loose on purpose: on a CPU this floor catches only work that was skipped.
      const double f32 = double(at::get_num_threads()) * 5e9 * 64;
      p.matmul_flops_f32 = f32;
      p.matmul_flops_f16 = p.matmul_flops_bf16 = 16 * f32;
      p.how = "cache-resident memory copy of 256 KiB, best of 200, steady clock; matmul: nominal ceiling "
              "threads x 5 GHz x 64 float32 flop/cycle (x16 for float16/bfloat16)";
    }
  } catch (const std::exception& e) {
    p.how += std::string(" (measurement failed: ") + e.what() + ")";
  }
  return p;
}

}  // namespace gauntlet::worker
