//! `dlp infill` end to end on tiny random BERT checkpoints written by the test (config.json,
//! vocab.txt, model.safetensors): every sampler runs and keeps the unmasked tokens, a seed
//! fixes the output, `--score` equals f computed from candle-transformers' `BertForMaskedLM`
//! logits (an independent forward), and bad input gets one `error:` line, exit 2, no output.

use candle_nn::VarBuilder;
use dlp_tensor::bert::{BertConfig, HiddenAct, WeightLayout, random_weights};
use dlp_tensor::candle_core::{D, DType, Device, IndexOp, Tensor};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const WORDS: &[&str] = &["the", "a", "whale", "sea", "ship", "old", "man", "is", ".", ","];
const AMINO: &str = "ACDEFGHIKLMNPQRSTVWY";

fn config(v: usize) -> BertConfig {
    BertConfig {
        vocab_size: v,
        hidden_size: 16,
        num_hidden_layers: 2,
        num_attention_heads: 2,
        intermediate_size: 32,
        hidden_act: HiddenAct::Gelu,
        max_position_embeddings: 12,
        type_vocab_size: 2,
        layer_norm_eps: 1e-12,
        tie_word_embeddings: true,
    }
}

fn config_json(cfg: &BertConfig) -> String {
    format!(
        r#"{{"model_type": "bert", "vocab_size": {}, "hidden_size": {}, "num_hidden_layers": {},
  "num_attention_heads": {}, "intermediate_size": {}, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
  "max_position_embeddings": {}, "type_vocab_size": 2, "initializer_range": 0.02, "layer_norm_eps": 1e-12,
  "pad_token_id": 0, "classifier_dropout": null}}"#,
        cfg.vocab_size,
        cfg.hidden_size,
        cfg.num_hidden_layers,
        cfg.num_attention_heads,
        cfg.intermediate_size,
        cfg.max_position_embeddings
    )
}

/// A checkpoint directory with the given tokens after the 5 specials; `tied` drops the
/// decoder weight (HF layout).
fn checkpoint(dir: &Path, tokens: &[String], tied: bool) -> HashMap<String, Tensor> {
    std::fs::create_dir_all(dir).unwrap();
    let mut vocab: Vec<String> = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"].iter().map(|s| s.to_string()).collect();
    vocab.extend(tokens.iter().cloned());
    let cfg = config(vocab.len());
    std::fs::write(dir.join("config.json"), config_json(&cfg)).unwrap();
    std::fs::write(dir.join("vocab.txt"), vocab.join("\n") + "\n").unwrap();
    let w = random_weights(&cfg, 0.4, 5, WeightLayout { gamma_beta: false, tied });
    let w: HashMap<String, Tensor> = w.into_iter().map(|(k, t)| (k, t.to_dtype(DType::F32).unwrap())).collect();
    dlp_tensor::candle_core::safetensors::save(&w, dir.join("model.safetensors")).unwrap();
    w
}

struct Case {
    dir: tempfile::TempDir,
}

impl Case {
    fn new() -> Case {
        let dir = tempfile::tempdir().unwrap();
        let words: Vec<String> = WORDS.iter().map(|s| s.to_string()).collect();
        checkpoint(&dir.path().join("words"), &words, false);
        let amino: Vec<String> = AMINO.chars().map(|c| c.to_string()).collect();
        checkpoint(&dir.path().join("protein"), &amino, true);
        Case { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn write(&self, name: &str, text: &str) -> String {
        std::fs::write(self.path(name), text).unwrap();
        self.path(name).display().to_string()
    }

    fn run(&self, args: &[&str]) -> Output {
        let mut all = vec!["infill".to_string(), "--quiet".to_string()];
        all.extend(args.iter().map(|s| s.to_string()));
        Command::new(env!("CARGO_BIN_EXE_dlp")).args(&all).output().unwrap()
    }
}

fn records(text: &str) -> Vec<serde_json::Value> {
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn every_sampler_fills_the_masks_and_keeps_the_rest() {
    let case = Case::new();
    let words = case.path("words").display().to_string();
    let input = case.write("in.txt", "# a comment\nthe old [MASK] is a [MASK] .\n\n[MASK] whale , the sea\n");
    for (sampler, alpha) in [("gibbs", None), ("gwg", None), ("dula", Some("0.5")), ("dmala", Some("1.0"))] {
        let out = case.path(&format!("{sampler}.jsonl")).display().to_string();
        let mut args = vec!["--model", &words, "--input", &input, "--sampler", sampler, "--chains", "6"];
        args.extend(["--steps", "4", "--top", "3", "--seed", "9", "--out", &out]);
        if let Some(a) = alpha {
            args.extend(["--step-size", a]);
        }
        let o = case.run(&args);
        assert!(o.status.success(), "{sampler}: {}", String::from_utf8_lossy(&o.stderr));
        let text = std::fs::read_to_string(&out).unwrap();
        let recs = records(&text);
        assert_eq!(recs.len(), 2, "{sampler}: one record per sequence");
        assert_eq!(recs[0]["line"], 2);
        assert_eq!(recs[1]["line"], 4);
        for r in &recs {
            let fills: Vec<&str> = r["fills"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
            let e: Vec<f64> = r["energies"].as_array().unwrap().iter().map(|f| f.as_f64().unwrap()).collect();
            assert!(!fills.is_empty() && fills.len() <= 3 && fills.len() == e.len());
            assert!(e.windows(2).all(|w| w[0] >= w[1]), "{sampler}: sorted by f");
            assert!(e.iter().all(|&x| x < 0.0 && x.is_finite()));
            let input: Vec<&str> = r["input"].as_str().unwrap().split_whitespace().collect();
            for f in &fills {
                let toks: Vec<&str> = f.split_whitespace().collect();
                assert_eq!(toks.len(), input.len());
                for (a, b) in toks.iter().zip(&input) {
                    assert!(*b == "[MASK]" || a == b, "{sampler}: {f} vs {input:?}");
                    assert!(!a.starts_with('['), "{sampler}: a special token was proposed: {f}");
                }
            }
            assert_eq!(r["changed_per_step"].as_array().unwrap().len(), 4);
            let acc = r["acceptance"].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&acc));
        }
        // Same seed, same fills.
        let again = case.path("again.jsonl").display().to_string();
        let mut args2 = args.clone();
        let n = args2.len();
        let pos = args2.iter().position(|a| *a == out.as_str()).unwrap();
        args2[pos] = &again;
        assert_eq!(n, args2.len());
        assert!(case.run(&args2).status.success());
        let strip = |t: &str| {
            records(t)
                .into_iter()
                .map(|mut r| {
                    r.as_object_mut().unwrap().remove("seconds");
                    r
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(strip(&text), strip(&std::fs::read_to_string(&again).unwrap()), "{sampler}: seeded");
    }
}

/// `dlp infill --sampler dmala` without `--step-size` adapts α as `dlp sample` does (the
/// session's resolution): over the first half of the steps, recorded with the α it chose.
#[test]
fn dmala_without_a_step_size_adapts_it_as_dlp_sample_does() {
    let case = Case::new();
    let words = case.path("words").display().to_string();
    let input = case.write("in.txt", "the old [MASK] is a [MASK] .\n");
    let run = |extra: &[&str]| {
        let mut args = vec!["--model", &words, "--input", &input, "--sampler", "dmala", "--chains", "4"];
        args.extend(["--steps", "6", "--seed", "5"]);
        args.extend(extra);
        let o = case.run(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let mut recs = records(&String::from_utf8(o.stdout).unwrap());
        recs[0].as_object_mut().unwrap().remove("seconds");
        recs.remove(0)
    };
    let adapted = run(&[]);
    let alpha = adapted["step_size"].as_f64().expect("the adapted α is recorded");
    assert!(alpha.is_finite() && alpha > 0.0, "{adapted}");
    assert_eq!(adapted["warmup_steps"], 3, "half of --steps, one window");
    assert_eq!(adapted["changed_per_step"].as_array().unwrap().len(), 3, "the kept steps only");
    assert_eq!(run(&[]), adapted, "seeded");
    // A given α: no warm-up, every step kept, the record as before (no warmup_steps).
    let fixed = run(&["--step-size", "0.7"]);
    assert_eq!(fixed["step_size"], 0.7);
    assert!(fixed.get("warmup_steps").is_none());
    assert_eq!(fixed["changed_per_step"].as_array().unwrap().len(), 6);
}

#[test]
fn protein_lines_use_underscores_and_write_to_stdout() {
    let case = Case::new();
    let protein = case.path("protein").display().to_string();
    let input = case.write("p.txt", "EV_LV_SGG\n");
    let o = case.run(&["--model", &protein, "--input", &input, "--sampler", "gibbs", "--chains", "3", "--steps", "2"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let recs = records(&String::from_utf8(o.stdout).unwrap());
    assert_eq!(recs.len(), 1);
    for f in recs[0]["fills"].as_array().unwrap() {
        let f = f.as_str().unwrap();
        assert_eq!(f.len(), 9);
        assert!(f.starts_with("EV") && &f[3..5] == "LV" && f.ends_with("SGG"), "{f}");
        assert!(f.chars().all(|c| AMINO.contains(c)));
    }
}

/// f of a fill from candle-transformers' forward: Σ over masked slots of log softmax of the
/// logits of the filled sequence at the filled token.
fn reference_energy(dir: &Path, ids: &[u32], masked: &[usize]) -> f64 {
    use candle_transformers::models::bert::{BertForMaskedLM, Config};
    let cfg: Config = serde_json::from_str(&std::fs::read_to_string(dir.join("config.json")).unwrap()).unwrap();
    let vb = unsafe { VarBuilder::from_mmaped_safetensors(&[dir.join("model.safetensors")], DType::F32, &Device::Cpu) }
        .unwrap();
    let m = BertForMaskedLM::load(vb, &cfg).unwrap();
    let t = Tensor::from_vec(ids.to_vec(), (1, ids.len()), &Device::Cpu).unwrap();
    let logits = m.forward(&t, &t.zeros_like().unwrap(), None).unwrap().to_dtype(DType::F64).unwrap();
    let logp = candle_nn::ops::log_softmax(&logits, D::Minus1).unwrap();
    masked.iter().map(|&i| logp.i((0, i, ids[i] as usize)).unwrap().to_scalar::<f64>().unwrap()).sum()
}

#[test]
fn score_agrees_with_candle_transformers() {
    let case = Case::new();
    let words = case.path("words").display().to_string();
    // ids: [CLS]=2 [SEP]=3, words from 5: the=5 a=6 whale=7 sea=8 ship=9 old=10 man=11 is=12 .=13 ,=14
    let input = case.write("s.txt", "the [MASK] is [MASK] .\tthe whale is old .\n[MASK] sea\tA sea\n");
    let o = case.run(&["--model", &words, "--input", &input, "--score"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let recs = records(&String::from_utf8(o.stdout).unwrap());
    assert_eq!(recs.len(), 2);
    let dir = case.path("words");
    let want =
        [reference_energy(&dir, &[2, 5, 7, 12, 10, 13, 3], &[2, 4]), reference_energy(&dir, &[2, 6, 8, 3], &[1])];
    for (r, w) in recs.iter().zip(want) {
        let e = r["energy"].as_f64().unwrap();
        assert!((e - w).abs() <= 1e-5 * w.abs().max(1.0), "dlp {e} vs candle-transformers {w}");
    }
    assert_eq!(recs[1]["filled"], "a sea");
}

fn assert_input_error(o: &Output, needle: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.starts_with("error: ") && err.contains(needle), "{needle:?} not in {err}");
    assert!(o.stdout.is_empty());
}

#[test]
fn bad_input_is_one_error_line_and_exit_2() {
    let case = Case::new();
    let words = case.path("words").display().to_string();
    let out = case.path("out.jsonl").display().to_string();
    let run = |input: &str, extra: &[&str]| {
        let f = case.write("bad.txt", input);
        let mut args = vec!["--model", &words, "--input", &f, "--out", &out];
        args.extend(extra);
        if !extra.contains(&"--sampler") {
            args.extend(["--sampler", "gwg"]);
        }
        case.run(&args)
    };
    assert_input_error(&run("the [MASK] .\nthe kraken [MASK]\n", &[]), "line 2: unknown token \"kraken\"");
    assert_input_error(&run("the whale .\n", &[]), "line 1: no masked position");
    let long = ["the"; 10].join(" ") + " [MASK]";
    assert_input_error(&run(&long, &[]), "max_position_embeddings = 12");
    assert_input_error(&run("the [MASK]\n", &["--sampler", "dula"]), "--sampler dula needs --step-size");
    assert_input_error(&run("the [MASK]\n", &["--sampler", "dmala", "--steps", "1"]), "--steps ≥ 2");
    assert_input_error(&run("the [MASK]\n", &["--device", "cuda"]), "`cuda` feature");
    assert_input_error(&run("the [MASK]\tthe\n", &["--score"]), "has 3 tokens where the masked one has 4");
    assert!(!case.path("out.jsonl").exists(), "no partial output");

    // Checkpoints: a missing tensor, a config that does not fit the weights.
    let good = case.path("words");
    let broken = case.path("broken");
    let mut w = checkpoint(&broken, &WORDS.iter().map(|s| s.to_string()).collect::<Vec<_>>(), false);
    w.remove("bert.encoder.layer.1.output.dense.weight");
    dlp_tensor::candle_core::safetensors::save(&w, broken.join("model.safetensors")).unwrap();
    let f = case.write("ok.txt", "the [MASK] .\n");
    let b = broken.display().to_string();
    assert_input_error(
        &case.run(&["--model", &b, "--input", &f, "--sampler", "gwg"]),
        "bert.encoder.layer.1.output.dense.weight",
    );
    let cfg = std::fs::read_to_string(good.join("config.json"))
        .unwrap()
        .replace("\"intermediate_size\": 32", "\"intermediate_size\": 40");
    std::fs::copy(good.join("model.safetensors"), broken.join("model.safetensors")).unwrap();
    std::fs::write(broken.join("config.json"), cfg).unwrap();
    assert_input_error(&case.run(&["--model", &b, "--input", &f, "--sampler", "gwg"]), "shape mismatch");
    std::fs::remove_file(broken.join("model.safetensors")).unwrap();
    assert_input_error(
        &case.run(&["--model", &b, "--input", &f, "--sampler", "gwg"]),
        "neither model.safetensors nor pytorch_model.bin",
    );
}
