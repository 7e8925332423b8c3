//! Fig. 2 of the main paper on the 5×5 periodic Ising model of Fig. 3 (σ_c = 0.1, b = 0.2;
//! spec `reproduction.md` §3.2, §4.9, P13).
//!
//! Left: DMALA over α ∈ {0.1, …, 0.8} and GWG-k over k ∈ {1, 2, 4, 6, 8} — mean proposed flips
//! per step, mean accepted Hamming move per step, acceptance rate, after a burn-in (spec §4.9
//! gives simulation references, ±0.02). Right: ESS per second of the exact samplers bg-1,
//! hb-10-1, gwg, dmala(0.4), lb, rmala (the paper's "exact samplers (i.e. having the target
//! distribution as its stationary distribution)", §7.1: RMALA's reported x-law is π; DSVGD has
//! no stationary law and is left out), and of pas-3, dlmc(1), acs-dmala(3) — the paper's ESS
//! (TFP estimator, chain 0, 10% burn-in, `stats::ess_tfp`) and the bulk ESS of Vehtari et al.
//! (`diagnostics::ess_bulk`, chain 0 split in halves), box plots over the 25 coordinates. The
//! right panel runs the same crate calls as `fig3` (`dlp_reproduce::ising::MeanRun`).
//!
//! Files: `results/fig2/{moves.csv, ess.csv, summary.json, fig2.svg, fig2.png, meta.json}`.

use anyhow::{Result, bail};
use clap::Parser;
use dlp_core::diagnostics::ess_bulk;
use dlp_core::stats::quantile;
use dlp_core::{RunOptions, run_chains};
use dlp_models::IsingModel;
use dlp_reproduce::ising::{
    Fig2Ess, MeanRun, Moves, PAPER_BIAS as BIAS, PAPER_SIDE as L, PAPER_SIGMA as SIGMA, SPEC_MEAN_S, fig2_figure,
    fig2_summary, initial_batch,
};
use dlp_reproduce::observe::MoveStats;
use dlp_reproduce::{CommonArgs, Run, SamplerSpec};
use serde_json::json;

const DMALA_ALPHAS: [f64; 7] = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8];
const GWG_KS: [usize; 5] = [1, 2, 4, 6, 8];
/// Exact samplers of the right panel (name, step size): the paper's, RMALA at fig3's ε (what
/// `dlp sample --sampler rmala` adapts to on this model, `paper/fig3.md`), then PAS, DLMC and
/// cyclical DMALA at fig3's settings.
const ESS_SAMPLERS: [(&str, Option<f64>); 9] = [
    ("bg-1", None),
    ("hb-10-1", None),
    ("gwg", None),
    ("dmala", Some(0.4)),
    ("lb", None),
    ("rmala", Some(0.014)),
    ("pas-3", None),
    ("dlmc", Some(1.0)),
    ("acs-dmala", Some(3.0)),
];

/// Fig. 2: move statistics of DMALA vs GWG-k and ESS/s of exact samplers on the 5×5 Ising.
#[derive(Parser, Debug)]
#[command(name = "fig2")]
struct Args {
    #[command(flatten)]
    common: CommonArgs,
    /// Left: chains per configuration [default: 400 as spec §4.9; --quick: 40].
    #[arg(long)]
    chains: Option<usize>,
    /// Left: burn-in steps [default: 500; --quick: 100].
    #[arg(long)]
    burn: Option<usize>,
    /// Left: steps recorded after burn-in [default: 2500 as spec §4.9; --quick: 200].
    #[arg(long)]
    steps: Option<usize>,
    /// Right: chains per sampler (ESS uses chain 0) [default: 2, the paper code's count].
    #[arg(long, default_value_t = 2)]
    ess_chains: usize,
    /// Right: steps per chain [default: 50000; --quick: 2000].
    #[arg(long)]
    ess_steps: Option<usize>,
}

fn main() {
    dlp_reproduce::main_with(run);
}

fn run(args: Args) -> Result<()> {
    let c = &args.common;
    let (chains, burn, steps) =
        (c.pick(args.chains, 400, 40), c.pick(args.burn, 500, 100), c.pick(args.steps, 2_500, 200));
    let ess_steps = c.pick(args.ess_steps, 50_000, 2_000);
    if chains == 0 || steps == 0 || args.ess_chains == 0 || ess_steps < 40 {
        bail!("need --chains ≥ 1, --steps ≥ 1, --ess-chains ≥ 1 and --ess-steps ≥ 40");
    }
    let run = Run::start("fig2", &args.common)?;
    let seed = run.seed();
    let model = IsingModel::paper_lattice(L, SIGMA, BIAS);
    let d = model.d();
    // Initial batch as fig3 and the paper's code, one for both panels.
    let x0 = initial_batch(seed, chains.max(args.ess_chains), d, BIAS);
    let options = RunOptions { seed, threads: 0, chains_per_task: 0 };

    let mut moves = Vec::new();
    let configs = DMALA_ALPHAS.iter().map(|&a| ("dmala", a)).chain(GWG_KS.iter().map(|&k| ("gwg", k as f64)));
    for (family, param) in configs {
        let spec = if family == "dmala" {
            SamplerSpec::new("dmala", Some(param))
        } else {
            SamplerSpec::new(&format!("gwg-{param}"), None)
        };
        let sampler = spec.build()?;
        let out = run_chains(sampler.as_ref(), &model, &x0[..chains * d], burn + steps, &options, |_, _| {
            MoveStats::new(burn)
        })?;
        let total = |f: fn(&MoveStats) -> f64| out.observers.iter().map(f).sum::<f64>();
        let n = total(|o| o.chain_steps as f64);
        let m = Moves {
            family,
            param,
            acceptance: total(|o| o.accepted as f64) / n,
            proposed: total(|o| o.proposed as f64) / n,
            changed: total(|o| o.changed as f64) / n,
            mean_s: total(|o| o.spin_sum) / (n * d as f64),
        };
        println!(
            "{:<8} {:>5}  acceptance {:.3}  proposed flips {:.2}  accepted move {:.2}  E[s] {:.3}",
            spec.name,
            spec.step_size.map_or(String::new(), |a| format!("α={a}")),
            m.acceptance,
            m.proposed,
            m.changed,
            m.mean_s
        );
        moves.push(m);
    }

    let truth = vec![SPEC_MEAN_S; d];
    let mut ess = Vec::new();
    for (name, step_size) in ESS_SAMPLERS {
        let spec = SamplerSpec::new(name, step_size);
        let sampler = spec.build()?;
        let x0e = &x0[..args.ess_chains * d];
        let r = MeanRun::new(&run, spec, sampler.as_ref(), &model, x0e, (ess_steps, ess_steps), &truth)?;
        let bulk = r.chain0.iter().map(|s| ess_bulk(s, 1)).collect::<Result<Vec<f64>, _>>()?;
        let e = Fig2Ess { label: r.label(), seconds: r.seconds, tfp: r.ess, bulk };
        println!(
            "{:<11} median ESS/s: TFP {:>9.1}  bulk {:>9.1}  ({:.2} s/chain)",
            e.label,
            quantile(&MeanRun::per_second(&e.tfp, e.seconds), 0.5),
            quantile(&MeanRun::per_second(&e.bulk, e.seconds), 0.5),
            e.seconds
        );
        ess.push(e);
    }

    let rows: Vec<Vec<String>> = moves
        .iter()
        .map(|m| {
            let p = if m.family == "dmala" { "alpha" } else { "k" };
            let nums = [m.param, m.acceptance, m.proposed, m.changed, m.mean_s].map(|v| v.to_string());
            [m.family.to_string(), p.to_string()].into_iter().chain(nums).collect()
        })
        .collect();
    run.write_csv("moves.csv", "family,parameter,value,acceptance,proposed_flips,accepted_move,mean_s", &rows)?;
    let rows: Vec<Vec<String>> = ess
        .iter()
        .flat_map(|e| {
            (0..e.tfp.len()).map(move |i| {
                vec![e.label.clone(), i.to_string(), e.tfp[i].to_string(), e.bulk[i].to_string(), e.seconds.to_string()]
            })
        })
        .collect();
    run.write_csv("ess.csv", "sampler,coordinate,ess_tfp,ess_bulk,seconds_per_chain", &rows)?;
    run.write_json("summary.json", &fig2_summary(&moves, &ess, (chains, burn, steps), (args.ess_chains, ess_steps)))?;
    run.write_figure("fig2", &fig2_figure(&moves, &ess))?;
    run.finish(
        &json!({"chains": chains, "burn": burn, "steps": steps, "ess_chains": args.ess_chains, "ess_steps": ess_steps,
        "dmala_alphas": DMALA_ALPHAS, "gwg_ks": GWG_KS, "ess_samplers": ESS_SAMPLERS.map(|s| s.0),
        "model": "IsingModel::paper_lattice(5, 0.1, 0.2)", "init": "s_i = +1 w.p. sigmoid(2b), setup stream 0"}),
    )
}
