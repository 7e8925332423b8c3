//! Yokoi, Otsuka, Sato (paper 001) §6.1, App. C-D: Bayesian Poisson NMF with CoRV-SGLD (exp,
//! softplus, ICLL) against minibatch SGLD with mirroring and SGRLD: test RMSE of the predictive
//! mean against iterations, iterations to an RMSE threshold, seconds per iteration. Data: the
//! MovieLens subset of `just data movielens` (671 × 9,066, 100,004 ratings; the paper's is
//! MovieLens 10M), or `--synthetic` / `--quick`: a synthetic Poisson-NMF stand-in.
//! Step size per sampler: the best validation RMSE over a log grid (ours \[R\], the paper's TPE).
//!
//! → `results/001-nmf/{tuning.csv, curves.csv, summary.json, 001-nmf.svg, 001-nmf.png, meta.json}`.

use anyhow::{Result, bail};
use clap::Parser;
use dlp_models::nmf::PoissonNmf;
use dlp_reproduce::grid::{log_grid, warn_if_at_edge};
use dlp_reproduce::nmf::{Point, iterations_to, read_ratings, run_curve, sampler, split, synthetic};
use dlp_reproduce::{CommonArgs, Figure, Panel, RefLine, Run, Series};
use rayon::prelude::*;
use serde_json::json;
use std::path::PathBuf;

const METHODS: [&str; 5] = ["corv-exp", "corv-softplus", "corv-icll", "sgld-mirror", "sgrld"];

/// Bayesian NMF on MovieLens: CoRV vs mirror SGLD vs SGRLD (paper 001 §6.1).
#[derive(Parser, Debug)]
#[command(name = "001-nmf")]
struct Args {
    #[command(flatten)]
    common: CommonArgs,
    /// Ratings CSV (userId,movieId,rating,…) [default: data/cache/movielens.csv].
    #[arg(long)]
    data: Option<PathBuf>,
    /// Use a synthetic Poisson-NMF stand-in instead of MovieLens (always with --quick).
    #[arg(long)]
    synthetic: bool,
    /// Rank R.
    #[arg(long, default_value_t = 20)]
    rank: usize,
    /// Iterations [default: 10000 (the paper's, R = 20); --quick: 100].
    #[arg(long)]
    iters: Option<usize>,
    /// Minibatch of ratings [default: 10000 (the paper's); --quick: 100].
    #[arg(long)]
    batch: Option<usize>,
    /// Step sizes tried per sampler, log-spaced in [--eps-min, --eps-max] [default: 3; --quick: 2].
    #[arg(long)]
    grid: Option<usize>,
    /// Smallest step size of the grid.
    #[arg(long, default_value_t = 1e-4)]
    eps_min: f64,
    /// Largest step size of the grid.
    #[arg(long, default_value_t = 3e-2)]
    eps_max: f64,
    /// RMSE threshold for the iterations-to-threshold table (the paper quotes 0.90).
    #[arg(long, default_value_t = 0.90)]
    threshold: f64,
}

fn main() {
    dlp_reproduce::main_with(run);
}

fn run(args: Args) -> Result<()> {
    let c = &args.common;
    let (iters, batch, n_grid) =
        (c.pick(args.iters, 10_000, 100), c.pick(args.batch, 10_000, 100), c.pick(args.grid, 3, 2));
    if iters < 10 || batch == 0 || n_grid == 0 || args.rank == 0 {
        bail!("--iters must be at least 10, --batch, --grid and --rank at least 1");
    }
    if !(args.eps_min > 0.0 && args.eps_min <= args.eps_max && args.eps_max.is_finite()) {
        bail!("--eps-min and --eps-max must satisfy 0 < eps-min ≤ eps-max < ∞");
    }
    let stand_in = args.synthetic || c.quick;
    let ratings = if stand_in {
        let (u, m, n) = if c.quick { (30, 40, 800) } else { (671, 9066, 100_004) };
        synthetic(u, m, args.rank, n, c.seed)?
    } else {
        let path = args.data.clone().unwrap_or_else(|| PathBuf::from("data/cache/movielens.csv"));
        if !path.is_file() {
            bail!("{} not found: run `just data movielens` (or pass --synthetic for the stand-in)", path.display());
        }
        read_ratings(&path)?
    };
    let [train, valid, test] = split(&ratings, c.seed);
    if batch > train.len() {
        bail!("--batch {batch} exceeds the {} training ratings", train.len());
    }
    let model =
        PoissonNmf::new(ratings.users, ratings.movies, args.rank, &train, 1.0, 1.0).map_err(anyhow::Error::msg)?;
    let data = if stand_in { "synthetic Poisson-NMF stand-in" } else { "MovieLens subset (dslabs)" };
    let run = Run::start("001-nmf", c)?;
    println!(
        "001-nmf: {data}, {} × {}, {} train / {} validation / {} test ratings, R = {}, B = {batch}, {iters} iterations",
        ratings.users,
        ratings.movies,
        train.len(),
        valid.len(),
        test.len(),
        args.rank
    );
    let eps = log_grid(args.eps_min, args.eps_max, n_grid);
    let every = (iters / 50).max(1);
    let configs: Vec<(usize, usize)> = (0..METHODS.len()).flat_map(|m| (0..n_grid).map(move |e| (m, e))).collect();
    let bar = run.progress(configs.len() as u64, "chains");
    // One chain per (sampler, ε), same seed for all: the same start and the same minibatches.
    let tuned: Vec<(Vec<Point>, f64)> = configs
        .par_iter()
        .map(|&(m, e)| {
            let s = sampler(METHODS[m], eps[e], batch)?;
            let (curve, secs) = run_curve(&model, &valid, &test, &s, iters, every, c.seed)?;
            bar.inc(1);
            Ok((curve, secs / iters as f64))
        })
        .collect::<Result<_>>()?;
    bar.finish_and_clear();
    // A NaN RMSE (a chain that blew up) sorts last.
    let last_valid = |i: usize| tuned[i].0.last().map(|p| p.valid).unwrap_or(f64::NAN);
    let mut tuning = vec![];
    let (mut curves, mut series, mut per) = (vec![], vec![], serde_json::Map::new());
    for (m, name) in METHODS.iter().enumerate() {
        let idx: Vec<usize> = (0..n_grid).map(|e| m * n_grid + e).collect();
        for &i in &idx {
            let sec = tuned[i].1;
            tuning.push(vec![
                name.to_string(),
                eps[i % n_grid].to_string(),
                last_valid(i).to_string(),
                (sec * 1e3).to_string(),
            ]);
        }
        let best = *idx.iter().min_by(|&&a, &&b| last_valid(a).total_cmp(&last_valid(b))).unwrap_or(&idx[0]);
        let ((t, sec), eps_best) = (&tuned[best], eps[best % n_grid]);
        let edge = warn_if_at_edge(&format!("001-nmf: {name}"), "ε", eps_best, &eps, "--eps-min/--eps-max");
        for p in t {
            curves.push(vec![
                name.to_string(),
                eps_best.to_string(),
                p.iter.to_string(),
                p.test.to_string(),
                p.test_clipped.to_string(),
            ]);
        }
        series.push(Series { label: name.to_string(), points: t.iter().map(|p| (p.iter as f64, p.test)).collect() });
        let final_test = t.last().map(|p| p.test).unwrap_or(f64::NAN);
        per.insert(name.to_string(), json!({
            "step_size": eps_best, "final_test_rmse": final_test, "final_test_rmse_clipped": t.last().map(|p| p.test_clipped),
            "iterations_to_threshold": iterations_to(t, args.threshold), "ms_per_iteration": sec * 1e3,
            "step_size_at_grid_edge": edge,
        }));
        println!(
            "{name:>14}: ε = {:.1e}, final test RMSE {final_test:.4}, to {}: {:?}, {:.2} ms/iteration",
            eps_best,
            args.threshold,
            iterations_to(t, args.threshold),
            sec * 1e3
        );
    }
    let mirror_ms = per["sgld-mirror"]["ms_per_iteration"].as_f64().unwrap_or(f64::NAN);
    for (_, v) in per.iter_mut() {
        let ms = v["ms_per_iteration"].as_f64().unwrap_or(f64::NAN);
        v["time_vs_mirror"] = json!(ms / mirror_ms);
    }
    run.write_csv("tuning.csv", "method,step_size,validation_rmse,ms_per_iteration", &tuning)?;
    run.write_csv("curves.csv", "method,step_size,iteration,test_rmse,test_rmse_clipped", &curves)?;
    let fig = Figure {
        caption: format!(
            "001 §6.1: Bayesian NMF, {data}, R = {}, B = {batch}; test RMSE of the predictive mean",
            args.rank
        ),
        labels: METHODS.map(String::from).to_vec(),
        panels: vec![Panel::lines(
            "test RMSE vs iteration",
            "iteration",
            "RMSE",
            series,
            vec![RefLine { label: format!("{}", args.threshold), y: args.threshold }],
        )],
    };
    run.write_figure("001-nmf", &fig)?;
    run.write_json("summary.json", &json!({
        "data": data, "users": ratings.users, "movies": ratings.movies, "train": train.len(), "validation": valid.len(),
        "test": test.len(), "rank": args.rank, "batch": batch, "iterations": iters, "step_sizes": eps,
        "threshold": args.threshold, "methods": per,
        "paper_claims": {"data": "MovieLens 10M (71,567 × 10,681), B = 10,000, P100 GPU; R = 20 for 10,000 iterations (the claims below) and R = 50 for 20,000 (not run here)",
            "sgld_iterations_to_0.90": 10000, "corv_softplus_icll_iterations_to_0.90": 3000,
            "corv_time_overhead": "at most +10% per iteration (App. D)", "ordering": "CoRV beats the best baseline (SGRLD)"},
    }))?;
    run.finish(&json!({"data": data, "rank": args.rank, "batch": batch, "iters": iters, "grid": n_grid, "threshold": args.threshold}))
}
