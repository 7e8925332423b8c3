//! Figs. 4 and 8 of the main paper: sampling a 784 × 500 Bernoulli RBM trained on MNIST,
//! log MMD² (natural log, P12) between 100 chains and 500 block-Gibbs ground-truth samples
//! every 10 steps, against iterations and sampler time; and image grids of the final
//! samples of every sampler and of the ground truth (spec `reproduction.md` §3.3).
//!
//! Config → data (`dlp-data`) → CD-10 training or `--rbm FILE` (`dlp-learn`) → ground truth
//! by batched block Gibbs (`dlp-learn`, via `dlp_reproduce::rbm`) → one `run_chains` per
//! sampler on `dlp-models`' RBM → `results/fig4/{rbm.json, mmd.csv, summary.json,
//! fig4.{svg,png}, fig8_<sampler>.png, meta.json}`. `--quick` uses the synthetic stand-in of
//! `dlp-data` and a small RBM.

use anyhow::{Result, bail};
use clap::Parser;
use dlp_core::{DomainKind, RunOptions, run_chains};
use dlp_models::Rbm;
use dlp_reproduce::observe::Snapshots;
use dlp_reproduce::rbm::{MmdPoint, RbmArgs, RbmSizes, ground_truth, mmd_curve, mmd_rows};
use dlp_reproduce::{CommonArgs, Figure, Panel, RefLine, Run, Series, parse_samplers};
use serde_json::json;

/// The paper code's samplers and step sizes (§3.3 \[C\]).
const DEFAULT_SAMPLERS: &str = "bg-1,hb-10-1,gwg,dmala@0.2,dula@0.1";

/// Figs. 4 and 8: samplers on an MNIST RBM, MMD² to block-Gibbs ground truth.
#[derive(Parser, Debug)]
#[command(name = "fig4")]
struct Args {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    rbm: RbmArgs,
    /// CD steps per update.
    #[arg(long, default_value_t = 10)]
    cd_k: usize,
    /// Steps per sampler [default: 5000; --quick: 100].
    #[arg(long)]
    steps: Option<usize>,
    /// Steps between MMD² points.
    #[arg(long, default_value_t = 10)]
    every: usize,
    /// Comma-separated samplers, `name` or `name@step_size`.
    #[arg(long, default_value = DEFAULT_SAMPLERS)]
    samplers: String,
}

fn main() {
    dlp_reproduce::main_with(run);
}

fn run(args: Args) -> Result<()> {
    let (c, quick) = (&args.common, args.common.quick);
    let RbmSizes { data_set, hidden, gt_chains, gt_steps, n_ref, chains } = args.rbm.sizes(c)?;
    let (steps, every) = (c.pick(args.steps, 5_000, 100), args.every);
    if every == 0 || steps < every {
        bail!("need --every ≥ 1 and --steps ≥ --every");
    }
    let samplers = parse_samplers(&args.samplers)?;
    // Check every sampler name before any expensive work.
    for s in &samplers {
        s.build()?;
    }
    let run = Run::start("fig4", &args.common)?;
    let seed = run.seed();
    let threads = rayon::current_num_threads();

    // Data: binarised pixels x > 0.5 and their means.
    let d = 784;
    let (bits, means) = args.rbm.training_bits(data_set, quick, seed)?;
    println!(
        "fig4: {data_set:?} data, {} images, mean ink {:.4}",
        bits.len() / d,
        means.iter().sum::<f64>() / d as f64
    );

    // The RBM: trained here (CD-k, Adam, §3.3) or loaded.
    let (params, train_seconds) = args.rbm.rbm_params(&run, (&bits, &means), hidden, args.cd_k, threads)?;
    let rbm = Rbm::new(DomainKind::Binary, d, params.m, params.w.clone(), params.b.clone(), params.c.clone())?;
    let gt = ground_truth(&run, &params, &means, (gt_chains, gt_steps, n_ref), chains, threads);
    println!(
        "ground truth: {gt_chains} chains × {gt_steps} block-Gibbs steps in {:.1}s; gt-vs-gt log MMD² = {:.3}",
        gt.seconds,
        gt.floor.ln()
    );
    run.write_image_grid("fig8_ground_truth.png", &gt.states[n_ref * d..], d)?;

    let (mut rows, mut by_iter, mut by_time, mut summary) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for spec in &samplers {
        let sampler = spec.build()?;
        let opts = RunOptions { seed, threads: 0, chains_per_task: 0 };
        let out = run_chains(sampler.as_ref(), &rbm, &gt.x0, steps, &opts, |_, _| Snapshots::new(every))?;
        let curve = mmd_curve(&out.observers, &gt.reference, every);
        rows.extend(mmd_rows(spec, &curve));
        let (acc, chg, cnt) =
            out.observers.iter().fold((0.0, 0.0, 0u64), |(a, c, n), o| (a + o.accept, c + o.changed, n + o.count));
        let (last_secs, last_log) = curve.last().map_or((0.0, f64::NAN), |p| (p.seconds, p.mmd2.ln()));
        println!(
            "{:>14}: final log MMD² {last_log:.3}, accept {:.3}, changed/step {:.2}, sampler {last_secs:.1}s (wall {:.1}s)",
            spec.legend(),
            acc / cnt as f64,
            chg / cnt as f64,
            out.wall_seconds
        );
        summary.push(json!({
            "sampler": spec.name, "step_size": spec.step_size, "final_log_mmd2": last_log,
            "min_log_mmd2": curve.iter().map(|p| p.mmd2.ln()).fold(f64::INFINITY, f64::min),
            "acceptance": acc / cnt as f64, "changed_per_step": chg / cnt as f64,
            "sampler_seconds": last_secs, "wall_seconds": out.wall_seconds,
        }));
        let log_points = |x: fn(&MmdPoint) -> f64| curve.iter().map(|p| (x(p), p.mmd2.ln())).collect();
        by_iter.push(Series { label: spec.legend(), points: log_points(|p| p.step as f64) });
        by_time.push(Series { label: spec.legend(), points: log_points(|p| p.seconds) });
        run.write_image_grid(&format!("fig8_{}.png", spec.name), &out.final_states, d)?;
    }
    run.write_csv("mmd.csv", "sampler,step_size,step,seconds,mmd2,log_mmd2", &rows)?;
    let refs = vec![RefLine { label: "gt vs gt".into(), y: gt.floor.ln() }];
    let figure = Figure {
        caption: format!(
            "Fig. 4: RBM 784x{} ({data_set:?}), {chains} chains, log MMD² to {n_ref} block-Gibbs samples",
            params.m
        ),
        labels: by_iter.iter().map(|s| s.label.clone()).collect(),
        panels: vec![
            Panel::lines("vs iterations", "iteration", "log MMD²", by_iter, refs.clone()),
            Panel::lines("vs sampler time", "seconds", "log MMD²", by_time, refs),
        ],
    };
    run.write_figure("fig4", &figure)?;
    run.write_json(
        "summary.json",
        &json!({
            "data": data_set, "hidden": params.m, "train_seconds": train_seconds,
            "rbm": args.rbm.rbm.as_ref().map(|p| p.display().to_string()),
            "ground_truth": {"chains": gt_chains, "steps": gt_steps, "reference": n_ref, "seconds": gt.seconds, "log_mmd2_floor": gt.floor.ln()},
            "chains": chains, "steps": steps, "every": every, "threads": threads,
            "samplers": summary,
        }),
    )?;
    run.finish(&json!({
        "data": data_set, "hidden": params.m, "cd_k": args.cd_k, "gt_chains": gt_chains, "gt_steps": gt_steps,
        "reference": n_ref, "chains": chains, "steps": steps, "every": every, "samplers": args.samplers,
        "rbm": args.rbm.rbm.as_ref().map(|p| p.display().to_string()),
    }))
}
