//! App. H of the main paper (Zhang, Liu & Liu 2022): preconditioned DLP on a 2-variable model
//! whose gradient scales differ by orders of magnitude; a grid of common step sizes α against
//! per-coordinate step sizes α·h_i (spec `reproduction.md` §1.9, §3.9).
//!
//! The paper's f and numbers are lost (spec §3.9); both models here are STAND-INS on integer
//! (ordinal) domains, DLP over the whole value list:
//! * `linear`: the spec's suggestion f(x) = 10 x₁ + 0.1 x₂ on {0..10}², h = (1, 100) ∝ 1/|∂f/∂x_i|;
//! * `quadratic`: a discretised Gaussian f(x) = −(x₁−m₁)²/(2σ₁²) − (x₂−m₂)²/(2σ₂²), σ = (1, 30),
//!   on {0..120}², h = (1, 900) ∝ 1/|∂²f/∂x_i²| (the step a Langevin move wants is the
//!   coordinate's variance; gradient scales differ 30×, curvatures 900×).
//!
//! For each model, sampler (DMALA, DULA) and α: chains from one uniform random start, the
//! log RMSE of the per-chain running means against the exact mean (enumeration, `dlp-exact`)
//! after `--steps` steps, with and without the preconditioner (`pdmala`/`pdula` of the
//! registry). Files: `results/000-appH/{rmse.csv, curves.csv, summary.json, 000-appH.{svg,png},
//! meta.json}`.

use anyhow::{Result, bail};
use clap::Parser;
use dlp_core::testing::Quadratic;
use dlp_core::{Space, setup_rng};
use dlp_exact::enumerate::{EnumOptions, enumerate};
use dlp_reproduce::ising::MeanRun;
use dlp_reproduce::{CommonArgs, Figure, Panel, Run, SamplerSpec, Series, parse_list};
use dlp_samplers::{SamplerParams, build_sampler};
use rand::RngExt;
use serde_json::json;

/// App. H: common α vs preconditioned α·h_i on two 2-variable integer models.
#[derive(Parser, Debug)]
#[command(name = "000-appH")]
struct Args {
    #[command(flatten)]
    common: CommonArgs,
    /// Chains per run [default: 32; --quick: 8].
    #[arg(long)]
    chains: Option<usize>,
    /// Steps per run [default: 5000; --quick: 400].
    #[arg(long)]
    steps: Option<usize>,
    /// Comma-separated step sizes α (the preconditioned runs use α·h_i)
    /// [default: 0.01,…,3000 (log grid); --quick: 0.1,1,100].
    #[arg(long)]
    alphas: Option<String>,
}

/// One stand-in: name, value list, f = xᵀWx + bᵀx (W, b), preconditioner h and its rule.
struct Model {
    name: &'static str,
    k: i64,
    w: [f64; 4],
    b: [f64; 2],
    h: [f64; 2],
    f: &'static str,
}

fn models() -> [Model; 2] {
    let (s1, s2, m1, m2) = (1.0_f64, 30.0_f64, 70.0, 50.0);
    let (c1, c2) = (1.0 / (s1 * s1), 1.0 / (s2 * s2));
    [
        Model { name: "linear", k: 11, w: [0.0; 4], b: [10.0, 0.1], h: [1.0, 100.0], f: "10 x1 + 0.1 x2 on {0..10}^2" },
        Model {
            name: "quadratic",
            k: 121,
            w: [-0.5 * c1, 0.0, 0.0, -0.5 * c2],
            b: [m1 * c1, m2 * c2],
            h: [1.0, c1 / c2],
            f: "-(x1-70)^2/2 - (x2-50)^2/(2*30^2) on {0..120}^2",
        },
    ]
}

fn main() {
    dlp_reproduce::main_with(run);
}

fn run(args: Args) -> Result<()> {
    let c = &args.common;
    let (chains, steps) = (c.pick(args.chains, 32, 8), c.pick(args.steps, 5_000, 400));
    let grid = "0.01,0.03,0.1,0.3,1,3,10,30,100,300,1000,3000";
    let alphas: Vec<f64> = parse_list(&c.pick(args.alphas.clone(), grid.into(), "0.1,1,100".into()), "alphas")?;
    if chains < 2 || steps == 0 || alphas.is_empty() || alphas.iter().any(|a| !(*a > 0.0 && a.is_finite())) {
        bail!("need --chains ≥ 2, --steps ≥ 1 and finite --alphas > 0");
    }
    let run = Run::start("000-appH", c)?;
    let mut rng = setup_rng(run.seed());
    let (mut rows, mut curve_rows, mut panels, mut labels, mut results, mut means) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for m in models() {
        let space = Space::ordinal(2, (0..m.k).collect());
        let target = Quadratic::new(space.clone(), m.w.to_vec(), m.b.to_vec());
        let truth = enumerate(&target, &EnumOptions { pair_moments: false, keep_probs: false })?.mean_value;
        let x0: Vec<u32> = (0..chains * 2).map(|_| rng.random_range(0..m.k as u32)).collect();
        println!("{}: f = {}, exact mean {:.6?}, h = {:?}", m.name, m.f, truth, m.h);
        means.push(truth.clone());
        let mut series = Vec::new();
        for (plain, pre) in [("dmala", "pdmala"), ("dula", "pdula")] {
            for (name, h) in [(plain, None), (pre, Some(m.h.to_vec()))] {
                let mut points = Vec::new();
                for &alpha in &alphas {
                    let params =
                        SamplerParams { step_size: Some(alpha), preconditioner: h.clone(), ..Default::default() };
                    let sampler = build_sampler(name, &params)?;
                    let spec = SamplerSpec::new(name, Some(alpha));
                    let o = MeanRun::new(&run, spec, sampler.as_ref(), &target, &x0, (steps, steps / 20), &truth)?;
                    let last = o.final_log_rmse();
                    println!(
                        "  {name:>6} α = {alpha:<7} log RMSE {last:7.3}  accept {:.3}  changed/step {:.3}",
                        o.acceptance, o.mean_n_changed
                    );
                    rows.push(vec![
                        m.name.into(),
                        name.into(),
                        alpha.to_string(),
                        h.is_some().to_string(),
                        last.to_string(),
                        o.acceptance.to_string(),
                        o.mean_n_changed.to_string(),
                    ]);
                    curve_rows.extend(o.curve.iter().map(|p| {
                        vec![m.name.into(), name.into(), alpha.to_string(), p.step.to_string(), p.log_rmse.to_string()]
                    }));
                    points.push((alpha.log10(), last));
                    results.push((m.name, plain, h.is_some(), alpha, last, o.acceptance));
                }
                labels.push(name.to_string());
                series.push(Series { label: name.into(), points });
            }
        }
        let title = format!("{} ({} steps, {chains} chains)", m.name, steps);
        panels.push(Panel::lines(title, "log10 α", "final log RMSE of the mean", series, vec![]));
    }
    labels.dedup();
    let header = "model,sampler,alpha,preconditioned,log_rmse,acceptance,changed_per_step";
    run.write_csv("rmse.csv", header, &rows)?;
    run.write_csv("curves.csv", "model,sampler,alpha,step,log_rmse", &curve_rows)?;
    let caption = "App. H stand-ins: final log RMSE of the running means vs α, common α vs α·h_i".to_string();
    run.write_figure("000-appH", &Figure { caption, labels: labels[..4].to_vec(), panels })?;

    // Per model and sampler: the best α of each kind, and whether preconditioning wins.
    let mut best = Vec::new();
    for m in models() {
        for plain in ["dmala", "dula"] {
            let pick = |pre: bool| {
                results
                    .iter()
                    .filter(|r| r.0 == m.name && r.1 == plain && r.2 == pre)
                    .min_by(|a, b| a.4.total_cmp(&b.4))
                    .map(|r| (r.3, r.4, r.5))
            };
            let (Some(common), Some(pre)) = (pick(false), pick(true)) else { continue };
            best.push(json!({
                "model": m.name, "sampler": plain,
                "best_common": {"alpha": common.0, "log_rmse": common.1, "acceptance": common.2},
                "best_preconditioned": {"alpha": pre.0, "log_rmse": pre.1, "acceptance": pre.2},
                "gap": common.1 - pre.1,
                "preconditioned_wins_by_1": pre.1 < common.1 - 1.0,
            }));
            println!(
                "{} {plain}: best common α = {} → {:.3}; best preconditioned α = {} → {:.3}",
                m.name, common.0, common.1, pre.0, pre.1
            );
        }
    }
    let holds = |model: &str| {
        best.iter().filter(|b| b["model"] == model).all(|b| b["preconditioned_wins_by_1"].as_bool() == Some(true))
    };
    let summary = json!({
        "schema": "dlp.reproduce.000-appH.v1",
        "stand_in": "the paper's App. H model and numbers are lost (spec §3.9); both models are stand-ins",
        "models": models().iter().zip(&means)
            .map(|(m, mu)| json!({"name": m.name, "f": m.f, "values": m.k, "h": m.h, "exact_mean": mu})).collect::<Vec<_>>(),
        "chains": chains, "steps": steps, "alphas": alphas, "start": "uniform random, shared by all runs of a model",
        "metric": "log RMSE over chains × coordinates of the per-chain running means (steps 0..T) vs the exact mean",
        "best": best,
        "paper_claims": [{
            "claim": "no common α works; the preconditioned α·h_i does (log RMSE better by > 1 at the best α of each)",
            "source": "paper App. H", "holds_quadratic": holds("quadratic"), "holds_linear": holds("linear"),
        }],
    });
    run.write_json("summary.json", &summary)?;
    run.finish(&json!({"chains": chains, "steps": steps, "alphas": alphas}))
}
