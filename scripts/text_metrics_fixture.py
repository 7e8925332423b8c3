#!/usr/bin/env python3
"""Writes crates/dlp-text/tests/fixtures/text_metrics.json: fixed tokenised sentence sets and
their BLEU-family metrics computed by NLTK (the library Wang & Cho 2019's evaluation calls)
and by sacrebleu (an independent BLEU implementation).

The Rust test `crates/dlp-text/tests/metrics_reference.rs` recomputes every value with
`dlp_text::metrics` and must agree to 1e-10. Regenerate with

    python3 -m venv /tmp/txtenv && /tmp/txtenv/bin/pip install nltk==3.10.3 sacrebleu==2.6.0
    /tmp/txtenv/bin/python scripts/text_metrics_fixture.py

(the file records the versions that produced it). The unique n-gram percentages are Wang &
Cho's `self_unique_ngrams` / `ref_unique_ngrams` (nyu-dl/bert-gen, bert-babble.ipynb),
re-stated here on nltk.util.ngrams and collections.Counter.
"""

import json
import pathlib
import random
import warnings
from collections import Counter

import nltk
import sacrebleu
from nltk.translate.bleu_score import SmoothingFunction, corpus_bleu, sentence_bleu
from nltk.util import ngrams

OUT = pathlib.Path(__file__).resolve().parent.parent / "crates/dlp-text/tests/fixtures/text_metrics.json"
SMOOTH = SmoothingFunction()  # epsilon = 0.1


def ngram_counts(sents, n):
    return Counter(g for s in sents for g in ngrams(s, n))


def self_unique(preds, n):
    c = ngram_counts(preds, n)
    total = sum(c.values())
    return 100.0 * len([k for k, v in c.items() if v == 1]) / total if total else 0.0


def ref_unique(preds, refs, n):
    p = ngram_counts(preds, n)
    total = sum(p.values())
    r = set(ngram_counts(refs, n).keys())
    return 100.0 * len(set(p.keys()).difference(r)) / total if total else 0.0


def others(gens, i):
    return [g for j, g in enumerate(gens) if j != i]


def case(name, gens, corpus):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NLTK warns on zero precisions (method0 -> ~1e-77)
        refs_self = [others(gens, i) for i in range(len(gens))]
        out = {
            "name": name,
            "generations": [" ".join(g) for g in gens],
            "corpus": [" ".join(c) for c in corpus],
            # Each generation against the corpus, unsmoothed and with epsilon smoothing.
            "sentence_bleu_none": [sentence_bleu(corpus, g) for g in gens],
            "sentence_bleu_eps": [sentence_bleu(corpus, g, smoothing_function=SMOOTH.method1) for g in gens],
            # Wang & Cho: corpus_bleu of the generations against the whole corpus, x100.
            "corpus_bleu": 100.0 * corpus_bleu([corpus] * len(gens), gens),
            # Wang & Cho's self_bleu: corpus_bleu with the other generations as references.
            "self_bleu": 100.0 * corpus_bleu(refs_self, gens),
            # Texygen: mean sentence BLEU against the others, method1 smoothing.
            "self_bleu_mean_eps": 100.0
            * sum(sentence_bleu(refs_self[i], g, smoothing_function=SMOOTH.method1) for i, g in enumerate(gens))
            / len(gens),
            "self_unique": {str(n): self_unique(gens, n) for n in (2, 3)},
            "corpus_unique": {str(n): ref_unique(gens, corpus, n) for n in (2, 3)},
        }
    # sacrebleu on pre-tokenised text, no smoothing: an independent corpus BLEU. It counts a
    # hypothesis shorter than n as 0 n-grams where NLTK counts 1, so only where every
    # generation has >= 4 tokens; it takes one reference stream per position, so the corpus
    # BLEU (same references for all) is the comparable one.
    if all(len(g) >= 4 for g in gens):
        streams = [[" ".join(c)] * len(gens) for c in corpus]
        b = sacrebleu.corpus_bleu([" ".join(g) for g in gens], streams, tokenize="none", smooth_method="none", force=True)
        out["sacrebleu_corpus_bleu"] = b.score
    return out


def main():
    rng = random.Random(20190211)
    cases = []
    t = lambda s: s.split()
    cases.append(
        case(
            "hand",
            [t("the cat the cat on the mat"), t("the cat is on a mat"), t("a dog sat on the mat .")],
            [t("the cat is on the mat"), t("there is a cat on the mat"), t("the dog sat on the log .")],
        )
    )
    cases.append(
        case(
            "short_hypotheses",
            [t("the cat"), t("on the mat"), t("the cat sat on the mat")],
            [t("the cat sat on the mat"), t("a cat")],
        )
    )
    words = "a b c d e f g".split()
    for k in range(6):
        v = words[: 3 + k % 4]
        gens = [[rng.choice(v) for _ in range(rng.randint(4, 14))] for _ in range(5)]
        corpus = [[rng.choice(v) for _ in range(rng.randint(3, 16))] for _ in range(4)]
        cases.append(case(f"random_{k}", gens, corpus))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "generated_by": "scripts/text_metrics_fixture.py",
        "nltk": nltk.__version__,
        "sacrebleu": sacrebleu.__version__,
        "cases": cases,
    }
    OUT.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {OUT} ({len(cases)} cases)")


if __name__ == "__main__":
    main()
