//! Fig. 3 (and the ESS/s of Fig. 2 right) of the main paper: sampling the 5×5 periodic
//! Ising model (σ_c = 0.1, b = 0.2), log RMSE of running means against exact means over
//! iterations and sampler time, and ESS per second (spec `reproduction.md` §3.2, P13).
//!
//! Config → one `run_chains` per sampler (`dlp_reproduce::ising::MeanRun`) →
//! `results/fig3/{curves.csv, summary.json, fig3.svg, fig3.png, meta.json}`. Truth: exact
//! enumeration of the 2^25 states.

use anyhow::{Result, bail};
use clap::Parser;
use dlp_core::SamplerError;
use dlp_core::stats::quantile;
use dlp_exact::{EnumOptions, enumerate};
use dlp_models::IsingModel;
use dlp_reproduce::ising::{
    ESS_BURN_IN, MeanRun, PAPER_BIAS as BIAS, PAPER_SIDE as L, PAPER_SIGMA as SIGMA, SPEC_LOG_Z, SPEC_MEAN_S,
    fig3_claims, fig3_figure, fig3_sampler_summary, initial_batch,
};
use dlp_reproduce::{CommonArgs, Run, parse_samplers};
use serde_json::json;

/// The paper code's samplers with their step sizes, then GWG-4 and LB-1 (skipped if absent),
/// the paper's two continuous relaxations (issue 44; settings ours, `paper/fig3.md`): RMALA at
/// the ε `dlp sample --sampler rmala` adapts to on this model (0.0136–0.0155 over seeds 0–3),
/// and a stand-in for DSVGD, GF-SVGD with ρ = p₀ and with the relaxed surrogate (chains =
/// particles; estimate = particle mean); then the samplers the field compares
/// against today (issue 18): PAS with paths of 3 flips and with a mean path length r = 6.25
/// (`dlp sample --sampler pas`'s warm-up value on this model), DLMC and cyclical DMALA at the
/// step sizes stated there.
const DEFAULT_SAMPLERS: &str = "bg-1,hb-10-1,gwg,dmala@0.4,dula@0.2,gwg-4,lb,rmala@0.014,gf-svgd,gf-svgd-relaxed,pas-3,pas@6.25,dlmc@1,acs-dmala@3";
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
    /// Where `E_π[s]` comes from [default: enumerate; --quick: spec].
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

fn main() {
    dlp_reproduce::main_with(run);
}

fn run(args: Args) -> Result<()> {
    let c = &args.common;
    let (chains, steps, every) =
        (c.pick(args.chains, 32, 8), c.pick(args.steps, 50_000, 2_000), c.pick(args.every, 1_000, 100));
    if chains == 0 || steps < 10 || every == 0 {
        bail!("need --chains ≥ 1, --steps ≥ 10 and --every ≥ 1");
    }
    let samplers = parse_samplers(&args.samplers)?;
    let run = Run::start("fig3", &args.common)?;
    let seed = run.seed();
    println!(
        "fig3: {L}x{L} periodic Ising σ_c={SIGMA} b={BIAS}; {chains} chains (paper code: {PAPER_CHAINS}), {steps} steps, seed {seed}"
    );

    let model = IsingModel::paper_lattice(L, SIGMA, BIAS);
    let d = model.d();
    let t = std::time::Instant::now();
    let (truth, log_z) = match c.pick(args.truth, Truth::Enumerate, Truth::Spec) {
        Truth::Enumerate => {
            let exact = enumerate(&model, &EnumOptions { pair_moments: false, keep_probs: false })?;
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

    // One initial batch for every sampler.
    let x0 = initial_batch(seed, chains, d, BIAS);
    let mut outcomes = Vec::new();
    let mut skipped = Vec::new();
    for spec in samplers {
        let sampler = match spec.build() {
            Ok(s) => s,
            Err(SamplerError::UnknownSampler(..)) if OPTIONAL.contains(&spec.name.as_str()) => {
                println!("{}: not available in this build, skipped", spec.name);
                skipped.push(spec.name);
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        let o = MeanRun::new(&run, spec, sampler.as_ref(), &model, &x0, (steps, every), &truth)?;
        let ess_s = if o.particles { "—".into() } else { format!("{:.1}", quantile(&o.ess_per_second, 0.5)) };
        println!(
            "{:<16} final log RMSE {:>7.3} (of all chains' mean {:>7.3})  ESS/s median {:>9}  ESS/grad {:>6}  acceptance {:.3}  changed/step {:.2}  {:.2} s/chain",
            o.label(),
            o.final_log_rmse(),
            o.final_pooled(),
            ess_s,
            o.ess_per_grad_eval().map_or("—".into(), |e| format!("{e:.4}")),
            o.acceptance,
            o.mean_n_changed,
            o.seconds
        );
        outcomes.push(o);
    }

    let rows: Vec<Vec<String>> = outcomes
        .iter()
        .flat_map(|o| {
            o.curve.iter().map(|p| vec![o.label(), p.step.to_string(), p.log_rmse.to_string(), p.seconds.to_string()])
        })
        .collect();
    run.write_csv("curves.csv", "sampler,step,log_rmse,seconds", &rows)?;
    let summary = json!({
        "schema": "dlp.reproduce.fig3.v1",
        "model": {"lattice": [L, L], "periodic": true, "sigma": SIGMA, "bias": BIAS, "d": d},
        "chains": chains,
        "chains_note": format!("{chains} chains per sampler; the paper's code uses {PAPER_CHAINS} (n_test_samples), the figure's count is not stated"),
        "steps": steps,
        "every": every,
        "seed": seed,
        "seconds_note": "sampler seconds per chain: time inside step() summed over tasks, divided by the number of chains",
        "pooled_note": "final_log_rmse_pooled and pooled_curve ([step, log RMSE, seconds per chain]): log RMSE over sites of the average over all chains of their running means (particle rows: of the particle mean, their only estimate), the like-for-like comparison of chains with particles",
        "ess_note": "ESS of chain 0 per coordinate (TFP estimator), first 10% dropped; ESS/s = ESS / (seconds × 0.9)",
        "truth": {
            "source": if log_z.is_some() { "enumeration" } else { "spec §4.1" },
            "log_z": log_z, "mean_s": mean_s,
            "spec_log_z": SPEC_LOG_Z, "spec_mean_s": SPEC_MEAN_S,
            "max_abs_diff_mean_s": truth.iter().map(|m| (m - SPEC_MEAN_S).abs()).fold(0.0, f64::max),
        },
        "samplers": outcomes.iter().map(fig3_sampler_summary).collect::<Vec<_>>(),
        "skipped": skipped,
        "paper_claims": fig3_claims(&outcomes),
    });
    run.write_json("summary.json", &summary)?;
    run.write_figure("fig3", &fig3_figure(&outcomes, chains, steps, seed))?;
    run.finish(&json!({
        "chains": chains, "steps": steps, "every": every, "samplers": args.samplers,
        "model": "IsingModel::paper_lattice(5, 0.1, 0.2)", "init": "s_i = +1 w.p. sigmoid(2b), setup stream 0",
        "ess_burn_in": ESS_BURN_IN, "ess_chain": 0,
    }))
}
