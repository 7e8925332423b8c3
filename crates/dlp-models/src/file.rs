//! Reading `dlp.model.v1` files (`gof.md` §10.3): JSON or TOML by extension, same keys.
//!
//! Both formats are first turned into a `serde_json::Value` (TOML non-finite floats are rejected
//! on the way, since JSON cannot hold them) and then validated by hand, so that every message
//! names the key, the position in it and the offending value.

use crate::couplings::Couplings;
use crate::error::ModelError;
use crate::kinds;
use crate::model::{MODEL_SCHEMA, Model};
use crate::potts::check_space_values;
use dlp_core::{DomainKind, Space};
use serde_json::{Map, Value};
use std::path::Path;

/// Model file format, chosen by extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `.json`
    Json,
    /// `.toml`
    Toml,
}

impl Format {
    /// The format of `path` from its extension (`.json` or `.toml`, case-insensitive).
    pub fn from_path(path: &Path) -> Option<Format> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "json" => Some(Format::Json),
            "toml" => Some(Format::Toml),
            _ => None,
        }
    }
}

/// Loads and validates a model file; errors display as `gof.md` §10.5 lines (without `error: `).
pub fn load_model(path: &Path) -> Result<Model, ModelError> {
    let file = path.display().to_string();
    let format = Format::from_path(path).ok_or_else(|| ModelError::Invalid {
        file: file.clone(),
        message: "unknown model file extension (expected .json or .toml)".into(),
    })?;
    let bytes =
        std::fs::read(path).map_err(|e| ModelError::Io { file: file.clone(), message: dlp_core::io::io_reason(&e) })?;
    let text = String::from_utf8(bytes)
        .map_err(|_| ModelError::Invalid { file: file.clone(), message: "not UTF-8 text".into() })?;
    let value = parse_value(&text, format, &file)?;
    model_from_value(&value, path.parent()).map_err(|e| e.in_file(&file))
}

/// Parses and validates model text; `file` is the name used in error messages.
pub fn parse_model_str(text: &str, format: Format, file: &str) -> Result<Model, ModelError> {
    let value = parse_value(text, format, file)?;
    model_from_value(&value, None).map_err(|e| e.in_file(file))
}

fn parse_value(text: &str, format: Format, file: &str) -> Result<Value, ModelError> {
    Ok(match format {
        Format::Json => serde_json::from_str::<Value>(text).map_err(|e| json_syntax_error(&e, file))?,
        Format::Toml => {
            let table: toml::Table = toml::from_str(text).map_err(|e| toml_syntax_error(&e, text, file))?;
            toml_to_json(toml::Value::Table(table), "").map_err(|e| e.in_file(file))?
        }
    })
}

fn json_syntax_error(e: &serde_json::Error, file: &str) -> ModelError {
    let full = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let message = full.strip_suffix(&suffix).unwrap_or(&full).to_string();
    if e.line() == 0 {
        return ModelError::Invalid { file: file.into(), message };
    }
    // serde_json says column 0 when the text ends right after a line break (or is empty):
    // the place is then the line's first column, since columns are 1-based.
    ModelError::Syntax { file: file.into(), line: e.line(), column: e.column().max(1), message }
}

fn toml_syntax_error(e: &toml::de::Error, text: &str, file: &str) -> ModelError {
    let message = e.message().trim().to_string();
    match e.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            ModelError::Syntax { file: file.into(), line, column, message }
        }
        None => ModelError::Invalid { file: file.into(), message },
    }
}

fn toml_to_json(v: toml::Value, path: &str) -> Result<Value, ModelError> {
    Ok(match v {
        toml::Value::String(s) => Value::String(s),
        toml::Value::Integer(i) => Value::from(i),
        toml::Value::Float(f) => match serde_json::Number::from_f64(f) {
            Some(n) => Value::Number(n),
            None => return Err(ModelError::param(format!("{path} is not a finite number: {f}"))),
        },
        toml::Value::Boolean(b) => Value::Bool(b),
        toml::Value::Datetime(_) => return Err(ModelError::param(format!("{path}: dates are not allowed"))),
        toml::Value::Array(a) => Value::Array(
            a.into_iter()
                .enumerate()
                .map(|(i, x)| toml_to_json(x, &format!("{path}[{i}]")))
                .collect::<Result<_, _>>()?,
        ),
        toml::Value::Table(t) => {
            let mut m = Map::new();
            for (k, x) in t {
                let name = key_name(&k);
                let p = if path.is_empty() { name.into_owned() } else { format!("{path}.{name}") };
                m.insert(k, toml_to_json(x, &p)?);
            }
            Value::Object(m)
        }
    })
}

/// The most coordinates a model file may declare (2^24): a bound so that a mistyped `d` is an
/// error line instead of an allocation that ends the process; d × K has the same bound.
pub const MAX_D: usize = 1 << 24;

/// The most values a categorical coordinate may take (2^24), for the same reason.
pub const MAX_K: usize = 1 << 24;

/// `key` as a message shows it: as is when it is plain text, else JSON-quoted (a key may hold
/// a line break or a quote, and a message must stay one line).
pub(crate) fn key_name(key: &str) -> std::borrow::Cow<'_, str> {
    if key.chars().any(|c| c.is_control() || c == '"' || c == '\\') {
        let quoted = escape_controls(Value::String(key.to_string()).to_string());
        std::borrow::Cow::Owned(quoted[1..quoted.len() - 1].to_string())
    } else {
        std::borrow::Cow::Borrowed(key)
    }
}

/// Keys every kind accepts; the kind-specific ones come from [`kinds::KINDS`].
const COMMON_KEYS: [&str; 7] = ["schema", "kind", "d", "domain", "K", "values", "name"];

// The helpers below are shared with the kind parsers in `crate::kinds`, so that every kind
// reports shapes and numbers in the same words.

/// A parameter error (the loader adds the file name).
pub(crate) fn err<T>(message: impl Into<String>) -> Result<T, ModelError> {
    Err(ModelError::param(message))
}

/// `s` with the control characters JSON leaves as they are (DEL, U+0080–U+009F) written
/// `\u007f`, so that a message stays one plain line.
fn escape_controls(s: String) -> String {
    if !s.chars().any(char::is_control) {
        return s;
    }
    s.chars().map(|c| if c.is_control() { format!("\\u{:04x}", c as u32) } else { c.to_string() }).collect()
}

/// A short rendering of a JSON value for messages.
pub(crate) fn show(v: &Value) -> String {
    let s = escape_controls(v.to_string());
    if s.chars().count() > 40 { format!("{}…", s.chars().take(40).collect::<String>()) } else { s }
}

/// An integer, also when written as a float with no fractional part (TOML/JSON writers differ).
fn as_int(v: &Value) -> Option<i64> {
    if let Some(i) = v.as_i64() {
        return Some(i);
    }
    let f = v.as_f64()?;
    (f.fract() == 0.0 && f.abs() < 9.0e15).then_some(f as i64)
}

/// A finite number at `path`.
pub(crate) fn number(v: &Value, path: &str) -> Result<f64, ModelError> {
    match v.as_f64() {
        Some(f) if f.is_finite() => Ok(f),
        Some(f) => err(format!("{path} is not a finite number: {f}")),
        None => err(format!("{path} must be a number, found {}", show(v))),
    }
}

/// A list of numbers at `path`, of length `len.0` if given (`len.1` describes it).
pub(crate) fn vector(v: &Value, path: &str, len: Option<(usize, &str)>) -> Result<Vec<f64>, ModelError> {
    let Some(a) = v.as_array() else {
        return err(format!("{path} must be a list of numbers, found {}", show(v)));
    };
    if let Some((n, desc)) = len
        && a.len() != n
    {
        return err(format!("{path} has length {} but {desc}", a.len()));
    }
    a.iter().enumerate().map(|(i, x)| number(x, &format!("{path}[{i}]"))).collect()
}

/// A list of `rows` lists of equal length (`cols` if given); returns the row-major data and the
/// column count.
pub(crate) fn matrix(
    v: &Value,
    path: &str,
    rows: (usize, &str),
    cols: Option<(usize, &str)>,
) -> Result<(Vec<f64>, usize), ModelError> {
    let Some(a) = v.as_array() else {
        return err(format!("{path} must be a list of rows, found {}", show(v)));
    };
    if a.len() != rows.0 {
        return err(format!("{path} has {} rows but {}", a.len(), rows.1));
    }
    let mut out = Vec::new();
    let mut ncols = cols.map(|c| c.0);
    for (r, row) in a.iter().enumerate() {
        let p = format!("{path}[{r}]");
        let Some(ra) = row.as_array() else {
            return err(format!("{p} must be a list of numbers, found {}", show(row)));
        };
        match (ncols, cols) {
            (Some(n), Some((_, desc))) if ra.len() != n => {
                return err(format!("{p} has {} entries but {desc}", ra.len()));
            }
            (Some(n), None) if ra.len() != n => {
                return err(format!("{p} has {} entries but {path}[0] has {n}", ra.len()));
            }
            (None, _) => ncols = Some(ra.len()),
            _ => {}
        }
        for (c, x) in ra.iter().enumerate() {
            out.push(number(x, &format!("{p}[{c}]"))?);
        }
    }
    Ok((out, ncols.unwrap_or(0)))
}

/// `base`: the model file's directory, against which a `data` file name is resolved (`None`
/// for text without a file: then `data` must be inline).
fn model_from_value(v: &Value, base: Option<&Path>) -> Result<Model, ModelError> {
    let Some(obj) = v.as_object() else {
        return err("the model must be an object (JSON) or a table (TOML)");
    };
    match obj.get("schema") {
        None => return err(format!("missing key \"schema\" (must be \"{MODEL_SCHEMA}\")")),
        Some(Value::String(s)) if s == MODEL_SCHEMA => {}
        Some(s) => return err(format!("schema must be \"{MODEL_SCHEMA}\", found {}", show(s))),
    }
    let kind = match obj.get("kind") {
        None => return err(format!("missing key \"kind\" ({})", kinds::names_list())),
        Some(v) => match v.as_str().and_then(kinds::find) {
            Some(k) => k,
            None => return err(format!("unknown kind {} (expected {})", show(v), kinds::names_list())),
        },
    };
    for key in obj.keys() {
        if COMMON_KEYS.contains(&key.as_str()) || kind.keys.contains(&key.as_str()) {
            continue;
        }
        if kinds::is_kind_key(key) {
            return err(format!("key \"{key}\" does not belong to a {} model", kind.name));
        }
        return err(format!("unknown key \"{}\"", key_name(key)));
    }
    if let Some(n) = obj.get("name")
        && !n.is_string()
    {
        return err(format!("name must be a string, found {}", show(n)));
    }
    let d = match obj.get("d") {
        None => return err("missing key \"d\" (the number of coordinates)"),
        Some(x) => match as_int(x) {
            Some(d) if (1..=MAX_D as i64).contains(&d) => d as usize,
            Some(d) if d > MAX_D as i64 => {
                return err(format!("d = {d} is more than the {MAX_D} coordinates a model may have"));
            }
            _ => return err(format!("d must be an integer >= 1, found {}", show(x))),
        },
    };
    let domain = match obj.get("domain") {
        None => kind.default_domain,
        Some(Value::String(s)) if s == "spin" => DomainKind::Spin,
        Some(Value::String(s)) if s == "binary" => DomainKind::Binary,
        Some(Value::String(s)) if s == "categorical" => DomainKind::Categorical,
        Some(s) => return err(format!("unknown domain {} (expected spin, binary or categorical)", show(s))),
    };
    if !kind.domains.contains(&domain) {
        let names: Vec<&str> = kind.domains.iter().map(|k| domain_str(*k)).collect();
        return err(format!(
            "domain \"{}\" is not supported by the {} model (use {})",
            domain_str(domain),
            kind.name,
            names.join(" or ")
        ));
    }
    let space = if domain == DomainKind::Categorical {
        let k = match obj.get("K") {
            None => return err("missing key \"K\" (required for the categorical domain)"),
            Some(x) => match as_int(x) {
                Some(k) if (2..=MAX_K as i64).contains(&k) => k as usize,
                Some(k) if k > MAX_K as i64 => {
                    return err(format!("K = {k} is more than the {MAX_K} values a coordinate may have"));
                }
                _ => return err(format!("K must be an integer >= 2, found {}", show(x))),
            },
        };
        if d.saturating_mul(k) > MAX_D {
            return err(format!("d × K = {d} × {k} is more than {MAX_D} (the size of a model's fields)"));
        }
        let values = match obj.get("values") {
            None => (0..k as i64).collect(),
            Some(x) => {
                let Some(a) = x.as_array() else {
                    return err(format!("values must be a list of K = {k} integers, found {}", show(x)));
                };
                if a.len() != k {
                    return err(format!("values has length {} but K = {k}", a.len()));
                }
                let mut vals = Vec::with_capacity(k);
                for (i, y) in a.iter().enumerate() {
                    match y.as_i64() {
                        Some(v) => vals.push(v),
                        None => return err(format!("values[{i}] must be an integer, found {}", show(y))),
                    }
                }
                vals
            }
        };
        Space { d, kind: DomainKind::Categorical, values }
    } else {
        if let Some(x) = obj.get("K")
            && as_int(x) != Some(2)
        {
            return err(format!("K = {} does not match the {} domain (K = 2)", show(x), domain_str(domain)));
        }
        if obj.contains_key("values") {
            return err(format!("values is only allowed with the categorical domain, not {}", domain_str(domain)));
        }
        if domain == DomainKind::Spin { Space::spin(d) } else { Space::binary(d) }
    };
    check_space_values(&space)?;
    match obj.get("data") {
        Some(Value::String(name)) if kind.keys.contains(&"data") => {
            let mut obj = obj.clone();
            obj.insert("data".into(), read_data_file(name, base)?);
            (kind.parse)(&obj, &space)
        }
        _ => (kind.parse)(obj, &space),
    }
}

/// The data file `name` (relative to `base`, the model file's directory) as a list of rows, so
/// that kinds read inline and file data alike.
fn read_data_file(name: &str, base: Option<&Path>) -> Result<Value, ModelError> {
    let Some(base) = base else {
        return err(format!(
            "data names the file \"{name}\", which needs a model file to be resolved against; give the rows inline"
        ));
    };
    let path = base.join(name);
    let m = crate::samples::read_number_matrix(&path, crate::samples::Delimiter::Auto)
        .map_err(|e| ModelError::param(format!("data file: {e}")))?;
    let row = |r: &[f64]| Value::Array(r.iter().map(|&x| Value::from(x)).collect());
    Ok(Value::Array(if m.d == 0 { vec![] } else { m.values.chunks_exact(m.d).map(row).collect() }))
}

fn domain_str(k: DomainKind) -> &'static str {
    match k {
        DomainKind::Spin => "spin",
        DomainKind::Binary => "binary",
        DomainKind::Categorical => "categorical",
        DomainKind::Ordinal => "ordinal",
    }
}

/// The couplings of a pairwise kind: at most one of `J`, `edges`, `lattice` (none: no pairs).
pub(crate) fn couplings(obj: &Map<String, Value>, d: usize) -> Result<Couplings, ModelError> {
    let given: Vec<&str> = ["J", "edges", "lattice"].into_iter().filter(|k| obj.contains_key(*k)).collect();
    if given.len() > 1 {
        return err(format!("give at most one of J, edges and lattice (found {})", given.join(" and ")));
    }
    if let Some(j) = obj.get("J") {
        let d_desc = format!("d = {d}");
        let (j, _) = matrix(j, "J", (d, &d_desc), Some((d, &d_desc)))?;
        return Couplings::from_dense(d, &j);
    }
    if let Some(e) = obj.get("edges") {
        let Some(a) = e.as_array() else {
            return err(format!("edges must be a list of [i, j, weight], found {}", show(e)));
        };
        let mut edges = Vec::with_capacity(a.len());
        for (n, item) in a.iter().enumerate() {
            let triple = item.as_array().filter(|t| t.len() == 3);
            let Some(t) = triple else {
                return err(format!("edges[{n}] must be [i, j, weight], found {}", show(item)));
            };
            let idx = |x: &Value, what: &str| -> Result<usize, ModelError> {
                match as_int(x) {
                    Some(i) if i >= 0 => Ok(i as usize),
                    _ => err(format!("edges[{n}]: {what} must be a non-negative integer, found {}", show(x))),
                }
            };
            let (i, j) = (idx(&t[0], "i")?, idx(&t[1], "j")?);
            let w = number(&t[2], &format!("edges[{n}][2]"))?;
            edges.push((i, j, w));
        }
        return Couplings::from_edges(d, &edges);
    }
    if let Some(l) = obj.get("lattice") {
        let Some(lo) = l.as_object() else {
            return err(format!("lattice must be an object with shape, periodic and coupling, found {}", show(l)));
        };
        for key in lo.keys() {
            if !["shape", "periodic", "coupling"].contains(&key.as_str()) {
                return err(format!("unknown key \"{}\" in lattice", key_name(key)));
            }
        }
        let Some(sv) = lo.get("shape") else {
            return err("missing key \"shape\" in lattice");
        };
        let Some(sa) = sv.as_array().filter(|a| !a.is_empty()) else {
            return err(format!("lattice.shape must be a non-empty list of positive integers, found {}", show(sv)));
        };
        let mut shape = Vec::with_capacity(sa.len());
        for (i, x) in sa.iter().enumerate() {
            match as_int(x) {
                Some(s) if s >= 1 => shape.push(s as usize),
                _ => return err(format!("lattice.shape[{i}] must be a positive integer, found {}", show(x))),
            }
        }
        let periodic = match lo.get("periodic") {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(x) => return err(format!("lattice.periodic must be true or false, found {}", show(x))),
        };
        let coupling = match lo.get("coupling") {
            None => return err("missing key \"coupling\" in lattice"),
            Some(x) => number(x, "lattice.coupling")?,
        };
        let sites = shape.iter().try_fold(1usize, |a, &s| a.checked_mul(s));
        if sites != Some(d) {
            let sites = sites.map_or("too many".to_string(), |s| s.to_string());
            return err(format!("lattice shape {shape:?} has {sites} sites but d = {d}"));
        }
        return Couplings::lattice(&shape, periodic, coupling);
    }
    Ok(Couplings::none(d))
}
