//! The readers of model-file values shared by the loader ([`crate::file`]) and every kind's
//! parser ([`crate::kinds`], [`crate::bnn`], [`crate::logistic`]), so that all report shapes
//! and numbers in the same words. A leaf: the loader imports the kinds, the kinds import this.

use crate::couplings::Couplings;
use crate::error::ModelError;
use serde_json::{Map, Value};

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

/// A parameter error (the loader adds the file name).
pub(crate) fn err<T>(message: impl Into<String>) -> Result<T, ModelError> {
    Err(ModelError::param(message))
}

/// `s` with the control characters JSON leaves as they are (DEL, U+0080–U+009F) written
/// `\u007f`, so that a message stays one plain line.
pub(crate) fn escape_controls(s: String) -> String {
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
pub(crate) fn as_int(v: &Value) -> Option<i64> {
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
