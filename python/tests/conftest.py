"""Shared fixtures: the repository root, the shipped example files and the `dlp` binary
(built on demand) whose output the package must reproduce."""

import os
import signal
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# test_skips.py runs a pytest inside a test to show that a skip fails in CI.
pytest_plugins = ["pytester"]


def strict() -> bool:
    """The rule of dlp_core::testing::require (Python cannot call it): with `CI` or
    `DLP_REQUIRE_ALL` set to anything but "", "0" or "false", a test may not pass by skipping."""
    return any(os.environ.get(k, "").strip().lower() not in ("", "0", "false") for k in ("CI", "DLP_REQUIRE_ALL"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under `strict()`, a skip (pytest.skip, importorskip, skipif) is reported as a failure that
    keeps its reason, so that CI cannot be green while testing less; xfail is left alone."""
    outcome = yield
    rep = outcome.get_result()
    if rep.skipped and strict() and not hasattr(rep, "wasxfail"):
        reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
        rep.outcome = "failed"
        rep.longrepr = f"skipped under CI / DLP_REQUIRE_ALL=1, where a test may not pass by skipping: {reason}"


@pytest.fixture(autouse=True)
def python_sigint_handler():
    """Python's own SIGINT handler in every test: a process started with SIGINT ignored (a
    shell's background job) has none, and then neither Ctrl-C nor `_thread.interrupt_main`
    reaches the Ctrl-C tests, whose runs would never end."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old)


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def examples() -> Path:
    return ROOT / "data" / "examples"


@pytest.fixture(scope="session")
def dlp_bin() -> str:
    """The `dlp` command: $DLP_BIN, else the workspace's debug build (built here if absent)."""
    if os.environ.get("DLP_BIN"):
        return os.environ["DLP_BIN"]
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    exe = target / "debug" / "dlp"
    subprocess.run(["cargo", "build", "--quiet", "-p", "dlp-cli", "--bin", "dlp"], cwd=ROOT, check=True)
    return str(exe)


def run_cli(dlp_bin: str, *args: str) -> subprocess.CompletedProcess:
    """Runs `dlp ARGS` from the repository root, capturing text output."""
    return subprocess.run([dlp_bin, *args], cwd=ROOT, capture_output=True, text=True)


def read_rows(path) -> "np.ndarray":
    """A samples file (`#` comment lines, a header `x0,…`, comma-separated rows) as int64."""
    import numpy as np
    lines = [line for line in open(path) if not line.startswith("#")][1:]
    return np.array([[int(v) for v in line.split(",")] for line in lines if line.strip()], dtype=np.int64)
