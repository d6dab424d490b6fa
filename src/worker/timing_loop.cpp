// Timed calls in the worker: candidate and library baseline interleaved, L2 flushed, outputs re-checked.
#include "timing_loop.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>

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

}  // namespace

wire::TimeReply run_timing(const KernelEntry& entry, const wire::TimeRequest& req, bool cuda) {
  wire::TimeReply rep;
  rep.timer = cuda ? "cuda-events" : "steady-clock";
  try {
    if (!cuda) at::set_num_threads(std::max(1, req.threads));
    std::string why;
    auto phase = Clock::now();
    auto next_phase = [&] {
      const auto now = Clock::now();
      rep.phase_seconds.push_back(std::chrono::duration<double>(now - phase).count());
      phase = now;
    };
    std::vector<std::vector<KernelArg>> sets;
    for (const auto& s : req.sets) sets.push_back(to_kernel_args(s, cuda));
    if (cuda) cuda_rt::device_synchronize(&why);
    next_phase();
    Timer timer(cuda);
    if (cuda && !timer.ok()) return (rep.code = 100, rep.message = "CUDA events unavailable: " + timer.error(), rep);
    cuda_rt::DeviceInfo info;
    if (cuda && cuda_rt::device_info(&info, &why)) {
      rep.device = info.name;
      rep.l2_bytes = info.l2_bytes;
    }
    at::Tensor flush;
    if (cuda && req.flush_bytes > 0)
      flush = at::empty({int64_t(req.flush_bytes)}, at::TensorOptions().dtype(at::kByte).device(at::kCUDA));
    const Callee candidate{&entry, ""};
    const Callee baseline{nullptr, req.baseline_op};

    // Untimed first calls: the outputs the parent verifies, and the baseline's availability.
    std::vector<std::vector<at::Tensor>> verified(sets.size());
    auto t_first = Clock::now();
    for (size_t s = 0; s < sets.size(); ++s) {
      std::string error;
      int code = candidate.call(&sets[s], &verified[s], &error);
      if (code == kCallOk && cuda && !cuda_rt::device_synchronize(&error)) code = kCallException;
      if (code != kCallOk) return (rep.code = code, rep.message = error, rep);
      for (at::Tensor& t : verified[s]) t = t.clone();  // the kernel may hand out a reused buffer
      std::vector<at::Tensor> host;
      for (const at::Tensor& t : verified[s]) host.push_back(t.cpu().contiguous());
      rep.verified.push_back(std::move(host));
    }
    const double first_seconds = std::chrono::duration<double>(Clock::now() - t_first).count() / double(sets.size());
    next_phase();
    bool have_baseline = !req.baseline_op.empty();
    if (!have_baseline) rep.baseline_error = "no baseline requested";
    std::vector<at::Tensor> outs;
    if (have_baseline) {
      std::string error;
      if (baseline.call(&sets[0], &outs, &error) != kCallOk) {
        have_baseline = false;
        rep.baseline_error = error;
      }
    }
    // Warm-up, which also estimates a call's cost so the timed loop fits the budget.
    double warm_seconds = 0;
    for (uint32_t w = 0; w < req.warmup; ++w) {
      for (const Callee* who : {&candidate, &baseline}) {
        if (who == &baseline && !have_baseline) continue;
        std::string error;
        auto t0 = Clock::now();
        int code = who->call(&sets[w % sets.size()], &outs, &error);
        if (code == kCallOk && cuda && !cuda_rt::device_synchronize(&error)) code = kCallException;
        warm_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
        if (code != kCallOk) {
          if (who == &candidate) return (rep.code = code, rep.message = error, rep);
          have_baseline = false;
          rep.baseline_error = error;
        }
      }
    }
    next_phase();
    const double per_round = std::max(1e-6, req.warmup > 0 ? warm_seconds / req.warmup : 2 * first_seconds);
    uint32_t iterations = uint32_t(std::clamp<double>(req.budget_seconds / per_round, req.min_iterations,
                                                       req.max_iterations));
    rep.iterations = iterations;

    for (uint32_t i = 0; i < iterations; ++i) {
      const size_t s = i % sets.size();
      // Alternate which goes first, so neither always runs right after the other.
      const Callee* order[2] = {&candidate, &baseline};
      if (i % 2) std::swap(order[0], order[1]);
      for (const Callee* who : order) {
        if (who == &baseline && !have_baseline) continue;
        if (flush.defined()) flush.zero_();  // on the current stream, before the start event
        std::string error;
        double ms = 0;
        timer.start();
        int code = who->call(&sets[s], &outs, &error);
        if (!timer.stop(&ms) && code == kCallOk) {
          code = kCallException;
          error = "CUDA error after the call: " + timer.error();
        }
        if (code != kCallOk) {
          if (who == &candidate) return (rep.code = code, rep.message = error, rep);
          have_baseline = false;
          rep.baseline_error = error;
          rep.baseline_ms.clear();
          continue;
        }
        if (who == &baseline) {
          rep.baseline_ms.push_back(ms);
          continue;
        }
        rep.candidate_ms.push_back(ms);
        bool same = outs.size() == verified[s].size();
        for (size_t k = 0; same && k < outs.size(); ++k) same = outs[k].defined() && same_bits(outs[k], verified[s][k]);
        if (!same) {
          if (rep.mismatches++ == 0) {
            rep.first_mismatch_set = int32_t(s);
            rep.first_mismatch_call = i;
            for (const at::Tensor& t : outs) rep.mismatch_outputs.push_back(t.defined() ? t.cpu().contiguous() : at::Tensor());
          }
        }
      }
    }
    next_phase();
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
