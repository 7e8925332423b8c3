#!/usr/bin/env bash
# Sets up what the peer benchmark needs and prints the Python to run it with (stdout, one
# line); everything else goes to stderr. Idempotent: a second run only checks.
#
#   bash bench/peer/setup.sh [--device cpu|cuda] [--print-python]
#   bash bench/peer/setup.sh --jax      (the DISCS peer, bench/peer/discs_jax.py)
#
# --jax: a Python with current JAX for the CPU from PyPI (`jax[cpu]`, numpy), in a venv made
#   from python3 in $PEER_JAX_VENV (default ${XDG_CACHE_HOME:-$HOME/.cache}/dlp-peer/venv-jax),
#   as `.ci/run` installs JAX for the Python tests; PEER_PYTHON overrides it (checked only).
#   One error line if pip cannot install it.
#
# cpu (default): Debian's CPU-only PyTorch (python3-torch 1.13.1, python3-numpy,
#   libopenblas0-openmp; ~190 MB of .debs on a bare machine), installed with apt-get when we
#   are root and they are absent; otherwise one error line with the install command. The
#   Python is a venv made from /usr/bin/python3 with --system-site-packages (no pip), in
#   $PEER_VENV (default ${XDG_CACHE_HOME:-$HOME/.cache}/dlp-peer/venv-debian), so it sees
#   the apt packages and nothing from other environments.
#   Why not PyPI: PyPI has no CPU-only torch for linux x86_64 (the +cpu wheels are on the
#   PyTorch index only); its wheel is the CUDA build, whose CPU library itself links
#   libcudart, so a working install pulls ~3 GB of nvidia-* wheels.
# cuda: the machine's own PyTorch: $PEER_PYTHON, else the first of python3, /usr/bin/python3
#   whose torch sees a CUDA device; otherwise one error line.
# PEER_PYTHON overrides both (its torch and numpy are checked, nothing is installed).
# Also compiles the C floor (bench/peer/floor_dula.c) next to the venv when cc exists.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
device=cpu print_only=0 want_jax=0
while [ $# -gt 0 ]; do
  case "$1" in
    --jax) want_jax=1 ;;
    --device) device="${2:-}"; shift ;;
    --device=*) device="${1#--device=}" ;;
    --print-python) print_only=1 ;;
    *) echo "error: setup.sh: unknown argument $1 (usage: setup.sh [--device cpu|cuda] [--print-python] | --jax)" >&2; exit 2 ;;
  esac
  shift
done
case "$device" in cpu | cuda) ;; *) echo "error: setup.sh: --device must be cpu or cuda, got '$device'" >&2; exit 2 ;; esac
say() { echo "setup: $*" >&2; }
die() { echo "error: $*" >&2; exit 2; }

# The DISCS peer: JAX on the CPU, from PyPI.
if [ "$want_jax" = 1 ]; then
  jax_ok() { "$1" -c 'import jax, jax.numpy as jnp, numpy; assert float(jnp.ones(3).sum()) == 3.0' 2>/dev/null; }
  if [ -n "${PEER_PYTHON:-}" ]; then
    jax_ok "$PEER_PYTHON" || die "PEER_PYTHON=$PEER_PYTHON cannot import jax (pip install 'jax[cpu]' numpy)"
    echo "$PEER_PYTHON"; exit 0
  fi
  venv="${PEER_JAX_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/dlp-peer/venv-jax}"
  if ! jax_ok "$venv/bin/python"; then
    say "creating $venv with jax[cpu] and numpy from PyPI"
    mkdir -p "$(dirname "$venv")"
    { python3 -m venv "$venv" && "$venv/bin/python" -m pip install --quiet "jax[cpu]" numpy; } >&2 2>/dev/null ||
      die "cannot install jax[cpu] into $venv from PyPI (python3 -m venv + pip failed; or set PEER_PYTHON to a Python with jax)"
    jax_ok "$venv/bin/python" || die "jax in $venv does not run (remove $venv and rerun)"
  fi
  echo "$venv/bin/python"; exit 0
fi

# torch + numpy import and autograd gives the right gradient (on the GPU for cuda).
probe() {
  "$1" - "$device" <<'EOF' >&2
import sys
import numpy, torch
dev = sys.argv[1]
if dev == "cuda" and not torch.cuda.is_available():
    sys.exit("torch %s sees no CUDA device" % torch.__version__)
g = torch.Generator().manual_seed(0)
x = torch.randn(64, 100, generator=g).to(dev).requires_grad_()
J = torch.randn(100, 100, generator=g).to(dev)
grad = torch.autograd.grad(((x @ J) * x).sum(), x)[0]
err = (grad - x.detach() @ (J + J.t())).abs().max().item()
assert err < 1e-3, err
print("setup: torch %s on %s, numpy %s, autograd check ok (err %.1e)"
      % (torch.__version__, dev, numpy.__version__, err))
EOF
}

if [ -n "${PEER_PYTHON:-}" ]; then
  probe "$PEER_PYTHON" || die "PEER_PYTHON=$PEER_PYTHON cannot run torch on $device"
  py="$PEER_PYTHON"
elif [ "$device" = cuda ]; then
  py=""
  for cand in python3 /usr/bin/python3; do
    if command -v "$cand" >/dev/null && probe "$(command -v "$cand")" 2>/dev/null; then
      py="$(command -v "$cand")"; break
    fi
  done
  [ -n "$py" ] || die "no python3 here imports a torch that sees a CUDA device (install the GPU machine's PyTorch, e.g. pip install torch numpy, or set PEER_PYTHON)"
else
  venv="${PEER_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/dlp-peer/venv-debian}"
  py="$venv/bin/python"
  if [ "$print_only" = 1 ] && [ -f "$venv/.peer-ok" ]; then echo "$py"; exit 0; fi
  pkgs=(python3-torch python3-numpy libopenblas0-openmp)
  missing=()
  for p in "${pkgs[@]}"; do
    # no `dpkg-query | grep -q` under pipefail: grep's early exit fails the pipe
    st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    [ "$st" = "install ok installed" ] || missing+=("$p")
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    command -v apt-get >/dev/null || die "the peer needs Debian's ${missing[*]} (apt-get not found; or set PEER_PYTHON to a Python with torch and numpy)"
    [ "$(id -u)" = 0 ] || die "the peer needs ${missing[*]}: run as root: apt-get install --no-install-recommends ${missing[*]} (or set PEER_PYTHON to a Python with torch and numpy)"
    if [[ "$(apt-cache policy python3-torch 2>/dev/null || true)" != *"Candidate: 1"* ]]; then
      say "apt-get update (no candidate for python3-torch yet)"
      apt-get update -qq >&2
    fi
    say "apt-get install ${missing[*]} (CPU-only torch 1.13.1)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  if [ ! -x "$py" ]; then
    say "creating venv $venv (/usr/bin/python3, --system-site-packages, no pip)"
    mkdir -p "$(dirname "$venv")"
    /usr/bin/python3 -m venv --system-site-packages --without-pip "$venv"
  fi
  probe "$py" || die "torch in $venv does not run (remove $venv and rerun)"
  touch "$venv/.peer-ok"
fi

if [ "$print_only" = 0 ] && command -v cc >/dev/null; then
  floor="${PEER_FLOOR:-${XDG_CACHE_HOME:-$HOME/.cache}/dlp-peer/floor_dula}"
  if [ ! -x "$floor" ] || [ "$here/floor_dula.c" -nt "$floor" ]; then
    say "compiling floor_dula.c -> $floor (cc -O3 -march=native)"
    mkdir -p "$(dirname "$floor")"
    cc -O3 -march=native -o "$floor" "$here/floor_dula.c" -lm
  fi
fi
echo "$py"
