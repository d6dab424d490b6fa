// A Python module's build step: its extensions compiled once, by one sandboxed child, in a directory of its own.
#pragma once

#include <string>

#include "gauntlet/builder.h"
#include "gauntlet/manifest.h"
#include "gauntlet/sandbox.h"

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
// A load_inline C++ unit is offered a precompiled torch/extension.h (docs/modules.md, "Builds"),
// built once per toolchain under module_builds_root(). One whose own extra_cflags (-O3) have no
// header yet builds without; with this on (an audit's build-ahead lane, where modules follow),
// its build step then makes a header with those flags for the modules after it. Off by default:
// a lone verify would wait for a header nothing else uses.
BuildResult build_python_module(const KernelManifest& manifest, Launcher& launcher);
void build_pch_variants_on_demand(bool on);

}  // namespace gauntlet
