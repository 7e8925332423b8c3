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
//! Config → `dlp_gof` calls → `results/gof-power/{power.csv, replications.csv, mixing.csv,
//! summary.json, gof-power.svg, gof-power.png, meta.json}`.

use anyhow::{Result, bail};
use clap::Parser;
use dlp_core::{DomainKind, Target};
use dlp_gof::{
    Bandwidth, BaseKernel, Bootstrap, GfksdOptions, KdsdOptions, MmdOptions, NullTest, Relaxation, Statistic,
    Surrogate, gfksd_test, gibbs_draws, kdsd_test, mmd_test,
};
use dlp_models::IsingModel;
use dlp_reproduce::{CommonArgs, Figure, Panel, RefLine, Run, Series};
use rayon::prelude::*;
use serde_json::{Value, json};

/// Lattice side of the references' Ising experiment.
const L: usize = 10;
/// Temperature of the null model (spec §9.3).
const NULL_T: f64 = 5.0;
/// Level of every test.
const ALPHA: f64 = 0.05;
/// Spec §9.3 perturbation grid (T′) and its reference rejection rates (n = 100, B = 500,
/// 100 trials): KDSD, GF-KSD gaussian, MMD.
const SPEC_GRID: [f64; 7] = [3.0, 4.0, 4.5, 5.0, 5.5, 6.0, 8.0];
const SPEC_KDSD: [f64; 7] = [1.00, 0.99, 0.36, 0.03, 0.25, 0.63, 1.00];
const SPEC_GFKSD: [f64; 7] = [0.12, 0.05, 0.09, 0.06, 0.04, 0.04, 0.05];
const SPEC_MMD: [f64; 7] = [0.14, 0.09, 0.05, 0.04, 0.06, 0.04, 0.06];
/// Spec §9.3 sample-size sweep at T′ = 4.5 (rejection rates, 100 trials).
const SPEC_SIZE_T: f64 = 4.5;
const SPEC_SIZES: [usize; 4] = [25, 50, 100, 200];
const SPEC_SIZE_KDSD: [f64; 4] = [0.14, 0.16, 0.35, 0.70];
const SPEC_SIZE_GFKSD: [f64; 4] = [0.10, 0.08, 0.10, 0.06];
const SPEC_SIZE_MMD: [f64; 4] = [0.08, 0.04, 0.02, 0.01];
/// Trials behind the spec's reference numbers.
const SPEC_TRIALS: usize = 100;
/// Chains of the mixing check at each temperature.
const MIXING_CHAINS: usize = 200;

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

/// The tests compared, in plotting order.
#[derive(Clone, Copy, Debug, PartialEq)]
enum TestKind {
    Kdsd,
    GfksdGaussian,
    GfksdRelaxed,
    Mmd,
}

const TESTS: [TestKind; 4] = [TestKind::Kdsd, TestKind::GfksdGaussian, TestKind::GfksdRelaxed, TestKind::Mmd];

impl TestKind {
    fn label(self) -> &'static str {
        match self {
            TestKind::Kdsd => "KDSD",
            TestKind::GfksdGaussian => "GF-KSD gaussian",
            TestKind::GfksdRelaxed => "GF-KSD relaxed",
            TestKind::Mmd => "MMD",
        }
    }

    /// The spec's reference rejection rates on the T′ grid and on the n sweep, if it has them.
    fn spec(self) -> Option<(&'static [f64; 7], &'static [f64; 4])> {
        match self {
            TestKind::Kdsd => Some((&SPEC_KDSD, &SPEC_SIZE_KDSD)),
            TestKind::GfksdGaussian => Some((&SPEC_GFKSD, &SPEC_SIZE_GFKSD)),
            TestKind::GfksdRelaxed => None,
            TestKind::Mmd => Some((&SPEC_MMD, &SPEC_SIZE_MMD)),
        }
    }
}

/// One (T′, n) cell of the experiment.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Cell {
    t_prime: f64,
    n: usize,
}

/// What one test returned in one replication.
#[derive(Clone, Debug)]
struct TestResult {
    p_value: f64,
    statistic: f64,
    /// GF-KSD only: effective sample size of the weights and the bandwidth.
    ess: Option<f64>,
    bandwidth: Option<f64>,
}

/// Rejection count of one test in one cell.
#[derive(Clone, Debug)]
struct Tally {
    test: TestKind,
    cell: Cell,
    reps: usize,
    rejections: usize,
    mean_ess: Option<f64>,
}

impl Tally {
    fn rate(&self) -> f64 {
        self.rejections as f64 / self.reps as f64
    }
    fn type_ii(&self) -> f64 {
        1.0 - self.rate()
    }
}

fn main() {
    dlp_reproduce::main_with(run);
}

fn parse_list<T: std::str::FromStr>(text: &str, what: &str) -> Result<Vec<T>> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<T>().map_err(|_| anyhow::anyhow!("--{what}: cannot parse {s:?}")))
        .collect()
}

/// The zero-field Ising model on the L × L periodic lattice at temperature `t`.
fn lattice_at(t: f64) -> Result<IsingModel> {
    Ok(IsingModel::lattice(&[L, L], true, 1.0 / t, vec![0.0; L * L], DomainKind::Spin)?)
}

/// Seed of one purpose in one replication of one cell. Every draw and test needs its own ChaCha
/// key; a splitmix64 finaliser spreads (master, purpose, cell, replication) over the key space
/// (a five-line mix is simpler than a dependency).
fn derive_seed(master: u64, purpose: u64, cell: usize, rep: usize) -> u64 {
    let mut z = master;
    for v in [purpose, cell as u64, rep as u64] {
        z ^= v.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
    }
    z
}

/// Seed purposes.
const DATA: u64 = 1;
const REFERENCE: u64 = 2;
const TEST: u64 = 3;
const MIXING: u64 = 4;

/// Wilson score interval (95%) for a binomial proportion k/r; used only for reporting.
fn wilson(k: usize, r: usize) -> (f64, f64) {
    let z = 1.959_963_984_540_054_f64;
    let (k, r) = (k as f64, r as f64);
    let p = k / r;
    let denom = 1.0 + z * z / r;
    let centre = (p + z * z / (2.0 * r)) / denom;
    let half = z * (p * (1.0 - p) / r + z * z / (4.0 * r * r)).sqrt() / denom;
    // At k = 0 and k = r the bound is exactly 0 (or 1); the formula leaves rounding dust.
    let lo = if k == 0.0 { 0.0 } else { (centre - half).max(0.0) };
    let hi = if k == r { 1.0 } else { (centre + half).min(1.0) };
    (lo, hi)
}

fn run(args: Args) -> Result<()> {
    let quick = args.common.quick;
    let reps = args.reps.unwrap_or(if quick { 20 } else { 100 });
    let boot = args.boot.unwrap_or(if quick { 200 } else { 500 });
    let sweeps = args.sweeps.unwrap_or(if quick { 50 } else { 200 });
    let temps: Vec<f64> = parse_list(
        args.temperatures.as_deref().unwrap_or(if quick { "3,5" } else { "3,4,4.5,5,5.5,6,8" }),
        "temperatures",
    )?;
    let sizes: Vec<usize> =
        parse_list(args.sizes.as_deref().unwrap_or(if quick { "" } else { "25,50,100,200" }), "sizes")?;
    if reps == 0 || boot == 0 || sweeps == 0 {
        bail!("--reps, --boot and --sweeps must be at least 1");
    }
    if args.n < 2 || sizes.iter().any(|&n| n < 2) {
        bail!("every sample size must be at least 2");
    }
    if temps.is_empty() || temps.iter().any(|t| !(t.is_finite() && *t > 0.0)) {
        bail!("--temperatures must be a non-empty list of positive numbers");
    }
    let run = Run::start("gof-power", &args.common)?;
    let seed = args.common.seed;

    // Cells: the T′ sweep at n, then the n sweep at T′ = 4.5 (shared cells are run once).
    let mut cells: Vec<Cell> = temps.iter().map(|&t_prime| Cell { t_prime, n: args.n }).collect();
    for &n in &sizes {
        let c = Cell { t_prime: SPEC_SIZE_T, n };
        if !cells.contains(&c) {
            cells.push(c);
        }
    }
    let max_n = cells.iter().map(|c| c.n).max().unwrap_or(args.n);
    println!(
        "gof-power: {L}x{L} periodic Ising, null T = {NULL_T}; T' = {temps:?} at n = {}, n = {sizes:?} at T' = {SPEC_SIZE_T}; R = {reps}, B = {boot}, {sweeps} Gibbs sweeps per draw, seed {seed}",
        args.n
    );

    let null_model = lattice_at(NULL_T)?;
    let null: &dyn Target = &null_model;
    let d = null.space().d;
    let mut j = vec![0.0; d * d];
    for (a, b, w) in null_model.couplings().pairs() {
        j[a * d + b] = w;
        j[b * d + a] = w;
    }
    let relaxation = Relaxation::Ising { values: (-1.0, 1.0), j, b: vec![0.0; d] };

    // MMD's reference draws from the null, one set of max_n per replication: chain j of
    // `gibbs_draws` depends only on (seed, j), so the first n rows are the draws for size n.
    let t0 = std::time::Instant::now();
    let bar = run.progress(reps as u64, "reference");
    let references: Vec<Vec<u32>> = (0..reps)
        .map(|r| {
            let ys = gibbs_draws(null, max_n, sweeps, derive_seed(seed, REFERENCE, 0, r));
            bar.inc(1);
            ys
        })
        .collect();
    bar.finish_and_clear();
    println!("reference draws: {reps} × {max_n} in {:.1} s", t0.elapsed().as_secs_f64());

    let mut tallies: Vec<Tally> = Vec::new();
    let mut rep_rows: Vec<Vec<String>> = Vec::new();
    let bar = run.progress((cells.len() * reps) as u64, "tests");
    for (ci, cell) in cells.iter().enumerate() {
        let model = lattice_at(cell.t_prime)?;
        let data: &dyn Target = &model;
        let results: Vec<Result<Vec<TestResult>>> = (0..reps)
            .into_par_iter()
            .map(|r| {
                let xs = gibbs_draws(data, cell.n, sweeps, derive_seed(seed, DATA, ci, r));
                let ys = &references[r][..cell.n * d];
                let out = TESTS
                    .iter()
                    .enumerate()
                    .map(|(ti, &test)| {
                        let null_test = NullTest {
                            statistic: Statistic::U,
                            bootstrap: Bootstrap::Multinomial,
                            reps: boot,
                            seed: derive_seed(seed, TEST + 16 * ti as u64, ci, r),
                        };
                        let gf = |surrogate: Surrogate| -> Result<TestResult> {
                            let o = gfksd_test(
                                null,
                                &xs,
                                &GfksdOptions {
                                    surrogate,
                                    bandwidth: Bandwidth::Median,
                                    null: null_test,
                                    jitter: None,
                                },
                            )?;
                            Ok(TestResult {
                                p_value: o.null.p_value,
                                statistic: o.null.statistic,
                                ess: Some(o.ess),
                                bandwidth: Some(o.bandwidth),
                            })
                        };
                        match test {
                            TestKind::Kdsd => {
                                let o = kdsd_test(
                                    null,
                                    &xs,
                                    &KdsdOptions { kernel: BaseKernel::default(), null: null_test },
                                )?;
                                Ok(TestResult {
                                    p_value: o.null.p_value,
                                    statistic: o.null.statistic,
                                    ess: None,
                                    bandwidth: None,
                                })
                            }
                            TestKind::GfksdGaussian => gf(Surrogate::Gaussian),
                            TestKind::GfksdRelaxed => gf(Surrogate::Relaxed(relaxation.clone())),
                            TestKind::Mmd => {
                                let o = mmd_test(
                                    null.space(),
                                    &xs,
                                    ys,
                                    &MmdOptions {
                                        scale: 1.0,
                                        statistic: Statistic::U,
                                        reps: boot,
                                        seed: null_test.seed,
                                    },
                                )?;
                                Ok(TestResult {
                                    p_value: o.p_value,
                                    statistic: o.statistic,
                                    ess: None,
                                    bandwidth: None,
                                })
                            }
                        }
                    })
                    .collect::<Result<Vec<_>>>();
                bar.inc(1);
                out
            })
            .collect();
        let results = results.into_iter().collect::<Result<Vec<_>>>()?;
        for (ti, &test) in TESTS.iter().enumerate() {
            let rejections = results.iter().filter(|rs| rs[ti].p_value <= ALPHA).count();
            let esses: Vec<f64> = results.iter().filter_map(|rs| rs[ti].ess).collect();
            let mean_ess = (!esses.is_empty()).then(|| esses.iter().sum::<f64>() / esses.len() as f64);
            tallies.push(Tally { test, cell: *cell, reps, rejections, mean_ess });
            for (r, rs) in results.iter().enumerate() {
                let t = &rs[ti];
                let opt = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
                rep_rows.push(vec![
                    test.label().to_string(),
                    cell.t_prime.to_string(),
                    cell.n.to_string(),
                    r.to_string(),
                    t.statistic.to_string(),
                    t.p_value.to_string(),
                    (t.p_value <= ALPHA).to_string(),
                    opt(t.ess),
                    opt(t.bandwidth),
                ]);
            }
        }
        bar.suspend(|| {
            let line: Vec<String> = tallies[tallies.len() - TESTS.len()..]
                .iter()
                .map(|t| format!("{} {:.2}", t.test.label(), t.type_ii()))
                .collect();
            println!("T' = {:<4} n = {:<4} type-II error: {}", cell.t_prime, cell.n, line.join(", "));
        });
    }
    bar.finish_and_clear();

    // Mixing check: mean nearest-neighbour correlation ⟨s_i s_j⟩ = T ℓ(x) / #edges after
    // `sweeps` and after 5 × `sweeps` sweeps, at every temperature used.
    let mut mix_temps: Vec<f64> = cells.iter().map(|c| c.t_prime).chain([NULL_T]).collect();
    mix_temps.sort_by(f64::total_cmp);
    mix_temps.dedup();
    let n_edges = null_model.couplings().n_pairs() as f64;
    let mut mixing = Vec::new();
    for (k, &t) in mix_temps.iter().enumerate() {
        let model = lattice_at(t)?;
        let nn = |s: usize, which: u64| -> (f64, f64) {
            let xs = gibbs_draws(&model, MIXING_CHAINS, s, derive_seed(seed, MIXING + 16 * which, k, 0));
            let mut ell = vec![0.0; MIXING_CHAINS];
            model.log_density_batch(&xs, &mut ell);
            let v: Vec<f64> = ell.iter().map(|l| l * t / n_edges).collect();
            let m = v.iter().sum::<f64>() / v.len() as f64;
            let var = v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64;
            (m, (var / v.len() as f64).sqrt())
        };
        let (a, sa) = nn(sweeps, 0);
        let (b, sb) = nn(5 * sweeps, 1);
        let z = (a - b) / (sa * sa + sb * sb).sqrt();
        println!(
            "mixing T = {t}: <s_i s_j> {a:.4} ± {sa:.4} after {sweeps} sweeps, {b:.4} ± {sb:.4} after {}; z = {z:.2}",
            5 * sweeps
        );
        mixing.push((t, a, sa, b, sb, z));
    }

    // Files.
    let rows: Vec<Vec<String>> = tallies
        .iter()
        .map(|t| {
            let (lo, hi) = wilson(t.reps - t.rejections, t.reps);
            vec![
                t.test.label().to_string(),
                t.cell.t_prime.to_string(),
                (1.0 / t.cell.t_prime - 1.0 / NULL_T).to_string(),
                t.cell.n.to_string(),
                t.reps.to_string(),
                t.rejections.to_string(),
                t.rate().to_string(),
                t.type_ii().to_string(),
                lo.to_string(),
                hi.to_string(),
            ]
        })
        .collect();
    run.write_csv(
        "power.csv",
        &[
            "test",
            "t_prime",
            "coupling_shift",
            "n",
            "replications",
            "rejections",
            "rejection_rate",
            "type_ii_error",
            "type_ii_ci95_low",
            "type_ii_ci95_high",
        ],
        &rows,
    )?;
    run.write_csv(
        "replications.csv",
        &["test", "t_prime", "n", "replication", "statistic", "p_value", "rejected", "ess", "bandwidth"],
        &rep_rows,
    )?;
    run.write_csv(
        "mixing.csv",
        &["temperature", "sweeps", "nn_correlation", "se", "sweeps_long", "nn_correlation_long", "se_long", "z"],
        &mixing
            .iter()
            .map(|&(t, a, sa, b, sb, z)| {
                [t, sweeps as f64, a, sa, 5.0 * sweeps as f64, b, sb, z].iter().map(f64::to_string).collect()
            })
            .collect::<Vec<_>>(),
    )?;

    let summary = json!({
        "schema": "dlp.reproduce.gof-power.v1",
        "model": {
            "lattice": [L, L], "periodic": true, "domain": "spin", "field": 0.0,
            "coupling": "1/T on every lattice edge (counted once)",
            "null_temperature": NULL_T, "null_coupling": 1.0 / NULL_T,
        },
        "alpha": ALPHA,
        "replications": reps,
        "bootstrap_replicates": boot,
        "n": args.n,
        "temperatures": temps,
        "sizes_at_t_prime_4_5": sizes,
        "draws": {
            "method": "gibbs",
            "sweeps": sweeps,
            "note": "2^100 states: no enumeration. Each draw is the last state of an independent single-site Gibbs chain (systematic scan, uniform start). The spec's reference run used 200 checkerboard sweeps; kdsd used 1e5 single-site Metropolis steps (1000 sweeps). mixing.csv compares the nearest-neighbour correlation after sweeps and 5 x sweeps.",
            "mixing": mixing.iter().map(|&(t, a, sa, b, sb, z)| json!({"temperature": t, "nn_correlation": a, "se": sa, "nn_correlation_long": b, "se_long": sb, "z": z})).collect::<Vec<_>>(),
        },
        "mmd_reference": "n draws from the null per replication (same Gibbs procedure), shared by all T' of that replication",
        "tests": {
            "KDSD": "U statistic, multinomial bootstrap, exp-Hamming kernel lambda = 1 (spec §3, §4)",
            "GF-KSD gaussian": "U, multinomial, RBF median bandwidth, rho = N(0, I): the paper's surrogate for the Ising model (spec §5)",
            "GF-KSD relaxed": "U, multinomial, RBF median bandwidth, rho = p0 * exp(l~(tanh(x/2))) (spec §5.2)",
            "MMD": "MMD^2_u, exp-Hamming lambda = 1, permutation test against n null draws (spec §6)",
        },
        "results": tallies.iter().map(|t| {
            let (lo, hi) = wilson(t.reps - t.rejections, t.reps);
            json!({
                "test": t.test.label(), "t_prime": t.cell.t_prime, "n": t.cell.n,
                "replications": t.reps, "rejections": t.rejections, "rejection_rate": t.rate(),
                "type_ii_error": t.type_ii(), "type_ii_ci95": [lo, hi], "mean_ess": t.mean_ess,
                "spec_rejection_rate": spec_rate(t.test, t.cell),
            })
        }).collect::<Vec<_>>(),
        "paper": {
            "source": "Han et al. (AISTATS 2020), §4.5 and Fig. 5(a, b)",
            "figure": "Fig. 5(a): type-II error vs the temperature T' of q at fixed n; Fig. 5(b): vs n at fixed T'. Ising, alpha = 0.05; GF-KSD vs DKSD (= KDSD) and MMD.",
            "numbers": "none in the text: the values are only drawn in the figure, which our copy of the paper does not contain (T, the T' grid and n are not stated either)",
            "claim": "GF-KSD performs much better than DKSD and MMD when the sample size n is relatively small and the difference between q and p is within some range",
        },
        "spec_reference": {
            "source": "gof.md §9.3 (T = 5, n = 100, B = 500, 100 trials, 200 checkerboard Gibbs sweeps)",
            "t_prime": SPEC_GRID, "kdsd": SPEC_KDSD, "gfksd_gaussian": SPEC_GFKSD, "mmd": SPEC_MMD,
            "sizes_at_t_prime_4_5": SPEC_SIZES, "size_kdsd": SPEC_SIZE_KDSD, "size_gfksd_gaussian": SPEC_SIZE_GFKSD, "size_mmd": SPEC_SIZE_MMD,
        },
        "claims": claims(&tallies, args.n),
    });
    run.write_json("summary.json", &summary)?;
    run.write_figure("gof-power", &figure(&tallies, args.n, reps, boot, sweeps, seed, !sizes.is_empty()))?;
    run.write_meta(&json!({
        "reps": reps, "boot": boot, "n": args.n, "temperatures": temps, "sizes": sizes, "sweeps": sweeps,
        "null_temperature": NULL_T, "lattice": [L, L], "alpha": ALPHA, "mixing_chains": MIXING_CHAINS,
        "seeds": "splitmix64 of (seed, purpose, cell, replication); purposes: data 1, reference 2, test 3 + 16 * test index, mixing 4 / 20",
    }))?;
    println!("wrote {} in {:.1} s", run.dir.display(), run.elapsed());
    Ok(())
}

/// The spec's reference rejection rate for `test` in `cell`, if §9.3 lists one.
fn spec_rate(test: TestKind, cell: Cell) -> Option<f64> {
    let (grid, sizes) = test.spec()?;
    if cell.n == 100
        && let Some(i) = SPEC_GRID.iter().position(|&t| t == cell.t_prime)
    {
        return Some(grid[i]);
    }
    if cell.t_prime == SPEC_SIZE_T
        && let Some(i) = SPEC_SIZES.iter().position(|&n| n == cell.n)
    {
        return Some(sizes[i]);
    }
    None
}

/// The paper's and the spec's statements, each with whether our run agrees.
fn claims(tallies: &[Tally], n0: usize) -> Vec<Value> {
    let get = |test: TestKind, t_prime: f64, n: usize| {
        tallies.iter().find(|t| t.test == test && t.cell.t_prime == t_prime && t.cell.n == n)
    };
    let mut out = Vec::new();
    let mut claim = |text: &str, source: &str, holds: Option<bool>, ours: String| {
        out.push(json!({"claim": text, "source": source, "holds": holds, "ours": ours}));
    };
    // At T′ = T every test should reject at about α: the 95% interval of the rate holds 0.05.
    let at_null: Vec<&Tally> = tallies.iter().filter(|t| t.cell.t_prime == NULL_T).collect();
    if !at_null.is_empty() {
        claim(
            "type-II error is about 1 − α at zero perturbation (95% interval of the rejection rate contains 0.05)",
            "spec §9.3 shape; paper Fig. 5",
            Some(at_null.iter().all(|t| {
                let (lo, hi) = wilson(t.rejections, t.reps);
                lo <= ALPHA && ALPHA <= hi
            })),
            at_null
                .iter()
                .map(|t| format!("{} n={}: {}/{}", t.test.label(), t.cell.n, t.rejections, t.reps))
                .collect::<Vec<_>>()
                .join(", "),
        );
    }
    let ends: Vec<&Tally> = tallies
        .iter()
        .filter(|t| t.test == TestKind::Kdsd && t.cell.n == n0 && (t.cell.t_prime <= 3.0 || t.cell.t_prime >= 8.0))
        .collect();
    if !ends.is_empty() {
        claim(
            "KDSD's type-II error falls to about 0 at the ends of the T' grid (≤ 0.05 at T' = 3 and 8)",
            "spec §9.3 (KDSD rejects 1.00 at T' = 3 and 8)",
            Some(ends.iter().all(|t| t.type_ii() <= 0.05)),
            ends.iter().map(|t| format!("T'={}: {:.2}", t.cell.t_prime, t.type_ii())).collect::<Vec<_>>().join(", "),
        );
    }
    // The paper's claim: GF-KSD below KDSD and MMD at small n and moderate perturbation.
    let moderate: Vec<(f64, usize)> = tallies
        .iter()
        .filter(|t| t.test == TestKind::GfksdGaussian && t.cell.t_prime != NULL_T)
        .filter(|t| (t.cell.t_prime >= 4.0 && t.cell.t_prime <= 6.0) && t.cell.n <= n0)
        .map(|t| (t.cell.t_prime, t.cell.n))
        .collect();
    if !moderate.is_empty() {
        let mut wins = 0;
        let mut text = Vec::new();
        for &(tp, n) in &moderate {
            let g = get(TestKind::GfksdGaussian, tp, n).map_or(f64::NAN, Tally::type_ii);
            let k = get(TestKind::Kdsd, tp, n).map_or(f64::NAN, Tally::type_ii);
            let m = get(TestKind::Mmd, tp, n).map_or(f64::NAN, Tally::type_ii);
            if g < k && g < m {
                wins += 1;
            }
            text.push(format!("T'={tp} n={n}: GF-KSD {g:.2}, KDSD {k:.2}, MMD {m:.2}"));
        }
        claim(
            "GF-KSD has the lowest type-II error at small n and moderate perturbation",
            "paper §4.5, Fig. 5",
            Some(wins * 2 > moderate.len()),
            format!(
                "GF-KSD lowest in {wins} of {} cells (T' in [4, 6], n ≤ {n0}): {}",
                moderate.len(),
                text.join("; ")
            ),
        );
    }
    let ess: Vec<&Tally> = tallies
        .iter()
        .filter(|t| t.test == TestKind::GfksdGaussian && t.cell.n == 100 && t.mean_ess.is_some())
        .collect();
    if !ess.is_empty() {
        let mean = ess.iter().filter_map(|t| t.mean_ess).sum::<f64>() / ess.len() as f64;
        claim(
            "the gaussian surrogate's weights degenerate: ESS ≈ 5 of n = 100 (below n/10)",
            "spec §5.2, §9.3",
            Some(mean < 10.0),
            format!("mean ESS {mean:.2} over the n = 100 cells"),
        );
    }
    // Agreement with the spec's reference measurements: two-proportion z-score per cell.
    let mut agree = 0;
    let mut total = 0;
    let mut worst = (0.0f64, String::new());
    for t in tallies {
        if let Some(s) = spec_rate(t.test, t.cell) {
            let (p1, n1, n2) = (t.rate(), t.reps as f64, SPEC_TRIALS as f64);
            let pooled = (p1 * n1 + s * n2) / (n1 + n2);
            let se = (pooled * (1.0 - pooled) * (1.0 / n1 + 1.0 / n2)).sqrt();
            let z = if se > 0.0 { (p1 - s) / se } else { 0.0 };
            total += 1;
            if z.abs() < 3.0 {
                agree += 1;
            }
            if z.abs() > worst.0 {
                worst = (
                    z.abs(),
                    format!("{} T'={} n={}: ours {p1:.2}, spec {s:.2}", t.test.label(), t.cell.t_prime, t.cell.n),
                );
            }
        }
    }
    if total > 0 {
        claim(
            "our rejection rates match the spec's reference measurements (|z| < 3, two-proportion test)",
            "spec §9.3 table",
            Some(agree == total),
            format!("{agree} of {total} cells agree; largest |z| = {:.2} ({})", worst.0, worst.1),
        );
    }
    out
}

fn figure(tallies: &[Tally], n0: usize, reps: usize, boot: usize, sweeps: usize, seed: u64, sizes: bool) -> Figure {
    let labels: Vec<String> = TESTS.iter().map(|t| t.label().to_string()).collect();
    let one_minus_alpha = || vec![RefLine { label: format!("1 − α = {}", 1.0 - ALPHA), y: 1.0 - ALPHA }];
    let ours = |pick: &dyn Fn(&Tally) -> Option<f64>| -> Vec<Series> {
        TESTS
            .iter()
            .map(|&test| {
                let mut points: Vec<(f64, f64)> = tallies
                    .iter()
                    .filter(|t| t.test == test)
                    .filter_map(|t| pick(t).map(|x| (x, t.type_ii())))
                    .collect();
                points.sort_by(|a, b| a.0.total_cmp(&b.0));
                Series { label: test.label().to_string(), points }
            })
            .collect()
    };
    let mut panels = vec![
        Panel::Lines {
            title: format!("ours: type-II error vs T' (n = {n0}, T = {NULL_T})"),
            x_label: "data temperature T'".into(),
            y_label: "type-II error".into(),
            series: ours(&|t| (t.cell.n == n0).then_some(t.cell.t_prime)),
            refs: one_minus_alpha(),
        },
        Panel::Lines {
            title: "spec §9.3 reference (n = 100, 100 trials)".into(),
            x_label: "data temperature T'".into(),
            y_label: "type-II error".into(),
            series: TESTS
                .iter()
                .filter_map(|&test| {
                    let (grid, _) = test.spec()?;
                    Some(Series {
                        label: test.label().to_string(),
                        points: SPEC_GRID.iter().zip(grid).map(|(&t, &r)| (t, 1.0 - r)).collect(),
                    })
                })
                .collect(),
            refs: one_minus_alpha(),
        },
    ];
    if sizes {
        panels.push(Panel::Lines {
            title: format!("ours: type-II error vs n (T' = {SPEC_SIZE_T})"),
            x_label: "sample size n".into(),
            y_label: "type-II error".into(),
            series: ours(&|t| (t.cell.t_prime == SPEC_SIZE_T).then_some(t.cell.n as f64)),
            refs: one_minus_alpha(),
        });
    }
    Figure {
        caption: format!(
            "GOF power, 10x10 periodic Ising, null T = {NULL_T}: R = {reps}, B = {boot}, {sweeps} Gibbs sweeps, seed {seed}"
        ),
        labels,
        panels,
    }
}
