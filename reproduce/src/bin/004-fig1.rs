//! Han et al. (AISTATS 2020, paper 004) §3, Fig. 1: the piecewise target p_c(x) ∝ p₀(x) p_*(Γ(x))
//! of the three-state p_* on {−1, 0, 1} with probabilities (0.25, 0.45, 0.3), base N(0, 1) cut at
//! its terciles (±0.4307). The paper's figure is an illustration (p_*, p₀, p_c); we draw the same
//! curves, exactly, and add what can be measured: GF-SVGD (ρ = p₀, plain ε = 0.5, n = 100 from
//! N(0, 1) [R, as Fig. 7]) over `--seeds` seeds, TV of Γ(x) to p_* against i.i.d. draws.
//!
//! → `results/004-fig1/{density.csv, tv.csv, summary.json, 004-fig1.svg, 004-fig1.png, meta.json}`.

use anyhow::{Result, bail};
use clap::Parser;
use dlp_core::lift::{Base, Partition};
use dlp_reproduce::gf_svgd::{
    Toy, density_curves, histogram, iid_tv_stats, mean_tv_curve, toy_seeds, tv_rows, tv_stats,
};
use dlp_reproduce::{CommonArgs, Figure, Panel, RefLine, Run, Series};
use dlp_samplers::gf_svgd::Optimizer;
use serde_json::json;

const PROBS: [f64; 3] = [0.25, 0.45, 0.3];

/// The piecewise target of a three-state categorical and GF-SVGD on it (Han et al. Fig. 1).
#[derive(Parser, Debug)]
#[command(name = "004-fig1")]
struct Args {
    #[command(flatten)]
    common: CommonArgs,
    /// Particles n [default: 100].
    #[arg(long, default_value_t = 100)]
    n: usize,
    /// Iterations [default: 200; --quick: 50].
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
    let (iters, seeds) = (c.pick(args.iters, 200, 50), c.pick(args.seeds, 20, 5));
    if iters == 0 || seeds == 0 || args.n < 2 {
        bail!("--iters and --seeds must be at least 1, --n at least 2");
    }
    let run = Run::start("004-fig1", c)?;
    println!("004-fig1: n = {}, {iters} iterations, {seeds} seeds, seed {}", args.n, c.seed);
    let part = Partition::new(Base::Gaussian, PROBS.len());
    println!("cut points {:?}", part.cuts);
    let toy = Toy {
        probs: PROBS.to_vec(),
        base: Base::Gaussian,
        n: args.n,
        iters,
        optimizer: Optimizer::Plain { step: 0.5 },
        init_mean: 0.0,
    };
    let bar = run.progress(1, "seeds");
    let runs = toy_seeds(&toy, c.seed, seeds, &[iters])?;
    bar.finish_and_clear();
    let (iid_mean, iid_q95) = iid_tv_stats(&PROBS, args.n, c.seed, 1000);
    let (m, x) = tv_stats(&runs, iters);
    println!(
        "GF-SVGD mean/max TV after {iters} iterations: {m:.4}/{x:.4}; i.i.d. n = {}: mean {iid_mean:.4}, 95% {iid_q95:.4}",
        args.n
    );
    let (pc, p0) = density_curves(&part, &PROBS, -3.5, 3.5);
    let rows: Vec<Vec<String>> =
        pc.iter().zip(&p0).map(|(a, b)| vec![a.0.to_string(), b.1.to_string(), a.1.to_string()]).collect();
    run.write_csv("density.csv", "x,p0,p_c", &rows)?;
    run.write_csv("tv.csv", "update,seed,iteration,tv", &tv_rows("plain 0.5", &runs))?;
    let snap = &runs[0].snapshots[0].1;
    let fig = Figure {
        caption: format!("004 Fig. 1: p_c of a three-state p*, base N(0,1); GF-SVGD n = {}, {seeds} seeds", args.n),
        labels: vec!["p_c".into(), "p0".into(), "particles".into(), "plain 0.5".into()],
        panels: vec![
            Panel::lines(
                "p_c (exact) and the particles of the first seed",
                "x",
                "density",
                vec![
                    Series { label: "p_c".into(), points: pc },
                    Series { label: "p0".into(), points: p0 },
                    Series { label: "particles".into(), points: histogram(snap, -3.5, 3.5, 28) },
                ],
                vec![],
            ),
            Panel::lines(
                "mean TV of Γ(x) to p*",
                "iteration",
                "TV",
                vec![Series { label: "plain 0.5".into(), points: mean_tv_curve(&runs) }],
                vec![RefLine { label: format!("i.i.d. n = {}", args.n), y: iid_mean }],
            ),
        ],
    };
    run.write_figure("004-fig1", &fig)?;
    run.write_json("summary.json", &json!({
        "probs": PROBS, "values": [-1, 0, 1], "cuts": part.cuts, "n": args.n, "iterations": iters, "seeds": seeds,
        "gf_svgd": {"mean_tv": m, "max_tv": x}, "iid": {"mean_tv": iid_mean, "q95_tv": iid_q95, "replications": 1000},
    }))?;
    run.finish(&json!({"n": args.n, "iters": iters, "seeds": seeds, "update": "plain 0.5", "init": "N(0,1)"}))
}
