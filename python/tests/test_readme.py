"""The README's Python example runs as written (from the repository root), with the installed
package alone: in a child Python whose PATH holds only that interpreter's directory and whose
environment names no Rust toolchain, so a `cargo` or `rustc` call anywhere on the way would
fail it (the issue's "no Rust toolchain involved")."""

import os
import re
import subprocess
import sys


def test_readme_python_example_runs_without_a_rust_toolchain(root):
    text = (root / "README.md").read_text()
    blocks = re.findall(r"<!-- python-example -->\s*```python\n(.*?)```", text, re.S)
    assert len(blocks) == 1, "README.md must hold one ```python block after <!-- python-example -->"
    code = blocks[0]
    assert len(code.strip().splitlines()) <= 12
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CARGO", "RUSTUP", "RUST")) and k not in ("PATH", "DLP_BIN")}
    env["PATH"] = os.path.dirname(sys.executable)
    r = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "ESS" in r.stdout and "p-value" in r.stdout, r.stdout
