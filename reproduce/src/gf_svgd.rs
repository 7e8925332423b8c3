//! The experiments of Han et al. (AISTATS 2020, paper 004) on GF-SVGD (`dlp_samplers::gf_svgd`):
//! the 1-D categorical toys of Figs. 1, 2 and 7 (§3, §4.2, App. A) and the 10 × 10 Ising grid of
//! Fig. 3 (§4.3); transforms spec §7.1–7.2. The binaries `004-fig1`, `004-fig2`, `004-fig7`,
//! `004-fig3` are configuration and output around these functions.

use anyhow::{Result, anyhow};
use dlp_core::lift::{Base, Partition};
use dlp_core::rng::derive_seed;
use dlp_core::{DomainKind, Space, StepInfo, Target, chain_rng, chain_rngs};
use dlp_models::{CategoricalModel, IsingModel};
use dlp_samplers::gf_svgd::{GfSvgd, GfSvgdConfig, Optimizer, SurrogateKind, normal_particles};

/// A one-coordinate categorical target with probabilities `probs`.
pub fn toy_target(probs: &[f64]) -> Result<CategoricalModel> {
    CategoricalModel::from_probs(Space::categorical(1, probs.len()), probs.to_vec()).map_err(|e| anyhow!("{e}"))
}

pub use dlp_core::stats::empirical_total_variation as tv;

/// The piecewise target p_c(x) = K p_*(Γ(x)) p₀(x) of a 1-D toy (normalised: every bin has
/// p₀-mass 1/K, 004 Prop. 4).
pub fn pc_density(part: &Partition, probs: &[f64], x: f64) -> f64 {
    probs.len() as f64 * probs[part.bin(x) as usize] * part.base.density(x)
}

/// One GF-SVGD run on a 1-D toy.
#[derive(Clone, Debug)]
pub struct ToyRun {
    /// TV of Γ(x) to p_* after each iteration 0..=iters.
    pub tv: Vec<f64>,
    /// Particle positions at the requested iterations, in order.
    pub snapshots: Vec<(usize, Vec<f64>)>,
}

/// A 1-D toy run's settings.
#[derive(Clone, Debug)]
pub struct Toy {
    /// p_* over the K values.
    pub probs: Vec<f64>,
    /// The base p₀.
    pub base: Base,
    /// Particles n.
    pub n: usize,
    /// Iterations.
    pub iters: usize,
    /// The update.
    pub optimizer: Optimizer,
    /// Particles start from N(init_mean, 1).
    pub init_mean: f64,
}

impl Toy {
    /// n particles from N(`init_mean`, 1) (chain streams of `seed`), `iters` iterations of
    /// GF-SVGD with ρ = p₀ and importance weights; snapshots at the iterations in `record`.
    pub fn run(&self, seed: u64, record: &[usize]) -> Result<ToyRun> {
        let t = toy_target(&self.probs)?;
        let config =
            GfSvgdConfig { base: self.base.clone(), optimizer: Some(self.optimizer), ..GfSvgdConfig::default() };
        let mut s = GfSvgd::new(&config, &t, normal_particles(self.n, 1, self.init_mean, seed))?;
        let mut changed = vec![0; self.n];
        let mut out = ToyRun { tv: vec![tv(s.states(), &self.probs)], snapshots: Vec::new() };
        for it in 0..=self.iters {
            if record.contains(&it) {
                out.snapshots.push((it, s.particles().to_vec()));
            }
            if it == self.iters {
                break;
            }
            s.step(&t, &mut changed)?;
            out.tv.push(tv(s.states(), &self.probs));
        }
        Ok(out)
    }
}

/// TV of n i.i.d. draws from `probs` (draw j from chain stream j of `seed`): the Monte Carlo
/// level the particles are compared with.
pub fn iid_tv(probs: &[f64], n: usize, seed: u64) -> f64 {
    let states: Vec<u32> = (0..n)
        .map(|j| {
            let total: f64 = probs.iter().sum();
            dlp_core::draw::sample_weights(probs, total, &mut chain_rng(seed, j)) as u32
        })
        .collect();
    tv(&states, probs)
}

/// p_*(z) ∝ exp(σ_p Σ_{(i,j)∈E} z_i z_j) on the L × L grid, open boundary, spins, no field
/// (spec §7.2 \[R\]).
pub fn grid_ising(l: usize, sigma: f64) -> Result<IsingModel> {
    IsingModel::lattice(&[l, l], false, sigma, vec![0.0; l * l], DomainKind::Spin).map_err(|e| anyhow!("{e}"))
}

/// MSE of the particle estimate of E[z] (= 0 without a field), averaged over coordinates.
fn mse_zero_mean(states: &[u32], d: usize) -> f64 {
    let n = states.len() / d;
    let mut m = vec![0.0; d];
    for row in states.chunks(d) {
        for (mi, &c) in m.iter_mut().zip(row) {
            *mi += (2.0 * c as f64 - 1.0) / n as f64;
        }
    }
    m.iter().map(|v| v * v).sum::<f64>() / d as f64
}

/// The methods of Fig. 3.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IsingMethod {
    /// GF-SVGD, ρ = p₀ (the paper's choice), Adam lr `lr`.
    GfSvgd,
    /// GF-SVGD with the relaxed surrogate (our extra row, spec §7.2).
    GfSvgdRelaxed,
    /// Systematic-scan Gibbs, one sweep per iteration, same start Γ(x).
    Gibbs,
}

impl IsingMethod {
    /// Label in files and legends.
    pub fn label(self) -> &'static str {
        match self {
            IsingMethod::GfSvgd => "gf-svgd",
            IsingMethod::GfSvgdRelaxed => "gf-svgd-relaxed",
            IsingMethod::Gibbs => "gibbs",
        }
    }
}

/// One trial of Fig. 3: n particles (or chains) from x ~ N(−2, 1) (Gibbs starts at sign(x)),
/// `iters` iterations; returns (MSE of E\[z\], mean weight ESS of the last iteration or NaN).
pub fn ising_trial(
    model: &IsingModel,
    method: IsingMethod,
    n: usize,
    iters: usize,
    lr: f64,
    seed: u64,
) -> Result<(f64, f64)> {
    let d = model.space().d;
    let x0 = normal_particles(n, d, -2.0, seed);
    match method {
        IsingMethod::GfSvgd | IsingMethod::GfSvgdRelaxed => {
            let surrogate = if method == IsingMethod::GfSvgd { SurrogateKind::Base } else { SurrogateKind::Relaxed };
            let config = GfSvgdConfig { surrogate, optimizer: Some(Optimizer::adam(lr)), ..GfSvgdConfig::default() };
            let mut s = GfSvgd::new(&config, model, x0)?;
            let mut changed = vec![0; n];
            let mut ess = f64::NAN;
            for _ in 0..iters {
                ess = s.step(model, &mut changed)?.ess;
            }
            Ok((mse_zero_mean(s.states(), d), ess))
        }
        IsingMethod::Gibbs => {
            let z0: Vec<u32> = x0.iter().map(|&x| (x >= 0.0) as u32).collect();
            let sampler = dlp_samplers::build_sampler("gibbs-sweep", &Default::default())?;
            let mut chains = sampler.start(model, &z0)?;
            let mut rngs = chain_rngs(derive_seed(seed, &[1]), 0, n);
            let mut info = vec![StepInfo::default(); n];
            for _ in 0..iters * d {
                chains.try_step(&mut rngs, &mut info, dlp_core::Batch::Full)?;
            }
            Ok((mse_zero_mean(chains.positions(), d), f64::NAN))
        }
    }
}

/// `runs` (one per seed, in seed order) of `toy`, seeds `seed_base + s` for s < `seeds`, in
/// parallel over seeds (each run is deterministic, so the order of work does not matter).
pub fn toy_seeds(toy: &Toy, seed_base: u64, seeds: usize, record: &[usize]) -> Result<Vec<ToyRun>> {
    use rayon::prelude::*;
    (0..seeds as u64).into_par_iter().map(|s| toy.run(derive_seed(seed_base, &[s]), record)).collect()
}

/// (mean, max) over runs of the TV after iteration `it`.
pub fn tv_stats(runs: &[ToyRun], it: usize) -> (f64, f64) {
    let v: Vec<f64> = runs.iter().map(|r| r.tv[it]).collect();
    (v.iter().sum::<f64>() / v.len() as f64, v.iter().copied().fold(0.0, f64::max))
}

/// (mean, 95% quantile) of the TV of n i.i.d. draws over `reps` replications.
pub fn iid_tv_stats(probs: &[f64], n: usize, seed_base: u64, reps: usize) -> (f64, f64) {
    let mut v: Vec<f64> = (0..reps as u64).map(|r| iid_tv(probs, n, derive_seed(seed_base, &[1 << 20, r]))).collect();
    v.sort_by(f64::total_cmp);
    (v.iter().sum::<f64>() / reps as f64, v[((0.95 * reps as f64).ceil() as usize).min(reps) - 1])
}

/// Histogram density of `xs` on `bins` equal bins of [lo, hi] as (bin centre, density) points.
pub fn histogram(xs: &[f64], lo: f64, hi: f64, bins: usize) -> Vec<(f64, f64)> {
    let w = (hi - lo) / bins as f64;
    let mut c = vec![0.0; bins];
    for &x in xs {
        if x >= lo && x < hi {
            c[((x - lo) / w) as usize] += 1.0 / (xs.len() as f64 * w);
        }
    }
    c.iter().enumerate().map(|(b, &v)| (lo + (b as f64 + 0.5) * w, v)).collect()
}

/// (x, y) points of a curve.
pub type Curve = Vec<(f64, f64)>;

/// (x, p_c(x)) and (x, p₀(x)) on a grid of [lo, hi]: the red and blue lines of Figs. 1, 2, 7.
pub fn density_curves(part: &Partition, probs: &[f64], lo: f64, hi: f64) -> (Curve, Curve) {
    let xs: Vec<f64> = (0..=600).map(|i| lo + (hi - lo) * i as f64 / 600.0).collect();
    (
        xs.iter().map(|&x| (x, pc_density(part, probs, x))).collect(),
        xs.iter().map(|&x| (x, part.base.density(x))).collect(),
    )
}

/// Rows (label, seed index, iteration, tv) of `runs`.
pub fn tv_rows(label: &str, runs: &[ToyRun]) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for (s, r) in runs.iter().enumerate() {
        for (it, v) in r.tv.iter().enumerate() {
            rows.push(vec![label.to_string(), s.to_string(), it.to_string(), v.to_string()]);
        }
    }
    rows
}

/// The mean-TV-vs-iteration curve of `runs`.
pub fn mean_tv_curve(runs: &[ToyRun]) -> Vec<(f64, f64)> {
    (0..runs[0].tv.len()).map(|it| (it as f64, tv_stats(runs, it).0)).collect()
}

/// The Bernoulli RBM of Fig. 4 (spec §7.3): d visible spins, M hidden units in {0, 1}
/// marginalised, log p̃(z) = bᵀz + Σ_k softplus(W_kᵀz + c_k); W ~ N(0, 0.05) (variance), b, c ~
/// N(0, 1), from streams derived from `seed`.
pub fn paper_rbm(d: usize, m: usize, seed: u64) -> Result<dlp_models::Rbm> {
    // Standard normals from three labelled streams of `seed`, scaled.
    let normal = |sd: f64, k: usize, label: u64| -> Vec<f64> {
        normal_particles(1, k, 0.0, derive_seed(seed, &[label])).iter().map(|v| sd * v).collect()
    };
    let (w, b, c) = (normal(0.05f64.sqrt(), d * m, 0), normal(1.0, d, 1), normal(1.0, m, 2));
    dlp_models::Rbm::new(DomainKind::Spin, d, m, w, b, c).map_err(|e| anyhow!("{e}"))
}

/// Final states of `chains` block-Gibbs chains (hidden/visible alternation, one sweep per step)
/// run `sweeps` sweeps from uniform starts: the ground truth of Fig. 4.
pub fn rbm_gibbs(rbm: &dlp_models::Rbm, x0: &[u32], sweeps: usize, seed: u64) -> Result<Vec<u32>> {
    let sampler = dlp_samplers::build_sampler("block-gibbs", &Default::default())?;
    let opts = dlp_core::RunOptions { seed, threads: 0, chains_per_task: 0 };
    Ok(dlp_core::run_chains(sampler.as_ref(), rbm, x0, sweeps, &opts, |_, _| ())?.final_states)
}

/// Uniform ±1 starts for `chains` chains of dimension d (chain streams of `seed`).
pub fn uniform_states(chains: usize, d: usize, seed: u64) -> Vec<u32> {
    normal_particles(chains, d, 0.0, seed).iter().map(|&x| (x >= 0.0) as u32).collect()
}

/// The methods of Fig. 4: GF-SVGD with the relaxed surrogate (the paper's choice for the RBM,
/// Adam lr `lr`) and block Gibbs, both from x ~ N(0, 1) (Gibbs from sign(x)), `iters` iterations.
pub fn rbm_run(rbm: &dlp_models::Rbm, gf_svgd: bool, n: usize, iters: usize, lr: f64, seed: u64) -> Result<Vec<u32>> {
    let d = rbm.space().d;
    let x0 = normal_particles(n, d, 0.0, seed);
    if gf_svgd {
        let config = GfSvgdConfig {
            surrogate: SurrogateKind::Relaxed,
            optimizer: Some(Optimizer::adam(lr)),
            ..Default::default()
        };
        let mut s = GfSvgd::new(&config, rbm, x0)?;
        let mut changed = vec![0; n];
        for _ in 0..iters {
            s.step(rbm, &mut changed)?;
        }
        Ok(s.states().to_vec())
    } else {
        let z0: Vec<u32> = x0.iter().map(|&x| (x >= 0.0) as u32).collect();
        let sampler = dlp_samplers::build_sampler("block-gibbs", &Default::default())?;
        let mut chains = sampler.start(rbm, &z0)?;
        let mut rngs = chain_rngs(derive_seed(seed, &[1]), 0, n);
        let mut info = vec![StepInfo::default(); n];
        for _ in 0..iters {
            chains.try_step(&mut rngs, &mut info, dlp_core::Batch::Full)?;
        }
        Ok(chains.positions().to_vec())
    }
}

/// (unbiased MMD² with k = exp(−H/d), MSE of the mean of z) of `xs` against the reference `ys`.
pub fn rbm_metrics(xs: &[u32], ys: &[u32], d: usize) -> Result<(f64, f64)> {
    let space = Space::spin(d);
    let mmd = dlp_gof::mmd::mmd_statistic(&space, xs, ys, 1.0, dlp_gof::Statistic::U)?;
    let mean = |s: &[u32]| {
        let n = (s.len() / d) as f64;
        let mut m = vec![0.0; d];
        for row in s.chunks(d) {
            for (mi, &c) in m.iter_mut().zip(row) {
                *mi += (2.0 * c as f64 - 1.0) / n;
            }
        }
        m
    };
    let (a, b) = (mean(xs), mean(ys));
    Ok((mmd, a.iter().zip(&b).map(|(x, y)| (x - y) * (x - y)).sum::<f64>() / d as f64))
}

/// Fig. 5 (c, d) (§4.5): the null RBM p (d visible spins, M hidden, W ~ N(0, 1/M) (variance),
/// b, c ~ N(0, 1), from `seed`) and the data RBM q with W + ε: ε ~ N(0, σ′²) is **one scalar**
/// added to every entry, drawn from `eps_seed` (the kdsd reference experiment's perturbation,
/// gof spec §7 item 9; b, c shared).
pub fn gof_rbm_pair(
    d: usize,
    m: usize,
    sigma_prime: f64,
    seed: u64,
    eps_seed: u64,
) -> Result<(dlp_models::Rbm, dlp_models::Rbm)> {
    let normal = |sd: f64, k: usize, label: u64| -> Vec<f64> {
        normal_particles(1, k, 0.0, derive_seed(seed, &[label])).iter().map(|v| sd * v).collect()
    };
    let (w, b, c) = (normal((1.0 / m as f64).sqrt(), d * m, 0), normal(1.0, d, 1), normal(1.0, m, 2));
    let eps = sigma_prime * normal_particles(1, 1, 0.0, eps_seed)[0];
    let wq: Vec<f64> = w.iter().map(|a| a + eps).collect();
    let p = dlp_models::Rbm::new(DomainKind::Spin, d, m, w, b.clone(), c.clone()).map_err(|e| anyhow!("{e}"))?;
    let q = dlp_models::Rbm::new(DomainKind::Spin, d, m, wq, b, c).map_err(|e| anyhow!("{e}"))?;
    Ok((p, q))
}

/// KDSD, GF-KSD with the relaxed surrogate (the one "chosen as in sampling" for the RBM) and
/// GF-KSD with the gaussian one, of `xs` against p: each U-statistic with its multinomial
/// bootstrap of `boot` replicates.
pub fn stein_outcomes(
    p: &dlp_models::Rbm,
    xs: &[u32],
    boot: usize,
    seed: u64,
) -> Result<[dlp_gof::bootstrap::NullOutcome; 3]> {
    use dlp_gof::{Bandwidth, BaseKernel, Bootstrap, GfksdOptions, KdsdOptions, NullTest, Statistic, Surrogate};
    let null = NullTest { statistic: Statistic::U, bootstrap: Bootstrap::Multinomial, reps: boot, seed };
    let k = dlp_gof::kdsd_test(p, xs, &KdsdOptions { kernel: BaseKernel::default(), null })?.null;
    let relax =
        dlp_core::lift::Relaxation::from_capabilities(&p.capabilities()).ok_or_else(|| anyhow!("no RBM view"))?;
    let gf = |surrogate| -> Result<dlp_gof::bootstrap::NullOutcome> {
        let o = GfksdOptions { surrogate, bandwidth: Bandwidth::Median, null, jitter: None };
        Ok(dlp_gof::gfksd_test(p, xs, &o)?.null)
    };
    Ok([k, gf(Surrogate::Relaxed(relax))?, gf(Surrogate::Gaussian)?])
}

/// Rejections at level `alpha` of the three Stein tests of [`stein_outcomes`] and MMD of `xs`
/// (drawn from q) against p, with `ys` drawn from p for MMD; `boot` bootstrap / permutation
/// replicates. With `model_null` (replicates of the three statistics on data sets drawn from p,
/// see `004-fig5 --bootstrap model`) the Stein tests' p-values are against it instead of their
/// bootstraps (a Monte Carlo test: exact level when those data sets are drawn as `xs` is).
pub fn gof_rejections(
    p: &dlp_models::Rbm,
    xs: &[u32],
    ys: &[u32],
    boot: usize,
    alpha: f64,
    seed: u64,
    model_null: Option<&[[f64; 3]]>,
) -> Result<[bool; 4]> {
    let stein = stein_outcomes(p, xs, boot, seed)?;
    let pv = |t: usize| match model_null {
        None => stein[t].p_value,
        Some(null) => dlp_gof::p_value(stein[t].statistic, &null.iter().map(|r| r[t]).collect::<Vec<_>>()),
    };
    let mmd = dlp_gof::MmdOptions { scale: 1.0, statistic: dlp_gof::Statistic::U, reps: boot, seed };
    let m = dlp_gof::mmd_test(p.space(), xs, ys, &mmd)?.p_value;
    Ok([pv(0), pv(1), pv(2), m].map(|pv| pv <= alpha))
}
