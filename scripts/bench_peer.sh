#!/usr/bin/env bash
# `just bench-peer`: our `dlp bench` sweep and the peer's (bench/peer: a port of the official
# PyTorch samplers, a numpy reference, a C floor) in one run, joined:
#   scripts/bench_peer.sh [--quick] [--device cpu|cuda] [--seed S] [--no-paper] [OUTDIR]
# Sets up what is missing first (bench/peer/setup.sh: Debian's CPU-only torch via apt-get when
# root, else one error line with the install command; on cuda the machine's own PyTorch).
# cpu: rust (fast + generic paths), peer (C floor, numpy, torch port), rust again, so load drift
#   on a shared machine shows as the spread between our two passes.
# cuda: the port on the GPU (bench/peer/peer_gpu.py), dlp at 1 and $(nproc) threads on the same
#   configurations, and dlp's device-resident chains on the GPU (`dlp bench --device cuda:0`;
#   built with the cuda feature here, or DLP_BIN=<prebuilt dlp>).
# Writes OUTDIR (default results/bench, replaced as a whole at the end): rust.jsonl, peer.jsonl,
#   summary.md, speedup.md, ratios.md, bench.csv, bench.json, ns_per_spin.svg, meta.json; and,
#   unless --no-paper, ratios.md into paper/performance.md between the markers
#   <!-- bench-peer:<device>:begin --> and <!-- bench-peer:<device>:end -->.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
usage="usage: just bench-peer [--quick] [--device cpu|cuda] [--seed S] [--no-paper] [OUTDIR]"
quick=() device=cpu seed=0 paper=1 out="$root/results/bench"
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=(--quick) ;;
    --device) device="${2:-}"; shift ;;
    --device=*) device="${1#--device=}" ;;
    --seed) seed="${2:-}"; shift ;;
    --seed=*) seed="${1#--seed=}" ;;
    --no-paper) paper=0 ;;
    -*) echo "error: unknown option $1 ($usage)" >&2; exit 2 ;;
    *) out="$1" ;;
  esac
  shift
done
case "$device" in cpu | cuda) ;; *) echo "error: --device must be cpu or cuda, got '$device' ($usage)" >&2; exit 2 ;; esac
[[ "$seed" =~ ^[0-9]+$ ]] || { echo "error: --seed must be a non-negative integer, got '$seed'" >&2; exit 2; }
start=$(date +%s)
py="$(bash "$root/bench/peer/setup.sh" --device "$device")"
# DLP_BIN: a prebuilt dlp (e.g. the cuda build of `just gpu-bundle` on a machine without Rust).
if [ -n "${DLP_BIN:-}" ]; then
  dlp="$DLP_BIN"
elif [ "$device" = cuda ]; then
  (cd "$root" && eval "$(scripts/cuda_toolchain.sh)" && CARGO_TARGET_DIR="$root/target/cuda" \
    cargo build --release --quiet -p dlp-cli --features cuda)
  dlp="$root/target/cuda/release/dlp"
else
  (cd "$root" && cargo build --release --quiet -p dlp-cli)
  dlp="${CARGO_TARGET_DIR:-$root/target}/release/dlp"
fi
mkdir -p "$(dirname "$out")"
tmp="$(mktemp -d "$out.tmp.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
loads=()
phase() { loads+=("$1: $(cut -d' ' -f1 /proc/loadavg)"); echo "== $1 (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2; }
if [ "$device" = cpu ]; then
  phase "rust pass 1"
  "$dlp" bench "${quick[@]}" --seed "$seed" --path both --out "$tmp/rust-1.jsonl"
  phase "peer"
  bash "$root/bench/peer/run_all.sh" "${quick[@]}" --seed "$seed" "$tmp/peer.jsonl"
  phase "rust pass 2"
  "$dlp" bench "${quick[@]}" --seed "$seed" --out "$tmp/rust-2.jsonl"
  base=torch-port@1
else
  nt="$(nproc)"
  if [ ${#quick[@]} -gt 0 ]; then ls=100 bs=1,1024; else ls=25,50,100 bs=1,16,256,1024; fi
  phase "peer on the GPU"
  "$py" "$root/bench/peer/peer_gpu.py" --L "$ls" --B "$bs" --rbm-chains 100,1000 --seed "$seed" \
    "${quick[@]}" > "$tmp/peer.jsonl"
  phase "rust, threads 1,$nt"
  "$dlp" bench --L "$ls" --B "$bs" --sigmas 0.1 --threads "1,$nt" --rbm-chains 100 --seed "$seed" --out "$tmp/rust-1.jsonl"
  "$dlp" bench --rbm-only --rbm-chains 1000 --threads "1,$nt" --seed "$seed" --out "$tmp/rust-2.jsonl"
  phase "rust on the GPU (device-resident chains)"
  "$dlp" bench --device cuda:0 --L "$ls" --B "$bs" --sigmas 0.1 --rbm-chains 100,1000 --seed "$seed" \
    --out "$tmp/rust-3.jsonl"
  cat "$tmp/rust-3.jsonl" >> "$tmp/rust-2.jsonl"
  rm -f "$tmp/rust-3.jsonl"
  base=torch-port-cuda@1
fi
cat "$tmp/rust-1.jsonl" "$tmp/rust-2.jsonl" > "$tmp/rust.jsonl"
rm -f "$tmp/rust-1.jsonl" "$tmp/rust-2.jsonl"
phase "join"
"$py" "$root/bench/peer/summarize.py" "$tmp/peer.jsonl" "$tmp/rust.jsonl" > "$tmp/summary.md"
"$py" "$root/bench/peer/summarize.py" "$tmp/peer.jsonl" "$tmp/rust.jsonl" --base "$base" > "$tmp/speedup.md"
cpu_model="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
torch_v="$("$py" -c 'import torch; print(torch.__version__)')"
rev="$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
when="$(date -u +%Y-%m-%d)"
title="### \`just bench-peer${quick[*]:+ ${quick[*]}} --device $device\` ($when, dlp $rev, seed $seed)

Machine: $cpu_model, $(nproc) cores; torch $torch_v$([ "$device" = cuda ] && echo " on $("$py" -c 'import torch; print(torch.cuda.get_device_name(0))')"). 1-minute load at the start of each phase: $(IFS=';'; echo "${loads[*]}" | sed 's/;/, /g'). Official code = the port in \`bench/peer/port_dlp.py\` (bit-identical to upstream by \`peer_bench.py --verify\`); absolute figures on a shared machine move by up to 2× between runs, the ratios are from one run."
python3 "$root/scripts/bench_report.py" "$tmp/peer.jsonl" "$tmp/rust.jsonl" --out "$tmp" \
  --markdown "$tmp/ratios.md" --title "$title"
python3 - "$tmp/meta.json" "$device" "$seed" "${quick[*]:-}" "$rev" "$torch_v" "$cpu_model" "$(nproc)" \
  "$(( $(date +%s) - start ))" "${loads[@]}" <<'EOF'
import json, platform, sys, datetime
f, device, seed, quick, rev, torch_v, cpu, n, secs, *loads = sys.argv[1:]
json.dump(dict(command="just bench-peer", device=device, seed=int(seed), quick=quick == "--quick", dlp_revision=rev,
               torch=torch_v, cpu=cpu, cores=int(n), python=platform.python_version(), seconds=int(secs),
               load1_by_phase=loads, finished_utc=datetime.datetime.now(datetime.timezone.utc).isoformat()),
          open(f, "w"), indent=1)
EOF
# Replace OUTDIR as a whole: the new directory is complete before it takes the name. The
# DISCS peer's files (`just bench-peer-discs`, discs-peer.*) are another command's and stay.
for f in "$out"/discs-peer.csv "$out"/discs-peer.json "$out"/discs-peer.md; do
  if [ -e "$f" ]; then cp "$f" "$tmp/"; fi
done
if [ -e "$out" ]; then mv "$out" "$tmp.old"; fi
mv "$tmp" "$out"
rm -rf "$tmp.old"
trap - EXIT
if [ "$paper" = 1 ]; then
  python3 "$root/bench/peer/paper_section.py" "$root/paper/performance.md" "$device" "$out/ratios.md"
fi
echo "== done in $(( $(date +%s) - start )) s: $out" >&2
