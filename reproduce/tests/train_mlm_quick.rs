//! `train-mlm --quick` (synthetic stand-in text, tiny model): every promised file is written,
//! the model directory loads back, the held-out loss falls, `--resume` continues from the
//! checkpoint, and bad flags are one error line with exit code 2 and no output.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn train(out: &Path, extra: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_train-mlm"))
        .args(["--quick", "--seed", "1", "--out"])
        .arg(out)
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn quick_run_writes_a_loadable_model_and_the_loss_falls() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    let o = train(&out, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for f in ["loss.csv", "summary.json", "meta.json", "train-mlm.svg", "train-mlm.png"] {
        assert!(out.join(f).is_file(), "missing {f}");
    }
    for f in ["config.json", "vocab.txt", "model.safetensors", "checkpoint.safetensors"] {
        assert!(out.join("model").join(f).is_file(), "missing model/{f}");
    }
    let (model, _vocab) = dlp_tensor::bert::BertMlm::load(&out.join("model"), &dlp_tensor::Device::Cpu).unwrap();
    assert_eq!(model.config().hidden_size, 32);
    let s: Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["stand_in"], true);
    // Deterministic given the seed: 30 steps on the synthetic text take the held-out loss from
    // ln V = 3.61 to about 3.3.
    let (first, last) = (s["heldout_loss_first"].as_f64().unwrap(), s["heldout_loss_final"].as_f64().unwrap());
    assert!(last < first - 0.1, "held-out loss {first} → {last}");

    // --resume with more steps continues from the saved step 30.
    let again = dir.path().join("again");
    let model_dir = out.join("model");
    let o = train(&again, &["--resume", "--steps", "35", "--model-dir", model_dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s: Value = serde_json::from_str(&std::fs::read_to_string(again.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["resumed_from"], 30);
}

#[test]
fn bad_flags_are_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    for (flags, needle) in [(&["--text", "bogus"][..], "--text bogus"), (&["--steps", "0"][..], "--steps")] {
        let out = dir.path().join("bad");
        let o = train(&out, flags);
        assert_eq!(o.status.code(), Some(2));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.starts_with("error:") && err.contains(needle) && err.lines().count() == 1, "{err}");
        assert!(!out.exists(), "no output on bad input");
    }
}
