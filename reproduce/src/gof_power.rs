//! Power of the discrete goodness-of-fit tests on the perturbed 10×10 Ising model (Han et al.,
//! AISTATS 2020, Fig. 5 a/b; spec `gof.md` §9.3): the replication loop (draws, KDSD, GF-KSD,
//! MMD), rejection tallies with Wilson intervals, the mixing check of the Gibbs draws, and the
//! claims, summary and figure of `gof-power`.

use crate::plot::{Figure, Panel, RefLine, Series};
use crate::report::Claims;
use anyhow::Result;
use dlp_core::TargetExt;
use dlp_core::rng::derive_seed;
use dlp_core::{DomainKind, Target};
use dlp_gof::{
    Bandwidth, BaseKernel, Bootstrap, GfksdOptions, KdsdOptions, MmdOptions, NullTest, Relaxation, Statistic,
    Surrogate, gfksd_test, gibbs_draws, kdsd_test, mmd_test,
};
use dlp_models::IsingModel;
use rayon::prelude::*;
use serde_json::{Value, json};

/// Lattice side of the references' Ising experiment.
pub const L: usize = 10;
/// Temperature of the null model (spec §9.3).
pub const NULL_T: f64 = 5.0;
/// Level of every test.
pub const ALPHA: f64 = 0.05;
/// Spec §9.3 perturbation grid (T′) and its reference rejection rates (n = 100, B = 500,
/// 100 trials): KDSD, GF-KSD gaussian, MMD.
const SPEC_GRID: [f64; 7] = [3.0, 4.0, 4.5, 5.0, 5.5, 6.0, 8.0];
const SPEC_KDSD: [f64; 7] = [1.00, 0.99, 0.36, 0.03, 0.25, 0.63, 1.00];
const SPEC_GFKSD: [f64; 7] = [0.12, 0.05, 0.09, 0.06, 0.04, 0.04, 0.05];
const SPEC_MMD: [f64; 7] = [0.14, 0.09, 0.05, 0.04, 0.06, 0.04, 0.06];
/// Spec §9.3 sample-size sweep at T′ = 4.5 (rejection rates, 100 trials).
pub const SPEC_SIZE_T: f64 = 4.5;
const SPEC_SIZES: [usize; 4] = [25, 50, 100, 200];
const SPEC_SIZE_KDSD: [f64; 4] = [0.14, 0.16, 0.35, 0.70];
const SPEC_SIZE_GFKSD: [f64; 4] = [0.10, 0.08, 0.10, 0.06];
const SPEC_SIZE_MMD: [f64; 4] = [0.08, 0.04, 0.02, 0.01];
/// Trials behind the spec's reference numbers.
const SPEC_TRIALS: usize = 100;
/// Chains of the mixing check at each temperature.
pub const MIXING_CHAINS: usize = 200;

/// The tests compared, in plotting order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TestKind {
    /// KDSD, exp-Hamming kernel.
    Kdsd,
    /// GF-KSD with the gaussian surrogate (the paper's Ising choice).
    GfksdGaussian,
    /// GF-KSD with the relaxed surrogate.
    GfksdRelaxed,
    /// MMD against null draws.
    Mmd,
}

/// Every test, in plotting order.
pub const TESTS: [TestKind; 4] = [TestKind::Kdsd, TestKind::GfksdGaussian, TestKind::GfksdRelaxed, TestKind::Mmd];

impl TestKind {
    /// Name in files and legends.
    pub fn label(self) -> &'static str {
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
pub struct Cell {
    /// Temperature T′ of the data model.
    pub t_prime: f64,
    /// Sample size.
    pub n: usize,
}

/// What one test returned in one replication.
#[derive(Clone, Debug)]
pub struct TestResult {
    /// p-value.
    pub p_value: f64,
    /// Test statistic.
    pub statistic: f64,
    /// GF-KSD only: effective sample size of the weights.
    pub ess: Option<f64>,
    /// GF-KSD only: the bandwidth.
    pub bandwidth: Option<f64>,
}

/// Rejection count of one test in one cell.
#[derive(Clone, Debug)]
pub struct Tally {
    /// The test.
    pub test: TestKind,
    /// The cell.
    pub cell: Cell,
    /// Replications.
    pub reps: usize,
    /// Replications with p ≤ α.
    pub rejections: usize,
    /// GF-KSD only: mean ESS of the weights.
    pub mean_ess: Option<f64>,
}

impl Tally {
    /// Rejection rate.
    pub fn rate(&self) -> f64 {
        self.rejections as f64 / self.reps as f64
    }
    /// Type-II error, 1 − rejection rate.
    pub fn type_ii(&self) -> f64 {
        1.0 - self.rate()
    }
}

pub use dlp_core::stats::wilson_interval as wilson;

/// The zero-field Ising model on the L × L periodic lattice at temperature `t` (coupling 1/T
/// on every edge, spin domain).
pub fn lattice_at(t: f64) -> Result<IsingModel> {
    Ok(IsingModel::lattice(&[L, L], true, 1.0 / t, vec![0.0; L * L], DomainKind::Spin)?)
}

/// Seed purposes: the first label of every [`derive_seed`] call here, so the streams of
/// data, reference draws, tests and mixing checks never meet.
const DATA: u64 = 1;
const REFERENCE: u64 = 2;
const TEST: u64 = 3;
const MIXING: u64 = 4;

/// Seed of one purpose in one replication of one cell: every draw and test needs its own
/// ChaCha key, derived from (master, purpose, cell, replication) by dlp's one scheme.
fn seed_for(master: u64, purpose: u64, cell: usize, rep: usize) -> u64 {
    derive_seed(master, &[purpose, cell as u64, rep as u64])
}

/// The sizes and seed of a run.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Replications per cell (R).
    pub reps: usize,
    /// Bootstrap / permutation replicates of every test (B).
    pub boot: usize,
    /// Sample size of the T′ sweep.
    pub n: usize,
    /// The T′ sweep.
    pub temps: Vec<f64>,
    /// Sample sizes of the n sweep at T′ = 4.5.
    pub sizes: Vec<usize>,
    /// Gibbs sweeps per draw.
    pub sweeps: usize,
    /// Master seed.
    pub seed: u64,
}

impl Settings {
    /// The T′ sweep at n, then the n sweep at T′ = 4.5 (shared cells once).
    pub fn cells(&self) -> Vec<Cell> {
        let mut cells: Vec<Cell> = self.temps.iter().map(|&t_prime| Cell { t_prime, n: self.n }).collect();
        for &n in &self.sizes {
            let c = Cell { t_prime: SPEC_SIZE_T, n };
            if !cells.contains(&c) {
                cells.push(c);
            }
        }
        cells
    }
}

/// The mixing check at one temperature: mean nearest-neighbour correlation ⟨s_i s_j⟩ (and its
/// standard error) after `sweeps` and after 5 × `sweeps` sweeps, and their z-score.
#[derive(Clone, Copy, Debug)]
pub struct Mixing {
    /// Temperature.
    pub t: f64,
    /// Correlation after `sweeps`.
    pub short: f64,
    /// Its standard error.
    pub short_se: f64,
    /// Correlation after 5 × `sweeps`.
    pub long: f64,
    /// Its standard error.
    pub long_se: f64,
    /// (short − long) / √(se² + se²).
    pub z: f64,
}

/// One run of the experiment: settings, the null model and its relaxed surrogate.
pub struct Experiment {
    /// Sizes and seed.
    pub settings: Settings,
    /// The null p (T = 5).
    pub null: IsingModel,
    relaxation: Relaxation,
}

impl Experiment {
    /// The experiment with the null at [`NULL_T`]; GF-KSD's relaxed surrogate uses the null's
    /// couplings and no field.
    pub fn new(settings: Settings) -> Result<Experiment> {
        let null = lattice_at(NULL_T)?;
        let d = null.d();
        let mut j = vec![0.0; d * d];
        for (a, b, w) in null.couplings().pairs() {
            j[a * d + b] = w;
            j[b * d + a] = w;
        }
        let relaxation = Relaxation::Ising { values: (-1.0, 1.0), j, b: vec![0.0; d] };
        Ok(Experiment { settings, null, relaxation })
    }

    /// MMD's reference draws from the null, `max_n` per replication: chain j of `gibbs_draws`
    /// depends only on (seed, j), so the first n rows are the draws for size n.
    pub fn reference_draws(&self, max_n: usize, bar: &indicatif::ProgressBar) -> Vec<Vec<u32>> {
        let s = &self.settings;
        (0..s.reps)
            .map(|r| {
                let ys = gibbs_draws(&self.null, max_n, s.sweeps, seed_for(s.seed, REFERENCE, 0, r))
                    .expect("a CPU Ising model cannot fail to evaluate");
                bar.inc(1);
                ys
            })
            .collect()
    }

    /// Every replication of cell `ci` (in parallel): n draws from the data model, then every
    /// test of [`TESTS`] against the null (MMD against `references[r]`).
    pub fn run_cell(
        &self,
        ci: usize,
        cell: Cell,
        references: &[Vec<u32>],
        bar: &indicatif::ProgressBar,
    ) -> Result<Vec<Vec<TestResult>>> {
        let s = &self.settings;
        let model = lattice_at(cell.t_prime)?;
        let d = self.null.d();
        (0..s.reps)
            .into_par_iter()
            .map(|r| {
                let xs = gibbs_draws(&model, cell.n, s.sweeps, seed_for(s.seed, DATA, ci, r))?;
                let ys = &references[r][..cell.n * d];
                let out = TESTS
                    .iter()
                    .enumerate()
                    .map(|(ti, &test)| self.test(test, &xs, ys, seed_for(s.seed, TEST + 16 * ti as u64, ci, r)))
                    .collect::<Result<Vec<_>>>();
                bar.inc(1);
                out
            })
            .collect()
    }

    /// One test on the draws `xs` (MMD against `ys`), U statistic, multinomial bootstrap.
    fn test(&self, test: TestKind, xs: &[u32], ys: &[u32], seed: u64) -> Result<TestResult> {
        let null: &dyn Target = &self.null;
        let null_test =
            NullTest { statistic: Statistic::U, bootstrap: Bootstrap::Multinomial, reps: self.settings.boot, seed };
        let gf = |surrogate: Surrogate| -> Result<TestResult> {
            let options = GfksdOptions { surrogate, bandwidth: Bandwidth::Median, null: null_test, jitter: None };
            let o = gfksd_test(null, xs, &options)?;
            let (ess, bandwidth) = (Some(o.ess), Some(o.bandwidth));
            Ok(TestResult { p_value: o.null.p_value, statistic: o.null.statistic, ess, bandwidth })
        };
        match test {
            TestKind::Kdsd => {
                let o = kdsd_test(null, xs, &KdsdOptions { kernel: BaseKernel::default(), null: null_test })?;
                Ok(TestResult { p_value: o.null.p_value, statistic: o.null.statistic, ess: None, bandwidth: None })
            }
            TestKind::GfksdGaussian => gf(Surrogate::Gaussian),
            TestKind::GfksdRelaxed => gf(Surrogate::Relaxed(self.relaxation.clone())),
            TestKind::Mmd => {
                let options = MmdOptions { scale: 1.0, statistic: Statistic::U, reps: self.settings.boot, seed };
                let o = mmd_test(null.space(), xs, ys, &options)?;
                Ok(TestResult { p_value: o.p_value, statistic: o.statistic, ess: None, bandwidth: None })
            }
        }
    }

    /// The mixing check at temperature `t` (the `k`-th temperature checked), from
    /// [`MIXING_CHAINS`] fresh chains per sweep count.
    pub fn mixing(&self, k: usize, t: f64) -> Result<Mixing> {
        let (seed, sweeps) = (self.settings.seed, self.settings.sweeps);
        let model = lattice_at(t)?;
        let n_edges = self.null.couplings().n_pairs() as f64;
        // ⟨s_i s_j⟩ = T ℓ(x) / #edges on the zero-field lattice.
        let nn = |s: usize, which: u64| -> (f64, f64) {
            let xs = gibbs_draws(&model, MIXING_CHAINS, s, seed_for(seed, MIXING + 16 * which, k, 0))
                .expect("a CPU Ising model cannot fail to evaluate");
            let mut ell = vec![0.0; MIXING_CHAINS];
            model.log_density_batch(&xs, &mut ell).expect("a CPU Ising model cannot fail to evaluate");
            let v: Vec<f64> = ell.iter().map(|l| l * t / n_edges).collect();
            dlp_core::stats::mean_standard_error(&v)
        };
        let (short, short_se) = nn(sweeps, 0);
        let (long, long_se) = nn(5 * sweeps, 1);
        let z = (short - long) / (short_se * short_se + long_se * long_se).sqrt();
        Ok(Mixing { t, short, short_se, long, long_se, z })
    }
}

/// The tallies of one cell (one per test of [`TESTS`]) and its `replications.csv` rows
/// (`test,t_prime,n,replication,statistic,p_value,rejected,ess,bandwidth`), test by test.
pub fn tally_cell(cell: Cell, results: &[Vec<TestResult>]) -> (Vec<Tally>, Vec<Vec<String>>) {
    let mut tallies = Vec::new();
    let mut rows = Vec::new();
    for (ti, &test) in TESTS.iter().enumerate() {
        let rejections = results.iter().filter(|rs| rs[ti].p_value <= ALPHA).count();
        let esses: Vec<f64> = results.iter().filter_map(|rs| rs[ti].ess).collect();
        let mean_ess = (!esses.is_empty()).then(|| esses.iter().sum::<f64>() / esses.len() as f64);
        tallies.push(Tally { test, cell, reps: results.len(), rejections, mean_ess });
        for (r, rs) in results.iter().enumerate() {
            let t = &rs[ti];
            let opt = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
            rows.push(vec![
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
    (tallies, rows)
}

/// Rows of `power.csv`: `test,t_prime,coupling_shift,n,replications,rejections,rejection_rate,
/// type_ii_error,type_ii_ci95_low,type_ii_ci95_high`.
pub fn power_rows(tallies: &[Tally]) -> Vec<Vec<String>> {
    tallies
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
        .collect()
}

/// `summary.json` of a run.
pub fn summary(s: &Settings, tallies: &[Tally], mixing: &[Mixing]) -> Value {
    json!({
        "schema": "dlp.reproduce.gof-power.v1",
        "model": {
            "lattice": [L, L], "periodic": true, "domain": "spin", "field": 0.0,
            "coupling": "1/T on every lattice edge (counted once)",
            "null_temperature": NULL_T, "null_coupling": 1.0 / NULL_T,
        },
        "alpha": ALPHA,
        "replications": s.reps,
        "bootstrap_replicates": s.boot,
        "n": s.n,
        "temperatures": s.temps,
        "sizes_at_t_prime_4_5": s.sizes,
        "draws": {
            "method": "gibbs",
            "sweeps": s.sweeps,
            "note": "2^100 states: no enumeration. Each draw is the last state of an independent single-site Gibbs chain (systematic scan, uniform start). The spec's reference run used 200 checkerboard sweeps; kdsd used 1e5 single-site Metropolis steps (1000 sweeps). mixing.csv compares the nearest-neighbour correlation after sweeps and 5 x sweeps.",
            "mixing": mixing.iter().map(|m| json!({"temperature": m.t, "nn_correlation": m.short, "se": m.short_se, "nn_correlation_long": m.long, "se_long": m.long_se, "z": m.z})).collect::<Vec<_>>(),
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
        "claims": claims(tallies, s.n),
    })
}

/// The spec's reference rejection rate for `test` in `cell`, if §9.3 lists one.
pub fn spec_rate(test: TestKind, cell: Cell) -> Option<f64> {
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

/// The paper's and the spec's statements, each with whether our run agrees; `n0` is the
/// sample size of the T′ sweep.
pub fn claims(tallies: &[Tally], n0: usize) -> Vec<Value> {
    let get = |test: TestKind, t_prime: f64, n: usize| {
        tallies.iter().find(|t| t.test == test && t.cell.t_prime == t_prime && t.cell.n == n)
    };
    let mut claims = Claims::default();
    let mut claim = |text: &str, source: &str, holds: Option<bool>, ours: String| claims.add(text, source, holds, ours);
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
            let p1 = t.rate();
            let z = dlp_core::stats::two_proportion_z(p1, t.reps as f64, s, SPEC_TRIALS as f64);
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
    claims.into_vec()
}

/// Type-II error against T′ (ours and the spec's) and, when `sizes`, against n. `settings`
/// is (R, B, sweeps, seed) for the caption.
pub fn figure(tallies: &[Tally], n0: usize, settings: (usize, usize, usize, u64), sizes: bool) -> Figure {
    let (reps, boot, sweeps, seed) = settings;
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
        Panel::lines(
            format!("ours: type-II error vs T' (n = {n0}, T = {NULL_T})"),
            "data temperature T'",
            "type-II error",
            ours(&|t| (t.cell.n == n0).then_some(t.cell.t_prime)),
            one_minus_alpha(),
        ),
        Panel::lines(
            "spec §9.3 reference (n = 100, 100 trials)",
            "data temperature T'",
            "type-II error",
            TESTS
                .iter()
                .filter_map(|&test| {
                    let (grid, _) = test.spec()?;
                    Some(Series {
                        label: test.label().to_string(),
                        points: SPEC_GRID.iter().zip(grid).map(|(&t, &r)| (t, 1.0 - r)).collect(),
                    })
                })
                .collect(),
            one_minus_alpha(),
        ),
    ];
    if sizes {
        panels.push(Panel::lines(
            format!("ours: type-II error vs n (T' = {SPEC_SIZE_T})"),
            "sample size n",
            "type-II error",
            ours(&|t| (t.cell.t_prime == SPEC_SIZE_T).then_some(t.cell.n as f64)),
            one_minus_alpha(),
        ));
    }
    Figure {
        caption: format!(
            "GOF power, 10x10 periodic Ising, null T = {NULL_T}: R = {reps}, B = {boot}, {sweeps} Gibbs sweeps, seed {seed}"
        ),
        labels,
        panels,
    }
}
