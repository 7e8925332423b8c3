# dlp task runner. `just --list` shows every recipe.

set shell := ["bash", "-euo", "pipefail", "-c"]
set positional-arguments

# List the recipes.
default:
    @just --list

# `just reproduce fig3 --quick --seed 3 --threads 2`; `just reproduce fig1a fig1b fig2 --quick`
# (leading names are binaries, the rest their arguments); `all` = every reproduce/src/bin/*.rs.
# Run reproduction binaries in release: just reproduce <name|all>… [args…]
reproduce +args:
    #!/usr/bin/env bash
    set -euo pipefail
    have=$(ls reproduce/src/bin/*.rs | xargs -n1 basename | sed 's/\.rs$//' | sort)
    bins=()
    while [ $# -gt 0 ] && [[ "$1" != -* ]]; do
        if [ "$1" = all ]; then
            bins+=($have)
        elif grep -qx -- "$1" <<< "$have"; then
            bins+=("$1")
        else
            echo "error: no reproduction binary $1 (have: $(tr '\n' ' ' <<< "$have"))" >&2
            exit 2
        fi
        shift
    done
    if [ ${#bins[@]} -eq 0 ]; then
        echo "error: name a reproduction binary or 'all' (have: $(tr '\n' ' ' <<< "$have"))" >&2
        exit 2
    fi
    list=$(printf -- '--bin %s ' "${bins[@]}")
    cargo build --release --quiet -p dlp-reproduce $(just _reproduce-features "${bins[@]}") $list
    for bin in "${bins[@]}"; do
        echo "== $bin"
        "${CARGO_TARGET_DIR:-target}/release/$bin" "$@"
    done

# The features the named binaries need, from the `required-features` rows of
# reproduce/Cargo.toml: the defaults (everything) when one needs candle (`tensor`); else
# `--no-default-features` plus the union of what they ask for (`plain`: GOF, learning, data
# sets; `matrices`: dlp-exact's transition matrices), so a first `just reproduce fig3`
# compiles no tensor code, no matrix code, no eigensolver, no regex and none of dlp-gof,
# dlp-learn, dlp-data.
[private]
_reproduce-features +bins:
    #!/usr/bin/env bash
    needing() { awk -v f="$1" '/^\[\[/{name=""} /^name = /{gsub(/"/,"",$3); name=$3} $0 == "required-features = [\"" f "\"]" {print name}' reproduce/Cargo.toml; }
    tensor=$(needing tensor)
    feats=()
    for b in {{bins}}; do
        if grep -qx -- "$b" <<< "$tensor"; then exit 0; fi
        for f in plain matrices; do
            if grep -qx -- "$b" <<< "$(needing $f)" && [[ " ${feats[*]} " != *" $f "* ]]; then feats+=("$f"); fi
        done
    done
    if [ ${#feats[@]} -eq 0 ]; then echo --no-default-features; else echo "--no-default-features --features $(IFS=,; echo "${feats[*]}")"; fi

# `just sweep fig3 --seeds 0..8 --quick --samplers dmala@0.4,gwg [--engine slurm --partition P]`:
# one run per seed and value (a value with commas varies), resumable, gathered (README "Sweeps").
# Sweep a reproduction binary over seeds and flag values, locally or as a Slurm job array
sweep name *args:
    #!/usr/bin/env bash
    set -euo pipefail
    if [ ! -f "reproduce/src/bin/$1.rs" ]; then
        echo "error: no reproduction binary $1 (have: $(ls reproduce/src/bin/*.rs | xargs -n1 basename | sed 's/\.rs$//' | tr '\n' ' '))" >&2
        exit 2
    fi
    cargo build --release --quiet -p dlp-reproduce $(just _reproduce-features "$1") --features sweep --bin dlp-sweep --bin "$1"
    exec "${CARGO_TARGET_DIR:-target}/release/dlp-sweep" run "$@"

# A test whose tool or data cache is missing skips with a note saying how to get it; under
# CI=true or DLP_REQUIRE_ALL=1 it fails instead (`.ci/run` provides them all).
# Fast test suite (exact tier included, statistical and data tiers excluded): nextest if installed.
test:
    #!/usr/bin/env bash
    set -euo pipefail
    if cargo nextest --version >/dev/null 2>&1; then
        cargo nextest run --workspace --no-fail-fast
        cargo test --workspace --doc
    else
        cargo test --workspace
    fi

# The wheel is abi3 (one file for every CPython >= 3.9) and manylinux: maturin tags it with the
# lowest manylinux policy its glibc symbols allow and, with `--auditwheel check` (the default
# here, instead of maturin's silent `repair`), fails if it needs a library outside the policy;
# then scripts/audit_wheel.py checks the tags (cp39-abi3, manylinux) and the wheel against
# PyPI's `auditwheel show`, failing on a wheel tagged for a glibc older than it needs. `--strip`
# drops debug symbols. The release wheel (the default; what is shipped) is linked by zig
# (`maturin --zig`, zig from PyPI's `ziglang`) against glibc 2.17's symbols and tagged
# manylinux2014, so that it installs on any x86-64 Linux from 2014 on (CentOS 7, Ubuntu 14.04,
# Debian 8), not only on systems as new as the build machine (linked natively here it would
# need glibc 2.35); `--compatibility TAG` picks another policy and links natively. The dev
# profile (`--profile dev`, what `just test-python` builds on top of `just test`'s build) links
# natively: zig's target directory would rebuild every dependency. Extra arguments go to
# `maturin build`. maturin, auditwheel and ziglang come from PyPI.
# Build the Python package's wheel (dlp-mcmc) into dist/ with maturin, in release, and audit it
wheel *args:
    #!/usr/bin/env bash
    set -euo pipefail
    tools=$(just _py-tools)
    defaults=()
    [[ " $* " == *" --profile "* ]] || defaults+=(--release)
    [[ " $* " == *" --out "* ]] || defaults+=(--out dist)
    [[ " $* " == *" --auditwheel "* ]] || defaults+=(--auditwheel check)
    if [[ " $* " != *" --profile dev "* && " $* " != *" --compatibility "* ]]; then
        # ziglang is installed on first use only: CI's dev-profile wheel does not need it. The
        # package ships the zig binary; maturin looks for `zig` on PATH.
        "$tools/bin/python" -c 'import ziglang' 2>/dev/null ||
            "$tools/bin/python" -m pip install --quiet "ziglang==0.17.1" >&2
        export PATH="$("$tools/bin/python" -c 'import ziglang, os; print(os.path.dirname(ziglang.__file__))'):$PATH"
        defaults+=(--zig --compatibility manylinux2014)
    fi
    out=dist
    args=("$@")
    for ((i = 0; i + 1 < ${#args[@]}; i++)); do [ "${args[i]}" != --out ] || out=${args[i + 1]}; done
    start=$SECONDS
    "$tools/bin/maturin" build --manifest-path python/Cargo.toml --strip "${defaults[@]}" "$@"
    wheel=$(ls -t "$out"/dlp_mcmc-*.whl | head -n 1)
    echo "wheel: $(basename "$wheel"), $(du -k "$wheel" | cut -f1) KiB, built in $((SECONDS - start)) s"
    "$tools/bin/python" scripts/audit_wheel.py --auditwheel "$tools/bin/auditwheel" "$wheel"

# A virtual environment for building and auditing wheels (maturin, auditwheel), kept in the
# Cargo target directory; prints its path.
[private]
_py-tools:
    #!/usr/bin/env bash
    set -euo pipefail
    venv="${CARGO_TARGET_DIR:-target}/py-tools"
    if [ ! -x "$venv/bin/maturin" ] || [ ! -x "$venv/bin/auditwheel" ]; then
        python3 -m venv "$venv" >&2
        "$venv/bin/python" -m pip install --quiet "maturin>=1.7,<2" "auditwheel>=6" >&2
    fi
    realpath "$venv"

# `profile` is the Cargo profile of the extension: dev (default) reuses what `just test`
# built, so CI compiles little more; `just test-python release` tests what `just wheel` ships.
# The wheel is built once (and audited: `just wheel`), installed into a fresh virtual environment (with its dependencies,
# ArviZ, pytest and hypothesis from PyPI) and pytest runs with that environment's Python from the repository
# root, so the tests import the installed package, never python/dlp_mcmc (test_installed.py
# checks); its exit code 5 (no test collected) is a failure.
# Build the Python wheel once, install it into a fresh venv, run the pytest suite against it
test-python profile="dev":
    #!/usr/bin/env bash
    set -euo pipefail
    out="${CARGO_TARGET_DIR:-target}/py-test"
    rm -rf "$out"
    mkdir -p "$out"
    start=$SECONDS
    just wheel --profile {{profile}} --out "$out/dist" --quiet
    wheel=$(ls "$out"/dist/*.whl)
    echo "test-python: $(basename "$wheel"), $(du -k "$wheel" | cut -f1) KiB, built in $((SECONDS - start)) s"
    start=$SECONDS
    # ArviZ 1.x needs Python >= 3.12: the newest such interpreter found, else python3 (and
    # test_arviz.py then fails under CI, naming what is missing).
    py=python3
    for c in python3.13 python3.12 "$HOME"/.pyenv/versions/3.1[2-9]*/bin/python3; do
        if "$c" -c 'import sys, venv; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then py=$c; break; fi
    done
    "$py" -m venv "$out/venv"
    "$out/venv/bin/python" -m pip install --quiet "$wheel[arviz,jax]" cmdstanpy pytest hypothesis
    echo "test-python: $("$out/venv/bin/python" --version), environment made in $((SECONDS - start)) s"
    # PyTorch is Debian's python3-torch (CPU, for /usr/bin/python3; PyPI's Linux torch pulls
    # GBs of CUDA wheels), which needs Debian's numpy 1.x while JAX needs numpy 2: so
    # test_torch.py runs in a second environment on /usr/bin/python3 with its system packages.
    # Without python3-torch it runs in the first, where it skips (a failure under CI).
    tenv="$out/venv"
    if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
        tenv="$out/venv-torch"
        /usr/bin/python3 -m venv --system-site-packages "$tenv"
        "$tenv/bin/python" -m pip install --quiet "$wheel" pytest hypothesis
    fi
    rc=0
    "$out/venv/bin/python" -m pytest -q -rs python/tests --ignore=python/tests/test_torch.py || rc=$?
    trc=0
    "$tenv/bin/python" -m pytest -q -rs python/tests/test_torch.py || trc=$?
    if [ "$rc" -eq 5 ] || [ "$trc" -eq 5 ]; then
        echo "error: pytest collected no tests in python/tests" >&2
        exit 1
    fi
    [ "$rc" -ne 0 ] || rc=$trc
    exit "$rc"

# `just fuzz` (10^7 inputs per target), `DLP_FUZZ_CASES=100000 just fuzz models`: the fuzz
# tests of the readers of user files (tests/fuzz.rs of dlp-models and dlp-tensor; `dlp gof`'s
# options and the end-to-end cases of dlp-cli) in release, one target at a time, each printing
# `fuzz <target>: <count> inputs, <s> s` every minute and `fuzz <target>: <count> inputs in <s> s`
# at its end (the last long run's counts: paper/performance.md, section "Fuzzing the readers of
# user files"). DLP_FUZZ_SEED picks the inputs (default: the time,
# printed first); DLP_FUZZ_LIMIT_S bounds one input (10 s). A failure prints the input (add it
# to the crate's tests/fuzz_corpus/, which `just test` replays).
# Fuzz the file readers and option parsers in release (models, tensor, cli; default all)
fuzz *targets:
    #!/usr/bin/env bash
    set -euo pipefail
    export DLP_FUZZ_CASES="${DLP_FUZZ_CASES:-10000000}"
    export DLP_FUZZ_SEED="${DLP_FUZZ_SEED:-$(date +%s)}"
    echo "fuzz: DLP_FUZZ_CASES=$DLP_FUZZ_CASES DLP_FUZZ_SEED=$DLP_FUZZ_SEED"
    sel=("$@")
    [ ${#sel[@]} -eq 0 ] && sel=(models tensor cli)
    for t in "${sel[@]}"; do
        case "$t" in
            models) cargo test --release -p dlp-models --test fuzz -- --nocapture --test-threads 1 ;;
            # `candle`: the target's name before dlp-candle was split (dlp-tensor holds its readers).
            tensor | candle) cargo test --release -p dlp-tensor --test fuzz -- --nocapture --test-threads 1 ;;
            cli)
                cargo test --release -p dlp-cli --bin dlp gof::fuzz -- --nocapture --test-threads 1
                cargo test --release -p dlp-cli --test fuzz_cli -- --nocapture --test-threads 1
                ;;
            *) echo "error: unknown fuzz target $t (have: models tensor cli)" >&2; exit 2 ;;
        esac
    done

# `just test-data`: the tests that need a trained model (#[ignore = "data tier: …"]; `just test`
# does not claim them), with DLP_REQUIRE_ALL=1 so that a missing cache fails naming the command
# that makes it (`just data moby-dick`, `just train-mlm`) instead of passing by skipping.
# Tests that need a trained model (the data tier), in release
test-data:
    DLP_REQUIRE_ALL=1 cargo test -p dlp-reproduce --release --test mlm_standin -- --ignored

# Statistical and large exact tests, in release (ignored tests and the `stat` feature).
test-stat:
    cargo test -p dlp-exact --release --features stat -- --include-ignored
    cargo test -p dlp-gof -p dlp-samplers --release -- --include-ignored

# Benchmarks (criterion, release).
bench *args:
    cargo bench --workspace "$@"

# `just bench-peer [--quick] [--device cuda] [--seed S] [--no-paper] [OUTDIR]`: sets up what is
# missing (bench/peer/setup.sh: Debian's CPU-only torch via apt when root), then our `dlp bench`
# sweep and the peer's (bench/peer: ported official PyTorch samplers, numpy, C floor) in one run,
# joined into results/bench/ and the same-run ratio block of paper/performance.md.
# Our samplers vs a port of the official PyTorch code, same run (--quick: ~2 minutes)
bench-peer *args:
    bash scripts/bench_peer.sh "$@"

# `just bench-peer-discs [--quick] [--seed S] [--chains C] [--steps N] [--tasks a,b] [--no-paper]
# [OUTDIR]`: DISCS's own DMALA, GWG and path-auxiliary samplers (bench/peer/discs_jax.py, current
# JAX on the CPU, set up by bench/peer/setup.sh --jax) and ours (`dlp discs`) on DISCS's Ising,
# Potts and RBM tasks, one run, one ESS estimator → results/bench/discs-peer.{csv,json,md} and the
# ratio table in paper/performance.md and paper/discs.md.
# DISCS's samplers in JAX vs ours, same run, ESS per second (--quick: seconds + JAX compile)
bench-peer-discs *args:
    bash scripts/bench_peer_discs.sh "$@"

# Format the tree.
fmt:
    cargo fmt --all

# Formatting, clippy with warnings as errors, and the unseeded-RNG ban (CONTRIBUTING.md).
lint:
    cargo fmt --all -- --check
    cargo clippy --workspace --all-targets -- -D warnings
    @if grep -rnE 'rand::rng\(\)|thread_rng' --include='*.rs' crates reproduce | grep -vE '^\S+:\s*//'; then \
        echo "error: unseeded RNG (rand::rng() / thread_rng) found above; use dlp_core::chain_rng or setup_rng" >&2; exit 1; \
    else echo "no unseeded RNG"; fi

# Fetch a data set into data/cache/ (see data/README.md for sources, checksums, licences).
data name:
    #!/usr/bin/env bash
    set -euo pipefail
    if [ -x data/fetch.sh ]; then
        data/fetch.sh "{{name}}"
    else
        echo "no fetch script yet: see data/README.md for how to obtain {{name}}" >&2
        exit 2
    fi

# `just train-mlm [--steps N] [--resume] [--seed S]`: the English stand-in of the infilling
# experiment (a 1.5 M-parameter word-level MLM trained on Moby Dick, a stand-in for BERT; bert
# spec §6) → data/cache/mlm-moby/ and results/train-mlm/. Needs `just data moby-dick`.
# Train the English stand-in MLM (release; 2,500 steps ≈ 20-30 min on 2 cores)
train-mlm *args:
    cargo build --release --quiet -p dlp-reproduce --bin train-mlm
    "${CARGO_TARGET_DIR:-target}/release/train-mlm" "$@"

# `just build-cuda`: `dlp` with the `cuda` feature (`dlp infill --device cuda`), in target/cuda
# so that it never invalidates the CPU build, with NVIDIA's CUDA 13.0 wheels from PyPI
# (scripts/cuda_toolchain.sh: venv, linker names, stub libcuda.so). First build ≈ 18 min on
# 2 cores; CUDA_COMPUTE_CAP defaults to 90 (H100/H200). Never in CI.
# Build dlp with the cuda feature into target/cuda (needs the PyPI CUDA wheels; never in CI)
build-cuda:
    #!/usr/bin/env bash
    set -euo pipefail
    eval "$(scripts/cuda_toolchain.sh)"
    CARGO_TARGET_DIR=target/cuda cargo build --release -p dlp-cli --features cuda
    echo "built target/cuda/release/dlp (cuda feature, sm_${CUDA_COMPUTE_CAP})"

# The samplers' exact tests and the Python package on 64-bit ARM, emulated by qemu-user
# (about 30 minutes on 2 cores; not in CI): scripts/aarch64_check.sh says what runs.
# Run the samplers' tests and the Python tests on aarch64 under qemu (`--python-only`)
test-aarch64 *args:
    bash scripts/aarch64_check.sh {{args}}

# `just gpu-bundle`: the cuda-feature `dlp` and dlp-device's tests/cuda.rs, stripped and gzipped
# into target/gpu-bundle/ (≈ 25 MB; the device tool's carry limit is 64 MiB). On a lent GPU
# machine, one call: `bash scripts/gpu_check.sh [--quick]` with carry ["target/gpu-bundle"]
# runs the CUDA checks, `dlp bench --device cuda:0`, the official code's port on the same GPU
# and the 1..nproc-thread CPU scaling, and writes everything under $OUT. Never in CI.
# Build what one GPU-machine call of scripts/gpu_check.sh needs (needs the PyPI CUDA wheels)
gpu-bundle:
    bash scripts/gpu_bundle.sh

# `just check-cuda`: build-cuda, then the tests of the tensor crates (dlp-tensor, dlp-device, dlp-papers)
# with the `cuda` feature (CPU vs CUDA
# logits and gradients of the BERT energy to 1e-4, besides the CPU tests): run when a GPU is
# visible, only compiled otherwise. Never in CI.
# Build and test the cuda feature (tests run only where a GPU is visible; never in CI)
check-cuda: build-cuda
    #!/usr/bin/env bash
    set -euo pipefail
    eval "$(scripts/cuda_toolchain.sh)"
    if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
        CARGO_TARGET_DIR=target/cuda cargo test --release -p dlp-tensor -p dlp-device -p dlp-papers --features dlp-device/cuda
    else
        CARGO_TARGET_DIR=target/cuda cargo test --release -p dlp-tensor -p dlp-device -p dlp-papers --features dlp-device/cuda --no-run
        echo "no GPU visible: the CUDA tests were compiled, not run"
    fi
