//! The samples file grammar (`gof.md` §10.2) and its error lines (§10.5).
//!
//! One sample per row; blank lines and `#` comments skipped; comma, tab or whitespace
//! delimiters (auto-detected on the first non-skipped line); an optional header; integer
//! tokens (integral decimal forms such as `1.0` or `1e0` accepted) that must lie in the model's
//! value list. Columns in messages are the 1-based position of the value in its row.
//! Written files use a `x0,x1,…` header, commas and the user-facing values, so reading them
//! back gives the same indices.

use dlp_core::Space;
use std::fmt::Write as _;
use std::path::Path;
use std::str::FromStr;

/// How values are separated on a row.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Delimiter {
    /// Comma if the first non-skipped line has one, else tab if it has one, else whitespace.
    #[default]
    Auto,
    /// `,` (spaces and tabs around tokens ignored).
    Comma,
    /// Tab (spaces around tokens ignored).
    Tab,
    /// Runs of spaces and tabs.
    Whitespace,
}

impl FromStr for Delimiter {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(Delimiter::Auto),
            "comma" => Ok(Delimiter::Comma),
            "tab" => Ok(Delimiter::Tab),
            "whitespace" => Ok(Delimiter::Whitespace),
            other => {
                Err(format!("unknown delimiter \"{}\" (expected auto, comma, tab or whitespace)", other.escape_debug()))
            }
        }
    }
}

/// Samples read from a file: `n` rows of `d` indices into the space's value list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Samples {
    /// Number of samples (rows).
    pub n: usize,
    /// Coordinates per sample.
    pub d: usize,
    /// Row-major n × d indices into `space.values`.
    pub indices: Vec<u32>,
}

/// A matrix of reals read with the samples grammar (jitter files: values in (0, 1)).
#[derive(Clone, Debug, PartialEq)]
pub struct RealMatrix {
    /// Rows.
    pub n: usize,
    /// Columns.
    pub d: usize,
    /// Row-major n × d values.
    pub values: Vec<f64>,
}

/// A samples-file problem; `Display` is the §10.5 line without `error: `. Tokens are shown
/// with control characters, quotes and backslashes escaped (`\r`, `\u{b}`), so that the line
/// stays one line whatever the file holds (a lone `\r` inside a row, a vertical tab).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SamplesError {
    /// The file could not be read.
    #[error("{file}: cannot read file: {message}")]
    Io {
        /// File name as given.
        file: String,
        /// The operating system's reason.
        message: String,
    },
    /// The file is not UTF-8.
    #[error("{file}: not UTF-8 text")]
    NotUtf8 {
        /// File name as given.
        file: String,
    },
    /// No data rows.
    #[error("{file}: no samples (file is empty)")]
    Empty {
        /// File name as given.
        file: String,
    },
    /// A row whose length differs from the first row's.
    #[error("{file}:{line}: expected {expected} values (as in the first row), found {found}")]
    Ragged {
        /// File name as given.
        file: String,
        /// 1-based physical line.
        line: usize,
        /// Values in the first data row.
        expected: usize,
        /// Values in this row.
        found: usize,
    },
    /// The first data row's length differs from the header's.
    #[error("{file}:{line}: expected {expected} values (as in the header), found {found}")]
    HeaderMismatch {
        /// File name as given.
        file: String,
        /// 1-based physical line of the data row.
        line: usize,
        /// Names in the header.
        expected: usize,
        /// Values in the row.
        found: usize,
    },
    /// Rows do not have d values.
    #[error("{file}: rows have {found} values but the model has d = {d}")]
    WrongD {
        /// File name as given.
        file: String,
        /// Values per row.
        found: usize,
        /// The model's d.
        d: usize,
    },
    /// An integer outside the model's value list.
    #[error("{file}:{line}:{column}: value {value} is outside the domain {domain} of the {kind} model")]
    OutsideDomain {
        /// File name as given.
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based position in the row.
        column: usize,
        /// The value as an integer (or the token when it does not fit).
        value: String,
        /// The value list, e.g. `{-1, 1}`.
        domain: String,
        /// The model kind name.
        kind: String,
    },
    /// NaN, ±inf, NA or an empty field.
    #[error("{file}:{line}:{column}: not a finite integer: \"{}\"", .token.escape_debug())]
    NotFinite {
        /// File name as given.
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based position in the row.
        column: usize,
        /// The token.
        token: String,
    },
    /// A token of a data file that is not a finite number.
    #[error("{file}:{line}:{column}: not a finite number: \"{}\"", .token.escape_debug())]
    NotNumber {
        /// File name as given.
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based position in the row.
        column: usize,
        /// The token.
        token: String,
    },
    /// A non-integral number or other text.
    #[error("{file}:{line}:{column}: not an integer: \"{}\"", .token.escape_debug())]
    NotInteger {
        /// File name as given.
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based position in the row.
        column: usize,
        /// The token.
        token: String,
    },
    /// A real-matrix token that is not a number in (0, 1).
    #[error("{file}:{line}:{column}: value \"{}\" is not a number in (0, 1)", .token.escape_debug())]
    NotUnitInterval {
        /// File name as given.
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based position in the row.
        column: usize,
        /// The token.
        token: String,
    },
    /// Fewer rows than a caller requires.
    #[error("{file}: too few samples: {n} (need at least {min})")]
    TooFew {
        /// File name as given.
        file: String,
        /// Rows found.
        n: usize,
        /// Rows required.
        min: usize,
    },
}

/// One non-skipped row: its 1-based line number and tokens.
struct Row<'a> {
    line: usize,
    tokens: Vec<&'a str>,
}

fn is_missing_spelling(t: &str) -> bool {
    let t = t.trim_start_matches(['+', '-']).to_ascii_lowercase();
    matches!(t.as_str(), "nan" | "inf" | "infinity" | "na")
}

fn split(line: &str, delim: Delimiter) -> Vec<&str> {
    match delim {
        Delimiter::Comma => line.split(',').map(|t| t.trim_matches([' ', '\t'])).collect(),
        Delimiter::Tab => line.split('\t').map(|t| t.trim_matches(' ')).collect(),
        Delimiter::Whitespace | Delimiter::Auto => line.split([' ', '\t']).filter(|t| !t.is_empty()).collect(),
    }
}

/// Splits `text` into an optional header and data rows, following §10.2.
fn tokenize(text: &str, delimiter: Delimiter) -> (Option<Row<'_>>, Vec<Row<'_>>) {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut delim = delimiter;
    let mut header = None;
    let mut rows = Vec::new();
    let mut first = true;
    for (n, raw) in text.split('\n').enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let trimmed = line.trim_matches([' ', '\t']);
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if delim == Delimiter::Auto {
            delim = if line.contains(',') {
                Delimiter::Comma
            } else if line.contains('\t') {
                Delimiter::Tab
            } else {
                Delimiter::Whitespace
            };
        }
        // Tab/comma rows keep their leading/trailing separators as empty fields, but spaces at
        // the ends of the line are not fields.
        let tokens = split(trimmed_for(line, delim), delim);
        let row = Row { line: n + 1, tokens };
        if first {
            first = false;
            let is_header = row
                .tokens
                .iter()
                .all(|t| t.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_') && !is_missing_spelling(t));
            if is_header {
                header = Some(row);
                continue;
            }
        }
        rows.push(row);
    }
    (header, rows)
}

fn trimmed_for(line: &str, delim: Delimiter) -> &str {
    match delim {
        Delimiter::Tab => line.trim_matches(' '),
        _ => line.trim_matches([' ', '\t']),
    }
}

enum TokenError {
    NotFinite,
    NotInteger,
}

/// Parses an integer token; integral decimal/exponent forms are accepted.
fn parse_integer(t: &str) -> Result<Result<i64, f64>, TokenError> {
    if t.is_empty() || is_missing_spelling(t) {
        return Err(TokenError::NotFinite);
    }
    if let Ok(i) = t.parse::<i64>() {
        return Ok(Ok(i));
    }
    match t.parse::<f64>() {
        Ok(f) if !f.is_finite() => Err(TokenError::NotFinite),
        Ok(f) if f.fract() != 0.0 => Err(TokenError::NotInteger),
        // Integral but maybe beyond i64: reported as outside the domain.
        Ok(f) if f.abs() < 9.2e18 => Ok(Ok(f as i64)),
        Ok(f) => Ok(Err(f)),
        Err(_) => Err(TokenError::NotInteger),
    }
}

/// `{-1, 1}`-style rendering of a value list.
pub fn domain_string(space: &Space) -> String {
    let mut s = String::from("{");
    for (i, v) in space.values.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        let _ = write!(s, "{v}");
    }
    s.push('}');
    s
}

fn read_text(path: &Path) -> Result<String, SamplesError> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path)
        .map_err(|e| SamplesError::Io { file: file.clone(), message: dlp_core::io::io_reason(&e) })?;
    String::from_utf8(bytes).map_err(|_| SamplesError::NotUtf8 { file })
}

/// Checks row lengths (header, first row, d) and returns the common length.
fn check_shape(
    file: &str,
    header: &Option<Row<'_>>,
    rows: &[Row<'_>],
    d: Option<usize>,
) -> Result<usize, SamplesError> {
    let Some(first) = rows.first() else {
        return Err(SamplesError::Empty { file: file.into() });
    };
    let width = first.tokens.len();
    if let Some(h) = header
        && h.tokens.len() != width
    {
        return Err(SamplesError::HeaderMismatch {
            file: file.into(),
            line: first.line,
            expected: h.tokens.len(),
            found: width,
        });
    }
    if let Some(d) = d
        && width != d
    {
        return Err(SamplesError::WrongD { file: file.into(), found: width, d });
    }
    Ok(width)
}

/// Parses a rectangular file: checks its shape (header, first row, `d`) and every row's
/// length, then converts each token with `cell(token, line, column)` (1-based). Returns
/// (rows, columns, values). One place for the grammar the samples, integer and jitter
/// readers share.
fn parse_cells<T>(
    text: &str,
    file: &str,
    d: Option<usize>,
    delimiter: Delimiter,
    mut cell: impl FnMut(&str, usize, usize) -> Result<T, SamplesError>,
) -> Result<(usize, usize, Vec<T>), SamplesError> {
    let (header, rows) = tokenize(text, delimiter);
    let width = check_shape(file, &header, &rows, d)?;
    let mut values = Vec::with_capacity(rows.len() * width);
    for row in &rows {
        if row.tokens.len() != width {
            return Err(SamplesError::Ragged {
                file: file.into(),
                line: row.line,
                expected: width,
                found: row.tokens.len(),
            });
        }
        for (c, t) in row.tokens.iter().enumerate() {
            values.push(cell(t, row.line, c + 1)?);
        }
    }
    Ok((rows.len(), width, values))
}

/// An integer token, or the samples grammar's error for it: `Ok(Err(x))` is a finite
/// number that is not integral (the caller decides what that means).
fn integer_cell(file: &str, token: &str, line: usize, column: usize) -> Result<Result<i64, f64>, SamplesError> {
    parse_integer(token).map_err(|e| {
        let (file, token) = (file.into(), token.to_string());
        match e {
            TokenError::NotFinite => SamplesError::NotFinite { file, line, column, token },
            TokenError::NotInteger => SamplesError::NotInteger { file, line, column, token },
        }
    })
}

/// Parses samples text; `file` is the name used in messages, `kind_name` the model kind.
pub fn parse_samples_str(
    text: &str,
    file: &str,
    space: &Space,
    kind_name: &str,
    delimiter: Delimiter,
) -> Result<Samples, SamplesError> {
    let (n, d, indices) = parse_cells(text, file, Some(space.d), delimiter, |t, line, column| {
        let value = integer_cell(file, t, line, column)?;
        value.ok().and_then(|v| space.index_of_value(v)).ok_or_else(|| SamplesError::OutsideDomain {
            file: file.into(),
            line,
            column,
            value: value.map_or_else(|f| format!("{f}"), |v| v.to_string()),
            domain: domain_string(space),
            kind: kind_name.into(),
        })
    })?;
    Ok(Samples { n, d, indices })
}

/// Reads a samples file (`gof.md` §10.2) for a model on `space` of kind `kind_name`.
/// The CLI's n ≥ 10 rule is the caller's: see [`Samples::require_rows`].
pub fn read_samples(
    path: &Path,
    space: &Space,
    kind_name: &str,
    delimiter: Delimiter,
) -> Result<Samples, SamplesError> {
    let text = read_text(path)?;
    parse_samples_str(&text, &path.display().to_string(), space, kind_name, delimiter)
}

impl Samples {
    /// `Err(TooFew)` (naming `path`) unless there are at least `min` rows.
    pub fn require_rows(&self, path: &Path, min: usize) -> Result<(), SamplesError> {
        if self.n < min {
            return Err(SamplesError::TooFew { file: path.display().to_string(), n: self.n, min });
        }
        Ok(())
    }

    /// Row `r` (d indices).
    pub fn row(&self, r: usize) -> &[u32] {
        &self.indices[r * self.d..(r + 1) * self.d]
    }
}

/// A matrix of integers read with the samples grammar but no value list (e.g. two sample
/// files compared by MMD without a model).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IntegerMatrix {
    /// Rows.
    pub n: usize,
    /// Columns.
    pub d: usize,
    /// Row-major n × d values.
    pub values: Vec<i64>,
}

/// Parses integers with the samples grammar, without a domain check; `d`, when given, is the
/// required row length.
pub fn parse_integer_matrix_str(
    text: &str,
    file: &str,
    d: Option<usize>,
    delimiter: Delimiter,
) -> Result<IntegerMatrix, SamplesError> {
    let (n, d, values) = parse_cells(text, file, d, delimiter, |t, line, column| {
        integer_cell(file, t, line, column)?.map_err(|_| SamplesError::NotInteger {
            file: file.into(),
            line,
            column,
            token: t.to_string(),
        })
    })?;
    Ok(IntegerMatrix { n, d, values })
}

/// Reads a file of integers with the samples grammar, without a domain check.
pub fn read_integer_matrix(path: &Path, d: Option<usize>, delimiter: Delimiter) -> Result<IntegerMatrix, SamplesError> {
    let text = read_text(path)?;
    parse_integer_matrix_str(&text, &path.display().to_string(), d, delimiter)
}

/// Parses a matrix of reals in (0, 1) with the samples grammar (jitter files). `d`, when given,
/// is the required row length.
pub fn parse_real_matrix_str(
    text: &str,
    file: &str,
    d: Option<usize>,
    delimiter: Delimiter,
) -> Result<RealMatrix, SamplesError> {
    let (n, d, values) = parse_cells(text, file, d, delimiter, |t, line, column| match t.parse::<f64>() {
        Ok(v) if v > 0.0 && v < 1.0 => Ok(v),
        _ => Err(SamplesError::NotUnitInterval { file: file.into(), line, column, token: t.to_string() }),
    })?;
    Ok(RealMatrix { n, d, values })
}

/// Reads a matrix of reals in (0, 1) (a `--jitter` file).
pub fn read_real_matrix(path: &Path, d: Option<usize>, delimiter: Delimiter) -> Result<RealMatrix, SamplesError> {
    let text = read_text(path)?;
    parse_real_matrix_str(&text, &path.display().to_string(), d, delimiter)
}

/// Reads a matrix of finite numbers with the samples grammar (optional header, any delimiter):
/// a data file of features and targets (`bnn` model files name one as `data`).
pub fn read_number_matrix(path: &Path, delimiter: Delimiter) -> Result<RealMatrix, SamplesError> {
    let text = read_text(path)?;
    let file = path.display().to_string();
    let (n, d, values) = parse_cells(&text, &file, None, delimiter, |t, line, column| match t.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(SamplesError::NotNumber { file: file.clone(), line, column, token: t.to_string() }),
    })?;
    Ok(RealMatrix { n, d, values })
}

/// The text [`write_samples`] writes: comma-separated integer values, `\n` line ends.
pub fn format_samples(space: &Space, indices: &[u32], header: bool) -> String {
    let d = space.d;
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::with_capacity(indices.len() * 3 + 8 * d));
    // Writing to a Vec cannot fail, and integers and `x{i}` never need quoting.
    if header {
        w.write_record((0..d).map(|i| format!("x{i}"))).expect("csv into memory");
    }
    for row in indices.chunks_exact(d) {
        w.write_record(row.iter().map(|&c| space.value(c).to_string())).expect("csv into memory");
    }
    let bytes = w.into_inner().expect("csv into memory");
    String::from_utf8(bytes).expect("csv of integers is UTF-8")
}

/// Writes samples (row-major n × d indices) with user-facing values, comma-separated, with an
/// optional `x0,x1,…` header, atomically (temporary file in the same directory, then rename).
pub fn write_samples(path: &Path, space: &Space, indices: &[u32], header: bool) -> std::io::Result<()> {
    crate::model::write_atomic(path, format_samples(space, indices, header).as_bytes())
}
