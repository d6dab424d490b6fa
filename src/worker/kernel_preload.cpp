// device=cuda: the kernel's own CUDA functions loaded at the child's start (kernel_preload.h).
#include "kernel_preload.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

#include "cuda_rt.h"

namespace gauntlet::worker {

std::vector<unsigned long> elf_function_offsets(const std::string& path, std::string* why) {
  std::ifstream in(path, std::ios::binary);
  const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<unsigned long> out;
  Elf64_Ehdr eh{};
  if (file.size() < sizeof eh) return (*why = "not an ELF file: " + path, out);
  std::memcpy(&eh, file.data(), sizeof eh);
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff == 0 ||
      eh.e_shoff + uint64_t(eh.e_shnum) * sizeof(Elf64_Shdr) > file.size())
    return (*why = "not a 64-bit ELF object with section headers: " + path, out);
  std::vector<Elf64_Shdr> sections(eh.e_shnum);
  std::memcpy(sections.data(), file.data() + eh.e_shoff, eh.e_shnum * sizeof(Elf64_Shdr));
  for (const Elf64_Shdr& s : sections) {
    if ((s.sh_type != SHT_SYMTAB && s.sh_type != SHT_DYNSYM) || s.sh_entsize != sizeof(Elf64_Sym)) continue;
    if (s.sh_offset + s.sh_size > file.size()) continue;
    for (uint64_t off = s.sh_offset; off + sizeof(Elf64_Sym) <= s.sh_offset + s.sh_size; off += sizeof(Elf64_Sym)) {
      Elf64_Sym sym{};
      std::memcpy(&sym, file.data() + off, sizeof sym);
      if (ELF64_ST_TYPE(sym.st_info) == STT_FUNC && sym.st_shndx != SHN_UNDEF && sym.st_value != 0)
        out.push_back(sym.st_value);
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  if (out.empty()) *why = "no defined function symbols in " + path;
  return out;
}

PreloadResult preload_kernel_functions(void* handle, const std::string& so_path) {
  PreloadResult r;
  const char* off = std::getenv("GAUNTLET_CUDA_PRELOAD");
  if (off && std::string(off) == "0") return (r.skipped = "GAUNTLET_CUDA_PRELOAD=0", r);
  // Under an injected CUDA tool (compute-sanitizer, a profiler) the probes' error returns would be
  // reported as the kernel's failed API calls.
  if (const char* tool = std::getenv("CUDA_INJECTION64_PATH"); tool && *tool)
    return (r.skipped = "a CUDA tool is injected (CUDA_INJECTION64_PATH)", r);
  const auto t0 = std::chrono::steady_clock::now();
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || !map) return (r.skipped = "no link map for the kernel", r);
  std::string why;
  const std::vector<unsigned long> offsets = elf_function_offsets(so_path, &why);
  if (offsets.empty()) return (r.skipped = why, r);
  for (unsigned long o : offsets) {
    ++r.symbols;
    if (cuda_rt::load_kernel_function(reinterpret_cast<const void*>(map->l_addr + o))) ++r.kernels;
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace gauntlet::worker
