//! Shared plumbing of the reproduction binaries (`src/bin/<name>.rs`): common arguments, the
//! results directory with atomic writes, `meta.json`, progress bars, an observer for
//! running-mean errors, and line/box plots (plotters, pure Rust, DejaVu font embedded).
//!
//! A binary is config → loop over crate calls → files: it parses `Args` (flattening
//! [`CommonArgs`]), calls [`Run::start`], runs samplers through `dlp_core::run_chains`, and
//! writes CSV/JSON/figures through [`Run`]. The maths lives in the library crates.

use anyhow::{Context, Result, anyhow};
use dlp_core::stats::{RunningMean, log_rmse};
use dlp_core::{Observer, Space, States, StepContext, StepInfo};
use plotters::coord::Shift;
use plotters::prelude::*;
use serde::Serialize;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Arguments every reproduction binary takes (`#[command(flatten)]`).
#[derive(clap::Args, Debug, Clone, Serialize)]
pub struct CommonArgs {
    /// Master seed (chains use streams 1.., setup work stream 0).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// A small version of the experiment that finishes in seconds (for tests and CI).
    #[arg(long)]
    pub quick: bool,
    /// Worker threads (default: one per core). Results do not depend on it; timings do.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Output directory (default `results/<name>`, relative to the current directory).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// One run of a reproduction binary: where its files go and what `meta.json` records.
pub struct Run {
    /// Name of the experiment (`fig3`).
    pub name: String,
    /// The results directory.
    pub dir: PathBuf,
    /// The common arguments it was started with.
    pub common: CommonArgs,
    started: Instant,
    started_unix: u64,
}

impl Run {
    /// Creates the results directory, sizes the global thread pool and registers the plot
    /// font. Call once, first thing in `main`.
    pub fn start(name: &str, common: &CommonArgs) -> Result<Run> {
        let dir = common.out.clone().unwrap_or_else(|| Path::new("results").join(name));
        std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        if let Some(t) = common.threads {
            if t == 0 {
                return Err(anyhow!("--threads must be at least 1"));
            }
            // Fails only if the pool was already built (a second Run in one process).
            let _ = rayon::ThreadPoolBuilder::new().num_threads(t).build_global();
        }
        register_fonts();
        let started_unix =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        Ok(Run { name: name.to_string(), dir, common: common.clone(), started: Instant::now(), started_unix })
    }

    /// Path of `file` inside the results directory.
    pub fn path(&self, file: &str) -> PathBuf {
        self.dir.join(file)
    }

    /// Writes `bytes` to `file` in the results directory atomically.
    pub fn write_bytes(&self, file: &str, bytes: &[u8]) -> Result<PathBuf> {
        let path = self.path(file);
        atomic_write(&path, bytes).with_context(|| format!("cannot write {}", path.display()))?;
        Ok(path)
    }

    /// Writes a pretty-printed JSON file.
    pub fn write_json(&self, file: &str, value: &impl Serialize) -> Result<PathBuf> {
        let mut text = serde_json::to_string_pretty(value)?;
        text.push('\n');
        self.write_bytes(file, text.as_bytes())
    }

    /// Writes a CSV file with `header` and `rows` (fields quoted when they need it).
    pub fn write_csv(&self, file: &str, header: &[&str], rows: &[Vec<String>]) -> Result<PathBuf> {
        let mut text = csv_line(header.iter().copied());
        for row in rows {
            text.push_str(&csv_line(row.iter().map(String::as_str)));
        }
        self.write_bytes(file, text.as_bytes())
    }

    /// Draws `figure` to `<stem>.svg` and `<stem>.png`.
    pub fn write_figure(&self, stem: &str, figure: &Figure) -> Result<()> {
        let size = figure.size();
        let mut svg = String::new();
        draw_figure(SVGBackend::with_string(&mut svg, size).into_drawing_area(), figure)?;
        self.write_bytes(&format!("{stem}.svg"), svg.as_bytes())?;
        // The bitmap backend picks the encoder from the extension, so the temporary file
        // keeps `.png`; it is renamed over the target like every other file.
        let target = self.path(&format!("{stem}.png"));
        let tmp = self.path(&format!(".{stem}.{}.tmp.png", std::process::id()));
        let drawn = draw_figure(BitMapBackend::new(&tmp, size).into_drawing_area(), figure)
            .and_then(|()| std::fs::rename(&tmp, &target).map_err(Into::into));
        if drawn.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        drawn.with_context(|| format!("cannot write {}", target.display()))
    }

    /// Writes `meta.json`: seed, the full configuration, git revision, crate versions,
    /// threads, machine and timing.
    pub fn write_meta(&self, config: &impl Serialize) -> Result<PathBuf> {
        let meta = json!({
            "experiment": self.name,
            "command_line": std::env::args().collect::<Vec<_>>(),
            "seed": self.common.seed,
            "quick": self.common.quick,
            "config": config,
            "threads": {
                "requested": self.common.threads,
                "used": rayon::current_num_threads(),
            },
            "git": git_info(),
            "versions": versions(),
            "machine": machine(),
            "started_unix": self.started_unix,
            "wall_seconds": self.started.elapsed().as_secs_f64(),
        });
        self.write_json("meta.json", &meta)
    }

    /// A progress bar on stderr (hidden when stderr is not a terminal).
    pub fn progress(&self, len: u64, message: &str) -> indicatif::ProgressBar {
        let bar = indicatif::ProgressBar::with_draw_target(Some(len), indicatif::ProgressDrawTarget::stderr());
        if let Ok(style) =
            indicatif::ProgressStyle::with_template("{msg:>12} [{elapsed_precise}] {wide_bar} {percent:>3}%")
        {
            bar.set_style(style);
        }
        bar.set_message(message.to_string());
        bar
    }

    /// Seconds since [`Run::start`].
    pub fn elapsed(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }
}

pub use dlp_core::io::atomic_write;

/// The `main` of every reproduction binary: parse the arguments, run, and on failure print one
/// `error: …` line and exit 2 (bad arguments or an impossible configuration). Files are
/// written atomically, so a failed run leaves no half-written output.
pub fn main_with<A: clap::Parser>(run: impl FnOnce(A) -> Result<()>) {
    if let Err(e) = run(A::parse()) {
        eprintln!("error: {e:#}");
        std::process::exit(2);
    }
}

/// One CSV line; a field is quoted when it holds a comma, quote or newline.
fn csv_line<'a>(fields: impl Iterator<Item = &'a str>) -> String {
    let mut line = fields
        .map(|f| if f.contains([',', '"', '\n']) { format!("\"{}\"", f.replace('"', "\"\"")) } else { f.to_string() })
        .collect::<Vec<_>>()
        .join(",");
    line.push('\n');
    line
}

/// `git rev-parse HEAD` and whether tracked files differ from it, if git is available.
fn git_info() -> Value {
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
fn versions() -> Value {
    let mut map = serde_json::Map::new();
    map.insert("dlp".into(), json!(env!("CARGO_PKG_VERSION")));
    for p in ["rand", "rand_chacha", "rayon", "plotters", "clap", "serde_json"] {
        map.insert(p.into(), json!(locked_version(CARGO_LOCK, p)));
    }
    Value::Object(map)
}

/// OS, architecture, CPU model and count, host name.
fn machine() -> Value {
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

// ------------------------------------------------------------------------------------------
// Running-mean error observer

/// What a [`MeanErrorObserver`] recorded at one checkpoint of one task.
#[derive(Clone, Debug)]
pub struct Checkpoint {
    /// Steps done (0 = the initial states).
    pub step: usize,
    /// Σ over coordinates of (running mean − truth)², one entry per chain of the task
    /// (kept per chain so that merged sums do not depend on how chains were split in tasks).
    pub squared_errors: Vec<f64>,
    /// Seconds the task had spent inside `step` so far.
    pub step_seconds: f64,
}

/// Observer of one task for the Ising-type experiments (spec §3.2): running means of the
/// user values over steps 0..t against a truth vector every `every` steps, acceptance and
/// changed-coordinate counts, and (if the task holds chain 0) every state of chain 0.
pub struct MeanErrorObserver<'a> {
    space: &'a Space,
    truth: &'a [f64],
    every: usize,
    last: usize,
    means: RunningMean,
    /// Checkpoints in step order.
    pub checkpoints: Vec<Checkpoint>,
    /// States of chain 0 after each step (steps 1..), `steps × d`; empty for other tasks.
    pub chain0: Vec<u32>,
    record_chain0: bool,
    /// Accepted proposals over all chains and steps.
    pub accepted: u64,
    /// Σ of `n_changed` over all chains and steps.
    pub changed: u64,
    /// Chain-steps observed.
    pub chain_steps: u64,
    /// Total seconds inside `step` at the end.
    pub step_seconds: f64,
    bar: indicatif::ProgressBar,
    pending: u64,
}

impl<'a> MeanErrorObserver<'a> {
    /// Observer for a task of `n_chains` chains starting at global chain `first_chain`, of a
    /// run of `last` steps; `bar` counts chain-steps.
    pub fn new(
        space: &'a Space,
        truth: &'a [f64],
        every: usize,
        last: usize,
        (first_chain, n_chains): (usize, usize),
        bar: indicatif::ProgressBar,
    ) -> Self {
        MeanErrorObserver {
            space,
            truth,
            every: every.max(1),
            last,
            means: RunningMean::new(n_chains * space.d),
            checkpoints: Vec::new(),
            chain0: Vec::new(),
            record_chain0: first_chain == 0,
            accepted: 0,
            changed: 0,
            chain_steps: 0,
            step_seconds: 0.0,
            bar,
            pending: 0,
        }
    }

    fn add(&mut self, positions: &[u32]) {
        let space = self.space;
        self.means.add(positions, |c| space.value(c) as f64);
    }

    fn checkpoint(&mut self, step: usize, step_seconds: f64) {
        let d = self.space.d;
        let means: Vec<f64> = self.means.means().collect();
        let truth = self.truth;
        let squared_errors =
            means.chunks(d).map(|m| RunningMean { count: 1, sums: m.to_vec() }.squared_error_sum(truth)).collect();
        self.checkpoints.push(Checkpoint { step, squared_errors, step_seconds });
    }
}

impl Observer for MeanErrorObserver<'_> {
    fn start(&mut self, _first_chain: usize, positions: &[u32]) {
        self.add(positions);
        self.checkpoint(0, 0.0);
    }

    fn observe(&mut self, ctx: &StepContext, states: States<'_>, info: &[StepInfo]) {
        let positions = states.positions();
        self.add(positions);
        for i in info {
            self.accepted += i.accepted as u64;
            self.changed += i.n_changed as u64;
        }
        self.chain_steps += info.len() as u64;
        self.step_seconds = ctx.step_seconds;
        if self.record_chain0 {
            self.chain0.extend_from_slice(&positions[..self.space.d]);
        }
        if ctx.step.is_multiple_of(self.every) || ctx.step == self.last {
            self.checkpoint(ctx.step, ctx.step_seconds);
        }
        self.pending += info.len() as u64;
        if self.pending >= 8192 || ctx.step == self.last {
            self.bar.inc(self.pending);
            self.pending = 0;
        }
    }
}

/// One point of a merged error curve.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct CurvePoint {
    /// Steps done.
    pub step: usize,
    /// log RMSE over all chains × coordinates.
    pub log_rmse: f64,
    /// Sampler seconds per chain: time inside `step` summed over tasks, over the chain count.
    pub seconds: f64,
}

/// Merges the tasks' checkpoints into one curve (all tasks checkpoint at the same steps).
pub fn merge_curves(observers: &[MeanErrorObserver<'_>], n_chains: usize, d: usize) -> Vec<CurvePoint> {
    let Some(first) = observers.first() else { return Vec::new() };
    (0..first.checkpoints.len())
        .map(|k| {
            // Summed chain by chain in global order: identical for any task split.
            let sse = observers.iter().flat_map(|o| o.checkpoints[k].squared_errors.iter()).fold(0.0, |a, b| a + b);
            let secs: f64 = observers.iter().map(|o| o.checkpoints[k].step_seconds).sum();
            CurvePoint {
                step: first.checkpoints[k].step,
                log_rmse: log_rmse(sse, n_chains * d),
                seconds: secs / n_chains as f64,
            }
        })
        .collect()
}

// ------------------------------------------------------------------------------------------
// Plots

/// A named curve.
#[derive(Clone, Debug)]
pub struct Series {
    /// Legend label; also picks the colour (see [`Figure::labels`]).
    pub label: String,
    /// (x, y) points; non-finite points are skipped.
    pub points: Vec<(f64, f64)>,
}

/// A horizontal dashed reference line.
#[derive(Clone, Debug)]
pub struct RefLine {
    /// Legend label.
    pub label: String,
    /// Height.
    pub y: f64,
}

/// Five-number summary of one box.
#[derive(Clone, Debug)]
pub struct BoxStats {
    /// Category label (also picks the colour).
    pub label: String,
    /// Minimum, first quartile, median, third quartile, maximum.
    pub five: [f64; 5],
}

/// One panel of a figure.
#[derive(Clone, Debug)]
pub enum Panel {
    /// Curves against a common x axis.
    Lines {
        /// Panel title.
        title: String,
        /// x axis description.
        x_label: String,
        /// y axis description.
        y_label: String,
        /// The curves.
        series: Vec<Series>,
        /// Reference lines.
        refs: Vec<RefLine>,
    },
    /// Box plots per category on a log10 y axis.
    Boxes {
        /// Panel title.
        title: String,
        /// y axis description.
        y_label: String,
        /// The boxes, in display order.
        boxes: Vec<BoxStats>,
    },
}

/// Panels side by side under a caption.
#[derive(Clone, Debug)]
pub struct Figure {
    /// Caption.
    pub caption: String,
    /// Labels in colour order, so a sampler has the same colour in every panel.
    pub labels: Vec<String>,
    /// The panels, left to right.
    pub panels: Vec<Panel>,
}

impl Figure {
    fn size(&self) -> (u32, u32) {
        (560 * self.panels.len().max(1) as u32, 460)
    }

    fn color(&self, label: &str) -> RGBColor {
        // Tableau 10: distinguishable and colour-blind tolerant.
        const PALETTE: [RGBColor; 10] = [
            RGBColor(31, 119, 180),
            RGBColor(255, 127, 14),
            RGBColor(44, 160, 44),
            RGBColor(214, 39, 40),
            RGBColor(148, 103, 189),
            RGBColor(140, 86, 75),
            RGBColor(227, 119, 194),
            RGBColor(127, 127, 127),
            RGBColor(188, 189, 34),
            RGBColor(23, 190, 207),
        ];
        let i = self.labels.iter().position(|l| l == label).unwrap_or(self.labels.len());
        PALETTE[i % PALETTE.len()]
    }
}

/// Registers the embedded DejaVu Sans under the family names plotters uses, so that text
/// renders without system font libraries (`toolchain.md` §6).
pub fn register_fonts() {
    for family in ["sans-serif", "serif", "monospace"] {
        let _ = plotters::style::register_font(family, FontStyle::Normal, dejavu::sans::regular());
        let _ = plotters::style::register_font(family, FontStyle::Bold, dejavu::sans::bold());
    }
}

/// Range of finite values padded by 5 % (or ±0.5 around a single value).
fn padded_range(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let (lo, hi) =
        values.filter(|v| v.is_finite()).fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(v), b.max(v)));
    if !lo.is_finite() {
        return 0.0..1.0;
    }
    let pad = if hi > lo { 0.05 * (hi - lo) } else { 0.5 };
    (lo - pad)..(hi + pad)
}

/// A tick label with at most three significant digits and no trailing zeros (`200`, `0.05`,
/// `6.31e4`).
pub fn short_number(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let a = v.abs();
    if !(1e-3..1e5).contains(&a) {
        return format!("{v:.2e}").replace(".00e", "e");
    }
    let decimals = (2 - a.log10().floor() as i32).max(0) as usize;
    let s = format!("{v:.decimals$}");
    if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s }
}

fn draw_figure<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, figure: &Figure) -> Result<()> {
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("plot: {e:?}");
    root.fill(&WHITE).map_err(e)?;
    let root = root.titled(&figure.caption, ("sans-serif", 20)).map_err(e)?;
    let areas = root.split_evenly((1, figure.panels.len().max(1)));
    for (area, panel) in areas.into_iter().zip(&figure.panels) {
        match panel {
            Panel::Lines { title, x_label, y_label, series, refs } => {
                let xs = series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
                let ys = series.iter().flat_map(|s| s.points.iter().map(|p| p.1)).chain(refs.iter().map(|r| r.y));
                let mut chart = ChartBuilder::on(&area)
                    .caption(title, ("sans-serif", 16))
                    .margin(10)
                    .x_label_area_size(40)
                    .y_label_area_size(55)
                    .build_cartesian_2d(padded_range(xs), padded_range(ys))
                    .map_err(e)?;
                chart
                    .configure_mesh()
                    .x_desc(x_label)
                    .y_desc(y_label)
                    .x_label_formatter(&|v| short_number(*v))
                    .light_line_style(WHITE)
                    .draw()
                    .map_err(e)?;
                for s in series {
                    let color = figure.color(&s.label);
                    let pts = s.points.iter().copied().filter(|p| p.0.is_finite() && p.1.is_finite());
                    chart
                        .draw_series(LineSeries::new(pts, color.stroke_width(2)))
                        .map_err(e)?
                        .label(s.label.clone())
                        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
                }
                for r in refs {
                    let (x0, x1) = (chart.x_range().start, chart.x_range().end);
                    let n = 40;
                    let dashes = (0..n).step_by(2).map(|k| {
                        let a = x0 + (x1 - x0) * k as f64 / n as f64;
                        let b = x0 + (x1 - x0) * (k + 1) as f64 / n as f64;
                        PathElement::new(vec![(a, r.y), (b, r.y)], BLACK.stroke_width(1))
                    });
                    chart
                        .draw_series(dashes)
                        .map_err(e)?
                        .label(r.label.clone())
                        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BLACK.stroke_width(1)));
                }
                chart
                    .configure_series_labels()
                    .background_style(WHITE.mix(0.8))
                    .border_style(BLACK)
                    .position(SeriesLabelPosition::UpperRight)
                    .label_font(("sans-serif", 12))
                    .draw()
                    .map_err(e)?;
            }
            Panel::Boxes { title, y_label, boxes } => {
                let logs = |b: &BoxStats| b.five.map(|v| v.log10());
                let ys = boxes.iter().flat_map(|b| logs(b).into_iter());
                let n = boxes.len().max(1);
                let names: Vec<String> = boxes.iter().map(|b| b.label.clone()).collect();
                let mut chart = ChartBuilder::on(&area)
                    .caption(title, ("sans-serif", 16))
                    .margin(10)
                    .x_label_area_size(40)
                    .y_label_area_size(70)
                    .build_cartesian_2d(-0.5..(n as f64 - 0.5), padded_range(ys))
                    .map_err(e)?;
                chart
                    .configure_mesh()
                    .disable_x_mesh()
                    .x_labels(n + 1)
                    .x_label_formatter(&|v| {
                        let i = v.round();
                        if (v - i).abs() < 1e-6 && i >= 0.0 {
                            names.get(i as usize).cloned().unwrap_or_default()
                        } else {
                            String::new()
                        }
                    })
                    .y_label_formatter(&|v| short_number(10f64.powf(*v)))
                    .light_line_style(WHITE)
                    .y_desc(y_label)
                    .draw()
                    .map_err(e)?;
                for (i, b) in boxes.iter().enumerate() {
                    let [lo, q1, med, q3, hi] = logs(b);
                    if ![lo, q1, med, q3, hi].iter().all(|v| v.is_finite()) {
                        continue;
                    }
                    let color = figure.color(&b.label);
                    let x = i as f64;
                    chart
                        .draw_series([Rectangle::new([(x - 0.3, q1), (x + 0.3, q3)], color.mix(0.3).filled())])
                        .map_err(e)?;
                    chart
                        .draw_series([Rectangle::new([(x - 0.3, q1), (x + 0.3, q3)], color.stroke_width(1))])
                        .map_err(e)?;
                    let seg = |a: (f64, f64), b: (f64, f64), w| PathElement::new(vec![a, b], color.stroke_width(w));
                    chart
                        .draw_series([
                            seg((x - 0.3, med), (x + 0.3, med), 2),
                            seg((x, lo), (x, q1), 1),
                            seg((x, q3), (x, hi), 1),
                            seg((x - 0.15, lo), (x + 0.15, lo), 1),
                            seg((x - 0.15, hi), (x + 0.15, hi), 1),
                        ])
                        .map_err(e)?;
                }
            }
        }
    }
    root.present().map_err(e)?;
    Ok(())
}

// ------------------------------------------------------------------------------------------
// Chain-0 series (Fig. 2 right, Fig. 7)

/// Chain 0's user values per coordinate after dropping the first `burn_in` fraction of the
/// steps a [`MeanErrorObserver`] run recorded (spec §3.2: ESS of chain 0, 10% burn-in): `d`
/// series of equal length, ready for `stats::ess_tfp` or `diagnostics::ess_bulk`.
pub fn chain0_series(observers: &[MeanErrorObserver<'_>], space: &Space, burn_in: f64) -> Vec<Vec<f64>> {
    let d = space.d;
    let chain0 = observers.iter().find(|o| o.record_chain0).map_or(&[][..], |o| &o.chain0[..]);
    let steps = chain0.len() / d;
    let burn = (burn_in * steps as f64) as usize;
    (0..d).map(|i| (burn..steps).map(|t| space.value(chain0[t * d + i]) as f64).collect()).collect()
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

    #[test]
    fn tick_labels_are_short() {
        assert_eq!(short_number(200.0), "200");
        assert_eq!(short_number(0.05), "0.05");
        assert_eq!(short_number(-2.5), "-2.5");
        assert_eq!(short_number(1234.5678), "1235");
        assert_eq!(short_number(63095.734), "63096");
        assert_eq!(short_number(250000.0), "2.50e5");
    }

    #[test]
    fn csv_fields_are_quoted_only_when_needed() {
        assert_eq!(csv_line(["a", "b,c", "d\"e"].into_iter()), "a,\"b,c\",\"d\"\"e\"\n");
    }

    #[test]
    fn figures_are_written_as_svg_and_png_with_text_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let common = CommonArgs { seed: 0, quick: true, threads: None, out: Some(dir.path().to_path_buf()) };
        let run = Run::start("test", &common).unwrap();
        let fig = Figure {
            caption: "caption".into(),
            labels: vec!["a".into(), "b".into()],
            panels: vec![
                Panel::Lines {
                    title: "lines".into(),
                    x_label: "x".into(),
                    y_label: "y".into(),
                    series: vec![Series { label: "a".into(), points: vec![(0.0, 1.0), (1.0, f64::NAN), (2.0, 0.5)] }],
                    refs: vec![RefLine { label: "floor".into(), y: 0.2 }],
                },
                Panel::Boxes {
                    title: "boxes".into(),
                    y_label: "z".into(),
                    boxes: vec![BoxStats { label: "b".into(), five: [1.0, 2.0, 3.0, 4.0, 5.0] }],
                },
            ],
        };
        run.write_figure("fig", &fig).unwrap();
        let svg = std::fs::read_to_string(dir.path().join("fig.svg")).unwrap();
        assert!(svg.contains("<svg") && svg.contains("caption") && svg.contains("floor"));
        let png = std::fs::read(dir.path().join("fig.png")).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        run.write_meta(&json!({"k": 1})).unwrap();
        let meta: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("meta.json")).unwrap()).unwrap();
        assert_eq!(meta["config"]["k"], 1);
        assert_eq!(meta["versions"]["dlp"], env!("CARGO_PKG_VERSION"));
        let mut names: Vec<String> =
            std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        names.sort();
        assert_eq!(names, ["fig.png", "fig.svg", "meta.json"]);
    }
}
