//! Han et al. (AISTATS 2020, paper 004) §4.3, Fig. 4 and App. Fig. 8: Bernoulli RBM with M = 25
//! hidden units (spec §7.3: visible ±1, hidden {0, 1} marginalised, W ~ N(0, 0.05), b, c ~
//! N(0, 1)). (a) d = 100, n varied; (b) n = 100, d varied. GF-SVGD with the relaxed surrogate
//! (Adam lr `--lr`, 500 iterations) and block Gibbs (500 sweeps), both from x ~ N(0, 1) \[R\], are
//! compared with a ground truth of 500 block-Gibbs chains run `--gt-sweeps` sweeps (the paper
//! and our default run 10⁵), by the unbiased MMD² with k = exp(−H/d) (Fig. 4) and
//! the MSE of the mean of z (Fig. 8). DHMC is not run (optional, spec §7.3).
//!
//! → `results/004-fig4/{trials.csv, summary.json, 004-fig4.svg/png, 004-fig8.svg/png, meta.json}`.

use anyhow::{Result, bail};
use clap::Parser;
use dlp_core::rng::derive_seed;
use dlp_reproduce::gf_svgd::{Curve, paper_rbm, rbm_gibbs, rbm_metrics, rbm_run, uniform_states};
use dlp_reproduce::{CommonArgs, Figure, Panel, Run, Series, parse_list};
use rayon::prelude::*;
use serde_json::json;

const M: usize = 25;
const METHODS: [(&str, bool); 2] = [("gf-svgd-relaxed", true), ("block gibbs", false)];

/// MMD and MSE of GF-SVGD and Gibbs on a Bernoulli RBM (Han et al. Figs. 4, 8).
#[derive(Parser, Debug)]
#[command(name = "004-fig4")]
struct Args {
    #[command(flatten)]
    common: CommonArgs,
    /// Trials per cell [default: 10; --quick: 2].
    #[arg(long)]
    trials: Option<usize>,
    /// Iterations of both methods [default: 500; --quick: 50].
    #[arg(long)]
    iters: Option<usize>,
    /// Sweeps of the ground-truth chains [default: 100000, the paper's; --quick: 200].
    #[arg(long)]
    gt_sweeps: Option<usize>,
    /// Ground-truth chains [default: 500; --quick: 100].
    #[arg(long)]
    gt_chains: Option<usize>,
    /// Sample sizes of panel (a) at d = 100 [default: 10,20,50,100,200; --quick: 10,20].
    #[arg(long)]
    sizes: Option<String>,
    /// Dimensions of panel (b) at n = 100 [default: 25,50,100,150,200; --quick: 20].
    #[arg(long)]
    dims: Option<String>,
    /// Adam learning rate of GF-SVGD.
    #[arg(long, default_value_t = 0.1)]
    lr: f64,
}

fn main() {
    dlp_reproduce::main_with(run);
}

fn run(args: Args) -> Result<()> {
    let c = &args.common;
    let (trials, iters) = (c.pick(args.trials, 10, 2), c.pick(args.iters, 500, 50));
    let (gt_sweeps, gt_chains) = (c.pick(args.gt_sweeps, 100_000, 200), c.pick(args.gt_chains, 500, 100));
    let sizes: Vec<usize> =
        parse_list(&c.pick(args.sizes.clone(), "10,20,50,100,200".into(), "10,20".into()), "sizes")?;
    let dims: Vec<usize> = parse_list(&c.pick(args.dims.clone(), "25,50,100,150,200".into(), "20".into()), "dims")?;
    let (d_a, n_b) = (if c.quick { 20 } else { 100 }, if c.quick { 20 } else { 100 });
    if trials == 0 || iters == 0 || gt_sweeps == 0 || gt_chains < 2 || sizes.iter().chain(&dims).any(|&v| v < 2) {
        bail!("--trials, --iters, --gt-sweeps must be at least 1; chains, sizes and dimensions at least 2");
    }
    if !args.lr.is_finite() || args.lr <= 0.0 {
        bail!("--lr must be a positive number");
    }
    let run = Run::start("004-fig4", c)?;
    println!(
        "004-fig4: M = {M}, {trials} trials, {iters} iterations; ground truth {gt_chains} chains x {gt_sweeps} sweeps"
    );
    let mut cells: Vec<(&str, usize, usize)> = sizes.iter().map(|&n| ("a", d_a, n)).collect();
    cells.extend(dims.iter().map(|&d| ("b", d, n_b)));
    let (mut rows, mut table, mut gt_time) = (vec![], vec![], std::collections::BTreeMap::new());
    let mut pts: Vec<(String, Curve, Curve)> = vec![];
    let bar = run.progress((cells.len() * METHODS.len() * trials) as u64, "trials");
    let mut truths: std::collections::BTreeMap<usize, (dlp_models::Rbm, Vec<u32>)> = Default::default();
    for &(panel, d, n) in &cells {
        if let std::collections::btree_map::Entry::Vacant(slot) = truths.entry(d) {
            let t0 = std::time::Instant::now();
            let rbm = paper_rbm(d, M, derive_seed(c.seed, &[d as u64]))?;
            let x0 = uniform_states(gt_chains, d, derive_seed(c.seed, &[d as u64, 1]));
            let gt = bar.suspend(|| rbm_gibbs(&rbm, &x0, gt_sweeps, derive_seed(c.seed, &[d as u64, 2])))?;
            gt_time.insert(d, t0.elapsed().as_secs_f64());
            bar.suspend(|| println!("ground truth d = {d}: {:.1} s", t0.elapsed().as_secs_f64()));
            slot.insert((rbm, gt));
        }
        let (rbm, gt) = &truths[&d];
        for (label, gf) in METHODS {
            let res: Vec<(f64, f64)> = (0..trials as u64)
                .into_par_iter()
                .map(|t| {
                    let zs = rbm_run(rbm, gf, n, iters, args.lr, derive_seed(c.seed, &[d as u64, n as u64, 3, t]))?;
                    bar.inc(1);
                    rbm_metrics(&zs, gt, d)
                })
                .collect::<Result<_>>()?;
            let mmd = res.iter().map(|r| r.0).sum::<f64>() / trials as f64;
            let mse = res.iter().map(|r| r.1).sum::<f64>() / trials as f64;
            for (t, r) in res.iter().enumerate() {
                rows.push(vec![
                    panel.into(),
                    d.to_string(),
                    n.to_string(),
                    label.into(),
                    t.to_string(),
                    r.0.to_string(),
                    r.1.to_string(),
                ]);
            }
            bar.suspend(|| println!("({panel}) d = {d:>4} n = {n:>4} {label:>16}: MMD² {mmd:.5}, MSE {mse:.5}"));
            table.push(json!({"panel": panel, "d": d, "n": n, "method": label, "mmd2_u": mmd, "mse": mse}));
            let key = format!("{panel}|{label}");
            let x = if panel == "a" { n as f64 } else { d as f64 };
            if !pts.iter().any(|p| p.0 == key) {
                pts.push((key.clone(), vec![], vec![]));
            }
            let e = pts.iter_mut().find(|p| p.0 == key).expect("inserted above");
            e.1.push((x, mmd));
            e.2.push((x, mse.log10()));
        }
    }
    bar.finish_and_clear();
    run.write_csv("trials.csv", "panel,d,n,method,trial,mmd2_u,mse", &rows)?;
    let series = |p: &str, mse: bool| -> Vec<Series> {
        pts.iter()
            .filter(|e| e.0.starts_with(&format!("{p}|")))
            .map(|e| Series { label: e.0[2..].to_string(), points: if mse { e.2.clone() } else { e.1.clone() } })
            .collect()
    };
    let labels: Vec<String> = METHODS.iter().map(|m| m.0.to_string()).collect();
    for (stem, mse, y) in [("004-fig4", false, "MMD² (unbiased)"), ("004-fig8", true, "log10 MSE of E[z]")] {
        let fig = Figure {
            caption: format!(
                "004 {}: RBM M = {M}, {trials} trials, ground truth {gt_chains} x {gt_sweeps} sweeps",
                if mse { "Fig. 8" } else { "Fig. 4" }
            ),
            labels: labels.clone(),
            panels: vec![
                Panel::lines(format!("(a) d = {d_a}"), "n", y, series("a", mse), vec![]),
                Panel::lines(format!("(b) n = {n_b}"), "d", y, series("b", mse), vec![]),
            ],
        };
        run.write_figure(stem, &fig)?;
    }
    run.write_json("summary.json", &json!({"m": M, "trials": trials, "iterations": iters, "gt_chains": gt_chains, "gt_sweeps": gt_sweeps, "gt_seconds": gt_time, "cells": table}))?;
    run.finish(&json!({"trials": trials, "iters": iters, "gt_sweeps": gt_sweeps, "gt_chains": gt_chains, "sizes": sizes, "dims": dims, "lr": args.lr, "init": "x ~ N(0,1); Gibbs from sign(x)"}))
}
