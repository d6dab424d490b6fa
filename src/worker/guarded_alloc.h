// The worker's CPU allocator: sentinel-filled fresh memory and, for the memory gate, canaries around every buffer.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "gauntlet/common/wire.h"

namespace gauntlet::worker {

// Replaces LibTorch's CPU allocator. Every fresh allocation is filled with `poison` (an output
// element the kernel never writes keeps it). With guard_bytes > 0 (a multiple of 64, so the
// pointer handed out keeps c10's 64-byte alignment) each buffer also gets that many canary bytes
// before and after it, checked when it is freed and by check_guards().
void install_allocator(uint8_t poison, uint32_t guard_bytes);
bool guards_enabled();
// Turns the poison fill of fresh allocations off or on (the timing gate times calls without it).
void set_poisoning(bool on);

// Starts a case: forgets breaches found in earlier cases' frees.
void begin_case();

// Canary breaches not reported yet: those found when buffers were freed since begin_case (the
// kernel's temporaries) and those of every live buffer now. A live buffer that is the storage of
// inputs[j] or outputs[i] is named so; the rest are temporaries or other live buffers.
std::vector<wire::MemoryFinding> check_guards(const std::vector<at::Tensor>& inputs,
                                              const std::vector<at::Tensor>& outputs);

// Appends an InputModified finding (first changed byte, how many changed) for each input whose
// storage bytes differ from `before` (taken before the calls).
void note_modified_inputs(const std::vector<at::Tensor>& inputs, const std::vector<std::string>& before,
                          std::vector<wire::MemoryFinding>* out);

}  // namespace gauntlet::worker
