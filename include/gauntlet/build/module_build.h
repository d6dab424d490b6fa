// A Python module's build step: its extensions compiled once, by one sandboxed child, in a directory of its own.
#pragma once

#include <string>

#include "gauntlet/build/builder.h"
#include "gauntlet/schema/manifest.h"
#include "gauntlet/sandbox/sandbox.h"

namespace gauntlet {

// Where module builds live: $GAUNTLET_MODULE_BUILDS, else /var/tmp/gauntlet-module-builds. Not
// under ~/.cache: the build child runs as nobody when gauntlet runs as root, and root's home is
// closed to it.
std::string module_builds_root();

// The key of a module's build: sha256 over the module's bytes, its reference module's bytes and
// the toolchain (the Python interpreter, torch's version file, nvcc for CUDA modules, the worker's
// build code). Never the extension's name: different modules calling theirs "matmul_cuda" get
// different directories, and a module changed by one byte is built anew.
std::string module_build_key(const KernelManifest& manifest, std::string* error);

// The module's build step (docs/modules.md, "Builds"). A hit (an earlier build's record under
// the key, success or compile failure) returns at once; otherwise one build child of `launcher`
// (switched to Python for the call) imports and constructs the module with compilers allowed,
// writing into its directory only, while other processes wanting the same key wait on its lock.
// The result's module_dir is what gate children load from. ok false with harness_fault false is
// the module's compile error (one build-error: error and the compiler's first lines in log_head);
// harness_fault true is gauntlet's own failure (no child, no sandbox, an unwritable root).
// A load_inline C++ unit is offered the precompiled torch/extension.h headers already built for
// this toolchain (docs/modules.md, "Builds"; under $GAUNTLET_PCH_ROOT, default module_builds_root();
// GAUNTLET_PCH=0: none). With build_pch_headers_on_demand(true) (an audit, where modules follow)
// a build makes the plain header when it is missing, and one whose own extra_cflags (-O3) found no
// header makes one with those flags for the modules after it, each once per toolchain. Off (a lone
// verify): the build only takes what is there, since it would wait half a minute for a header
// that saves it a few seconds.
BuildResult build_python_module(const KernelManifest& manifest, Launcher& launcher);
void build_pch_headers_on_demand(bool on);

}  // namespace gauntlet
