//! Fig. 7 of the main paper (App. I.2): Fig. 3's comparison on the 5×5 periodic Ising model at
//! several coupling strengths σ_c, every sampler given the same sampler-time budget (spec
//! `reproduction.md` §3.2, P13). The paper's σ_c grid is lost; we use {0.1, …, 0.5} (b = 0.2).
//! The paper runs GWG-1 & DMALA for N1 and Gibbs-1 & DULA for N2 iterations (both lost);
//! "equal budget" here means each sampler runs as many steps as fit in `--budget` seconds of
//! time inside `step` (the slowest task's), estimated from a pilot run, so the step counts differ
//! between samplers and machines (they are recorded).
//!
//! Truth at each σ_c: one enumeration of the 2^L² states giving E_π[s] and, in the same pass,
//! DULA's exact stationary mean E_{π_α}[s] = E_π[Z_α s̄]/E_π[Z_α] (spec §4.2, with
//! Z_α(x) = Π_i (1 + e^{ℓ_i(x)}), ℓ_i = −s_i·h_i(x) − 1/(2α), h_i the local field), whose log
//! |bias| is DULA's log-RMSE floor (−2.8169 at σ_c = 0.1, α = 0.2: spec §4.2).
//!
//! Files: `results/fig7/{final.csv, curves.csv, summary.json, fig7.svg, fig7.png, meta.json}`.

use anyhow::{Context, Result, bail};
use clap::Parser;
use dlp_core::math::{sigmoid, softplus};
use dlp_core::{RunOptions, Sampler, Target, run_chains, setup_rng};
use dlp_exact::{EnumOptions, enumerate_with};
use dlp_models::IsingModel;
use dlp_reproduce::{CommonArgs, CurvePoint, Figure, MeanErrorObserver, Panel, RefLine, Run, Series, merge_curves};
use dlp_samplers::{SamplerParams, build_sampler};
use rand::RngExt;
use serde_json::json;

const BIAS: f64 = 0.2;
const DULA_ALPHA: f64 = 0.2;
/// Spec §4.1/§4.2 at σ_c = 0.1 (L = 5): E_π[s_i] and DULA's floor at α = 0.2.
const SPEC_MEAN_S: f64 = 0.482969842236;
const SPEC_DULA_MEAN_S: f64 = 0.423176507183;
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

/// One (σ, sampler) run.
struct Cell {
    sigma: f64,
    label: String,
    steps: usize,
    seconds: f64,
    curve: Vec<CurvePoint>,
}

fn main() {
    dlp_reproduce::main_with(run);
}

fn run(args: Args) -> Result<()> {
    let quick = args.common.quick;
    let sigmas: Vec<f64> = args
        .sigmas
        .as_deref()
        .unwrap_or(if quick { "0.1,0.3,0.5" } else { "0.1,0.2,0.3,0.4,0.5" })
        .split(',')
        .map(|s| s.trim().parse::<f64>().with_context(|| format!("bad σ_c {s:?}")))
        .collect::<Result<_>>()?;
    let budget = args.budget.unwrap_or(if quick { 0.1 } else { 5.0 });
    let chains = args.chains.unwrap_or(if quick { 8 } else { 32 });
    let side = args.side.unwrap_or(if quick { 4 } else { 5 });
    if budget.is_nan()
        || budget <= 0.0
        || chains == 0
        || !(2..=5).contains(&side)
        || sigmas.iter().any(|s| !s.is_finite())
    {
        bail!("need --budget > 0, --chains ≥ 1, 2 ≤ --side ≤ 5 and finite σ_c");
    }
    let run = Run::start("fig7", &args.common)?;
    let seed = args.common.seed;
    let d = side * side;
    let mut rng = setup_rng(seed);
    let x0: Vec<u32> = (0..chains * d).map(|_| u32::from(rng.random::<f64>() < sigmoid(2.0 * BIAS))).collect();
    let options = RunOptions { seed, threads: 0, chains_per_task: 0 };

    let mut cells = Vec::new();
    let mut truths = Vec::new();
    for &sigma in &sigmas {
        let model = IsingModel::paper_lattice(side, sigma, BIAS);
        let target: &dyn Target = &model;
        let space = target.space().clone();
        let t = std::time::Instant::now();
        let (mean_s, dula_mean_s) = truth(&model)?;
        let floor = (dula_mean_s - mean_s).abs().ln();
        println!(
            "σ_c = {sigma}: E[s] = {mean_s:.12}, DULA(α={DULA_ALPHA}) E[s] = {dula_mean_s:.12}, floor {floor:.4} ({:.1} s)",
            t.elapsed().as_secs_f64()
        );
        truths
            .push(json!({"sigma": sigma, "mean_s": mean_s, "dula_mean_s": dula_mean_s, "dula_log_rmse_floor": floor}));
        let truth_vec = vec![mean_s; d];
        for (name, step_size) in SAMPLERS {
            let sampler = build_sampler(name, &SamplerParams { step_size, ..Default::default() })?;
            let steps = steps_for_budget(sampler.as_ref(), target, &x0, budget, &options)?;
            let every = (steps / 50).max(1);
            let out = run_chains(sampler.as_ref(), target, &x0, steps, &options, |first, n| {
                MeanErrorObserver::new(&space, &truth_vec, every, steps, (first, n), indicatif::ProgressBar::hidden())
            })?;
            let label = step_size.map_or(name.to_string(), |a| format!("{name}({a})"));
            let seconds = out.task_step_seconds.iter().copied().fold(0.0, f64::max);
            let curve = merge_curves(&out.observers, chains, d);
            println!(
                "  {label:<11} {steps:>8} steps in {seconds:.2} s: final log RMSE {:.3}",
                curve.last().map_or(f64::NAN, |p| p.log_rmse)
            );
            cells.push(Cell { sigma, label, steps, seconds, curve });
        }
    }

    let fin = |c: &Cell| c.curve.last().map_or(f64::NAN, |p| p.log_rmse);
    let rows: Vec<Vec<String>> = cells
        .iter()
        .map(|c| {
            vec![c.sigma.to_string(), c.label.clone(), c.steps.to_string(), c.seconds.to_string(), fin(c).to_string()]
        })
        .collect();
    run.write_csv("final.csv", &["sigma", "sampler", "steps", "seconds", "final_log_rmse"], &rows)?;
    let rows: Vec<Vec<String>> = cells
        .iter()
        .flat_map(|c| {
            c.curve.iter().map(|p| {
                vec![
                    c.sigma.to_string(),
                    c.label.clone(),
                    p.step.to_string(),
                    p.log_rmse.to_string(),
                    p.seconds.to_string(),
                ]
            })
        })
        .collect();
    run.write_csv("curves.csv", &["sigma", "sampler", "step", "log_rmse", "seconds_per_chain"], &rows)?;

    let best: Vec<_> = sigmas
        .iter()
        .map(|&s| {
            let here = cells.iter().filter(|c| c.sigma == s);
            let b = here.min_by(|a, b| fin(a).total_cmp(&fin(b))).map(|c| c.label.clone());
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
        "cells": cells.iter().map(|c| json!({"sigma": c.sigma, "sampler": c.label, "steps": c.steps, "seconds": c.seconds, "final_log_rmse": fin(c)})).collect::<Vec<_>>(),
        "best_per_sigma": best,
        "paper_claims": [{"claim": "DMALA has the lowest error at every σ_c", "source": "paper App. I.2, Fig. 7", "holds": dmala_best_everywhere}],
    });
    run.write_json("summary.json", &summary)?;
    run.write_figure("fig7", &figure(&cells, &truths, side, budget))?;
    run.write_meta(&json!({"sigmas": sigmas, "budget": budget, "chains": chains, "side": side,
        "samplers": SAMPLERS.map(|s| s.0), "init": "s_i = +1 w.p. sigmoid(2b), setup stream 0"}))?;
    println!("wrote {} in {:.1} s", run.dir.display(), run.elapsed());
    Ok(())
}

/// E_π[s_i] and DULA's E_{π_α}[s_i] (α = 0.2), averaged over sites, by one enumeration.
/// Z_α is written from spec §4.2 with the model's local fields, not the sampler's code:
/// log Z_α(x) = Σ_i softplus(ℓ_i), ℓ_i = −s_i·h_i(x) − 1/(2α). On the paper's lattice
/// (equal couplings and fields) ℓ_i depends only on s_i and the number of +1 neighbours, so
/// the softplus values come from a table (2^25 states × 25 sites per σ_c otherwise cost
/// minutes of exp/ln).
fn truth(model: &IsingModel) -> Result<(f64, f64)> {
    let d = model.d();
    let w = model.neighbour_weights();
    let uniform = w.iter().all(|&v| v == w[0]) && model.fields().iter().all(|&b| b == model.fields()[0]);
    let max_deg = (0..d).map(|i| model.neighbours_of(i).0.len()).max().unwrap_or(0);
    // table[x_i][ups] for the uniform case: h = b + J·(2·ups − deg) for a site of degree deg.
    let table = |deg: usize| -> Vec<[f64; 2]> {
        (0..=deg)
            .map(|ups| {
                let h = model.fields()[0] + w.first().copied().unwrap_or(0.0) * (2.0 * ups as f64 - deg as f64);
                [softplus(h - 0.5 / DULA_ALPHA), softplus(-h - 0.5 / DULA_ALPHA)]
            })
            .collect()
    };
    let tables: Vec<Vec<[f64; 2]>> = (0..=max_deg).map(table).collect();
    let log_z_alpha = |x: &[u32]| -> f64 {
        (0..d)
            .map(|i| {
                if uniform {
                    let ns = model.neighbours_of(i).0;
                    let ups = ns.iter().filter(|&&j| x[j as usize] == 1).count();
                    tables[ns.len()][ups][x[i] as usize]
                } else {
                    softplus(-model.value_of(x[i]) * model.local_field(x, i) - 0.5 / DULA_ALPHA)
                }
            })
            .sum::<f64>()
    };
    let mean = |x: &[u32]| x.iter().map(|&c| model.value_of(c)).sum::<f64>() / d as f64;
    let h_z = |x: &[u32]| log_z_alpha(x).exp();
    let h_zs = |x: &[u32]| log_z_alpha(x).exp() * mean(x);
    let e = enumerate_with(model, &EnumOptions { pair_moments: false, keep_probs: false }, &[&h_z, &h_zs])?;
    let mean_s = e.mean_value.iter().sum::<f64>() / d as f64;
    Ok((mean_s, e.expectations[1] / e.expectations[0]))
}

/// Steps that fit in `budget` seconds of the slowest task's time inside `step`, from pilot
/// runs that double until they take a tenth of the budget (timer noise stays small).
fn steps_for_budget(
    sampler: &dyn Sampler,
    target: &dyn Target,
    x0: &[u32],
    budget: f64,
    options: &RunOptions,
) -> Result<usize> {
    let mut pilot = 16usize;
    loop {
        let out = run_chains(sampler, target, x0, pilot, options, |_, _| ())?;
        let t = out.task_step_seconds.iter().copied().fold(0.0, f64::max);
        if t >= 0.1 * budget || pilot >= 1 << 26 {
            return Ok(((budget / t.max(1e-9)) * pilot as f64).ceil().max(10.0) as usize);
        }
        pilot *= 2;
    }
}

fn figure(cells: &[Cell], truths: &[serde_json::Value], side: usize, budget: f64) -> Figure {
    let mut labels: Vec<String> = Vec::new();
    for c in cells {
        if !labels.contains(&c.label) {
            labels.push(c.label.clone());
        }
    }
    let series = labels
        .iter()
        .map(|l| Series {
            label: l.clone(),
            points: cells
                .iter()
                .filter(|c| &c.label == l)
                .map(|c| (c.sigma, c.curve.last().map_or(f64::NAN, |p| p.log_rmse)))
                .collect(),
        })
        .collect();
    let floor = Series {
        label: format!("DULA({DULA_ALPHA}) exact floor"),
        points: truths
            .iter()
            .map(|t| (t["sigma"].as_f64().unwrap_or(f64::NAN), t["dula_log_rmse_floor"].as_f64().unwrap_or(f64::NAN)))
            .collect(),
    };
    let mut all = labels.clone();
    all.push(floor.label.clone());
    let mut series: Vec<Series> = series;
    series.push(floor);
    Figure {
        caption: format!("Fig. 7: {side}x{side} Ising, b=0.2, {budget} s per sampler"),
        labels: all,
        panels: vec![Panel::Lines {
            title: "final log RMSE vs coupling strength".into(),
            x_label: "σ_c".into(),
            y_label: "log RMSE at the budget".into(),
            series,
            refs: Vec::<RefLine>::new(),
        }],
    }
}
