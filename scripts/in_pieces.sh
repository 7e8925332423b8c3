#!/usr/bin/env bash
# Runs a reproduction whose `--resume` reads back finished cells (`OUT/cells/*.json`) in pieces
# on machines that do not outlive a session: the cells kept in git under KEEP are copied into
# OUT before the run and every finished cell is copied back to KEEP each minute (and at exit),
# so the next machine continues where this one stopped. Commit KEEP to keep the progress.
#
#   bash scripts/in_pieces.sh KEEP OUT BIN [ARGS...]
#   e.g. bash scripts/in_pieces.sh paper/runs/table2-adult-h500/cells results/table2-adult-h500 \
#            table2 --datasets adult --hidden 500 --seeds 1 --every 25
#
# BIN is a `dlp-reproduce` binary, built here in release; it runs with `--resume --out OUT`
# and ARGS. Changing ARGS changes the cells' identity, and `--resume` then refuses the kept
# cells with one error line instead of mixing two protocols.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 3 ]; then
    echo "usage: bash scripts/in_pieces.sh KEEP OUT BIN [ARGS...]" >&2
    exit 2
fi
keep=$1 out=$2 bin=$3
shift 3
mkdir -p "$out/cells" "$keep"
cp -n "$keep"/*.json "$out/cells/" 2>/dev/null || true
cargo build --release --quiet -p dlp-reproduce --bin "$bin"
save() { cp -u "$out"/cells/*.json "$keep"/ 2>/dev/null || true; }
( while sleep 60; do save; done ) &
saver=$!
trap 'kill $saver 2>/dev/null || true; save' EXIT
"${CARGO_TARGET_DIR:-target}/release/$bin" --resume --out "$out" "$@"
