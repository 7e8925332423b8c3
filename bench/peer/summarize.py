#!/usr/bin/env python3
"""Markdown tables from the JSON lines of peer_bench.py, np_dlp.py, floor_dula (and of any
other implementation that writes the same fields, e.g. a Rust run with "impl": "rust").

    python summarize.py results.jsonl [more.jsonl ...]
    python summarize.py results.jsonl --base torch-port@1     # speed-ups over that column
    python summarize.py results.jsonl --sigma 0.25

One table per sampler; rows are (model, L or dims, chains); columns are impl@threads.
Cells are ns per spin-step (seconds_per_step / (chains * spins)); with --base X they are
seconds_per_step(X) / seconds_per_step(column), i.e. how many times faster than X.
Records whose "sigma" differs from --sigma are left out (the RBM has none).  Repeated
records of one cell (several runs appended to one file) are reduced to their median.
"""
import argparse
import json
import statistics
import sys

SAMPLER_ORDER = ["dula", "dmala", "gwg", "bg-1"]
IMPL_ORDER = ["torch-upstream", "torch-port", "torch-port-cuda", "numpy", "c-floor-exp", "c-floor-table"]


def load(paths, sigma, stat):
    rows = []
    for p in paths:
        with open(p) as f:
            rows += [json.loads(l) for l in f if l.strip().startswith("{")]
    torches = {r["torch"] for r in rows if "torch" in r}
    recs = {}
    for r in rows:
        if r.get("model") == "ising" and abs(float(r.get("sigma", sigma)) - sigma) > 1e-9:
            continue
        col = "%s@%s" % (r["impl"], r.get("threads", 1))
        if len(torches) > 1 and "torch" in r:  # tell torch builds apart
            col = "%s (torch %s)" % (col, ".".join(r["torch"].split(".")[:2]))
        row = (r["model"], r.get("L") or r.get("dims"), r["chains"])
        v = r.get("seconds_per_step_min" if stat == "min" else "seconds_per_step")
        recs.setdefault((r["sampler"], row, col), []).append(v)
    return recs


def fmt(v):
    if v is None:
        return "err"
    if v >= 100:
        return "%.0f" % v
    if v >= 10:
        return "%.1f" % v
    return "%.2f" % v


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--sigma", type=float, default=0.1)
    ap.add_argument("--base", help="column to divide by, e.g. torch-port@1")
    ap.add_argument("--stat", choices=("median", "min"), default="median",
                    help="seconds_per_step (median of repeats, default) or seconds_per_step_min")
    a = ap.parse_args()
    recs = load(a.files, a.sigma, a.stat)
    med = {k: (statistics.median([x for x in v if x is not None])
               if any(x is not None for x in v) else None) for k, v in recs.items()}
    samplers = sorted({k[0] for k in med}, key=lambda s: (SAMPLER_ORDER + [s]).index(s))
    for sampler in samplers:
        keys = [k for k in med if k[0] == sampler]
        cols = sorted({k[2] for k in keys}, key=lambda c: (
            (IMPL_ORDER + [c.split("@")[0]]).index(c.split("@")[0]), c))
        rows = sorted({k[1] for k in keys}, key=lambda r: (r[0] != "ising", r[1], r[2]))
        what = ("speed-up over %s" % a.base) if a.base else "ns per spin-step"
        print("\n**%s** (%s%s)\n" % (sampler, what,
                                   ", Ising sigma=%g" % a.sigma if rows and rows[0][0] == "ising" else ""))
        print("| model | L / dims | chains | " + " | ".join(cols) + " |")
        print("|---|---:|---:|" + "---:|" * len(cols))
        for row in rows:
            cells = []
            for c in cols:
                s = med.get((sampler, row, c))
                if s is None:
                    cells.append("" if (sampler, row, c) not in med else "err")
                elif a.base:
                    b = med.get((sampler, row, a.base))
                    cells.append("" if b is None else fmt(b / s) + "x")
                else:
                    n = row[1] * row[1] if row[0] == "ising" else row[1]
                    cells.append(fmt(s * 1e9 / (row[2] * n)))
            print("| %s | %s | %s | %s |" % (row[0], row[1], row[2], " | ".join(cells)))


if __name__ == "__main__":
    sys.exit(main())
