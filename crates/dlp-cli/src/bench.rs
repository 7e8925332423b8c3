//! `dlp bench`: times samplers on the paper's periodic Ising lattice and a 784×500 RBM and
//! prints one JSON object per configuration in the schema of the peer harness
//! (the peer harness README, "JSON lines"), so `summarize.py` puts `impl: "rust"` beside the
//! official PyTorch code, the numpy reference and the C floor.
//!
//! Per (sampler, model, L, σ, chains, threads): fresh chains from a fixed initial batch
//! (Ising: x_i ~ Bernoulli(σ(2b)), the peer's `init_dist`; RBM: Bernoulli(½)), one warm-up
//! run that also calibrates, then `repeats` runs of n steps filling `--budget` seconds,
//! through `dlp_core::run_chains` (so threads split the chains into tasks exactly as every
//! other run does). `seconds_per_step` is the median over repeats, `seconds_per_step_min`
//! the minimum. With several thread counts the final states of every count are compared
//! with the first (`identical_to_first_threads`). `--path generic` hides the model's
//! concrete type from the samplers (`dlp_samplers::fast::Generic`), timing the generic
//! kernels (`impl: "rust-generic"`).
//!
//! Step sizes come from the registry rows (`SamplerSpec::defaults`, per benchmark model).
//!
//! `--device NAME` (`cpu`, `cuda:N`) times the device-resident chains of `dlp-device`
//! instead, opened by name through the rows' device kernels (`dlp_device::device_samplers`):
//! DULA/DMALA on the lattice (`device_lattice`) and DULA, DMALA, random-scan `gibbs`
//! and `block-gibbs` on the RBM (`device_rbm`; no `bg-1`, whose per-step work `gibbs` does),
//! states and random numbers kept on the device, each timing bracketed by a device
//! synchronisation (`impl: "rust-cuda"`, or `"rust-device-cpu"` for the CPU twin).
//! Samplers without a device path are skipped with a note on stderr; `--threads` does not
//! apply (records carry `threads: 1`).

use clap::{Args as ClapArgs, ValueEnum};
use dlp_cli::CliError;
use dlp_core::math::sigmoid;
use dlp_core::{RunOptions, StepInfo, Target, run_chains, setup_rng};
use dlp_device::device_chains::DeviceChains;
use dlp_device::device_samplers;
use dlp_models::bnn::Precision;
use dlp_models::{BnnModel, IsingModel, Rbm};
use dlp_samplers::fast::Generic;
use dlp_samplers::registry::BenchModel;
use dlp_samplers::{SamplerParams, build_sampler};
use dlp_tensor::candle_core::Error as CandleError;
use rand::RngExt;
use serde_json::{Value, json};
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `dlp bench`.
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// Smoke sweep: L ∈ {10, 50}, chains ∈ {1, 256}, σ = 0.1, threads {1, 2}, RBM.
    #[arg(long)]
    quick: bool,
    /// Ising side lengths, comma-separated [default: 5,10,25,50,100].
    #[arg(long = "L", value_delimiter = ',')]
    l: Option<Vec<usize>>,
    /// Chain counts, comma-separated [default: 1,16,256].
    #[arg(long = "B", value_delimiter = ',')]
    chains: Option<Vec<usize>>,
    /// Ising couplings σ (J = σ·A), comma-separated [default: 0.1,0.25].
    #[arg(long, value_delimiter = ',')]
    sigmas: Option<Vec<f64>>,
    /// Thread counts, comma-separated [default: 1,2].
    #[arg(long, value_delimiter = ',')]
    threads: Option<Vec<usize>>,
    /// Samplers, comma-separated (dula, dmala, gwg, bg-1, or any registry name)
    /// [default: dula,dmala,gwg,bg-1].
    #[arg(long, value_delimiter = ',')]
    samplers: Option<Vec<String>>,
    /// Samplers on the RBM [default: --samplers if given, else
    /// dula,dmala,dula-f32,dmala-f32,gwg,bg-1].
    #[arg(long, value_delimiter = ',')]
    rbm_samplers: Option<Vec<String>>,
    /// Skip the RBM.
    #[arg(long)]
    no_rbm: bool,
    /// Only the RBM.
    #[arg(long)]
    rbm_only: bool,
    /// RBM chain counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "100")]
    rbm_chains: Vec<usize>,
    /// Untimed steps from the random start before timing the RBM (recorded as `burn_in`).
    /// The RBM fast paths cost O(M) per flipped coordinate, and a random start flips ~4×
    /// more coordinates per step than the stationary phase that dominates a long run; the
    /// reference's dense step costs the same either way. 0 times the first steps.
    #[arg(long, default_value_t = 100)]
    rbm_burn_in: usize,
    /// Also time the binary BNN of Tables 2 and 4 (COMPAS shape: N = 4,887, p = 13, H = 100,
    /// 50 chains; synthetic stand-in features, which do not change the cost) with
    /// `--bnn-samplers`.
    #[arg(long)]
    bnn: bool,
    /// Only the BNN (implies `--bnn`).
    #[arg(long)]
    bnn_only: bool,
    /// Samplers on the BNN [default: dmala,dula,gwg,gibbs, the Table 2 columns; α = 0.1].
    #[arg(long, value_delimiter = ',')]
    bnn_samplers: Option<Vec<String>>,
    /// Arithmetic of the BNN's kernel, comma-separated: f32 (the official code's, the default
    /// of `table2`/`table4`) and/or f64 (records carry `precision`).
    #[arg(long, value_delimiter = ',', default_value = "f32,f64")]
    bnn_precision: Vec<BnnPrecision>,
    /// Seconds of timed steps per configuration and thread count.
    #[arg(long, default_value_t = 0.05)]
    budget: f64,
    /// Master seed (model weights and initial states come from its stream 0).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Which kernels to time.
    #[arg(long, value_enum, default_value_t = PathChoice::Fast)]
    path: PathChoice,
    /// Write the JSON lines to this file (atomically) instead of stdout.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Time the device-resident chains on this device (`cpu`, `cuda:N`; module doc) instead
    /// of the host samplers.
    #[arg(long)]
    device: Option<String>,
}

/// Arithmetic of the BNN kernel (`dlp_models::bnn::Precision`).
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq)]
enum BnnPrecision {
    /// Single precision (the official code's).
    F32,
    /// Double precision.
    F64,
}

/// Kernel choice.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq)]
enum PathChoice {
    /// What `start()` picks (specialised kernels where the model qualifies): impl "rust".
    Fast,
    /// The generic kernels only: impl "rust-generic".
    Generic,
    /// Both, interleaved per configuration.
    Both,
}

/// The step size of `sampler` on the benchmark `model`: its registry row's
/// (`dlp_samplers::spec::Defaults`: the upstream experiment scripts' values, `ising_sample.py`,
/// `rbm_sample.py`; for DLMC and cyclical DMALA those of `fig3` on the lattice and of a short
/// acceptance check on the RBM, `paper/performance.md`).
fn step_size(model: BenchModel, sampler: &str) -> Option<f64> {
    dlp_samplers::registry::find(sampler).and_then(|(spec, _)| spec.defaults.step_size(model))
}

/// Steps of the run whose final states are compared across thread counts.
const IDENTITY_STEPS: usize = 8;

/// The Ising bias of the paper's experiments.
const ISING_BIAS: f64 = 0.2;
/// RBM shape of the peer harness.
const RBM_SHAPE: (usize, usize) = (784, 500);
/// The BNN timed by `--bnn`: COMPAS after the official preprocessing (N, p), the code's H,
/// the protocol's 50 chains.
const BNN_SHAPE: (usize, usize, usize, usize) = (4887, 13, 100, 50);

/// Runs `dlp bench`.
pub fn run(args: Args) -> Result<(), CliError> {
    let (ls, bs, sigmas, threads) = if args.quick {
        (vec![10, 50], vec![1, 256], vec![0.1], vec![1, 2])
    } else {
        (vec![5, 10, 25, 50, 100], vec![1, 16, 256], vec![0.1, 0.25], vec![1, 2])
    };
    let ls = args.l.clone().unwrap_or(ls);
    let bs = args.chains.clone().unwrap_or(bs);
    let sigmas = args.sigmas.clone().unwrap_or(sigmas);
    let threads = args.threads.clone().unwrap_or(threads);
    if threads.is_empty() || threads.contains(&0) || bs.contains(&0) || ls.contains(&0) || args.rbm_chains.contains(&0)
    {
        return Err(CliError::input("--threads, --B, --L and --rbm-chains take positive integers"));
    }
    if !(args.budget > 0.0 && args.budget.is_finite()) {
        return Err(CliError::input(format!("--budget must be a positive number of seconds, got {}", args.budget)));
    }
    let names = |v: &str| v.split(',').map(String::from).collect::<Vec<_>>();
    let samplers = args.samplers.clone().unwrap_or_else(|| names("dula,dmala,gwg,bg-1"));
    let rbm_samplers = args
        .rbm_samplers
        .clone()
        .or_else(|| args.samplers.clone())
        .unwrap_or_else(|| names("dula,dmala,dula-f32,dmala-f32,gwg,bg-1"));
    for s in samplers.iter().chain(&rbm_samplers) {
        let params = SamplerParams { step_size: Some(0.1), ..Default::default() };
        if build_sampler(s, &params).is_err() && build_sampler(s, &SamplerParams::default()).is_err() {
            return Err(CliError::input(format!("--samplers: unknown sampler {s:?}")));
        }
    }
    let paths: &[bool] = match args.path {
        PathChoice::Fast => &[true],
        PathChoice::Generic => &[false],
        PathChoice::Both => &[true, false],
    };
    let mut sink = Sink::new(args.out.clone());
    if let Some(name) = &args.device {
        let device = dlp_tensor::device(name).map_err(|e| CliError::input(format!("--device: {e}")))?;
        // The samplers with a device path (`bg-1` has none: its random-permutation scan is
        // timed by `gibbs`, random-scan single-site Gibbs, the same per-step work).
        let samplers = args.samplers.clone().unwrap_or_else(|| names("dula,dmala"));
        let rbm_samplers = args
            .rbm_samplers
            .clone()
            .or_else(|| args.samplers.clone())
            .unwrap_or_else(|| names("dula,dmala,gibbs,block-gibbs"));
        run_device(&args, &mut sink, &device, &ls, &bs, &sigmas, &samplers, &rbm_samplers)?;
        return sink.finish();
    }
    if args.bnn || args.bnn_only {
        let (n, p, h, chains) = BNN_SHAPE;
        let d = (p + 2) * h + 1;
        let mut rng = setup_rng(args.seed);
        let x: Vec<f64> = (0..n * p).map(|_| 2.0 * rng.random::<f64>() - 1.0).collect();
        let y: Vec<f64> = (0..n).map(|_| f64::from(rng.random::<f64>() < 0.5)).collect();
        let model = BnnModel::new(d, p, h, 100.0, x, y).map_err(|e| CliError::input(e.to_string()))?;
        let x0 = bernoulli_rows(args.seed, d, chains, 0.5);
        for &precision in &args.bnn_precision {
            let (model, label) = match precision {
                BnnPrecision::F32 => (model.clone().with_precision(Precision::F32), "f32"),
                BnnPrecision::F64 => (model.clone(), "f64"),
            };
            for name in args.bnn_samplers.clone().unwrap_or_else(|| names("dmala,dula,gwg,gibbs")) {
                let base = json!({"model": "bnn", "n": n, "p": p, "hidden": h, "dims": d, "precision": label});
                time_config(&args, &mut sink, &model, &name, "bnn", base, &x0, &threads, true)?;
            }
        }
        if args.bnn_only {
            return sink.finish();
        }
    }
    if !args.rbm_only {
        for &sigma in &sigmas {
            for &l in &ls {
                let model = IsingModel::paper_lattice(l, sigma, ISING_BIAS);
                for &b in &bs {
                    let x0 = bernoulli_rows(args.seed, l * l, b, sigmoid(2.0 * ISING_BIAS));
                    for name in &samplers {
                        for &fast in paths {
                            let base = json!({"model": "ising", "L": l, "sigma": sigma, "dims": l * l});
                            time_config(&args, &mut sink, &model, name, "ising", base, &x0, &threads, fast)?;
                        }
                    }
                }
            }
        }
    }
    if !args.no_rbm {
        let rbm = random_rbm(args.seed);
        for (&rbm_chains, name) in args.rbm_chains.iter().flat_map(|b| rbm_samplers.iter().map(move |s| (b, s))) {
            let x0 = bernoulli_rows(args.seed, RBM_SHAPE.0, rbm_chains, 0.5);
            for &fast in paths {
                let base = json!({"model": "rbm", "hidden": RBM_SHAPE.1, "dims": RBM_SHAPE.0});
                let params = SamplerParams { step_size: step_size(BenchModel::Rbm, name), ..Default::default() };
                let sampler = build_sampler(name, &params).map_err(CliError::input)?;
                let opts = RunOptions { seed: args.seed.wrapping_add(1), threads: 1, chains_per_task: 0 };
                let start = if args.rbm_burn_in == 0 {
                    x0.clone()
                } else {
                    run_chains(sampler.as_ref(), &rbm, &x0, args.rbm_burn_in, &opts, |_, _| Tally::default())
                        .map_err(|e| CliError::input(format!("{name} on rbm: {e}")))?
                        .final_states
                };
                let mut base = base;
                base["burn_in"] = json!(args.rbm_burn_in);
                time_config(&args, &mut sink, &rbm, name, "rbm", base, &start, &threads, fast)?;
            }
        }
    }
    sink.finish()
}

/// Where records go: stdout as they come, or a file written atomically at the end.
struct Sink {
    out: Option<PathBuf>,
    lines: Vec<String>,
}

impl Sink {
    fn new(out: Option<PathBuf>) -> Self {
        Sink { out, lines: Vec::new() }
    }

    fn emit(&mut self, rec: &Value) {
        let line = rec.to_string();
        if self.out.is_some() {
            self.lines.push(line);
        } else {
            println!("{line}");
            let _ = std::io::stdout().flush();
        }
    }

    fn finish(self) -> Result<(), CliError> {
        if let Some(path) = &self.out {
            let mut text = self.lines.join("\n");
            text.push('\n');
            dlp_cli::atomic_write(path, text.as_bytes())
                .map_err(|e| CliError::input(format!("cannot write {}: {e}", path.display())))?;
        }
        Ok(())
    }
}

/// `n` rows of `d` independent Bernoulli(p) bits from stream 0 of `seed`.
fn bernoulli_rows(seed: u64, d: usize, n: usize, p: f64) -> Vec<u32> {
    let mut rng = setup_rng(seed);
    (0..n * d).map(|_| u32::from(rng.random::<f64>() < p)).collect()
}

/// The peer's RBM (`rbm_sample.py` without data): W ~ N(0, 0.05), b, c ~ N(0, 1), binary
/// visibles. Normals by [`dlp_core::draw::standard_normal`] (the RBM every earlier bench ran).
fn random_rbm(seed: u64) -> Rbm {
    let (d, m) = RBM_SHAPE;
    let mut rng = setup_rng(seed ^ 0x5eed_0b4d);
    let mut normal = move || dlp_core::draw::standard_normal(&mut rng);
    let w: Vec<f64> = (0..d * m).map(|_| 0.05f64.sqrt() * normal()).collect();
    let b: Vec<f64> = (0..d).map(|_| normal()).collect();
    let c: Vec<f64> = (0..m).map(|_| normal()).collect();
    Rbm::new(dlp_core::DomainKind::Binary, d, m, w, b, c).expect("finite RBM parameters")
}

/// `dlp bench --device`: the lattice and RBM rows of the device-resident chains.
#[allow(clippy::too_many_arguments)]
fn run_device(
    args: &Args,
    sink: &mut Sink,
    device: &dlp_tensor::Device,
    ls: &[usize],
    bs: &[usize],
    sigmas: &[f64],
    samplers: &[String],
    rbm_samplers: &[String],
) -> Result<(), CliError> {
    if !args.rbm_only {
        for &sigma in sigmas {
            for &l in ls {
                let model = IsingModel::paper_lattice(l, sigma, ISING_BIAS);
                for &b in bs {
                    let x0 = bernoulli_rows(args.seed, l * l, b, sigmoid(2.0 * ISING_BIAS));
                    for name in samplers {
                        let params =
                            SamplerParams { step_size: step_size(BenchModel::Ising, name), ..Default::default() };
                        let on = format!("the L = {l} lattice");
                        if !has_device_path(name, &params, &model, &x0, args.seed, device, "the lattice")? {
                            continue;
                        }
                        let make = || open_device(name, &params, &model, &x0, args.seed, device, &on);
                        let base = json!({"model": "ising", "L": l, "sigma": sigma, "dims": l * l});
                        time_device(args, sink, device, make, name, base, 0)?;
                    }
                }
            }
        }
    }
    if !args.no_rbm {
        let rbm = random_rbm(args.seed);
        for (&rbm_chains, name) in args.rbm_chains.iter().flat_map(|b| rbm_samplers.iter().map(move |s| (b, s))) {
            let x0 = bernoulli_rows(args.seed, RBM_SHAPE.0, rbm_chains, 0.5);
            let params = SamplerParams { step_size: step_size(BenchModel::Rbm, name), ..Default::default() };
            if !has_device_path(name, &params, &rbm, &x0, args.seed, device, "the RBM")? {
                continue;
            }
            let make = || open_device(name, &params, &rbm, &x0, args.seed, device, "the RBM");
            let mut base = json!({"model": "rbm", "hidden": RBM_SHAPE.1, "dims": RBM_SHAPE.0});
            base["burn_in"] = json!(args.rbm_burn_in);
            time_device(args, sink, device, make, name, base, args.rbm_burn_in)?;
        }
    }
    Ok(())
}

/// Whether `name` has device chains on `model` (through its registry row's device kernel,
/// `dlp_device::device_samplers`); a note on stderr when it has none. Opening them once here
/// also reports bad parameters before any timing.
#[allow(clippy::too_many_arguments)]
fn has_device_path(
    name: &str,
    params: &SamplerParams,
    model: &dyn Target,
    x0: &[u32],
    seed: u64,
    device: &dlp_tensor::Device,
    on: &str,
) -> Result<bool, CliError> {
    let opened = device_samplers::open(name, params, model, x0, seed, device)
        .map_err(|e| CliError::input(format!("{name} on {on}: {e}")))?;
    if opened.is_none() {
        eprintln!("dlp bench --device: no device path for {name} on {on}, skipped");
    }
    Ok(opened.is_some())
}

/// Fresh device chains of `name` on `model` (which [`has_device_path`] said exist).
#[allow(clippy::too_many_arguments)]
fn open_device(
    name: &str,
    params: &SamplerParams,
    model: &dyn Target,
    x0: &[u32],
    seed: u64,
    device: &dlp_tensor::Device,
    on: &str,
) -> Result<Box<dyn DeviceChains>, CliError> {
    device_samplers::open(name, params, model, x0, seed, device)
        .map_err(|e| CliError::input(format!("{name} on {on}: {e}")))?
        .ok_or_else(|| CliError::internal(format!("{name} on {on}: no device path")))
}

/// Times one device configuration: fresh chains, `burn_in` untimed steps, a calibration that
/// grows the step count until a run takes ≥ budget/8, then up to 3 repeats filling the
/// budget; every timed run ends with a device synchronisation.
fn time_device(
    args: &Args,
    sink: &mut Sink,
    device: &dlp_tensor::Device,
    make: impl Fn() -> Result<Box<dyn DeviceChains>, CliError>,
    name: &str,
    base: Value,
    burn_in: usize,
) -> Result<(), CliError> {
    let fail = |e: CandleError| CliError::input(format!("{name} on {}: {e}", base["model"]));
    let load = load1();
    let mut chains = make()?;
    let (n_chains, d) = (chains.n_chains(), chains.dim());
    // Untimed: burn-in, and 3 steps that load the kernels and warm the caches (the first CUDA
    // step pays module loading and cuBLAS start-up).
    for _ in 0..burn_in + 3 {
        chains.step().map_err(fail)?;
    }
    chains.sync().map_err(fail)?;
    let timed = |chains: &mut Box<dyn DeviceChains>, steps: usize| -> Result<f64, CliError> {
        let t0 = std::time::Instant::now();
        for _ in 0..steps {
            chains.step().map_err(fail)?;
        }
        chains.sync().map_err(fail)?;
        Ok(t0.elapsed().as_secs_f64())
    };
    let mut steps = 1;
    let per = loop {
        let secs = timed(&mut chains, steps)?;
        if secs >= args.budget / 8.0 || steps >= 1 << 20 {
            break (secs / steps as f64).max(1e-9);
        }
        steps *= 4;
    };
    let repeats = if 3.0 * per <= args.budget { 3 } else { 1 };
    let n = ((args.budget / (repeats as f64 * per)) as usize).max(1);
    let (acc0, steps0) = (chains.accepted().map_err(fail)?, chains.steps_taken());
    let mut secs: Vec<f64> = Vec::new();
    for _ in 0..repeats {
        secs.push(timed(&mut chains, n)? / n as f64);
    }
    let acc1 = chains.accepted().map_err(fail)?;
    let accepted: u64 = acc1.iter().zip(&acc0).map(|(a, b)| a - b).sum();
    let taken = (chains.steps_taken() - steps0) * n_chains as u64;
    // Thread- and batch-independence of the device chains is the device tests' business; what
    // a timing run can check cheaply is that a fresh run of the same seed ends in the same
    // states (run-to-run reproducibility, which GPU atomics or races would break).
    let (mut a, mut b) = (make()?, make()?);
    for _ in 0..IDENTITY_STEPS {
        a.step().map_err(fail)?;
        b.step().map_err(fail)?;
    }
    let reproducible = a.positions().map_err(fail)? == b.positions().map_err(fail)?;
    secs.sort_by(f64::total_cmp);
    let (median, min) = (secs[secs.len() / 2], secs[0]);
    let on_cuda = !matches!(device, dlp_tensor::Device::Cpu);
    let sites_per_step = if name == "gibbs" { 1 } else { d };
    let mut rec = base;
    let o = rec.as_object_mut().expect("object");
    o.insert("impl".into(), json!(if on_cuda { "rust-cuda" } else { "rust-device-cpu" }));
    o.insert("device".into(), json!(dlp_tensor::device_name(device)));
    o.insert("sampler".into(), json!(name));
    o.insert("chains".into(), json!(n_chains));
    o.insert("steps".into(), json!(n * repeats));
    o.insert("repeats".into(), json!(repeats));
    o.insert("seconds_per_step".into(), json!(median));
    o.insert("seconds_per_step_min".into(), json!(min));
    o.insert("ns_per_spin_step".into(), json!(median * 1e9 / (n_chains * d) as f64));
    o.insert("sites_per_step".into(), json!(sites_per_step));
    o.insert("ns_per_site_update".into(), json!(median * 1e9 / (n_chains * sites_per_step) as f64));
    o.insert("threads".into(), json!(1));
    o.insert("cold".into(), json!(false));
    o.insert("accept_rate".into(), json!(accepted as f64 / taken.max(1) as f64));
    o.insert("reproducible".into(), json!(reproducible));
    o.insert("load1_at_start".into(), json!(load));
    o.insert("rustc_profile".into(), json!(if cfg!(debug_assertions) { "debug" } else { "release" }));
    sink.emit(&rec);
    Ok(())
}

fn load1() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/loadavg").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

/// Sums of StepInfo over a run: (steps·chains, accepted, changed coordinates).
#[derive(Default)]
struct Tally {
    records: u64,
    accepted: u64,
    changed: u64,
}

impl dlp_core::Observer for Tally {
    fn observe(&mut self, _: &dlp_core::StepContext, _: dlp_core::States<'_>, info: &[StepInfo]) {
        for i in info {
            self.records += 1;
            self.accepted += i.accepted as u64;
            self.changed += i.n_changed as u64;
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn time_config(
    args: &Args,
    sink: &mut Sink,
    model: &dyn Target,
    name: &str,
    kind: &str,
    base: Value,
    x0: &[u32],
    threads: &[usize],
    fast: bool,
) -> Result<(), CliError> {
    let model_kind = match kind {
        "ising" => BenchModel::Ising,
        "rbm" => BenchModel::Rbm,
        _ => BenchModel::Bnn,
    };
    let params = SamplerParams { step_size: step_size(model_kind, name), ..Default::default() };
    let sampler = build_sampler(name, &params).map_err(CliError::input)?;
    let generic = Generic(model);
    let target: &dyn Target = if fast { model } else { &generic };
    let d = target.space().d;
    let chains = x0.len() / d;
    let sites_per_step = if name.starts_with("bg-") || name.starts_with("gibbs") { 1 } else { d };
    let mut first_states: Option<Vec<u32>> = None;
    for &t in threads {
        let load = load1();
        let opts = RunOptions { seed: args.seed, threads: t, chains_per_task: 0 };
        let go = |steps: usize| {
            run_chains(sampler.as_ref(), target, x0, steps, &opts, |_, _| Tally::default())
                .map_err(|e| CliError::input(format!("{name} on {kind}: {e}")))
        };
        // One untimed step first: the process's first run pays one-off costs (page faults of
        // fresh buffers, lazily built tables) that, taken as the calibration, made the first
        // configuration of a pass time 1-step runs (observed: 870 ns instead of 5 ns per
        // spin-step for DULA, L = 10, one chain).
        go(1)?;
        // Warm-up doubling as calibration: grow the step count until a run takes ≥ budget/8.
        let mut steps = 1;
        let mut per = loop {
            let out = go(steps)?;
            let per = out.wall_seconds / steps as f64;
            if out.wall_seconds >= args.budget / 8.0 || steps >= 1 << 20 {
                break per;
            }
            steps *= 4;
        };
        per = per.max(1e-9);
        let repeats = if 3.0 * per <= args.budget { 3 } else { 1 };
        let n = ((args.budget / (repeats as f64 * per)) as usize).max(1);
        let mut secs = Vec::new();
        let mut tally = Tally::default();
        // Thread-count independence: a fixed-length run compared across thread counts.
        let finals = go(IDENTITY_STEPS)?.final_states;
        for _ in 0..repeats {
            let out = go(n)?;
            secs.push(out.wall_seconds / n as f64);
            for o in out.observers {
                tally.records += o.records;
                tally.accepted += o.accepted;
                tally.changed += o.changed;
            }
        }
        let identical = match &first_states {
            None => {
                first_states = Some(finals);
                None
            }
            Some(f) => Some(*f == finals),
        };
        let mut sorted = secs.clone();
        sorted.sort_by(f64::total_cmp);
        let median = sorted[sorted.len() / 2];
        let min = sorted[0];
        let mut rec = base.clone();
        let o = rec.as_object_mut().expect("object");
        o.insert("impl".into(), json!(if fast { "rust" } else { "rust-generic" }));
        o.insert("sampler".into(), json!(name));
        o.insert("chains".into(), json!(chains));
        o.insert("steps".into(), json!(n * repeats));
        o.insert("repeats".into(), json!(repeats));
        o.insert("seconds_per_step".into(), json!(median));
        o.insert("seconds_per_step_min".into(), json!(min));
        o.insert("ns_per_spin_step".into(), json!(median * 1e9 / (chains * d) as f64));
        o.insert("sites_per_step".into(), json!(sites_per_step));
        o.insert("ns_per_site_update".into(), json!(median * 1e9 / (chains * sites_per_step) as f64));
        o.insert("threads".into(), json!(t));
        o.insert("cold".into(), json!(false));
        o.insert("accept_rate".into(), json!(tally.accepted as f64 / tally.records.max(1) as f64));
        o.insert("flip_rate".into(), json!(tally.changed as f64 / (tally.records.max(1) as f64 * d as f64)));
        if let Some(same) = identical {
            o.insert("identical_to_first_threads".into(), json!(same));
        }
        o.insert("load1_at_start".into(), json!(load));
        o.insert("rustc_profile".into(), json!(if cfg!(debug_assertions) { "debug" } else { "release" }));
        sink.emit(&rec);
    }
    Ok(())
}
