"""scripts/audit_wheel.py, the wheel audit of `just wheel` (which runs it on the real wheel with
PyPI's auditwheel): its verdicts on wheel names and on `auditwheel show` reports, with a
stand-in auditwheel printing a given report."""

import subprocess
import sys

import pytest

REPORT = ('{name} is consistent with\nthe following platform tag: "{tag}".\n\nThe wheel references external '
          'versioned symbols in these\nsystem-provided shared libraries: libc.so.6 with versions {{\'GLIBC_2.2.5\'}}\n')


def audit(root, tmp_path, name, tag, rc=0):
    """Runs the audit on an (empty) wheel file `name`, the stand-in reporting `tag`."""
    wheel = tmp_path / name
    wheel.write_bytes(b"")
    stub = tmp_path / "auditwheel"
    stub.write_text(f"#!{sys.executable}\nimport sys\nprint({REPORT.format(name=name, tag=tag)!r})\nsys.exit({rc})\n")
    stub.chmod(0o755)
    return subprocess.run([sys.executable, str(root / "scripts" / "audit_wheel.py"), "--auditwheel", str(stub),
                           str(wheel)], capture_output=True, text=True)


WHEEL = "dlp_mcmc-0.1.0-cp39-abi3-{}.whl"


@pytest.mark.parametrize("platform,consistent", [
    ("manylinux_2_35_x86_64", "manylinux_2_35_x86_64"),
    ("manylinux_2_35_x86_64", "manylinux_2_17_x86_64"),  # a newer tag than needed is allowed
    ("manylinux_2_17_x86_64.manylinux2014_x86_64", "manylinux_2_17_x86_64"),
])
def test_a_compliant_abi3_manylinux_wheel_passes(root, tmp_path, platform, consistent):
    r = audit(root, tmp_path, WHEEL.format(platform), consistent)
    assert r.returncode == 0 and "manylinux-compliant" in r.stdout, r.stderr


@pytest.mark.parametrize("name,consistent,why", [
    (WHEEL.format("linux_x86_64"), "linux_x86_64", "is not manylinux"),
    ("dlp_mcmc-0.1.0-cp311-cp311-manylinux_2_35_x86_64.whl", "manylinux_2_35_x86_64", "expected cp39-abi3"),
    (WHEEL.format("manylinux_2_17_x86_64"), "manylinux_2_35_x86_64", "needs glibc 2.35"),
    (WHEEL.format("manylinux2014_x86_64"), "manylinux_2_28_x86_64", "needs glibc 2.28"),
    (WHEEL.format("manylinux_2_35_x86_64"), "linux_x86_64", "consistent only with linux_x86_64"),
])
def test_a_non_compliant_wheel_fails_naming_why(root, tmp_path, name, consistent, why):
    r = audit(root, tmp_path, name, consistent)
    assert r.returncode == 1 and why in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_a_failing_auditwheel_fails_the_audit(root, tmp_path):
    r = audit(root, tmp_path, WHEEL.format("manylinux_2_35_x86_64"), "manylinux_2_35_x86_64", rc=1)
    assert r.returncode == 1 and "failed (exit 1)" in r.stderr, r.stderr
