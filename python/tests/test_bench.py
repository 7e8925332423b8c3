"""python/bench/overhead.py --quick runs (seconds) and writes what its table is made of: the
CLI-vs-package ratio with identical final states, and one per-step row per model, chain count
and implementation, timed or saying why not (torch is absent from this environment)."""

import csv
import json
import subprocess
import sys


def test_overhead_quick_writes_the_summary_and_every_row(root, dlp_bin, tmp_path):
    out = tmp_path / "bench"
    r = subprocess.run([sys.executable, str(root / "python" / "bench" / "overhead.py"), "--quick", "--dlp", dlp_bin,
                        "--out", str(out)], capture_output=True, text=True, cwd=root)
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    cli = s["cli_vs_python"]
    assert cli["same_final_states"] is True and cli["python_over_cli"] > 0
    assert cli["pairs"] == 1 and "paired_ratio_ci95" not in cli, cli
    rows = {(x["model"], x["chains"], x["implementation"]): x for x in s["per_step"]}
    impls = ["built-in", "numpy callback", "from_torch", "from_jax", "official PyTorch port"]
    assert set(rows) == {(m, 32, i) for m in ("ising", "rbm") for i in impls}
    for key, row in rows.items():
        # Timed, or not run with a reason: a missing framework, or (quick mode's tiny budget)
        # t(2n) <= t(n); the package's own rows and JAX (installed here) have no other reason.
        assert ("us_per_step" in row) != ("not_run" in row), row
        if key[2] in ("built-in", "numpy callback", "from_jax") and "not_run" in row:
            assert row["not_run"].startswith("t(2n) = "), row
        if "us_per_step" in row:
            assert row["us_per_step"] > 0 and row["steps"] >= 2
    with open(out / "per_step.csv") as f:
        assert len(list(csv.DictReader(f))) == len(rows)
    assert "| RBM 784×500 | 32 |" in r.stdout


def test_paired_ratio_interval_is_the_binomial_order_statistics(root):
    # 31 pairs: P(Binomial(31, 1/2) <= 9) = 0.0147 <= 0.025 < P(<= 10) = 0.0354, so the interval
    # is the 10th and 22nd smallest ratio; below 6 pairs there is none.
    sys.path.insert(0, str(root / "python" / "bench"))
    from overhead import paired_ratio
    r = paired_ratio([1.0 + i / 100 for i in range(31)][::-1])
    assert r["pairs"] == 31 and r["paired_ratio_median"] == 1.15
    assert r["paired_ratio_ci95"] == [1.09, 1.21]
    assert "paired_ratio_ci95" not in paired_ratio([1.0, 2.0, 3.0, 4.0, 5.0])
    assert paired_ratio([1.0] * 6)["paired_ratio_ci95"] == [1.0, 1.0]
