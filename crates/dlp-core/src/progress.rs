//! Progress of long runs: indicatif's bar on a terminal. indicatif draws nothing when stderr is
//! not a terminal (a log file, a Slurm job), which left long runs silent for hours; there a
//! background thread writes one plain line to stderr every [`log_interval`] instead.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
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
    if let Ok(style) = ProgressStyle::with_template("{msg} [{elapsed_precise}] {wide_bar} {percent:>3}% eta {eta}") {
        bar.set_style(style);
    }
    bar.set_message(message.to_string());
    if bar.is_hidden() {
        log_lines(&bar, log_interval());
    }
    bar
}

/// The plain log line of `bar`'s state.
pub fn log_line(bar: &ProgressBar) -> String {
    let (pos, len) = (bar.position(), bar.length().unwrap_or(0));
    let pct = if len > 0 { 100.0 * pos as f64 / len as f64 } else { 0.0 };
    let eta = if pos > 0 && pos < len { format!(", eta {}", hms(bar.eta())) } else { String::new() };
    format!("{}: {pos}/{len} ({pct:.0}%), elapsed {}{eta}", bar.message(), hms(bar.elapsed()))
}

fn hms(d: Duration) -> String {
    let s = d.as_secs();
    format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// Logs `bar` every `every` from a thread holding only a weak reference (it never keeps the bar
/// alive), checking once a second whether the bar is gone or finished.
fn log_lines(bar: &ProgressBar, every: Duration) {
    let weak = bar.downgrade();
    let spawned = std::thread::Builder::new().name("dlp-progress".into()).spawn(move || {
        let mut last = Instant::now();
        loop {
            std::thread::sleep(Duration::from_secs(1).min(every));
            let Some(bar) = weak.upgrade() else { break };
            if bar.is_finished() {
                break;
            }
            if last.elapsed() >= every {
                eprintln!("{}", log_line(&bar));
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
        let line = log_line(&bar);
        assert!(line.starts_with("static-dmala: 50/200 (25%), elapsed 0:00:0"), "{line}");
        assert!(line.contains(", eta "), "{line}");
        bar.set_position(200);
        assert!(!log_line(&bar).contains("eta"), "{}", log_line(&bar));
    }

    #[test]
    fn the_logging_thread_ends_with_the_bar() {
        let bar = ProgressBar::hidden();
        bar.set_length(3);
        log_lines(&bar, Duration::from_millis(10));
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
