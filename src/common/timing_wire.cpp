// Encoding of the timing gate's messages (timing.h) with the wire's Writer/Reader.
#include "gauntlet/common/timing.h"

namespace gauntlet::wire {
namespace {

constexpr uint32_t kMaxSets = 64;
constexpr uint32_t kMaxSamples = 1u << 20;

void put_tensors(Writer& w, const std::vector<at::Tensor>& ts) {
  w.u32(uint32_t(ts.size()));
  for (const at::Tensor& t : ts) put_tensor(w, t);
}

bool get_tensors(Reader& r, std::vector<at::Tensor>* ts, std::string* why) {
  uint32_t n = 0;
  if (!r.u32(&n) || n > 64) return (*why = "bad tensor count", false);
  ts->resize(n);
  for (at::Tensor& t : *ts)
    if (!get_tensor(r, &t, why)) return false;
  return true;
}

void put_samples(Writer& w, const std::vector<double>& v) {
  w.u32(uint32_t(v.size()));
  for (double d : v) w.f64(d);
}

bool get_samples(Reader& r, std::vector<double>* v, std::string* why) {
  uint32_t n = 0;
  if (!r.u32(&n) || n > kMaxSamples) return (*why = "bad sample count", false);
  v->resize(n);
  for (double& d : *v)
    if (!r.f64(&d)) return (*why = "truncated samples", false);
  return true;
}

}  // namespace

std::string encode(const TimeRequest& m) {
  Writer w;
  w.u32(uint32_t(m.sets.size()));
  for (const auto& s : m.sets) put_args(w, s);
  w.str(m.baseline_op);
  w.u32(m.warmup);
  w.u32(m.min_iterations);
  w.u32(m.max_iterations);
  w.f64(m.budget_seconds);
  w.u64(m.flush_bytes);
  w.u32(uint32_t(m.threads));
  if (m.turn_handshake) w.u8(1);
  return std::move(w.bytes());
}

bool decode(const std::string& bytes, TimeRequest* m, std::string* why) {
  Reader r(bytes);
  uint32_t n = 0;
  if (!r.u32(&n) || n == 0 || n > kMaxSets) return (*why = "bad input-set count", false);
  m->sets.resize(n);
  for (auto& s : m->sets)
    if (!get_args(r, &s, why)) return false;
  uint32_t threads = 1;
  r.str(&m->baseline_op);
  r.u32(&m->warmup);
  r.u32(&m->min_iterations);
  r.u32(&m->max_iterations);
  r.f64(&m->budget_seconds);
  r.u64(&m->flush_bytes);
  r.u32(&threads);
  m->threads = int32_t(threads);
  uint8_t handshake = 0;
  if (r.ok() && !r.at_end()) r.u8(&handshake);
  m->turn_handshake = handshake != 0;
  if (r.ok() && (m->min_iterations == 0 || m->min_iterations > m->max_iterations || m->max_iterations > kMaxSamples))
    return (*why = "bad iteration bounds", false);
  return finish_message(r, why);
}

std::string encode(const TimeReply& m) {
  Writer w;
  w.u32(uint32_t(m.code));
  w.str(m.message);
  w.str(m.timer);
  w.str(m.device);
  w.i64(m.l2_bytes);
  w.u32(uint32_t(m.verified.size()));
  for (const auto& outs : m.verified) put_tensors(w, outs);
  put_samples(w, m.candidate_ms);
  put_samples(w, m.baseline_ms);
  w.str(m.baseline_error);
  w.u32(m.iterations);
  w.u32(m.mismatches);
  w.u32(uint32_t(m.first_mismatch_set));
  w.u32(m.first_mismatch_call);
  put_tensors(w, m.mismatch_outputs);
  if (!m.phase_seconds.empty()) {
    w.u32(uint32_t(m.phase_seconds.size()));
    for (double v : m.phase_seconds) w.f64(v);
  }
  return std::move(w.bytes());
}

bool decode(const std::string& bytes, TimeReply* m, std::string* why) {
  Reader r(bytes);
  uint32_t code = 0, sets = 0, first_set = 0;
  r.u32(&code);
  m->code = int32_t(code);
  r.str(&m->message);
  r.str(&m->timer);
  r.str(&m->device);
  r.i64(&m->l2_bytes);
  if (!r.u32(&sets) || sets > kMaxSets) return (*why = "bad verified-set count", false);
  m->verified.resize(sets);
  for (auto& outs : m->verified)
    if (!get_tensors(r, &outs, why)) return false;
  if (!get_samples(r, &m->candidate_ms, why) || !get_samples(r, &m->baseline_ms, why)) return false;
  r.str(&m->baseline_error);
  r.u32(&m->iterations);
  r.u32(&m->mismatches);
  r.u32(&first_set);
  m->first_mismatch_set = int32_t(first_set);
  r.u32(&m->first_mismatch_call);
  if (!get_tensors(r, &m->mismatch_outputs, why)) return false;
  m->phase_seconds.clear();
  if (r.ok() && !r.at_end()) {
    uint32_t n = 0;
    if (!r.u32(&n) || n > 16) return (*why = "bad timing phase count", false);
    m->phase_seconds.resize(n);
    for (double& v : m->phase_seconds) r.f64(&v);
  }
  return finish_message(r, why);
}

std::string encode(const DevicePeaks& m) {
  Writer w;
  w.str(m.device);
  w.f64(m.copy_bytes_per_s);
  w.f64(m.matmul_flops_f32);
  w.f64(m.matmul_flops_f16);
  w.f64(m.matmul_flops_bf16);
  w.str(m.how);
  return std::move(w.bytes());
}

bool decode(const std::string& bytes, DevicePeaks* m, std::string* why) {
  Reader r(bytes);
  r.str(&m->device);
  r.f64(&m->copy_bytes_per_s);
  r.f64(&m->matmul_flops_f32);
  r.f64(&m->matmul_flops_f16);
  r.f64(&m->matmul_flops_bf16);
  r.str(&m->how);
  return finish_message(r, why);
}

}  // namespace gauntlet::wire
