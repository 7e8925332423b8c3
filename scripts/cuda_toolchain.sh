#!/usr/bin/env bash
# The CUDA toolchain for building dlp's `cuda` feature on a machine without one (no GPU, no
# nvcc), following the project's CUDA notes: NVIDIA's CUDA 13.0 wheels from PyPI in a venv
# under target/cuda-toolchain/, unversioned .so links for the linker, and a stub libcuda.so
# (the driver library no wheel ships; only for linking — the GPU machine loads its real
# libcuda.so.1). Prints the environment to `eval` before `cargo build --features cuda`.
# Usage: eval "$(scripts/cuda_toolchain.sh)"
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="$root/target/cuda-toolchain/venv"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv" >&2
fi
if [ ! -d "$venv/lib" ] || ! ls "$venv"/lib/python3*/site-packages/nvidia/cu13/bin/nvcc >/dev/null 2>&1; then
    "$venv/bin/pip" install --quiet nvidia-cuda-nvcc==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-nvvm==13.0.88 \
        nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85 nvidia-cublas==13.0.2.14 \
        nvidia-curand==10.4.0.35 nvidia-cuda-nvrtc==13.0.88 >&2
fi
cu13="$(ls -d "$venv"/lib/python3*/site-packages/nvidia/cu13 | head -n 1)"
# 1. Unversioned names for the linker.
for lib in libcublas libcublasLt libcudart libcurand libnvrtc; do
    if [ ! -e "$cu13/lib/$lib.so" ]; then
        real="$(ls "$cu13"/lib/$lib.so.* 2>/dev/null | sort | head -n 1)"
        if [ -z "$real" ]; then
            echo "error: $lib.so.* not found in $cu13/lib" >&2
            exit 2
        fi
        ln -s "$(basename "$real")" "$cu13/lib/$lib.so"
    fi
done
# 2. A stub libcuda.so: every cu* driver function cudarc binds, returning
#    CUDA_ERROR_STUB_LIBRARY (34).
if [ ! -e "$cu13/lib/stubs/libcuda.so" ]; then
    bindings="$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/cudarc-0.19.*/src/driver/sys | sort | tail -n 1)"
    if [ -z "$bindings" ]; then
        echo "error: cudarc 0.19 sources not found (run cargo fetch first)" >&2
        exit 2
    fi
    mkdir -p "$cu13/lib/stubs"
    grep -ohE "pub (unsafe )?fn cu[A-Za-z0-9_]+" "$bindings"/*.rs | sed -E 's/.* fn //' | sort -u |
        sed 's/.*/int &(void) { return 34; }/' >"$cu13/lib/stubs/libcuda_stub.c"
    gcc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$cu13/lib/stubs/libcuda.so" "$cu13/lib/stubs/libcuda_stub.c"
fi
cat <<ENV
export PATH="$cu13/bin:\$PATH"
export CUDA_HOME="$cu13" CUDA_ROOT="$cu13" CUDA_PATH="$cu13" CUDA_TOOLKIT_ROOT_DIR="$cu13"
export CUDA_COMPUTE_CAP="\${CUDA_COMPUTE_CAP:-90}"
export CUDARC_CUDA_VERSION=13000
export LIBRARY_PATH="$cu13/lib:$cu13/lib/stubs:\${LIBRARY_PATH:-}"
ENV
