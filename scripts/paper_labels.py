#!/usr/bin/env python3
"""Extract the citable labels of the papers' texts into paper/labels.json.

Run by hand when a paper text changes: `python3 scripts/paper_labels.py PAPERS_DIR` (the
directory of the papers' text files). Nothing that builds or tests the project runs it, and it
has no default location: the papers are not kept in the
repository, so the citation test (crates/dlp-core/tests/paper_citations.rs) reads only the
file written here. The texts are plain-text conversions that lost most equation numbers and
every figure caption's own line in paper 000, so each label is collected from the headings
*and* from the text's references to it ("Figure 9", "Equation (4)", "(21)" at the end of a
display): a label the text refers to exists in the paper.
"""

import json
import pathlib
import re
import sys

HERE = pathlib.Path(__file__).resolve().parent.parent
PAPERS = {
    "000": "Zhang, Liu & Liu, ICML 2022, A Langevin-like Sampler for Discrete Distributions",
    "001": "Yokoi, Otsuka & Sato, On Transformations in Stochastic Gradient MCMC",
    "002": "slides of 000",
    "003": "Kanagawa, blog post on kernel Stein discrepancy for discrete distributions",
    "004": "Han et al., AISTATS 2020, Stein Variational Inference for Discrete Distributions",
}


def numeric_key(label):
    """Sort 1, 1a, 1b, 2, …, 10, then named labels; dotted parts compare as numbers."""
    key = []
    for part in label.split("."):
        m = re.fullmatch(r"(\d+)([a-z]?)", part)
        key.append((0, int(m.group(1)), m.group(2)) if m else (1, 0, part))
    return key


# A reference to another work's label ("the proof of Theorem 1 in Zanella (2020)", "Theorem 6
# of Sato and Nakagawa (2014)") is not a label of this paper.
ELSEWHERE = r"(?!\s+(?:in|of)\s+[A-Z][a-z]+(?:\s+(?:et al\.|and [A-Z][a-z]+|&\s*[A-Z][a-z]+))?,?\s*\(?\d{4})"


def extract(text):
    lines = text.splitlines()
    sections, appendices = set(), set()
    # The appendix starts at the first line that is "Appendix" alone (004) or "Appendix A …".
    start = next(
        (i for i, l in enumerate(lines) if re.fullmatch(r"\s*Appendix\s*", l) or re.match(r"Appendix [A-Z] ", l)),
        len(lines),
    )
    for i, line in enumerate(lines):
        if i < start:
            m = re.match(r"(\d+(?:\.\d+)*) +[A-Z]", line)
            if m:
                sections.add(m.group(1))
        else:
            m = re.match(r"(?:Appendix )?([A-Z](?:\.\d+)*) +[A-Z][A-Za-z]", line)
            if m:
                appendices.add(m.group(1))
    def refs(pattern):
        return {m.group(1) for m in re.finditer(pattern + ELSEWHERE, text)}

    figures = refs(r"\bFig(?:ure|\.)\s?(\d+[a-z]?)\b")
    # "Figure 1a" is a panel of Figure 1, which then exists too.
    figures |= {f.rstrip("abcdefgh") for f in figures}
    tables = refs(r"\bTable (\d+)\b")
    algorithms = refs(r"\bAlg(?:orithm|\.)\s?(\d+)\b")
    equations = set()
    for pat in (
        r"\| \((\d+)\) \|",  # 000: equation tags left as table cells
        r"\\quad \((\d+)\)\$\$",  # 004: display equations
        r"[.,]\s\((\d+)\)\s*$",  # 001: "… . (10)" ending a display line
        r"\bEq(?:uation|\.)\s?\((\d+)\)",  # "Equation (4)", "Eq. (16)"
        r"\bSDE \((\d+)\)",
    ):
        equations |= {m.group(1) for m in re.finditer(pat, text, re.M)}
    tags = refs(r"\\tag\{([^}]*)\}")  # 003's named equations
    out = {
        "sections": sorted(sections, key=numeric_key),
        "appendices": sorted(appendices, key=numeric_key),
        "figures": sorted(figures, key=numeric_key),
        "tables": sorted(tables, key=numeric_key),
        "algorithms": sorted(algorithms, key=numeric_key),
        "equations": sorted(equations | tags, key=numeric_key),
    }
    for kind, word in (
        ("theorems", "Theorem"),
        ("lemmas", "Lemma"),
        ("propositions", "Proposition"),
        ("definitions", "Definition"),
        ("assumptions", "Assumption"),
        ("corollaries", "Corollary"),
    ):
        out[kind] = sorted(refs(rf"\b{word} (\d+(?:\.\d+)*)\b"), key=numeric_key)
    return out


def main():
    if len(sys.argv) != 2 or not pathlib.Path(sys.argv[1]).is_dir():
        sys.exit("error: give the directory of the papers' text files: python3 scripts/paper_labels.py PAPERS_DIR")
    src = pathlib.Path(sys.argv[1])
    papers = {}
    for pid, title in PAPERS.items():
        [path] = sorted(src.glob(f"{pid}_*.txt"))
        papers[pid] = {"title": title, "source": path.name, **extract(path.read_text(encoding="utf-8"))}
    doc = {
        "about": "Labels citable per paper, extracted by scripts/paper_labels.py from the papers' "
        "texts (not in the repository); read by crates/dlp-core/tests/paper_citations.rs. "
        "Regenerate, do not edit by hand.",
        "papers": papers,
    }
    out = HERE / "paper" / "labels.json"
    # One line per paper and kind, so a regenerated file diffs by label list.
    text = json.dumps(doc, indent=1, ensure_ascii=False)
    text = re.sub(r"\[\n\s*([^\[\]{}]*?)\n\s*\]", lambda m: "[" + re.sub(r",\n\s*", ", ", m.group(1)) + "]", text)
    out.write_text(text + "\n", encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
