//! Fig. 5 a/b/c of the main paper: learning the coupling matrix of a 25 × 25 periodic
//! lattice Ising model (σ_c = 0.25, b = 0) by persistent contrastive divergence with
//! different samplers; log RMSE of J against iterations (a) and training time (b), and the
//! final log RMSE against the sampler steps per iteration K (c) (`reproduction.md` §3.4, P6,
//! P14).
//!
//! Config → data by single-site systematic-scan Gibbs (`dlp_learn::pcd::lattice_gibbs_data`)
//! → `dlp_learn::pcd::learn_pcd` per (sampler, K) (`dlp_reproduce::pcd::learn`) →
//! `results/fig5/{curves.csv, final_vs_k.csv, summary.json, fig5.{svg,png}, meta.json, cells/}`
//! (`--resume` continues from `cells/`).
//!
//! The paper's scale (10,000 iterations of 100 steps on 256 chains of a dense 625-site model,
//! for 4 samplers plus 3 samplers × 5 values of K) is hours of CPU on 2 cores; the default
//! is a reduced scale stated in `paper/fig5.md`, `--paper-scale` restores the paper's.

use anyhow::{Result, bail};
use clap::Parser;
use dlp_learn::pcd::{PcdConfig, lattice_couplings, lattice_gibbs_data};
use dlp_reproduce::pcd::{Problem, curve_rows, fig5_figure, final_vs_k, learn};
use dlp_reproduce::{CommonArgs, Run, parse_list, parse_samplers};
use serde_json::json;

/// Samplers of panels a/b with the paper code's step sizes (§3.4 \[C\]).
const DEFAULT_SAMPLERS: &str = "gibbs-sweep,gwg,dula@0.1,dmala@0.2";
/// Samplers of panel c (Gibbs-1 omitted: it diverges for K < 100, §3.4).
const DEFAULT_K_SAMPLERS: &str = "gwg,dula@0.1,dmala@0.2";
/// The reduced default scale (see `paper/fig5.md` for the measurement behind it).
const DEFAULT_ITERS: usize = 500;
const DEFAULT_LATTICE: usize = 10;
const DEFAULT_K: usize = 100;
const DEFAULT_KS: &str = "5,10,25,50,100";

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
    /// Continue an interrupted run in the same --out: the (sampler, K) runs it finished
    /// (`cells/`) are read back, the rest run; the files equal an uninterrupted run's.
    #[arg(long)]
    resume: bool,
}

fn main() {
    dlp_reproduce::main_with(run);
}

fn run(args: Args) -> Result<()> {
    let c = &args.common;
    // The paper's value under --paper-scale, else the reduced default (--quick wins over both).
    let pick =
        |given, paper_v, default_v, quick_v| c.pick(given, if args.paper_scale { paper_v } else { default_v }, quick_v);
    let l = pick(args.lattice, 25, DEFAULT_LATTICE, 6);
    let n_data = pick(args.data_samples, 2_000, 2_000, 300);
    let data_steps = pick(args.data_steps, 1_000_000, 1_000_000, 20_000);
    let iters = pick(args.iters, 10_000, DEFAULT_ITERS, 40);
    let k = pick(args.k, 100, DEFAULT_K, 10);
    let batch = pick(args.batch, 256, 256, 64);
    let buffer = pick(args.buffer, 256, 256, 64);
    let record_every = pick(args.record_every, 1_000, (iters / 20).max(1), 10);
    let ks: Vec<usize> = parse_list(&c.pick(args.ks.clone(), DEFAULT_KS.into(), "2,5,10".into()), "ks")?;
    if iters == 0 || k == 0 || ks.is_empty() || ks.contains(&0) || record_every == 0 {
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
    for s in samplers.iter().chain(&k_samplers) {
        s.build()?;
    }
    let mut run = Run::start("fig5", &args.common)?;
    run.resume = args.resume;
    let d = l * l;
    println!(
        "fig5: {l}x{l} lattice (D = {d}), σ_c = {}, {n_data} samples × {data_steps} Gibbs steps; PCD {iters} iterations, K = {k}, batch {batch}, buffer {buffer}",
        args.sigma
    );

    let t0 = std::time::Instant::now();
    let data = lattice_gibbs_data(l, args.sigma, n_data, data_steps, run.seed())?;
    let data_seconds = t0.elapsed().as_secs_f64();
    let j_true = lattice_couplings(l, args.sigma);
    let mag: f64 =
        data.chunks(d).map(|x| (x.iter().map(|&b| 2.0 * b as f64 - 1.0).sum::<f64>() / d as f64).abs()).sum::<f64>()
            / n_data as f64;
    println!("data generated in {data_seconds:.1}s (mean |magnetisation| {mag:.3})");

    let base = PcdConfig { iters, k, batch, buffer, lr: args.lr, l1: args.l1, record_every, ..PcdConfig::default() };
    let data_identity = json!({"lattice": l, "sigma": args.sigma, "data_samples": n_data, "data_steps": data_steps});
    let problem = Problem { data: &data, d, j_true: &j_true, base, data_identity };
    let mut runs = Vec::new();
    for s in &samplers {
        learn(&run, &problem, s, k, &mut runs)?;
    }
    for &kk in &ks {
        for s in &k_samplers {
            learn(&run, &problem, s, kk, &mut runs)?;
        }
    }
    let header = "sampler,step_size,k,iter,seconds,sampler_seconds,rmse,log_rmse,accept";
    run.write_csv("curves.csv", header, &curve_rows(&runs))?;
    let (final_rows, c_series) = final_vs_k(&runs, &k_samplers, &ks);
    run.write_csv("final_vs_k.csv", "sampler,step_size,k,final_log_rmse,seconds", &final_rows)?;
    let caption = format!("Fig. 5: PCD on a {l}x{l} Ising (σ_c = {}), {iters} iterations, buffer {buffer}", args.sigma);
    let panel_c = (!k_samplers.is_empty()).then_some((iters, c_series));
    run.write_figure("fig5", &fig5_figure(&runs, &samplers, &k_samplers, k, panel_c, caption))?;
    let summary: Vec<_> = runs
        .iter()
        .map(|r| {
            let last = r.last();
            json!({"sampler": r.sampler.name, "step_size": r.sampler.step_size, "k": r.k, "final_log_rmse": last.rmse.ln(), "seconds": last.seconds, "sampler_seconds": last.sampler_seconds, "accept_last_iteration": last.accept})
        })
        .collect();
    run.write_json(
        "summary.json",
        &json!({"lattice": l, "d": d, "sigma": args.sigma, "data_samples": n_data, "data_steps": data_steps,
                "data_seconds": data_seconds, "mean_abs_magnetisation": mag, "iters": iters, "k": k, "ks": ks,
                "batch": batch, "buffer": buffer, "initial_log_rmse": runs.first().map(|r| r.records[0].rmse.ln()),
                "threads": rayon::current_num_threads(), "runs": summary}),
    )?;
    run.finish(&json!({
        "paper_scale": args.paper_scale, "lattice": l, "sigma": args.sigma, "data_samples": n_data, "data_steps": data_steps,
        "iters": iters, "k": k, "ks": ks, "batch": batch, "buffer": buffer, "lr": args.lr, "l1": args.l1,
        "record_every": record_every, "samplers": args.samplers, "k_samplers": if args.skip_c { None } else { Some(&args.k_samplers) },
    }))
}
