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
//! of `f64`); `--device cpu|cuda[:N]` samples a candle `dlp_tensor::TensorBnn` instead of the
//! native kernel (the same curves at f64, `tests/bnn_quick.rs`; CUDA needs `--features cuda`).

use anyhow::Result;
use clap::Parser;
use dlp_reproduce::bnn::{self, Column, TABLE2};
use dlp_reproduce::{CommonArgs, parse_samplers};

/// Gibbs (random scan), GWG-1, DULA and DMALA with the code's α = 0.1.
const DEFAULT_SAMPLERS: &str = "gibbs,gwg,dula@0.1,dmala@0.1";

/// Table 2: full-batch samplers on binary BNNs.
#[derive(Parser, Debug)]
#[command(name = "table2")]
struct Args {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    table: bnn::TableArgs,
    /// Samplers, `name` or `name@step_size`; the paper's columns are the default.
    #[arg(long, default_value = DEFAULT_SAMPLERS)]
    samplers: String,
}

fn main() {
    dlp_reproduce::main_with_chain_graphs(run);
}

fn run(args: Args) -> Result<()> {
    let c = &args.common;
    let bnn::TableSetup { names, rc, seeds, device } = args.table.setup(c)?;
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
    let run = args.table.start("table2", c, &datasets, rc.hidden)?;
    let table = bnn::table(&run, "table2", &datasets, &columns, seeds, &rc, device.as_ref(), &TABLE2)?;
    let t = &args.table;
    run.finish(&serde_json::json!({"datasets": names, "hidden": rc.hidden, "chains": rc.chains, "steps": rc.steps,
        "every": rc.every, "seeds": seeds, "samplers": args.samplers, "precision": t.precision, "device": t.device,
        "rows": table["rows"].as_array().map(Vec::len)}))
}
