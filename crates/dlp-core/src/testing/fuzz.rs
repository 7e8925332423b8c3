//! Shared plumbing of the fuzz tests (`tests/fuzz.rs` of dlp-models, dlp-tensor and dlp-cli):
//! how many inputs a run tries, a watchdog that turns a hang into a failure naming the input,
//! the one-line-error check, and the committed corpus every run replays.
//!
//! The short run (`just test`) tries [`cases`]`(default)` inputs per target; `just fuzz` sets
//! `DLP_FUZZ_CASES` (10^7 by default there) and runs the same tests in release, and every
//! target prints its count and time when it ends (`--nocapture` shows it).

use std::fmt::Debug;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Inputs per target: `DLP_FUZZ_CASES` when set (the long run), else `default` (the short run,
/// sized so that each target takes a few seconds in the debug build).
pub fn cases(default: u32) -> u32 {
    match std::env::var("DLP_FUZZ_CASES") {
        Ok(v) => v.trim().parse().unwrap_or_else(|_| panic!("DLP_FUZZ_CASES must be a count, got {v:?}")),
        Err(_) => default,
    }
}

/// The longest one input may take: `DLP_FUZZ_LIMIT_S` seconds when set, else 10 s (generous:
/// parsing a file of at most a few kilobytes takes microseconds; this catches loops and
/// quadratic blow-ups, not slowness).
pub fn limit() -> Duration {
    let s = std::env::var("DLP_FUZZ_LIMIT_S").ok().and_then(|v| v.trim().parse::<f64>().ok()).unwrap_or(10.0);
    Duration::from_secs_f64(s)
}

/// What a target shares with its watchdog thread. The per-input cost is one atomic store at
/// each end and one uncontended lock to park a clone of the input: the input is rendered
/// (`{:?}`) only when it hangs or fails, never on the hot path (rendering every input cost
/// more than parsing it).
struct Shared {
    /// Nanoseconds from the target's start to the start of the input being tried, plus one;
    /// 0 while none is.
    started: AtomicU64,
    /// Inputs tried so far.
    count: AtomicU64,
    /// A clone of the input being tried, for the hang report.
    input: Mutex<Option<Box<dyn Debug + Send>>>,
    stop: AtomicBool,
}

/// One fuzz target: counts inputs, times them, and aborts the process (printing the input) when
/// one runs past [`limit`], since a hung parser would otherwise hang the test run. Prints
/// `fuzz <name>: <count> inputs, <s> s` every [`PROGRESS`] (so that a long run stopped early
/// still says how far it got) and `fuzz <name>: <count> inputs in <s> s (<µs>/input)` when
/// dropped.
pub struct Target {
    name: String,
    start: Instant,
    shared: Arc<Shared>,
    limit: Duration,
}

/// How often a running target prints its count to stderr.
pub const PROGRESS: Duration = Duration::from_secs(60);

impl Target {
    /// Starts the target `name` and its watchdog.
    pub fn new(name: &str) -> Target {
        let shared = Arc::new(Shared {
            started: AtomicU64::new(0),
            count: AtomicU64::new(0),
            input: Mutex::new(None),
            stop: AtomicBool::new(false),
        });
        let start = Instant::now();
        let limit = limit();
        let (sh, n) = (shared.clone(), name.to_string());
        std::thread::spawn(move || {
            let mut last = Instant::now();
            while !sh.stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(50));
                let started = sh.started.load(Ordering::Acquire);
                if started > 0 && start.elapsed().saturating_sub(Duration::from_nanos(started - 1)) > limit {
                    // The input parked under the lock is the one that started at `started`
                    // unless the main thread moved on meanwhile (then `started` changed).
                    let input = sh.input.lock().unwrap_or_else(|e| e.into_inner());
                    if let Some(input) = input.as_deref()
                        && sh.started.load(Ordering::Acquire) == started
                    {
                        // A hang cannot be unwound from another thread: report and end the
                        // process.
                        eprintln!("fuzz {n}: input ran past {limit:?} (hang?): {input:?}");
                        std::process::abort();
                    }
                }
                if last.elapsed() >= PROGRESS {
                    last = Instant::now();
                    let c = sh.count.load(Ordering::Relaxed);
                    eprintln!("fuzz {n}: {c} inputs, {:.0} s", start.elapsed().as_secs_f64());
                }
            }
        });
        Target { name: name.into(), start, shared, limit }
    }

    /// Runs `f` on `input` under the watchdog (which holds a clone of `input` to print should
    /// it hang), and checks that it finished within [`limit`]; `input` is rendered with `{:?}`
    /// only in those reports.
    pub fn run<I: Debug + Clone + Send + 'static, R>(&self, input: &I, f: impl FnOnce() -> R) -> R {
        *self.shared.input.lock().unwrap_or_else(|e| e.into_inner()) = Some(Box::new(input.clone()));
        let t0 = Instant::now();
        let since = t0.saturating_duration_since(self.start).as_nanos() as u64;
        self.shared.started.store(since + 1, Ordering::Release);
        let r = f();
        let took = t0.elapsed();
        self.shared.started.store(0, Ordering::Release);
        self.shared.count.fetch_add(1, Ordering::Relaxed);
        assert!(took <= self.limit, "fuzz {}: input took {took:?} (limit {:?}): {input:?}", self.name, self.limit);
        r
    }

    /// Inputs tried so far.
    pub fn count(&self) -> u64 {
        self.shared.count.load(Ordering::Relaxed)
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        let n = self.count();
        let s = self.start.elapsed().as_secs_f64();
        let per = if n > 0 { s * 1e6 / n as f64 } else { 0.0 };
        eprintln!("fuzz {}: {n} inputs in {s:.1} s ({per:.1} µs/input)", self.name);
    }
}

/// Checks that a rejection reads as one line: non-empty, no line break or other control
/// character (a terminal would break the line or garble it), and that it contains one of
/// `places` (the file, line, field or flag it must name). Returns a description of the first
/// problem, for a failure message with the input.
pub fn one_line_naming(message: &str, places: &[&str]) -> Result<(), String> {
    if message.trim().is_empty() {
        return Err("empty error message".into());
    }
    if let Some(c) = message.chars().find(|c| c.is_control()) {
        return Err(format!("error message has the control character {c:?}: {message:?}"));
    }
    if !places.is_empty() && !places.iter().any(|p| message.contains(p)) {
        return Err(format!("error message names none of {places:?}: {message:?}"));
    }
    Ok(())
}

/// The committed corpus of target `target` under `dir` (`<dir>/<target>/*`), sorted by name:
/// (file name, bytes). Every short run replays it. Panics when the directory is missing or
/// empty, so that a renamed corpus cannot silently stop being replayed.
pub fn corpus(dir: &Path, target: &str) -> Vec<(String, Vec<u8>)> {
    let d: PathBuf = dir.join(target);
    let mut entries: Vec<_> = std::fs::read_dir(&d)
        .unwrap_or_else(|e| panic!("fuzz corpus {}: {e}", d.display()))
        .map(|e| e.expect("corpus entry").path())
        .filter(|p| p.is_file())
        .collect();
    entries.sort();
    assert!(!entries.is_empty(), "fuzz corpus {} is empty", d.display());
    entries
        .into_iter()
        .map(|p| {
            let name = p.file_name().expect("file name").to_string_lossy().into_owned();
            let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (name, bytes)
        })
        .collect()
}

/// An input rendered for a report: UTF-8 text escaped (`{:?}`), other bytes as hex.
pub fn show_bytes(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => format!("{s:?}"),
        Err(_) => format!("bytes {}", bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_naming_rejects_breaks_and_unnamed_places() {
        assert!(one_line_naming("m.json: d must be an integer", &["m.json"]).is_ok());
        assert!(one_line_naming("m.json: bad\nkey", &["m.json"]).is_err());
        assert!(one_line_naming("m.json: bad\rkey", &["m.json"]).is_err());
        assert!(one_line_naming("bad key", &["m.json"]).is_err());
        assert!(one_line_naming(" ", &[]).is_err());
    }

    #[test]
    fn target_counts_inputs() {
        let t = Target::new("self-test");
        for i in 0..3 {
            assert_eq!(t.run(&i, || i * 2), i * 2);
        }
        assert_eq!(t.count(), 3);
    }
}
