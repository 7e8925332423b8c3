#!/usr/bin/env python3
"""Prints, one line per reason, every test that CI did not run: `.ci/run`'s last words.

Usage: skips.py RUST_LOG PYTHON_LOG SKIP_LOG

- RUST_LOG: the output of `just test`. With NEXTEST_FINAL_STATUS_LEVEL=skip nextest's final
  summary has a `SKIP` line per test it did not run (in `just test`, which filters nothing,
  the #[ignore]d ones); libtest (`cargo test`, the doc tests) prints `test NAME ... ignored[,
  REASON]`. A nextest test's reason is its #[ignore = "…"] string, looked up in the sources.
- PYTHON_LOG: pytest's output with `-rs` (`SKIPPED [N] place: reason`).
- SKIP_LOG: $DLP_SKIP_LOG, one line per test that returned early because something was
  missing (dlp_core::testing::require); under CI only what no install command provides (a GPU,
  a host where Slurm cannot bind loopback) may skip there, the rest fails.

Ignored tests belong to other tiers (`just test-stat`, `just test-data`) and are listed with
their reasons; run-time skips and pytest skips are expected to be zero.
"""

import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NEXTEST_SKIP = re.compile(r"^\s*SKIP \[[^\]]*\]\s+(?:\([^)]*\)\s+)?(\S+)\s+(\S+)\s*$")
LIBTEST_IGNORED = re.compile(r"^test (.+?) \.\.\. ignored(?:, (.*))?$")
PYTEST_SKIPPED = re.compile(r"^SKIPPED \[(\d+)\] (.*)$")
# At the start of a line, so that `#[ignore]` quoted in a doc comment is not taken for one;
# also the conditional form `#[cfg_attr(not(feature = "cuda"), ignore = "…")]` (tests/cuda.rs
# compiles in CI, its tests ignored there with the reason).
IGNORE_ATTR = re.compile(r'^\s*#\[(?:cfg_attr\([^,]*,\s*)?ignore(?:\s*=\s*"((?:[^"\\]|\\.)*)")?\)?\]')


def ignore_reasons() -> dict:
    """fn name -> its #[ignore] reason, over the workspace's Rust sources."""
    reasons = {}
    for path in [*ROOT.glob("crates/**/*.rs"), *ROOT.glob("reproduce/**/*.rs"), *ROOT.glob("python/**/*.rs")]:
        if "target" in path.parts:
            continue
        pending = None
        for line in path.read_text(errors="replace").splitlines():
            m = IGNORE_ATTR.search(line)
            if m:
                pending = m.group(1) or "(#[ignore] without a reason)"
                continue
            f = re.match(r"\s*(?:pub\s+)?(?:async\s+)?fn\s+(\w+)", line)
            if f:
                if pending is not None:
                    reasons[f.group(1)] = pending
                pending = None
    return reasons


def main() -> int:
    rust_log, python_log, skip_log = (Path(p) for p in sys.argv[1:4])
    rust = rust_log.read_text(errors="replace").splitlines() if rust_log.exists() else []
    python = python_log.read_text(errors="replace").splitlines() if python_log.exists() else []
    runtime = skip_log.read_text(errors="replace").splitlines() if skip_log.exists() else []

    reasons = None
    ignored = Counter()
    for line in rust:
        m = NEXTEST_SKIP.match(line)
        if m:
            reasons = reasons if reasons is not None else ignore_reasons()
            name = m.group(2).rsplit("::", 1)[-1]
            ignored[reasons.get(name, "(filtered out, or no #[ignore] found for " + m.group(2) + ")")] += 1
            continue
        m = LIBTEST_IGNORED.match(line.strip())
        if m:
            ignored[m.group(2) or "(#[ignore] without a reason)"] += 1

    skipped_py = Counter()
    for line in python:
        m = PYTEST_SKIPPED.match(line.strip())
        if m:
            skipped_py[m.group(2)] += int(m.group(1))

    skipped_rt = Counter()
    for line in runtime:
        parts = line.split("\t")
        if len(parts) >= 3:
            skipped_rt[f"{parts[1]} (install: {parts[2]})"] += 1

    n_rt, n_py, n_ig = sum(skipped_rt.values()), sum(skipped_py.values()), sum(ignored.values())
    print(f"ci: skipped at run time (something missing): {n_rt}; pytest skips: {n_py} (both expected 0)")
    for reason, n in sorted(skipped_rt.items()):
        print(f"ci:   {n} skipped: {reason}")
    for reason, n in sorted(skipped_py.items()):
        print(f"ci:   {n} pytest skip: {reason}")
    print(f"ci: ignored, in tiers that `just test` does not claim: {n_ig}")
    for reason, n in sorted(ignored.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"ci:   {n} ignored: {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
