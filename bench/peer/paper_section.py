#!/usr/bin/env python3
"""Puts the same-run ratio tables of `just bench-peer` into a markdown page, between
<!-- bench-peer:DEVICE:begin --> and <!-- bench-peer:DEVICE:end --> (replacing what is there),
or, the first time, in a new section at the end of the page. The page is rewritten atomically.

    python3 paper_section.py paper/performance.md cpu results/bench/ratios.md
    python3 paper_section.py paper/discs.md discs results/bench/discs-peer.md
"""
import os
import sys
import tempfile

HEADING = {"cpu": "## Peer comparison from a fresh clone: `just bench-peer`",
           "cuda": "## Peer comparison on a GPU: `just bench-peer --device cuda`",
           "discs": "## DISCS's own samplers, same run: `just bench-peer-discs`"}
COMMAND = {"cpu": ("just bench-peer", "scripts/bench_peer.sh", "results/bench/"),
           "cuda": ("just bench-peer --device cuda", "scripts/bench_peer.sh", "results/bench/"),
           "discs": ("just bench-peer-discs", "scripts/bench_peer_discs.sh", "results/bench/discs-peer.{csv,json,md}")}


def splice(page, device, body):
    """page with the block for device replaced by body (appended in a new section if absent)."""
    begin, end = "<!-- bench-peer:%s:begin -->" % device, "<!-- bench-peer:%s:end -->" % device
    block = "%s\n%s\n%s" % (begin, body.strip("\n"), end)
    i, j = page.find(begin), page.find(end)
    if i >= 0 and j > i:
        return page[:i] + block + page[j + len(end):]
    if i >= 0 or j >= 0:
        raise ValueError("only one of %s / %s is in the page" % (begin, end))
    note = ("Written by `%s` (`%s`); the next run replaces the block below. The raw records are in "
            "`%s`." % COMMAND[device])
    return page.rstrip("\n") + "\n\n%s\n\n%s\n\n%s\n" % (HEADING[device], note, block)


def main():
    if len(sys.argv) != 4 or sys.argv[2] not in HEADING:
        sys.exit("error: usage: paper_section.py PAGE.md cpu|cuda|discs RATIOS.md")
    page_path, device, body_path = sys.argv[1:]
    try:
        with open(page_path) as f:
            page = f.read()
        with open(body_path) as f:
            body = f.read()
        new = splice(page, device, body)
    except (OSError, ValueError) as e:
        print("error: paper_section.py: %s" % e, file=sys.stderr)
        return 2
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(page_path)), prefix=".tmp-")
    with os.fdopen(fd, "w") as f:
        f.write(new)
    os.chmod(tmp, 0o644)
    os.replace(tmp, page_path)
    print("updated %s (bench-peer:%s block)" % (page_path, device), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
