#!/usr/bin/env bash
# The peer's CPU points, one after another, into one JSON-lines file: the C floor
# (floor_dula.c, when cc exists), the numpy reference (np_dlp.py) and the ported official
# PyTorch samplers (peer_bench.py), each on the same models and step sizes as `dlp bench`.
#
#   bash bench/peer/run_all.sh [--quick] [--seed S] OUT.jsonl
#   PEER_ARGS="--threads 1" bash bench/peer/run_all.sh OUT.jsonl    # extra peer_bench.py flags
#
# Called by scripts/bench_peer.sh (`just bench-peer`), which sets the environment up first.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
quick=() seed=() out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=(--quick) ;;
    --seed) seed=(--seed "${2:?--seed needs a value}"); shift ;;
    -*) echo "error: run_all.sh: unknown option $1" >&2; exit 2 ;;
    *) out="$1" ;;
  esac
  shift
done
[ -n "$out" ] || { echo "error: run_all.sh: name the output file (run_all.sh [--quick] [--seed S] OUT.jsonl)" >&2; exit 2; }
py="$(bash "$here/setup.sh")"
floor="${PEER_FLOOR:-${XDG_CACHE_HOME:-$HOME/.cache}/dlp-peer/floor_dula}"
: > "$out"
if [ -x "$floor" ]; then
  echo "== C floor ($floor ${quick[*]})" >&2
  "$floor" "${quick[@]}" >> "$out"
else
  echo "== C floor skipped: no C compiler (cc) to build bench/peer/floor_dula.c" >&2
fi
echo "== numpy (np_dlp.py ${quick[*]})" >&2
"$py" "$here/np_dlp.py" "${quick[@]}" "${seed[@]}" >> "$out"
echo "== torch (peer_bench.py ${quick[*]} ${PEER_ARGS:-})" >&2
# shellcheck disable=SC2086
"$py" "$here/peer_bench.py" "${quick[@]}" "${seed[@]}" ${PEER_ARGS:-} >> "$out"
echo "== $(grep -c . "$out") peer records in $out" >&2
