#!/usr/bin/env bash
# `just bench-peer-discs`: DISCS's own samplers (bench/peer/discs_jax.py: a re-statement of
# google-research/discs in current JAX, CPU) and ours (`dlp discs`) on DISCS's Ising, Potts and
# RBM tasks, same run, same target, same initial and reference states, same chains and steps,
# both scored by dlp's DISCS ESS:
#   scripts/bench_peer_discs.sh [--quick] [--seed S] [--chains C] [--steps N] [--tasks a,b]
#       [--samplers dmala,gwg,pas] [--threads T] [--no-paper] [OUTDIR]
# --quick: ising only, 4 chains × 60 steps (seconds plus JAX's compile time; the CI test).
# Default: ising, potts, rbm-standin; 100 chains (DISCS's) × 2,000 steps (DISCS: 100,000).
# Per task: `dlp discs --export` writes the task, the JAX peer runs, then `dlp discs --peer`
# runs ours and scores both. Writes OUTDIR/discs-peer.{csv,json,md} (default results/bench)
# and, unless --no-paper, the table into paper/performance.md and paper/discs.md between
# <!-- bench-peer:discs:begin --> and <!-- bench-peer:discs:end -->.
# PEER_PYTHON: a Python with jax (else bench/peer/setup.sh --jax makes one); DLP_BIN: a built
# dlp (else a release build).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
usage="usage: just bench-peer-discs [--quick] [--seed S] [--chains C] [--steps N] [--tasks a,b] [--samplers a,b] [--threads T] [--no-paper] [OUTDIR]"
quick=0 seed=0 paper=1 out="$root/results/bench" chains="" steps="" tasks="" samplers=dmala,gwg,pas threads=1
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --seed) seed="${2:-}"; shift ;;
    --chains) chains="${2:-}"; shift ;;
    --steps) steps="${2:-}"; shift ;;
    --tasks) tasks="${2:-}"; shift ;;
    --samplers) samplers="${2:-}"; shift ;;
    --threads) threads="${2:-}"; shift ;;
    --no-paper) paper=0 ;;
    -*) echo "error: unknown option $1 ($usage)" >&2; exit 2 ;;
    *) out="$1" ;;
  esac
  shift
done
for v in seed threads ${chains:+chains} ${steps:+steps}; do
  [[ "${!v}" =~ ^[0-9]+$ ]] || { echo "error: --$v must be a non-negative integer, got '${!v}'" >&2; exit 2; }
done
if [ "$quick" = 1 ]; then
  : "${tasks:=ising}" "${chains:=4}" "${steps:=60}"
else
  : "${tasks:=ising,potts,rbm-standin}" "${chains:=100}" "${steps:=2000}"
fi
start=$(date +%s)
py="${PEER_PYTHON:-$(bash "$root/bench/peer/setup.sh" --jax)}"
"$py" -c 'import jax' 2>/dev/null || { echo "error: $py cannot import jax (pip install 'jax[cpu]', or unset PEER_PYTHON)" >&2; exit 2; }
if [ -n "${DLP_BIN:-}" ]; then
  dlp="$DLP_BIN"
else
  (cd "$root" && cargo build --release --quiet -p dlp-cli)
  dlp="${CARGO_TARGET_DIR:-$root/target}/release/dlp"
fi
mkdir -p "$out"
tmp="$(mktemp -d "$out/.discs-peer.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
loads=()
phase() { loads+=("$1: $(cut -d' ' -f1 /proc/loadavg)"); echo "== $1 (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2; }
IFS=, read -r -a task_list <<< "$tasks"
for t in "${task_list[@]}"; do
  "$dlp" discs --task "$t" --chains "$chains" --seed "$seed" --export "$tmp/$t.task.json"
  phase "DISCS (JAX) on $t"
  "$py" "$root/bench/peer/discs_jax.py" --task-file "$tmp/$t.task.json" --samplers "$samplers" \
    --steps "$steps" --seed "$seed" --threads "$threads" --out "$tmp"
  phase "ours on $t, and the ESS of both"
  "$dlp" discs --task "$t" --samplers "$samplers" --chains "$chains" --steps "$steps" --seed "$seed" \
    --threads "$threads" --peer "$tmp/jax-$t.jsonl" --out "$tmp/$t.jsonl"
done
rev="$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
cpu_model="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
jax_v="$("$py" -c 'import jax; print(jax.__version__)')"
flag=""; [ "$quick" = 1 ] && flag=" --quick"
title="### \`just bench-peer-discs$flag\` ($(date -u +%Y-%m-%d), dlp $rev, seed $seed)

Tasks $tasks; $chains chains × $steps steps (DISCS: 100 × 100,000), burn-in ⌊steps/2⌋ (DISCS's ess_ratio 0.5), same initial and reference states on both sides; $threads thread(s) each (XLA: \`intra_op_parallelism_threads\`). Machine: $cpu_model, $(nproc) cores, shared; 1-minute load at the start of each phase: $(IFS=';'; echo "${loads[*]}" | sed 's/;/, /g'). DISCS = \`bench/peer/discs_jax.py\` (DISCS's DMALA, GWG, path-auxiliary re-stated in JAX $jax_v, one jit-compiled step over all chains; seconds = its kept steps' step calls, each blocked until ready, compile time excluded); ours = \`dlp discs\` (\`dlp\` $( [ -n "${DLP_BIN:-}" ] && echo "from DLP_BIN" || echo "release build"); seconds = wall time of the kept steps). ESS: DISCS's (per-chain TFP ESS of the Hamming/L1 distance to the reference state, mean over chains), computed by \`dlp_core::stats::DiscsEss\` for both. Ratio = ours / DISCS from this one run."
notes="ESS per evaluation uses each side's own count: ours the density + gradient evaluations per chain in the kept steps (DMALA, GWG and PAS cache f and ∇f: 2 per step), DISCS's \`num_ll_calls\` × ess_ratio (4 per step for all three). Not the same samplers in every row: DISCS's \`gwg\` default adapts the number of draws (binary) toward 0.574 and its categorical GWG sums all chains' move log-probabilities in its MH ratio (re-stated as it runs, see discs_jax.py); ours is \`gwg\` (one flip, no adaptation). Our \`pas\` refuses categorical spaces."
python3 - "$tmp/meta.json" "$seed" "$quick" "$rev" "$jax_v" "$cpu_model" "$(nproc)" "$chains" "$steps" "$tasks" \
  "$samplers" "$threads" "$(( $(date +%s) - start ))" "${loads[@]}" <<'EOF'
import json, platform, sys, datetime
f, seed, quick, rev, jax_v, cpu, n, chains, steps, tasks, samplers, threads, secs, *loads = sys.argv[1:]
json.dump(dict(command="just bench-peer-discs", seed=int(seed), quick=quick == "1", dlp_revision=rev, jax=jax_v,
               cpu=cpu, cores=int(n), chains=int(chains), steps=int(steps), tasks=tasks.split(","),
               samplers=samplers.split(","), threads=int(threads), python=platform.python_version(),
               seconds=int(secs), load1_by_phase=loads,
               finished_utc=datetime.datetime.now(datetime.timezone.utc).isoformat()), open(f, "w"), indent=1)
EOF
files=()
for t in "${task_list[@]}"; do files+=("$tmp/$t.jsonl"); done
python3 "$root/bench/peer/discs_report.py" --prefix "$tmp/discs-peer" --title "$title" --notes "$notes" \
  --meta "$tmp/meta.json" "${files[@]}"
for ext in csv json md; do mv "$tmp/discs-peer.$ext" "$out/discs-peer.$ext"; done
if [ "$paper" = 1 ]; then
  for page in performance discs; do
    python3 "$root/bench/peer/paper_section.py" "$root/paper/$page.md" discs "$out/discs-peer.md"
  done
fi
echo "== done in $(( $(date +%s) - start )) s: $out/discs-peer.{csv,json,md}" >&2
