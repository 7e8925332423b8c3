//! Power of the discrete goodness-of-fit tests: Han et al. (AISTATS 2020, paper 004) Fig. 5(a)
//! and (b), spec `gof.md` §9.3. Null p: zero-field Ising on the 10×10 periodic lattice at
//! temperature T = 5 (coupling 1/T on every lattice edge, spin domain). Data q: the same lattice
//! at temperature T′. For every (T′, n) on the grid, R replications of: n draws from q, then
//! KDSD, GF-KSD (gaussian surrogate, the paper's Ising choice; and the relaxed surrogate) and MMD
//! against n reference draws from p, each rejecting at α = 0.05. Type-II error = 1 − rejection
//! rate.
//!
//! Drawing: the lattice has 2^100 states, so enumeration is impossible; like the spec's own
//! reference run (200 checkerboard sweeps) and the references' MCMC chains, every draw is the
//! last state of an independent single-site Gibbs chain (systematic scan, uniform start,
//! `--sweeps` sweeps; `dlp_gof::gibbs_draws`). T′ ≥ 3 is above the critical temperature
//! T_c ≈ 2.27, where such chains mix in tens of sweeps; `mixing.csv` checks it by comparing the
//! mean nearest-neighbour correlation after `--sweeps` and after 5 × `--sweeps` sweeps.
//!
//! Config → `dlp_reproduce::gof_power` (the replication loop over `dlp_gof` calls) →
//! `results/gof-power/{power.csv, replications.csv, mixing.csv, summary.json, gof-power.svg,
//! gof-power.png, meta.json}`.

use anyhow::{Result, bail};
use clap::Parser;
use dlp_reproduce::gof_power::{
    ALPHA, Experiment, L, MIXING_CHAINS, NULL_T, SPEC_SIZE_T, Settings, figure, power_rows, summary, tally_cell,
};
use dlp_reproduce::{CommonArgs, Run, parse_list};
use serde_json::json;

/// Power of KDSD, GF-KSD and MMD on the perturbed 10×10 Ising model (Han et al. Fig. 5 a/b).
#[derive(Parser, Debug)]
#[command(name = "gof-power")]
struct Args {
    #[command(flatten)]
    common: CommonArgs,
    /// Replications per (T′, n) [default: 100; --quick: 20].
    #[arg(long)]
    reps: Option<usize>,
    /// Bootstrap / permutation replicates B of every test [default: 500; --quick: 200].
    #[arg(long)]
    boot: Option<usize>,
    /// Sample size of the perturbation sweep (panel a) [default: 100].
    #[arg(long, default_value_t = 100)]
    n: usize,
    /// Comma-separated data temperatures T′ [default: 3,4,4.5,5,5.5,6,8; --quick: 3,5].
    #[arg(long)]
    temperatures: Option<String>,
    /// Comma-separated sample sizes of panel b at T′ = 4.5 [default: 25,50,100,200; --quick:
    /// none]. Pass an empty string to skip panel b.
    #[arg(long)]
    sizes: Option<String>,
    /// Gibbs sweeps per draw [default: 200; --quick: 50].
    #[arg(long)]
    sweeps: Option<usize>,
}

fn main() {
    dlp_reproduce::main_with(run);
}

fn run(args: Args) -> Result<()> {
    let c = &args.common;
    let temps = c.pick(args.temperatures.clone(), "3,4,4.5,5,5.5,6,8".into(), "3,5".into());
    let sizes = c.pick(args.sizes.clone(), "25,50,100,200".into(), String::new());
    let s = Settings {
        reps: c.pick(args.reps, 100, 20),
        boot: c.pick(args.boot, 500, 200),
        n: args.n,
        temps: parse_list(&temps, "temperatures")?,
        sizes: parse_list(&sizes, "sizes")?,
        sweeps: c.pick(args.sweeps, 200, 50),
        seed: c.seed,
    };
    if s.reps == 0 || s.boot == 0 || s.sweeps == 0 {
        bail!("--reps, --boot and --sweeps must be at least 1");
    }
    if s.n < 2 || s.sizes.iter().any(|&n| n < 2) {
        bail!("every sample size must be at least 2");
    }
    if s.temps.is_empty() || s.temps.iter().any(|t| !(t.is_finite() && *t > 0.0)) {
        bail!("--temperatures must be a non-empty list of positive numbers");
    }
    let run = Run::start("gof-power", &args.common)?;
    let cells = s.cells();
    let max_n = cells.iter().map(|c| c.n).max().unwrap_or(s.n);
    println!(
        "gof-power: {L}x{L} periodic Ising, null T = {NULL_T}; T' = {:?} at n = {}, n = {:?} at T' = {SPEC_SIZE_T}; R = {}, B = {}, {} Gibbs sweeps per draw, seed {}",
        s.temps, s.n, s.sizes, s.reps, s.boot, s.sweeps, s.seed
    );
    let exp = Experiment::new(s.clone())?;

    let t0 = std::time::Instant::now();
    let bar = run.progress(s.reps as u64, "reference");
    let references = exp.reference_draws(max_n, &bar);
    bar.finish_and_clear();
    println!("reference draws: {} × {max_n} in {:.1} s", s.reps, t0.elapsed().as_secs_f64());

    let mut tallies = Vec::new();
    let mut rep_rows = Vec::new();
    let bar = run.progress((cells.len() * s.reps) as u64, "tests");
    for (ci, &cell) in cells.iter().enumerate() {
        let results = exp.run_cell(ci, cell, &references, &bar)?;
        let (cell_tallies, rows) = tally_cell(cell, &results);
        rep_rows.extend(rows);
        bar.suspend(|| {
            let line: Vec<String> =
                cell_tallies.iter().map(|t| format!("{} {:.2}", t.test.label(), t.type_ii())).collect();
            println!("T' = {:<4} n = {:<4} type-II error: {}", cell.t_prime, cell.n, line.join(", "));
        });
        tallies.extend(cell_tallies);
    }
    bar.finish_and_clear();

    // Mixing check at every temperature used.
    let mut mix_temps: Vec<f64> = cells.iter().map(|c| c.t_prime).chain([NULL_T]).collect();
    mix_temps.sort_by(f64::total_cmp);
    mix_temps.dedup();
    let mut mixing = Vec::new();
    for (k, &t) in mix_temps.iter().enumerate() {
        let m = exp.mixing(k, t)?;
        println!(
            "mixing T = {t}: <s_i s_j> {:.4} ± {:.4} after {} sweeps, {:.4} ± {:.4} after {}; z = {:.2}",
            m.short,
            m.short_se,
            s.sweeps,
            m.long,
            m.long_se,
            5 * s.sweeps,
            m.z
        );
        mixing.push(m);
    }

    let power_header = "test,t_prime,coupling_shift,n,replications,rejections,rejection_rate,type_ii_error,type_ii_ci95_low,type_ii_ci95_high";
    run.write_csv("power.csv", power_header, &power_rows(&tallies))?;
    run.write_csv(
        "replications.csv",
        "test,t_prime,n,replication,statistic,p_value,rejected,ess,bandwidth",
        &rep_rows,
    )?;
    let sweeps = s.sweeps as f64;
    let mixing_rows: Vec<Vec<String>> = mixing
        .iter()
        .map(|m| {
            [m.t, sweeps, m.short, m.short_se, 5.0 * sweeps, m.long, m.long_se, m.z]
                .iter()
                .map(f64::to_string)
                .collect()
        })
        .collect();
    run.write_csv(
        "mixing.csv",
        "temperature,sweeps,nn_correlation,se,sweeps_long,nn_correlation_long,se_long,z",
        &mixing_rows,
    )?;
    run.write_json("summary.json", &summary(&s, &tallies, &mixing))?;
    run.write_figure("gof-power", &figure(&tallies, s.n, (s.reps, s.boot, s.sweeps, s.seed), !s.sizes.is_empty()))?;
    run.finish(&json!({
        "reps": s.reps, "boot": s.boot, "n": s.n, "temperatures": s.temps, "sizes": s.sizes, "sweeps": s.sweeps,
        "null_temperature": NULL_T, "lattice": [L, L], "alpha": ALPHA, "mixing_chains": MIXING_CHAINS,
        "seeds": "splitmix64 of (seed, purpose, cell, replication); purposes: data 1, reference 2, test 3 + 16 * test index, mixing 4 / 20",
    }))
}
