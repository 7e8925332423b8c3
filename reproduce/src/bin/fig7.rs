//! Fig. 7 of the main paper (App. I.2): Fig. 3's comparison on the 5×5 periodic Ising model at
//! several coupling strengths σ_c, every sampler given the same sampler-time budget (spec
//! `reproduction.md` §3.2, P13). The paper's σ_c grid is lost; we use {0.1, …, 0.5} (b = 0.2).
//! The paper runs GWG-1 & DMALA for N1 and Gibbs-1 & DULA for N2 iterations (both lost);
//! "equal budget" here means each sampler runs as many steps as fit in `--budget` seconds of
//! time inside `step` (the slowest task's), estimated from a pilot run, so the step counts differ
//! between samplers and machines (they are recorded).
//!
//! Truth at each σ_c: one enumeration of the 2^L² states giving E_π\[s\] and, in the same pass,
//! DULA's exact stationary mean E_{π_α}\[s\] = E_π\[Z_α s̄\]/E_π\[Z_α\] (spec §4.2, with
//! Z_α(x) = Π_i (1 + e^{ℓ_i(x)}), ℓ_i = −s_i·h_i(x) − 1/(2α), h_i the local field), whose log
//! |bias| is DULA's log-RMSE floor (−2.8169 at σ_c = 0.1, α = 0.2: spec §4.2); see
//! `dlp_reproduce::ising::mean_and_dula_mean`.
//!
//! Files: `results/fig7/{final.csv, curves.csv, summary.json, fig7.svg, fig7.png, meta.json}`.

use anyhow::{Result, bail};
use clap::Parser;
use dlp_core::{RunOptions, Target, run_chains};
use dlp_models::IsingModel;
use dlp_reproduce::ising::{
    Fig7Cell, PAPER_BIAS as BIAS, SPEC_DULA_MEAN_S, SPEC_MEAN_S, fig7_figure, initial_batch, mean_and_dula_mean,
    steps_for_budget,
};
use dlp_reproduce::{CommonArgs, CurvePoint, MeanErrorObserver, Run, SamplerSpec, merge_curves, parse_list};
use serde_json::json;

const DULA_ALPHA: f64 = 0.2;
const SAMPLERS: [(&str, Option<f64>); 7] = [
    ("bg-1", None),
    ("hb-10-1", None),
    ("gwg", None),
    ("gwg-4", None),
    ("lb", None),
    ("dmala", Some(0.4)),
    ("dula", Some(DULA_ALPHA)),
];

/// Fig. 7: final log RMSE vs coupling strength at equal sampler time.
#[derive(Parser, Debug)]
#[command(name = "fig7")]
struct Args {
    #[command(flatten)]
    common: CommonArgs,
    /// Comma-separated coupling strengths σ_c [default: 0.1,0.2,0.3,0.4,0.5; --quick: 0.1,0.3,0.5].
    #[arg(long)]
    sigmas: Option<String>,
    /// Sampler seconds per sampler and σ_c [default: 5; --quick: 0.1].
    #[arg(long)]
    budget: Option<f64>,
    /// Chains per sampler [default: 32; --quick: 8].
    #[arg(long)]
    chains: Option<usize>,
    /// Lattice side [default: 5; --quick: 4].
    #[arg(long)]
    side: Option<usize>,
}

fn main() {
    dlp_reproduce::main_with(run);
}

fn run(args: Args) -> Result<()> {
    let c = &args.common;
    let sigmas: Vec<f64> =
        parse_list(&c.pick(args.sigmas.clone(), "0.1,0.2,0.3,0.4,0.5".into(), "0.1,0.3,0.5".into()), "sigmas")?;
    let (budget, chains, side) = (c.pick(args.budget, 5.0, 0.1), c.pick(args.chains, 32, 8), c.pick(args.side, 5, 4));
    if budget.is_nan()
        || budget <= 0.0
        || chains == 0
        || !(2..=5).contains(&side)
        || sigmas.is_empty()
        || sigmas.iter().any(|s| !s.is_finite())
    {
        bail!("need --budget > 0, --chains ≥ 1, 2 ≤ --side ≤ 5 and a non-empty list of finite σ_c");
    }
    let run = Run::start("fig7", &args.common)?;
    let seed = run.seed();
    let d = side * side;
    let x0 = initial_batch(seed, chains, d, BIAS);
    let options = RunOptions { seed, threads: 0, chains_per_task: 0 };

    let mut cells = Vec::new();
    let mut truths = Vec::new();
    for &sigma in &sigmas {
        let model = IsingModel::paper_lattice(side, sigma, BIAS);
        let t = std::time::Instant::now();
        let (mean_s, dula_mean_s) = mean_and_dula_mean(&model, DULA_ALPHA)?;
        let floor = (dula_mean_s - mean_s).abs().ln();
        println!(
            "σ_c = {sigma}: E[s] = {mean_s:.12}, DULA(α={DULA_ALPHA}) E[s] = {dula_mean_s:.12}, floor {floor:.4} ({:.1} s)",
            t.elapsed().as_secs_f64()
        );
        truths
            .push(json!({"sigma": sigma, "mean_s": mean_s, "dula_mean_s": dula_mean_s, "dula_log_rmse_floor": floor}));
        let truth = vec![mean_s; d];
        for spec in SAMPLERS.map(|(n, a)| SamplerSpec::new(n, a)) {
            let sampler = spec.build()?;
            let steps = steps_for_budget(sampler.as_ref(), &model, &x0, budget, &options)?;
            let every = (steps / 50).max(1);
            let out = run_chains(sampler.as_ref(), &model, &x0, steps, &options, |first, n| {
                MeanErrorObserver::new(
                    model.space(),
                    &truth,
                    every,
                    steps,
                    (first, n),
                    indicatif::ProgressBar::hidden(),
                )
            })?;
            let seconds = out.task_step_seconds.iter().copied().fold(0.0, f64::max);
            let cell =
                Fig7Cell { sigma, label: spec.label(), steps, seconds, curve: merge_curves(&out.observers, chains, d) };
            println!(
                "  {:<11} {steps:>8} steps in {seconds:.2} s: final log RMSE {:.3}",
                cell.label,
                cell.final_log_rmse()
            );
            cells.push(cell);
        }
    }

    let rows: Vec<Vec<String>> = cells
        .iter()
        .map(|c| {
            let nums = [c.steps.to_string(), c.seconds.to_string(), c.final_log_rmse().to_string()];
            [c.sigma.to_string(), c.label.clone()].into_iter().chain(nums).collect()
        })
        .collect();
    run.write_csv("final.csv", "sigma,sampler,steps,seconds,final_log_rmse", &rows)?;
    let rows: Vec<Vec<String>> = cells
        .iter()
        .flat_map(|c| {
            let nums = |p: &CurvePoint| [p.step.to_string(), p.log_rmse.to_string(), p.seconds.to_string()];
            c.curve.iter().map(move |p| [c.sigma.to_string(), c.label.clone()].into_iter().chain(nums(p)).collect())
        })
        .collect();
    run.write_csv("curves.csv", "sigma,sampler,step,log_rmse,seconds_per_chain", &rows)?;

    let best: Vec<_> = sigmas
        .iter()
        .map(|&s| {
            let here = cells.iter().filter(|c| c.sigma == s);
            let b = here.min_by(|a, b| a.final_log_rmse().total_cmp(&b.final_log_rmse())).map(|c| c.label.clone());
            json!({"sigma": s, "best": b})
        })
        .collect();
    let dmala_best_everywhere = best.iter().all(|b| b["best"].as_str().is_some_and(|l| l.starts_with("dmala")));
    let summary = json!({
        "schema": "dlp.reproduce.fig7.v1",
        "model": {"lattice": [side, side], "periodic": true, "bias": BIAS, "sigmas": sigmas,
            "sigma_note": "the paper's σ_c grid is lost (App. I.2); chosen here"},
        "chains": chains, "budget_seconds": budget,
        "budget_note": "each sampler runs as many steps as fit in the budget of time inside step() of its slowest task (pilot-run estimate); the paper's N1/N2 iteration counts are lost",
        "truth": truths,
        "spec_at_sigma_0.1": {"mean_s": SPEC_MEAN_S, "dula_mean_s": SPEC_DULA_MEAN_S, "applies_to_side": 5},
        "cells": cells.iter().map(|c| json!({"sigma": c.sigma, "sampler": c.label, "steps": c.steps, "seconds": c.seconds, "final_log_rmse": c.final_log_rmse()})).collect::<Vec<_>>(),
        "best_per_sigma": best,
        "paper_claims": [{"claim": "DMALA has the lowest error at every σ_c", "source": "paper App. I.2, Fig. 7", "holds": dmala_best_everywhere}],
    });
    run.write_json("summary.json", &summary)?;
    run.write_figure("fig7", &fig7_figure(&cells, &truths, (side, budget), DULA_ALPHA))?;
    run.finish(&json!({"sigmas": sigmas, "budget": budget, "chains": chains, "side": side,
        "samplers": SAMPLERS.map(|s| s.0), "init": "s_i = +1 w.p. sigmoid(2b), setup stream 0"}))
}
