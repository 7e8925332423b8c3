//! Han et al. (AISTATS 2020, paper 004) §4.3, Fig. 3: MSE of the estimate of E\[z\] on the 10 × 10
//! Ising grid p_*(z) ∝ exp(σ_p Σ_{(i,j)∈E} z_i z_j) (open boundary, no field [spec §7.2, R]), so
//! E\[z\] = 0. (a) σ_p = 0.1, n varied; (b) n = 20, σ_p ∈ [−0.15, 0.15]; 200 trials, 500
//! iterations, particles from x ~ N(−2, 1), Γ = sign, base N(0, I). Methods: GF-SVGD with ρ = p₀
//! (the paper's), GF-SVGD with the relaxed surrogate (our extra row), systematic-scan Gibbs (one
//! sweep per iteration, start sign(x)); exact Monte Carlo has MSE exactly 1/n here (z_i² = 1,
//! E z_i = 0), drawn as a line rather than simulated. The paper's Adam 1e−4 barely moves the
//! particles in 500 iterations (spec §6 item 8), so GF-SVGD uses Adam lr `--lr` (default 0.1).
//!
//! → `results/004-fig3/{trials.csv, mse.csv, summary.json, 004-fig3.svg, 004-fig3.png, meta.json}`.

use anyhow::{Result, bail};
use clap::Parser;
use dlp_core::rng::derive_seed;
use dlp_reproduce::gf_svgd::{IsingMethod, grid_ising, ising_trial};
use dlp_reproduce::{CommonArgs, Figure, Panel, Run, Series, parse_list};
use rayon::prelude::*;
use serde_json::json;

const L: usize = 10;
const METHODS: [IsingMethod; 3] = [IsingMethod::GfSvgd, IsingMethod::GfSvgdRelaxed, IsingMethod::Gibbs];

/// MSE of `E[z]` on the 10 × 10 Ising grid: GF-SVGD, Gibbs, exact Monte Carlo (Han et al. Fig. 3).
#[derive(Parser, Debug)]
#[command(name = "004-fig3")]
struct Args {
    #[command(flatten)]
    common: CommonArgs,
    /// Trials per cell [default: 200; --quick: 4].
    #[arg(long)]
    trials: Option<usize>,
    /// Iterations (Gibbs: sweeps) [default: 500; --quick: 50].
    #[arg(long)]
    iters: Option<usize>,
    /// Particle counts of panel (a) [default: 10,20,50,100,200; --quick: 10,20].
    #[arg(long)]
    sizes: Option<String>,
    /// Couplings σ_p of panel (b) [default: −0.15 to 0.15 by 0.025; --quick: -0.1,0.1].
    #[arg(long, allow_hyphen_values = true)]
    couplings: Option<String>,
    /// Coupling of panel (a).
    #[arg(long, default_value_t = 0.1, allow_hyphen_values = true)]
    sigma: f64,
    /// Particles of panel (b).
    #[arg(long, default_value_t = 20)]
    n: usize,
    /// Adam learning rate of GF-SVGD.
    #[arg(long, default_value_t = 0.1)]
    lr: f64,
}

fn main() {
    dlp_reproduce::main_with(run);
}

fn run(args: Args) -> Result<()> {
    let c = &args.common;
    let trials = c.pick(args.trials, 200, 4);
    let iters = c.pick(args.iters, 500, 50);
    let sizes: Vec<usize> =
        parse_list(&c.pick(args.sizes.clone(), "10,20,50,100,200".into(), "10,20".into()), "sizes")?;
    let all_couplings = (-6..=6).map(|k| format!("{:.3}", k as f64 * 0.025)).collect::<Vec<_>>().join(",");
    let couplings: Vec<f64> =
        parse_list(&c.pick(args.couplings.clone(), all_couplings, "-0.1,0.1".into()), "couplings")?;
    if trials == 0
        || iters == 0
        || args.n < 2
        || sizes.iter().any(|&n| n < 2)
        || !args.lr.is_finite()
        || args.lr <= 0.0
        || !args.sigma.is_finite()
        || couplings.iter().any(|s| !s.is_finite())
    {
        bail!("--trials and --iters must be at least 1, every n at least 2, --lr positive, couplings finite");
    }
    let run = Run::start("004-fig3", c)?;
    println!(
        "004-fig3: {L}x{L} grid, {trials} trials, {iters} iterations, (a) sigma = {} n = {sizes:?}, (b) n = {} sigma = {couplings:?}, Adam lr {}",
        args.sigma, args.n, args.lr
    );
    let mut cells: Vec<(&str, f64, usize)> = sizes.iter().map(|&n| ("a", args.sigma, n)).collect();
    cells.extend(couplings.iter().map(|&s| ("b", s, args.n)));
    let bar = run.progress((cells.len() * METHODS.len() * trials) as u64, "trials");
    let (mut trial_rows, mut mse_rows, mut table) = (vec![], vec![], vec![]);
    let mut curves: Vec<(String, Vec<(f64, f64)>)> = vec![];
    for (ci, &(panel, sigma, n)) in cells.iter().enumerate() {
        let model = grid_ising(L, sigma)?;
        for &m in METHODS.iter() {
            let res: Vec<(f64, f64)> = (0..trials as u64)
                .into_par_iter()
                .map(|t| {
                    // The same start for every method of a trial: the seed depends on the cell and trial only.
                    let r = ising_trial(&model, m, n, iters, args.lr, derive_seed(c.seed, &[ci as u64, t]));
                    bar.inc(1);
                    r
                })
                .collect::<Result<_>>()?;
            let mean = res.iter().map(|r| r.0).sum::<f64>() / trials as f64;
            let ess = res.iter().map(|r| r.1).sum::<f64>() / trials as f64;
            for (t, r) in res.iter().enumerate() {
                trial_rows.push(vec![
                    panel.into(),
                    sigma.to_string(),
                    n.to_string(),
                    m.label().into(),
                    t.to_string(),
                    r.0.to_string(),
                    r.1.to_string(),
                ]);
            }
            mse_rows.push(vec![
                panel.into(),
                sigma.to_string(),
                n.to_string(),
                m.label().into(),
                mean.to_string(),
                (1.0 / n as f64).to_string(),
            ]);
            table.push(json!({"panel": panel, "sigma": sigma, "n": n, "method": m.label(), "mse": mean, "mc_mse": 1.0 / n as f64, "final_weight_ess": ess}));
            bar.suspend(|| {
                println!(
                    "({panel}) sigma = {sigma:>6} n = {n:>4} {:>16}: MSE {mean:.4} (MC {:.4}), final ESS {ess:.1}",
                    m.label(),
                    1.0 / n as f64
                )
            });
            let key = format!("{panel}|{}", m.label());
            let x = if panel == "a" { (n as f64).log10() } else { sigma };
            match curves.iter_mut().find(|(k, _)| *k == key) {
                Some((_, p)) => p.push((x, mean.log10())),
                None => curves.push((key, vec![(x, mean.log10())])),
            }
        }
        let key = format!("{panel}|exact MC (1/n)");
        let x = if panel == "a" { (n as f64).log10() } else { sigma };
        match curves.iter_mut().find(|(k, _)| *k == key) {
            Some((_, p)) => p.push((x, -(n as f64).log10())),
            None => curves.push((key, vec![(x, -(n as f64).log10())])),
        }
    }
    bar.finish_and_clear();
    run.write_csv("trials.csv", "panel,sigma,n,method,trial,mse,final_weight_ess", &trial_rows)?;
    run.write_csv("mse.csv", "panel,sigma,n,method,mean_mse,mc_mse", &mse_rows)?;
    let series = |p: &str| -> Vec<Series> {
        curves
            .iter()
            .filter(|(k, _)| k.starts_with(&format!("{p}|")))
            .map(|(k, pts)| Series { label: k[2..].to_string(), points: pts.clone() })
            .collect()
    };
    let mut labels: Vec<String> = METHODS.iter().map(|m| m.label().to_string()).collect();
    labels.push("exact MC (1/n)".into());
    let fig = Figure {
        caption: format!("004 Fig. 3: 10x10 Ising, MSE of E[z], {trials} trials, {iters} iterations"),
        labels,
        panels: vec![
            Panel::lines(format!("(a) sigma_p = {}", args.sigma), "log10 n", "log10 MSE", series("a"), vec![]),
            Panel::lines(format!("(b) n = {}", args.n), "sigma_p", "log10 MSE", series("b"), vec![]),
        ],
    };
    run.write_figure("004-fig3", &fig)?;
    run.write_json("summary.json", &json!({"lattice": [L, L], "boundary": "open", "trials": trials, "iterations": iters, "lr": args.lr, "cells": table}))?;
    run.finish(&json!({"trials": trials, "iters": iters, "sizes": sizes, "couplings": couplings, "sigma": args.sigma, "n": args.n, "lr": args.lr,
        "init": "x ~ N(-2, 1); Gibbs starts at sign(x)", "seeds": "derive_seed(seed, [cell, trial]); particles from chain streams of it, Gibbs from derive_seed(., [1])"}))
}
