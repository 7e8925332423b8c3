//! Fuzzing the readers of files users write: `dlp.model.v1` files (JSON and TOML, every kind)
//! and samples files (the samples, integer and (0, 1) readers). Each target tries arbitrary
//! bytes and structure-aware inputs (a valid file with one thing changed: a wrong type, a huge,
//! negative or non-finite number, a wrong dimension, a cut, a non-UTF-8 byte) and checks:
//! no panic, each input within a time bound (`dlp_core::testing::fuzz`), and every rejection
//! one line that names the file (and, where it says one, a line and field that exist).
//!
//! `just test` runs a few hundred inputs per target and replays `tests/fuzz_corpus/`;
//! `just fuzz` runs 10^7 per target in release (`DLP_FUZZ_CASES`, `DLP_FUZZ_SEED`).

use dlp_core::testing::fuzz::{self, Target, one_line_naming, show_bytes};
use dlp_core::{DomainKind, Space};
use dlp_models::samples::{parse_integer_matrix_str, parse_real_matrix_str, parse_samples_str};
use dlp_models::{Delimiter, Format, ModelError, SamplesError, load_model, parse_model_str, read_samples};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use serde_json::{Value, json};
use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A runner with `default` cases (or `DLP_FUZZ_CASES`), seeded by `DLP_FUZZ_SEED` when set and
/// fixed otherwise, so that the short run is the same every time.
fn runner(default: u32) -> TestRunner {
    let config = Config { cases: fuzz::cases(default), failure_persistence: None, ..Config::default() };
    let seed = std::env::var("DLP_FUZZ_SEED").ok().and_then(|s| s.trim().parse::<u64>().ok()).unwrap_or(20261202);
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes))
}

fn run<T: std::fmt::Debug + Clone + Send + 'static>(
    runner: &mut TestRunner,
    strategy: impl Strategy<Value = T>,
    target: &Target,
    check: impl Fn(&T) -> Result<(), String>,
) {
    let result = runner.run(&strategy, |input| target.run(&input, || check(&input)).map_err(TestCaseError::fail));
    if let Err(e) = result {
        panic!("fuzz target failed: {e}");
    }
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_corpus")
}

// ---------------------------------------------------------------- model files

const MODEL_JSON: &str = "fuzz-model.json";
const MODEL_TOML: &str = "fuzz-model.toml";

/// Whether this non-UTF-8 input also goes through the file reader: the first 64, then every
/// 1024th. Only the file readers see bytes that are not UTF-8, and they reject them by one
/// `String::from_utf8` before any parsing, the same way for every such input; writing a
/// temporary file for each cost ten times the parse (ext4 writes back a truncated and
/// rewritten file on close) and left the parsers idle. Every non-UTF-8 input, sampled or not,
/// then goes through the in-memory parsers decoded lossily, so its bytes reach them too.
fn through_file() -> bool {
    static SEEN: AtomicU64 = AtomicU64::new(0);
    let i = SEEN.fetch_add(1, Ordering::Relaxed);
    i < 64 || i.is_multiple_of(1024)
}

/// The model-file properties for `bytes` read as `format`: parsed without panic, or rejected
/// with one line starting with the file name; a syntax error's line exists in the text. Bytes
/// that are not UTF-8 must be rejected by the file reader (every time when `every_file`, else
/// for a sample: [`through_file`]) and are then parsed decoded lossily.
fn check_model_bytes(bytes: &[u8], format: Format, dir: &Path, every_file: bool) -> Result<(), String> {
    let file = if format == Format::Json { MODEL_JSON } else { MODEL_TOML };
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => {
            if every_file || through_file() {
                let path = dir.join(file);
                std::fs::write(&path, bytes).map_err(|e| e.to_string())?;
                match load_model(&path).map_err(|e| strip_dir(e, dir)) {
                    Ok(_) => return Err("non-UTF-8 model accepted".into()),
                    Err(e) => check_model_error(&e, bytes, file)?,
                }
            }
            String::from_utf8_lossy(bytes)
        }
    };
    match parse_model_str(&text, format, file) {
        Ok(_) => Ok(()),
        Err(e) => check_model_error(&e, text.as_bytes(), file),
    }
}

/// One model-file rejection of `bytes`: one line, starting with `file`; a syntax error's
/// line and column exist.
fn check_model_error(e: &ModelError, bytes: &[u8], file: &str) -> Result<(), String> {
    let message = e.to_string();
    one_line_naming(&message, &[])?;
    if !message.starts_with(&format!("{file}:")) {
        return Err(format!("error does not start with the file name: {message:?}"));
    }
    if let ModelError::Syntax { line, column, .. } = *e {
        let lines = bytes.split(|&b| b == b'\n').count();
        if line == 0 || line > lines || column == 0 {
            return Err(format!("syntax error at {line}:{column} but the text has {lines} lines: {message:?}"));
        }
    }
    Ok(())
}

/// A file error with the temporary directory taken out of the file name.
fn strip_dir(e: ModelError, dir: &Path) -> ModelError {
    let fix = |f: String| f.strip_prefix(&format!("{}/", dir.display())).map(str::to_string).unwrap_or(f);
    match e {
        ModelError::Io { file, message } => ModelError::Io { file: fix(file), message },
        ModelError::Syntax { file, line, column, message } => {
            ModelError::Syntax { file: fix(file), line, column, message }
        }
        ModelError::Invalid { file, message } => ModelError::Invalid { file: fix(file), message },
        other => other,
    }
}

/// Text that looks like JSON/TOML (brackets, quotes, keys, numbers) more often than random
/// bytes do, so that the parsers get past the first character.
fn soup(format: Format) -> impl Strategy<Value = Vec<u8>> {
    let atoms: Vec<&'static str> = match format {
        Format::Json => vec![
            "{",
            "}",
            "[",
            "]",
            ",",
            ":",
            "\"",
            "\"schema\"",
            "\"dlp.model.v1\"",
            "\"kind\"",
            "\"ising\"",
            "\"potts\"",
            "\"rbm\"",
            "\"table\"",
            "\"d\"",
            "\"K\"",
            "\"J\"",
            "\"b\"",
            "\"h\"",
            "\"W\"",
            "\"edges\"",
            "1",
            "-1",
            "0",
            "2",
            "1e308",
            "1e999",
            "-0",
            "0.5",
            "null",
            "true",
            "\"\\n\"",
            "\"\\u0000\"",
            " ",
            "\n",
            "9007199254740993",
            "\"\u{7f}\"",
            "\"\u{85}\"",
            "18446744073709551616",
            "\"log_prob\"",
            "\"lattice\"",
            "\"shape\"",
            "\"domain\"",
            "\"categorical\"",
        ],
        Format::Toml => vec![
            "schema = \"dlp.model.v1\"\n",
            "kind = \"ising\"\n",
            "kind = \"potts\"\n",
            "d = ",
            "K = ",
            "J = ",
            "b = ",
            "h = ",
            "[",
            "]",
            ",",
            "=",
            "\"",
            "\n",
            " ",
            "1",
            "-1",
            "0",
            "2",
            "nan",
            "inf",
            "-inf",
            "1e308",
            "0.5",
            "true",
            "[lattice]\n",
            "shape = ",
            "periodic = ",
            "coupling = ",
            "1979-05-27T07:32:00Z",
            "'''",
            "\"\"\"",
            "{",
            "}",
            "a.b",
            "\"\\n\"",
            "#",
            "\r\n",
            "[[x]]\n",
            "9223372036854775807",
            "log_prob = ",
        ],
    };
    prop::collection::vec(prop::sample::select(atoms), 0..40).prop_map(|v| v.concat().into_bytes())
}

fn bytes_or_soup(format: Format) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![prop::collection::vec(any::<u8>(), 0..300), soup(format)]
}

/// A tiny deterministic generator for the numbers inside a valid model (the strategy picks
/// the seed, so proptest still controls every input).
struct Mix(u64);

impl Mix {
    fn next(&mut self) -> u64 {
        dlp_core::testing::splitmix64(&mut self.0)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn real(&mut self) -> f64 {
        ((self.next() >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 2.0
    }
    fn vec(&mut self, n: usize) -> Value {
        json!((0..n).map(|_| self.real()).collect::<Vec<_>>())
    }
    fn mat(&mut self, r: usize, c: usize) -> Value {
        Value::Array((0..r).map(|_| self.vec(c)).collect())
    }
    fn sym(&mut self, d: usize) -> Value {
        let mut j = vec![vec![0.0; d]; d];
        // Both triangles are written, so indices are clearer than iterators here.
        #[allow(clippy::needless_range_loop)]
        for a in 0..d {
            for b in a + 1..d {
                let w = self.real();
                j[a][b] = w;
                j[b][a] = w;
            }
        }
        json!(j)
    }
}

/// The kinds a model file can name (every one in `dlp_models::kinds::KINDS`).
const KINDS: [&str; 8] = ["ising", "potts", "rbm", "categorical", "table", "logistic", "bnn", "fhmm"];

/// A valid model of kind `KINDS[kind]` with small random shapes and numbers.
fn valid_model(kind: usize, seed: u64) -> Value {
    let mut r = Mix(seed);
    let d = 1 + r.below(4);
    let k = 2 + r.below(3);
    let mut m = json!({"schema": "dlp.model.v1", "kind": KINDS[kind], "d": d});
    let o = m.as_object_mut().expect("object");
    match KINDS[kind] {
        "ising" => {
            o.insert("domain".into(), json!(["spin", "binary"][r.below(2)]));
            match r.below(3) {
                0 => {
                    o.insert("J".into(), r.sym(d));
                }
                1 if d >= 2 => {
                    o.insert("edges".into(), json!([[0, d - 1, r.real()]]));
                }
                _ => {
                    o.insert(
                        "lattice".into(),
                        json!({"shape": [d], "periodic": r.below(2) == 0, "coupling": r.real()}),
                    );
                }
            }
            o.insert("b".into(), r.vec(d));
        }
        "potts" => {
            o.insert("K".into(), json!(k));
            o.insert("J".into(), r.sym(d));
            o.insert("h".into(), r.mat(d, k));
            if r.below(2) == 0 {
                o.insert("values".into(), json!((0..k).map(|i| 3 * i as i64 - 2).collect::<Vec<_>>()));
            }
        }
        "rbm" => {
            let m = 1 + r.below(3);
            o.insert("W".into(), r.mat(d, m));
            o.insert("b".into(), r.vec(d));
            o.insert("c".into(), r.vec(m));
        }
        "categorical" => {
            o.insert("K".into(), json!(k));
            let p: Vec<Vec<f64>> = (0..d).map(|_| vec![1.0 / k as f64; k]).collect();
            if r.below(2) == 0 {
                o.insert("probs".into(), json!(p));
            } else {
                o.insert("logits".into(), r.mat(d, k));
            }
        }
        "table" => {
            o.insert("K".into(), json!(k));
            o.insert("log_prob".into(), r.vec(k.pow(d as u32)));
        }
        "logistic" => {
            let n = 1 + r.below(4);
            o.insert("domain".into(), json!(["spin", "binary"][r.below(2)]));
            o.insert("X".into(), r.mat(n, d));
            o.insert("y".into(), json!((0..n).map(|_| r.below(2)).collect::<Vec<_>>()));
            o.insert("b".into(), r.vec(d));
            if r.below(2) == 0 {
                o.insert("minibatch".into(), json!({"scaling": "mean_times", "c": 2.0}));
            }
        }
        "bnn" => {
            let (p, h, n) = (1 + r.below(3), 1 + r.below(2), 1 + r.below(4));
            o.insert("d".into(), json!(p * h + h + h + 1));
            o.insert("domain".into(), json!("binary"));
            o.insert("hidden".into(), json!(h));
            o.insert("tau".into(), json!(1.0));
            o.insert("x".into(), r.mat(n, p));
            o.insert("y".into(), json!((0..n).map(|_| r.below(2)).collect::<Vec<_>>()));
        }
        "fhmm" => {
            // d = L·K: L time steps of K binary chains.
            let (l, kk) = (1 + r.below(3), 1 + r.below(2));
            o.insert("d".into(), json!(l * kk));
            o.insert("y".into(), r.vec(l));
            o.insert("w".into(), r.vec(kk));
            o.insert("b".into(), json!(r.real()));
            o.insert("sigma".into(), json!(1.5));
            o.insert("alpha".into(), json!(0.1));
            o.insert("beta".into(), json!(0.8));
        }
        _ => unreachable!(),
    }
    m
}

/// Values that are wrong wherever a number, list or name is expected.
fn wrong_values() -> Vec<Value> {
    vec![
        json!(null),
        json!(true),
        json!("1"),
        json!("nan"),
        json!({}),
        json!({"a": 1}),
        json!([]),
        json!([[]]),
        json!(["x"]),
        json!([[1, "x"]]),
        json!([null]),
        json!("line one\nline two"),
        json!("\u{7f}\u{85}"),
    ]
}

/// Numbers at the edges: huge, negative, zero, fractional, beyond i64/u64, f64 limits.
fn edge_numbers() -> Vec<Value> {
    let big: Value = serde_json::from_str("18446744073709551616").expect("big number");
    vec![
        json!(0),
        json!(-1),
        json!(-9223372036854775807i64),
        json!(u64::MAX),
        json!(i64::MAX),
        json!(1u64 << 32),
        json!(1u64 << 40),
        json!(1u64 << 52),
        json!(100000),
        json!(4294967295u64),
        json!(2.5),
        json!(-0.0),
        json!(1e308),
        json!(-1e308),
        json!(f64::MIN_POSITIVE),
        json!(1e-320),
        big,
    ]
}

/// One change to a valid model.
#[derive(Clone, Debug)]
enum Mutation {
    /// Remove the key at this position of the key list.
    Remove(usize),
    /// Replace the value of key `.0` by `wrong_values()[.1]`.
    WrongType(usize, usize),
    /// Replace a number somewhere (the `.0`-th number in document order) by `edge_numbers()[.1]`.
    EdgeNumber(usize, usize),
    /// Drop the last element of the `.0`-th array in document order (a wrong dimension).
    Shorten(usize),
    /// Duplicate the last element of the `.0`-th array (a wrong dimension the other way).
    Lengthen(usize),
    /// Add a key: one that belongs to another kind, or an unknown one.
    AddKey(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (0..12usize).prop_map(Mutation::Remove),
        (0..12usize, 0..12usize).prop_map(|(a, b)| Mutation::WrongType(a, b)),
        (0..64usize, 0..17usize).prop_map(|(a, b)| Mutation::EdgeNumber(a, b)),
        (0..16usize).prop_map(Mutation::Shorten),
        (0..16usize).prop_map(Mutation::Lengthen),
        (0..6usize).prop_map(Mutation::AddKey),
    ]
}

/// Visits every value in document order.
fn walk<'a>(v: &'a mut Value, f: &mut dyn FnMut(&mut Value) -> bool) -> bool {
    if f(v) {
        return true;
    }
    match v {
        Value::Array(a) => a.iter_mut().any(|x| walk(x, f)),
        Value::Object(o) => o.values_mut().any(|x| walk(x, f)),
        _ => false,
    }
}

/// Applies `m` to `v`; returns the top-level key it gave a wrong type to, if any (then the
/// message must name that key).
fn mutate(v: &mut Value, m: &Mutation) -> Option<String> {
    let obj = v.as_object_mut().expect("object");
    let keys: Vec<String> = obj.keys().cloned().collect();
    match *m {
        Mutation::Remove(i) => {
            obj.remove(&keys[i % keys.len()]);
        }
        Mutation::WrongType(i, w) => {
            let key = keys[i % keys.len()].clone();
            obj.insert(key.clone(), wrong_values()[w % wrong_values().len()].clone());
            return Some(key);
        }
        Mutation::EdgeNumber(i, e) => {
            let mut n = 0;
            walk(v, &mut |x| {
                if x.is_number() {
                    if n == i {
                        *x = edge_numbers()[e % 17].clone();
                        return true;
                    }
                    n += 1;
                }
                false
            });
        }
        Mutation::Shorten(i) | Mutation::Lengthen(i) => {
            let longer = matches!(m, Mutation::Lengthen(_));
            let mut n = 0;
            walk(v, &mut |x| {
                if let Value::Array(a) = x {
                    if n == i {
                        if longer {
                            if let Some(last) = a.last().cloned() {
                                a.push(last);
                            }
                        } else {
                            a.pop();
                        }
                        return true;
                    }
                    n += 1;
                }
                false
            });
        }
        Mutation::AddKey(i) => {
            let (k, val) = [
                ("W", json!([[1.0]])),
                ("J", json!([[0.0]])),
                ("colour", json!(1)),
                ("data", json!("missing.csv")),
                ("lattice", json!({"shape": [2], "coupling": 1})),
                ("key\nwith a break", json!(1)),
            ][i % 6]
                .clone();
            obj.insert(k.into(), val);
        }
    }
    None
}

/// How the mutated model reaches the parser.
#[derive(Clone, Debug)]
enum Spelling {
    /// As written.
    Whole,
    /// Cut after this fraction (per mille) of its bytes.
    Cut(u16),
    /// With a byte that is never UTF-8 at this fraction (per mille).
    NotUtf8(u16),
}

fn spelling() -> impl Strategy<Value = Spelling> {
    prop_oneof![
        6 => Just(Spelling::Whole),
        2 => (0..1000u16).prop_map(Spelling::Cut),
        1 => (0..1000u16).prop_map(Spelling::NotUtf8),
    ]
}

fn spell(text: String, s: &Spelling) -> Vec<u8> {
    let mut b = text.into_bytes();
    let at = |pm: u16, len: usize| len * pm as usize / 1000;
    match *s {
        Spelling::Whole => {}
        Spelling::Cut(pm) => b.truncate(at(pm, b.len())),
        Spelling::NotUtf8(pm) => {
            let i = at(pm, b.len());
            b.insert(i, 0xff);
        }
    }
    b
}

/// The TOML spelling of a model, when TOML can hold it (no null, no NaN).
fn to_toml(v: &Value) -> Option<String> {
    let t: toml::Value = serde_json::from_value(v.clone()).ok()?;
    let table = t.as_table()?.clone();
    toml::to_string(&table).ok()
}

#[test]
fn fuzz_model_json_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let t = Target::new("model-json-bytes");
    run(&mut runner(600), bytes_or_soup(Format::Json), &t, |b| check_model_bytes(b, Format::Json, dir.path(), false));
}

#[test]
fn fuzz_model_toml_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let t = Target::new("model-toml-bytes");
    run(&mut runner(600), bytes_or_soup(Format::Toml), &t, |b| check_model_bytes(b, Format::Toml, dir.path(), false));
}

#[test]
fn fuzz_model_structured() {
    let dir = tempfile::tempdir().unwrap();
    let t = Target::new("model-structured");
    let strategy = (0..KINDS.len(), any::<u64>(), prop::option::of(mutation()), spelling(), any::<bool>());
    run(&mut runner(1500), strategy, &t, |(kind, seed, m, s, toml)| {
        let mut v = valid_model(*kind, *seed);
        let named = m.as_ref().and_then(|m| mutate(&mut v, m));
        let (text, format) = match (toml, to_toml(&v)) {
            (true, Some(t)) => (t, Format::Toml),
            _ => (serde_json::to_string_pretty(&v).expect("json"), Format::Json),
        };
        let bytes = spell(text, s);
        check_model_bytes(&bytes, format, dir.path(), false)?;
        let result = std::str::from_utf8(&bytes)
            .ok()
            .map(|t| parse_model_str(t, format, if format == Format::Json { MODEL_JSON } else { MODEL_TOML }));
        match (m, s, result) {
            // A valid model as written must load.
            (None, Spelling::Whole, Some(Err(e))) => Err(format!("valid {} model rejected: {e}", KINDS[*kind])),
            // A key given a wrong type must be the one the message names.
            (_, Spelling::Whole, Some(Err(e))) => match named {
                Some(key) if !e.to_string().contains(key.as_str()) => {
                    Err(format!("{key} given a wrong type, but the message does not name it: {e}"))
                }
                _ => Ok(()),
            },
            _ => Ok(()),
        }
    });
}

#[test]
fn model_corpus_replays() {
    let dir = tempfile::tempdir().unwrap();
    let t = Target::new("model-corpus");
    for (name, bytes) in fuzz::corpus(&corpus_dir(), "model") {
        let format = if name.ends_with(".toml") { Format::Toml } else { Format::Json };
        t.run(&format!("{name}: {}", show_bytes(&bytes)), || {
            check_model_bytes(&bytes, format, dir.path(), true).unwrap_or_else(|e| panic!("corpus {name}: {e}"))
        });
    }
}

// ---------------------------------------------------------------- samples files

const SAMPLES: &str = "fuzz-samples.csv";

/// The spaces samples are read against: spin, binary, categorical with odd values.
fn space(i: usize, d: usize) -> Space {
    match i % 4 {
        0 => Space::spin(d),
        1 => Space::binary(d),
        2 => Space::categorical(d, 3),
        _ => Space { d, kind: DomainKind::Categorical, values: vec![-5, 0, 7, i64::MAX] },
    }
}

const DELIMITERS: [Delimiter; 4] = [Delimiter::Auto, Delimiter::Comma, Delimiter::Tab, Delimiter::Whitespace];

/// The physical line `line` (1-based) of `text`, as the samples grammar counts lines.
fn nth_line(text: &str, line: usize) -> Option<&str> {
    text.strip_prefix('\u{feff}').unwrap_or(text).split('\n').nth(line.wrapping_sub(1))
}

/// One samples-file rejection: one line, starting with the file name, and a line/column it
/// names exists and (for a bad token) holds that token.
fn check_samples_error(text: &str, e: &SamplesError) -> Result<(), String> {
    let message = e.to_string();
    one_line_naming(&message, &[])?;
    if !message.starts_with(&format!("{SAMPLES}:")) {
        return Err(format!("error does not start with the file name: {message:?}"));
    }
    let (line, token) = match e {
        SamplesError::NotFinite { line, token, .. }
        | SamplesError::NotInteger { line, token, .. }
        | SamplesError::NotNumber { line, token, .. }
        | SamplesError::NotUnitInterval { line, token, .. } => (*line, Some(token.as_str())),
        SamplesError::Ragged { line, .. }
        | SamplesError::HeaderMismatch { line, .. }
        | SamplesError::OutsideDomain { line, .. } => (*line, None),
        _ => return Ok(()),
    };
    let Some(l) = nth_line(text, line) else {
        return Err(format!("error names line {line}, which the text does not have: {message:?}"));
    };
    if let Some(tok) = token
        && !l.contains(tok)
    {
        return Err(format!("error names token {tok:?}, which line {line} ({l:?}) does not hold"));
    }
    Ok(())
}

/// Every samples reader on `bytes`: UTF-8 text through the string parsers (each delimiter,
/// each reader); other bytes through the file reader, which must reject them (every time when
/// `every_file`, else for a sample: [`through_file`]), then decoded lossily through the string
/// parsers.
fn check_samples_bytes(
    bytes: &[u8],
    sp: usize,
    d: usize,
    delim: usize,
    dir: &Path,
    every_file: bool,
) -> Result<(), String> {
    let space = space(sp, d);
    let delimiter = DELIMITERS[delim % 4];
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => {
            if every_file || through_file() {
                let path = dir.join(SAMPLES);
                std::fs::write(&path, bytes).map_err(|e| e.to_string())?;
                match read_samples(&path, &space, "ising", delimiter) {
                    Ok(_) => return Err("non-UTF-8 samples accepted".into()),
                    Err(e) => one_line_naming(&e.to_string(), &[SAMPLES])?,
                }
            }
            String::from_utf8_lossy(bytes)
        }
    };
    let text = text.as_ref();
    if let Err(e) = parse_samples_str(text, SAMPLES, &space, "ising", delimiter) {
        check_samples_error(text, &e)?;
    }
    if let Err(e) = parse_integer_matrix_str(text, SAMPLES, (!d.is_multiple_of(3)).then_some(d), delimiter) {
        check_samples_error(text, &e)?;
    }
    if let Err(e) = parse_real_matrix_str(text, SAMPLES, None, delimiter) {
        check_samples_error(text, &e)?;
    }
    Ok(())
}

fn samples_soup() -> impl Strategy<Value = Vec<u8>> {
    let atoms = vec![
        "1",
        "-1",
        "0",
        "2",
        "7",
        "-5",
        ",",
        "\t",
        " ",
        "\n",
        "\r\n",
        "\r",
        "#",
        "x0",
        "x1",
        "_a",
        "nan",
        "NA",
        "-inf",
        "1.0",
        "1e0",
        "0.5",
        "1e400",
        "9223372036854775807",
        "9223372036854775808",
        "1e19",
        "-0",
        "+1",
        "",
        "\u{feff}",
        "é",
        "\u{0}",
        "\u{b}",
        "0x1",
        "1_000",
    ];
    prop::collection::vec(prop::sample::select(atoms), 0..60).prop_map(|v| v.concat().into_bytes())
}

#[test]
fn fuzz_samples_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let t = Target::new("samples-bytes");
    let bytes = prop_oneof![prop::collection::vec(any::<u8>(), 0..300), samples_soup()];
    run(&mut runner(1000), (bytes, 0..4usize, 1..5usize, 0..4usize), &t, |(b, sp, d, delim)| {
        check_samples_bytes(b, *sp, *d, *delim, dir.path(), false)
    });
}

/// A valid samples file for `space(sp, d)`, then one cell, row or line changed.
#[derive(Clone, Debug)]
struct SamplesCase {
    sp: usize,
    d: usize,
    rows: Vec<Vec<usize>>,
    header: bool,
    sep: usize,
    change: Option<(usize, usize, &'static str)>,
    drop_cell: Option<usize>,
    spelling: Spelling,
}

fn samples_case() -> impl Strategy<Value = SamplesCase> {
    let bad = prop::sample::select(vec![
        "",
        "nan",
        "NaN",
        "inf",
        "-Infinity",
        "NA",
        "1.5",
        "1e400",
        "-1e400",
        "9223372036854775808",
        "-9223372036854775809",
        "1e19",
        "abc",
        "1,",
        "0x10",
        "\u{b}1",
        "1\r2",
        "\"1\"",
        "é",
        "99",
        "-99",
        "2.0",
        "1e0",
        "-1.0",
        "+1",
    ]);
    (0..4usize, 1..5usize, 1..12usize, any::<bool>(), 0..3usize, any::<u64>())
        .prop_flat_map(move |(sp, d, n, header, sep, seed)| {
            let mut r = Mix(seed);
            let k = space(sp, d).values.len();
            let rows: Vec<Vec<usize>> = (0..n).map(|_| (0..d).map(|_| r.below(k)).collect()).collect();
            (
                Just((sp, d, rows, header, sep)),
                prop::option::of((0..n, 0..d, bad.clone())),
                prop::option::of(0..n),
                spelling(),
            )
        })
        .prop_map(|((sp, d, rows, header, sep), change, drop_cell, spelling)| SamplesCase {
            sp,
            d,
            rows,
            header,
            sep,
            change,
            drop_cell,
            spelling,
        })
}

fn write_case(c: &SamplesCase) -> String {
    let space = space(c.sp, c.d);
    let sep = [",", "\t", " "][c.sep];
    let mut s = String::new();
    if c.header {
        s.push_str(&(0..c.d).map(|i| format!("x{i}")).collect::<Vec<_>>().join(sep));
        s.push('\n');
    }
    for (r, row) in c.rows.iter().enumerate() {
        let mut cells: Vec<String> = row.iter().map(|&i| space.values[i].to_string()).collect();
        if let Some((cr, cc, bad)) = c.change
            && cr == r
        {
            cells[cc] = bad.to_string();
        }
        if c.drop_cell == Some(r) {
            cells.pop();
        }
        s.push_str(&cells.join(sep));
        s.push('\n');
    }
    s
}

#[test]
fn fuzz_samples_structured() {
    let dir = tempfile::tempdir().unwrap();
    let t = Target::new("samples-structured");
    run(&mut runner(1500), samples_case(), &t, |c| {
        let text = write_case(c);
        let bytes = spell(text.clone(), &c.spelling);
        check_samples_bytes(&bytes, c.sp, c.d, 0, dir.path(), false)?;
        // Unchanged, the file reads back as written.
        if c.change.is_none() && c.drop_cell.is_none() && matches!(c.spelling, Spelling::Whole) {
            let space = space(c.sp, c.d);
            let s = parse_samples_str(&text, SAMPLES, &space, "ising", Delimiter::Auto)
                .map_err(|e| format!("valid samples rejected: {e}"))?;
            let want: Vec<u32> = c.rows.iter().flatten().map(|&i| i as u32).collect();
            if s.indices != want {
                return Err(format!("read {:?}, wrote {want:?}", s.indices));
            }
        }
        Ok(())
    });
}

#[test]
fn samples_corpus_replays() {
    let dir = tempfile::tempdir().unwrap();
    let t = Target::new("samples-corpus");
    for (name, bytes) in fuzz::corpus(&corpus_dir(), "samples") {
        for sp in 0..4 {
            for delim in 0..4 {
                t.run(&format!("{name}: {}", show_bytes(&bytes)), || {
                    check_samples_bytes(&bytes, sp, 2, delim, dir.path(), true)
                        .unwrap_or_else(|e| panic!("corpus {name}: {e}"))
                });
            }
        }
    }
}

/// The defects the fuzzer found, each pinned to its message (the corpus replays them too).
#[test]
fn found_defects_stay_fixed() {
    let base = r#""schema": "dlp.model.v1", "kind""#;
    let json = |t: &str| parse_model_str(t, Format::Json, "m.json").unwrap_err().to_string();
    let toml = |t: &str| parse_model_str(t, Format::Toml, "m.toml").unwrap_err().to_string();
    // serde_json's column 0 at the end of the text: columns are 1-based.
    assert_eq!(json(""), "m.json:1:1: EOF while parsing a value");
    assert_eq!(json("{\n"), "m.json:2:1: EOF while parsing an object");
    // A key with a line break was printed raw: a two-line message.
    assert_eq!(json(&format!(r#"{{{base}: "ising", "d": 2, "a\nb": 1}}"#)), r#"m.json: unknown key "a\nb""#);
    assert_eq!(
        toml(
            "schema = \"dlp.model.v1\"\nkind = \"ising\"\nd = 2\n[lattice]\nshape = [2]\ncoupling = 1\n\"a\\rb\" = 1\n"
        ),
        r#"m.toml: unknown key "a\rb" in lattice"#
    );
    // DEL and C1 controls, which JSON leaves unescaped, were printed raw.
    assert_eq!(
        json(&format!(r#"{{{base}: {{"\u007f": null}}, "d": 2}}"#)),
        r#"m.json: unknown kind {"\u007f":null} (expected ising, potts, rbm, categorical, table, logistic, bnn, fhmm or cat-rbm)"#
    );
    assert_eq!(json(&format!(r#"{{{base}: "ising", "d": 2, "\u0085": 1}}"#)), r#"m.json: unknown key "\u0085""#);
    // A huge d or K was allocated (the process aborted), a large K checked in quadratic time.
    assert_eq!(
        json(&format!(r#"{{{base}: "ising", "d": 1000000000000}}"#)),
        "m.json: d = 1000000000000 is more than the 16777216 coordinates a model may have"
    );
    assert_eq!(
        json(&format!(r#"{{{base}: "potts", "d": 1, "K": 4294967295}}"#)),
        "m.json: K = 4294967295 is more than the 16777216 values a coordinate may have"
    );
    assert_eq!(
        json(&format!(r#"{{{base}: "potts", "d": 65536, "K": 65536}}"#)),
        "m.json: d × K = 65536 × 65536 is more than 16777216 (the size of a model's fields)"
    );
    let t = std::time::Instant::now();
    let values: Vec<i64> = (0..100_000).chain([5]).collect();
    let text = format!(r#"{{{base}: "potts", "d": 1, "K": 100001, "values": {values:?}}}"#);
    assert_eq!(json(&text), "m.json: values[100000] = 5 repeats values[5]");
    assert!(t.elapsed().as_secs_f64() < 5.0, "K = 10^5 values took {:?}", t.elapsed());
    // hidden near u64::MAX overflowed (p + 2)·hidden + 1 (a panic in debug builds).
    let bnn = format!(r#"{{{base}: "bnn", "d": 5, "hidden": 18446744073709551615, "x": [[1]], "y": [1]}}"#);
    assert_eq!(
        json(&bnn),
        "m.json: d = 5 but a bnn with p = 1 features and hidden = 18446744073709551615 has d = (p+2)·hidden + 1 = more than any d"
    );
    // A samples token with a carriage return or a vertical tab was printed raw.
    let space = Space::spin(2);
    let samples = |t: &str| parse_samples_str(t, "s.csv", &space, "ising", Delimiter::Auto).unwrap_err().to_string();
    assert_eq!(samples("1,1\r2\n"), r#"s.csv:1:2: not an integer: "1\r2""#);
    assert_eq!(samples("1,\u{b}1\n"), r#"s.csv:1:2: not an integer: "\u{b}1""#);
    assert_eq!(samples("1,\"1\"\n"), r#"s.csv:1:2: not an integer: "\"1\"""#);
}
