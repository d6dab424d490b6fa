// device=cuda: the kernel's own CUDA functions loaded at the child's start, outside any GPU turn.
#pragma once
#include <string>
#include <vector>

namespace gauntlet::worker {

// Under CUDA_MODULE_LOADING=LAZY (every CUDA child) a module is loaded at its first use, which for
// the kernel under test is its first launch: inside the first case's GPU turn, where the load's
// driver calls (device memory for the code) wait behind other processes' context creation while
// every other child waits for the turn. Preloading asks the CUDA runtime for the attributes of
// every function symbol of the kernel's shared object (its symbol tables, read from the file): the
// host stubs of its __global__ functions are among them, and asking loads their module; the other
// symbols are not registered kernels and are skipped. Nothing runs on the device.
struct PreloadResult {
  int symbols = 0;    // function symbols tried
  int kernels = 0;    // of them, registered CUDA kernels (now loaded)
  double seconds = 0;
  std::string skipped;  // why nothing was tried ("" when it ran)
};

// `handle` is the kernel's dlopen handle, `so_path` its file. GAUNTLET_CUDA_PRELOAD=0 turns it off
// (for measurements: the first launch then loads the module inside the turn, as before).
PreloadResult preload_kernel_functions(void* handle, const std::string& so_path);

// The function symbols (STT_FUNC, defined) of an ELF64 shared object's .symtab and .dynsym, as
// offsets from its load base, each once; empty (and *why) when the file is not such an object.
std::vector<unsigned long> elf_function_offsets(const std::string& path, std::string* why);

}  // namespace gauntlet::worker
