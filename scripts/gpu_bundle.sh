#!/usr/bin/env bash
# `just gpu-bundle`: everything a lent GPU machine needs for one call of scripts/gpu_check.sh,
# built here (no GPU, no CUDA toolkit: scripts/cuda_toolchain.sh brings NVIDIA's PyPI wheels):
#   target/gpu-bundle/dlp.gz             the CLI with the `cuda` feature (dlp bench --device cuda)
#   target/gpu-bundle/cuda-tests.gz      dlp-device's tests/cuda.rs (CUDA vs CPU twin checks)
#   target/gpu-bundle/manifest.txt       revision, sizes, SHA-256
# Binaries are stripped (each embeds candle's ~33 MB of sm_90a kernels; ≈ 12 MB gzipped), so
# the bundle stays well inside the device tool's 64 MiB carry limit. The GPU machine has no
# Rust and no network: the scripts and bench/peer travel with the work tree, the bundle by
# `carry: ["target/gpu-bundle"]`. Then, on the device: `bash scripts/gpu_check.sh`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
eval "$(scripts/cuda_toolchain.sh)"
export CARGO_TARGET_DIR="$root/target/cuda"
cargo build --release -p dlp-cli --features cuda
tests_json="$(cargo test --release -p dlp-device --features cuda --test cuda --no-run --message-format=json)"
tests_bin="$(printf '%s\n' "$tests_json" | python3 -c '
import json, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "cuda":
        print(m["executable"])
' | tail -n 1)"
[ -n "$tests_bin" ] || { echo "error: no test executable for dlp-device --test cuda" >&2; exit 1; }
out="$root/target/gpu-bundle"
tmp="$(mktemp -d "$out.tmp.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
for pair in "dlp:$CARGO_TARGET_DIR/release/dlp" "cuda-tests:$tests_bin"; do
  name="${pair%%:*}" src="${pair#*:}"
  strip -o "$tmp/$name" "$src"
  gzip -9 "$tmp/$name"
done
{
  echo "dlp revision: $(git rev-parse --short HEAD)$(git diff --quiet || echo '+dirty')"
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ), CUDA_COMPUTE_CAP=$CUDA_COMPUTE_CAP"
  (cd "$tmp" && ls -l ./*.gz && sha256sum ./*.gz)
} > "$tmp/manifest.txt"
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
cat "$out/manifest.txt"
echo "bundle ready: run on the GPU machine with carry target/gpu-bundle: bash scripts/gpu_check.sh" >&2
