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
//! of `f64`); `--device cpu|cuda[:N]` samples a candle `dlp_tensor::TensorBnn` instead of the
//! native kernel (the same curves at f64, `tests/bnn_quick.rs`; CUDA needs `--features cuda`).

use anyhow::{Result, bail};
use clap::Parser;
use dlp_reproduce::bnn::{self, Column, TABLE4};
use dlp_reproduce::{CommonArgs, SamplerSpec, parse_list};

/// Table 4: stochastic DULA on binary BNNs.
#[derive(Parser, Debug)]
#[command(name = "table4")]
struct Args {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    table: bnn::TableArgs,
    /// Minibatch sizes [default: 10,100,500; --quick: 10,50].
    #[arg(long)]
    batch_sizes: Option<String>,
    /// Step size α of DULA and stochastic DULA.
    #[arg(long, default_value_t = 0.1)]
    step_size: f64,
    /// Leave out the full-batch DULA column, which is Table 2's DULA column: the minibatch
    /// columns can then take more seeds than the full batch affords (on Adult at H = 500 a
    /// full-batch cell is about an hour here, a minibatch one minutes).
    #[arg(long)]
    no_full: bool,
}

fn main() {
    dlp_reproduce::main_with_chain_graphs(run);
}

fn run(args: Args) -> Result<()> {
    let c = &args.common;
    let bnn::TableSetup { names, rc, seeds, device } = args.table.setup(c)?;
    let batches: Vec<usize> =
        parse_list(&c.pick(args.batch_sizes.clone(), "10,100,500".into(), "10,50".into()), "batch-sizes")?;
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
    if !args.no_full {
        columns.push(Column { label: "full".into(), sampler: SamplerSpec::new("dula", alpha), batch: None, paper });
    }
    let run = args.table.start("table4", c, &datasets, rc.hidden)?;
    let table = bnn::table(&run, "table4", &datasets, &columns, seeds, &rc, device.as_ref(), &TABLE4)?;
    let t = &args.table;
    run.finish(&serde_json::json!({"datasets": names, "batch_sizes": batches, "full_batch_column": !args.no_full, "step_size": args.step_size,
        "hidden": rc.hidden, "chains": rc.chains, "steps": rc.steps, "every": rc.every, "seeds": seeds,
        "precision": t.precision, "device": t.device,
        "rows": table["rows"].as_array().map(Vec::len)}))
}
