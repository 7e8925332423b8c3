//! Table 2 of the main paper (§7.4): binary Bayesian neural networks sampled with full-batch
//! Gibbs, GWG, DULA and DMALA (α = 0.1); final training log-likelihood (−MSE) and test RMSE
//! of the 50-particle ensemble, mean ± std over seeds (`reproduction.md` §3.6).
//!
//! Config → `dlp_reproduce::bnn::table` → `results/table2/{curves.csv, summary.json,
//! table.md, table2.{svg,png}, meta.json, cells/}` (`--resume` continues from `cells/`).
//! COMPAS and Adult come from `just data compas|adult`; News and Blog are synthetic stand-ins
//! of their shapes; `--quick` runs a small synthetic stand-in in seconds. H = 100 (the
//! official code's value); `--hidden 500` is the paper's.
//!
//! `--precision f32` (the default: the official code's float32 arithmetic, about half the cost
//! of `f64`); `--device cpu|cuda[:N]` samples a candle `dlp_candle::TensorBnn` instead of the
//! native kernel (the same curves at f64, `tests/bnn_quick.rs`; CUDA needs `--features cuda`).

use anyhow::{Result, bail};
use clap::Parser;
use dlp_reproduce::bnn::{self, Column, HIDDEN_CODE, RunConfig, TABLE2};
use dlp_reproduce::{CommonArgs, Run, parse_list, parse_samplers};

/// Gibbs (random scan), GWG-1, DULA and DMALA with the code's α = 0.1.
const DEFAULT_SAMPLERS: &str = "gibbs,gwg,dula@0.1,dmala@0.1";

/// Table 2: full-batch samplers on binary BNNs.
#[derive(Parser, Debug)]
#[command(name = "table2")]
struct Args {
    #[command(flatten)]
    common: CommonArgs,
    /// Data sets: compas, adult, news, blog (the last two synthetic stand-ins) [default:
    /// compas; --quick: synthetic].
    #[arg(long)]
    datasets: Option<String>,
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
    /// Samplers, `name` or `name@step_size`; the paper's columns are the default.
    #[arg(long, default_value = DEFAULT_SAMPLERS)]
    samplers: String,
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
    let columns: Vec<Column> = parse_samplers(&args.samplers)?
        .into_iter()
        .map(|s| {
            let paper = ["gibbs", "gwg", "dula", "dmala"]
                .iter()
                .position(|n| *n == s.name && s.step_size.is_none_or(|a| a == 0.1));
            Column { label: s.legend(), sampler: s, batch: None, paper }
        })
        .collect();
    for col in &columns {
        col.sampler.build()?;
    }
    let datasets = names.iter().map(|n| bnn::load(n)).collect::<Result<Vec<_>>>()?;
    let mut run = Run::start("table2", &args.common)?;
    run.resume = args.resume;
    for d in &datasets {
        let stand_in = if d.stand_in { " (synthetic stand-in)" } else { "" };
        println!(
            "table2: {}{stand_in}: {} train × {} features, {} test; d = {}",
            d.name,
            d.y_train.len(),
            d.p,
            d.y_test.len(),
            (d.p + 2) * rc.hidden + 1
        );
    }
    let table = bnn::table(&run, "table2", &datasets, &columns, seeds, &rc, device.as_ref(), &TABLE2)?;
    run.finish(&serde_json::json!({"datasets": names, "hidden": rc.hidden, "chains": rc.chains, "steps": rc.steps,
        "every": rc.every, "seeds": seeds, "samplers": args.samplers, "precision": args.precision, "device": args.device, "rows": table["rows"].as_array().map(Vec::len)}))
}
