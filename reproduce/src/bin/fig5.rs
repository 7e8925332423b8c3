//! Fig. 5 a/b/c of the main paper: learning the coupling matrix of a 25 × 25 periodic
//! lattice Ising model (σ_c = 0.25, b = 0) by persistent contrastive divergence with
//! different samplers; log RMSE of J against iterations (a) and training time (b), and the
//! final log RMSE against the sampler steps per iteration K (c) (`reproduction.md` §3.4, P6,
//! P14).
//!
//! Config → data by single-site systematic-scan Gibbs (`dlp_learn::pcd::lattice_gibbs_data`)
//! → `dlp_learn::pcd::learn_pcd` per (sampler, K) → `results/fig5/{curves.csv,
//! final_vs_k.csv, summary.json, fig5.{svg,png}, meta.json}`.
//!
//! The paper's scale (10,000 iterations of 100 steps on 256 chains of a dense 625-site model,
//! for 4 samplers plus 3 samplers × 5 values of K) is hours of CPU on 2 cores; the default
//! is a reduced scale stated in `paper/fig5.md`, `--paper-scale` restores the paper's.

use anyhow::{Context, Result, bail};
use clap::Parser;
use dlp_learn::pcd::{PcdConfig, PcdRecord, lattice_couplings, lattice_gibbs_data, learn_pcd};
use dlp_reproduce::{CommonArgs, Figure, Panel, Run, Series};
use dlp_samplers::{SamplerParams, build_sampler};
use serde_json::json;

/// Samplers of panels a/b with the paper code's step sizes (§3.4 [C]).
const DEFAULT_SAMPLERS: &str = "gibbs-sweep,gwg,dula@0.1,dmala@0.2";
/// Samplers of panel c (Gibbs-1 omitted: it diverges for K < 100, §3.4).
const DEFAULT_K_SAMPLERS: &str = "gwg,dula@0.1,dmala@0.2";

/// Fig. 5: PCD learning of a lattice Ising model's couplings.
#[derive(Parser, Debug)]
#[command(name = "fig5")]
struct Args {
    #[command(flatten)]
    common: CommonArgs,
    /// Use the paper's scale for every size not given explicitly (10,000 iterations,
    /// K = 100, K grid 5,10,25,50,100, 25 × 25 lattice, 2,000 × 10^6-step data).
    #[arg(long)]
    paper_scale: bool,
    /// Lattice side L (D = L²) [paper: 25; default: 10; --quick: 6].
    #[arg(long)]
    lattice: Option<usize>,
    /// Coupling σ_c of the data model (J = σ_c A).
    #[arg(long, default_value_t = 0.25)]
    sigma: f64,
    /// Training samples [paper and default: 2000; --quick: 300].
    #[arg(long)]
    data_samples: Option<usize>,
    /// Gibbs steps (single sites) per training sample [paper and default: 1000000; --quick: 20000].
    #[arg(long)]
    data_steps: Option<usize>,
    /// PCD iterations [paper: 10000; default: 500 (see paper/fig5.md); --quick: 40].
    #[arg(long)]
    iters: Option<usize>,
    /// Sampler steps per iteration for panels a/b [paper: 100; --quick: 10].
    #[arg(long)]
    k: Option<usize>,
    /// K values of panel c, comma-separated [paper: 5,10,25,50,100; --quick: 2,5,10].
    #[arg(long)]
    ks: Option<String>,
    /// Data batch [paper and default: 256; --quick: 64].
    #[arg(long)]
    batch: Option<usize>,
    /// Persistent chains [paper and default: 256; --quick: 64].
    #[arg(long)]
    buffer: Option<usize>,
    /// Adam learning rate.
    #[arg(long, default_value_t = 1e-3)]
    lr: f64,
    /// L1 weight λ₁.
    #[arg(long, default_value_t = 0.01)]
    l1: f64,
    /// Iterations between RMSE records [paper: 1000; default: iters/20].
    #[arg(long)]
    record_every: Option<usize>,
    /// Samplers of panels a/b, `name` or `name@step_size`.
    #[arg(long, default_value = DEFAULT_SAMPLERS)]
    samplers: String,
    /// Samplers of panel c.
    #[arg(long, default_value = DEFAULT_K_SAMPLERS)]
    k_samplers: String,
    /// Skip panel c.
    #[arg(long)]
    skip_c: bool,
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

fn main() {
    dlp_reproduce::main_with(run);
}

/// The reduced default scale (see `paper/fig5.md` for the measurement behind it).
const DEFAULT_ITERS: usize = 500;
const DEFAULT_LATTICE: usize = 10;
const DEFAULT_K: usize = 100;
const DEFAULT_KS: &str = "5,10,25,50,100";

fn run(args: Args) -> Result<()> {
    let quick = args.common.quick;
    let paper = args.paper_scale;
    let pick = |given: Option<usize>, paper_v: usize, default_v: usize, quick_v: usize| {
        given.unwrap_or(if quick {
            quick_v
        } else if paper {
            paper_v
        } else {
            default_v
        })
    };
    let l = pick(args.lattice, 25, DEFAULT_LATTICE, 6);
    let n_data = pick(args.data_samples, 2_000, 2_000, 300);
    let data_steps = pick(args.data_steps, 1_000_000, 1_000_000, 20_000);
    let iters = pick(args.iters, 10_000, DEFAULT_ITERS, 40);
    let k = pick(args.k, 100, DEFAULT_K, 10);
    let batch = pick(args.batch, 256, 256, 64);
    let buffer = pick(args.buffer, 256, 256, 64);
    let record_every = pick(args.record_every, 1_000, (iters / 20).max(1), 10);
    let ks_text = args.ks.clone().unwrap_or_else(|| if quick { "2,5,10".into() } else { DEFAULT_KS.into() });
    let ks: Vec<usize> = ks_text
        .split(',')
        .map(|s| s.trim().parse::<usize>().with_context(|| format!("--ks: bad value {s:?}")))
        .collect::<Result<_>>()?;
    if iters == 0 || k == 0 || ks.contains(&0) || record_every == 0 {
        bail!("--iters, --k, --ks and --record-every must be positive");
    }
    if l < 3 {
        bail!("--lattice must be at least 3, got {l}");
    }
    if batch == 0 || batch > n_data || buffer == 0 {
        bail!("need 1 ≤ --batch ≤ --data-samples ({n_data}) and --buffer ≥ 1");
    }
    let samplers = parse_samplers(&args.samplers)?;
    let k_samplers = if args.skip_c { Vec::new() } else { parse_samplers(&args.k_samplers)? };
    for (name, a) in samplers.iter().chain(&k_samplers) {
        build_sampler(name, &SamplerParams { step_size: *a, ..Default::default() })?;
    }
    let run = Run::start("fig5", &args.common)?;
    let seed = args.common.seed;
    let d = l * l;
    println!(
        "fig5: {l}x{l} lattice (D = {d}), σ_c = {}, {n_data} samples × {data_steps} Gibbs steps; PCD {iters} iterations, K = {k}, batch {batch}, buffer {buffer}",
        args.sigma
    );

    let t0 = std::time::Instant::now();
    let data = lattice_gibbs_data(l, args.sigma, n_data, data_steps, seed)?;
    let data_seconds = t0.elapsed().as_secs_f64();
    let j_true = lattice_couplings(l, args.sigma);
    let mag: f64 =
        data.chunks(d).map(|x| (x.iter().map(|&b| 2.0 * b as f64 - 1.0).sum::<f64>() / d as f64).abs()).sum::<f64>()
            / n_data as f64;
    println!("data generated in {data_seconds:.1}s (mean |magnetisation| {mag:.3})");

    let base = PcdConfig { iters, k, batch, buffer, lr: args.lr, l1: args.l1, init_std: 0.01, record_every };
    let mut rows = Vec::new();
    let mut runs: Vec<(String, Option<f64>, usize, Vec<PcdRecord>)> = Vec::new();
    let learn = |name: &str,
                 alpha: Option<f64>,
                 kk: usize,
                 runs: &mut Vec<(String, Option<f64>, usize, Vec<PcdRecord>)>|
     -> Result<()> {
        if runs.iter().any(|r| r.0 == name && r.1 == alpha && r.2 == kk) {
            return Ok(());
        }
        let sampler = build_sampler(name, &SamplerParams { step_size: alpha, ..Default::default() })?;
        let cfg = PcdConfig { k: kk, ..base.clone() };
        let bar = run.progress(iters as u64, &format!("{name} K={kk}"));
        let (records, _) =
            learn_pcd(sampler.as_ref(), &data, d, &j_true, &cfg, seed, |r| bar.set_position(r.iter as u64))?;
        bar.finish_and_clear();
        let last = records.last().expect("at least the initial record");
        println!(
            "{name:>12} K={kk:<4} final log RMSE {:.3} after {} iterations, {:.1}s ({:.1}s sampling), accept {:.3}",
            last.rmse.ln(),
            last.iter,
            last.seconds,
            last.sampler_seconds,
            last.accept
        );
        runs.push((name.to_string(), alpha, kk, records));
        Ok(())
    };
    for (name, a) in &samplers {
        learn(name, *a, k, &mut runs)?;
    }
    for &kk in &ks {
        for (name, a) in &k_samplers {
            learn(name, *a, kk, &mut runs)?;
        }
    }
    for (name, alpha, kk, records) in &runs {
        for r in records {
            rows.push(vec![
                name.clone(),
                format!("{}", alpha.unwrap_or(f64::NAN)),
                kk.to_string(),
                r.iter.to_string(),
                format!("{:.4}", r.seconds),
                format!("{:.4}", r.sampler_seconds),
                format!("{:.8e}", r.rmse),
                format!("{:.6}", r.rmse.ln()),
                format!("{:.4}", r.accept),
            ]);
        }
    }
    run.write_csv(
        "curves.csv",
        &["sampler", "step_size", "k", "iter", "seconds", "sampler_seconds", "rmse", "log_rmse", "accept"],
        &rows,
    )?;

    let label = |name: &str, alpha: Option<f64>| match alpha {
        Some(a) => format!("{name} α={a}"),
        None => name.to_string(),
    };
    let main: Vec<_> = runs.iter().filter(|r| r.2 == k && samplers.iter().any(|s| s.0 == r.0 && s.1 == r.1)).collect();
    let series = |x: fn(&PcdRecord) -> f64| -> Vec<Series> {
        main.iter()
            .map(|r| Series { label: label(&r.0, r.1), points: r.3.iter().map(|p| (x(p), p.rmse.ln())).collect() })
            .collect()
    };
    let mut final_rows = Vec::new();
    let mut c_series = Vec::new();
    for (name, a) in &k_samplers {
        let mut pts = Vec::new();
        for &kk in &ks {
            if let Some(r) = runs.iter().find(|r| &r.0 == name && r.1 == *a && r.2 == kk) {
                let last = r.3.last().expect("records");
                pts.push((kk as f64, last.rmse.ln()));
                final_rows.push(vec![
                    name.clone(),
                    format!("{}", a.unwrap_or(f64::NAN)),
                    kk.to_string(),
                    format!("{:.6}", last.rmse.ln()),
                    format!("{:.4}", last.seconds),
                ]);
            }
        }
        c_series.push(Series { label: label(name, *a), points: pts });
    }
    run.write_csv("final_vs_k.csv", &["sampler", "step_size", "k", "final_log_rmse", "seconds"], &final_rows)?;
    let mut labels: Vec<String> = samplers.iter().map(|(n, a)| label(n, *a)).collect();
    for (n, a) in &k_samplers {
        let l = label(n, *a);
        if !labels.contains(&l) {
            labels.push(l);
        }
    }
    let mut panels = vec![
        Panel::Lines {
            title: format!("(a) K = {k}"),
            x_label: "iteration".into(),
            y_label: "log RMSE of J".into(),
            series: series(|p| p.iter as f64),
            refs: vec![],
        },
        Panel::Lines {
            title: format!("(b) K = {k}"),
            x_label: "training seconds".into(),
            y_label: "log RMSE of J".into(),
            series: series(|p| p.seconds),
            refs: vec![],
        },
    ];
    if !k_samplers.is_empty() {
        panels.push(Panel::Lines {
            title: format!("(c) after {iters} iterations"),
            x_label: "sampler steps per iteration K".into(),
            y_label: "final log RMSE of J".into(),
            series: c_series,
            refs: vec![],
        });
    }
    run.write_figure(
        "fig5",
        &Figure {
            caption: format!(
                "Fig. 5: PCD on a {l}x{l} Ising (σ_c = {}), {iters} iterations, buffer {buffer}",
                args.sigma
            ),
            labels,
            panels,
        },
    )?;
    let summary: Vec<_> = runs
        .iter()
        .map(|(n, a, kk, r)| {
            let last = r.last().expect("records");
            json!({"sampler": n, "step_size": a, "k": kk, "final_log_rmse": last.rmse.ln(), "seconds": last.seconds, "sampler_seconds": last.sampler_seconds, "accept_last_iteration": last.accept})
        })
        .collect();
    run.write_json(
        "summary.json",
        &json!({"lattice": l, "d": d, "sigma": args.sigma, "data_samples": n_data, "data_steps": data_steps,
                "data_seconds": data_seconds, "mean_abs_magnetisation": mag, "iters": iters, "k": k, "ks": ks,
                "batch": batch, "buffer": buffer, "initial_log_rmse": runs.first().map(|r| r.3[0].rmse.ln()),
                "threads": rayon::current_num_threads(), "runs": summary}),
    )?;
    run.write_meta(&json!({
        "paper_scale": paper, "lattice": l, "sigma": args.sigma, "data_samples": n_data, "data_steps": data_steps,
        "iters": iters, "k": k, "ks": ks, "batch": batch, "buffer": buffer, "lr": args.lr, "l1": args.l1,
        "record_every": record_every, "samplers": args.samplers, "k_samplers": if args.skip_c { None } else { Some(&args.k_samplers) },
    }))?;
    println!("wrote {} in {:.1}s", run.dir.display(), run.elapsed());
    Ok(())
}
