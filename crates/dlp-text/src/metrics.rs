//! Text-generation metrics of the infilling experiment (main paper §7.5 / Table 3, after
//! Wang & Cho 2019 and Texygen): BLEU, Self-BLEU, unique n-grams, corpus BLEU, recovery.
//!
//! Definitions, chosen to match the code the Table 3 layout comes from (Wang & Cho's
//! `bert-gen` notebook, nyu-dl/bert-gen `bert-babble.ipynb`, which calls NLTK):
//!
//! * **BLEU** = NLTK 3.10 `corpus_bleu`: modified n-gram precisions for n = 1..4 with uniform
//!   weights, numerators and denominators summed over the hypotheses (micro average; each
//!   hypothesis' denominator is at least 1), brevity penalty `exp(1 − r/c)` when c ≤ r with r
//!   the sum of the closest reference lengths (ties to the shorter). A sentence BLEU is the
//!   corpus BLEU of one hypothesis. Smoothing: [`Smoothing::None`] (NLTK's `method0`: a zero
//!   precision makes the score 0; we return exactly 0 where NLTK returns ~1e-77) or
//!   [`Smoothing::Epsilon`] (`method1`, ε = 0.1 added to zero numerators, Texygen's choice).
//! * **Self-BLEU** ([`self_bleu`]) = Wang & Cho's: the corpus BLEU of the set where the
//!   references of generation i are all the other generations (unsmoothed), × 100.
//!   Texygen's variant ([`self_bleu_mean`]) averages the sentence BLEUs (each generation
//!   against the others) instead; both are given, the first is the one Table 3 reports.
//! * **Unique n-grams, self** ([`self_unique_ngrams`]) = Wang & Cho's: the number of n-gram
//!   *types* that occur exactly once in the whole generation set, divided by the number of
//!   n-gram *tokens* of the set, × 100. An n-gram occurring once occurs in no other
//!   generation (and is not repeated within its own).
//! * **Unique n-grams against a corpus** ([`corpus_unique_ngrams`]) = Wang & Cho's: the number
//!   of distinct n-gram types of the set that do not occur in the corpus, divided by the
//!   number of n-gram tokens of the set, × 100.
//! * **Corpus BLEU** ([`corpus_bleu_against`]): every generation scored against the whole
//!   reference corpus as its reference set, × 100.
//! * **Recovery** ([`recovery`]): the fraction of masked positions whose fill equals the true
//!   token.
//!
//! Hand-written (about 150 lines) because no maintained Rust crate implements NLTK's exact
//! BLEU (micro averaging, closest reference length, its smoothing methods); the values are
//! checked against NLTK and sacrebleu (`tests/fixtures/text_metrics.json`, written by
//! `scripts/text_metrics_fixture.py`).

use std::collections::{HashMap, HashSet};
use std::hash::Hash;

/// The largest n-gram order of BLEU (uniform weights 1/4).
pub const BLEU_MAX_N: usize = 4;

/// What to do with a zero modified precision.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Smoothing {
    /// NLTK `method0`: the score is 0 as soon as one order has no match.
    None,
    /// NLTK `method1`: a zero numerator becomes ε (0.1 in NLTK and Texygen).
    Epsilon(f64),
}

/// Counts of the n-grams of `tokens`.
fn ngram_counts<T: Eq + Hash>(tokens: &[T], n: usize) -> HashMap<&[T], usize> {
    let mut counts = HashMap::new();
    if n > 0 {
        for g in tokens.windows(n) {
            *counts.entry(g).or_insert(0) += 1;
        }
    }
    counts
}

/// Summed statistics of BLEU over a set of hypotheses.
#[derive(Clone, Debug, Default, PartialEq)]
struct BleuStats {
    numerators: [usize; BLEU_MAX_N],
    denominators: [usize; BLEU_MAX_N],
    hyp_len: usize,
    ref_len: usize,
}

impl BleuStats {
    fn add<T: Eq + Hash>(&mut self, hyp: &[T], refs: &[&[T]]) {
        for n in 1..=BLEU_MAX_N {
            let counts = ngram_counts(hyp, n);
            // The clip of each n-gram: its largest count in any one reference.
            let mut max_ref: HashMap<&[T], usize> = HashMap::new();
            for r in refs {
                for (g, c) in ngram_counts(r, n) {
                    if counts.contains_key(g) {
                        let m = max_ref.entry(g).or_insert(0);
                        *m = (*m).max(c);
                    }
                }
            }
            let clipped: usize = counts.iter().map(|(g, &c)| c.min(*max_ref.get(g).unwrap_or(&0))).sum();
            let total: usize = counts.values().sum();
            self.numerators[n - 1] += clipped;
            self.denominators[n - 1] += total.max(1);
        }
        self.hyp_len += hyp.len();
        // Closest reference length, ties to the shorter (NLTK `closest_ref_length`).
        self.ref_len += refs.iter().map(|r| r.len()).min_by_key(|&l| (l.abs_diff(hyp.len()), l)).unwrap_or(0);
    }

    fn score(&self, smoothing: Smoothing) -> f64 {
        if self.numerators[0] == 0 {
            return 0.0;
        }
        let mut log_sum = 0.0;
        for n in 0..BLEU_MAX_N {
            let p = match (self.numerators[n], smoothing) {
                (0, Smoothing::None) => return 0.0,
                (0, Smoothing::Epsilon(eps)) => eps / self.denominators[n] as f64,
                (k, _) => k as f64 / self.denominators[n] as f64,
            };
            log_sum += p.ln() / BLEU_MAX_N as f64;
        }
        brevity_penalty(self.ref_len, self.hyp_len) * log_sum.exp()
    }
}

/// BLEU's brevity penalty for total hypothesis length `c` and reference length `r`.
pub fn brevity_penalty(r: usize, c: usize) -> f64 {
    if c > r {
        1.0
    } else if c == 0 {
        0.0
    } else {
        (1.0 - r as f64 / c as f64).exp()
    }
}

/// Corpus BLEU in [0, 1]: hypothesis `i` against its references `refs[i]` (NLTK
/// `corpus_bleu`, weights 1/4). Panics if the two lists differ in length (a caller's bug).
pub fn corpus_bleu<T: Eq + Hash>(hyps: &[&[T]], refs: &[Vec<&[T]>], smoothing: Smoothing) -> f64 {
    assert_eq!(hyps.len(), refs.len(), "one reference set per hypothesis");
    let mut stats = BleuStats::default();
    for (h, r) in hyps.iter().zip(refs) {
        stats.add(h, r);
    }
    stats.score(smoothing)
}

/// Sentence BLEU in [0, 1]: one hypothesis against its references (NLTK `sentence_bleu`).
pub fn sentence_bleu<T: Eq + Hash>(hyp: &[T], refs: &[&[T]], smoothing: Smoothing) -> f64 {
    let mut stats = BleuStats::default();
    stats.add(hyp, refs);
    stats.score(smoothing)
}

/// The references of generation `i` in a self-metric: every other generation.
fn others<'a, T>(gens: &[&'a [T]], i: usize) -> Vec<&'a [T]> {
    gens.iter().enumerate().filter(|&(j, _)| j != i).map(|(_, g)| *g).collect()
}

/// Self-BLEU × 100 as Wang & Cho compute it: the (unsmoothed) corpus BLEU of the set, each
/// generation's references being the other generations. Lower = more diverse. 0 for fewer
/// than two generations.
pub fn self_bleu<T: Eq + Hash>(gens: &[&[T]]) -> f64 {
    if gens.len() < 2 {
        return 0.0;
    }
    let refs: Vec<Vec<&[T]>> = (0..gens.len()).map(|i| others(gens, i)).collect();
    100.0 * corpus_bleu(gens, &refs, Smoothing::None)
}

/// Self-BLEU × 100 as Texygen computes it: the mean over generations of the sentence BLEU
/// against the other generations, with the given smoothing (Texygen: ε = 0.1).
pub fn self_bleu_mean<T: Eq + Hash>(gens: &[&[T]], smoothing: Smoothing) -> f64 {
    if gens.len() < 2 {
        return 0.0;
    }
    let sum: f64 = (0..gens.len()).map(|i| sentence_bleu(gens[i], &others(gens, i), smoothing)).sum();
    100.0 * sum / gens.len() as f64
}

/// Corpus BLEU × 100 of the generations, each against the whole reference `corpus`
/// (unsmoothed, Wang & Cho's `corpus_bleu(generated, references)`).
pub fn corpus_bleu_against<T: Eq + Hash>(gens: &[&[T]], corpus: &[&[T]]) -> f64 {
    let mut stats = BleuStats::default();
    for g in gens {
        stats.add(g, corpus);
    }
    100.0 * stats.score(Smoothing::None)
}

/// Unique n-grams (self) in %: n-gram types occurring exactly once in the whole set over the
/// set's n-gram tokens (Wang & Cho's `self_unique_ngrams`). 0 when the set has no n-gram.
pub fn self_unique_ngrams<T: Eq + Hash>(gens: &[&[T]], n: usize) -> f64 {
    let mut counts: HashMap<&[T], usize> = HashMap::new();
    for g in gens {
        for (k, c) in ngram_counts(g, n) {
            *counts.entry(k).or_insert(0) += c;
        }
    }
    let total: usize = counts.values().sum();
    if total == 0 {
        return 0.0;
    }
    100.0 * counts.values().filter(|&&c| c == 1).count() as f64 / total as f64
}

/// The set of n-grams of a corpus, built once for [`corpus_unique_ngrams`].
pub fn ngram_set<'a, T: Eq + Hash>(corpus: &[&'a [T]], n: usize) -> HashSet<&'a [T]> {
    if n == 0 {
        return HashSet::new();
    }
    corpus.iter().flat_map(|s| s.windows(n)).collect()
}

/// Unique n-grams against a corpus in %: distinct n-gram types of the set absent from
/// `corpus_ngrams` (the corpus' n-grams of the same order, [`ngram_set`]) over the set's
/// n-gram tokens (Wang & Cho's `ref_unique_ngrams`). 0 when the set has no n-gram.
pub fn corpus_unique_ngrams<T: Eq + Hash>(gens: &[&[T]], n: usize, corpus_ngrams: &HashSet<&[T]>) -> f64 {
    let mut types: HashSet<&[T]> = HashSet::new();
    let mut total = 0usize;
    for g in gens {
        if n > 0 {
            for w in g.windows(n) {
                types.insert(w);
                total += 1;
            }
        }
    }
    if total == 0 {
        return 0.0;
    }
    100.0 * types.iter().filter(|t| !corpus_ngrams.contains(*t)).count() as f64 / total as f64
}

/// Recovery: the fraction of masked positions where the fill equals the true token, over
/// all (fill, truth) pairs given. `None` when there is no masked position or the two lists
/// differ in length.
pub fn recovery<T: PartialEq>(fills: &[T], truth: &[T]) -> Option<f64> {
    if fills.is_empty() || fills.len() != truth.len() {
        return None;
    }
    Some(fills.iter().zip(truth).filter(|(a, b)| a == b).count() as f64 / fills.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<&str> {
        s.split_whitespace().collect()
    }

    #[test]
    fn identical_sentence_has_bleu_one() {
        let h = toks("the cat sat on the mat");
        assert!((sentence_bleu(&h, &[&h], Smoothing::None) - 1.0).abs() < 1e-15);
    }

    /// Hand computation: hyp "the cat the cat on the mat" (7 tokens), ref "the cat is on the
    /// mat" (6). Clipped matches: 1-grams the 2 (ref has 2), cat 1, on 1, mat 1 = 5 of 7;
    /// 2-grams "the cat" 1, "on the" 1, "the mat" 1 = 3 of 6; 3-grams "on the mat" 1 of 5;
    /// 4-grams 0 of 4. Unsmoothed: 0. ε = 0.1: (5/7 · 3/6 · 1/5 · 0.1/4)^(1/4), BP = 1 (7 > 6).
    #[test]
    fn hand_computed_bleu() {
        let h = toks("the cat the cat on the mat");
        let r = toks("the cat is on the mat");
        assert_eq!(sentence_bleu(&h, &[&r], Smoothing::None), 0.0);
        let want = (5.0 / 7.0 * 3.0 / 6.0 * 1.0 / 5.0 * 0.1 / 4.0f64).powf(0.25);
        assert!((sentence_bleu(&h, &[&r], Smoothing::Epsilon(0.1)) - want).abs() < 1e-14);
    }

    /// Brevity: hyp "a b c d e" against "a b c d e f g": all precisions 1, BP = exp(1 − 7/5).
    #[test]
    fn hand_computed_brevity_penalty() {
        let h = toks("a b c d e");
        let r = toks("a b c d e f g");
        let want = (1.0 - 7.0 / 5.0f64).exp();
        assert!((sentence_bleu(&h, &[&r], Smoothing::None) - want).abs() < 1e-15);
        // Closest reference length with a tie (4 and 6 around 5): the shorter, so BP = 1.
        let r4 = toks("a b c d");
        let r6 = toks("a b c d e f");
        assert!((sentence_bleu(&h, &[&r6, &r4], Smoothing::None) - 1.0).abs() < 1e-15);
    }

    /// Three generations over tokens; 2-grams: "a b" ×3, "b c" ×2, "b d" ×1, "c e" ×1 → 7
    /// tokens, types with count 1: "b d", "c e" → 2/7. Against a corpus holding "a b" and
    /// "c e": new types "b c", "b d" → 2/7.
    #[test]
    fn hand_computed_unique_ngrams() {
        let g = [toks("a b c"), toks("a b d"), toks("a b c e")];
        let gens: Vec<&[&str]> = g.iter().map(|v| v.as_slice()).collect();
        assert!((self_unique_ngrams(&gens, 2) - 100.0 * 2.0 / 7.0).abs() < 1e-12);
        let c = [toks("x a b y"), toks("c e")];
        let corpus: Vec<&[&str]> = c.iter().map(|v| v.as_slice()).collect();
        let set = ngram_set(&corpus, 2);
        assert!((corpus_unique_ngrams(&gens, 2, &set) - 100.0 * 2.0 / 7.0).abs() < 1e-12);
        // 3-grams: "a b c" ×2, "a b d", "b c e" → 4 tokens, 2 types once.
        assert!((self_unique_ngrams(&gens, 3) - 50.0).abs() < 1e-12);
    }

    /// Identical generations: Self-BLEU 100 and no unique n-gram; all distinct words: 0.
    #[test]
    fn self_metrics_at_the_extremes() {
        let s = toks("one two three four five");
        let same: Vec<&[&str]> = vec![&s, &s, &s];
        assert!((self_bleu(&same) - 100.0).abs() < 1e-12);
        assert!((self_bleu_mean(&same, Smoothing::Epsilon(0.1)) - 100.0).abs() < 1e-12);
        assert_eq!(self_unique_ngrams(&same, 2), 0.0);
        let (a, b) = (toks("p q r s"), toks("w x y z"));
        let diff: Vec<&[&str]> = vec![&a, &b];
        assert_eq!(self_bleu(&diff), 0.0);
        assert_eq!(self_unique_ngrams(&diff, 2), 100.0);
    }

    #[test]
    fn recovery_counts_matches() {
        assert_eq!(recovery(&[1, 2, 3, 4], &[1, 0, 3, 0]), Some(0.5));
        assert_eq!(recovery::<u32>(&[], &[]), None);
        assert_eq!(recovery(&[1], &[1, 2]), None);
    }
}
