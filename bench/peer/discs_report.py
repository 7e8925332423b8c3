#!/usr/bin/env python3
"""Joins the JSON lines of `dlp discs --peer` (ours, `impl: rust`, and DISCS's samplers in JAX,
`impl: jax-discs`, both scored by dlp's DISCS ESS) into PREFIX.csv (one row per
implementation × task × sampler), PREFIX.json (the records, the pairs and --meta) and PREFIX.md
(the same-run ratio table). Files are written atomically.

    python3 discs_report.py --prefix results/bench/discs-peer --title "### …" [--meta M.json] A.jsonl …
"""
import argparse
import csv
import io
import json
import math
import os
import sys

COLUMNS = ["impl", "task", "sampler", "chains", "steps", "burn", "kept", "ess", "ess_std", "ess_per_step",
           "seconds", "ess_per_second", "ess_per_eval", "accept", "compile_seconds", "num_ll_calls",
           "evals_per_chain", "step_size", "kernel", "discs_class", "threads", "error"]


def load(paths):
    rows = []
    for p in paths:
        with open(p) as f:
            for i, line in enumerate(f, 1):
                if line.strip():
                    try:
                        rows.append(json.loads(line))
                    except json.JSONDecodeError as e:
                        raise SystemExit(f"error: {p}:{i}: {e}")
    return rows


def fmt(x, digits=3):
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "—"
    if isinstance(x, (int, float)):
        if x == 0:
            return "0"
        a = abs(x)
        if a >= 1000:
            return f"{x:,.0f}"
        return f"{x:.{digits}g}"
    return str(x)


def pairs(rows):
    """(task, sampler) → {impl: record}, in first-seen order."""
    out = {}
    for r in rows:
        out.setdefault((r.get("task"), r.get("sampler")), {})[r.get("impl")] = r
    return out


def ratio(a, b):
    if a is None or b is None or not b or not math.isfinite(a) or not math.isfinite(b):
        return None
    return a / b


def table(rows):
    """The markdown ratio table and the pair records."""
    lines = ["| task | sampler | ESS ours | ESS DISCS | ESS/s ours | ESS/s DISCS | **ESS/s ratio** | "
             "ESS/eval ours (our count) | ESS/eval DISCS (its count) | accept ours / DISCS |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    recs = []
    for (task, sampler), by in pairs(rows).items():
        o, t = by.get("rust", {}), by.get("jax-discs", {})
        r = ratio(o.get("ess_per_second"), t.get("ess_per_second"))
        recs.append({"task": task, "sampler": sampler, "ess_per_second_ratio": r,
                     "ess_ratio": ratio(o.get("ess"), t.get("ess")),
                     "ours_error": o.get("error"), "discs_error": t.get("error")})
        if o.get("error"):
            note = "ours: " + o["error"].split(":")[0] if len(o["error"]) > 60 else "ours: " + o["error"]
            lines.append(f"| `{task}` | {sampler} | — | {fmt(t.get('ess'))} | — | {fmt(t.get('ess_per_second'))} | "
                         f"— ({note}) | — | {fmt(t.get('ess_per_eval'))} | — / {fmt(t.get('accept'), 2)} |")
            continue
        lines.append(
            f"| `{task}` | {sampler} | {fmt(o.get('ess'))} | {fmt(t.get('ess'))} | {fmt(o.get('ess_per_second'))} | "
            f"{fmt(t.get('ess_per_second'))} | **{fmt(r)}** | {fmt(o.get('ess_per_eval'))} | "
            f"{fmt(t.get('ess_per_eval'))} | {fmt(o.get('accept'), 2)} / {fmt(t.get('accept'), 2)} |")
    return "\n".join(lines) + "\n", recs


def write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--prefix", required=True)
    p.add_argument("--title", default="")
    p.add_argument("--notes", default="", help="markdown appended under the table")
    p.add_argument("--meta", help="JSON file put under `meta` in PREFIX.json")
    p.add_argument("files", nargs="+")
    a = p.parse_args(argv)
    rows = load(a.files)
    if not rows:
        raise SystemExit("error: discs_report.py: no records in " + ", ".join(a.files))
    md, recs = table(rows)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: r.get(k) for k in COLUMNS})
    meta = json.load(open(a.meta)) if a.meta else {}
    write(a.prefix + ".csv", buf.getvalue())
    write(a.prefix + ".json", json.dumps({"schema": "dlp.bench.discs-peer.v1", "meta": meta, "pairs": recs,
                                          "records": rows}, indent=1) + "\n")
    body = (a.title.strip() + "\n\n" if a.title else "") + md + ("\n" + a.notes.strip() + "\n" if a.notes else "")
    write(a.prefix + ".md", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
