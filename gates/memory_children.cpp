// The memory gate's poisoned, guarded children: starting and calling them, their findings, their verdicts.
#include "memory_children.h"

#include <chrono>
#include <cstdio>
#include <cstring>

#include "gauntlet/cases/judge.h"

namespace gauntlet::memory_gate {

uint8_t poison_b(const KernelManifest& m) { return is_python_module(m) && m.device == "cpu" ? 0xFE : 0xFF; }

std::string hex(uint8_t b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02X", b);
  return buf;
}

std::unique_ptr<WorkerSession> open_child(GateContext& ctx, Launcher& launcher, uint8_t poison, uint32_t guard,
                                          const std::string& so_path, GateVerdict* failed) {
  const int64_t t0 = wire::now_ms();
  std::string error;
  std::unique_ptr<WorkerSession> s = launcher.spawn(&error);
  failed->name = kGate;
  if (!s) {
    failed->status = Status::HarnessError;
    failed->category = Category::HarnessError;
    failed->message = "cannot start a sandboxed worker: " + error;
  } else {
    wire::LoadRequest req;
    req.so_path = so_path;
    req.entry = python_load_entry(ctx.manifest, ctx.manifest.entry);
    req.build_dir = ctx.manifest.module_build_dir;  // a Python module's prebuilt extensions
    req.poison_byte = poison;
    req.guard_bytes = guard;
    set_load_device(ctx, &req);
    Outcome o = s->load(req);
    if (o.kind != Outcome::Kind::Ok) {
      failed->status = status_for(o.kind);
      failed->category = o.category;
      failed->message = "loading the kernel (allocator poison " + hex(poison) + "): " + o.message;
      s.reset();
    } else if (ctx.sandbox_note.empty()) {
      ctx.sandbox_note = launcher.isolation_note() + (s->sandbox_notes().empty() ? "" : "; " + s->sandbox_notes());
    }
  }
  ctx.timing.spawn += double(wire::now_ms() - t0) / 1000.0;
  ++ctx.timing.children;
  return s;
}

Outcome timed_call(GateContext& ctx, WorkerSession& s, const Case& c, const std::vector<at::Tensor>& inputs) {
  wire::CaseRequest req;
  req.case_id = c.index;
  req.args = make_args(ctx.schema, inputs, c.attrs);
  const auto t0 = std::chrono::steady_clock::now();
  Outcome o = s.call(req);
  ctx.timing.call += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ctx.timing.kernel += o.reply.kernel_seconds;
  return o;
}

namespace {

std::string input_name(const GateContext& ctx, int32_t j) {
  return j >= 0 && size_t(j) < ctx.schema.inputs.size() ? "input '" + ctx.schema.inputs[size_t(j)].name + "'"
                                                          : "input " + std::to_string(j);
}
std::string output_name(const GateContext& ctx, size_t i) {
  return i < ctx.schema.outputs.size() ? "output '" + ctx.schema.outputs[i].name + "'" : "output " + std::to_string(i);
}

}  // namespace

std::string describe(const GateContext& ctx, const wire::MemoryFinding& f) {
  using F = wire::MemoryFinding;
  std::string buf;
  switch (f.buffer) {
    case F::Buffer::Input: buf = input_name(ctx, f.index); break;
    case F::Buffer::Output: buf = output_name(ctx, size_t(f.index)); break;
    case F::Buffer::Temporary: buf = "a temporary buffer the kernel allocated"; break;
    case F::Buffer::Other: buf = "a buffer allocated before this call"; break;
  }
  const std::string size = " (" + std::to_string(f.buffer_bytes) + " bytes)";
  if (f.kind == F::Kind::InputModified) {
    if (f.offset < 0) return buf + " resized in place by " + std::to_string(f.bytes) + " bytes";
    return buf + " modified in place: " + std::to_string(f.bytes) + " of " + std::to_string(f.buffer_bytes) +
           " bytes changed, the first at byte " + std::to_string(f.offset);
  }
  const std::string span = std::to_string(f.offset) + ".." + std::to_string(f.offset + f.bytes - 1);
  if (f.kind == F::Kind::CanaryAfter) {
    const int64_t gap = f.offset - f.buffer_bytes;
    return "write past the end of " + buf + size + ": canary bytes " + span + " changed, " +
           (gap == 0 ? std::string("starting right at its end") : "starting " + std::to_string(gap) + " bytes past its end");
  }
  return "write before the start of " + buf + size + ": canary bytes " + span + " changed";
}

bool same_bytes(const wire::CallOutputs& a, const wire::CallOutputs& b) {
  if (a.outputs.size() != b.outputs.size()) return false;
  for (size_t i = 0; i < a.outputs.size(); ++i) {
    const at::Tensor x = a.outputs[i].contiguous(), y = b.outputs[i].contiguous();
    if (x.sizes() != y.sizes() || x.scalar_type() != y.scalar_type()) return false;
    if (std::memcmp(x.data_ptr(), y.data_ptr(), size_t(x.numel()) * size_t(x.element_size())) != 0) return false;
  }
  return true;
}

std::string compare_poisons(const GateContext& ctx, const wire::CallOutputs& a, const wire::CallOutputs& b,
                            nlohmann::json* evidence) {
  if (a.outputs.size() != b.outputs.size())
    return std::to_string(b.outputs.size()) + " outputs under poison " + hex(poison_b(ctx.manifest)) + ", " +
           std::to_string(a.outputs.size()) + " under " + hex(kPoisonA);
  for (size_t i = 0; i < a.outputs.size(); ++i) {
    const at::Tensor x = a.outputs[i].contiguous(), y = b.outputs[i].contiguous();
    if (x.sizes() != y.sizes() || x.scalar_type() != y.scalar_type())
      return output_name(ctx, i) + " has another shape or dtype under poison " + hex(poison_b(ctx.manifest));
    const size_t es = size_t(x.element_size());
    const auto* p = static_cast<const unsigned char*>(x.data_ptr());
    const auto* q = static_cast<const unsigned char*>(y.data_ptr());
    const uint8_t b_byte = poison_b(ctx.manifest);
    int64_t first = -1, count = 0, unwritten = 0, first_unwritten = -1;
    for (int64_t k = 0; k < x.numel(); ++k) {
      const unsigned char* u = p + size_t(k) * es;
      const unsigned char* w = q + size_t(k) * es;
      if (std::memcmp(u, w, es) == 0) continue;
      if (first < 0) first = k;
      ++count;
      bool sentinel = true;  // the poison byte in both: the allocator's, never overwritten
      for (size_t e = 0; e < es; ++e) sentinel = sentinel && u[e] == kPoisonA && w[e] == b_byte;
      if (sentinel && first_unwritten < 0) first_unwritten = k;
      unwritten += sentinel;
    }
    if (first < 0) continue;
    *evidence = {{"output", i}, {"differing_elements", count}, {"never_written", unwritten}, {"elements", x.numel()}};
    const std::string diff = std::to_string(count) + " of " + std::to_string(x.numel()) + " elements of " +
                             output_name(ctx, i) + " differ between allocator poisons " + hex(kPoisonA) + " and " +
                             hex(poison_b(ctx.manifest));
    if (unwritten)
      return diff + "; " + std::to_string(unwritten) + " never written (they hold the poison bytes), the first at " +
             index_text(x.sizes(), first_unwritten);
    char vals[96];
    std::snprintf(vals, sizeof vals, " (%.9g vs %.9g)", x.reshape({-1})[first].item<double>(),
                  y.reshape({-1})[first].item<double>());
    return diff + ": the result depends on uninitialized memory, first at " + index_text(x.sizes(), first) + vals;
  }
  return "";
}

GateVerdict passed() {
  GateVerdict v;
  v.name = kGate;
  return v;
}

GateVerdict failure(GateContext& ctx, CaseRun& run, Category cat, const std::string& message) {
  GateVerdict v;
  v.name = kGate;
  v.cases = 1;
  v.status = Status::Fail;
  v.category = cat;
  v.message = "case " + run.c.label + ": " + message;
  note_outputs(v, run);
  v.replay = write_replay(ctx, kGate, run, v);
  return v;
}

GateVerdict error_from(GateContext& ctx, CaseRun& run, const std::string& which) {
  GateVerdict v = verdict_from_outcome(ctx, kGate, run);
  v.cases = 1;
  v.message += " (" + which + ")";
  if (v.status != Status::HarnessError) v.replay = write_replay(ctx, kGate, run, v);
  return v;
}

}  // namespace gauntlet::memory_gate
