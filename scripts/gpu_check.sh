#!/usr/bin/env bash
# Runs on a lent GPU machine (no Rust, no network; PyTorch in /opt/torch/.venv), in one call of
# the device tool with `carry: ["target/gpu-bundle"]` (built here by `just gpu-bundle`):
#   bash scripts/gpu_check.sh [--quick]
# Every section has its own time cap and the script goes on when one fails, so one call
# (≤ 10 minutes) brings back everything that worked. Writes to $OUT (default
# results/gpu-check): gpu.txt, cuda-tests.txt, dlp-cuda.jsonl, peer-cuda.jsonl, scaling.jsonl,
# bench/ (bench_report.py's join: ratios.md, bench.csv, bench.json, ns_per_spin.svg),
# sections.txt (exit code and seconds of each section).
#   1. dlp-device's CUDA checks (tests/cuda.rs): device kernels vs their CPU twins, and the
#      tensor targets of dlp-tensor and dlp-papers on cuda:0 vs the CPU.
#   2. dlp bench --device cuda:0: lattice DULA/DMALA, RBM DULA/DMALA/bg-1 (issue 21 items 2-3).
#   3. The port of the official samplers on the same GPU (bench/peer/peer_gpu.py), same sizes.
#   4. dlp bench on the CPU cores at 1..nproc threads (issue 21 item 4).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${OUT:-$root/results/gpu-check}"
quick=0
[ "${1:-}" = "--quick" ] && quick=1
mkdir -p "$out"
bundle="$root/target/gpu-bundle"
bin="$(mktemp -d)"
for f in dlp cuda-tests; do
  if [ -f "$bundle/$f.gz" ]; then gunzip -c "$bundle/$f.gz" > "$bin/$f" && chmod +x "$bin/$f"; fi
done
# The CUDA libraries of the machine's PyTorch venv and the driver's libcuda.so.1 (cuda.md §3).
venv=/opt/torch/.venv
py="$venv/bin/python"; [ -x "$py" ] || py=python3
libs="$(ls -d "$venv"/lib/python3*/site-packages/nvidia/*/lib 2>/dev/null | tr '\n' ':')"
export LD_LIBRARY_PATH="${libs}/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}"
: > "$out/sections.txt"
section() { # name cap-seconds command...
  local name="$1" cap="$2"; shift 2
  local t0=$SECONDS
  echo "== $name (cap ${cap}s)" >&2
  timeout "$cap" "$@"; local rc=$?
  echo "$name rc=$rc seconds=$((SECONDS - t0))" | tee -a "$out/sections.txt" >&2
}
{
  nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  echo "cores: $(nproc)"; grep -m1 'model name' /proc/cpuinfo
  cat "$bundle/manifest.txt" 2>/dev/null
  "$py" -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'
} > "$out/gpu.txt" 2>&1
nt="$(nproc)"
if [ "$quick" = 1 ]; then L=100 B=1024 rbmB=1000 budget=0.2 thr="1,$nt"; else L=100,256 B=256,1024 rbmB=100,1000 budget=0.5 thr="1,2,4,8,$nt"; fi
# DLP_REQUIRE_GPU: a check that cannot open cuda:0 fails instead of skipping.
section cuda-tests 150 bash -c "DLP_REQUIRE_GPU=1 '$bin/cuda-tests' --test-threads=1 > '$out/cuda-tests.txt' 2>&1"
section dlp-cuda 150 "$bin/dlp" bench --device cuda:0 --L "$L" --B "$B" --sigmas 0.1 --rbm-chains "$rbmB" \
  --budget "$budget" --out "$out/dlp-cuda.jsonl"
section peer-cuda 150 bash -c "'$py' '$root/bench/peer/peer_gpu.py' --L '$L' --B '$B' --rbm-chains '$rbmB' > '$out/peer-cuda.jsonl'"
section scaling 150 "$bin/dlp" bench --threads "$thr" --L 100 --B 256 --sigmas 0.1 --samplers dula,dmala \
  --rbm-chains 256 --rbm-samplers dmala-f32,bg-1 --budget "$budget" --out "$out/scaling.jsonl"
joined=()
for f in peer-cuda dlp-cuda scaling; do [ -s "$out/$f.jsonl" ] && joined+=("$out/$f.jsonl"); done
if [ ${#joined[@]} -gt 0 ]; then
  mkdir -p "$out/bench"
  section join 30 "$py" "$root/scripts/bench_report.py" "${joined[@]}" --out "$out/bench" --markdown "$out/bench/ratios.md" \
    --title "### GPU check ($(date -u +%Y-%m-%d), $(head -n 1 "$bundle/manifest.txt" 2>/dev/null))"
fi
cat "$out/sections.txt"
