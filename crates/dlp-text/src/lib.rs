//! dlp-text: the text side of the masked-language-model infilling experiment (main paper
//! §7.5, Table 3), kept apart from the tensor code so that it builds in seconds.
//!
//! * [`metrics`]: BLEU, Self-BLEU, unique n-grams, corpus BLEU and recovery, written once and
//!   checked against NLTK and sacrebleu.
//! * [`corpus`]: Moby Dick (the text of the English stand-in MLM, a 1.5 M-parameter
//!   word-level MLM trained on Moby Dick, a stand-in for BERT), its tokeniser, vocabulary and
//!   held-out sentences.
//! * [`antibody`]: the real antibody sequences of `just data antibodies`.

pub mod antibody;
pub mod corpus;
pub mod metrics;

use std::path::PathBuf;

/// Errors of the text layer; each names the file and what is wrong.
#[derive(Debug, thiserror::Error)]
pub enum TextError {
    /// The file could not be read.
    #[error("{path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// The underlying error and what to do.
        message: String,
    },
    /// The content does not follow the format.
    #[error("{what}: {message}")]
    Format {
        /// The file (and line).
        what: String,
        /// What is wrong, with the value found.
        message: String,
    },
}

/// `data/cache` of this checkout, or `$DLP_DATA_CACHE` when set ([`dlp_core::io::data_cache_dir`]).
pub fn cache_dir() -> PathBuf {
    dlp_core::io::data_cache_dir()
}
