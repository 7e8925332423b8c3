//! Reading `dlp.model.v1` files (`gof.md` §10.3): JSON or TOML by extension, same keys.
//!
//! Both formats are first turned into a `serde_json::Value` (TOML non-finite floats are rejected
//! on the way, since JSON cannot hold them) and then validated by hand, so that every message
//! names the key, the position in it and the offending value.

use crate::error::ModelError;
pub use crate::fields::{MAX_D, MAX_K};
use crate::fields::{as_int, err, key_name, show};
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

/// The prefix of a generated DISCS task in place of a model file path (`discs:ising`).
pub const DISCS_PREFIX: &str = "discs:";

/// Loads and validates a model file; errors display as `gof.md` §10.5 lines (without `error: `).
/// `discs:NAME` instead of a path is DISCS task NAME ([`crate::discs`]).
pub fn load_model(path: &Path) -> Result<Model, ModelError> {
    let file = path.display().to_string();
    // `discs:NAME` names a generated DISCS task (crate::discs), so every command taking a
    // model file takes the benchmark's tasks too.
    if let Some(name) = file.strip_prefix(DISCS_PREFIX) {
        return crate::discs::task(name).map_err(|e| e.in_file(&file));
    }
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

/// Keys every kind accepts; the kind-specific ones come from [`kinds::KINDS`].
const COMMON_KEYS: [&str; 7] = ["schema", "kind", "d", "domain", "K", "values", "name"];

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
