//! End-to-end fuzz cases through the `dlp` binary: broken model, samples, option, checkpoint
//! and input files for `dlp gof` and `dlp infill` must end with exit code 2, exactly one
//! `error:` line on stderr (no control characters) and no output file; plus a short
//! run of random samples files through `dlp gof`. The parsers themselves are fuzzed in
//! process (dlp-models, dlp-tensor `tests/fuzz.rs`, `src/gof_fuzz.rs`).

use dlp_core::testing::fuzz::{self, Target, one_line_naming};
use dlp_tensor::bert::{BertConfig, HiddenAct, WeightLayout, random_weights};
use dlp_tensor::candle_core::{DType, Tensor};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn dlp(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_dlp")).args(args).output().expect("run dlp")
}

/// Exit 2, one `error:` line naming one of `places`, and no file at `out`.
fn rejected(o: &std::process::Output, out: &Path, places: &[&str]) -> Result<(), String> {
    let err = String::from_utf8_lossy(&o.stderr);
    if o.status.code() != Some(2) {
        return Err(format!("exit {:?} (want 2): {err}", o.status.code()));
    }
    let lines: Vec<&str> = err.lines().collect();
    let [line] = lines.as_slice() else {
        return Err(format!("{} stderr lines (want 1): {err:?}", lines.len()));
    };
    let Some(message) = line.strip_prefix("error: ") else {
        return Err(format!("not an `error:` line: {line:?}"));
    };
    one_line_naming(message, places)?;
    if out.exists() {
        return Err(format!("{} was written", out.display()));
    }
    if !o.stdout.is_empty() {
        return Err(format!("stdout: {:?}", String::from_utf8_lossy(&o.stdout)));
    }
    Ok(())
}

const ISING3: &str = r#"{"schema": "dlp.model.v1", "kind": "ising", "d": 3,
  "J": [[0, 0.5, -0.3], [0.5, 0, 0.2], [-0.3, 0.2, 0]], "b": [0.1, -0.2, 0.3]}"#;

fn good_samples() -> String {
    (0..12).map(|i| if i % 2 == 0 { "1,-1,1\n" } else { "-1,-1,1\n" }).collect()
}

#[test]
fn gof_bad_files_and_options_exit_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    let s = |x: &PathBuf| x.display().to_string();
    let out = p("out.json");
    let cases: Vec<(&str, String, Vec<u8>, Vec<&str>)> = vec![
        ("key with a line break", ISING3.replace("\"d\": 3", "\"d\": 3, \"a\\nb\": 1"), good_samples().into(), vec![]),
        ("huge d", ISING3.replace("\"d\": 3", "\"d\": 1000000000000"), good_samples().into(), vec![]),
        ("cut model", ISING3[..40].to_string(), good_samples().into(), vec![]),
        ("carriage return in a token", ISING3.into(), format!("{}1,1\r2,1\n", good_samples()).into(), vec![]),
        ("vertical tab in a token", ISING3.into(), format!("{}1,\u{b}1,1\n", good_samples()).into(), vec![]),
        ("non-UTF-8 samples", ISING3.into(), [good_samples().as_bytes(), &b"1,\xff,1\n"[..]].concat(), vec![]),
        ("NaN sample", ISING3.into(), format!("{}1,nan,1\n", good_samples()).into(), vec![]),
        ("huge sample", ISING3.into(), format!("{}1,1e400,1\n", good_samples()).into(), vec![]),
        ("escape in an option", ISING3.into(), good_samples().into(), vec!["--bandwidth", "\u{1b}[31m"]),
        ("line break in an option", ISING3.into(), good_samples().into(), vec!["--statistic", "u\nv"]),
    ];
    for (what, model, samples, extra) in cases {
        std::fs::write(p("m.json"), &model).unwrap();
        std::fs::write(p("s.csv"), &samples).unwrap();
        let (m, sm, o) = (s(&p("m.json")), s(&p("s.csv")), s(&out));
        let mut args = vec!["gof", "--test", "kdsd", "--model", &m, "--samples", &sm, "--output", &o, "--reps", "10"];
        args.extend(extra);
        let r = dlp(&args);
        rejected(&r, &out, &["m.json", "s.csv", "--"]).unwrap_or_else(|e| panic!("{what}: {e}"));
    }
}

/// Random samples files (text made of sample-like pieces) through `dlp gof`: success writes
/// the output, failure is exit 2 with one line and no output.
#[test]
fn fuzz_gof_samples_through_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("m.json");
    std::fs::write(&model, ISING3).unwrap();
    let (samples, out) = (dir.path().join("s.csv"), dir.path().join("out.json"));
    let atoms =
        ["1", "-1", "0", ",", "\n", " ", "\t", "#", "x0", "nan", "1.0", "2", "\r\n", "\r", "1e400", "\u{b}", "é"];
    let cases = if std::env::var_os("DLP_FUZZ_CASES").is_some() { (fuzz::cases(24) / 20_000).max(24) } else { 24 };
    // splitmix64 from DLP_FUZZ_SEED (fixed when unset).
    let mut state: u64 = std::env::var("DLP_FUZZ_SEED").ok().and_then(|s| s.trim().parse().ok()).unwrap_or(7);
    let mut next = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) as usize
    };
    let t = Target::new("gof-binary");
    let (m, sm, o) = (model.display().to_string(), samples.display().to_string(), out.display().to_string());
    for i in 0..cases {
        // Valid files half the time: a good file with pieces appended.
        let pieces: String = (0..next() % 80).map(|_| atoms[next() % atoms.len()]).collect();
        let text = if next() % 2 == 0 { good_samples() + &pieces } else { pieces };
        let r = t.run(&text, || {
            let _ = std::fs::remove_file(&out);
            std::fs::write(&samples, &text).unwrap();
            let r = dlp(&["gof", "--test", "kdsd", "--model", &m, "--samples", &sm, "--output", &o, "--reps", "10"]);
            if r.status.success() {
                return if out.exists() { Ok(()) } else { Err("exit 0 without output".into()) };
            }
            rejected(&r, &out, &["s.csv"])
        });
        if let Err(e) = r {
            panic!("fuzz gof-binary: input {i}: {e}\ninput: {text:?}");
        }
    }
}

/// A tiny word-level checkpoint (config.json, vocab.txt, model.safetensors) in `dir`.
fn checkpoint(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "whale", "sea", "."];
    let cfg = BertConfig {
        vocab_size: vocab.len(),
        hidden_size: 8,
        num_hidden_layers: 1,
        num_attention_heads: 2,
        intermediate_size: 8,
        hidden_act: HiddenAct::Gelu,
        max_position_embeddings: 12,
        type_vocab_size: 2,
        layer_norm_eps: 1e-12,
        tie_word_embeddings: true,
    };
    std::fs::write(dir.join("config.json"), serde_json::to_string(&cfg).unwrap()).unwrap();
    std::fs::write(dir.join("vocab.txt"), vocab.join("\n") + "\n").unwrap();
    let w = random_weights(&cfg, 0.4, 5, WeightLayout { gamma_beta: false, tied: true });
    let w: HashMap<String, Tensor> = w.into_iter().map(|(k, t)| (k, t.to_dtype(DType::F32).unwrap())).collect();
    dlp_tensor::candle_core::safetensors::save(&w, dir.join("model.safetensors")).unwrap();
}

#[test]
fn infill_bad_checkpoints_and_inputs_exit_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let ck = dir.path().join("ck");
    let (input, out) = (dir.path().join("in.txt"), dir.path().join("out.jsonl"));
    type Edit = fn(&Path, &Path);
    // An array of the declared type, so that each closure coerces to the `fn` pointer.
    let cases: [(&str, Edit); 12] = [
        ("repeated vocabulary token", |ck, _| {
            std::fs::write(ck.join("vocab.txt"), "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\nthe\nsea\n.\n").unwrap()
        }),
        ("vocabulary without [MASK]", |ck, _| {
            std::fs::write(ck.join("vocab.txt"), "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MOSK]\nthe\nwhale\nsea\n.\n").unwrap()
        }),
        ("config cut", |ck, _| std::fs::write(ck.join("config.json"), "{\"vocab_size\": 9,\n").unwrap()),
        ("config hidden_act with a line break", |ck, _| {
            let c = std::fs::read_to_string(ck.join("config.json")).unwrap().replace("\"gelu\"", "\"ge\\nlu\"");
            std::fs::write(ck.join("config.json"), c).unwrap()
        }),
        ("config huge vocab_size", |ck, _| {
            let c = std::fs::read_to_string(ck.join("config.json")).unwrap();
            std::fs::write(ck.join("config.json"), c.replace("\"vocab_size\":9", "\"vocab_size\":1099511627776"))
                .unwrap()
        }),
        ("weights cut", |ck, _| {
            let w = std::fs::read(ck.join("model.safetensors")).unwrap();
            std::fs::write(ck.join("model.safetensors"), &w[..w.len() / 2]).unwrap()
        }),
        ("weights of random bytes as pytorch_model.bin", |ck, _| {
            std::fs::remove_file(ck.join("model.safetensors")).unwrap();
            std::fs::write(ck.join("pytorch_model.bin"), b"PK\x03\x04garbage\x00\xff").unwrap()
        }),
        ("input without a mask", |_, i| std::fs::write(i, "the whale .\n").unwrap()),
        ("input with an unknown word", |_, i| std::fs::write(i, "the [MASK] ship\n").unwrap()),
        ("input with a control character", |_, i| std::fs::write(i, "the [MASK] \u{1b}[31m\n").unwrap()),
        ("input not UTF-8", |_, i| std::fs::write(i, b"the [MASK] \xff\n").unwrap()),
        ("input too long", |_, i| std::fs::write(i, "the [MASK] sea the sea the sea the sea the sea .\n").unwrap()),
    ];
    for (what, edit) in cases {
        let _ = std::fs::remove_dir_all(&ck);
        checkpoint(&ck);
        std::fs::write(&input, "the [MASK] sea .\n").unwrap();
        edit(&ck, &input);
        let (c, i, o) = (ck.display().to_string(), input.display().to_string(), out.display().to_string());
        let args = ["infill", "--quiet", "--model", &c, "--input", &i, "--out", &o, "--sampler", "gibbs"];
        let r = dlp(&[&args[..], &["--chains", "2", "--steps", "1"][..]].concat());
        rejected(&r, &out, &["--model", "--input"]).unwrap_or_else(|e| panic!("{what}: {e}"));
    }
    // The untouched checkpoint works (so each case above failed for its edit).
    let _ = std::fs::remove_dir_all(&ck);
    checkpoint(&ck);
    std::fs::write(&input, "the [MASK] sea .\n").unwrap();
    let (c, i, o) = (ck.display().to_string(), input.display().to_string(), out.display().to_string());
    let r =
        dlp(&["infill", "--quiet", "--model", &c, "--input", &i, "--out", &o, "--sampler", "gibbs", "--chains", "2"]);
    assert!(r.status.success() && out.exists(), "{}", String::from_utf8_lossy(&r.stderr));
}
