//! Fig. 3 (and the ESS/s of Fig. 2 right) of the main paper: sampling the 5×5 periodic
//! Ising model (σ_c = 0.1, b = 0.2), log RMSE of running means against exact means over
//! iterations and sampler time, and ESS per second (spec `reproduction.md` §3.2, P13).
//!
//! Config → one `run_chains` per sampler → `results/fig3/{curves.csv, summary.json,
//! fig3.svg, fig3.png, meta.json}`. Truth: exact enumeration of the 2^25 states.

use anyhow::{Context, Result, bail};
use clap::Parser;
use dlp_core::math::sigmoid;
use dlp_core::stats::{ess_tfp, quantile};
use dlp_core::{RunOptions, SamplerError, Target, run_chains, setup_rng};
use dlp_exact::{EnumOptions, enumerate};
use dlp_models::IsingModel;
use dlp_reproduce::{
    BoxStats, CommonArgs, CurvePoint, Figure, MeanErrorObserver, Panel, RefLine, Run, Series, chain0_series,
    merge_curves,
};
use dlp_samplers::{SamplerParams, build_sampler};
use rand::RngExt;
use serde_json::{Value, json};

/// Lattice side, coupling σ_c and bias b of the paper's Fig. 3 model.
const L: usize = 5;
const SIGMA: f64 = 0.1;
const BIAS: f64 = 0.2;
/// Exact facts from spec §4.1 and §4.2 (independent enumerations), checked against ours.
const SPEC_LOG_Z: f64 = 19.674085761341;
const SPEC_MEAN_S: f64 = 0.482969842236;
const SPEC_DULA_FLOOR: f64 = -2.8169;
/// ESS burn-in fraction (spec §3.2, [C]).
const BURN_IN: f64 = 0.1;
/// The paper code's samplers with their step sizes, then GWG-4 and LB-1 (skipped if absent).
const DEFAULT_SAMPLERS: &str = "bg-1,hb-10-1,gwg,dmala@0.4,dula@0.2,gwg-4,lb";
const OPTIONAL: [&str; 2] = ["gwg-4", "lb"];
/// Chains of the paper's code (`n_test_samples = 2`).
const PAPER_CHAINS: usize = 2;

/// Fig. 3: log RMSE of running means and ESS/s on the 5×5 Ising model.
#[derive(Parser, Debug)]
#[command(name = "fig3")]
struct Args {
    #[command(flatten)]
    common: CommonArgs,
    /// Chains per sampler [default: 32; --quick: 8]. The paper's code uses 2.
    #[arg(long)]
    chains: Option<usize>,
    /// Steps per chain [default: 50000; --quick: 2000].
    #[arg(long)]
    steps: Option<usize>,
    /// Steps between log-RMSE points [default: 1000; --quick: 100].
    #[arg(long)]
    every: Option<usize>,
    /// Where E_π[s] comes from [default: enumerate; --quick: spec].
    #[arg(long, value_enum)]
    truth: Option<Truth>,
    /// Comma-separated samplers, `name` or `name@step_size`.
    #[arg(long, default_value = DEFAULT_SAMPLERS)]
    samplers: String,
}

/// Source of the exact means.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq)]
enum Truth {
    /// Enumerate the 2^25 states with dlp-exact (seconds in release, about a minute in debug).
    Enumerate,
    /// The value of spec §4.1 (two independent enumerations), for --quick runs.
    Spec,
}

/// What one sampler produced.
struct Outcome {
    name: String,
    step_size: Option<f64>,
    curve: Vec<CurvePoint>,
    ess: Vec<f64>,
    ess_per_second: Vec<f64>,
    seconds: f64,
    acceptance: f64,
    mean_n_changed: f64,
}

fn main() {
    dlp_reproduce::main_with(run);
}

fn run(args: Args) -> Result<()> {
    let quick = args.common.quick;
    let chains = args.chains.unwrap_or(if quick { 8 } else { 32 });
    let steps = args.steps.unwrap_or(if quick { 2_000 } else { 50_000 });
    let every = args.every.unwrap_or(if quick { 100 } else { 1_000 });
    if chains == 0 || steps < 10 || every == 0 {
        bail!("need --chains ≥ 1, --steps ≥ 10 and --every ≥ 1");
    }
    let run = Run::start("fig3", &args.common)?;
    let seed = args.common.seed;
    println!(
        "fig3: {L}x{L} periodic Ising σ_c={SIGMA} b={BIAS}; {chains} chains (paper code: {PAPER_CHAINS}), {steps} steps, seed {seed}"
    );

    let model = IsingModel::paper_lattice(L, SIGMA, BIAS);
    let target: &dyn Target = &model;
    let space = target.space().clone();
    let d = space.d;
    let t = std::time::Instant::now();
    let (truth, log_z) = match args.truth.unwrap_or(if quick { Truth::Spec } else { Truth::Enumerate }) {
        Truth::Enumerate => {
            let exact = enumerate(target, &EnumOptions { pair_moments: false, keep_probs: false })?;
            (exact.mean_value, Some(exact.log_z))
        }
        Truth::Spec => (vec![SPEC_MEAN_S; d], None),
    };
    let mean_s = truth.iter().sum::<f64>() / d as f64;
    match log_z {
        Some(z) => println!(
            "truth: 2^{d} states enumerated in {:.1} s: log Z = {z:.12}, E[s_i] = {mean_s:.12}",
            t.elapsed().as_secs_f64()
        ),
        None => println!("truth: E[s_i] = {mean_s:.12} from spec §4.1 (no enumeration)"),
    }

    // One initial batch for every sampler: s_i = +1 with probability σ(2b) (index 1 = +1).
    let mut rng = setup_rng(seed);
    let p_up = sigmoid(2.0 * BIAS);
    let x0: Vec<u32> = (0..chains * d).map(|_| u32::from(rng.random::<f64>() < p_up)).collect();

    let mut outcomes = Vec::new();
    let mut skipped = Vec::new();
    for spec in args.samplers.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (name, step_size) = match spec.split_once('@') {
            Some((n, a)) => (n, Some(a.parse::<f64>().with_context(|| format!("bad step size in {spec:?}"))?)),
            None => (spec, None),
        };
        let sampler = match build_sampler(name, &SamplerParams { step_size, ..Default::default() }) {
            Ok(s) => s,
            Err(SamplerError::UnknownSampler(..)) if OPTIONAL.contains(&name) => {
                println!("{name}: not available in this build, skipped");
                skipped.push(name.to_string());
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        let bar = run.progress((chains * steps) as u64, name);
        let options = RunOptions { seed, threads: 0, chains_per_task: 0 };
        let out = run_chains(sampler.as_ref(), target, &x0, steps, &options, |first, n| {
            MeanErrorObserver::new(&space, &truth, every, steps, (first, n), bar.clone())
        })?;
        bar.finish_and_clear();
        let obs = &out.observers;
        let seconds = obs.iter().map(|o| o.step_seconds).sum::<f64>() / chains as f64;
        let ess: Vec<f64> = chain0_series(obs, &space, BURN_IN).iter().map(|s| ess_tfp(s)).collect();
        let chain_steps = obs.iter().map(|o| o.chain_steps).sum::<u64>() as f64;
        let o = Outcome {
            name: name.to_string(),
            step_size,
            curve: merge_curves(obs, chains, d),
            ess_per_second: ess.iter().map(|e| e / (seconds * (1.0 - BURN_IN))).collect(),
            ess,
            seconds,
            acceptance: obs.iter().map(|o| o.accepted).sum::<u64>() as f64 / chain_steps,
            mean_n_changed: obs.iter().map(|o| o.changed).sum::<u64>() as f64 / chain_steps,
        };
        println!(
            "{:<14} final log RMSE {:>7.3}  ESS/s median {:>9.1}  acceptance {:.3}  changed/step {:.2}  {:.2} s/chain",
            label(&o),
            o.curve.last().map_or(f64::NAN, |p| p.log_rmse),
            quantile(&o.ess_per_second, 0.5),
            o.acceptance,
            o.mean_n_changed,
            o.seconds
        );
        outcomes.push(o);
    }

    let rows: Vec<Vec<String>> = outcomes
        .iter()
        .flat_map(|o| {
            o.curve.iter().map(|p| vec![label(o), p.step.to_string(), p.log_rmse.to_string(), p.seconds.to_string()])
        })
        .collect();
    run.write_csv("curves.csv", &["sampler", "step", "log_rmse", "seconds"], &rows)?;
    let summary = json!({
        "schema": "dlp.reproduce.fig3.v1",
        "model": {"lattice": [L, L], "periodic": true, "sigma": SIGMA, "bias": BIAS, "d": d},
        "chains": chains,
        "chains_note": format!("{chains} chains per sampler; the paper's code uses {PAPER_CHAINS} (n_test_samples), the figure's count is not stated"),
        "steps": steps,
        "every": every,
        "seed": seed,
        "seconds_note": "sampler seconds per chain: time inside step() summed over tasks, divided by the number of chains",
        "ess_note": "ESS of chain 0 per coordinate (TFP estimator), first 10% dropped; ESS/s = ESS / (seconds × 0.9)",
        "truth": {
            "source": if log_z.is_some() { "enumeration" } else { "spec §4.1" },
            "log_z": log_z, "mean_s": mean_s,
            "spec_log_z": SPEC_LOG_Z, "spec_mean_s": SPEC_MEAN_S,
            "max_abs_diff_mean_s": truth.iter().map(|m| (m - SPEC_MEAN_S).abs()).fold(0.0, f64::max),
        },
        "samplers": outcomes.iter().map(sampler_summary).collect::<Vec<_>>(),
        "skipped": skipped,
        "paper_claims": claims(&outcomes),
    });
    run.write_json("summary.json", &summary)?;
    run.write_figure("fig3", &figure(&outcomes, chains, steps, seed))?;
    run.write_meta(&json!({
        "chains": chains, "steps": steps, "every": every, "samplers": args.samplers,
        "model": "IsingModel::paper_lattice(5, 0.1, 0.2)", "init": "s_i = +1 w.p. sigmoid(2b), setup stream 0",
        "ess_burn_in": BURN_IN, "ess_chain": 0,
    }))?;
    println!("wrote {} in {:.1} s", run.dir.display(), run.elapsed());
    Ok(())
}

/// `dmala(0.4)` or `bg-1`.
fn label(o: &Outcome) -> String {
    match o.step_size {
        Some(a) => format!("{}({a})", o.name),
        None => o.name.clone(),
    }
}

fn five(v: &[f64]) -> Value {
    json!({"min": quantile(v, 0.0), "q1": quantile(v, 0.25), "median": quantile(v, 0.5), "q3": quantile(v, 0.75), "max": quantile(v, 1.0)})
}

/// The numbers the paper or the spec give for a sampler, to print beside ours.
fn paper_values(name: &str) -> Value {
    match name {
        "dula" => {
            json!({"log_rmse_floor": SPEC_DULA_FLOOR, "source": "spec §4.2: exact stationary mean of DULA at α = 0.2 (biased)"})
        }
        "dmala" => {
            json!({"acceptance": 0.688, "mean_n_changed": 2.96, "source": "spec §4.9 simulation, α = 0.4 (±0.02); paper: fastest in iterations and time, best ESS/s"})
        }
        "gwg" => {
            json!({"acceptance": 0.955, "source": "spec §4.9 simulation (±0.02); paper: DULA ≈ LB-1 ≈ GWG-1 < DMALA"})
        }
        "gwg-4" => {
            json!({"acceptance": 0.659, "source": "spec §4.9 simulation (±0.02); paper: worse than DMALA (lower acceptance)"})
        }
        "lb" => json!({"source": "paper: DULA ≈ LB-1 ≈ GWG-1 < DMALA"}),
        _ => Value::Null,
    }
}

fn sampler_summary(o: &Outcome) -> Value {
    json!({
        "sampler": o.name, "label": label(o), "step_size": o.step_size,
        "exact": o.name != "dula",
        "final_log_rmse": o.curve.last().map(|p| p.log_rmse),
        "ess": five(&o.ess), "ess_per_second": five(&o.ess_per_second),
        "seconds": o.seconds, "acceptance": o.acceptance, "mean_n_changed": o.mean_n_changed,
        "paper": paper_values(&o.name),
    })
}

/// log RMSE of `o` at the last point within `seconds` of sampler time.
fn at_time(o: &Outcome, seconds: f64) -> f64 {
    o.curve.iter().rev().find(|p| p.seconds <= seconds).map_or(f64::NAN, |p| p.log_rmse)
}

/// The paper's and the spec's claims, each with whether our run agrees.
fn claims(outcomes: &[Outcome]) -> Vec<Value> {
    let get = |n: &str| outcomes.iter().find(|o| o.name == n);
    let fin = |o: &Outcome| o.curve.last().map_or(f64::NAN, |p| p.log_rmse);
    let ess_s = |o: &Outcome| quantile(&o.ess_per_second, 0.5);
    let budget = outcomes.iter().map(|o| o.seconds).fold(f64::INFINITY, f64::min);
    let mut out = Vec::new();
    let mut claim = |text: &str, source: &str, holds: Option<bool>, ours: String| {
        out.push(json!({"claim": text, "source": source, "holds": holds, "ours": ours}));
    };
    if let Some(dm) = get("dmala") {
        let others = || outcomes.iter().filter(|o| o.name != "dmala");
        claim(
            "DMALA has the lowest log RMSE after the last iteration",
            "paper §7.1, Fig. 3 left",
            Some(others().all(|o| fin(dm) < fin(o))),
            outcomes.iter().map(|o| format!("{} {:.3}", label(o), fin(o))).collect::<Vec<_>>().join(", "),
        );
        claim(
            "DMALA has the lowest log RMSE at equal sampler time",
            "paper §7.1, Fig. 3 right",
            Some(others().all(|o| at_time(dm, budget) < at_time(o, budget))),
            format!("at {budget:.3} s/chain: ")
                + &outcomes
                    .iter()
                    .map(|o| format!("{} {:.3}", label(o), at_time(o, budget)))
                    .collect::<Vec<_>>()
                    .join(", "),
        );
        claim(
            "DMALA has the highest median ESS/s among exact samplers",
            "paper §7.1, Fig. 2 right",
            Some(others().filter(|o| o.name != "dula").all(|o| ess_s(dm) > ess_s(o))),
            outcomes.iter().map(|o| format!("{} {:.1}", label(o), ess_s(o))).collect::<Vec<_>>().join(", "),
        );
        if let Some(g4) = get("gwg-4") {
            claim(
                "GWG-4 is worse than DMALA",
                "paper §7.1",
                Some(fin(g4) > fin(dm)),
                format!("{:.3} vs {:.3}", fin(g4), fin(dm)),
            );
        }
    }
    if let (Some(gibbs), Some(dm), Some(du)) = (get("bg-1"), get("dmala"), get("dula")) {
        let pairs = |a: &Outcome| {
            a.curve.iter().zip(&gibbs.curve).skip(1).map(|(p, q)| (p.step, p.log_rmse, q.log_rmse)).collect::<Vec<_>>()
        };
        claim(
            "DMALA is ahead of Gibbs-1 at every checkpoint",
            "paper §7.1 / spec §3.2",
            Some(pairs(dm).iter().all(|(_, a, b)| a < b)),
            format!("final dmala {:.3}, bg-1 {:.3}", fin(dm), fin(gibbs)),
        );
        // DULA is biased (spec §4.2): it leads until Gibbs-1's Monte-Carlo error falls below DULA's floor.
        let early =
            pairs(du).into_iter().take_while(|(_, a, b)| a < b).last().map_or("none".into(), |p| p.0.to_string());
        let crossing = pairs(du).into_iter().find(|(_, a, b)| a >= b).map_or("never".into(), |p| p.0.to_string());
        claim(
            "DULA is ahead of Gibbs-1 until its bias floor dominates",
            "spec §3.2 / §4.2",
            Some(early != "none"),
            format!(
                "dula ahead up to step {early}; bg-1 passes dula at step {crossing}; final dula {:.3}, bg-1 {:.3}",
                fin(du),
                fin(gibbs)
            ),
        );
    }
    if let Some(du) = get("dula") {
        claim(
            "DULA (α = 0.2) plateaus at its bias floor, log RMSE ≈ −2.817 (within 0.1)",
            "spec §4.2, P13",
            Some((fin(du) - SPEC_DULA_FLOOR).abs() < 0.1),
            format!("{:.3} (floor {SPEC_DULA_FLOOR})", fin(du)),
        );
    }
    out
}

fn figure(outcomes: &[Outcome], chains: usize, steps: usize, seed: u64) -> Figure {
    let lines = |x: fn(&CurvePoint) -> f64| -> Vec<Series> {
        outcomes
            .iter()
            .map(|o| Series { label: label(o), points: o.curve.iter().map(|p| (x(p), p.log_rmse)).collect() })
            .collect()
    };
    let floor = || vec![RefLine { label: format!("DULA floor {SPEC_DULA_FLOOR}"), y: SPEC_DULA_FLOOR }];
    Figure {
        caption: format!("5x5 Ising (σ=0.1, b=0.2): {chains} chains, {steps} steps, seed {seed}"),
        labels: outcomes.iter().map(label).collect(),
        panels: vec![
            Panel::Lines {
                title: "log RMSE vs iterations".into(),
                x_label: "iterations".into(),
                y_label: "log RMSE".into(),
                series: lines(|p| p.step as f64),
                refs: floor(),
            },
            Panel::Lines {
                title: "log RMSE vs sampler time".into(),
                x_label: "seconds per chain".into(),
                y_label: "log RMSE".into(),
                series: lines(|p| p.seconds),
                refs: floor(),
            },
            Panel::Boxes {
                title: "ESS/s (chain 0, exact samplers)".into(),
                y_label: "ESS per second".into(),
                boxes: outcomes
                    .iter()
                    .filter(|o| o.name != "dula")
                    .map(|o| {
                        let q = |p| quantile(&o.ess_per_second, p);
                        BoxStats { label: label(o), five: [q(0.0), q(0.25), q(0.5), q(0.75), q(1.0)] }
                    })
                    .collect(),
            },
        ],
    }
}
