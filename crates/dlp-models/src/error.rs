//! The error type of model construction and model files.

/// What went wrong when building or loading a model. `Display` is the text after `error: `
/// in `gof.md` §10.5 (file name as given, then `:line:column` for syntax errors).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    /// The file could not be read.
    #[error("{file}: cannot read file: {message}")]
    Io {
        /// File name as given.
        file: String,
        /// The operating system's reason.
        message: String,
    },
    /// The file is not valid JSON/TOML; line and column are 1-based.
    #[error("{file}:{line}:{column}: {message}")]
    Syntax {
        /// File name as given.
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The parser's message.
        message: String,
    },
    /// The file parses but violates a rule of `gof.md` §10.3.
    #[error("{file}: {message}")]
    Invalid {
        /// File name as given.
        file: String,
        /// Which key/value is wrong and why.
        message: String,
    },
    /// A parameter passed in code is invalid (no file involved).
    #[error("{message}")]
    Param {
        /// Which parameter is wrong and why.
        message: String,
    },
}

impl ModelError {
    /// A parameter error with `message`.
    pub fn param(message: impl Into<String>) -> Self {
        ModelError::Param { message: message.into() }
    }

    /// Attaches a file name to a parameter error (other variants are returned unchanged).
    pub fn in_file(self, file: &str) -> Self {
        match self {
            ModelError::Param { message } => ModelError::Invalid { file: file.to_string(), message },
            other => other,
        }
    }
}

/// Checks that every entry is finite; names the first offender as `what[i]`.
pub(crate) fn check_finite(what: &str, v: &[f64]) -> Result<(), ModelError> {
    match v.iter().position(|x| !x.is_finite()) {
        Some(p) => Err(ModelError::param(format!("{what}[{p}] is not a finite number: {}", v[p]))),
        None => Ok(()),
    }
}

/// The space of a model with one weight per bit: spin or binary `domain`, else the one-line
/// error naming the model `kind`.
pub(crate) fn bit_space(domain: dlp_core::DomainKind, d: usize, kind: &str) -> Result<dlp_core::Space, ModelError> {
    dlp_core::Space::bits(domain, d).ok_or_else(|| {
        ModelError::param(format!("domain {domain:?} is not supported by the {kind} model (use spin or binary)"))
    })
}
