//! What `meta.json` records about the build and the machine: git revision, locked crate
//! versions, OS/CPU/host.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// `git rev-parse HEAD` and whether tracked files differ from it, if git is available.
pub(crate) fn git_info() -> Value {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = if here.exists() { here.to_path_buf() } else { PathBuf::from(".") };
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(&dir)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    match git(&["rev-parse", "HEAD"]) {
        Some(rev) => json!({
            "revision": rev,
            "dirty": git(&["status", "--porcelain", "--untracked-files=no"]).map(|s| !s.is_empty()),
        }),
        None => Value::Null,
    }
}

/// The workspace's Cargo.lock, compiled in so that the versions in `meta.json` are the ones
/// this binary was built with.
const CARGO_LOCK: &str = include_str!("../../Cargo.lock");

/// Version of `package` in a Cargo.lock text (the first entry if several versions are locked).
pub fn locked_version(lock: &str, package: &str) -> Option<String> {
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line.trim() == format!("name = \"{package}\"") {
            let version = lines.next()?.trim().strip_prefix("version = \"")?.strip_suffix('"')?;
            return Some(version.to_string());
        }
    }
    None
}

/// dlp's version and the locked versions of the dependencies that decide results.
pub(crate) fn versions() -> Value {
    let mut map = serde_json::Map::new();
    map.insert("dlp".into(), json!(env!("CARGO_PKG_VERSION")));
    for p in ["rand", "rand_chacha", "rayon", "plotters", "clap", "serde_json"] {
        map.insert(p.into(), json!(locked_version(CARGO_LOCK, p)));
    }
    Value::Object(map)
}

/// OS, architecture, CPU model and count, host name.
pub(crate) fn machine() -> Value {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map(|s| s.trim().to_string());
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").ok().map(|s| s.trim().to_string());
    json!({
        "os": std::env::consts::OS,
        "arch": std::env::consts::ARCH,
        "cpus": std::thread::available_parallelism().map(|n| n.get()).ok(),
        "cpu_model": cpu_model,
        "hostname": host,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locked_versions_are_read_from_a_lock_text() {
        let lock = "[[package]]\nname = \"rand\"\nversion = \"0.10.4\"\n\n[[package]]\nname = \"rayon\"\nversion = \"1.12.0\"\n";
        assert_eq!(locked_version(lock, "rayon").as_deref(), Some("1.12.0"));
        assert_eq!(locked_version(lock, "rand").as_deref(), Some("0.10.4"));
        assert_eq!(locked_version(lock, "nope"), None);
        // The compiled-in lock file knows rand.
        assert!(locked_version(CARGO_LOCK, "rand").is_some());
    }
}
