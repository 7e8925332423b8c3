# dlp task runner. `just --list` shows every recipe.

set shell := ["bash", "-euo", "pipefail", "-c"]
set positional-arguments

# List the recipes.
default:
    @just --list

# Run a reproduction binary in release: `just reproduce fig3 --quick --seed 3 --threads 2`;
# `just reproduce all [args…]` runs every binary in reproduce/src/bin.
reproduce name *args:
    #!/usr/bin/env bash
    set -euo pipefail
    shift
    if [ "{{name}}" = all ]; then
        bins=$(ls reproduce/src/bin/*.rs | xargs -n1 basename | sed 's/\.rs$//' | sort)
    else
        if [ ! -f "reproduce/src/bin/{{name}}.rs" ]; then
            echo "error: no reproduction binary {{name}} (have: $(ls reproduce/src/bin/*.rs | xargs -n1 basename | sed 's/\.rs$//' | tr '\n' ' '))" >&2
            exit 2
        fi
        bins="{{name}}"
    fi
    for bin in $bins; do
        echo "== $bin"
        cargo run --release --quiet -p dlp-reproduce --bin "$bin" -- "$@"
    done

# Fast test suite (exact tier included, statistical tier excluded): nextest if installed.
test:
    #!/usr/bin/env bash
    set -euo pipefail
    if cargo nextest --version >/dev/null 2>&1; then
        cargo nextest run --workspace --no-fail-fast
        cargo test --workspace --doc
    else
        cargo test --workspace
    fi

# Statistical and large exact tests, in release (ignored tests and the `stat` feature).
test-stat:
    cargo test -p dlp-exact --release --features stat -- --include-ignored

# Benchmarks (criterion, release).
bench *args:
    cargo bench --workspace "$@"

# Our `dlp bench` sweep and the peer's (official PyTorch port, numpy, C floor) back to back,
# joined into results/bench/ (summary.md, speedup.md, bench.csv, bench.json, ns_per_spin.svg).
# `just bench-peer --quick` takes under 5 minutes.
bench-peer *args:
    bash scripts/bench_peer.sh "$@"

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
