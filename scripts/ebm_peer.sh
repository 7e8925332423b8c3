#!/usr/bin/env bash
# f and ∇_x f of the Table 1 ResNet energy for a batch of binary 28×28 images: ours
# (crates/dlp-tensor/examples/ebm_bench.rs, candle, f32) against the same network in PyTorch
# (scripts/ebm_peer.py, f32), at 1 and 2 threads, interleaved ROUNDS times in one sitting.
# The peer first checks its f and ∇f against ours on the same parameters and batch.
# Needs a python with torch: PEER_PYTHON (default: the peer harness's venv,
# ~/.cache/dlp-peer/venv-*/bin/python; `bash bench/peer/setup.sh` makes one).
# CHANNELS (64), BATCH (100), REPS (5), ROUNDS (3). Writes JSON lines to stdout.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
rounds="${ROUNDS:-3}" reps="${REPS:-5}" channels="${CHANNELS:-64}" batch="${BATCH:-100}"
py="${PEER_PYTHON:-$(ls ~/.cache/dlp-peer/venv-*/bin/python 2>/dev/null | head -n 1)}"
if [ -z "$py" ] || ! "$py" -c 'import torch' 2>/dev/null; then
    echo "error: no python with torch (set PEER_PYTHON; bash bench/peer/setup.sh makes one)" >&2
    exit 2
fi
cargo build --release --quiet -p dlp-tensor --example ebm_bench
bench="${CARGO_TARGET_DIR:-target}/release/examples/ebm_bench"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
EBM_BENCH_DUMP="$tmp/ebm.safetensors" RAYON_NUM_THREADS=1 "$bench" "$channels" "$batch" 1 >/dev/null
load() { cut -d' ' -f1 /proc/loadavg; }
for r in $(seq "$rounds"); do
    for t in 1 2; do
        RAYON_NUM_THREADS="$t" "$bench" "$channels" "$batch" "$reps" |
            python3 -c "import json,sys; r=json.load(sys.stdin); r.update(ours='dlp', round=$r, load1=$(load)); print(json.dumps(r))"
        "$py" -W ignore scripts/ebm_peer.py "$tmp/ebm.safetensors" --threads "$t" --reps "$reps" |
            python3 -c "import json,sys; r=json.load(sys.stdin); r.update(round=$r, load1=$(load)); print(json.dumps(r))"
    done
done
