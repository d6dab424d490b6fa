// Frame IO and message (de)serialization for the parent/worker protocol.
#include "gauntlet/common/wire.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cstring>

#include "gauntlet/common/frame_checksum.h"

namespace gauntlet::wire {

void Writer::u32(uint32_t v) {
  for (int i = 0; i < 4; ++i) u8(uint8_t(v >> (8 * i)));
}
void Writer::u64(uint64_t v) {
  for (int i = 0; i < 8; ++i) u8(uint8_t(v >> (8 * i)));
}
void Writer::f64(double v) {
  uint64_t b;
  std::memcpy(&b, &v, 8);
  u64(b);
}
void Writer::str(const std::string& s) {
  u32(uint32_t(s.size()));
  bytes_.append(s);
}

bool Reader::need(size_t n) {
  if (!ok_ || bytes_.size() - pos_ < n) ok_ = false;
  return ok_;
}
bool Reader::u8(uint8_t* v) {
  if (!need(1)) return false;
  *v = uint8_t(bytes_[pos_++]);
  return true;
}
bool Reader::u32(uint32_t* v) {
  if (!need(4)) return false;
  uint32_t x = 0;
  for (int i = 0; i < 4; ++i) x |= uint32_t(uint8_t(bytes_[pos_ + i])) << (8 * i);
  pos_ += 4;
  *v = x;
  return true;
}
bool Reader::u64(uint64_t* v) {
  if (!need(8)) return false;
  uint64_t x = 0;
  for (int i = 0; i < 8; ++i) x |= uint64_t(uint8_t(bytes_[pos_ + i])) << (8 * i);
  pos_ += 8;
  *v = x;
  return true;
}
bool Reader::i64(int64_t* v) {
  uint64_t x;
  if (!u64(&x)) return false;
  *v = int64_t(x);
  return true;
}
bool Reader::f64(double* v) {
  uint64_t x;
  if (!u64(&x)) return false;
  std::memcpy(v, &x, 8);
  return true;
}
bool Reader::str(std::string* s, size_t max_len) {
  uint32_t n;
  if (!u32(&n)) return false;
  if (n > max_len || !need(n)) return ok_ = false;
  s->assign(bytes_, pos_, n);
  pos_ += n;
  return true;
}
bool Reader::raw(void* dst, size_t n) {
  if (!need(n)) return false;
  std::memcpy(dst, bytes_.data() + pos_, n);
  pos_ += n;
  return true;
}

int64_t now_ms() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

namespace {

// Enough to reject garbage (not an adversarial MAC; the reply channel's only writer is the child,
// whose failures we only need to detect); word-wise, so cheap at tens of megabytes.
uint64_t checksum(const std::string& s) {
  return frame_checksum::of(reinterpret_cast<const unsigned char*>(s.data()), s.size());
}

bool write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t k = ::write(fd, p, n);
    if (k < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += k;
    n -= size_t(k);
  }
  return true;
}

// Reads exactly n bytes before the deadline.
ReadStatus read_all(int fd, char* p, size_t n, int64_t deadline_ms, bool* got_any) {
  while (n > 0) {
    int wait = -1;
    if (deadline_ms >= 0) {
      int64_t left = deadline_ms - now_ms();
      if (left <= 0) return ReadStatus::Timeout;
      wait = int(left > 1000000 ? 1000000 : left);
    }
    pollfd pfd{fd, POLLIN, 0};
    int r = ::poll(&pfd, 1, wait);
    if (r < 0) {
      if (errno == EINTR) continue;
      return ReadStatus::IoError;
    }
    if (r == 0) continue;
    ssize_t k = ::read(fd, p, n);
    if (k < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return ReadStatus::IoError;
    }
    if (k == 0) return *got_any ? ReadStatus::Garbage : ReadStatus::Eof;
    *got_any = true;
    p += k;
    n -= size_t(k);
  }
  return ReadStatus::Ok;
}

}  // namespace

bool write_frame(int fd, FrameType type, const std::string& payload) {
  Writer h;
  h.u32(kMagic);
  h.u32(uint32_t(type));
  h.u64(payload.size());
  Writer t;
  t.u64(checksum(payload));
  return write_all(fd, h.bytes().data(), h.bytes().size()) &&
         write_all(fd, payload.data(), payload.size()) &&
         write_all(fd, t.bytes().data(), t.bytes().size());
}

ReadStatus read_frame(int fd, Frame* out, int64_t deadline_ms, std::string* why) {
  char head[16];
  bool got_any = false;
  ReadStatus s = read_all(fd, head, sizeof head, deadline_ms, &got_any);
  if (s != ReadStatus::Ok) {
    if (s == ReadStatus::Garbage && why) *why = "reply channel closed in the middle of a frame header";
    return s;
  }
  std::string hs(head, sizeof head);
  Reader r(hs);
  uint32_t magic = 0, type = 0;
  uint64_t len = 0;
  r.u32(&magic);
  r.u32(&type);
  r.u64(&len);
  // Which field is wrong decides whose fault it is: bytes that are no frame at all (a kernel writing
  // to the channel) against a real frame over the limit (the worker's reply too large).
  std::string bad;
  if (magic != kMagic) {
    bad = "bad magic, not a frame";
  } else if (type < 1 || type > uint32_t(FrameType::CheckReply)) {
    bad = "unknown frame type " + std::to_string(type);
  } else if (len > kMaxFrameBytes) {
    bad = "a frame of " + std::to_string(len) + " bytes, over the wire's limit of " +
          std::to_string(kMaxFrameBytes >> 30) + " GiB";
  }
  if (!bad.empty()) {
    if (why) *why = "malformed frame header (" + bad + ")";
    return ReadStatus::Garbage;
  }
  out->type = FrameType(type);
  out->payload.resize(len);
  s = read_all(fd, out->payload.data(), len, deadline_ms, &got_any);
  if (s == ReadStatus::Eof) s = ReadStatus::Garbage;
  if (s != ReadStatus::Ok) {
    if (why && s == ReadStatus::Garbage) *why = "reply channel closed in the middle of a frame";
    return s;
  }
  char tail[8];
  s = read_all(fd, tail, 8, deadline_ms, &got_any);
  if (s == ReadStatus::Eof) s = ReadStatus::Garbage;
  if (s != ReadStatus::Ok) return s;
  std::string ts(tail, 8);
  Reader tr(ts);
  uint64_t sum;
  tr.u64(&sum);
  if (sum != checksum(out->payload)) {
    if (why) *why = "frame checksum mismatch";
    return ReadStatus::Garbage;
  }
  return ReadStatus::Ok;
}

void put_tensor(Writer& w, const at::Tensor& t_in) {
  at::Tensor t = t_in.device().is_cpu() ? t_in : t_in.cpu();
  auto dt = from_scalar_type(t.scalar_type());
  w.u8(dt ? uint8_t(*dt) : uint8_t(255));
  w.u8(uint8_t(t.dim()));
  for (int64_t i = 0; i < t.dim(); ++i) w.i64(t.size(i));
  for (int64_t i = 0; i < t.dim(); ++i) w.i64(t.stride(i));
  w.i64(t.storage_offset());
  const size_t nbytes = t.storage().nbytes();
  w.u64(nbytes);
  if (nbytes) w.raw(t.storage().data(), nbytes);
}

bool get_tensor(Reader& r, at::Tensor* out, std::string* why) {
  uint8_t code, ndim;
  if (!r.u8(&code) || !r.u8(&ndim)) return (*why = "truncated tensor header", false);
  if (code > uint8_t(kLastDType)) return (*why = "tensor of an unsupported dtype (code " + std::to_string(code) + ")", false);
  auto st = to_scalar_type(DType(code));
  if (!st) return (*why = "a tensor of " + dtype_unavailable(DType(code)), false);
  std::vector<int64_t> sizes(ndim), strides(ndim);
  for (auto& s : sizes)
    if (!r.i64(&s) || s < 0) return (*why = r.ok() ? "negative tensor size " + std::to_string(s) : "truncated tensor sizes", false);
  for (auto& s : strides)
    if (!r.i64(&s) || s < 0) return (*why = r.ok() ? "negative tensor stride " + std::to_string(s) : "truncated tensor strides", false);
  int64_t offset;
  uint64_t nbytes;
  if (!r.i64(&offset) || !r.u64(&nbytes)) return (*why = "truncated tensor storage header", false);
  if (offset < 0) return (*why = "negative storage offset " + std::to_string(offset), false);
  const int64_t esize = int64_t(c10::elementSize(*st));
  if (nbytes % uint64_t(esize))
    return (*why = "storage of " + std::to_string(nbytes) + " bytes is not a multiple of the element size " + std::to_string(esize), false);
  const int64_t elems = int64_t(nbytes) / esize;
  // The last element the view touches must lie inside the storage.
  int64_t last = offset;
  bool empty = false;
  for (int i = 0; i < ndim; ++i) {
    if (sizes[i] == 0) empty = true;
    else last += (sizes[i] - 1) * strides[i];
  }
  if (!empty && last >= elems)
    return (*why = "tensor view exceeds its storage: it reaches element " + std::to_string(last) + " of a storage of " + std::to_string(elems), false);
  at::Tensor storage = at::empty({elems}, at::TensorOptions().dtype(*st));
  if (nbytes && !r.raw(storage.data_ptr(), nbytes))
    return (*why = "truncated tensor bytes (" + std::to_string(nbytes) + " announced)", false);
  *out = storage.as_strided(sizes, strides, offset);
  return true;
}

void put_args(Writer& w, const std::vector<Arg>& args) {
  w.u32(uint32_t(args.size()));
  for (const Arg& a : args) {
    w.u8(uint8_t(a.kind));
    switch (a.kind) {
      case Arg::Kind::Tensor: put_tensor(w, a.tensor); break;
      case Arg::Kind::Int: w.i64(a.i); break;
      case Arg::Kind::Double: w.f64(a.d); break;
      case Arg::Kind::Bool: w.u8(a.b ? 1 : 0); break;
    }
  }
}

bool get_args(Reader& r, std::vector<Arg>* args, std::string* why) {
  uint32_t n;
  if (!r.u32(&n) || n > 64) return (*why = "bad argument count", false);
  args->resize(n);
  for (Arg& a : *args) {
    uint8_t kind;
    if (!r.u8(&kind) || kind > 3) return (*why = "bad argument kind", false);
    a.kind = Arg::Kind(kind);
    switch (a.kind) {
      case Arg::Kind::Tensor:
        if (!get_tensor(r, &a.tensor, why)) return false;
        break;
      case Arg::Kind::Int:
        if (!r.i64(&a.i)) return (*why = "truncated int", false);
        break;
      case Arg::Kind::Double:
        if (!r.f64(&a.d)) return (*why = "truncated double", false);
        break;
      case Arg::Kind::Bool: {
        uint8_t b;
        if (!r.u8(&b)) return (*why = "truncated bool", false);
        a.b = b != 0;
        break;
      }
    }
  }
  return true;
}

bool finish_message(Reader& r, std::string* why) {
  if (!r.ok()) return (*why = "truncated message", false);
  if (!r.at_end()) return (*why = "trailing bytes after message", false);
  return true;
}

namespace {
bool finish(Reader& r, std::string* why) { return finish_message(r, why); }
}  // namespace

std::string encode(const LoadRequest& m) {
  Writer w;
  w.str(m.so_path);
  w.str(m.entry);
  w.u8(m.poison_byte);
  w.u32(uint32_t(m.intra_op_threads));
  w.u8(m.record_ops);
  w.u32(m.guard_bytes);
  const bool queues = m.hardware_queues > 0;
  if (m.device != "cpu" || !m.build_dir.empty() || queues) w.str(m.device);  // optional trailing field (absent: cpu)
  if (!m.build_dir.empty() || queues) w.str(m.build_dir);                      // optional, after device
  if (queues) w.u32(m.hardware_queues);                                         // optional, after build_dir
  return std::move(w.bytes());
}
bool decode(const std::string& bytes, LoadRequest* m, std::string* why) {
  Reader r(bytes);
  uint32_t threads = 1;
  r.str(&m->so_path);
  r.str(&m->entry);
  r.u8(&m->poison_byte);
  r.u32(&threads);
  m->intra_op_threads = int(threads);
  uint8_t record = 0;
  r.u8(&record);
  m->record_ops = record != 0;
  r.u32(&m->guard_bytes);
  if (m->guard_bytes % 64 || m->guard_bytes > (1u << 20)) return (*why = "bad guard size", false);
  m->device = "cpu";
  m->build_dir.clear();
  m->hardware_queues = 0;  // the optional fields' defaults when absent
  if (r.ok() && !r.at_end()) r.str(&m->device);
  if (m->device != "cpu" && m->device != "cuda") return (*why = "bad device '" + m->device + "'", false);
  if (r.ok() && !r.at_end()) r.str(&m->build_dir);
  if (r.ok() && !r.at_end()) r.u32(&m->hardware_queues);
  if (m->hardware_queues > 1024) return (*why = "bad hardware queue count", false);
  return finish(r, why);
}

std::string encode(const LoadReply& m) {
  Writer w;
  w.u8(m.ok);
  w.str(m.error);
  w.str(m.signature);
  w.str(m.sandbox_notes);
  if (!m.device_info.empty()) w.str(m.device_info);  // optional trailing field (absent: none)
  return std::move(w.bytes());
}
bool decode(const std::string& bytes, LoadReply* m, std::string* why) {
  Reader r(bytes);
  uint8_t ok = 0;
  r.u8(&ok);
  m->ok = ok != 0;
  r.str(&m->error);
  r.str(&m->signature);
  r.str(&m->sandbox_notes);
  m->device_info.clear();
  if (r.ok() && !r.at_end()) r.str(&m->device_info);
  return finish(r, why);
}

std::string encode(const CaseRequest& m) {
  Writer w;
  w.u64(m.case_id);
  put_args(w, m.args);
  w.u32(m.repeat);
  if (m.turn_handshake) w.u8(1);
  return std::move(w.bytes());
}
bool decode(const std::string& bytes, CaseRequest* m, std::string* why) {
  Reader r(bytes);
  r.u64(&m->case_id);
  if (!get_args(r, &m->args, why)) return false;
  r.u32(&m->repeat);
  uint8_t handshake = 0;
  if (r.ok() && !r.at_end()) r.u8(&handshake);
  m->turn_handshake = handshake != 0;
  return finish(r, why);
}

// Tags of CaseReply's optional trailing sections.
constexpr uint8_t kHostCopiesTag = 1;
constexpr uint8_t kPhasesTag = 2;
constexpr uint8_t kDriverMemoryTag = 3;

std::string encode(const CaseReply& m) {
  Writer w;
  w.u64(m.case_id);
  w.u32(uint32_t(m.code));
  w.str(m.message);
  w.u32(uint32_t(m.calls.size()));
  for (const CallOutputs& c : m.calls) {
    w.u32(uint32_t(c.outputs.size()));
    for (size_t i = 0; i < c.outputs.size(); ++i) {
      put_tensor(w, c.outputs[i]);
      w.str(c.devices[i]);
      w.u32(uint32_t(c.alias_input[i]));
      w.u32(uint32_t(c.alias_output[i]));
      w.u8(c.output_contiguous[i]);
      w.u32(uint32_t(i < c.alias_previous_call.size() ? c.alias_previous_call[i] : -1));
    }
  }
  w.u8(m.inputs_unchanged);
  w.f64(m.kernel_seconds);
  w.u32(uint32_t(m.aten_ops.size()));
  for (const std::string& op : m.aten_ops) w.str(op);
  w.u32(uint32_t(m.memory_findings.size()));
  for (const MemoryFinding& f : m.memory_findings) {
    w.u8(uint8_t(f.kind));
    w.u8(uint8_t(f.buffer));
    w.u32(uint32_t(f.index));
    w.i64(f.offset);
    w.i64(f.bytes);
    w.i64(f.buffer_bytes);
  }
  if (!m.host_copies.empty()) {  // optional tagged section (absent: none)
    w.u8(kHostCopiesTag);
    w.u32(uint32_t(m.host_copies.size()));
    for (const HostCopy& h : m.host_copies) {
      w.str(h.op);
      w.u32(uint32_t(h.input));
      w.str(h.from);
      w.i64(h.bytes);
    }
  }
  if (m.has_phases) {  // optional tagged section (absent: not measured)
    w.u8(kPhasesTag);
    w.f64(m.poison_seconds);
    w.f64(m.to_device_seconds);
    w.f64(m.from_device_seconds);
    w.f64(m.check_seconds);
    w.f64(m.case_seconds);
    w.f64(m.reserve_seconds);
    w.f64(m.poison_release_seconds);
  }
  if (m.driver_allocs >= 0) {  // optional tagged section (absent: not counted)
    w.u8(kDriverMemoryTag);
    w.i64(m.driver_allocs);
    w.i64(m.driver_frees);
  }
  return std::move(w.bytes());
}
bool decode(const std::string& bytes, CaseReply* m, std::string* why) {
  Reader r(bytes);
  uint32_t code = 0, ncalls = 0;
  r.u64(&m->case_id);
  r.u32(&code);
  m->code = int32_t(code);
  r.str(&m->message);
  if (!r.u32(&ncalls) || ncalls > 4096) return (*why = "bad call count", false);
  m->calls.resize(ncalls);
  for (CallOutputs& c : m->calls) {
    uint32_t n;
    if (!r.u32(&n) || n > 256) return (*why = "bad output count", false);
    c.outputs.resize(n);
    c.devices.resize(n);
    c.alias_input.resize(n);
    c.alias_output.resize(n);
    c.output_contiguous.resize(n);
    c.alias_previous_call.resize(n);
    for (uint32_t i = 0; i < n; ++i) {
      if (!get_tensor(r, &c.outputs[i], why)) {
        *why = "output " + std::to_string(i) + " of call " + std::to_string(&c - m->calls.data()) + ": " + *why;
        return false;
      }
      uint32_t ai = 0, ao = 0;
      uint8_t contig = 0;
      r.str(&c.devices[i]);
      r.u32(&ai);
      r.u32(&ao);
      r.u8(&contig);
      uint32_t ap = 0;
      r.u32(&ap);
      c.alias_previous_call[i] = int32_t(ap);
      c.alias_input[i] = int32_t(ai);
      c.alias_output[i] = int32_t(ao);
      c.output_contiguous[i] = contig != 0;
    }
  }
  uint8_t unchanged = 1;
  r.u8(&unchanged);
  m->inputs_unchanged = unchanged != 0;
  r.f64(&m->kernel_seconds);
  uint32_t nops = 0;
  if (!r.u32(&nops) || nops > 65536) return (*why = "bad operator count", false);
  m->aten_ops.resize(nops);
  for (std::string& op : m->aten_ops) r.str(&op, 4096);
  uint32_t nfind = 0;
  if (!r.u32(&nfind) || nfind > 4096) return (*why = "bad memory finding count", false);
  m->memory_findings.resize(nfind);
  for (MemoryFinding& f : m->memory_findings) {
    uint8_t kind = 0, buffer = 0;
    uint32_t index = 0;
    r.u8(&kind);
    r.u8(&buffer);
    if (kind > 2 || buffer > 3) return (*why = "bad memory finding", false);
    f.kind = MemoryFinding::Kind(kind);
    f.buffer = MemoryFinding::Buffer(buffer);
    r.u32(&index);
    f.index = int32_t(index);
    r.i64(&f.offset);
    r.i64(&f.bytes);
    r.i64(&f.buffer_bytes);
  }
  m->host_copies.clear();
  m->has_phases = false;
  m->poison_seconds = m->to_device_seconds = m->from_device_seconds = m->check_seconds = m->case_seconds = m->reserve_seconds = 0;
  m->poison_release_seconds = 0;
  m->driver_allocs = m->driver_frees = -1;
  while (r.ok() && !r.at_end()) {  // tagged optional sections
    uint8_t tag = 0;
    r.u8(&tag);
    if (tag == kPhasesTag) {
      m->has_phases = true;
      r.f64(&m->poison_seconds);
      r.f64(&m->to_device_seconds);
      r.f64(&m->from_device_seconds);
      r.f64(&m->check_seconds);
      r.f64(&m->case_seconds);
      r.f64(&m->reserve_seconds);
      r.f64(&m->poison_release_seconds);
      continue;
    }
    if (tag == kDriverMemoryTag) {
      r.i64(&m->driver_allocs);
      r.i64(&m->driver_frees);
      continue;
    }
    if (tag != kHostCopiesTag) return (*why = "unknown case reply section " + std::to_string(tag), false);
    uint32_t n = 0;
    if (!r.u32(&n) || n > 4096) return (*why = "bad host copy count", false);
    m->host_copies.resize(n);
    for (HostCopy& h : m->host_copies) {
      uint32_t input = 0;
      r.str(&h.op, 4096);
      r.u32(&input);
      h.input = int32_t(input);
      r.str(&h.from, 256);
      r.i64(&h.bytes);
    }
  }
  return finish(r, why);
}

}  // namespace gauntlet::wire
