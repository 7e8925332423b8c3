//! Fuzzing what `dlp infill` reads from users: the checkpoint's `config.json` and `vocab.txt`,
//! its weights file (`model.safetensors`, `pytorch_model.bin`), and the input lines (against a
//! protein, a word-level and a WordPiece vocabulary). Arbitrary bytes and structure-aware
//! inputs (a valid file with one field, token or byte changed; huge, negative and non-finite
//! numbers; cuts; non-UTF-8); properties: no panic, each input within a time bound
//! (`dlp_core::testing::fuzz`), every rejection one line naming the file (or, for an input
//! line, a message the CLI prefixes with the file and line).
//!
//! `just test` runs a few hundred inputs per target and replays `tests/fuzz_corpus/`;
//! `just fuzz` runs many more in release (`DLP_FUZZ_CASES`, `DLP_FUZZ_SEED`).

use candle_nn::VarBuilder;
use dlp_core::testing::fuzz::{self, Target, one_line_naming, show_bytes};
use dlp_tensor::bert::{BertConfig, BertMlm, HiddenAct, InfillTarget, Vocab, WeightLayout, random_weights};
use dlp_tensor::candle_core::{DType, Device, Tensor};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The inputs' generator: splitmix64 from `DLP_FUZZ_SEED` (fixed when unset, so that the
/// short run is the same every time). A plain generator rather than proptest, whose features
/// would change this crate's dependency build.
struct Gen(u64);

impl Gen {
    fn new() -> Gen {
        Gen(std::env::var("DLP_FUZZ_SEED").ok().and_then(|s| s.trim().parse().ok()).unwrap_or(20261202))
    }
    fn next(&mut self) -> u64 {
        dlp_core::testing::splitmix64(&mut self.0)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<T: Clone>(&mut self, from: &[T]) -> T {
        from[self.below(from.len())].clone()
    }
    fn bytes(&mut self, max: usize) -> Vec<u8> {
        let n = self.below(max + 1);
        (0..n).map(|_| self.next() as u8).collect()
    }
    /// Up to `max` atoms glued together.
    fn soup(&mut self, atoms: &[&str], max: usize) -> String {
        let n = self.below(max + 1);
        (0..n).map(|_| self.pick(atoms)).collect()
    }
    /// Arbitrary bytes half the time, a soup of atoms the other half.
    fn bytes_or_soup(&mut self, atoms: &[&str]) -> Vec<u8> {
        if self.below(2) == 0 { self.bytes(200) } else { self.soup(atoms, 40).into_bytes() }
    }
}

/// Runs `check` on `default` generated inputs (`DLP_FUZZ_CASES / scale` in the long run: the
/// checkpoint target writes files, so it runs fewer), each under the watchdog; a failure or
/// panic names the input.
fn drive<T: std::fmt::Debug + Clone + Send + 'static>(
    name: &str,
    default: u32,
    scale: u32,
    generate: impl Fn(&mut Gen) -> T,
    check: impl Fn(&T) -> Result<(), String>,
) {
    let n = if std::env::var_os("DLP_FUZZ_CASES").is_some() { (fuzz::cases(default) / scale).max(1) } else { default };
    let (mut g, t) = (Gen::new(), Target::new(name));
    for i in 0..n {
        let input = generate(&mut g);
        let r = t.run(&input, || std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&input))));
        match r {
            Ok(Ok(())) => {}
            Ok(Err(e)) => panic!("fuzz {name}: input {i}: {e}\ninput: {input:?}"),
            Err(_) => panic!("fuzz {name}: input {i} panicked (message above)\ninput: {input:?}"),
        }
    }
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_corpus")
}

// ---------------------------------------------------------------- config.json

fn tiny_config(v: usize) -> BertConfig {
    BertConfig {
        vocab_size: v,
        hidden_size: 8,
        num_hidden_layers: 1,
        num_attention_heads: 2,
        intermediate_size: 8,
        hidden_act: HiddenAct::Gelu,
        max_position_embeddings: 12,
        type_vocab_size: 2,
        layer_norm_eps: 1e-12,
        tie_word_embeddings: true,
    }
}

fn config_value(cfg: &BertConfig) -> Value {
    let mut v = serde_json::to_value(cfg).expect("config");
    v["model_type"] = json!("bert");
    v["hidden_dropout_prob"] = json!(0.1);
    v
}

/// `config.json` text: parsed, or one line naming config.json. Bytes that are not UTF-8 (which
/// the loader's `read_to_string` rejects before parsing) are parsed decoded lossily, so that
/// the random half of the inputs reaches the parser too.
fn check_config(bytes: &[u8]) -> Result<(), String> {
    let text = String::from_utf8_lossy(bytes);
    match BertConfig::from_json(&text) {
        Ok(cfg) => cfg.check().map_err(|e| format!("from_json accepted what check rejects: {e}")),
        Err(e) => one_line_naming(&e.to_string(), &["config.json"]),
    }
}

const CONFIG_KEYS: [&str; 10] = [
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "hidden_act",
    "max_position_embeddings",
    "type_vocab_size",
    "layer_norm_eps",
    "tie_word_embeddings",
];

fn odd_values() -> Vec<Value> {
    let big: Value = serde_json::from_str("18446744073709551616").expect("number");
    vec![
        json!(0),
        json!(-1),
        json!(u64::MAX),
        json!(1u64 << 40),
        json!(2.5),
        json!(1e308),
        json!(null),
        json!("gelu"),
        json!("tanh"),
        json!("a\nb"),
        json!([]),
        json!({}),
        json!(true),
        big,
    ]
}

#[test]
fn fuzz_config_bytes() {
    let atoms = vec![
        "{",
        "}",
        "\"vocab_size\"",
        "\"hidden_size\"",
        "\"hidden_act\"",
        "\"gelu\"",
        ":",
        ",",
        "12",
        "-1",
        "0",
        "1e400",
        "\"",
        "null",
        "[",
        "]",
        " ",
        "\n",
        "\"num_attention_heads\"",
        "\"max_position_embeddings\"",
        "\"type_vocab_size\"",
        "\"intermediate_size\"",
        "\"num_hidden_layers\"",
        "18446744073709551616",
    ];
    drive("config-bytes", 600, 1, |g| g.bytes_or_soup(&atoms), |b| check_config(b));
}

#[test]
fn fuzz_config_structured() {
    let odd = odd_values();
    let generate = |g: &mut Gen| {
        let value = if g.below(4) == 0 { None } else { Some(g.pick(&odd)) };
        (g.below(CONFIG_KEYS.len()), value, g.below(3) == 0, g.below(1000))
    };
    drive("config-structured", 600, 1, generate, |(key, value, cut, at)| {
        let mut v = config_value(&tiny_config(20));
        match value {
            Some(x) => v[CONFIG_KEYS[*key]] = x.clone(),
            None => {
                v.as_object_mut().expect("object").remove(CONFIG_KEYS[*key]);
            }
        }
        let mut text = serde_json::to_string_pretty(&v).expect("json").into_bytes();
        if *cut {
            text.truncate(text.len() * at / 1000);
        }
        check_config(&text)
    });
}

// ---------------------------------------------------------------- vocab.txt

const SPECIALS: [&str; 5] = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"];

/// `vocab.txt` text: built, or one line (the loader adds the file name). Bytes that are not
/// UTF-8 are read decoded lossily (see [`check_config`]).
fn check_vocab(bytes: &[u8]) -> Result<(), String> {
    let text = String::from_utf8_lossy(bytes);
    match Vocab::from_text(&text) {
        Ok(v) => {
            // Every id's token maps back to that id (the index and the list agree).
            for (i, tok) in v.tokens().iter().enumerate() {
                if v.id(tok) != Some(i as u32) {
                    return Err(format!("token {tok:?} (line {}) maps to {:?}", i + 1, v.id(tok)));
                }
            }
            Ok(())
        }
        Err(e) => one_line_naming(&e.to_string(), &[]),
    }
}

fn vocab_atoms() -> Vec<&'static str> {
    vec![
        "[MASK]",
        "[CLS]",
        "[SEP]",
        "[PAD]",
        "[UNK]",
        "\n",
        "\r\n",
        "the",
        "##s",
        "##",
        "a",
        "A",
        "é",
        "\u{0}",
        " ",
        "\t",
        "[",
        "]",
        "[]",
        "_",
        "日",
        "\u{301}",
        "\u{feff}",
        "##é",
        "[unused0]",
        "x",
        "\r",
    ]
}

#[test]
fn fuzz_vocab() {
    let atoms = vocab_atoms();
    drive("vocab", 600, 1, |g| g.bytes_or_soup(&atoms), |b| check_vocab(b));
}

// ---------------------------------------------------------------- input lines

/// The three vocabularies `dlp infill` tells apart, each with a tiny random model.
fn vocabs() -> Vec<(Vocab, Arc<BertMlm>)> {
    let words = ["the", "a", "whale", "sea", ".", ","];
    let pieces = ["the", "whale", "sea", "##s", "##es", "un", "##known", ".", "ca", "##fé"];
    let amino: Vec<String> = "ACDEFGHIKLMNPQRSTVWY".chars().map(String::from).collect();
    let lists: Vec<Vec<String>> =
        vec![words.iter().map(|s| s.to_string()).collect(), pieces.iter().map(|s| s.to_string()).collect(), amino];
    lists
        .into_iter()
        .map(|extra| {
            let tokens: Vec<String> = SPECIALS.iter().map(|s| s.to_string()).chain(extra).collect();
            let vocab = Vocab::from_tokens(tokens).expect("vocabulary");
            let cfg = tiny_config(vocab.len());
            let w = random_weights(&cfg, 0.4, 5, WeightLayout { gamma_beta: false, tied: true });
            let w: HashMap<String, Tensor> =
                w.into_iter().map(|(k, t)| (k, t.to_dtype(DType::F32).expect("f32"))).collect();
            let vb = VarBuilder::from_tensors(w, DType::F32, &Device::Cpu);
            let model = BertMlm::new(&cfg, vb).expect("model");
            (vocab, Arc::new(model))
        })
        .collect()
}

/// One input line against every vocabulary: a target, or a one-line reason (the CLI puts
/// `--input FILE line N:` in front).
fn check_line(line: &str, vocabs: &[(Vocab, Arc<BertMlm>)]) -> Result<(), String> {
    for (vocab, model) in vocabs {
        match InfillTarget::for_line(model.clone(), vocab, line) {
            Ok(t) => {
                let len = t.base().len();
                if t.masked().is_empty() || t.masked().iter().any(|&i| i >= len) {
                    return Err(format!("masked positions {:?} outside {len} tokens", t.masked()));
                }
                if t.masked().iter().any(|&i| t.base()[i] != vocab.mask()) {
                    return Err("a masked position does not hold [MASK]".into());
                }
            }
            Err(e) => one_line_naming(&e.to_string(), &[])?,
        }
    }
    Ok(())
}

fn line_atoms() -> Vec<&'static str> {
    vec![
        "[MASK]",
        "[mask]",
        "[MASK",
        "MASK]",
        "_",
        " ",
        "the",
        "whale",
        "seas",
        "unknown",
        "café",
        "cafe\u{301}",
        "A",
        "C",
        "W",
        "Z",
        "ACD",
        ".",
        ",",
        "!",
        "日本",
        "🐋",
        "\u{0}",
        "\t",
        "\r",
        "\u{b}",
        "[CLS]",
        "[SEP]",
        "[PAD]",
        "##s",
        "\u{200b}",
        "İ",
        "ß",
    ]
}

#[test]
fn fuzz_input_lines() {
    let v = vocabs();
    let atoms = line_atoms();
    let generate = |g: &mut Gen| {
        if g.below(2) == 0 {
            g.soup(&atoms, 30)
        } else {
            // Any characters: random code points (surrogates skipped).
            let n = g.below(20);
            (0..n).filter_map(|_| char::from_u32((g.next() % 0x11_0000) as u32)).collect()
        }
    };
    drive("infill-input", 400, 1, generate, |l: &String| check_line(l, &v));
}

// ---------------------------------------------------------------- weights files

/// A valid checkpoint directory's files (config.json, vocab.txt, model.safetensors).
fn checkpoint_files() -> (String, String, Vec<u8>) {
    let tokens: Vec<String> = SPECIALS.iter().chain(&["the", "whale", "sea"]).map(|s| s.to_string()).collect();
    let cfg = tiny_config(tokens.len());
    let w = random_weights(&cfg, 0.4, 5, WeightLayout { gamma_beta: false, tied: true });
    let w: HashMap<String, Tensor> = w.into_iter().map(|(k, t)| (k, t.to_dtype(DType::F32).expect("f32"))).collect();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("model.safetensors");
    dlp_tensor::candle_core::safetensors::save(&w, &path).expect("save");
    let config = serde_json::to_string(&config_value(&cfg)).expect("json");
    (config, tokens.join("\n") + "\n", std::fs::read(&path).expect("read"))
}

/// Loads the checkpoint in `dir`: a model, or one line naming a file of the directory.
fn check_load(dir: &Path) -> Result<(), String> {
    match BertMlm::load(dir, &Device::Cpu) {
        Ok(_) => Ok(()),
        Err(e) => {
            let m = e.to_string();
            let d = dir.display().to_string();
            one_line_naming(&m, &["config.json", "vocab.txt", "model.safetensors", "pytorch_model.bin"])
                .or_else(|_| one_line_naming(&m, &[d.as_str()]))
        }
    }
}

/// What to change in a valid checkpoint.
#[derive(Clone, Debug)]
enum Damage {
    /// Overwrite byte `at` (per mille of the weights file) with `.1`.
    Byte(u16, u8),
    /// Cut the weights file at `at` per mille.
    Cut(u16),
    /// Change the shape of a tensor in the safetensors header (its `.0`-th shape list).
    Shape(usize, u64),
    /// Replace config.json's key by a value.
    Config(usize, u64),
    /// Drop vocab.txt's line `.0` (the vocabulary no longer has vocab_size tokens, or no [MASK]).
    VocabLine(usize),
    /// The weights as `pytorch_model.bin` of arbitrary bytes (no safetensors file).
    Pth(Vec<u8>),
}

fn damage(g: &mut Gen) -> Damage {
    match g.below(6) {
        0 => Damage::Byte(g.below(1000) as u16, g.next() as u8),
        1 => Damage::Cut(g.below(1000) as u16),
        2 => Damage::Shape(g.below(40), g.pick(&[0u64, 1, 3, 9, 1 << 20, 1 << 40, u64::MAX])),
        3 => Damage::Config(g.below(CONFIG_KEYS.len()), g.pick(&[0u64, 1, 3, 7, 16, 1 << 20, 1 << 40, u64::MAX])),
        4 => Damage::VocabLine(g.below(8)),
        _ => Damage::Pth(g.bytes(200)),
    }
}

/// The safetensors bytes with the `n`-th `"shape":[…]` list of the header set to `[v, 1]`
/// (the header length is rewritten, so the file stays well-framed).
fn reshape(bytes: &[u8], n: usize, v: u64) -> Vec<u8> {
    let len = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")) as usize;
    let header = std::str::from_utf8(&bytes[8..8 + len]).expect("utf-8 header");
    let count = header.matches("\"shape\":[").count();
    let mut out = String::new();
    let mut rest = header;
    let mut i = 0;
    while let Some(p) = rest.find("\"shape\":[") {
        let (head, tail) = rest.split_at(p + "\"shape\":[".len());
        out.push_str(head);
        let close = tail.find(']').expect("shape list closes");
        if i == n % count.max(1) {
            out.push_str(&format!("{v},1"));
        } else {
            out.push_str(&tail[..close]);
        }
        rest = &tail[close..];
        i += 1;
    }
    out.push_str(rest);
    let mut b = (out.len() as u64).to_le_bytes().to_vec();
    b.extend_from_slice(out.as_bytes());
    b.extend_from_slice(&bytes[8 + len..]);
    b
}

#[test]
fn fuzz_checkpoint() {
    let (config, vocab, weights) = checkpoint_files();
    let dir = tempfile::tempdir().unwrap();
    drive("checkpoint", 150, 20, damage, |d| {
        let p = dir.path();
        // Every file is removed and written anew rather than truncated: ext4 writes back a
        // truncated-and-rewritten file when it is closed, which made each input wait on the disk.
        for f in ["config.json", "vocab.txt", "model.safetensors", "pytorch_model.bin"] {
            let _ = std::fs::remove_file(p.join(f));
        }
        let (mut config, mut vocab, mut weights) = (config.clone(), vocab.clone(), weights.clone());
        let at = |pm: u16, len: usize| len * pm as usize / 1000;
        match d {
            Damage::Byte(pm, b) => {
                let i = at(*pm, weights.len()).min(weights.len() - 1);
                weights[i] = *b;
            }
            Damage::Cut(pm) => weights.truncate(at(*pm, weights.len())),
            Damage::Shape(n, v) => weights = reshape(&weights, *n, *v),
            Damage::Config(k, v) => {
                let mut c: Value = serde_json::from_str(&config).expect("json");
                c[CONFIG_KEYS[*k]] = json!(v);
                config = c.to_string();
            }
            Damage::VocabLine(l) => {
                let mut lines: Vec<&str> = vocab.lines().collect();
                lines.remove(l % lines.len());
                vocab = lines.join("\n");
            }
            Damage::Pth(_) => {}
        }
        std::fs::write(p.join("config.json"), &config).map_err(|e| e.to_string())?;
        std::fs::write(p.join("vocab.txt"), &vocab).map_err(|e| e.to_string())?;
        let written = match d {
            Damage::Pth(b) => std::fs::write(p.join("pytorch_model.bin"), b),
            _ => std::fs::write(p.join("model.safetensors"), &weights),
        };
        written.map_err(|e| e.to_string())?;
        check_load(p)
    });
}

/// A checkpoint of `checkpoint_files()`' config.json and vocab.txt with `weights` as its
/// model.safetensors, loaded: a model or one line naming a file.
fn check_weights(weights: &[u8]) -> Result<(), String> {
    let (config, vocab, _) = checkpoint_files();
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let p = dir.path();
    std::fs::write(p.join("config.json"), config).map_err(|e| e.to_string())?;
    std::fs::write(p.join("vocab.txt"), vocab).map_err(|e| e.to_string())?;
    std::fs::write(p.join("model.safetensors"), weights).map_err(|e| e.to_string())?;
    check_load(p)
}

#[test]
fn infill_corpus_replays() {
    let v = vocabs();
    let t = Target::new("infill-corpus");
    for (name, bytes) in fuzz::corpus(&corpus_dir(), "infill") {
        t.run(&format!("{name}: {}", show_bytes(&bytes)), || {
            let r = if name.starts_with("config") {
                check_config(&bytes)
            } else if name.starts_with("vocab") {
                check_vocab(&bytes)
            } else if name.starts_with("checkpoint") {
                check_weights(&bytes)
            } else {
                let text = String::from_utf8_lossy(&bytes);
                text.lines().try_for_each(|l| check_line(l, &v))
            };
            r.unwrap_or_else(|e| panic!("corpus {name}: {e}"))
        });
    }
}

/// The defects the fuzzer found, pinned (the corpus replays them too).
#[test]
fn found_defects_stay_fixed() {
    // serde's unknown-variant message quoted a line break of config.json raw.
    let mut v = config_value(&tiny_config(8));
    v["hidden_act"] = json!("a\nb");
    let e = BertConfig::from_json(&v.to_string()).unwrap_err().to_string();
    assert!(e.starts_with("bad checkpoint: config.json: unknown variant `a\\nb`, expected one of"), "{e}");
    // num_hidden_layers = 2^64 - 1 was a capacity overflow (a panic) before the first tensor.
    let (config, vocab, weights) = checkpoint_files();
    let dir = tempfile::tempdir().unwrap();
    let mut c: Value = serde_json::from_str(&config).unwrap();
    c["num_hidden_layers"] = json!(u64::MAX);
    std::fs::write(dir.path().join("config.json"), c.to_string()).unwrap();
    std::fs::write(dir.path().join("vocab.txt"), vocab).unwrap();
    std::fs::write(dir.path().join("model.safetensors"), weights).unwrap();
    let e = BertMlm::load(dir.path(), &Device::Cpu).expect_err("rejected").to_string();
    assert!(e.contains("model.safetensors") && e.contains("layer.1"), "{e}");
    one_line_naming(&e, &["model.safetensors"]).unwrap();
    // A DEL byte in a safetensors dtype (the long run's input 257273, `Byte(423, 127)`) was
    // quoted raw by serde's unknown-variant message.
    let header = b"{\"w\":{\"dtype\":\"F3\x7f\",\"shape\":[1],\"data_offsets\":[0,4]}}";
    let mut weights = (header.len() as u64).to_le_bytes().to_vec();
    weights.extend_from_slice(header);
    weights.extend_from_slice(&[0; 4]);
    std::fs::write(dir.path().join("config.json"), &config).unwrap();
    std::fs::write(dir.path().join("model.safetensors"), weights).unwrap();
    let e = BertMlm::load(dir.path(), &Device::Cpu).expect_err("rejected").to_string();
    assert!(e.contains(r"unknown variant `F3\u{7f}`"), "{e}");
    one_line_naming(&e, &["model.safetensors"]).unwrap();
}
