//! Han et al. (AISTATS 2020, paper 004) §4.5, Fig. 5 (c, d): goodness-of-fit power on a Bernoulli
//! RBM (the Ising panels a, b are `gof-power`). Null p: d = 50 visible spins, M = 25 hidden,
//! W ~ N(0, 1/M), b, c ~ N(0, 1) (gof spec §9.3); data q: W + ε, one scalar ε ~ N(0, σ′²) added
//! to every entry and drawn afresh in each replication (the kdsd reference experiment's
//! perturbation, gof spec §7 item 9). For every
//! (σ′, n), R replications of: n draws from q and n from p (each the last state of its own
//! block-Gibbs chain after `--sweeps` sweeps from a uniform start), then KDSD, GF-KSD (relaxed
//! and gaussian surrogates) and MMD at α = 0.05. Type-II error = 1 − rejection rate.
//! `--bootstrap model` calibrates the Stein tests by simulation from p instead of their
//! multinomial bootstraps: B data sets of n draws from p, drawn as the data are (block Gibbs from
//! a uniform start), once per n and shared by every replication (a Monte Carlo test).
//!
//! → `results/004-fig5/{power.csv, summary.json, 004-fig5.svg, 004-fig5.png, meta.json}`.

use anyhow::{Result, bail};
use clap::Parser;
use dlp_core::rng::derive_seed;
use dlp_reproduce::gf_svgd::{gof_rbm_pair, gof_rejections, rbm_gibbs, stein_outcomes, uniform_states};
use dlp_reproduce::{CommonArgs, Figure, Panel, RefLine, Run, Series, parse_list};
use rayon::prelude::*;
use serde_json::json;

const TESTS: [&str; 4] = ["KDSD", "GF-KSD relaxed", "GF-KSD gaussian", "MMD"];
const ALPHA: f64 = 0.05;
const D: usize = 50;
const M: usize = 25;

/// Type-II error of KDSD, GF-KSD and MMD on a perturbed RBM (Han et al. Fig. 5 c, d).
#[derive(Parser, Debug)]
#[command(name = "004-fig5")]
struct Args {
    #[command(flatten)]
    common: CommonArgs,
    /// Replications per cell [default: 100; --quick: 4].
    #[arg(long)]
    reps: Option<usize>,
    /// Bootstrap / permutation replicates [default: 500; --quick: 50].
    #[arg(long)]
    boot: Option<usize>,
    /// Perturbations σ′ of panel (c) at n = `--n` [default: 0,0.02,0.05,0.1,0.2; --quick: 0,0.2].
    #[arg(long)]
    perturbations: Option<String>,
    /// Sample sizes of panel (d) at σ′ = `--sigma` [default: 25,50,100,200; --quick: none].
    #[arg(long)]
    sizes: Option<String>,
    /// Sample size of panel (c).
    #[arg(long, default_value_t = 100)]
    n: usize,
    /// Perturbation of panel (d).
    #[arg(long, default_value_t = 0.05)]
    sigma: f64,
    /// Block-Gibbs sweeps per draw [default: 500; --quick: 50].
    #[arg(long)]
    sweeps: Option<usize>,
    /// The Stein tests' null: `multinomial` (their bootstrap, the paper's) or `model` (B data
    /// sets drawn from p). MMD always uses permutations.
    #[arg(long, default_value = "multinomial", value_parser = ["multinomial", "model"])]
    bootstrap: String,
}

fn main() {
    dlp_reproduce::main_with(run);
}

fn run(args: Args) -> Result<()> {
    let c = &args.common;
    let (reps, boot, sweeps) = (c.pick(args.reps, 100, 4), c.pick(args.boot, 500, 50), c.pick(args.sweeps, 500, 50));
    let perts: Vec<f64> =
        parse_list(&c.pick(args.perturbations.clone(), "0,0.02,0.05,0.1,0.2".into(), "0,0.2".into()), "perturbations")?;
    let sizes: Vec<usize> = parse_list(&c.pick(args.sizes.clone(), "25,50,100,200".into(), String::new()), "sizes")?;
    if reps == 0 || boot == 0 || sweeps == 0 || args.n < 2 || sizes.iter().any(|&n| n < 2) {
        bail!("--reps, --boot and --sweeps must be at least 1 and every sample size at least 2");
    }
    if perts.iter().chain([&args.sigma]).any(|s| !s.is_finite() || *s < 0.0) {
        bail!("perturbations must be finite and non-negative");
    }
    let run = Run::start("004-fig5", c)?;
    println!(
        "004-fig5: RBM d = {D}, M = {M}; (c) n = {} sigma' = {perts:?}; (d) sigma' = {} n = {sizes:?}; R = {reps}, B = {boot}, {sweeps} sweeps",
        args.n, args.sigma
    );
    let mut cells: Vec<(&str, f64, usize)> = perts.iter().map(|&s| ("c", s, args.n)).collect();
    cells.extend(sizes.iter().map(|&n| ("d", args.sigma, n)));
    let model_null = args.bootstrap == "model";
    let mut ns: Vec<usize> = cells.iter().map(|c| c.2).collect();
    ns.sort_unstable();
    ns.dedup();
    let p0 = gof_rbm_pair(D, M, 0.0, derive_seed(c.seed, &[7]), 0)?.0;
    let mut nulls = std::collections::BTreeMap::new();
    if model_null {
        let bar = run.progress((ns.len() * boot) as u64, "model-null data sets");
        for &n in &ns {
            let null: Vec<[f64; 3]> = (0..boot as u64)
                .into_par_iter()
                .map(|b| {
                    let s = derive_seed(c.seed, &[8, n as u64, b]);
                    let x0 = uniform_states(n, D, derive_seed(s, &[1]));
                    let ys = rbm_gibbs(&p0, &x0, sweeps, derive_seed(s, &[2]))?;
                    bar.inc(1);
                    Ok(stein_outcomes(&p0, &ys, 1, s)?.map(|o| o.statistic))
                })
                .collect::<Result<_>>()?;
            nulls.insert(n, null);
        }
        bar.finish_and_clear();
    }
    let bar = run.progress((cells.len() * reps) as u64, "replications");
    let (mut rows, mut table, mut curves) = (vec![], vec![], vec![vec![]; 2 * TESTS.len()]);
    for (ci, &(panel, sigma, n)) in cells.iter().enumerate() {
        let rej: Vec<[bool; 4]> = (0..reps as u64)
            .into_par_iter()
            .map(|r| {
                let s = derive_seed(c.seed, &[ci as u64, r]);
                let (p, q) = gof_rbm_pair(D, M, sigma, derive_seed(c.seed, &[7]), derive_seed(s, &[6]))?;
                let xs = rbm_gibbs(&q, &uniform_states(n, D, derive_seed(s, &[1])), sweeps, derive_seed(s, &[2]))?;
                let ys = rbm_gibbs(&p, &uniform_states(n, D, derive_seed(s, &[3])), sweeps, derive_seed(s, &[4]))?;
                let out = gof_rejections(
                    &p,
                    &xs,
                    &ys,
                    boot,
                    ALPHA,
                    derive_seed(s, &[5]),
                    nulls.get(&n).map(|v| v.as_slice()),
                );
                bar.inc(1);
                out
            })
            .collect::<Result<_>>()?;
        let mut line = vec![];
        for (t, name) in TESTS.iter().enumerate() {
            let rate = rej.iter().filter(|r| r[t]).count() as f64 / reps as f64;
            rows.push(vec![
                panel.into(),
                sigma.to_string(),
                n.to_string(),
                name.to_string(),
                reps.to_string(),
                rate.to_string(),
                (1.0 - rate).to_string(),
            ]);
            table.push(json!({"panel": panel, "sigma_prime": sigma, "n": n, "test": name, "rejection_rate": rate, "type_ii_error": 1.0 - rate}));
            let x = if panel == "c" { sigma } else { n as f64 };
            curves[t + if panel == "c" { 0 } else { TESTS.len() }].push((x, 1.0 - rate));
            line.push(format!("{name} {:.2}", 1.0 - rate));
        }
        bar.suspend(|| println!("({panel}) sigma' = {sigma:<5} n = {n:<4} type-II error: {}", line.join(", ")));
    }
    bar.finish_and_clear();
    run.write_csv("power.csv", "panel,sigma_prime,n,test,replications,rejection_rate,type_ii_error", &rows)?;
    let series = |off: usize| -> Vec<Series> {
        TESTS
            .iter()
            .enumerate()
            .map(|(t, name)| Series { label: name.to_string(), points: curves[off + t].clone() })
            .collect()
    };
    let refs = || vec![RefLine { label: "1 − α".into(), y: 1.0 - ALPHA }];
    let mut panels = vec![Panel::lines(format!("(c) n = {}", args.n), "sigma'", "type-II error", series(0), refs())];
    if !sizes.is_empty() {
        panels.push(Panel::lines(
            format!("(d) sigma' = {}", args.sigma),
            "n",
            "type-II error",
            series(TESTS.len()),
            refs(),
        ));
    }
    let labels = TESTS.iter().map(|s| s.to_string()).collect();
    let fig = Figure {
        caption: format!(
            "004 Fig. 5 (c, d): RBM d = {D}, M = {M}, R = {reps}, B = {boot}, Stein null {}",
            args.bootstrap
        ),
        labels,
        panels,
    };
    run.write_figure("004-fig5", &fig)?;
    run.write_json(
        "summary.json",
        &json!({"d": D, "m": M, "alpha": ALPHA, "reps": reps, "boot": boot, "sweeps": sweeps, "stein_null": args.bootstrap, "cells": table}),
    )?;
    run.finish(&json!({"reps": reps, "boot": boot, "sweeps": sweeps, "stein_null": args.bootstrap, "perturbations": perts, "sizes": sizes, "n": args.n, "sigma": args.sigma,
        "model_seed": "derive_seed(seed, [7]) for p in every cell; the scalar perturbation of q from each replication's seed"}))
}
