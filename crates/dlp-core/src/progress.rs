//! Progress of long runs: indicatif's bar on a terminal. indicatif draws nothing when stderr is
//! not a terminal (a log file, a Slurm job), which left long runs silent for hours; there a
//! background thread writes one plain line to stderr every [`log_interval`] instead.
//!
//! The time left is this module's own [`Eta`], not indicatif's estimator: that one weighs the
//! last ~15 s, so a run that moves in bursts (25 chains finishing a step together once a
//! minute) read "eta 5211:03:30" between bursts, and a resumed run's read-back cells (a jump of
//! thousands in its first second) read "eta 0:20:04" for a two-hour remainder.

use indicatif::style::ProgressTracker;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Seconds between log lines when stderr is not a terminal: `DLP_PROGRESS_SECS` if set to a
/// positive number, 60 otherwise.
pub fn log_interval() -> Duration {
    let secs = std::env::var("DLP_PROGRESS_SECS").ok().and_then(|s| s.parse::<f64>().ok());
    Duration::from_secs_f64(secs.filter(|s| s.is_finite() && *s > 0.0).unwrap_or(60.0))
}

/// A bar on stderr counting `len` units, labelled `message`. When stderr is not a terminal the
/// bar is hidden (so `is_hidden()` still tells callers to print their own lines plainly) and a
/// thread logs `message: pos/len (p%), elapsed …, eta …` every [`log_interval`] until the bar
/// is finished or dropped.
pub fn bar(len: u64, message: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    // A log line's first estimate waits one interval; a terminal's only 5 s, so that a short
    // interactive run shows one too (read-back work is credited in the first second or two).
    let settle = if bar.is_hidden() { log_interval() } else { Duration::from_secs(5) };
    let eta = Arc::new(Mutex::new(Eta::new(Instant::now(), settle)));
    if let Ok(style) =
        ProgressStyle::with_template("{msg} [{elapsed_precise}] {wide_bar} {percent:>3}% eta {window_eta}")
    {
        bar.set_style(style.with_key("window_eta", EtaKey(Arc::clone(&eta))));
    }
    bar.set_message(message.to_string());
    if bar.is_hidden() {
        log_lines(&bar, eta, log_interval());
    }
    bar
}

/// Time left from the mean rate over the last ten minutes, counting only progress made after a
/// settling period from the start (one log interval; 5 s on a terminal): read-back work of a resumed run, credited
/// in the first seconds, then does not make the rest look fast, and a run advancing in bursts
/// gets the average of many bursts.
#[derive(Debug)]
pub struct Eta {
    settled: Instant,
    samples: VecDeque<(Instant, u64)>,
}

/// How far back [`Eta`] averages.
const ETA_WINDOW: Duration = Duration::from_secs(600);

impl Eta {
    /// An estimator for a bar started at `start`, ignoring what happens in the first `settle`.
    pub fn new(start: Instant, settle: Duration) -> Self {
        Self { settled: start + settle, samples: VecDeque::new() }
    }

    /// Records that the bar stood at `pos` at `now` (at most one sample a second is kept).
    pub fn observe(&mut self, now: Instant, pos: u64) {
        if now < self.settled || self.samples.back().is_some_and(|&(t, _)| now < t + Duration::from_secs(1)) {
            return;
        }
        self.samples.push_back((now, pos));
        // Keep one sample at or before the window's start, so the window is always covered.
        while self.samples.len() > 2 && self.samples[1].0 + ETA_WINDOW <= now {
            self.samples.pop_front();
        }
    }

    /// Time left to reach `len` from `pos` at `now`; `None` until there is a rate to go on.
    pub fn eta(&self, now: Instant, pos: u64, len: u64) -> Option<Duration> {
        let &(t0, p0) = self.samples.front()?;
        let span = now.checked_duration_since(t0)?;
        if pos <= p0 || pos >= len || span < Duration::from_secs(1) {
            return None;
        }
        Some(span.mul_f64((len - pos) as f64 / (pos - p0) as f64))
    }
}

/// The `{window_eta}` template key: feeds the shared [`Eta`] on every update of the bar.
#[derive(Clone)]
struct EtaKey(Arc<Mutex<Eta>>);

impl ProgressTracker for EtaKey {
    fn clone_box(&self) -> Box<dyn ProgressTracker> {
        Box::new(self.clone())
    }
    fn tick(&mut self, state: &ProgressState, now: Instant) {
        if let Ok(mut eta) = self.0.lock() {
            eta.observe(now, state.pos());
        }
    }
    fn reset(&mut self, _: &ProgressState, _: Instant) {}
    fn write(&self, state: &ProgressState, w: &mut dyn std::fmt::Write) {
        let left = self.0.lock().ok().and_then(|e| e.eta(Instant::now(), state.pos(), state.len().unwrap_or(0)));
        let _ = w.write_str(&left.map_or_else(|| "?".to_string(), hms));
    }
}

/// The plain log line of `bar`'s state, with `eta` the time left when known.
pub fn log_line(bar: &ProgressBar, eta: Option<Duration>) -> String {
    let (pos, len) = (bar.position(), bar.length().unwrap_or(0));
    let pct = if len > 0 { 100.0 * pos as f64 / len as f64 } else { 0.0 };
    let eta = eta.filter(|_| pos < len).map(|d| format!(", eta {}", hms(d))).unwrap_or_default();
    format!("{}: {pos}/{len} ({pct:.0}%), elapsed {}{eta}", bar.message(), hms(bar.elapsed()))
}

fn hms(d: Duration) -> String {
    let s = d.as_secs();
    format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// Logs `bar` every `every` from a thread holding only a weak reference (it never keeps the bar
/// alive), checking once a second whether the bar is gone or finished.
fn log_lines(bar: &ProgressBar, eta: Arc<Mutex<Eta>>, every: Duration) {
    let weak = bar.downgrade();
    let spawned = std::thread::Builder::new().name("dlp-progress".into()).spawn(move || {
        let mut last = Instant::now();
        loop {
            std::thread::sleep(Duration::from_secs(1).min(every));
            let Some(bar) = weak.upgrade() else { break };
            if bar.is_finished() {
                break;
            }
            let (now, pos, len) = (Instant::now(), bar.position(), bar.length().unwrap_or(0));
            let left = eta.lock().ok().and_then(|mut e| {
                e.observe(now, pos);
                e.eta(now, pos, len)
            });
            if last.elapsed() >= every {
                eprintln!("{}", log_line(&bar, left));
                last = Instant::now();
            }
        }
    });
    // Without a thread the run goes on silently, as it would have before.
    drop(spawned);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_line_reports_position_share_and_time() {
        let bar = ProgressBar::hidden();
        bar.set_length(200);
        bar.set_message("static-dmala");
        bar.set_position(50);
        let line = log_line(&bar, Some(Duration::from_secs(3725)));
        assert!(line.starts_with("static-dmala: 50/200 (25%), elapsed 0:00:0"), "{line}");
        assert!(line.ends_with(", eta 1:02:05"), "{line}");
        assert!(!log_line(&bar, None).contains("eta"));
        bar.set_position(200);
        assert!(!log_line(&bar, Some(Duration::from_secs(1))).contains("eta"));
    }

    /// A resumed run credits 1,500 read-back units in its first second, then does 1.5 a second:
    /// the time left is 2,010 units at 1.5 a second, not the ~20 minutes the jump suggests.
    #[test]
    fn read_back_work_at_the_start_does_not_count_as_speed() {
        let t = Instant::now();
        let mut eta = Eta::new(t, Duration::from_secs(60));
        eta.observe(t, 0);
        eta.observe(t + Duration::from_millis(500), 1500);
        assert_eq!(eta.eta(t + Duration::from_secs(30), 1500, 3600), None);
        for s in 60..=120 {
            eta.observe(t + Duration::from_secs(s), 1500 + 3 * (s - 60) / 2);
        }
        let left = eta.eta(t + Duration::from_secs(120), 1590, 3600).unwrap();
        assert!((left.as_secs_f64() - 1340.0).abs() < 1e-6, "{left:?}");
    }

    /// 25 units land together once a minute: the estimate between bursts is the mean rate over
    /// the window (25 a minute), not a rate decayed towards zero since the last burst.
    #[test]
    fn bursts_are_averaged_over_the_window() {
        let t = Instant::now();
        let mut eta = Eta::new(t, Duration::ZERO);
        let pos = |s: u64| 25 * (s / 60);
        for s in 0..=659 {
            eta.observe(t + Duration::from_secs(s), pos(s));
        }
        let now = t + Duration::from_secs(659);
        let left = eta.eta(now, pos(659), 1250).unwrap().as_secs_f64() / 60.0;
        // 1,000 units left at 25 a minute is 40 minutes; the window's edge shifts it a little.
        assert!((left - 40.0).abs() < 4.5, "{left} min");
    }

    /// After the rate halves, within one window the estimate follows the new rate alone.
    #[test]
    fn the_window_forgets_an_old_rate() {
        let t = Instant::now();
        let mut eta = Eta::new(t, Duration::ZERO);
        let mut pos = 0;
        for s in 0..=1800 {
            pos += if s <= 600 { 2 } else { 1 };
            eta.observe(t + Duration::from_secs(s), pos);
        }
        let left = eta.eta(t + Duration::from_secs(1800), pos, pos + 600).unwrap();
        assert!((left.as_secs_f64() - 600.0).abs() < 2.0, "{left:?}");
        assert!(eta.samples.len() <= 602, "{}", eta.samples.len());
    }

    #[test]
    fn the_logging_thread_ends_with_the_bar() {
        let bar = ProgressBar::hidden();
        bar.set_length(3);
        log_lines(&bar, Arc::new(Mutex::new(Eta::new(Instant::now(), Duration::ZERO))), Duration::from_millis(10));
        let weak = bar.downgrade();
        drop(bar);
        std::thread::sleep(Duration::from_millis(1100));
        assert!(weak.upgrade().is_none());
    }

    #[test]
    fn interval_reads_the_environment_and_falls_back_to_a_minute() {
        // Only the fallback is checked: tests share the process environment.
        if std::env::var_os("DLP_PROGRESS_SECS").is_none() {
            assert_eq!(log_interval(), Duration::from_secs(60));
        }
    }
}
