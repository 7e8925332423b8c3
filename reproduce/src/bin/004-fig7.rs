//! Han et al. (AISTATS 2020, paper 004) App. A, Fig. 7: GF-SVGD particles on the five-state
//! categorical (values −1, −0.5, 0, 0.5, 1; probabilities 0.1, 0.2, 0.3, 0.1, 0.3), base N(0, 1)
//! cut at its quintiles, ρ = p₀, snapshots at iterations 0, 10, 50, 100. n and the start are
//! unstated [spec §7.1, R: n = 100, x ~ N(0, 1)]. Updates: plain ε = 0.5 (our default for
//! d ≤ 5), Adam lr 0.05, and the paper's preset Adam 1e−4 (App. E). TV of Γ(x) to p_* over
//! `--seeds` seeds against the TV of n i.i.d. draws (the Monte Carlo level).
//!
//! → `results/004-fig7/{tv.csv, particles.csv, summary.json, 004-fig7.svg, 004-fig7.png, meta.json}`.

use anyhow::{Result, bail};
use clap::Parser;
use dlp_core::lift::{Base, Partition};
use dlp_reproduce::gf_svgd::{
    Toy, density_curves, histogram, iid_tv_stats, mean_tv_curve, toy_seeds, tv_rows, tv_stats,
};
use dlp_reproduce::{CommonArgs, Figure, Panel, RefLine, Run, Series};
use dlp_samplers::gf_svgd::Optimizer;
use serde_json::json;

const PROBS: [f64; 5] = [0.1, 0.2, 0.3, 0.1, 0.3];
const SNAPSHOTS: [usize; 4] = [0, 10, 50, 100];

/// Particles of GF-SVGD on a 1-D five-state categorical (Han et al. Fig. 7).
#[derive(Parser, Debug)]
#[command(name = "004-fig7")]
struct Args {
    #[command(flatten)]
    common: CommonArgs,
    /// Particles n [default: 100].
    #[arg(long, default_value_t = 100)]
    n: usize,
    /// Iterations [default: 500; --quick: 100].
    #[arg(long)]
    iters: Option<usize>,
    /// Seeds [default: 20; --quick: 5].
    #[arg(long)]
    seeds: Option<usize>,
}

fn main() {
    dlp_reproduce::main_with(run);
}

fn run(args: Args) -> Result<()> {
    let c = &args.common;
    let (iters, seeds) = (c.pick(args.iters, 500, 100), c.pick(args.seeds, 20, 5));
    if iters < 100 || seeds == 0 || args.n < 2 {
        bail!("--iters must be at least 100 (the last snapshot), --seeds at least 1, --n at least 2");
    }
    let run = Run::start("004-fig7", c)?;
    println!("004-fig7: n = {}, {iters} iterations, {seeds} seeds, seed {}", args.n, c.seed);
    let updates = [
        ("plain 0.5", Optimizer::Plain { step: 0.5 }),
        ("adam 0.05", Optimizer::adam(0.05)),
        ("adam 1e-4 (paper)", Optimizer::paper()),
    ];
    let bar = run.progress(updates.len() as u64, "updates");
    let mut all = Vec::new();
    for (label, opt) in updates {
        let toy = Toy { probs: PROBS.to_vec(), base: Base::Gaussian, n: args.n, iters, optimizer: opt, init_mean: 0.0 };
        all.push((label, toy_seeds(&toy, c.seed, seeds, &SNAPSHOTS)?));
        bar.inc(1);
    }
    bar.finish_and_clear();
    let (iid_mean, iid_q95) = iid_tv_stats(&PROBS, args.n, c.seed, 1000);
    println!("i.i.d. draws of {}: mean TV {iid_mean:.4}, 95% quantile {iid_q95:.4} (1000 replications)", args.n);
    let mut rows = Vec::new();
    let mut table = Vec::new();
    for (label, runs) in &all {
        rows.extend(tv_rows(label, runs));
        let at: Vec<_> = [0, 10, 50, 100, iters].iter().map(|&it| (it, tv_stats(runs, it))).collect();
        let line: Vec<String> = at.iter().map(|(it, (m, x))| format!("{it}: {m:.4}/{x:.4}")).collect();
        println!("{label:>18}  mean/max TV at {}", line.join(", "));
        table.push(json!({"update": label, "tv": at.iter().map(|(it, (m, x))| json!({"iteration": it, "mean": m, "max": x})).collect::<Vec<_>>()}));
    }
    run.write_csv("tv.csv", "update,seed,iteration,tv", &rows)?;
    // Snapshots of the first seed of the plain update (the paper's panels a–d).
    let first = &all[0].1[0];
    let mut prow = Vec::new();
    let part = Partition::new(Base::Gaussian, PROBS.len());
    for (it, xs) in &first.snapshots {
        for (j, x) in xs.iter().enumerate() {
            prow.push(vec![it.to_string(), j.to_string(), x.to_string(), part.bin(*x).to_string()]);
        }
    }
    run.write_csv("particles.csv", "iteration,particle,x,value_index", &prow)?;
    let (pc, p0) = density_curves(&part, &PROBS, -3.5, 3.5);
    let mut snaps = vec![Series { label: "p_c".into(), points: pc }, Series { label: "p0".into(), points: p0 }];
    for (it, xs) in &first.snapshots {
        snaps.push(Series { label: format!("particles it {it}"), points: histogram(xs, -3.5, 3.5, 28) });
    }
    let curves: Vec<Series> =
        all.iter().map(|(l, r)| Series { label: l.to_string(), points: mean_tv_curve(r) }).collect();
    let mut labels: Vec<String> = curves.iter().map(|s| s.label.clone()).collect();
    labels.extend(snaps.iter().map(|s| s.label.clone()));
    let fig = Figure {
        caption: format!("004 Fig. 7: GF-SVGD on a five-state categorical, n = {}, {seeds} seeds", args.n),
        labels,
        panels: vec![
            Panel::lines(
                "mean TV of Γ(x) to p*",
                "iteration",
                "TV",
                curves,
                vec![RefLine { label: format!("i.i.d. n = {}", args.n), y: iid_mean }],
            ),
            Panel::lines("particles (plain 0.5, first seed)", "x", "density", snaps, vec![]),
        ],
    };
    run.write_figure("004-fig7", &fig)?;
    let (m100, x100) = tv_stats(&all[0].1, 100);
    run.write_json("summary.json", &json!({
        "n": args.n, "iterations": iters, "seeds": seeds, "probs": PROBS, "updates": table,
        "iid": {"mean_tv": iid_mean, "q95_tv": iid_q95, "replications": 1000},
        "spec_test": {"setting": "plain 0.5, 100 iterations", "mean_tv": m100, "max_tv": x100, "thresholds": {"mean": 0.035, "max": 0.06},
                      "passes": m100 <= 0.035 && x100 <= 0.06},
    }))?;
    run.finish(
        &json!({"n": args.n, "iters": iters, "seeds": seeds, "init": "N(0,1)", "base": "N(0,1)", "surrogate": "p0"}),
    )
}
