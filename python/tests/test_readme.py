"""The README's Python example runs as written (from the repository root)."""

import os
import re


def test_readme_python_example_runs(root, capsys):
    text = (root / "README.md").read_text()
    blocks = re.findall(r"<!-- python-example -->\s*```python\n(.*?)```", text, re.S)
    assert len(blocks) == 1, "README.md must hold one ```python block after <!-- python-example -->"
    code = blocks[0]
    assert len(code.strip().splitlines()) <= 12
    cwd = os.getcwd()
    os.chdir(root)
    try:
        exec(compile(code, "README.md", "exec"), {})
    finally:
        os.chdir(cwd)
    out = capsys.readouterr().out
    assert "ESS" in out and "p-value" in out
