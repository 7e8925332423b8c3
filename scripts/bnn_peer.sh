#!/usr/bin/env bash
# One full-batch DMALA step on the binary BNN (COMPAS, H = 100, 50 chains), ours against the
# official code's (re-stated in scripts/bnn_peer.py, torch), both at 1 thread, interleaved
# ROUNDS times in one sitting; plus the GEMM peak and the BNN's share of it
# (crates/dlp-models/examples/bnn_gemm.rs). Needs `just data compas` and a python with torch:
# PEER_PYTHON (default: the peer harness's venv, ~/.cache/dlp-peer/venv-*/bin/python).
# Writes JSON lines to stdout.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
rounds="${ROUNDS:-3}"
steps="${STEPS:-10}"
py="${PEER_PYTHON:-$(ls ~/.cache/dlp-peer/venv-*/bin/python 2>/dev/null | head -n 1)}"
if [ -z "$py" ] || ! "$py" -c 'import torch' 2>/dev/null; then
    echo "error: no python with torch (set PEER_PYTHON; the peer harness's setup.sh makes one)" >&2
    exit 2
fi
if [ ! -f data/cache/compas-train.csv ]; then
    echo "error: data/cache/compas-train.csv is missing: run just data compas" >&2
    exit 2
fi
cargo build --release --quiet -p dlp-reproduce --bin table2
cargo build --release --quiet -p dlp-models --example bnn_gemm
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
for r in $(seq "$rounds"); do
    "${CARGO_TARGET_DIR:-target}/release/table2" --threads 1 --seeds 1 --steps "$steps" --every "$steps" \
        --samplers dmala@0.1 --out "$tmp/t2" >/dev/null 2>&1
    python3 -c "import json,sys; r=json.load(open('$tmp/t2/summary.json'))['rows'][0]; print(json.dumps({'ours': 'dlp', 'round': $r, 'threads': 1, 'ms_per_step': r['sampler_seconds_mean'] / $steps * 1e3, 'load1': float(open('/proc/loadavg').read().split()[0])}))"
    "$py" -W ignore scripts/bnn_peer.py --steps "$steps" --threads 1 | python3 -c "import json,sys; r=json.loads(sys.stdin.read()); r['round']=$r; r['load1']=float(open('/proc/loadavg').read().split()[0]); print(json.dumps(r))"
    "${CARGO_TARGET_DIR:-target}/release/examples/bnn_gemm"
done
