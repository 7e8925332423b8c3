//! `dlp_text::metrics` against NLTK 3.10.3 and sacrebleu 2.6.0 on fixed sentence sets
//! (`tests/fixtures/text_metrics.json`, written by `scripts/text_metrics_fixture.py`; the
//! unique n-gram values there are Wang & Cho's functions on NLTK's n-grams). Deterministic:
//! every value must agree to 1e-10 absolute (NLTK's unsmoothed zero scores are ~1e-75, ours
//! exactly 0).

use dlp_text::metrics::{
    Smoothing, corpus_bleu_against, corpus_unique_ngrams, ngram_set, self_bleu, self_bleu_mean, self_unique_ngrams,
    sentence_bleu,
};
use serde_json::Value;

const TOL: f64 = 1e-10;

fn close(ours: f64, theirs: &Value, what: &str, case: &str) {
    let theirs = theirs.as_f64().unwrap_or_else(|| panic!("{case}: {what} is not a number"));
    assert!((ours - theirs).abs() <= TOL, "{case}: {what}: ours {ours}, reference {theirs}");
}

#[test]
fn metrics_agree_with_nltk_and_sacrebleu() {
    let raw = include_str!("fixtures/text_metrics.json");
    let doc: Value = serde_json::from_str(raw).expect("fixture parses");
    let cases = doc["cases"].as_array().expect("cases");
    assert!(cases.len() >= 8);
    let mut sacre = 0;
    for c in cases {
        let name = c["name"].as_str().unwrap();
        let split = |key: &str| -> Vec<Vec<String>> {
            c[key]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().split(' ').map(String::from).collect())
                .collect()
        };
        let (gens_own, corpus_own) = (split("generations"), split("corpus"));
        let gens: Vec<&[String]> = gens_own.iter().map(Vec::as_slice).collect();
        let corpus: Vec<&[String]> = corpus_own.iter().map(Vec::as_slice).collect();
        for (i, g) in gens.iter().enumerate() {
            close(sentence_bleu(g, &corpus, Smoothing::None), &c["sentence_bleu_none"][i], "sentence BLEU", name);
            close(
                sentence_bleu(g, &corpus, Smoothing::Epsilon(0.1)),
                &c["sentence_bleu_eps"][i],
                "sentence BLEU ε",
                name,
            );
        }
        close(corpus_bleu_against(&gens, &corpus), &c["corpus_bleu"], "corpus BLEU", name);
        if let Some(v) = c.get("sacrebleu_corpus_bleu") {
            close(corpus_bleu_against(&gens, &corpus), v, "corpus BLEU (sacrebleu)", name);
            sacre += 1;
        }
        close(self_bleu(&gens), &c["self_bleu"], "Self-BLEU", name);
        close(self_bleu_mean(&gens, Smoothing::Epsilon(0.1)), &c["self_bleu_mean_eps"], "Self-BLEU mean", name);
        for n in [2usize, 3] {
            close(self_unique_ngrams(&gens, n), &c["self_unique"][n.to_string()], "unique self", name);
            let set = ngram_set(&corpus, n);
            close(corpus_unique_ngrams(&gens, n, &set), &c["corpus_unique"][n.to_string()], "unique corpus", name);
        }
    }
    assert!(sacre >= 6, "sacrebleu compared on only {sacre} cases");
}
