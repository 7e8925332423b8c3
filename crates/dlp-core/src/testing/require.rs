//! What a test needs from outside the repository (a compiler, python3 with numpy, a data cache,
//! Slurm, a GPU) and what happens when it is missing: one policy for every crate's tests, so
//! that CI cannot be green while testing less.
//!
//! Missing and not required, the test prints `skipped: … (install: …)` on stderr, appends a
//! line to `$DLP_SKIP_LOG` when that is set (`.ci/run` counts them), and returns early. Missing
//! and required, it panics with what is missing and the one command that provides it. A
//! requirement is required when
//! - `CI` is set to anything but `""`, `0` or `false` (CI runs `.ci/run` with `CI=true`), or
//!   `DLP_REQUIRE_ALL=1`: every requirement that an install command can provide; or
//! - its own switch is set (`DLP_REQUIRE_SLURM`, `DLP_REQUIRE_GPU`). A GPU, or a host on which
//!   the private Slurm cluster can bind loopback, is not something CI can install, so those
//!   are [`Requirement::own_switch_only`]: required by their switch alone, skipped (and
//!   counted) in CI otherwise.

use std::io::Write;
use std::process::{Command, Stdio};

/// The environment a decision reads: `std::env::var` in tests, a map in the tests of this
/// module (so that they never touch the process environment other tests run in).
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

fn process_env(key: &str) -> Option<String> {
    std::env::var(key).ok()
}

/// A switch is on when set to anything but empty, `0` or `false`: CI services set `CI=true`
/// or `CI=1`, and `CI=false` must not turn the strict mode on.
fn on(env: Env, key: &str) -> bool {
    env(key).is_some_and(|v| !matches!(v.trim().to_ascii_lowercase().as_str(), "" | "0" | "false"))
}

/// Something a test needs, and the one command that provides it.
#[derive(Clone, Debug)]
pub struct Requirement {
    what: String,
    install: String,
    switch: Option<&'static str>,
    by_ci: bool,
}

impl Requirement {
    /// `what` names the missing thing and why the test needs it; `install` is the one command
    /// that provides it (`apt-get install g++`, `just data moby-dick`).
    pub fn new(what: impl Into<String>, install: impl Into<String>) -> Self {
        Requirement { what: what.into(), install: install.into(), switch: None, by_ci: true }
    }

    /// Also required whenever environment variable `var` is on (`DLP_REQUIRE_SLURM`).
    pub fn switch(mut self, var: &'static str) -> Self {
        self.switch = Some(var);
        self
    }

    /// Required only by its own switch, never by `CI` / `DLP_REQUIRE_ALL`: for what no
    /// install command can provide on a CI machine (a GPU).
    pub fn own_switch_only(mut self, var: &'static str) -> Self {
        self.switch = Some(var);
        self.by_ci = false;
        self
    }

    /// The variable that makes this requirement a failure in `env`, if any.
    fn required_by(&self, env: Env) -> Option<String> {
        if let Some(var) = self.switch.filter(|v| on(env, v)) {
            return Some(var.to_string());
        }
        if self.by_ci {
            for var in ["CI", "DLP_REQUIRE_ALL"] {
                if on(env, var) {
                    return Some(var.to_string());
                }
            }
        }
        None
    }

    /// True when `present`; otherwise a panic if the requirement is required, else a skip note
    /// on stderr (and in `$DLP_SKIP_LOG`) and false, for the test to return on.
    pub fn met(&self, present: bool) -> bool {
        self.met_in(present, &process_env)
    }

    /// [`Self::met`] in the environment `env`.
    pub fn met_in(&self, present: bool, env: Env) -> bool {
        if present {
            return true;
        }
        if let Some(var) = self.required_by(env) {
            panic!(
                "missing: {}; {var} is set, so this test may not pass by skipping. Install it with: {}",
                self.what, self.install
            );
        }
        eprintln!("skipped: {} is missing (install: {})", self.what, self.install);
        if let Some(log) = env("DLP_SKIP_LOG").filter(|p| !p.is_empty()) {
            // libtest and nextest name the test's thread after the test.
            let test = std::thread::current().name().unwrap_or("?").to_string();
            let line = format!("{test}\t{}\t{}\n", self.what, self.install);
            // One write of one short line with O_APPEND, so that concurrent test processes
            // do not interleave their lines.
            let f = std::fs::OpenOptions::new().create(true).append(true).open(&log);
            f.and_then(|mut f| f.write_all(line.as_bytes()))
                .unwrap_or_else(|e| panic!("cannot append to DLP_SKIP_LOG={log}: {e}"));
        }
        false
    }

    /// [`Self::met`] with "present" meaning: `argv` runs (found on `PATH`) and exits 0.
    pub fn command(&self, argv: &[&str]) -> bool {
        self.command_in(argv, &process_env)
    }

    /// [`Self::command`] in the environment `env`, whose `PATH` finds the program.
    pub fn command_in(&self, argv: &[&str], env: Env) -> bool {
        let mut cmd = Command::new(argv[0]);
        cmd.args(&argv[1..]).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
        if let Some(path) = env("PATH") {
            cmd.env("PATH", path);
        }
        let present = cmd.status().is_ok_and(|s| s.success());
        self.met_in(present, env)
    }

    /// [`Self::met`] with "present" meaning: `path` exists.
    pub fn path(&self, path: impl AsRef<std::path::Path>) -> bool {
        self.met(path.as_ref().exists())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::panic::{AssertUnwindSafe, catch_unwind};

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| map.get(k).cloned()
    }

    fn gxx() -> Requirement {
        Requirement::new("g++ for the host emulation", "apt-get install g++")
    }

    /// The panic message of `f`, or None when it returns.
    fn panic_of(f: impl FnOnce() -> bool) -> Option<String> {
        let r = catch_unwind(AssertUnwindSafe(f));
        r.err().map(|e| e.downcast_ref::<String>().cloned().unwrap_or_default())
    }

    /// The switch itself can fail: with `CI` on and a `PATH` on which the tool does not exist,
    /// the real lookup finds nothing and the test panics naming the tool and its install
    /// command; the same with `DLP_REQUIRE_ALL=1`.
    #[test]
    fn ci_turns_a_missing_tool_into_a_failure_naming_its_install_command() {
        for (var, val) in [("CI", "true"), ("CI", "1"), ("DLP_REQUIRE_ALL", "1")] {
            let env = env_of(&[(var, val), ("PATH", "/nonexistent-dlp-test-dir")]);
            let msg = panic_of(|| gxx().command_in(&["g++", "--version"], &env)).expect("a panic");
            assert!(msg.contains("g++ for the host emulation"), "{msg}");
            assert!(msg.contains("Install it with: apt-get install g++"), "{msg}");
            assert!(msg.contains(&format!("{var} is set")), "{msg}");
        }
    }

    /// Without a switch the same lookup is a skip (false, no panic), and a tool that is there
    /// is found under CI too: `sh` on the real PATH (every Unix has it).
    #[test]
    fn without_a_switch_missing_is_a_skip_and_present_is_found() {
        for pairs in [&[][..], &[("CI", "false")][..], &[("CI", "0")][..], &[("CI", "")][..]] {
            let mut pairs = pairs.to_vec();
            pairs.push(("PATH", "/nonexistent-dlp-test-dir"));
            let env = env_of(&pairs);
            assert_eq!(panic_of(|| gxx().command_in(&["g++", "--version"], &env)), None, "{pairs:?}");
            assert!(!gxx().command_in(&["g++", "--version"], &env), "{pairs:?}");
        }
        let path = std::env::var("PATH").unwrap();
        let env = env_of(&[("CI", "true"), ("PATH", &path)]);
        assert!(gxx().command_in(&["sh", "-c", "exit 0"], &env));
        // Found but failing (python3 without numpy, say) counts as missing.
        assert!(panic_of(|| gxx().command_in(&["sh", "-c", "exit 3"], &env)).is_some());
    }

    /// A requirement's own switch makes it required outside CI; one that CI cannot provide (a
    /// GPU) is required by its own switch only.
    #[test]
    fn own_switches_and_what_ci_cannot_provide() {
        let slurm =
            || Requirement::new("Slurm", "apt-get install slurmctld slurmd slurm-client").switch("DLP_REQUIRE_SLURM");
        let msg = panic_of(|| slurm().met_in(false, &env_of(&[("DLP_REQUIRE_SLURM", "1")]))).expect("a panic");
        assert!(msg.contains("DLP_REQUIRE_SLURM is set") && msg.contains("slurmctld slurmd"), "{msg}");
        assert!(panic_of(|| slurm().met_in(false, &env_of(&[("CI", "true")]))).is_some());
        assert!(!slurm().met_in(false, &env_of(&[])));
        let gpu =
            || Requirement::new("a CUDA device", "a machine with an NVIDIA GPU").own_switch_only("DLP_REQUIRE_GPU");
        assert!(!gpu().met_in(false, &env_of(&[("CI", "true"), ("DLP_REQUIRE_ALL", "1")])));
        let msg = panic_of(|| gpu().met_in(false, &env_of(&[("DLP_REQUIRE_GPU", "1")]))).expect("a panic");
        assert!(msg.contains("a CUDA device") && msg.contains("DLP_REQUIRE_GPU is set"), "{msg}");
    }

    /// A skip is one line in `$DLP_SKIP_LOG`: the test's name, what is missing, the command.
    #[test]
    fn a_skip_is_logged_with_the_test_name() {
        let log = std::env::temp_dir().join(format!("dlp-skip-log-{}.tsv", std::process::id()));
        let _ = std::fs::remove_file(&log);
        let env = env_of(&[("DLP_SKIP_LOG", log.to_str().unwrap())]);
        assert!(!gxx().met_in(false, &env));
        assert!(gxx().met_in(true, &env), "present: no line");
        let text = std::fs::read_to_string(&log).unwrap();
        std::fs::remove_file(&log).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1, "{text}");
        let fields: Vec<&str> = lines[0].split('\t').collect();
        assert!(fields[0].ends_with("a_skip_is_logged_with_the_test_name"), "{text}");
        assert_eq!(fields[1..], ["g++ for the host emulation", "apt-get install g++"]);
    }
}
