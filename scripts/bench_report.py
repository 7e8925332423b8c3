#!/usr/bin/env python3
"""Joins peer and rust JSON lines (the peer harness schema) into results/bench/:
bench.csv and bench.json (one row per configuration: sampler, model, L, dims, chains, sigma,
threads; median seconds per step of each implementation; ratios rust/peer) and
ns_per_spin.svg (log-log ns per spin-step vs number of spins, Ising, 1 thread, largest
chain count, one line per implementation and sampler). Standard library only (no
matplotlib on these machines): the SVG is drawn by hand.

    python3 bench_report.py peer.jsonl rust.jsonl --out results/bench
"""
import argparse, csv, json, math, os, statistics, tempfile

IMPLS = ["rust", "rust-generic", "torch-port", "torch-upstream", "numpy", "c-floor-table", "c-floor-exp"]


def atomic_write(path, text):
    d = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    recs = []
    for p in a.files:
        with open(p) as f:
            recs += [json.loads(l) for l in f if l.strip().startswith("{")]
    cells, loads = {}, {}
    for r in recs:
        key = (r["sampler"], r["model"], r.get("L"), r["dims"], r["chains"], r.get("sigma"), r.get("threads", 1))
        v = r.get("seconds_per_step")
        if v is not None:
            cells.setdefault(key, {}).setdefault(r["impl"], []).append(v)
        if r.get("load1_at_start") is not None:
            loads.setdefault(r["impl"], []).append(r["load1_at_start"])
    rows = []
    for key in sorted(cells, key=lambda k: (k[0], k[1], k[3], k[4], str(k[5]), k[6])):
        s, m, L, dims, B, sigma, thr = key
        med = {i: statistics.median(v) for i, v in cells[key].items()}
        row = dict(sampler=s, model=m, L=L, dims=dims, chains=B, sigma=sigma, threads=thr)
        for i in IMPLS:
            row["s_" + i] = med.get(i)
            row["ns_spin_" + i] = med[i] * 1e9 / (B * dims) if i in med else None
        # dula-f32 / dmala-f32 have no peer of their own: compare with the peer's dula / dmala
        # (the reference computes its gradients in f32 too).
        peer = med
        if s.endswith("-f32"):
            sib = cells.get((s[: -len("-f32")],) + key[1:], {})
            peer = {i: statistics.median(v) for i, v in sib.items()}
        for base in ("torch-port", "numpy", "c-floor-table"):
            row["rust_over_" + base] = med["rust"] / peer[base] if "rust" in med and base in peer else None
        rows.append(row)
    os.makedirs(a.out, exist_ok=True)
    atomic_write(os.path.join(a.out, "bench.json"), json.dumps(
        dict(rows=rows, load1_by_impl={k: [min(v), max(v)] for k, v in loads.items()}), indent=1) + "\n")
    header = list(rows[0].keys()) if rows else []
    import io
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=header)
    w.writeheader()
    w.writerows(rows)
    atomic_write(os.path.join(a.out, "bench.csv"), buf.getvalue())
    atomic_write(os.path.join(a.out, "ns_per_spin.svg"), plot(rows))
    print("wrote %d rows to %s" % (len(rows), a.out))


def plot(rows):
    # Ising, 1 thread, sigma 0.1 (or any), the largest chain count present per line.
    lines = {}
    for r in rows:
        if r["model"] != "ising" or r["threads"] != 1 or r["sampler"] not in ("dula", "dmala"):
            continue
        for i in IMPLS:
            v = r["ns_spin_" + i]
            if v is None:
                continue
            lines.setdefault((i, r["sampler"]), {}).setdefault(r["chains"], {})[r["dims"]] = v
    series = []
    for (i, s), by_b in sorted(lines.items()):
        B = max(by_b)
        pts = sorted(by_b[B].items())
        series.append(("%s %s (B=%d)" % (i, s, B), pts, s))
    W, H, ml, mr, mt, mb = 760, 480, 70, 230, 30, 50
    xs = [x for _, p, _ in series for x, _ in p] or [1, 10]
    ys = [y for _, p, _ in series for _, y in p] or [1, 10]
    x0, x1 = math.log10(min(xs)) - 0.1, math.log10(max(xs)) + 0.1
    y0, y1 = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
    X = lambda x: ml + (math.log10(x) - x0) / (x1 - x0) * (W - ml - mr)
    Y = lambda y: H - mb - (math.log10(y) - y0) / max(y1 - y0, 1e-9) * (H - mt - mb)
    colors = {"rust": "#d62728", "rust-generic": "#ff9896", "torch-port": "#1f77b4", "torch-upstream": "#17becf",
              "numpy": "#2ca02c", "c-floor-table": "#000000", "c-floor-exp": "#7f7f7f"}
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">' % (W, H),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="18" font-size="13">ns per spin-step vs spins (Ising, 1 thread; log-log)</text>' % ml]
    for e in range(int(y0), int(y1) + 1):
        y = Y(10 ** e)
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>' % (ml, W - mr, y, y))
        out.append('<text x="%d" y="%.1f" text-anchor="end">1e%d</text>' % (ml - 5, y + 4, e))
    for x in sorted(set(xs)):
        out.append('<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#eee"/>' % (X(x), X(x), mt, H - mb))
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%d</text>' % (X(x), H - mb + 15, x))
    out.append('<text x="%d" y="%d" text-anchor="middle">spins d = L²</text>' % ((ml + W - mr) // 2, H - 12))
    for k, (label, pts, s) in enumerate(series):
        c = colors.get(label.split()[0], "#9467bd")
        dash = ' stroke-dasharray="5,3"' if s == "dmala" else ""
        path = " ".join("%.1f,%.1f" % (X(x), Y(y)) for x, y in pts)
        out.append('<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>' % (c, dash, path))
        for x, y in pts:
            out.append('<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"/>' % (X(x), Y(y), c))
        ly = mt + 14 * k
        out.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2"%s/>' % (W - mr + 10, W - mr + 30, ly, ly, c, dash))
        out.append('<text x="%d" y="%d">%s</text>' % (W - mr + 35, ly + 4, label))
    out.append("</svg>")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    main()
