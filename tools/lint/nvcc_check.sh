#!/usr/bin/env bash
# Compile-checks CUDA corpus kernels (.cu) with nvcc on a machine without a GPU: object code only,
# against the torch headers of Debian's libtorch-dev, for sm_90 (the H200's). Catches what a kernel
# author can get wrong before a device run (types, dispatch over double, missing overloads).
# Usage: tools/lint/nvcc_check.sh FILE.cu...   (exit 1 if any file fails; 2 without nvcc)
set -uo pipefail
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
if [ ! -x "$NVCC" ]; then echo "nvcc_check: no nvcc (set NVCC=...)" >&2; exit 2; fi
if [ $# -eq 0 ]; then echo "usage: $0 FILE.cu..." >&2; exit 2; fi
# Debian's headers lack the CMake-generated c10/cuda/impl/cuda_cmake_macros.h; a one-line stand-in
# (shared libraries, as every torch build that cpp_extension links against).
stub=$(mktemp -d)
trap 'rm -rf "$stub"' EXIT
mkdir -p "$stub/c10/cuda/impl"
printf '#pragma once\n#define C10_CUDA_BUILD_SHARED_LIBS\n' > "$stub/c10/cuda/impl/cuda_cmake_macros.h"
py_include=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null || echo /usr/include/python3)
failed=0
for f in "$@"; do
  if out=$("$NVCC" -std=c++17 -arch=sm_90 -c -o "$stub/unit.o" "$f" -I"$stub" -I/usr/include \
        -I/usr/include/torch/csrc/api/include -I"$py_include" -DTORCH_EXTENSION_NAME=nvcc_check \
        -DTORCH_API_INCLUDE_EXTENSION_H 2>&1); then
    echo "ok   $f"
  else
    echo "FAIL $f"
    echo "$out" | grep -E "error" | head -10
    failed=1
  fi
done
exit $failed
