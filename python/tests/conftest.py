"""Shared fixtures: the repository root, the shipped example files and the `dlp` binary
(built on demand) whose output the package must reproduce."""

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


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
