// The binary interface between the worker and a built kernel shared object (versioned table of entries).
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

namespace gauntlet {

// One argument of an entry call, in the schema's order: tensors first, then attributes.
struct KernelArg {
  enum class Kind : uint8_t { Tensor, Int, Double, Bool } kind = Kind::Tensor;
  at::Tensor tensor;
  int64_t i = 0;
  double d = 0.0;
  bool b = false;
};

// Return codes of an entry's invoke function.
enum KernelCallCode : int {
  kCallOk = 0,
  kCallException = 1,     // the kernel threw (c10::Error, std::exception, ...): message in *error
  kCallOutOfMemory = 2,   // std::bad_alloc or an allocator failure
  kCallBadArguments = 3,  // arity or kinds do not match the entry's C++ signature
};

// Calls the entry with `args`; fills `outputs` (one per returned tensor, in order).
// Never lets an exception escape.
using KernelInvokeFn = int (*)(const std::vector<KernelArg>* args, std::vector<at::Tensor>* outputs,
                               std::string* error);

struct KernelEntry {
  const char* name;        // entry function name as written in the manifest ("forward")
  const char* signature;   // deduced parameter kinds, e.g. "T,T,f64" and result, e.g. "->T"
                           // kinds: T tensor, i64 integer, f64 floating, b bool; results: T, T* (vector/tuple)
  KernelInvokeFn invoke;
};

// Exported by every built kernel: a table terminated by {nullptr, nullptr, nullptr}.
#define GAUNTLET_ENTRIES_SYMBOL "gauntlet_entries_v1"
extern "C" {
typedef const KernelEntry* (*GauntletEntriesFn)();
}

}  // namespace gauntlet
