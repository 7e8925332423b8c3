//! Table 4 of the main paper (App. I.5; the method in §6): stochastic-gradient DULA (α = 0.1) with minibatches
//! of 10, 100 and 500 items, a fresh batch every step, beside full-batch DULA, on binary
//! Bayesian neural networks (`reproduction.md` §1.10, §3.6).
//!
//! Config → `dlp_reproduce::bnn::table` → `results/table4/{curves.csv, summary.json,
//! table.md, table4.{svg,png}, meta.json, cells/}` (`--resume` continues from `cells/`).
//! Data as `table2`: COMPAS and Adult from `just data`, News and Blog synthetic stand-ins,
//! `--quick` a small synthetic stand-in.
//!
//! `--precision f32` (the default: the official code's float32 arithmetic, about half the cost
//! of `f64`); `--device cpu|cuda[:N]` samples a candle `dlp_candle::TensorBnn` instead of the
//! native kernel (the same curves at f64, `tests/bnn_quick.rs`; CUDA needs `--features cuda`).

use anyhow::{Result, bail};
use clap::Parser;
use dlp_reproduce::bnn::{self, Column, HIDDEN_CODE, RunConfig, TABLE4};
use dlp_reproduce::{CommonArgs, Run, SamplerSpec, parse_list};

/// Table 4: stochastic DULA on binary BNNs.
#[derive(Parser, Debug)]
#[command(name = "table4")]
struct Args {
    #[command(flatten)]
    common: CommonArgs,
    /// Data sets: compas, adult, news, blog (the last two synthetic stand-ins) [default:
    /// compas; --quick: synthetic].
    #[arg(long)]
    datasets: Option<String>,
    /// Minibatch sizes [default: 10,100,500; --quick: 10,50].
    #[arg(long)]
    batch_sizes: Option<String>,
    /// Step size α of DULA and stochastic DULA.
    #[arg(long, default_value_t = 0.1)]
    step_size: f64,
    /// Hidden units H [code: 100 (default); paper text: 500; --quick: 4].
    #[arg(long)]
    hidden: Option<usize>,
    /// Seeds per cell (seed, seed+1, …) [default: 5, 1 with adult; --quick: 2].
    #[arg(long)]
    seeds: Option<usize>,
    /// Particles (chains) [default: 50; --quick: 8].
    #[arg(long)]
    chains: Option<usize>,
    /// Sampler steps [default: 1000; --quick: 40].
    #[arg(long)]
    steps: Option<usize>,
    /// Steps between metrics.
    #[arg(long, default_value_t = 5)]
    every: usize,
    /// Arithmetic of the network: f32 (the official code's; about half the cost) or f64.
    #[arg(long, default_value = "f32")]
    precision: String,
    /// Evaluate the network with candle on this device (`cpu`, `cuda`, `cuda:N`; CUDA needs a
    /// build with `--features cuda`) instead of the native CPU kernel (the default, fastest on a CPU).
    #[arg(long)]
    device: Option<String>,
    /// Continue an interrupted run in the same --out: the (data set, column, seed) cells it
    /// finished (`cells/`) are read back, the rest run; the files equal an uninterrupted run's.
    #[arg(long)]
    resume: bool,
}

fn main() {
    dlp_reproduce::main_with_chain_graphs(run);
}

fn run(args: Args) -> Result<()> {
    let c = &args.common;
    let names: Vec<String> =
        parse_list(&c.pick(args.datasets.clone(), "compas".into(), "synthetic".into()), "datasets")?;
    let batches: Vec<usize> =
        parse_list(&c.pick(args.batch_sizes.clone(), "10,100,500".into(), "10,50".into()), "batch-sizes")?;
    let (precision, device) = bnn::backend(&args.precision, args.device.as_deref())?;
    let rc = RunConfig {
        hidden: c.pick(args.hidden, HIDDEN_CODE, 4),
        chains: c.pick(args.chains, 50, 8),
        steps: c.pick(args.steps, 1000, 40),
        every: args.every,
        seed: c.seed,
        precision,
    };
    // Adult costs ~20× COMPAS per step (paper/table2.md, Cost): five seeds would pass 2 hours
    // on 2 cores, so its default is one seed.
    let seeds = c.pick(args.seeds, if names.iter().any(|n| n == "adult") { 1 } else { 5 }, 2);
    if rc.hidden == 0 || rc.chains == 0 || rc.steps == 0 || rc.every == 0 || seeds == 0 || names.is_empty() {
        bail!("--hidden, --chains, --steps, --every, --seeds must be positive and --datasets non-empty");
    }
    let datasets = names.iter().map(|n| bnn::load(n)).collect::<Result<Vec<_>>>()?;
    let n_min = datasets.iter().map(|d| d.y_train.len()).min().unwrap_or(0);
    if let Some(&b) = batches.iter().find(|&&b| b == 0 || b > n_min) {
        bail!("--batch-sizes: {b} is not in 1..={n_min} (the smallest training set)");
    }
    let alpha = Some(args.step_size);
    let mut columns: Vec<Column> = batches
        .iter()
        .map(|&b| {
            let paper = [10, 100, 500].iter().position(|&v| v == b).filter(|_| args.step_size == 0.1);
            Column { label: format!("B={b}"), sampler: SamplerSpec::new("sg-dula", alpha), batch: Some(b), paper }
        })
        .collect();
    let paper = (args.step_size == 0.1).then_some(3);
    columns.push(Column { label: "full".into(), sampler: SamplerSpec::new("dula", alpha), batch: None, paper });
    let mut run = Run::start("table4", &args.common)?;
    run.resume = args.resume;
    for d in &datasets {
        let stand_in = if d.stand_in { " (synthetic stand-in)" } else { "" };
        println!("table4: {}{stand_in}: {} train × {} features, {} test", d.name, d.y_train.len(), d.p, d.y_test.len());
    }
    let table = bnn::table(&run, "table4", &datasets, &columns, seeds, &rc, device.as_ref(), &TABLE4)?;
    run.finish(&serde_json::json!({"datasets": names, "batch_sizes": batches, "step_size": args.step_size,
        "hidden": rc.hidden, "chains": rc.chains, "steps": rc.steps, "every": rc.every, "seeds": seeds,
        "precision": args.precision, "device": args.device,
        "rows": table["rows"].as_array().map(Vec::len)}))
}
