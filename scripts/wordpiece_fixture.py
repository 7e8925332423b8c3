#!/usr/bin/env python3
"""Writes crates/dlp-tensor/tests/fixtures/wordpiece.json: two small WordPiece vocabularies
(uncased and cased), tricky input lines, and the token ids Hugging Face's pure-Python
`BertTokenizer` (transformers' "slow" tokenizer, an implementation independent of the Rust
`tokenizers` crate that dlp uses) gives them.

The Rust test `crates/dlp-tensor/tests/wordpiece_reference.rs` tokenises every line with
`dlp_tensor::bert::Vocab` and must give the same ids, or refuse the line naming the word
where the reference has `[UNK]`. Regenerate with

    python3 -m venv /tmp/tokenv && /tmp/tokenv/bin/pip install transformers==4.46.3
    /tmp/tokenv/bin/python scripts/wordpiece_fixture.py

(the file records the version that produced it).
"""

import json
import pathlib
import tempfile

import transformers
from transformers import BertTokenizer

OUT = pathlib.Path(__file__).resolve().parent.parent / "crates/dlp-tensor/tests/fixtures/wordpiece.json"

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[unused0]"]
WORDS = [
    "the", "whale", "sea", "cafe", "naive", "resume", "play", "##ing", "##ed", "##s", "un",
    "##believ", "##able", "a", "b", "c", "##a", "##b", "##c", "x", "##y", "1", "##2", "##3",
    "2", "3", "ahab", "moby", "dick", "'", "##'", "ship",
    ".", ",", ";", ":", "!", "?", "-", "—", "(", ")", "\"", "$", "%", "&", "/", "…", "«", "»",
    "海", "洋", "中",
]
CASED_EXTRA = ["The", "Whale", "Ahab", "Café", "café", "é", "##é", "Moby", "Dick", "É", "##É"]

LINES = [
    "The whale playing, played.",
    "Unbelievable!",
    "unbelievable... the sea?",
    "Café naïve résumé",
    "CAFÉ NAÏVE",
    "ahab's ship",
    "moby-dick (the whale) — \"the sea\"",
    "x xy xyy 123 1 2 3",
    "«the sea» … $3 & 2%",
    "海洋 the 中sea",
    "the\tsea\u00a0whale\u2003ship",
    "the\u200bsea",
    "whale\u0000sea",
    "Moby Dick",
    "É é",
    "the kraken",
    "the 🐋 sea",
    "abcabc",
    "ÀHAB",
]


def ids_for(vocab, lower):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8") as f:
        f.write("\n".join(vocab) + "\n")
        path = f.name
    tok = BertTokenizer(path, do_lower_case=lower, tokenize_chinese_chars=True)
    out = []
    for line in LINES:
        toks = tok.tokenize(line)
        out.append({"line": line, "tokens": toks, "ids": tok.convert_tokens_to_ids(toks)})
    return out


def main():
    uncased = SPECIALS + WORDS
    cased = SPECIALS + WORDS + CASED_EXTRA
    doc = {
        "generator": f"scripts/wordpiece_fixture.py with transformers {transformers.__version__} BertTokenizer (slow)",
        "vocabularies": [
            {"name": "uncased", "tokens": uncased, "do_lower_case": True, "cases": ids_for(uncased, True)},
            {"name": "cased", "tokens": cased, "do_lower_case": False, "cases": ids_for(cased, False)},
        ],
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
