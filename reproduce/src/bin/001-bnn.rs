//! Yokoi, Otsuka, Sato (paper 001) §6.2, Fig. 4, App. E: Bayesian binary neural network
//! (784–50–10 ReLU, no biases, weights in (−1, 1) with a Beta(½, ½) prior, binarised at
//! prediction) on MNIST and Fashion-MNIST (8 : 1 : 1 split), sampled by CoRV-SGLD with affine
//! sigmoid / arctan / softsign against SGLD with mirroring; the network, its minibatch gradient
//! (candle autograd) and its binarised prediction are `dlp_papers::binary_nn`. Test
//! cross-entropy and accuracy of the Bayesian predictive mean (running mean of the binarised
//! networks' softmax outputs, one sample per epoch) against epochs.
//! Step size per sampler: the best final validation cross-entropy over a log grid (the paper
//! used TPE with 100 trials). Default: a reduced CPU scale (every reduction in `--help` and in
//! summary.json); `--paper-scale`: 100 epochs (MNIST) / 300 (Fashion-MNIST). `--quick`: the
//! synthetic stroke digits of `dlp-data` (a STAND-IN for MNIST, 1,000 images), seconds.
//!
//! → `results/001-bnn/{curves.csv, tuning.csv, summary.json, 001-bnn.{svg,png}, meta.json, cells/}`.

use anyhow::{Result, bail};
use clap::Parser;
use dlp_papers::binary_nn::BinaryNet;
use dlp_reproduce::corv_bnn::{Point, SAMPLERS, best, epochs, epochs_to, load, run_grid, sampler, split};
use dlp_reproduce::grid::{log_grid, warn_if_at_edge};
use dlp_reproduce::{CommonArgs, Figure, Panel, Run, Series, parse_list};
use dlp_tensor::candle_core::DType;
use serde_json::json;

/// Bayesian binary neural networks: CoRV transforms vs mirror SGLD (paper 001 §6.2).
#[derive(Parser, Debug)]
#[command(name = "001-bnn")]
struct Args {
    #[command(flatten)]
    common: CommonArgs,
    /// Data sets: mnist, fashion-mnist, synthetic [default: mnist,fashion-mnist; --quick: synthetic].
    #[arg(long)]
    datasets: Option<String>,
    /// Samplers (corv-sigmoid, corv-arctan, corv-softsign, sgld-mirror) [default: all four].
    #[arg(long)]
    samplers: Option<String>,
    /// The paper's scale: 100 epochs on MNIST, 300 on Fashion-MNIST, a 9-point step grid.
    #[arg(long)]
    paper_scale: bool,
    /// Epochs per chain, every data set [default: 15 (paper: 100 MNIST / 300 Fashion-MNIST); --quick: 2].
    #[arg(long)]
    epochs: Option<usize>,
    /// Step sizes per sampler, log-spaced in [--eps-min, --eps-max] [default: 5; --paper-scale: 9; --quick: 2].
    #[arg(long)]
    grid: Option<usize>,
    /// Smallest step size of the grid [default: 1e-6; --quick: 1e-5].
    #[arg(long)]
    eps_min: Option<f64>,
    /// Largest step size of the grid [default: 1e-4; --quick: 1e-3].
    #[arg(long)]
    eps_max: Option<f64>,
    /// Minibatch size B [default: 100 (spec; the paper does not say); --quick: 50].
    #[arg(long)]
    batch: Option<usize>,
    /// Hidden layer sizes, comma-separated (`50,50` for the deeper 784–50–50–10 variant).
    #[arg(long, default_value = "50")]
    hidden: String,
    /// Beta prior α = β on (−1, 1) (the paper does not give them).
    #[arg(long, default_value_t = 0.5)]
    prior: f64,
    /// candle device: cpu or `cuda[:N]` (needs the `cuda` feature).
    #[arg(long, default_value = "cpu")]
    device: String,
    /// Test accuracy threshold for the epochs-to-threshold table.
    #[arg(long, default_value_t = 0.85)]
    threshold: f64,
    /// Continue an interrupted run in the same --out: the chains it finished (`cells/`, one
    /// per data set × sampler × ε) are read back, the rest run (`--paper-scale` is many hours).
    #[arg(long)]
    resume: bool,
}

fn main() {
    dlp_reproduce::main_with_chain_graphs(run);
}

fn run(args: Args) -> Result<()> {
    let c = &args.common;
    let names: Vec<String> =
        parse_list(&c.pick(args.datasets.clone(), "mnist,fashion-mnist".into(), "synthetic".into()), "datasets")?;
    let samplers: Vec<String> = parse_list(&args.samplers.clone().unwrap_or_else(|| SAMPLERS.join(",")), "samplers")?;
    let hidden: Vec<usize> = parse_list(&args.hidden, "hidden")?;
    let grid_full = if args.paper_scale { 9 } else { 5 };
    let (batch, n_grid) = (c.pick(args.batch, 100, 50), c.pick(args.grid, grid_full, 2));
    let epochs_of = |n: &str| epochs(n, args.epochs, c.quick, args.paper_scale);
    if names.is_empty() || samplers.is_empty() || hidden.is_empty() || hidden.contains(&0) {
        bail!("--datasets, --samplers and --hidden must be non-empty (hidden sizes ≥ 1)");
    }
    if batch == 0 || n_grid == 0 || args.epochs == Some(0) {
        bail!("--batch, --grid and --epochs must be at least 1");
    }
    let (eps_min, eps_max) = (c.pick(args.eps_min, 1e-6, 1e-5), c.pick(args.eps_max, 1e-4, 1e-3));
    if !(eps_min > 0.0 && eps_min <= eps_max && eps_max.is_finite()) {
        bail!("--eps-min and --eps-max must satisfy 0 < eps-min ≤ eps-max < ∞");
    }
    if !(args.prior.is_finite() && args.prior > 0.0 && (0.0..=1.0).contains(&args.threshold)) {
        bail!("--prior must be > 0 and --threshold in [0, 1]");
    }
    samplers.iter().try_for_each(|s| sampler(s, 1.0, 1).map(drop))?; // a bad name fails before any work
    let device = dlp_tensor::device(&args.device)?;
    let layers: Vec<usize> = std::iter::once(784).chain(hidden.iter().copied()).chain([10]).collect();
    let eps = log_grid(eps_min, eps_max, n_grid);
    let data: Vec<_> = names.iter().map(|n| load(n, c.seed).map(|m| split(&m))).collect::<Result<_>>()?;
    let mut run = Run::start("001-bnn", c)?;
    run.resume = args.resume;
    let (mut curves, mut tuning, mut panels, mut per) = (vec![], vec![], vec![], serde_json::Map::new());
    for (name, sp) in names.iter().zip(&data) {
        let epochs = epochs_of(name);
        let net =
            BinaryNet::new(&sp.train.images, &sp.train.labels, &layers, (args.prior, args.prior), &device, DType::F32)?;
        let (valid, test) =
            (net.eval_set(&sp.valid.images, &sp.valid.labels)?, net.eval_set(&sp.test.images, &sp.test.labels)?);
        let stand_in = if name == "synthetic" { " (synthetic stroke digits: a STAND-IN for MNIST)" } else { "" };
        println!(
            "001-bnn: {name}{stand_in}, {} train / {} validation / {} test, {layers:?}, B = {batch}, {epochs} epochs, ε grid {:?}",
            sp.train.labels.len(),
            valid.len(),
            test.len(),
            eps.iter().map(|e| format!("{e:.1e}")).collect::<Vec<_>>()
        );
        let bar = run.progress((samplers.len() * n_grid * epochs) as u64, &format!("{name}: chain-epochs"));
        let t0 = run.elapsed();
        let setup = json!({"dataset": name, "train": sp.train.labels.len(), "layers": layers, "prior": args.prior,
            "device": args.device});
        let runs = run_grid(&run, &setup, &net, &valid, &test, &samplers, &eps, batch, epochs, c.seed, &bar)?;
        bar.finish_and_clear();
        let (mut ce_series, mut acc_series, mut rows) = (vec![], vec![], serde_json::Map::new());
        for (s, runs) in samplers.iter().zip(&runs) {
            let b = best(runs);
            let edge = warn_if_at_edge(&format!("001-bnn: {name}: {s}"), "ε", eps[b], &eps, "--eps-min/--eps-max");
            for (e, (curve, _)) in runs.iter().enumerate() {
                let last = curve.last();
                let f = |g: fn(&Point) -> f64| last.map_or(f64::NAN, g).to_string();
                tuning.push(vec![name.clone(), s.clone(), eps[e].to_string(), f(|p| p.valid_ce), f(|p| p.test_acc)]);
                for p in curve {
                    let v = [p.valid_ce, p.valid_acc, p.test_ce, p.test_acc, p.test_acc_single].map(|x| x.to_string());
                    let head = [name.clone(), s.clone(), eps[e].to_string(), (e == b).to_string(), p.epoch.to_string()];
                    curves.push(head.into_iter().chain(v).collect());
                }
            }
            let t = &runs[b].0;
            ce_series
                .push(Series { label: s.clone(), points: t.iter().map(|p| (p.epoch as f64, p.test_ce)).collect() });
            acc_series
                .push(Series { label: s.clone(), points: t.iter().map(|p| (p.epoch as f64, p.test_acc)).collect() });
            let last = t.last().copied();
            let reach = |r: &(Vec<Point>, f64)| r.0.last().is_some_and(|p| p.test_acc >= args.threshold);
            let good: Vec<f64> = (0..n_grid).filter(|&e| reach(&runs[e])).map(|e| eps[e]).collect();
            rows.insert(s.clone(), json!({"step_size": eps[b], "final_test_ce": last.map(|p| p.test_ce),
                "final_test_accuracy": last.map(|p| p.test_acc), "final_single_net_test_accuracy": last.map(|p| p.test_acc_single),
                "epochs_to_threshold": epochs_to(t, args.threshold), "step_sizes_reaching_threshold": good,
                "step_size_at_grid_edge": edge}));
            println!(
                "{name:>14} {s:>14}: ε = {:.1e}, final test CE {:.4}, accuracy {:.4}, to {}: {:?}",
                eps[b],
                last.map_or(f64::NAN, |p| p.test_ce),
                last.map_or(f64::NAN, |p| p.test_acc),
                args.threshold,
                epochs_to(t, args.threshold)
            );
        }
        panels.push(
            Panel::lines(format!("{name}: test cross-entropy"), "epoch", "CE (nats)", ce_series, vec![]).with_log_y(),
        );
        panels.push(Panel::lines(format!("{name}: test accuracy"), "epoch", "accuracy", acc_series, vec![]));
        per.insert(
            name.clone(),
            json!({"stand_in": name == "synthetic", "epochs": epochs, "train": sp.train.labels.len(),
            "validation": valid.len(), "wall_seconds": run.elapsed() - t0, "test": test.len(), "samplers": rows,
            "chain_step_seconds": runs.iter().flatten().map(|c| c.1).sum::<f64>()}), // read-back chains too
        );
    }
    run.write_csv("curves.csv", "dataset,sampler,step_size,selected,epoch,valid_ce,valid_accuracy,test_ce,test_accuracy,test_accuracy_single_net", &curves)?;
    run.write_csv("tuning.csv", "dataset,sampler,step_size,final_valid_ce,final_test_accuracy", &tuning)?;
    let fig = Figure {
        caption: format!(
            "001 §6.2: Bayesian binary NN {layers:?}, B = {batch}; predictive mean of the binarised nets (selected ε per sampler)"
        ),
        labels: samplers.clone(),
        panels,
    };
    run.write_figure("001-bnn", &fig)?;
    run.write_json("summary.json", &json!({
        "layers": layers, "batch": batch, "prior_alpha_beta": args.prior, "step_sizes": eps, "threshold": args.threshold,
        "device": args.device, "paper_scale": args.paper_scale, "datasets": per,
        "reductions": [format!("epochs {:?} (paper: 100 MNIST, 300 Fashion-MNIST)", names.iter().map(|n| epochs_of(n)).collect::<Vec<_>>()),
            format!("step size: best final validation CE over a {n_grid}-point log grid (paper: TPE, 100 trials)"),
            "one seed (paper: not stated)".to_string()],
        "paper_claims": {"figure": "Fig. 4 (curves only, no numbers)", "data": "MNIST and Fashion-MNIST, 8:1:1",
            "epochs": {"mnist": 100, "fashion-mnist": 300}, "step_size": "TPE, 100 trials on validation loss",
            "mirror": "the mirroring trick shows a slower learning curve on both data sets",
            "corv": "CoRV works with sigmoid, arctan and softsign (comparably), and allows larger steps"},
    }))?;
    run.finish(&json!({"datasets": names, "samplers": samplers, "layers": layers, "batch": batch, "grid": n_grid,
        "eps_min": eps_min, "eps_max": eps_max, "prior": args.prior, "paper_scale": args.paper_scale, "device": args.device}))
}
