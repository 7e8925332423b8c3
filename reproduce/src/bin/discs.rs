//! DISCS's benchmark (google-research/discs, NeurIPS 2023 datasets and benchmarks track; issue
//! 43): every registry sampler on DISCS's classical tasks, ESS of the distance to a random
//! reference state per energy evaluation and per second (`dlp_core::stats::DiscsEss`).
//!
//! Config → one resumable cell per (task, sampler) (`dlp_reproduce::discs`) →
//! `results/discs/{cells.csv, skipped.csv, summary.json, discs-<task>.{svg,png}, meta.json}`.
//! `--quick` runs the enumerable tier and checks each chain mean of the statistic against
//! its exact value (`z` in the CSV).

use anyhow::{Result, bail};
use clap::Parser;
use dlp_core::rng::derive_seed;
use dlp_reproduce::discs::{Outcome, exact_statistic, load_task, named_samplers, outcome, samplers, z_score};
use dlp_reproduce::{CommonArgs, Figure, Panel, Run, parse_list};
use serde_json::json;

/// The DISCS-sized tasks; the RBMs trained here (`just reproduce discs-rbm`) run when trained.
const FULL_TASKS: &str = "bernoulli,categorical,ising,ising-lowtemp,potts,fhmm,rbm-standin,rbm-mnist-2-25,rbm-mnist-2-200,rbm-fashion-4-50,rbm-fashion-8-50";
const QUICK_TASKS: &str =
    "bernoulli-small,categorical-small,ising-small,potts-small,fhmm-small,rbm-small,cat-rbm-small";
/// DISCS's protocol (`discs/common/configs.py`: batch_size, chain_length, ess_ratio).
const DISCS_CHAINS: usize = 100;
const DISCS_STEPS: usize = 100_000;

/// DISCS's classical tasks × every registry sampler.
#[derive(Parser, Debug)]
#[command(name = "discs")]
struct Args {
    #[command(flatten)]
    common: CommonArgs,
    /// Comma-separated tasks: DISCS task names (`dlp_models::discs`) or model files [default: the DISCS-sized ones; --quick: the enumerable tier].
    #[arg(long)]
    tasks: Option<String>,
    /// Comma-separated sampler names to run, any the registry resolves (`pas-3`, `rw-2`, …)
    /// [default: every registry row once, in DISCS's configuration where it has one].
    #[arg(long)]
    samplers: Option<String>,
    /// Chains per cell [default: 8; --quick: 8]. DISCS: 100.
    #[arg(long)]
    chains: Option<usize>,
    /// Steps per chain, burn-in included [default: 800; --quick: 2000]. DISCS: 100,000.
    #[arg(long)]
    steps: Option<usize>,
    /// Burn-in fraction (DISCS's `ess_ratio`).
    #[arg(long, default_value_t = 0.5)]
    ess_ratio: f64,
    /// Resume from the cells of an interrupted run in the same --out.
    #[arg(long)]
    resume: bool,
}

fn main() {
    dlp_reproduce::main_with(run);
}

fn run(args: Args) -> Result<()> {
    let c = &args.common;
    let mut tasks: Vec<String> =
        parse_list(&args.tasks.clone().unwrap_or_else(|| c.pick(None, FULL_TASKS, QUICK_TASKS).into()), "--tasks")?;
    // By default a trained task whose file is absent is left out, said here and in the summary;
    // named with --tasks it is an error naming the recipe.
    let untrained: Vec<String> = tasks
        .iter()
        .filter(|t| args.tasks.is_none() && dlp_models::discs::find(t).is_some_and(|d| d.trained))
        .filter(|t| !dlp_models::discs::trained_path(t).exists())
        .cloned()
        .collect();
    for t in &untrained {
        println!("discs: {t} left out: not trained here yet (`just reproduce discs-rbm`)");
    }
    tasks.retain(|t| !untrained.contains(t));
    let only: Option<Vec<String>> = args.samplers.as_deref().map(|s| parse_list(s, "--samplers")).transpose()?;
    let (chains, steps) = (c.pick(args.chains, 8, 8), c.pick(args.steps, 800, 2000));
    let (burn, kept) = dlp_core::stats::discs_split(steps, args.ess_ratio);
    if chains == 0 || kept < 4 || !(0.0..1.0).contains(&args.ess_ratio) {
        bail!("need --chains ≥ 1, --ess-ratio in [0, 1) and at least 4 kept steps");
    }
    let models = tasks.iter().map(|t| load_task(t)).collect::<Result<Vec<_>>>()?;
    let chosen = match &only {
        Some(names) => named_samplers(names)?,
        None => samplers(),
    };
    let mut run = Run::start("discs", c)?;
    run.resume = args.resume;
    let seed = run.seed();
    println!(
        "discs: {} tasks × {} samplers, {chains} chains (DISCS {DISCS_CHAINS}), {steps} steps (DISCS {DISCS_STEPS}), burn-in {burn}, seed {seed}",
        tasks.len(),
        chosen.len()
    );
    let bar = run.progress((tasks.len() * chosen.len()) as u64, "discs cells");
    let (mut rows, mut skipped, mut cells, mut ranks) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (ti, name) in tasks.iter().enumerate() {
        let (model, enumerable, doc) = &models[ti];
        let task_seed = derive_seed(seed, &[ti as u64]);
        let exact = if *enumerable { Some(exact_statistic(model, chains, task_seed)?) } else { None };
        let mut bars = Vec::new();
        for (sampler, spec, why) in &chosen {
            bar.inc(1);
            if let Some(why) = why {
                skipped.push(vec![name.clone(), sampler.clone(), why.clone()]);
                continue;
            }
            let identity = json!({"task": name, "sampler": sampler, "chains": chains, "steps": steps, "burn": burn, "seed": task_seed});
            let threads = c.threads.unwrap_or(0);
            let o = run.cell(&format!("{name}--{sampler}"), &identity, || {
                outcome(model, sampler, spec, (chains, burn, kept), task_seed, threads)
            })?;
            let cell = match o {
                Outcome::Ran(cell) => cell,
                Outcome::Skipped(why) => {
                    skipped.push(vec![name.clone(), sampler.clone(), why]);
                    continue;
                }
            };
            let z = exact.map(|e| z_score(&cell, chains, e));
            println!(
                "{name:<18} {sampler:<14} ESS {:>8.2}  ESS/eval {:>10.3e}  ESS/s {:>10.3e}  accept {:.3}  evals/chain {:>9.0}{}",
                cell.ess,
                cell.per_eval(),
                cell.per_second(),
                cell.accept,
                cell.evals_per_chain,
                z.map_or(String::new(), |z| format!("  z {z:+.2}"))
            );
            rows.push(vec![
                name.clone(),
                sampler.clone(),
                spec.exact.to_string(),
                cell.ess.to_string(),
                cell.ess_std.to_string(),
                cell.evals_per_chain.to_string(),
                cell.seconds.to_string(),
                cell.per_eval().to_string(),
                cell.per_second().to_string(),
                cell.accept.to_string(),
                cell.warmup_accept.map_or(String::new(), |a| a.to_string()),
                cell.step_size.map_or(String::new(), |a| a.to_string()),
                cell.stat_mean.to_string(),
                exact.map_or(String::new(), |e| e.0.to_string()),
                exact.map_or(String::new(), |e| e.1.to_string()),
                z.map_or(String::new(), |z| z.to_string()),
            ]);
            bars.push((sampler.clone(), cell.per_eval(), cell.per_second()));
            cells.push(json!({"task": name, "sampler": sampler, "exact_kernel": spec.exact, "cell": cell,
                "ess_per_eval": cell.per_eval(), "ess_per_second": cell.per_second(), "exact_statistic": exact, "z": z}));
        }
        let rank = |k: usize| {
            let mut v: Vec<&(String, f64, f64)> = bars.iter().collect();
            v.sort_by(|a, b| (if k == 0 { b.1 } else { b.2 }).total_cmp(&(if k == 0 { a.1 } else { a.2 })));
            v.iter().map(|b| b.0.clone()).collect::<Vec<_>>()
        };
        ranks.push(json!({"task": name, "doc": doc, "rank_per_eval": rank(0), "rank_per_second": rank(1)}));
        let panel = |k: usize, label: &str| Panel::Bars {
            title: format!("{name}: {label}"),
            x_label: label.into(),
            bars: bars.iter().map(|b| (b.0.clone(), if k == 0 { b.1 } else { b.2 })).collect(),
        };
        let labels = bars.iter().map(|b| b.0.clone()).collect();
        let caption = format!("DISCS {name}: {chains} chains, {steps} steps, seed {seed}");
        run.write_figure(
            &format!("discs-{name}"),
            &Figure { caption, labels, panels: vec![panel(0, "ESS per evaluation"), panel(1, "ESS per second")] },
        )?;
    }
    bar.finish_and_clear();
    let columns = "task,sampler,exact_kernel,ess,ess_std,evals_per_chain,seconds,ess_per_eval,ess_per_second,accept,warmup_accept,step_size,stat_mean,exact_mean,exact_var,z";
    run.write_csv("cells.csv", columns, &rows)?;
    run.write_csv("skipped.csv", "task,sampler,reason", &skipped)?;
    let reductions = format!(
        "{chains} chains instead of DISCS's {DISCS_CHAINS}; {steps} steps instead of {DISCS_STEPS}; step sizes adapted in burn-in and frozen (DISCS adapts throughout); instances drawn from dlp's seeded streams, not DISCS's JAX keys; rbm-standin is untrained, the rbm-mnist/rbm-fashion RBMs are our own CD training (`just reproduce discs-rbm`), not DISCS's trained parameters"
    );
    run.write_json("summary.json", &json!({
        "schema": "dlp.reproduce.discs.v1", "chains": chains, "steps": steps, "burn_in": burn, "kept": kept,
        "ess_ratio": args.ess_ratio, "seed": seed, "reductions": reductions,
        "ess_note": "DISCS's ESS: per-chain TFP ESS of the distance to one random reference state, mean over chains (dlp_core::stats::DiscsEss)",
        "eval_note": "ESS per evaluation = mean ESS / (density + gradient evaluations per chain in the kept steps, as our samplers count them); DISCS divides by its nominal per-step count × all steps × ess_ratio",
        "seconds_note": "ESS per second = mean ESS / sampler seconds of the kept steps summed over all chains (one core's time for the whole batch)",
        "tasks": ranks, "cells": cells, "skipped": skipped, "not_trained": untrained,
    }))?;
    run.finish(
        &json!({"tasks": tasks, "chains": chains, "steps": steps, "ess_ratio": args.ess_ratio, "samplers": only}),
    )
}
