//! DISCS's RBM tasks trained here (issue 43): DISCS's trained RBMs (`mnist-2-25`,
//! `mnist-2-200`, categorical `fashion_mnist-4-50`, `-8-50`) sit behind a Drive link these
//! machines cannot reach, so this trains RBMs of the same shapes on the same data sets by our
//! own training and installs them where `--model discs:rbm-mnist-2-25` (…) reads them
//! (`dlp_models::discs::trained_path`, `data/cache/discs/`).
//!
//! Config → data (`dlp-data`: MNIST binarised as DISCS does, pixel/255 > U(0,1); Fashion-MNIST
//! in K equal-width grey-level classes) → CD-k with Adam (`dlp-learn`: binary `train_cd`,
//! categorical `train_cat_cd`; DISCS: PCD-100) → model files. Files: `results/discs-rbm/
//! {<task>.json, losses.csv, tasks.csv, summary.json, discs-rbm.{svg,png}, meta.json}`; each
//! task is a resumable cell (`--resume`). `--quick` trains small RBMs on the synthetic digits
//! and installs nothing.

use anyhow::{Context, Result};
use clap::Parser;
use dlp_data::{Mnist, binarize_stochastic, pixel_means, quantize, synthetic_digits};
use dlp_learn::cat_rbm::{CatRbmParams, train_cat_cd};
use dlp_learn::rbm::{CdConfig, RbmParams, train_cd};
use dlp_models::discs::trained_path;
use dlp_models::{Model, parse_model_str};
use dlp_reproduce::{CommonArgs, Figure, Panel, Run, Series};
use serde_json::{Value, json};

/// (task, data set, categories K, hidden M) of DISCS's RBM tasks.
const TASKS: [(&str, &str, usize, usize); 4] = [
    ("rbm-mnist-2-25", "mnist", 2, 25),
    ("rbm-mnist-2-200", "mnist", 2, 200),
    ("rbm-fashion-4-50", "fashion-mnist", 4, 50),
    ("rbm-fashion-8-50", "fashion-mnist", 8, 50),
];

/// DISCS's RBM tasks, trained here.
#[derive(Parser, Debug)]
#[command(name = "discs-rbm")]
struct Args {
    #[command(flatten)]
    common: CommonArgs,
    /// Comma-separated tasks [default: all four].
    #[arg(long)]
    tasks: Option<String>,
    /// Passes over the training images [default: 1].
    #[arg(long, default_value_t = 1)]
    epochs: usize,
    /// Block-Gibbs steps per update (CD-k).
    #[arg(long, default_value_t = 10)]
    cd_k: usize,
    /// Training images used (the first n) [default: all 60,000; --quick: 1,000 synthetic].
    #[arg(long)]
    train_items: Option<usize>,
}

fn main() {
    dlp_reproduce::main_with(run);
}

/// The grey levels of `set`'s training images (`--quick`: the synthetic stand-in digits).
fn images(set: &str, quick: bool, seed: u64) -> Result<Vec<u8>> {
    if quick {
        return Ok(synthetic_digits(1_000, seed).0);
    }
    let path = dlp_core::io::data_cache_dir().join(format!("{set}.dlpd"));
    Ok(Mnist::load_cache(&path).with_context(|| format!("{set}: run `just data {set}` first"))?.train_images)
}

fn run(args: Args) -> Result<()> {
    let c = &args.common;
    let wanted: Vec<String> = match &args.tasks {
        Some(t) => dlp_reproduce::parse_list(t, "--tasks")?,
        None => TASKS.iter().map(|t| t.0.to_string()).collect(),
    };
    if let Some(bad) = wanted.iter().find(|w| !TASKS.iter().any(|t| t.0 == w.as_str())) {
        anyhow::bail!(
            "--tasks: unknown RBM task {bad:?} (expected one of rbm-mnist-2-25, rbm-mnist-2-200, rbm-fashion-4-50, rbm-fashion-8-50)"
        );
    }
    let run = Run::start("discs-rbm", c)?;
    let (seed, d) = (run.seed(), 784);
    let cfg = CdConfig { k: args.cd_k, epochs: args.epochs, ..CdConfig::default() };
    let (mut losses, mut table, mut curves, mut summary) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    // Each data set is read once, by the first task that trains on it (resumed tasks read none).
    let mut loaded: std::collections::HashMap<&str, Vec<u8>> = std::collections::HashMap::new();
    for &(name, set, k, m) in TASKS.iter().filter(|t| wanted.iter().any(|w| w == t.0)) {
        let m = if c.quick { m.min(10) } else { m };
        let identity = json!({"task": name, "set": set, "quick": c.quick, "k": k, "m": m, "cd_k": cfg.k,
            "epochs": cfg.epochs, "train_items": args.train_items, "seed": seed});
        let cell: Value = run.cell(name, &identity, || {
            let mut grey = match loaded.get(set) {
                Some(g) => g.clone(),
                None => loaded.entry(set).or_insert(images(set, c.quick, seed)?).clone(),
            };
            if let Some(n) = args.train_items {
                grey.truncate(n.min(grey.len() / d) * d);
            }
            let data = if k == 2 { binarize_stochastic(&grey, seed) } else { quantize(&grey, k) };
            let bar = run.progress((grey.len() / d / cfg.batch * cfg.epochs) as u64, &format!("{name} CD-{}", cfg.k));
            let t0 = std::time::Instant::now();
            let (model, loss) = if k == 2 {
                let mut p = RbmParams::paper_init(&pixel_means(&data, d), m, seed);
                train_cd(&mut p, &data, &cfg, seed, rayon::current_num_threads(), |i, _| bar.set_position(i as u64))?;
                (p.to_model_json(name), Vec::new())
            } else {
                let mut p = CatRbmParams::discs_init(&data, d, k, m, seed);
                let loss = train_cat_cd(&mut p, &data, &cfg, seed, |i, _| bar.set_position(i as u64))?;
                let mut v = Model::new(p.model()?).to_json_value();
                v["name"] = json!(name);
                (v, loss)
            };
            bar.finish_and_clear();
            Ok(json!({"model": model, "loss": loss, "seconds": t0.elapsed().as_secs_f64(), "items": grey.len() / d}))
        })?;
        let text = serde_json::to_string(&cell["model"])?;
        // The file must load as the task's model (shape, kind) before it is installed.
        parse_model_str(&text, dlp_models::Format::Json, name)?;
        run.write_bytes(&format!("{name}.json"), text.as_bytes())?;
        if !c.quick {
            let dest = trained_path(name);
            std::fs::create_dir_all(dest.parent().expect("cache dir"))?;
            dlp_core::io::atomic_write(&dest, text.as_bytes()).with_context(|| dest.display().to_string())?;
            println!("{name}: installed {}", dest.display());
        }
        let loss: Vec<f64> = serde_json::from_value(cell["loss"].clone())?;
        losses.extend(loss.iter().enumerate().map(|(i, l)| vec![name.into(), (i + 1).to_string(), l.to_string()]));
        let seconds = cell["seconds"].as_f64().unwrap_or(f64::NAN);
        let items = cell["items"].as_u64().unwrap_or(0);
        println!("{name}: {items} images, K = {k}, M = {m}, CD-{}, {} epoch(s), {seconds:.1} s", cfg.k, cfg.epochs);
        table.push(vec![name.into(), set.into(), k.to_string(), m.to_string(), items.to_string(), seconds.to_string()]);
        summary.push(json!({"task": name, "data": if c.quick { "synthetic" } else { set }, "K": k, "M": m,
            "images": items, "seconds": seconds,
            "final_cd_loss": loss.last()}));
        if !loss.is_empty() {
            curves.push(Series {
                label: name.into(),
                points: loss.iter().enumerate().map(|(i, &l)| ((i + 1) as f64, l)).collect(),
            });
        }
    }
    run.write_csv("losses.csv", "task,update,cd_loss", &losses)?;
    run.write_csv("tasks.csv", "task,data,K,M,images,seconds", &table)?;
    let labels = curves.iter().map(|s| s.label.clone()).collect();
    let figure = Figure {
        caption: format!("DISCS RBM tasks trained here: CD-{} loss per update (categorical RBMs), seed {seed}", cfg.k),
        labels,
        panels: vec![Panel::lines("CD loss", "update", "mean ℓ(CD sample) − mean ℓ(data)", curves, vec![])],
    };
    run.write_figure("discs-rbm", &figure)?;
    run.write_json(
        "summary.json",
        &json!({"schema": "dlp.reproduce.discs-rbm.v1", "tasks": summary,
        "training": {"method": format!("CD-{} from the data batch, Adam lr {}, batch {}", cfg.k, cfg.lr, cfg.batch),
                     "discs": "PCD-100, Adam lr 1e-3, batch 100 (discs/learning/rbm/exp_config.py)"}}),
    )?;
    run.finish(&json!({"tasks": wanted, "epochs": cfg.epochs, "cd_k": cfg.k, "train_items": args.train_items}))
}
