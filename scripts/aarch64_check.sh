#!/usr/bin/env bash
# The samplers and the Python package on 64-bit ARM (aarch64), emulated by qemu-user on an
# x86-64 machine: `just test-aarch64` (about 30 minutes on 2 cores; not part of CI).
#   1. dlp-samplers' and dlp-exact's tests for aarch64-unknown-linux-gnu under qemu: the fast
#      paths' portable branches (vexp.rs, fast/ising.rs: x86-64 has SIMD branches, aarch64
#      takes the others) meet the same exact checks (transition matrices, πP = π, laws).
#   2. The aarch64 release wheel (`just wheel --target aarch64-unknown-linux-gnu`: zig,
#      manylinux2014) and the Python tests against it, run by Debian 12's arm64 CPython 3.11
#      (unpacked from deb.debian.org into a sysroot; nothing is installed system-wide) with
#      PyPI's aarch64 numpy, pytest, hypothesis and tqdm; the CLI comparisons use this
#      machine's x86-64 `dlp`, so they also check that a seed gives the same chains on both
#      architectures. JAX, PyTorch and ArviZ are not fetched: test_jax, test_torch,
#      test_arviz and test_bench (whose every row includes from_jax) are left out, and
#      test_discs_peer skips.
# `--python-only` skips part 1.
# Needs: rustup (for the aarch64 std), apt-get as root for qemu-user and the aarch64 gcc
# (the linker of the test binaries), curl, Python 3 with pip. Writes under target/aarch64/.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
work="${CARGO_TARGET_DIR:-$root/target}/aarch64"
mkdir -p "$work"
triple=aarch64-unknown-linux-gnu

need=()
command -v qemu-aarch64 >/dev/null || need+=(qemu-user)
command -v aarch64-linux-gnu-gcc >/dev/null || need+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
if [ ${#need[@]} -gt 0 ]; then
    [ "$(id -u)" = 0 ] || { echo "error: apt-get install ${need[*]} (as root) first" >&2; exit 2; }
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
rustup target add "$triple" >/dev/null

rust_rc=0
if [ "${1:-}" != --python-only ]; then
    echo "aarch64: 1. Rust tests of dlp-samplers and dlp-exact under qemu"
    export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
    export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64 -L /usr/aarch64-linux-gnu"
    cargo nextest run -p dlp-samplers -p dlp-exact --target "$triple" --no-fail-fast || rust_rc=$?
fi

echo "aarch64: 2. the aarch64 wheel and the Python tests under qemu"
rm -rf "$work/dist"
just wheel --target "$triple" --out "$work/dist"
sysroot="$work/sysroot"
if [ ! -x "$sysroot/usr/bin/python3.11" ]; then
    rm -rf "$sysroot" "$work/debs" && mkdir -p "$sysroot" "$work/debs"
    curl -sSf http://deb.debian.org/debian/dists/bookworm/main/binary-arm64/Packages.xz |
        xz -d >"$work/Packages"
    # CPython 3.11 and what it depends on, by Debian's own Depends (first alternative).
    python3 - "$work/Packages" python3.11-minimal libpython3.11-stdlib libstdc++6 >"$work/debs/list" <<'EOF'
import re, sys
pk, prov = {}, {}
for block in open(sys.argv[1]).read().split("\n\n"):
    f = dict(re.findall(r"^([\w-]+): (.*)$", block, re.M))
    if "Package" in f:
        pk[f["Package"]] = f
for n, f in pk.items():
    for p in f.get("Provides", "").split(","):
        if p.strip():
            prov.setdefault(p.strip().split(" ")[0], n)
want, seen = sys.argv[2:], set()
while want:
    n = want.pop()
    n = n if n in pk else prov.get(n, n)
    if n in seen or n in ("dpkg", "tar") or n not in pk:
        continue
    seen.add(n)
    want += [a.split("|")[0].strip().split(" ")[0].split(":")[0] for a in pk[n].get("Depends", "").split(",") if a.strip()]
print("\n".join(pk[n]["Filename"] for n in sorted(seen)))
EOF
    while read -r f; do
        curl -sSf -o "$work/debs/$(basename "$f")" "http://deb.debian.org/debian/$f"
        dpkg-deb -x "$work/debs/$(basename "$f")" "$sysroot"
    done <"$work/debs/list"
fi
# A launcher that x86-64 subprocesses can exec: the tests start sys.executable.
cat >"$sysroot/usr/bin/py" <<EOF
#!/bin/sh
exec $(command -v qemu-aarch64) -L "$sysroot" -0 "$sysroot/usr/bin/py" "$sysroot/usr/bin/python3.11" "\$@"
EOF
chmod +x "$sysroot/usr/bin/py"
site="$work/site-packages"
rm -rf "$site" "$work/wheels" && mkdir -p "$site"
python3 -m pip download --quiet --only-binary=:all: --platform manylinux2014_aarch64 \
    --python-version 3.11 --no-deps -d "$work/wheels" "numpy<2.3" pytest pluggy iniconfig \
    packaging pygments hypothesis attrs sortedcontainers tqdm typing_extensions
for w in "$work"/wheels/*.whl "$work"/dist/*.whl; do python3 -m zipfile -e "$w" "$site"; done
dlp_bin="${CARGO_TARGET_DIR:-$root/target}/release/dlp"
[ -x "$dlp_bin" ] || cargo build --release -p dlp-cli --bin dlp
py_rc=0
PYTHONPATH="$site" DLP_BIN="$dlp_bin" "$sysroot/usr/bin/py" -m pytest -q -rs -p no:cacheprovider \
    python/tests --ignore=python/tests/test_torch.py --ignore=python/tests/test_jax.py \
    --ignore=python/tests/test_arviz.py --ignore=python/tests/test_bench.py || py_rc=$?
echo "aarch64: Rust tests exit $rust_rc, Python tests exit $py_rc"
[ "$rust_rc" -eq 0 ] || exit "$rust_rc"
exit "$py_rc"
