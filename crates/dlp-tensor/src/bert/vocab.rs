//! `vocab.txt` (line i = token id i), the special tokens and the tokenisation of input lines.
//!
//! Three kinds of vocabulary, told apart by their tokens:
//! * [`VocabKind::Protein`]: every non-special token is one character (AntiBERTy: the 20 amino
//!   acids); each character of a line is one token, `_` a masked residue, spaces are ignored.
//! * [`VocabKind::WordPiece`]: an English BERT vocabulary (it has `##` continuation pieces);
//!   lines go through Hugging Face's `BertTokenizer` pipeline as the `tokenizers` crate builds
//!   it — BERT's normaliser (control characters dropped, CJK characters split, and for an
//!   uncased vocabulary lower-casing and accent stripping), BERT's pre-tokeniser (whitespace,
//!   then every punctuation character its own word) and greedy longest-match WordPiece — with
//!   `[MASK]` marking a masked token.
//! * [`VocabKind::Word`]: a word-level vocabulary (the project's stand-in MLM: lowercase words
//!   and `. , ; : ! ?`); a line is lower-cased and split into words and those punctuation marks,
//!   `[MASK]` marks a masked word.
//!
//! A token outside the vocabulary is an error, never silently `[UNK]`: for WordPiece that is a
//! word with no split into vocabulary pieces (an emoji, a script the vocabulary lacks), which
//! `BertTokenizer` would turn into `[UNK]` and the infilling would then condition on.

use crate::Error;
use std::collections::HashMap;

/// One position of a tokenised line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Piece {
    /// A known token.
    Token(u32),
    /// A masked position (to be filled).
    Mask,
}

/// How input lines are split into tokens (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VocabKind {
    /// One token per character; `_` is a masked residue.
    Protein,
    /// BERT WordPiece.
    WordPiece,
    /// Whitespace-separated lowercase words and punctuation marks.
    Word,
}

/// A BERT vocabulary.
#[derive(Debug, Clone)]
pub struct Vocab {
    tokens: Vec<String>,
    index: HashMap<String, u32>,
    special: Vec<bool>,
    kind: VocabKind,
    /// The tokeniser of a [`VocabKind::WordPiece`] vocabulary (see the module doc).
    wordpiece: Option<std::sync::Arc<tokenizers::Tokenizer>>,
}

/// True for a token written `[…]` (`[PAD]`, `[MASK]`, `[unused0]`, …): never proposed.
fn bracketed(t: &str) -> bool {
    t.len() > 2 && t.starts_with('[') && t.ends_with(']')
}

impl Vocab {
    /// The vocabulary of a `vocab.txt` text (one token per line; trailing `\r` dropped).
    pub fn from_text(text: &str) -> Result<Self, Error> {
        let tokens: Vec<String> = text.lines().map(|l| l.trim_end_matches('\r').to_string()).collect();
        Self::from_tokens(tokens)
    }

    /// The vocabulary of a token list (position = id). Needs `[MASK]`; repeated tokens are an
    /// error.
    pub fn from_tokens(tokens: Vec<String>) -> Result<Self, Error> {
        let mut index = HashMap::with_capacity(tokens.len());
        for (i, t) in tokens.iter().enumerate() {
            if index.insert(t.clone(), i as u32).is_some() {
                return Err(Error::Checkpoint(format!("token {t:?} appears twice (second time on line {})", i + 1)));
            }
        }
        if !index.contains_key("[MASK]") {
            return Err(Error::Checkpoint("the vocabulary has no [MASK] token".into()));
        }
        let special: Vec<bool> = tokens.iter().map(|t| bracketed(t)).collect();
        let normal = || tokens.iter().zip(&special).filter(|(_, s)| !**s).map(|(t, _)| t);
        let kind = if normal().all(|t| t.chars().count() == 1) {
            VocabKind::Protein
        } else if normal().any(|t| t.starts_with("##")) {
            VocabKind::WordPiece
        } else {
            VocabKind::Word
        };
        let wordpiece = match kind {
            VocabKind::WordPiece => {
                // Uncased when no ordinary token has an upper-case letter (bert-base-uncased's
                // vocabulary; the cased one has "The").
                let uncased = !tokens.iter().any(|t| !bracketed(t) && t.chars().any(char::is_uppercase));
                Some(std::sync::Arc::new(wordpiece::tokenizer(&tokens, uncased)?))
            }
            _ => None,
        };
        Ok(Vocab { tokens, index, special, kind, wordpiece })
    }

    /// Number of tokens V.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// True when there are no tokens (never, for a loaded vocabulary).
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// How lines are tokenised.
    pub fn kind(&self) -> VocabKind {
        self.kind
    }

    /// The id of `token`.
    pub fn id(&self, token: &str) -> Option<u32> {
        self.index.get(token).copied()
    }

    /// The token of `id`.
    pub fn token(&self, id: u32) -> Option<&str> {
        self.tokens.get(id as usize).map(String::as_str)
    }

    /// All tokens, by id.
    pub fn tokens(&self) -> &[String] {
        &self.tokens
    }

    /// `[PAD]`'s id.
    pub fn pad(&self) -> Option<u32> {
        self.id("[PAD]")
    }

    /// `[UNK]`'s id.
    pub fn unk(&self) -> Option<u32> {
        self.id("[UNK]")
    }

    /// `[CLS]`'s id.
    pub fn cls(&self) -> Option<u32> {
        self.id("[CLS]")
    }

    /// `[SEP]`'s id.
    pub fn sep(&self) -> Option<u32> {
        self.id("[SEP]")
    }

    /// `[MASK]`'s id.
    pub fn mask(&self) -> u32 {
        self.id("[MASK]").expect("checked when the vocabulary was built")
    }

    /// True for a special token (written `[…]`): never proposed.
    pub fn is_special(&self, id: u32) -> bool {
        self.special.get(id as usize).copied().unwrap_or(true)
    }

    /// The ids that may fill a masked position: every non-special token.
    pub fn allowed(&self) -> Vec<u32> {
        (0..self.tokens.len() as u32).filter(|&i| !self.is_special(i)).collect()
    }

    /// The pieces of one input line (no `[CLS]`/`[SEP]`: see [`Vocab::wrap`]).
    pub fn encode(&self, line: &str) -> Result<Vec<Piece>, Error> {
        match self.kind {
            VocabKind::Protein => self.encode_protein(line),
            VocabKind::Word => self.encode_words(line),
            VocabKind::WordPiece => self.encode_wordpiece(line),
        }
    }

    /// `[CLS] pieces [SEP]` when the vocabulary has both (how BERT checkpoints were trained),
    /// the pieces unchanged otherwise.
    pub fn wrap(&self, pieces: Vec<Piece>) -> Vec<Piece> {
        match (self.cls(), self.sep()) {
            (Some(c), Some(s)) => {
                std::iter::once(Piece::Token(c)).chain(pieces).chain(std::iter::once(Piece::Token(s))).collect()
            }
            _ => pieces,
        }
    }

    /// The model input of one line: its pieces wrapped by [`Vocab::wrap`], `[MASK]` at the
    /// masked positions, and those positions. An error when the line has no masked position.
    pub fn masked_sequence(&self, line: &str) -> Result<(Vec<u32>, Vec<usize>), Error> {
        let pieces = self.wrap(self.encode(line)?);
        let masked: Vec<usize> =
            pieces.iter().enumerate().filter(|(_, p)| **p == Piece::Mask).map(|(i, _)| i).collect();
        if masked.is_empty() {
            let how = if self.kind == VocabKind::Protein { "`_` or [MASK]" } else { "[MASK]" };
            return Err(Error::Param(format!("no masked position (mark them with {how})")));
        }
        let mask = self.mask();
        let ids = pieces.into_iter().map(|p| if let Piece::Token(t) = p { t } else { mask }).collect();
        Ok((ids, masked))
    }

    /// The tokens of `ids` joined as a line: characters for proteins, WordPiece pieces merged
    /// (`##` continuations glued to the previous piece), words separated by spaces.
    pub fn decode(&self, ids: &[u32]) -> String {
        let toks = ids.iter().map(|&i| self.token(i).unwrap_or("[?]"));
        match self.kind {
            VocabKind::Protein => toks.collect::<Vec<_>>().concat(),
            VocabKind::Word => toks.collect::<Vec<_>>().join(" "),
            VocabKind::WordPiece => {
                let mut s = String::new();
                for t in toks {
                    match t.strip_prefix("##") {
                        Some(rest) => s.push_str(rest),
                        None => {
                            if !s.is_empty() {
                                s.push(' ');
                            }
                            s.push_str(t);
                        }
                    }
                }
                s
            }
        }
    }

    fn unknown(&self, t: &str, col: usize) -> Error {
        Error::Param(format!("unknown token {t:?} at character {col} (not in vocab.txt)"))
    }

    fn encode_protein(&self, line: &str) -> Result<Vec<Piece>, Error> {
        let mut out = Vec::new();
        let mut it = line.char_indices().peekable();
        while let Some((col, c)) = it.next() {
            if c.is_whitespace() {
                continue;
            }
            if c == '_' {
                out.push(Piece::Mask);
                continue;
            }
            if c == '[' && line[col..].starts_with("[MASK]") {
                out.push(Piece::Mask);
                for _ in 0..5 {
                    it.next();
                }
                continue;
            }
            let t = c.to_string();
            match self.id(&t) {
                Some(id) if !self.is_special(id) => out.push(Piece::Token(id)),
                _ => return Err(self.unknown(&t, col + 1)),
            }
        }
        Ok(out)
    }

    fn encode_words(&self, line: &str) -> Result<Vec<Piece>, Error> {
        const PUNCT: &[char] = &['.', ',', ';', ':', '!', '?'];
        // `[MASK]` may carry punctuation around it ("[MASK]."): one word or mark at a time.
        self.encode_with(line, |rest, c| {
            let end = if rest.starts_with(PUNCT) {
                1
            } else {
                rest.find(|ch: char| PUNCT.contains(&ch) || ch == '[').filter(|&e| e > 0).unwrap_or(rest.len())
            };
            match self.id(&rest[..end].to_lowercase()) {
                Some(id) if !self.is_special(id) => Ok((vec![id], end)),
                _ => Err(self.unknown(&rest[..end], c)),
            }
        })
    }

    fn encode_wordpiece(&self, line: &str) -> Result<Vec<Piece>, Error> {
        self.encode_with(line, |rest, c| {
            let end = rest.find("[MASK]").filter(|&e| e > 0).unwrap_or(rest.len());
            let tok = self.wordpiece.as_deref().expect("built with a WordPiece vocabulary");
            let ids =
                wordpiece::encode(tok, self.unk(), &rest[..end]).map_err(|(word, at)| self.unknown(&word, c + at))?;
            Ok((ids, end))
        })
    }

    /// The pieces of `line`: its whitespace-separated chunks, `[MASK]` wherever it starts inside
    /// one, and the text in between through `tokens(rest, column)` → (ids, bytes used), which
    /// reads from the start of `rest` and stops before any `[MASK]`.
    fn encode_with(
        &self,
        line: &str,
        tokens: impl Fn(&str, usize) -> Result<(Vec<u32>, usize), Error>,
    ) -> Result<Vec<Piece>, Error> {
        let mut out = Vec::new();
        for (col, chunk) in split_with_columns(line) {
            let (mut rest, mut c) = (chunk, col);
            while !rest.is_empty() {
                let used = match rest.strip_prefix("[MASK]") {
                    Some(_) => {
                        out.push(Piece::Mask);
                        "[MASK]".len()
                    }
                    None => {
                        let (ids, used) = tokens(rest, c)?;
                        out.extend(ids.into_iter().map(Piece::Token));
                        used
                    }
                };
                // Columns count characters, not bytes.
                c += rest[..used].chars().count();
                rest = &rest[used..];
            }
        }
        Ok(out)
    }
}

/// Whitespace-separated chunks of `line` with their 1-based character columns.
fn split_with_columns(line: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, ch) in line.char_indices().chain(std::iter::once((line.len(), ' '))) {
        match (ch.is_whitespace(), start) {
            (true, Some(s)) => {
                out.push((line[..s].chars().count() + 1, &line[s..i]));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    out
}

mod wordpiece {
    //! The `tokenizers` crate's `BertTokenizer` pipeline (normaliser, pre-tokeniser, WordPiece),
    //! without the special tokens that [`super::Vocab::wrap`] adds.
    use crate::Error;
    use tokenizers::Tokenizer;
    use tokenizers::models::wordpiece::WordPiece;
    use tokenizers::normalizers::bert::BertNormalizer;
    use tokenizers::pre_tokenizers::bert::BertPreTokenizer;

    /// The tokeniser of a WordPiece token list (position = id). `strip_accents: None` follows
    /// `lowercase`, as `BertTokenizer(do_lower_case=…)` does.
    pub(super) fn tokenizer(tokens: &[String], uncased: bool) -> Result<Tokenizer, Error> {
        let model = WordPiece::read_bytes(tokens.join("\n").as_bytes())
            .and_then(|v| WordPiece::builder().vocab(v).unk_token("[UNK]".into()).build())
            .map_err(|e| Error::Checkpoint(format!("WordPiece vocabulary: {e}")))?;
        let mut tok = Tokenizer::new(model);
        tok.with_normalizer(Some(BertNormalizer::new(true, true, None, uncased)))
            .map_err(|e| Error::Checkpoint(format!("WordPiece normaliser: {e}")))?;
        tok.with_pre_tokenizer(Some(BertPreTokenizer));
        Ok(tok)
    }

    /// The ids of `text` (no `[MASK]` inside); `Err((word, characters before it))` for the
    /// first word the tokeniser maps to `[UNK]`, which we refuse (module doc).
    pub(super) fn encode(tok: &Tokenizer, unk: Option<u32>, text: &str) -> Result<Vec<u32>, (String, usize)> {
        let enc = tok.encode(text, false).map_err(|e| (format!("{text} ({e})"), 0))?;
        if let Some(i) = enc.get_ids().iter().position(|&id| Some(id) == unk) {
            // Offsets are bytes of the original text, whatever the normaliser changed.
            let (a, b) = enc.get_offsets()[i];
            return Err((text[a..b].to_string(), text[..a].chars().count()));
        }
        Ok(enc.get_ids().to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocab(extra: &[&str]) -> Vocab {
        let mut t: Vec<String> = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"].iter().map(|s| s.to_string()).collect();
        t.extend(extra.iter().map(|s| s.to_string()));
        Vocab::from_tokens(t).unwrap()
    }

    #[test]
    fn wordpiece_splits_words_and_punctuation_and_refuses_unknown_words() {
        let v = vocab(&["the", "whale", "play", "##ing", "##ed", ",", ".", "sea"]);
        assert_eq!(v.kind(), VocabKind::WordPiece);
        let t = |s: &str| v.id(s).unwrap();
        let got = v.encode("The whale playing, [MASK] played.").unwrap();
        let want = vec![
            Piece::Token(t("the")),
            Piece::Token(t("whale")),
            Piece::Token(t("play")),
            Piece::Token(t("##ing")),
            Piece::Token(t(",")),
            Piece::Mask,
            Piece::Token(t("play")),
            Piece::Token(t("##ed")),
            Piece::Token(t(".")),
        ];
        assert_eq!(got, want);
        assert_eq!(v.decode(&[t("play"), t("##ing"), t("sea")]), "playing sea");
        let e = v.encode("the kraken").unwrap_err().to_string();
        assert!(e.contains("\"kraken\""), "{e}");
        assert_eq!(v.allowed().len(), 8);
        assert!(v.is_special(v.mask()) && !v.is_special(t("sea")));
    }

    #[test]
    fn protein_and_word_vocabularies() {
        let p = vocab(&["A", "C", "G"]);
        assert_eq!(p.kind(), VocabKind::Protein);
        let (ids, masked) = p.masked_sequence("AC_G[MASK]").unwrap();
        assert_eq!(masked, [3, 5]);
        assert_eq!(ids, [2, 5, 6, 4, 7, 4, 3]);
        assert!(p.masked_sequence("ACG").unwrap_err().to_string().contains("no masked position"));
        assert!(p.encode("ACX").unwrap_err().to_string().contains("\"X\" at character 3"));
        let w = vocab(&["the", "sea", "."]);
        assert_eq!(w.kind(), VocabKind::Word);
        assert_eq!(
            w.encode("The [MASK] sea.").unwrap(),
            [Piece::Token(5), Piece::Mask, Piece::Token(6), Piece::Token(7)]
        );
        assert!(w.encode("the ocean").is_err());
    }
}
