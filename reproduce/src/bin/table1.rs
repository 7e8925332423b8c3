//! Table 1 and Fig. 9 of the main paper (§7.3.2, App. I.4; `reproduction.md` §3.5): ResNet
//! energy-based models of binarised MNIST trained by PCD with DMALA, DULA and GWG, test
//! log-likelihood by AIS (the official evaluation's kernel, GWG-1, for every training sampler).
//!
//! `--scale paper`: the spec's protocol (ResNet-64, 50,000 iterations, buffer 10,000, 40 steps,
//! batch 100, lr 1e-4 warmed up over 10,000, EMA 0.999, final AIS 300,000 temperatures × 500
//! chains): GPU hours. `--scale cpu` (default): reduced so that one (data set, sampler) cell
//! trains and evaluates in about half an hour on 2 idle cores (an estimate from the benchmark;
//! on the shared machine 200 iterations took 32 min); every reduction is listed in
//! `dlp_reproduce::ebm::Protocol::cpu` and `paper/table1.md`: ResNet-16 with 2 + 2 blocks, 600
//! iterations of 10 steps on batches of 32, buffer 1,000, lr 1e-3 (warm-up 60), EMA 0.99,
//! validation AIS 200 × 32 every 300 iterations, final AIS 1,000 temperatures × 50 chains.
//! `--quick`: a tiny network on synthetic stand-in digits, seconds. `--device cuda` runs on a GPU
//! in a build with the `cuda` feature (`cargo run --release -p dlp-reproduce --features cuda
//! --bin table1 -- --device cuda --scale paper`; never built in CI, not yet run on a GPU).
//! Static MNIST is one fixed-seed Bernoulli binarisation of MNIST (a stand-in for Larochelle's
//! fixed binarisation); Omniglot and Caltech silhouettes are not run. Gibbs is skipped by
//! default: at 784 sites a Gibbs-1 step changes one pixel, and the paper's own Gibbs rows are
//! far behind (−117/−121); `--samplers gibbs` runs it.
//!
//! Files: `results/table1/{curves.csv, evals.csv, ais.csv, ais_weights.csv, summary.json, table1.{svg,png},
//! fig9_<data>_<sampler>.png, meta.json}` and `checkpoints/` (safetensors; `--resume` continues
//! an interrupted run from them).

use anyhow::{Context, Result, bail};
use clap::Parser;
use dlp_data::{Mnist, synthetic_digits};
use dlp_reproduce::ebm::{CellResult, Protocol, run_cell, splits, write_results};
use dlp_reproduce::{CommonArgs, Run, one_sampler, parse_list, parse_samplers};
use serde_json::json;

/// Table 1: deep EBMs trained with each sampler, evaluated by AIS.
#[derive(Parser, Debug)]
#[command(name = "table1")]
struct Args {
    #[command(flatten)]
    common: CommonArgs,
    /// Protocol: `cpu` (reduced, this machine) or `paper` (the spec's; GPU hours).
    #[arg(long, default_value = "cpu")]
    scale: String,
    /// Data sets: static, dynamic (MNIST; --quick: synthetic stand-in digits).
    #[arg(long, default_value = "static,dynamic")]
    datasets: String,
    /// Training samplers, `name` or `name@step_size` (paper: DULA α = 0.1, DMALA α = 0.2).
    #[arg(long, default_value = "dmala@0.2,dula@0.1,gwg")]
    samplers: String,
    /// AIS kernel of the final evaluation, `name` or `name@step_size` (the official script's GWG-1).
    #[arg(long, default_value = "gwg")]
    ais_sampler: String,
    /// AIS kernel of the validation evaluations that pick the kept model, `name` or
    /// `name@step_size` [default: the training sampler, as the official script; unadjusted for
    /// DULA, whose estimates are then biased: `dmala@0.2` is a Metropolis-adjusted choice].
    #[arg(long)]
    val_ais_sampler: Option<String>,
    /// Override the protocol's training iterations (e.g. a few, to check the paper path runs).
    #[arg(long)]
    iterations: Option<usize>,
    /// Override the sampler steps per training iteration (the paper's 40; cpu scale 10).
    #[arg(long)]
    steps: Option<usize>,
    /// Override the peak learning rate (the paper's 1e-4; cpu scale 1e-3).
    #[arg(long)]
    lr: Option<f64>,
    /// Override the final AIS (temperatures,chains).
    #[arg(long)]
    final_ais: Option<String>,
    /// Override the validation AIS (temperatures,chains).
    #[arg(long)]
    eval_ais: Option<String>,
    /// Continue from the checkpoints in <out>/checkpoints.
    #[arg(long)]
    resume: bool,
    /// candle device: `cpu`, or `cuda` / `cuda:N` (a build with `--features cuda`).
    #[arg(long, default_value = "cpu")]
    device: String,
}

fn main() {
    dlp_reproduce::main_with(run);
}

fn pair(text: &Option<String>, default: (usize, usize), flag: &str) -> Result<(usize, usize)> {
    let Some(t) = text else { return Ok(default) };
    match parse_list::<usize>(t, flag)?[..] {
        [a, b] if a >= 1 && b >= 2 => Ok((a, b)),
        _ => bail!("--{flag} must be TEMPERATURES,CHAINS with ≥ 1 temperature and ≥ 2 chains, found {t:?}"),
    }
}

fn run(args: Args) -> Result<()> {
    let c = &args.common;
    let mut proto = match (c.quick, args.scale.as_str()) {
        (true, _) => Protocol::quick(),
        (false, "cpu") => Protocol::cpu(),
        (false, "paper") => Protocol::paper(),
        (_, other) => bail!("--scale must be cpu or paper, found {other:?}"),
    };
    if let Some(n) = args.iterations {
        if n == 0 {
            bail!("--iterations must be at least 1");
        }
        proto.eval_every = proto.eval_every.min(n);
        proto.iterations = n;
    }
    if let Some(k) = args.steps {
        if k == 0 {
            bail!("--steps must be at least 1");
        }
        proto.steps = k;
    }
    if let Some(lr) = args.lr {
        if !(lr > 0.0 && lr.is_finite()) {
            bail!("--lr must be a positive number, found {lr}");
        }
        proto.lr = lr;
    }
    proto.final_ais = pair(&args.final_ais, proto.final_ais, "final-ais")?;
    proto.eval_ais = pair(&args.eval_ais, proto.eval_ais, "eval-ais")?;
    let names: Vec<String> = parse_list(&args.datasets, "datasets")?;
    let specs = parse_samplers(&args.samplers)?;
    if names.is_empty() || specs.is_empty() || names.iter().any(|n| n != "static" && n != "dynamic") {
        bail!("--datasets must list static and/or dynamic, and --samplers at least one sampler");
    }
    let samplers = specs.iter().map(|s| s.build()).collect::<Result<Vec<_>, _>>()?;
    let ais_kernel = one_sampler(&args.ais_sampler, "ais-sampler")?;
    let val_kernel = args.val_ais_sampler.as_deref().map(|t| one_sampler(t, "val-ais-sampler")).transpose()?;
    let val_ais = args.val_ais_sampler.as_deref().zip(val_kernel.as_deref());
    let device = dlp_tensor::device(&args.device)?;
    let (train, test, n_train) = if c.quick {
        (synthetic_digits(600, 1).0, synthetic_digits(100, 2).0, 500)
    } else {
        let m = Mnist::load_default().context("MNIST (`just data mnist`)")?;
        (m.train_images, m.test_images, 50_000)
    };
    let data = names.iter().map(|n| splits(n, &train, &test, n_train)).collect::<Result<Vec<_>>>()?;
    let run = Run::start("table1", &args.common)?;
    println!(
        "table1: {} scale{}; protocol {proto:?}",
        proto.scale,
        if c.quick { " (synthetic stand-in digits)" } else { "" }
    );

    let mut cells: Vec<CellResult> = Vec::new();
    for d in &data {
        for (spec, s) in specs.iter().zip(&samplers) {
            let cell = run_cell(
                &run,
                &proto,
                d,
                spec,
                s.as_ref(),
                val_ais,
                ais_kernel.as_ref(),
                &run.path("checkpoints"),
                args.resume,
                &device,
            )?;
            println!(
                "table1: {} {}: test LL {:.2} nats (log Ẑ {:.2} ± {:.2}, ESS {:.1}; best iteration {}; train {:.0} s, AIS {:.0} s)",
                cell.dataset,
                cell.sampler,
                cell.test_ll,
                cell.log_z,
                cell.std_err,
                cell.ess,
                cell.best_iteration,
                cell.train_seconds,
                cell.final_seconds
            );
            run.write_image_grid(&format!("fig9_{}_{}.png", cell.dataset, spec.name), &cell.samples, 784)?;
            cells.push(cell);
        }
    }

    write_results(&run, &proto, &cells, &args.ais_sampler, args.val_ais_sampler.as_deref(), c.quick)?;
    run.finish(
        &json!({"scale": proto.scale, "datasets": names, "samplers": args.samplers, "ais_sampler": args.ais_sampler,
        "val_ais_sampler": args.val_ais_sampler,
        "resume": args.resume, "device": args.device, "protocol": proto}),
    )
}
