#!/usr/bin/env python3
"""Joins peer and rust JSON lines (the peer harness schema) into results/bench/:
bench.csv and bench.json (one row per configuration: sampler, model, L, dims, chains, sigma,
threads; median seconds per step of each implementation; ratios rust/peer) and
ns_per_spin.svg (log-log ns per spin-step vs number of spins, Ising, 1 thread, largest
chain count, one line per implementation and sampler), and with --markdown FILE the
same-run table of paper/performance.md (ours beside the ported official code, ratios).
Standard library only (no matplotlib on these machines): the SVG is drawn by hand.

    python3 bench_report.py peer.jsonl rust.jsonl --out results/bench [--markdown ratios.md --title T]
"""
import argparse, csv, json, math, os, statistics, tempfile

IMPLS = ["rust", "rust-generic", "rust-cuda", "rust-device-cpu", "torch-port", "torch-port-cuda", "torch-upstream",
         "numpy", "c-floor-table", "c-floor-exp"]


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
    ap.add_argument("--markdown", help="also write the same-run ratio tables (markdown) here")
    ap.add_argument("--title", default="Same-run ratios", help="heading line of --markdown")
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
    if a.markdown:
        atomic_write(a.markdown, markdown(rows, a.title))
    print("wrote %d rows to %s" % (len(rows), a.out))


def fmt(v):
    if v is None:
        return "–"
    return "%.3g" % v if v < 1000 else "%.0f" % v


def ratio(v):
    return ("%.3g" % v if v < 1000 else "%.0f" % v) + "x"


def markdown(rows, title):
    """The tables of the paper page: one row per (sampler, model, size, chains); ns per
    spin-step of each implementation, and how many times faster ours is than the official
    algorithms (port), all from the records of this run. With GPU peer rows, ours at every
    thread count is set against the official code on the GPU."""
    out = [title, ""]
    peer_of = {}  # dula-f32 is set against the peer's dula (the reference computes in f32 too)
    for r in rows:
        peer_of[(r["sampler"], r["model"], r["L"], r["dims"], r["chains"], r["sigma"], r["threads"])] = r
    def peer(r, col):
        s = r["sampler"][: -len("-f32")] if r["sampler"].endswith("-f32") else r["sampler"]
        p = peer_of.get((s, r["model"], r["L"], r["dims"], r["chains"], r["sigma"], r["threads"]))
        return p and p[col]
    cpu = [r for r in rows if r["threads"] == 1 and r["s_rust"] is not None and peer(r, "s_torch-port") is not None]
    if cpu:
        out += ["ns per spin-step, 1 thread; × = official (port) / dlp, same run.", "",
                "| sampler | model | L / dims | chains | official (port) | dlp | × | dlp generic | numpy | C floor (table) |",
                "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for r in cpu:
            size = r["L"] if r["model"] == "ising" else "%d×500" % r["dims"]
            ref = peer(r, "ns_spin_torch-port")
            out.append("| %s | %s | %s | %d | %s | %s | %s | %s | %s | %s |" % (
                r["sampler"], r["model"], size, r["chains"], fmt(ref), fmt(r["ns_spin_rust"]),
                ratio(ref / r["ns_spin_rust"]), fmt(r["ns_spin_rust-generic"]),
                fmt(peer(r, "ns_spin_numpy")), fmt(peer(r, "ns_spin_c-floor-table"))))
        ratios = {}
        for r in cpu:
            ratios.setdefault(r["sampler"], []).append(peer(r, "ns_spin_torch-port") / r["ns_spin_rust"])
        out += ["", "Geometric mean of × per sampler: " + ", ".join(
            "%s %s (%d row%s)" % (k, ratio(math.exp(statistics.fmean(map(math.log, v)))), len(v),
                                   "" if len(v) == 1 else "s")
            for k, v in sorted(ratios.items())) + ".", ""]
    gpu = {}
    for r in rows:
        if r["s_torch-port-cuda"] is not None:
            gpu[(r["sampler"], r["model"], r["L"], r["dims"], r["chains"], r["sigma"])] = r["ns_spin_torch-port-cuda"]
    ours = [r for r in rows if r["s_rust"] is not None]
    thr = sorted({r["threads"] for r in ours})
    if gpu and ours:
        table = []
        by = {}
        for r in ours:
            by.setdefault((r["sampler"], r["model"], r["L"], r["dims"], r["chains"], r["sigma"]), {})[r["threads"]] = r
        for key, per in by.items():
            s = key[0][: -len("-f32")] if key[0].endswith("-f32") else key[0]
            ref = gpu.get((s,) + key[1:])
            if ref is None:
                continue
            cells = []
            for t in thr:
                v = per.get(t) and per[t]["ns_spin_rust"]
                cells += [fmt(v), ratio(ref / v) if v else "–"]
            size = key[2] if key[1] == "ising" else "%d×500" % key[3]
            table.append("| %s | %s | %s | %d | %s | %s |" % (key[0], key[1], size, key[4], fmt(ref), " | ".join(cells)))
        if table:
            out += ["ns per spin-step; official code (port) on the GPU against dlp on this machine's CPU threads; "
                    "× = official / dlp, same run.", "",
                    "| sampler | model | L / dims | chains | official, GPU | " +
                    " | ".join("dlp %d thr | ×" % t for t in thr) + " |",
                    "|---|---|---:|---:|---:|" + "---:|---:|" * len(thr)] + table + [""]
    # dlp's device-resident chains on the GPU (`dlp bench --device cuda`) against the official
    # code on the same GPU: both carry threads = 1, so they share a row.
    # The device path has no bg-1 (a random-permutation scan); its `gibbs` (random-scan
    # single-site Gibbs, the same per-step work) stands against the official bg-1.
    by_key = {(r["sampler"], r["model"], r["L"], r["dims"], r["chains"], r["sigma"]): r for r in rows}
    both = []
    for r in rows:
        if r["s_rust-cuda"] is None:
            continue
        ref_row = by_key.get((("bg-1" if r["sampler"] == "gibbs" else r["sampler"]),) + (r["model"], r["L"], r["dims"], r["chains"], r["sigma"]))
        if ref_row is not None and ref_row["s_torch-port-cuda"] is not None:
            both.append((r, ref_row))
    if both:
        out += ["ns per spin-step on the same GPU, same run; × = official (port) / dlp; ms per step in brackets.", "",
                "| sampler | model | L / dims | chains | official, GPU | dlp, GPU | × |",
                "|---|---|---:|---:|---:|---:|---:|"]
        for r, p in both:
            size = r["L"] if r["model"] == "ising" else "%d×500" % r["dims"]
            ref, v = p["ns_spin_torch-port-cuda"], r["ns_spin_rust-cuda"]
            name = r["sampler"] if r["sampler"] == p["sampler"] else "%s (official: %s)" % (r["sampler"], p["sampler"])
            out.append("| %s | %s | %s | %d | %s (%.3g ms) | %s (%.3g ms) | %s |" % (
                name, r["model"], size, r["chains"], fmt(ref), 1e3 * p["s_torch-port-cuda"], fmt(v),
                1e3 * r["s_rust-cuda"], ratio(ref / v)))
        out.append("")
    scaling = {}
    for r in rows:
        if r["s_rust"] is not None:
            scaling.setdefault((r["sampler"], r["model"], r["L"], r["dims"], r["chains"], r["sigma"]), {})[r["threads"]] = r["s_rust"]
    scaling = {k: v for k, v in scaling.items() if len(v) > 2 and 1 in v}
    if scaling:
        thr = sorted({t for v in scaling.values() for t in v})
        out += ["dlp on the CPU: speed-up over 1 thread, same run.", "",
                "| sampler | model | L / dims | chains | 1 thread, ms/step | " + " | ".join("%d thr" % t for t in thr[1:]) + " |",
                "|---|---|---:|---:|---:|" + "---:|" * (len(thr) - 1)]
        for key, per in sorted(scaling.items(), key=lambda kv: str(kv[0])):
            size = key[2] if key[1] == "ising" else "%d×500" % key[3]
            cells = [("%.2f×" % (per[1] / per[t])) if t in per else "–" for t in thr[1:]]
            out.append("| %s | %s | %s | %d | %.3g | %s |" % (key[0], key[1], size, key[4], 1e3 * per[1], " | ".join(cells)))
        out.append("")
    if len(out) == 2:
        out.append("(no configuration was measured by both dlp and the official code in this run)\n")
    return "\n".join(out)


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
    colors = {"rust": "#d62728", "rust-cuda": "#e377c2", "torch-port-cuda": "#8c564b", "rust-generic": "#ff9896", "torch-port": "#1f77b4", "torch-upstream": "#17becf",
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
