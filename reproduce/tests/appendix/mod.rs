//! What the App. D and App. H quick tests share: one `--quick --seed 3` run of a binary, its
//! summary and its files.

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

/// `bin --quick --seed 3 --out OUT EXTRA…`.
pub fn run(bin: &str, out: &Path, extra: &[&str]) -> Output {
    Command::new(bin).args(["--quick", "--seed", "3", "--out"]).arg(out).args(extra).output().unwrap()
}

/// `OUT/summary.json`, parsed.
pub fn summary(out: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
}

/// Asserts that every one of `files` exists under `out`.
pub fn has_files(out: &Path, files: &[&str]) {
    for f in files {
        assert!(out.join(f).is_file(), "missing {f}");
    }
}
