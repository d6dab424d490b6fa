// The worker's CPU allocator: sentinel-filled fresh memory and, for the memory gate, canaries around every buffer.
#include "guarded_alloc.h"

#include <c10/core/CPUAllocator.h>

#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

namespace gauntlet::worker {
namespace {

using wire::MemoryFinding;

// The canary byte at position i of a guard region. Position-dependent (odd multiplier: 256
// distinct values), so a kernel that stores a constant, zeros, or one of the poison bytes past an
// end changes it almost everywhere.
inline uint8_t canary(size_t i) { return uint8_t(i * 0x9Du + 0x3Cu); }

struct Record {
  at::DataPtr base;    // the underlying allocation: guard, user bytes, guard
  size_t bytes = 0;    // the size the caller asked for
  uint64_t epoch = 0;  // the case it was allocated in
  bool reported = false;
};

struct State {
  at::Allocator* base = nullptr;
  uint8_t poison = 0xA5;
  bool poisoning = true;  // off while the timing gate times calls (the fill would be timed too)
  size_t guard = 0;
  uint64_t epoch = 0;
  std::mutex mu;
  std::unordered_map<void*, Record> live;
  std::vector<MemoryFinding> freed;  // breaches found at free time, this case
};
State g;

// The first changed canary byte of each region, with the span up to the last changed one.
void scan(const char* user, const Record& r, std::vector<MemoryFinding>* out, MemoryFinding::Buffer buf, int32_t index) {
  const size_t G = g.guard;
  auto region = [&](const unsigned char* p, bool before) {
    int64_t first = -1, last = -1;
    for (size_t i = 0; i < G; ++i)
      if (p[i] != canary(i)) {
        if (first < 0) first = int64_t(i);
        last = int64_t(i);
      }
    if (first < 0) return;
    MemoryFinding f;
    f.kind = before ? MemoryFinding::Kind::CanaryBefore : MemoryFinding::Kind::CanaryAfter;
    f.buffer = buf;
    f.index = index;
    f.offset = before ? first - int64_t(G) : int64_t(r.bytes) + first;
    f.bytes = last - first + 1;
    f.buffer_bytes = int64_t(r.bytes);
    out->push_back(f);
  };
  region(reinterpret_cast<const unsigned char*>(user) - G, true);
  region(reinterpret_cast<const unsigned char*>(user) + r.bytes, false);
}

void guarded_delete(void* user) {
  at::DataPtr base;
  {
    std::lock_guard<std::mutex> lock(g.mu);
    auto it = g.live.find(user);
    if (it == g.live.end()) return;  // not ours (cannot happen: this deleter is only on our pointers)
    if (!it->second.reported && g.freed.size() < 64) {
      const bool this_case = it->second.epoch == g.epoch;
      scan(static_cast<const char*>(user), it->second, &g.freed,
           this_case ? MemoryFinding::Buffer::Temporary : MemoryFinding::Buffer::Other, -1);
    }
    base = std::move(it->second.base);
    g.live.erase(it);
  }
  // `base` frees the whole block here, outside the lock.
}

struct GuardingAllocator final : at::Allocator {
  // LibTorch 1.13 declares allocate() const; 2.3+ declares it non-const and adds copy_data(). Both
  // forms are defined (without `override`), so whichever the base declares is overridden.
  at::DataPtr allocate(size_t n) { return allocate_impl(n); }
  at::DataPtr allocate(size_t n) const { return allocate_impl(n); }
  void copy_data(void* dest, const void* src, std::size_t count) const {
    if (count) std::memcpy(dest, src, count);
  }
  at::DataPtr allocate_impl(size_t n) const {
    if (g.guard == 0) {
      at::DataPtr p = g.base->allocate(n);
      if (n && p.get() && g.poisoning) std::memset(p.get(), g.poison, n);
      return p;
    }
    const size_t G = g.guard;
    at::DataPtr b = g.base->allocate(n + 2 * G);
    auto* p = static_cast<unsigned char*>(b.get());
    if (!p) return b;
    for (size_t i = 0; i < G; ++i) p[i] = p[G + n + i] = canary(i);
    if (n && g.poisoning) std::memset(p + G, g.poison, n);
    void* user = p + G;
    {
      std::lock_guard<std::mutex> lock(g.mu);
      Record& r = g.live[user];
      r.base = std::move(b);
      r.bytes = n;
      r.epoch = g.epoch;
    }
    // data == context, so raw_allocate()/raw_deleter() keep working for LibTorch code that uses them.
    return at::DataPtr(user, user, &guarded_delete, at::Device(at::kCPU));
  }
  at::DeleterFnPtr raw_deleter() const override { return g.guard ? &guarded_delete : g.base->raw_deleter(); }
};
GuardingAllocator g_allocator;

const void* storage_ptr(const at::Tensor& t) {
  return t.defined() && t.has_storage() ? t.storage().data() : nullptr;
}

}  // namespace

void install_allocator(uint8_t poison, uint32_t guard_bytes) {
  g.base = c10::GetCPUAllocator();
  g.poison = poison;
  g.guard = guard_bytes;
  c10::SetCPUAllocator(&g_allocator, /*priority=*/100);
}

bool guards_enabled() { return g.guard > 0; }

void set_poisoning(bool on) { g.poisoning = on; }

void begin_case() {
  std::lock_guard<std::mutex> lock(g.mu);
  ++g.epoch;
  g.freed.clear();
}

std::vector<MemoryFinding> check_guards(const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& outputs) {
  std::vector<MemoryFinding> out;
  if (!g.guard) return out;
  std::lock_guard<std::mutex> lock(g.mu);
  out.swap(g.freed);
  for (auto& [user, r] : g.live) {
    if (r.reported) continue;
    MemoryFinding::Buffer buf = r.epoch == g.epoch ? MemoryFinding::Buffer::Temporary : MemoryFinding::Buffer::Other;
    int32_t index = -1;
    for (size_t j = 0; j < inputs.size() && index < 0; ++j)
      if (storage_ptr(inputs[j]) == user) buf = MemoryFinding::Buffer::Input, index = int32_t(j);
    for (size_t i = 0; i < outputs.size() && index < 0; ++i)
      if (storage_ptr(outputs[i]) == user) buf = MemoryFinding::Buffer::Output, index = int32_t(i);
    const size_t before = out.size();
    if (out.size() < 64) scan(static_cast<const char*>(user), r, &out, buf, index);
    if (out.size() > before) r.reported = true;  // once per buffer, not again at every later check
  }
  return out;
}

void note_modified_inputs(const std::vector<at::Tensor>& inputs, const std::vector<std::string>& before,
                          std::vector<MemoryFinding>* out) {
  for (size_t j = 0; j < inputs.size() && j < before.size(); ++j) {
    if (!inputs[j].has_storage()) continue;
    if (inputs[j].storage().nbytes() != before[j].size()) {  // resized in place
      MemoryFinding f;
      f.kind = MemoryFinding::Kind::InputModified;
      f.buffer = MemoryFinding::Buffer::Input;
      f.index = int32_t(j);
      f.bytes = int64_t(inputs[j].storage().nbytes()) - int64_t(before[j].size());
      f.buffer_bytes = int64_t(before[j].size());
      out->push_back(f);
      continue;
    }
    const auto* now = static_cast<const unsigned char*>(inputs[j].storage().data());
    const auto* was = reinterpret_cast<const unsigned char*>(before[j].data());
    MemoryFinding f;
    f.kind = MemoryFinding::Kind::InputModified;
    f.buffer = MemoryFinding::Buffer::Input;
    f.index = int32_t(j);
    f.offset = -1;
    f.buffer_bytes = int64_t(before[j].size());
    for (size_t i = 0; i < before[j].size(); ++i)
      if (now[i] != was[i]) {
        if (f.offset < 0) f.offset = int64_t(i);
        ++f.bytes;
      }
    if (f.bytes) out->push_back(f);
  }
}

}  // namespace gauntlet::worker
