"""Audits the Python package's wheel: abi3 for CPython >= 3.9, a manylinux platform tag, and
compliant with that tag by `auditwheel show` (PyPI's auditwheel, the reference checker: the
external libraries the extension needs and the glibc symbol versions it references). Prints
one line per wheel; exits 1, naming what is wrong, when a wheel fails, 2 on bad arguments.

    python3 scripts/audit_wheel.py [--auditwheel PATH] WHEEL...

`just wheel` and `just test-python` run it on the wheel they build, so CI fails on a wheel
that pip would refuse, or install onto a system it cannot run on.
"""

import argparse
import re
import subprocess
import sys
from pathlib import Path

# The legacy aliases of PEP 600 tags (manylinux2014 = manylinux_2_17, ...).
LEGACY = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}


def glibc_of(platform_tag: str):
    """(major, minor) of a manylinux platform tag, or None for any other tag."""
    m = re.fullmatch(r"manylinux_(\d+)_(\d+)_\w+", platform_tag)
    if m:
        return int(m.group(1)), int(m.group(2))
    m = re.fullmatch(r"(manylinux1|manylinux2010|manylinux2014)_\w+", platform_tag)
    return LEGACY[m.group(1)] if m else None


def audit(wheel: Path, auditwheel: str) -> str:
    """'' when `wheel` passes, else why not."""
    parts = wheel.name[:-len(".whl")].split("-") if wheel.name.endswith(".whl") else []
    if len(parts) not in (5, 6):
        return f"{wheel.name} is not a wheel file name (name-version[-build]-python-abi-platform.whl)"
    python, abi, platforms = parts[-3], parts[-2], parts[-1].split(".")
    if (python, abi) != ("cp39", "abi3"):
        return f"{wheel.name}: tags {python}-{abi}, expected cp39-abi3 (one wheel for every CPython >= 3.9)"
    claimed = [glibc_of(p) for p in platforms]
    if None in claimed:
        return f"{wheel.name}: platform tag {parts[-1]} is not manylinux (pip on other Linux systems refuses it)"
    try:
        r = subprocess.run([auditwheel, "show", str(wheel)], capture_output=True, text=True)
    except OSError as e:
        return f"cannot run {auditwheel}: {e} (pip install auditwheel)"
    text = " ".join((r.stdout + r.stderr).split())
    if r.returncode != 0:
        return f"auditwheel show {wheel.name} failed (exit {r.returncode}): {text}"
    m = re.search(r'is consistent with the following platform tag: "([^"]+)"', text)
    if not m:
        return f"auditwheel show {wheel.name}: no platform tag in its output: {text}"
    consistent = m.group(1)
    needed = glibc_of(consistent)
    if needed is None:
        return f"{wheel.name}: auditwheel finds it consistent only with {consistent} ({text})"
    if any(c < needed for c in claimed):
        return (f"{wheel.name}: tagged {parts[-1]} but it needs glibc {needed[0]}.{needed[1]} "
                f"(auditwheel: consistent with {consistent})")
    return ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--auditwheel", default="auditwheel", help="the auditwheel command (pip install auditwheel)")
    ap.add_argument("wheels", nargs="+", type=Path)
    a = ap.parse_args()
    missing = [w for w in a.wheels if not w.is_file()]
    if missing:
        print(f"error: no wheel file {missing[0]}", file=sys.stderr)
        return 2
    rc = 0
    for wheel in a.wheels:
        why = audit(wheel, a.auditwheel)
        if why:
            print(f"error: {why}", file=sys.stderr)
            rc = 1
        else:
            print(f"audit: {wheel.name}: abi3, manylinux-compliant (auditwheel show), "
                  f"{wheel.stat().st_size / 1e6:.1f} MB")
    return rc


if __name__ == "__main__":
    sys.exit(main())
