#!/usr/bin/env bash
# Our sweep and the peer's (official PyTorch port, numpy, C floor) back to back, joined:
#   scripts/bench_peer.sh [--quick] [OUTDIR]          (default OUTDIR: results/bench)
# Order: rust (fast + generic paths), peer run_all.sh, rust again — so that load drift on
# this shared machine shows up as the spread between our two passes. Writes
#   OUTDIR/{rust.jsonl, peer.jsonl, summary.md, speedup.md, bench.csv, bench.json, ns_per_spin.svg}
# PEER_DIR must name the peer harness (a port of the official code with run_all.sh, setup.sh,
# summarize.py); it is not part of the repository, so there is no default. Without it, run
# our side alone: `dlp bench [--quick] --path both --out FILE`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
quick=() out="$root/results/bench"
for a in "$@"; do
  case "$a" in
    --quick) quick=(--quick) ;;
    -*) echo "error: unknown option $a (usage: bench_peer.sh [--quick] [OUTDIR])" >&2; exit 2 ;;
    *) out="$a" ;;
  esac
done
if [ -z "${PEER_DIR:-}" ]; then
  echo "error: set PEER_DIR to the peer harness (not in the repository); our side alone: cargo run --release -p dlp-cli -- bench --path both" >&2
  exit 2
fi
peer="$PEER_DIR"
[ -f "$peer/run_all.sh" ] || { echo "error: peer harness not found in $peer (PEER_DIR)" >&2; exit 2; }
mkdir -p "$out"
start=$(date +%s)
(cd "$root" && cargo build --release --quiet -p dlp-cli)
dlp="$root/target/release/dlp"
py="$(bash "$peer/setup.sh" --print-python)"
echo "== rust pass 1 (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
"$dlp" bench "${quick[@]}" --path both --out "$out/rust-1.jsonl"
echo "== peer (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
bash "$peer/run_all.sh" "${quick[@]}" "$out/peer.jsonl" > "$out/peer-summary.md"
echo "== rust pass 2 (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
"$dlp" bench "${quick[@]}" --out "$out/rust-2.jsonl"
cat "$out/rust-1.jsonl" "$out/rust-2.jsonl" > "$out/rust.jsonl"
rm -f "$out/rust-1.jsonl" "$out/rust-2.jsonl"
"$py" "$peer/summarize.py" "$out/peer.jsonl" "$out/rust.jsonl" > "$out/summary.md"
"$py" "$peer/summarize.py" "$out/peer.jsonl" "$out/rust.jsonl" --base torch-port@1 > "$out/speedup.md"
python3 "$root/scripts/bench_report.py" "$out/peer.jsonl" "$out/rust.jsonl" --out "$out"
echo "== done in $(( $(date +%s) - start )) s: $out" >&2
