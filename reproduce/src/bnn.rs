//! Binary Bayesian neural networks (paper 000 §7.4 and App. I.5, Tables 2 and 4; spec `reproduction.md`
//! §3.6): data sets, the official protocol (50 particles, θ₀ ~ Bernoulli(½), metrics every 5
//! steps), the metrics and the tables' summaries. The model is `dlp_models::BnnModel`.
//!
//! Metrics as the official `bayesian_nn.py`: "training log-likelihood" = −mean over particles
//! of the per-particle training MSE (no τ); "test RMSE" = √(mean over test points of
//! (mean over particles of ŷ − y)²), the ensemble prediction's error.

use crate::args::SamplerSpec;
use anyhow::{Context, Result, bail};
use dlp_core::{Observer, RunOptions, States, StepContext, StepInfo, Target, run_chains, setup_rng};
use dlp_models::BnnModel;
use dlp_models::bnn::Precision;
use dlp_models::samples::{Delimiter, read_number_matrix};
use dlp_samplers::{SamplerParams, build_sampler};
use dlp_tensor::candle_core::DType;
use dlp_tensor::{Device, TensorBnn};
use rand::RngExt;
use rand_distr::StandardNormal;
use rayon::prelude::*;
use std::path::PathBuf;

/// The official code's τ and hidden width, and the paper's stated width.
pub const TAU: f64 = 100.0;
/// H of the official code (all data sets).
pub const HIDDEN_CODE: usize = 100;

/// One data set's row of a paper table: name, four train log-likelihoods, their stds, four
/// test RMSEs, their stds.
pub type PaperRow = (&'static str, [f64; 4], [f64; 4], [f64; 4], [f64; 4]);

/// The paper's Table 2 (full batch): (data set, [LL Gibbs, GWG, DULA, DMALA], their stds,
/// [RMSE Gibbs, GWG, DULA, DMALA], their stds).
pub const TABLE2: [PaperRow; 4] = [
    (
        "compas",
        [-0.4063, -0.3729, -0.3590, -0.3394],
        [0.0016, 0.0019, 0.0003, 0.0016],
        [0.4718, 0.4757, 0.4879, 0.4879],
        [0.0022, 0.0008, 0.0024, 0.0003],
    ),
    (
        "news",
        [-0.2374, -0.2368, -0.2339, -0.2344],
        [0.0003, 0.0003, 0.0003, 0.0005],
        [0.1048, 0.1028, 0.0971, 0.0943],
        [0.0025, 0.0023, 0.0012, 0.0009],
    ),
    (
        "adult",
        [-0.4587, -0.4444, -0.3287, -0.3190],
        [0.0029, 0.0041, 0.0027, 0.0019],
        [0.4826, 0.4709, 0.3971, 0.3931],
        [0.0027, 0.0034, 0.0014, 0.0019],
    ),
    (
        "blog",
        [-0.3829, -0.3414, -0.2694, -0.2670],
        [0.0036, 0.0028, 0.0025, 0.0031],
        [0.4191, 0.3728, 0.3193, 0.3198],
        [0.0061, 0.0034, 0.0021, 0.0043],
    ),
];

/// The paper's Table 4 (stochastic DULA, B = 10, 100, 500, then full batch), same layout.
pub const TABLE4: [PaperRow; 4] = [
    (
        "compas",
        [-0.4288, -0.3689, -0.3603, -0.3590],
        [0.0052, 0.0027, 0.0007, 0.0019],
        [0.4929, 0.4864, 0.4848, 0.4879],
        [0.0052, 0.0037, 0.0015, 0.0024],
    ),
    (
        "news",
        [-0.2355, -0.2342, -0.2344, -0.2339],
        [0.0002, 0.0001, 0.0006, 0.0003],
        [0.1072, 0.0971, 0.0976, 0.0971],
        [0.0013, 0.0026, 0.0009, 0.0012],
    ),
    (
        "adult",
        [-0.3738, -0.3275, -0.3233, -0.3287],
        [0.0039, 0.0006, 0.0009, 0.0027],
        [0.4309, 0.3963, 0.3954, 0.3971],
        [0.0027, 0.0016, 0.0015, 0.0014],
    ),
    (
        "blog",
        [-0.3199, -0.2710, -0.2689, -0.2694],
        [0.0072, 0.0009, 0.0024, 0.0025],
        [0.3533, 0.3202, 0.3198, 0.3193],
        [0.0043, 0.0018, 0.0026, 0.0021],
    ),
];

/// A train/test split, features z-scored (features then target per row in the files).
pub struct BnnData {
    /// Data set name (`compas`, `adult`, `news`, `blog`, `synthetic`).
    pub name: String,
    /// Whether it is a synthetic stand-in (News, Blog, and the `--quick` data).
    pub stand_in: bool,
    /// Features per row.
    pub p: usize,
    /// Training features (N × p) and targets.
    pub x_train: Vec<f64>,
    /// Training targets.
    pub y_train: Vec<f64>,
    /// Test features.
    pub x_test: Vec<f64>,
    /// Test targets.
    pub y_test: Vec<f64>,
}

fn cache_dir() -> PathBuf {
    dlp_core::io::data_cache_dir()
}

fn read_split(name: &str, part: &str) -> Result<(Vec<f64>, Vec<f64>, usize)> {
    let path = cache_dir().join(format!("{name}-{part}.csv"));
    if !path.exists() {
        bail!("{} is missing: run `just data {name}` first (or set DLP_DATA_CACHE)", path.display());
    }
    let m = read_number_matrix(&path, Delimiter::Comma).with_context(|| format!("reading {}", path.display()))?;
    let p = m.d - 1;
    let (mut x, mut y) = (Vec::with_capacity(m.n * p), Vec::with_capacity(m.n));
    for row in m.values.chunks_exact(m.d) {
        x.extend_from_slice(&row[..p]);
        y.push(row[p]);
    }
    Ok((x, y, p))
}

/// A synthetic stand-in: N(0, 1) features, targets from a random ±1 teacher network with H = 8
/// (Bernoulli labels for classification, the noisy prediction clipped to [0, 1] for
/// regression), from a fixed seed.
pub fn stand_in(name: &str, n_train: usize, n_test: usize, p: usize, regression: bool, seed: u64) -> BnnData {
    let mut rng = setup_rng(seed);
    let h = 8;
    let d = (p + 2) * h + 1;
    let teacher_bits: Vec<u32> = (0..d).map(|_| rng.random_range(0..2)).collect();
    let teacher = BnnModel::new(d, p, h, 1.0, vec![0.0; p], vec![0.0]).expect("valid teacher shape");
    let mut make = |n: usize| {
        let x: Vec<f64> = (0..n * p).map(|_| rng.sample::<f64, _>(StandardNormal)).collect();
        let mut q = vec![0.0; n];
        teacher.predict(&teacher_bits, &x, &mut q);
        let y = q
            .iter()
            .map(|&v| {
                if regression {
                    (v + 0.1 * rng.sample::<f64, _>(StandardNormal)).clamp(0.0, 1.0)
                } else {
                    f64::from(rng.random::<f64>() < v)
                }
            })
            .collect();
        (x, y)
    };
    let (x_train, y_train) = make(n_train);
    let (x_test, y_test) = make(n_test);
    BnnData { name: name.into(), stand_in: true, p, x_train, y_train, x_test, y_test }
}

/// The data set `name`: COMPAS and Adult from `just data` (`data/cache`), News and Blog as
/// synthetic stand-ins of their shapes after the official preprocessing (News 31,398 train ×
/// 58, regression; Blog 42,620 train × 276 after dropping constant columns — sizes from the
/// spec's descriptions, stated as stand-ins), `synthetic` the small `--quick` stand-in.
pub fn load(name: &str) -> Result<BnnData> {
    Ok(match name {
        "compas" | "adult" => {
            let (x_train, y_train, p) = read_split(name, "train")?;
            let (x_test, y_test, pt) = read_split(name, "test")?;
            if p != pt {
                bail!("{name}: train has {p} features but test has {pt}");
            }
            BnnData { name: name.into(), stand_in: false, p, x_train, y_train, x_test, y_test }
        }
        "news" => stand_in("news", 31_398, 7_929, 58, true, 42),
        "blog" => stand_in("blog", 42_620, 7_624, 276, true, 43),
        "synthetic" => stand_in("synthetic", 300, 100, 5, false, 44),
        _ => bail!("unknown data set {name:?} (compas, adult, news, blog or synthetic)"),
    })
}

/// One checkpoint of a run.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Point {
    /// Sampler steps done.
    pub step: usize,
    /// −mean over particles of the training MSE.
    #[serde(with = "crate::results::lenient_f64")]
    pub train_ll: f64,
    /// RMSE of the ensemble mean prediction on the test set.
    #[serde(with = "crate::results::lenient_f64")]
    pub test_rmse: f64,
    /// Sampler seconds so far (the slowest task's).
    pub seconds: f64,
}

/// A task's states at every checkpoint (bits as bytes) and its sampler seconds there; the
/// metrics are computed afterwards in chain order, so they do not depend on how the runner
/// split the chains.
struct Snaps {
    every: usize,
    states: Vec<Vec<u8>>,
    seconds: Vec<f64>,
    /// Counts chain-steps (a clone of the table's bar; hidden outside it).
    bar: indicatif::ProgressBar,
}

impl Snaps {
    fn record(&mut self, positions: &[u32], seconds: f64) {
        self.states.push(positions.iter().map(|&b| b as u8).collect());
        self.seconds.push(seconds);
    }
}

impl Observer for Snaps {
    fn start(&mut self, _: usize, positions: &[u32]) {
        self.record(positions, 0.0);
    }

    fn observe(&mut self, ctx: &StepContext, states: States<'_>, info: &[StepInfo]) {
        self.bar.inc(info.len() as u64);
        if ctx.step.is_multiple_of(self.every) {
            self.record(states.positions(), ctx.step_seconds);
        }
    }
}

/// Training log-likelihood and test RMSE of the particles `states` (chains × d).
fn metrics(model: &BnnModel, data: &BnnData, states: &[u32]) -> (f64, f64) {
    let d = model.space().d;
    let n = (states.len() / d) as f64;
    let (mut mse, mut ens) = (0.0, vec![0.0; data.y_test.len()]);
    let (mut q, mut qt) = (vec![0.0; data.y_train.len()], vec![0.0; data.y_test.len()]);
    for theta in states.chunks_exact(d) {
        model.predict(theta, &data.x_train, &mut q);
        mse += q.iter().zip(&data.y_train).map(|(a, b)| (a - b) * (a - b)).sum::<f64>() / q.len() as f64;
        model.predict(theta, &data.x_test, &mut qt);
        ens.iter_mut().zip(&qt).for_each(|(s, v)| *s += v);
    }
    let se: f64 = ens.iter().zip(&data.y_test).map(|(p, y)| (p / n - y) * (p / n - y)).sum();
    (-mse / n, (se / data.y_test.len() as f64).sqrt())
}

/// One run's configuration.
#[derive(Clone, Copy, Debug)]
pub struct RunConfig {
    /// Hidden units H.
    pub hidden: usize,
    /// Particles (chains).
    pub chains: usize,
    /// Sampler steps.
    pub steps: usize,
    /// Steps between metrics.
    pub every: usize,
    /// Seed.
    pub seed: u64,
    /// Arithmetic of the network (native kernel and candle dtype alike).
    pub precision: Precision,
}

/// The BNN on the training split with H = `hidden` and τ = 100.
pub fn model(data: &BnnData, hidden: usize) -> Result<BnnModel> {
    let d = (data.p + 2) * hidden + 1;
    Ok(BnnModel::new(d, data.p, hidden, TAU, data.x_train.clone(), data.y_train.clone())?)
}

/// The `--precision` and `--device` flags: the arithmetic, and the candle device (`None`: the
/// native CPU kernel of `BnnModel`).
pub fn backend(precision: &str, device: Option<&str>) -> Result<(Precision, Option<Device>)> {
    let p = match precision {
        "f32" => Precision::F32,
        "f64" => Precision::F64,
        other => bail!("--precision: {other:?} is not f32 or f64"),
    };
    Ok((p, device.map(dlp_tensor::device).transpose().context("--device")?))
}

/// The flags `table2` and `table4` share: data sets, network size, protocol, arithmetic,
/// device and `--resume`.
#[derive(clap::Args, Debug)]
pub struct TableArgs {
    /// Data sets: compas, adult, news, blog (the last two synthetic stand-ins) [default:
    /// compas; --quick: synthetic].
    #[arg(long)]
    pub datasets: Option<String>,
    /// Hidden units H [code: 100 (default); paper text: 500; --quick: 4].
    #[arg(long)]
    pub hidden: Option<usize>,
    /// Seeds per cell (seed, seed+1, …) [default: 5, 1 with adult; --quick: 2].
    #[arg(long)]
    pub seeds: Option<usize>,
    /// Particles (chains) [default: 50; --quick: 8].
    #[arg(long)]
    pub chains: Option<usize>,
    /// Sampler steps [default: 1000; --quick: 40].
    #[arg(long)]
    pub steps: Option<usize>,
    /// Steps between metrics.
    #[arg(long, default_value_t = 5)]
    pub every: usize,
    /// Arithmetic of the network: f32 (the official code's; about half the cost) or f64.
    #[arg(long, default_value = "f32")]
    pub precision: String,
    /// Evaluate the network with candle on this device (`cpu`, `cuda`, `cuda:N`; CUDA needs a
    /// build with `--features cuda`) instead of the native CPU kernel (the default, fastest on a CPU).
    #[arg(long)]
    pub device: Option<String>,
    /// Continue an interrupted run in the same --out: the (data set, column, seed) cells it
    /// finished (`cells/`) are read back, the rest run; the files equal an uninterrupted run's.
    #[arg(long)]
    pub resume: bool,
}

/// [`TableArgs`] read: what [`table`] needs besides the columns.
pub struct TableSetup {
    /// Data set names, as given.
    pub names: Vec<String>,
    /// The run's configuration.
    pub rc: RunConfig,
    /// Seeds per cell.
    pub seeds: usize,
    /// The candle device (`None`: the native CPU kernel).
    pub device: Option<Device>,
}

impl TableArgs {
    /// Reads and checks the flags (`c`: `--quick`, `--seed`); loads nothing, so a bad flag is
    /// reported before any data set is read.
    pub fn setup(&self, c: &crate::CommonArgs) -> Result<TableSetup> {
        let names: Vec<String> =
            crate::parse_list(&c.pick(self.datasets.clone(), "compas".into(), "synthetic".into()), "datasets")?;
        let (precision, device) = backend(&self.precision, self.device.as_deref())?;
        let rc = RunConfig {
            hidden: c.pick(self.hidden, HIDDEN_CODE, 4),
            chains: c.pick(self.chains, 50, 8),
            steps: c.pick(self.steps, 1000, 40),
            every: self.every,
            seed: c.seed,
            precision,
        };
        // Adult costs ~20× COMPAS per step (paper/table2.md, Cost): five seeds would pass
        // 2 hours on 2 cores, so its default is one seed.
        let seeds = c.pick(self.seeds, if names.iter().any(|n| n == "adult") { 1 } else { 5 }, 2);
        if rc.hidden == 0 || rc.chains == 0 || rc.steps == 0 || rc.every == 0 || seeds == 0 || names.is_empty() {
            bail!("--hidden, --chains, --steps, --every, --seeds must be positive and --datasets non-empty");
        }
        Ok(TableSetup { names, rc, seeds, device })
    }

    /// Starts the run `name` (with `--resume`) and prints each data set's shape and d.
    pub fn start(&self, name: &str, c: &crate::CommonArgs, datasets: &[BnnData], hidden: usize) -> Result<crate::Run> {
        let mut run = crate::Run::start(name, c)?;
        run.resume = self.resume;
        for d in datasets {
            let stand_in = if d.stand_in { " (synthetic stand-in)" } else { "" };
            let (n, p, t, dim) = (d.y_train.len(), d.p, d.y_test.len(), (d.p + 2) * hidden + 1);
            println!("{name}: {}{stand_in}: {n} train × {p} features, {t} test; d = {dim}", d.name);
        }
        Ok(run)
    }
}

/// Runs `sampler` (with minibatch `batch` for `sg-*`) from θ₀ ~ Bernoulli(½) on `model` and
/// returns the metric curve.
pub fn run(
    data: &BnnData,
    model: &BnnModel,
    sampler: &SamplerSpec,
    batch: Option<usize>,
    c: &RunConfig,
) -> Result<Vec<Point>> {
    run_on(data, model, model, sampler, batch, c, &indicatif::ProgressBar::hidden())
}

/// [`run`] with the chains sampling `target` (the same network, e.g. a [`TensorBnn`]) while
/// the metrics use `model`'s predictions; `bar` counts chain-steps.
pub fn run_on(
    data: &BnnData,
    model: &BnnModel,
    target: &dyn Target,
    sampler: &SamplerSpec,
    batch: Option<usize>,
    c: &RunConfig,
    bar: &indicatif::ProgressBar,
) -> Result<Vec<Point>> {
    let params = SamplerParams { step_size: sampler.step_size, batch_size: batch, ..Default::default() };
    let s = build_sampler(&sampler.name, &params)?;
    let d = model.space().d;
    let mut rng = setup_rng(dlp_core::rng::derive_seed(c.seed, &[0xb11]));
    let x0: Vec<u32> = (0..c.chains * d).map(|_| rng.random_range(0..2)).collect();
    let options = RunOptions { seed: c.seed, threads: 0, chains_per_task: 0 };
    let out = run_chains(s.as_ref(), target, &x0, c.steps, &options, |_, _| Snaps {
        every: c.every,
        states: Vec::new(),
        seconds: Vec::new(),
        bar: bar.clone(),
    })?;
    let k = out.observers[0].states.len();
    // Checkpoints in parallel, chains in order within each: thread-independent sums.
    Ok((0..k)
        .into_par_iter()
        .map(|i| {
            let states: Vec<u32> =
                out.observers.iter().flat_map(|o| o.states[i].iter().map(|&b| u32::from(b))).collect();
            let (train_ll, test_rmse) = metrics(model, data, &states);
            let seconds = out.observers.iter().map(|o| o.seconds[i]).fold(0.0, f64::max);
            Point { step: i * c.every, train_ll, test_rmse, seconds }
        })
        .collect())
}

/// One column of a table: a label, the sampler and its minibatch size (`None`: full batch).
pub struct Column {
    /// Column label (`DMALA`, `B=10`).
    pub label: String,
    /// The sampler.
    pub sampler: SamplerSpec,
    /// Minibatch size of `sg-*` samplers.
    pub batch: Option<usize>,
    /// Which of the paper table's four columns this one is, if any.
    pub paper: Option<usize>,
}

/// Runs every (data set, column, seed), then writes `curves.csv` (tidy, one row per
/// checkpoint), `summary.json` (ours beside the paper's `paper` table), `table.md` and the
/// figure (training log-likelihood vs step, mean over seeds, one panel per data set). The
/// chains sample a candle [`TensorBnn`] on `device` when one is given, else the native model.
#[allow(clippy::too_many_arguments)] // one call per table binary; a struct would only rename them
pub fn table(
    out_run: &crate::Run,
    title: &str,
    datasets: &[BnnData],
    columns: &[Column],
    seeds: usize,
    c: &RunConfig,
    device: Option<&Device>,
    paper: &[PaperRow],
) -> Result<serde_json::Value> {
    use crate::plot::{Figure, Panel, Series};
    use serde_json::json;
    let chain_steps = (datasets.len() * columns.len() * seeds * c.chains * c.steps) as u64;
    let backend = device.map_or("native".to_string(), |d| format!("candle {}", dlp_tensor::device_name(d)));
    let bar = out_run.progress(chain_steps, title);
    let (mut rows, mut summary, mut panels) = (Vec::new(), Vec::new(), Vec::new());
    let mut md = format!(
        "| data set | metric | {} |\n|---|---|{}\n",
        columns.iter().map(|k| k.label.as_str()).collect::<Vec<_>>().join(" | "),
        "---|".repeat(columns.len())
    );
    for data in datasets {
        let m = model(data, c.hidden)?.with_precision(c.precision);
        let dtype = if c.precision == Precision::F32 { DType::F32 } else { DType::F64 };
        let tensor = device.map(|dev| TensorBnn::from_bnn(&m, dev, dtype)).transpose()?;
        let target: &dyn Target = match &tensor {
            Some(t) => t,
            None => &m,
        };
        let tag = if data.stand_in { format!("{} (synthetic stand-in)", data.name) } else { data.name.clone() };
        let paper_row = paper.iter().find(|r| r.0 == data.name);
        let (mut ll_cells, mut rmse_cells, mut series) = (Vec::new(), Vec::new(), Vec::new());
        for col in columns {
            let mut curves = Vec::new();
            for i in 0..seeds {
                let cfg = RunConfig { seed: out_run.seed() + i as u64, ..*c };
                bar.set_message(format!("{title}: {} {} seed {}", data.name, col.label, cfg.seed));
                // One cell per (data set, column, seed): `--resume` continues an interrupted
                // table from the cells it finished (an Adult seed is ~30 min of 4 cells).
                let batch = col.batch.map_or("full".into(), |b| format!("b{b}"));
                let key = format!("{}_{}_{batch}_s{}", data.name, col.sampler.label(), cfg.seed);
                let identity = json!({"dataset": data.name, "rows": data.y_train.len(), "p": data.p,
                    "sampler": col.sampler.name, "step_size": col.sampler.step_size, "batch": col.batch,
                    "seed": cfg.seed, "hidden": cfg.hidden, "chains": cfg.chains, "steps": cfg.steps,
                    "every": cfg.every, "precision": format!("{:?}", cfg.precision), "backend": backend});
                let mut ran = false;
                let curve = out_run.cell(&key, &identity, || {
                    ran = true;
                    run_on(data, &m, target, &col.sampler, col.batch, &cfg, &bar)
                })?;
                if !ran {
                    bar.inc((cfg.chains * cfg.steps) as u64);
                }
                for p in &curve {
                    rows.push(vec![
                        data.name.clone(),
                        col.label.clone(),
                        col.sampler.name.clone(),
                        col.batch.map_or("full".into(), |b| b.to_string()),
                        cfg.seed.to_string(),
                        p.step.to_string(),
                        format!("{:.6}", p.train_ll),
                        format!("{:.6}", p.test_rmse),
                        format!("{:.3}", p.seconds),
                    ]);
                }
                curves.push(curve);
            }
            let last =
                |f: fn(&Point) -> f64| curves.iter().map(|cv| f(cv.last().expect("a curve"))).collect::<Vec<_>>();
            let (ll, ll_sd) = mean_std(&last(|p| p.train_ll));
            let (rmse, rmse_sd) = mean_std(&last(|p| p.test_rmse));
            let secs = mean_std(&last(|p| p.seconds)).0;
            let cell = paper_row.zip(col.paper);
            let paper_json = cell.map(|(r, ci)| json!({"train_ll": r.1[ci], "train_ll_std": r.2[ci], "test_rmse": r.3[ci], "test_rmse_std": r.4[ci]}));
            summary.push(json!({"dataset": data.name, "stand_in": data.stand_in, "column": col.label, "sampler": col.sampler.name,
                "step_size": col.sampler.step_size, "batch": col.batch, "seeds": seeds, "train_ll": ll, "train_ll_std": ll_sd,
                "test_rmse": rmse, "test_rmse_std": rmse_sd, "sampler_seconds_mean": secs, "paper": paper_json}));
            let paper_cell = |v: f64, sd: f64| format!(" (paper {v:.4}±{sd:.4})");
            ll_cells.push(format!(
                "{ll:.4}±{ll_sd:.4}{}",
                cell.map_or(String::new(), |(r, ci)| paper_cell(r.1[ci], r.2[ci]))
            ));
            rmse_cells.push(format!(
                "{rmse:.4}±{rmse_sd:.4}{}",
                cell.map_or(String::new(), |(r, ci)| paper_cell(r.3[ci], r.4[ci]))
            ));
            let mean_curve = (0..curves[0].len())
                .map(|k| (curves[0][k].step as f64, curves.iter().map(|cv| cv[k].train_ll).sum::<f64>() / seeds as f64))
                .collect();
            series.push(Series { label: col.label.clone(), points: mean_curve });
        }
        md.push_str(&format!("| {tag} | train log-lik ↑ | {} |\n", ll_cells.join(" | ")));
        md.push_str(&format!("| {tag} | test RMSE ↓ | {} |\n", rmse_cells.join(" | ")));
        panels.push(Panel::lines(tag, "sampler step", "training log-likelihood (−MSE)", series, vec![]));
    }
    bar.finish_and_clear();
    let header = "dataset,column,sampler,batch,seed,step,train_ll,test_rmse,sampler_seconds";
    out_run.write_csv("curves.csv", header, &rows)?;
    out_run.write_bytes("table.md", md.as_bytes())?;
    let labels = columns.iter().map(|k| k.label.clone()).collect();
    let caption =
        format!("{title}: H = {}, {} chains, {} steps, {seeds} seeds (mean over seeds)", c.hidden, c.chains, c.steps);
    out_run.write_figure(&out_run.name.clone(), &Figure { caption, labels, panels })?;
    print!("{md}");
    let out = json!({"hidden": c.hidden, "chains": c.chains, "steps": c.steps, "every": c.every, "seeds": seeds, "tau": TAU,
        "precision": format!("{:?}", c.precision).to_lowercase(), "backend": backend, "rows": summary});
    out_run.write_json("summary.json", &out)?;
    Ok(out)
}

/// Mean and sample standard deviation (0 for one value).
pub fn mean_std(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let s = if v.len() > 1 { (v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0)).sqrt() } else { 0.0 };
    (m, s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dlp_core::TargetExt;

    #[test]
    fn metrics_match_a_direct_computation_and_do_not_depend_on_threads() {
        let data = load("synthetic").unwrap();
        let m = model(&data, 3).unwrap();
        let c = RunConfig { hidden: 3, chains: 4, steps: 10, every: 5, seed: 1, precision: Precision::F64 };
        let spec = SamplerSpec::new("dmala", Some(0.1));
        let a = run(&data, &m, &spec, None, &c).unwrap();
        assert_eq!(a.iter().map(|p| p.step).collect::<Vec<_>>(), [0, 5, 10]);
        // Step 0: the initial states, recomputed here without the observer.
        let d = m.space().d;
        let mut rng = setup_rng(dlp_core::rng::derive_seed(1, &[0xb11]));
        let x0: Vec<u32> = (0..4 * d).map(|_| rng.random_range(0..2)).collect();
        let mut ll = 0.0;
        let mut ens = vec![0.0; data.y_test.len()];
        for th in x0.chunks(d) {
            let f = m.log_density(th).unwrap();
            ll += f / TAU / 4.0; // f = −τ · MSE on the full training set
            let mut q = vec![0.0; data.y_test.len()];
            m.predict(th, &data.x_test, &mut q);
            ens.iter_mut().zip(&q).for_each(|(s, v)| *s += v / 4.0);
        }
        let rmse =
            (ens.iter().zip(&data.y_test).map(|(p, y)| (p - y) * (p - y)).sum::<f64>() / ens.len() as f64).sqrt();
        assert!((a[0].train_ll - ll).abs() < 1e-12 && (a[0].test_rmse - rmse).abs() < 1e-12);
        let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        let b = pool.install(|| run(&data, &m, &spec, None, &c).unwrap());
        for (p, q) in a.iter().zip(&b) {
            assert_eq!((p.train_ll, p.test_rmse), (q.train_ll, q.test_rmse));
        }
    }
}
