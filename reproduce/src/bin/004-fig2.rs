//! Han et al. (AISTATS 2020, paper 004) §4.2, Fig. 2: the choice of base. Five-state p_* on
//! {−2, …, 2} with probabilities (0.1, 0.2, 0.25, 0.15, 0.3); (a) base N(0, 1), (b–d) base
//! Σ_i p_i N(μ_i, 1) with three unstated μ [spec §7.1, R: (−2, −1, 0, 1, 2), (−4, −2, 0, 2, 4),
//! (−8, −4, 0, 4, 8)]; p_c(x) = p(F(x)) p₀(x). The paper draws p_c for each base and claims the
//! Gaussian base gives the easiest p_c. We draw the same p_c exactly and measure "easiest" as
//! the TV of GF-SVGD's particles (ρ = p₀, plain ε = 0.5, n = 100 from N(0, 1)) over `--seeds`.
//!
//! → `results/004-fig2/{density.csv, tv.csv, summary.json, 004-fig2.svg, 004-fig2.png, meta.json}`.

use anyhow::{Result, bail};
use clap::Parser;
use dlp_core::lift::{Base, Partition};
use dlp_reproduce::gf_svgd::{Toy, density_curves, iid_tv_stats, mean_tv_curve, toy_seeds, tv_rows, tv_stats};
use dlp_reproduce::{CommonArgs, Figure, Panel, RefLine, Run, Series};
use dlp_samplers::gf_svgd::Optimizer;
use serde_json::json;

const PROBS: [f64; 5] = [0.1, 0.2, 0.25, 0.15, 0.3];

/// p_c under four bases and GF-SVGD on each (Han et al. Fig. 2).
#[derive(Parser, Debug)]
#[command(name = "004-fig2")]
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
        bail!("--iters must be at least 100, --seeds at least 1, --n at least 2");
    }
    let run = Run::start("004-fig2", c)?;
    println!("004-fig2: n = {}, {iters} iterations, {seeds} seeds, seed {}", args.n, c.seed);
    let mut bases = vec![("(a) N(0,1)".to_string(), Base::Gaussian)];
    for (tag, s) in [("b", 1.0), ("c", 2.0), ("d", 4.0)] {
        let mu: Vec<f64> = (-2..=2).map(|i| i as f64 * s).collect();
        bases.push((format!("({tag}) mu = {mu:?}"), Base::mixture(PROBS.to_vec(), mu).map_err(anyhow::Error::msg)?));
    }
    let bar = run.progress(bases.len() as u64, "bases");
    let (mut dens, mut tvs, mut dens_series, mut curves, mut table) = (vec![], vec![], vec![], vec![], vec![]);
    for (label, base) in &bases {
        let part = Partition::new(base.clone(), PROBS.len());
        let (pc, _) = density_curves(&part, &PROBS, -14.0, 14.0);
        dens.extend(pc.iter().map(|(x, y)| vec![label.clone(), x.to_string(), y.to_string()]));
        dens_series.push(Series { label: label.clone(), points: pc });
        let toy = Toy {
            probs: PROBS.to_vec(),
            base: base.clone(),
            n: args.n,
            iters,
            optimizer: Optimizer::Plain { step: 0.5 },
            init_mean: 0.0,
        };
        let runs = toy_seeds(&toy, c.seed, seeds, &[])?;
        tvs.extend(tv_rows(label, &runs));
        curves.push(Series { label: label.clone(), points: mean_tv_curve(&runs) });
        let (m100, x100) = tv_stats(&runs, 100);
        let (m, x) = tv_stats(&runs, iters);
        bar.suspend(|| {
            println!(
                "{label:>36}: mean/max TV at 100: {m100:.4}/{x100:.4}, at {iters}: {m:.4}/{x:.4}; cuts {:.3?}",
                part.cuts
            )
        });
        table.push(json!({"base": label, "cuts": part.cuts, "tv_100": {"mean": m100, "max": x100}, "tv_last": {"mean": m, "max": x}}));
        bar.inc(1);
    }
    bar.finish_and_clear();
    let (iid_mean, iid_q95) = iid_tv_stats(&PROBS, args.n, c.seed, 1000);
    println!("i.i.d. n = {}: mean TV {iid_mean:.4}, 95% {iid_q95:.4}", args.n);
    run.write_csv("density.csv", "base,x,p_c", &dens)?;
    run.write_csv("tv.csv", "base,seed,iteration,tv", &tvs)?;
    let labels: Vec<String> = bases.iter().map(|b| b.0.clone()).collect();
    let fig = Figure {
        caption: format!("004 Fig. 2: p_c under four bases; GF-SVGD n = {}, {seeds} seeds", args.n),
        labels,
        panels: vec![
            Panel::lines("p_c(x) = p(F(x)) p0(x)", "x", "density", dens_series, vec![]),
            Panel::lines(
                "mean TV of Γ(x) to p*",
                "iteration",
                "TV",
                curves,
                vec![RefLine { label: format!("i.i.d. n = {}", args.n), y: iid_mean }],
            ),
        ],
    };
    run.write_figure("004-fig2", &fig)?;
    run.write_json(
        "summary.json",
        &json!({
            "probs": PROBS, "n": args.n, "iterations": iters, "seeds": seeds, "bases": table,
            "iid": {"mean_tv": iid_mean, "q95_tv": iid_q95, "replications": 1000},
        }),
    )?;
    run.finish(&json!({"n": args.n, "iters": iters, "seeds": seeds, "update": "plain 0.5", "init": "N(0,1)"}))
}
