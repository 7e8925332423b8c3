//! Figs. 4 and 8 of the main paper: sampling a 784 × 500 Bernoulli RBM trained on MNIST,
//! log MMD² (natural log, P12) between 100 chains and 500 block-Gibbs ground-truth samples
//! every 10 steps, against iterations and sampler time; and image grids of the final
//! samples of every sampler and of the ground truth (spec `reproduction.md` §3.3).
//!
//! Config → data (`dlp-data`) → CD-10 training or `--rbm FILE` (`dlp-learn`) → ground truth
//! by batched block Gibbs (`dlp-learn`) → one `run_chains` per sampler on `dlp-models`' RBM
//! → `results/fig4/{rbm.json, mmd.csv, summary.json, fig4.{svg,png}, fig8_<sampler>.png,
//! meta.json}`. `--quick` uses the synthetic stand-in of `dlp-data` and a small RBM.

use anyhow::{Context, Result, bail};
use clap::Parser;
use dlp_core::rng::chain_rngs;
use dlp_core::rng::setup_rng;
use dlp_core::{DomainKind, Observer, RunOptions, States, StepContext, StepInfo, Target, run_chains};
use dlp_data::{Mnist, binarize, pixel_means, synthetic_digits};
use dlp_gof::MmdReference;
use dlp_learn::rbm::{CdConfig, RbmParams, train_cd};
use dlp_models::{Model, Rbm, load_model};
use dlp_reproduce::{CommonArgs, Figure, Panel, RefLine, Run, Series};
use dlp_samplers::{SamplerParams, build_sampler};
use plotters::prelude::*;
use rand::RngExt;
use serde_json::json;

/// The paper code's samplers and step sizes (§3.3 [C]).
const DEFAULT_SAMPLERS: &str = "bg-1,hb-10-1,gwg,dmala@0.2,dula@0.1";

/// Figs. 4 and 8: samplers on an MNIST RBM, MMD² to block-Gibbs ground truth.
#[derive(Parser, Debug)]
#[command(name = "fig4")]
struct Args {
    #[command(flatten)]
    common: CommonArgs,
    /// A trained RBM (dlp.model.v1, kind rbm, binary) to reuse instead of training.
    #[arg(long)]
    rbm: Option<std::path::PathBuf>,
    /// Training data [default: mnist; --quick: synthetic].
    #[arg(long, value_enum)]
    data: Option<DataSet>,
    /// Hidden units [default: 500; --quick: 50].
    #[arg(long)]
    hidden: Option<usize>,
    /// Training images used (the first n after binarisation) [default: all; --quick: 2000].
    #[arg(long)]
    train_items: Option<usize>,
    /// CD steps per update.
    #[arg(long, default_value_t = 10)]
    cd_k: usize,
    /// Ground-truth chains: the first 500 are the reference set, the rest give the
    /// "gt vs gt" floor [default: 600; --quick: 120].
    #[arg(long)]
    gt_chains: Option<usize>,
    /// Block-Gibbs steps of the ground truth [default: 10000; --quick: 200].
    #[arg(long)]
    gt_steps: Option<usize>,
    /// Reference samples (the first rows of the ground truth) [default: 500; --quick: 100].
    #[arg(long)]
    reference: Option<usize>,
    /// Chains per sampler [default: 100; --quick: 20].
    #[arg(long)]
    chains: Option<usize>,
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

/// Where the training images come from.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, serde::Serialize)]
enum DataSet {
    /// MNIST from `data/cache/mnist.dlpd` (`just data mnist`).
    Mnist,
    /// The seeded synthetic stand-in of `dlp-data` (no download).
    Synthetic,
}

/// Keeps the task's states every `every` steps, with the task's sampler seconds.
struct Snapshots {
    every: usize,
    states: Vec<Vec<u32>>,
    seconds: Vec<f64>,
    accept: f64,
    changed: f64,
    count: u64,
}

impl Observer for Snapshots {
    fn start(&mut self, _: usize, positions: &[u32]) {
        self.states.push(positions.to_vec());
        self.seconds.push(0.0);
    }

    fn observe(&mut self, ctx: &StepContext, states: States<'_>, info: &[StepInfo]) {
        for i in info {
            self.accept += i.accept_prob;
            self.changed += i.n_changed as f64;
            self.count += 1;
        }
        if ctx.step.is_multiple_of(self.every) {
            self.states.push(states.positions().to_vec());
            self.seconds.push(ctx.step_seconds);
        }
    }
}

fn main() {
    dlp_reproduce::main_with(run);
}

fn parse_samplers(list: &str) -> Result<Vec<(String, Option<f64>)>> {
    list.split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| match s.trim().split_once('@') {
            Some((n, a)) => Ok((n.to_string(), Some(a.parse().with_context(|| format!("bad step size in {s:?}"))?))),
            None => Ok((s.trim().to_string(), None)),
        })
        .collect()
}

fn run(args: Args) -> Result<()> {
    let quick = args.common.quick;
    let data_set = args.data.unwrap_or(if quick { DataSet::Synthetic } else { DataSet::Mnist });
    let hidden = args.hidden.unwrap_or(if quick { 50 } else { 500 });
    let gt_chains = args.gt_chains.unwrap_or(if quick { 120 } else { 600 });
    let gt_steps = args.gt_steps.unwrap_or(if quick { 200 } else { 10_000 });
    let n_ref = args.reference.unwrap_or(if quick { 100 } else { 500 });
    let chains = args.chains.unwrap_or(if quick { 20 } else { 100 });
    let steps = args.steps.unwrap_or(if quick { 100 } else { 5_000 });
    let every = args.every;
    if every == 0 || steps < every || chains < 2 || hidden == 0 {
        bail!("need --every ≥ 1, --steps ≥ --every, --chains ≥ 2 and --hidden ≥ 1");
    }
    if n_ref < 2 || gt_chains < n_ref + 2 {
        bail!("--gt-chains ({gt_chains}) must exceed --reference ({n_ref}) by at least 2");
    }
    let samplers = parse_samplers(&args.samplers)?;
    // Check every sampler name before any expensive work.
    for (name, a) in &samplers {
        build_sampler(name, &SamplerParams { step_size: *a, ..Default::default() })?;
    }
    let run = Run::start("fig4", &args.common)?;
    let seed = args.common.seed;
    let threads = rayon::current_num_threads();

    // Data: binarised pixels x > 0.5 and their means.
    let images = match data_set {
        DataSet::Mnist => Mnist::load_default().context("MNIST (use --data synthetic to run without it)")?.train_images,
        DataSet::Synthetic => synthetic_digits(if quick { 2_000 } else { 60_000 }, seed).0,
    };
    let mut bits = binarize(&images);
    let d = 784;
    if let Some(n) = args.train_items {
        bits.truncate(n.min(bits.len() / d) * d);
    }
    let means = pixel_means(&bits, d);
    println!(
        "fig4: {:?} data, {} images, mean ink {:.4}",
        data_set,
        bits.len() / d,
        means.iter().sum::<f64>() / d as f64
    );

    // The RBM: trained here (CD-k, Adam, §3.3) or loaded.
    let mut train_seconds = None;
    let params = match &args.rbm {
        Some(path) => {
            let model = load_model(path).with_context(|| format!("--rbm {}", path.display()))?;
            let Model::Rbm(r) = model else { bail!("--rbm {}: not an rbm model", path.display()) };
            if r.d() != d || r.is_spin() {
                bail!("--rbm {}: need a binary RBM with d = 784, found d = {}", path.display(), r.d());
            }
            RbmParams { d, m: r.m(), w: r.w().to_vec(), b: r.b().to_vec(), c: r.c().to_vec() }
        }
        None => {
            let mut p = RbmParams::paper_init(&means, hidden, seed);
            let cfg = CdConfig { k: args.cd_k, ..CdConfig::default() };
            let bar = run.progress((bits.len() / d / cfg.batch) as u64, "CD training");
            let t0 = std::time::Instant::now();
            train_cd(&mut p, &bits, &cfg, seed, threads, |done, _| bar.set_position(done as u64))?;
            bar.finish_and_clear();
            train_seconds = Some(t0.elapsed().as_secs_f64());
            run.write_json("rbm.json", &p.to_model_json(&format!("fig4 RBM 784x{hidden}, CD-{} one epoch", cfg.k)))?;
            println!(
                "trained RBM 784x{hidden} in {:.1}s → {}",
                train_seconds.unwrap_or(0.0),
                run.path("rbm.json").display()
            );
            p
        }
    };
    let rbm = Rbm::new(DomainKind::Binary, d, params.m, params.w.clone(), params.b.clone(), params.c.clone())?;

    // Ground truth: block Gibbs from Bernoulli(clamped pixel means).
    let clamped: Vec<f64> = means.iter().map(|p| p.clamp(0.01, 0.99)).collect();
    let mut init_rng = setup_rng(seed);
    let mut bernoulli =
        |n: usize| -> Vec<u32> { (0..n * d).map(|k| u32::from(init_rng.random::<f64>() < clamped[k % d])).collect() };
    let mut gt = bernoulli(gt_chains);
    let x0 = bernoulli(chains);
    let bar = run.progress(gt_steps as u64, "ground truth");
    let t0 = std::time::Instant::now();
    let mut gt_rngs = chain_rngs(seed ^ 0x6774, 0, gt_chains);
    let chunk = 100;
    for done in (0..gt_steps).step_by(chunk) {
        params.gibbs_par(&mut gt, chunk.min(gt_steps - done), &mut gt_rngs, threads);
        bar.set_position((done + chunk).min(gt_steps) as u64);
    }
    bar.finish_and_clear();
    let gt_seconds = t0.elapsed().as_secs_f64();
    let reference = MmdReference::new(&gt[..n_ref * d], d);
    let floor = reference.mmd2(&gt[n_ref * d..]);
    println!(
        "ground truth: {gt_chains} chains × {gt_steps} block-Gibbs steps in {gt_seconds:.1}s; gt-vs-gt log MMD² = {:.3}",
        floor.ln()
    );
    write_grid(&run, "fig8_ground_truth.png", &gt[n_ref * d..], d)?;

    let mut rows = Vec::new();
    let mut by_iter = Vec::new();
    let mut by_time = Vec::new();
    let mut summary = Vec::new();
    for (name, alpha) in &samplers {
        let sampler = build_sampler(name, &SamplerParams { step_size: *alpha, ..Default::default() })?;
        let label = match alpha {
            Some(a) => format!("{name} α={a}"),
            None => name.clone(),
        };
        let opts = RunOptions { seed, threads: 0, chains_per_task: 0 };
        let target: &dyn Target = &rbm;
        let out = run_chains(sampler.as_ref(), target, &x0, steps, &opts, |_, _| Snapshots {
            every,
            states: Vec::new(),
            seconds: Vec::new(),
            accept: 0.0,
            changed: 0.0,
            count: 0,
        })?;
        let n_snap = out.observers[0].states.len();
        let mut points = Vec::with_capacity(n_snap);
        for s in 0..n_snap {
            let states: Vec<u32> = out.observers.iter().flat_map(|o| o.states[s].iter().copied()).collect();
            let secs = out.observers.iter().map(|o| o.seconds[s]).fold(0.0, f64::max);
            let mmd = reference.mmd2(&states);
            let step = s * every;
            rows.push(vec![
                name.clone(),
                format!("{}", alpha.unwrap_or(f64::NAN)),
                step.to_string(),
                format!("{secs:.6}"),
                format!("{mmd:.8e}"),
                format!("{:.6}", mmd.ln()),
            ]);
            points.push((step as f64, secs, mmd.ln()));
        }
        let (acc, chg, cnt) =
            out.observers.iter().fold((0.0, 0.0, 0u64), |(a, c, n), o| (a + o.accept, c + o.changed, n + o.count));
        let last = points.last().copied().unwrap_or((0.0, 0.0, f64::NAN));
        println!(
            "{label:>14}: final log MMD² {:.3}, accept {:.3}, changed/step {:.2}, sampler {:.1}s (wall {:.1}s)",
            last.2,
            acc / cnt as f64,
            chg / cnt as f64,
            last.1,
            out.wall_seconds
        );
        summary.push(json!({
            "sampler": name, "step_size": alpha, "final_log_mmd2": last.2,
            "min_log_mmd2": points.iter().map(|p| p.2).fold(f64::INFINITY, f64::min),
            "acceptance": acc / cnt as f64, "changed_per_step": chg / cnt as f64,
            "sampler_seconds": last.1, "wall_seconds": out.wall_seconds,
        }));
        by_iter.push(Series { label: label.clone(), points: points.iter().map(|p| (p.0, p.2)).collect() });
        by_time.push(Series { label: label.clone(), points: points.iter().map(|p| (p.1, p.2)).collect() });
        write_grid(&run, &format!("fig8_{name}.png"), &out.final_states, d)?;
    }
    run.write_csv("mmd.csv", &["sampler", "step_size", "step", "seconds", "mmd2", "log_mmd2"], &rows)?;
    let labels: Vec<String> = by_iter.iter().map(|s| s.label.clone()).collect();
    let refs = vec![RefLine { label: "gt vs gt".into(), y: floor.ln() }];
    let figure = Figure {
        caption: format!(
            "Fig. 4: RBM 784x{} ({:?}), {chains} chains, log MMD² to {n_ref} block-Gibbs samples",
            params.m, data_set
        ),
        labels,
        panels: vec![
            Panel::Lines {
                title: "vs iterations".into(),
                x_label: "iteration".into(),
                y_label: "log MMD²".into(),
                series: by_iter,
                refs: refs.clone(),
            },
            Panel::Lines {
                title: "vs sampler time".into(),
                x_label: "seconds".into(),
                y_label: "log MMD²".into(),
                series: by_time,
                refs,
            },
        ],
    };
    run.write_figure("fig4", &figure)?;
    run.write_json(
        "summary.json",
        &json!({
            "data": data_set, "hidden": params.m, "train_seconds": train_seconds,
            "rbm": args.rbm.as_ref().map(|p| p.display().to_string()),
            "ground_truth": {"chains": gt_chains, "steps": gt_steps, "reference": n_ref, "seconds": gt_seconds, "log_mmd2_floor": floor.ln()},
            "chains": chains, "steps": steps, "every": every, "threads": threads,
            "samplers": summary,
        }),
    )?;
    run.write_meta(&json!({
        "data": data_set, "hidden": params.m, "cd_k": args.cd_k, "gt_chains": gt_chains, "gt_steps": gt_steps,
        "reference": n_ref, "chains": chains, "steps": steps, "every": every, "samplers": args.samplers,
        "rbm": args.rbm.as_ref().map(|p| p.display().to_string()),
    }))?;
    println!("wrote {} in {:.1}s", run.dir.display(), run.elapsed());
    Ok(())
}

/// Writes up to 100 binary 28 × 28 images as a 10-column grid PNG (2 px per pixel, 2 px
/// gaps), atomically (temporary `.png` in the same directory, then rename).
fn write_grid(run: &Run, file: &str, states: &[u32], d: usize) -> Result<()> {
    let n = (states.len() / d).min(100);
    let side = (d as f64).sqrt() as usize;
    let (scale, gap, cols) = (2u32, 2u32, 10usize);
    let rows = n.div_ceil(cols).max(1);
    let cell = side as u32 * scale + gap;
    let size = (cols as u32 * cell + gap, rows as u32 * cell + gap);
    let target = run.path(file);
    let tmp = run.path(&format!(".{file}.{}.tmp.png", std::process::id()));
    let draw = || -> Result<()> {
        let area = BitMapBackend::new(&tmp, size).into_drawing_area();
        area.fill(&RGBColor(128, 128, 128))?;
        for k in 0..n {
            let (r, c) = ((k / cols) as u32, (k % cols) as u32);
            for p in 0..d.min(side * side) {
                let v = if states[k * d + p] == 1 { 255 } else { 0 };
                let (py, px) = ((p / side) as u32, (p % side) as u32);
                for dy in 0..scale {
                    for dx in 0..scale {
                        let x = gap + c * cell + px * scale + dx;
                        let y = gap + r * cell + py * scale + dy;
                        area.draw_pixel((x as i32, y as i32), &RGBColor(v, v, v))?;
                    }
                }
            }
        }
        area.present()?;
        std::fs::rename(&tmp, &target)?;
        Ok(())
    };
    let res = draw();
    if res.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    res.with_context(|| format!("cannot write {}", target.display()))
}
