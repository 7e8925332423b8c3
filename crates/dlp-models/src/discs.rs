//! DISCS's classical sampling tasks (google-research/discs, "DISCS: A Benchmark for Discrete
//! Sampling", NeurIPS 2023 datasets and benchmarks track) as named generators with fixed
//! seeds: `bernoulli`, `categorical`, `ising`, `ising-lowtemp`, `potts`, `fhmm`, plus an RBM
//! stand-in, each at DISCS's shape, temperature and category count (the config file and line
//! are in each task's `source`), and a small enumerable tier (`<name>-small`, ≤ 4,096 states)
//! of every family for exact ground truth. Every front end reaches them as `--model discs:NAME`
//! ([`crate::load_model`]).
//!
//! The parameters are drawn as DISCS draws them (same distributions), from dlp's own seeded
//! streams: DISCS's JAX `PRNGKey` draws cannot be reproduced here, so the instances are
//! DISCS-shaped, not DISCS's own numbers. Conventions translated from DISCS's `forward`
//! (`discs/models/*.py`): its Ising and Potts lattices have **open** boundaries (the code
//! slices `[:, :-1]`; its docstring's "cyclic" is not what it computes), a once-counted
//! coupling λ per edge and log p = λ Σ_edges s_i s_j − Σ_i b_i s_i (spins s = 2x − 1) resp.
//! λ Σ_edges [c_i = c_j] − Σ_i b_{i,c_i}; so our fields are −b. DISCS's Potts adds the
//! inner/outer term μ·(±1) to all K categories of a site alike, so it cancels in the law; it
//! is kept for fidelity.
//!
//! DISCS's RBMs are trained on MNIST / Fashion-MNIST and their parameters sit behind a Drive
//! link these machines cannot reach. Two substitutes, each named for what it is:
//! * **trained here** (`rbm-mnist-2-25`, `rbm-mnist-2-200`, `rbm-fashion-4-50`,
//!   `rbm-fashion-8-50`: DISCS's `mnist-2-25`, `mnist-2-200` and categorical
//!   `fashion_mnist-4-50`, `-8-50`), by our own training
//!   (`just reproduce discs-rbm`, `dlp-learn`; settings in `paper/discs.md`), read from
//!   [`trained_path`] — these tasks are an error naming that recipe until it has run;
//! * **generated** `rbm-standin`: an untrained stand-in of the binary 784 × 25 shape
//!   ([`rbm_standin`]), available without data.

use crate::error::ModelError;
use crate::{CatRbm, CategoricalModel, Couplings, FhmmModel, IsingModel, Model, PottsModel, Rbm};
use dlp_core::rng::{derive_seed, setup_rng};
use dlp_core::{ChainRng, DomainKind, Space};
use rand::RngExt;
use rand_distr::{Distribution, StandardNormal};

/// The seed every task's parameters are drawn from (mixed with the task's index).
pub const DISCS_SEED: u64 = 2023;

/// One named task: how it is built and where DISCS sets it.
#[derive(Debug)]
pub struct DiscsTask {
    /// The name (`discs:<name>` on the command line).
    pub name: &'static str,
    /// Family in DISCS's naming (`ising`, `fhmm`, …): the small tier shares its big task's.
    pub family: &'static str,
    /// One line: shape, temperature, categories.
    pub doc: &'static str,
    /// DISCS's file and lines that set these values.
    pub source: &'static str,
    /// Whether the space is small enough to enumerate (the exact tier).
    pub enumerable: bool,
    /// Whether its parameters are trained here (read from [`trained_path`], written by `just
    /// reproduce discs-rbm`) rather than generated.
    pub trained: bool,
    build: fn(&mut ChainRng) -> Result<Model, ModelError>,
}

impl DiscsTask {
    /// The task's model from its fixed seed.
    pub fn model(&self) -> Result<Model, ModelError> {
        self.model_with_seed(DISCS_SEED)
    }

    /// The task's model drawn from `seed` instead of [`DISCS_SEED`].
    pub fn model_with_seed(&self, seed: u64) -> Result<Model, ModelError> {
        let index = TASKS.iter().position(|t| t.name == self.name).unwrap_or(0) as u64;
        (self.build)(&mut setup_rng(derive_seed(seed, &[index])))
    }
}

fn normal(rng: &mut ChainRng) -> f64 {
    StandardNormal.sample(rng)
}

/// DISCS `bernoulli`: log p(x) = Σ_i θ_i x_i, θ ~ N(0, σ²), x ∈ {0,1}^d.
fn bernoulli(d: usize, sigma: f64, rng: &mut ChainRng) -> Result<Model, ModelError> {
    let theta: Vec<f64> = (0..d).map(|_| sigma * normal(rng)).collect();
    Ok(Model::new(IsingModel::new(DomainKind::Binary, Couplings::none(d), theta)?))
}

/// DISCS `categorical`: log p(x) = Σ_i θ_{i,x_i}, θ ~ N(0, σ²)^{d×K}.
fn categorical(d: usize, k: usize, sigma: f64, rng: &mut ChainRng) -> Result<Model, ModelError> {
    let theta: Vec<f64> = (0..d * k).map(|_| sigma * normal(rng)).collect();
    Ok(Model::new(CategoricalModel::from_logits(Space::categorical(d, k), theta)?))
}

/// DISCS's lattice field: (2U − 1)·σ + μ·(+1 inside the disc (r/H − ½)² + (c/W − ½)² < ½π⁻¹,
/// −1 outside), one per site (`ising.py` `make_init_params`).
fn lattice_field(h: usize, w: usize, mu: f64, sigma: f64, r: usize, c: usize, rng: &mut ChainRng) -> f64 {
    let inside = (r as f64 / h as f64 - 0.5).powi(2) + (c as f64 / w as f64 - 0.5).powi(2) < 0.5 / std::f64::consts::PI;
    (2.0 * rng.random::<f64>() - 1.0) * sigma + if inside { mu } else { -mu }
}

/// DISCS `ising` on an open H × W lattice (spins): coupling λ per edge, field −b.
fn ising(h: usize, w: usize, lambda: f64, mu: f64, sigma: f64, rng: &mut ChainRng) -> Result<Model, ModelError> {
    let mut field = Vec::with_capacity(h * w);
    for r in 0..h {
        for c in 0..w {
            field.push(-lattice_field(h, w, mu, sigma, r, c, rng));
        }
    }
    Ok(Model::new(IsingModel::lattice(&[h, w], false, lambda, field, DomainKind::Spin)?))
}

/// DISCS `potts` on an open H × W lattice with K categories: J = λ per edge, h = −b.
fn potts(
    h: usize,
    w: usize,
    k: usize,
    lambda: f64,
    mu: f64,
    sigma: f64,
    rng: &mut ChainRng,
) -> Result<Model, ModelError> {
    let mut field = Vec::with_capacity(h * w * k);
    for r in 0..h {
        for c in 0..w {
            // DISCS draws b with shape (H, W, K) and adds μ(±1) to every category of the site.
            for _ in 0..k {
                field.push(-lattice_field(h, w, mu, sigma, r, c, rng));
            }
        }
    }
    let couplings = Couplings::lattice(&[h, w], false, lambda)?;
    Ok(Model::new(PottsModel::new(Space::categorical(h * w, k), couplings, field)?))
}

fn fhmm(l: usize, k: usize, rng: &mut ChainRng) -> Result<Model, ModelError> {
    // fhmm_config.py: sigma = 2, alpha = 0.1, beta = 0.8.
    Ok(Model::new(FhmmModel::generate(l, k, 2.0, 0.1, 0.8, rng)?.0))
}

/// A stand-in for DISCS's trained binary RBMs (not DISCS's parameters, not trained): W ~
/// N(0, s²) with s = 2/√d (so each hidden pre-activation has spread about 2 at half-on
/// visibles), visible bias N(−1, 0.5²) (MNIST is mostly off), hidden bias 0.
pub fn rbm_standin(d: usize, m: usize, rng: &mut ChainRng) -> Result<Model, ModelError> {
    let s = 2.0 / (d as f64).sqrt();
    let w: Vec<f64> = (0..d * m).map(|_| s * normal(rng)).collect();
    let b: Vec<f64> = (0..d).map(|_| -1.0 + 0.5 * normal(rng)).collect();
    Ok(Model::new(Rbm::new(DomainKind::Binary, d, m, w, b, vec![0.0; m])?))
}

/// An untrained categorical RBM with `d` sites of `k` categories and `m` hidden units: W ~
/// N(0, (2/√d)²), b ~ N(0, 0.5²), c = 0 (the enumerable tier of the trained categorical RBM).
pub fn cat_rbm_standin(d: usize, k: usize, m: usize, rng: &mut ChainRng) -> Result<Model, ModelError> {
    let s = 2.0 / (d as f64).sqrt();
    let w: Vec<f64> = (0..d * k * m).map(|_| s * normal(rng)).collect();
    let b: Vec<f64> = (0..d * k).map(|_| 0.5 * normal(rng)).collect();
    Ok(Model::new(CatRbm::new(d, k, m, w, b, vec![0.0; m])?))
}

/// Where the RBM task `name` trained by `just reproduce discs-rbm` is kept:
/// `data/cache/discs/<name>.json` ([`dlp_core::io::data_cache_dir`]).
pub fn trained_path(name: &str) -> std::path::PathBuf {
    dlp_core::io::data_cache_dir().join("discs").join(format!("{name}.json"))
}

/// The trained RBM `name`, or the one-line error that names the recipe that trains it.
fn trained(name: &str) -> Result<Model, ModelError> {
    let path = trained_path(name);
    if !path.exists() {
        return Err(ModelError::param(format!(
            "{name} is trained here, not generated: {} is missing (run `just reproduce discs-rbm` after `just data mnist` and `just data fashion-mnist`)",
            path.display()
        )));
    }
    crate::load_model(&path)
}

/// Every task, the DISCS-sized ones first, then the enumerable tier.
pub static TASKS: &[DiscsTask] = &[
    DiscsTask {
        name: "bernoulli",
        family: "bernoulli",
        doc: "d = 10,000 bits, θ ~ N(0, 0.5²)",
        source: "discs/models/configs/bernoulli_config.py:7-9",
        trained: false,
        enumerable: false,
        build: |r| bernoulli(10_000, 0.5, r),
    },
    DiscsTask {
        name: "categorical",
        family: "categorical",
        doc: "d = 2,000, K = 4, θ ~ N(0, 1.5²)",
        source: "discs/models/configs/categorical_config.py:6-8",
        trained: false,
        enumerable: false,
        build: |r| categorical(2000, 4, 1.5, r),
    },
    DiscsTask {
        name: "ising",
        family: "ising",
        doc: "50 × 50 open lattice, λ = 0.5, μ = 0.5, σ = 1.5 (DISCS's high temperature)",
        source: "discs/models/configs/ising_config.py:7-12",
        trained: false,
        enumerable: false,
        build: |r| ising(50, 50, 0.5, 0.5, 1.5, r),
    },
    DiscsTask {
        name: "ising-lowtemp",
        family: "ising",
        doc: "50 × 50 open lattice, λ = 1, μ = 1, σ = 3 (DISCS's low temperature)",
        source: "discs/run_configs/classical_models/ising/model_config_sweep.py:32-34",
        trained: false,
        enumerable: false,
        build: |r| ising(50, 50, 1.0, 1.0, 3.0, r),
    },
    DiscsTask {
        name: "potts",
        family: "potts",
        doc: "30 × 30 open lattice, K = 4, λ = 1, μ = 0.5, σ = 1.5",
        source: "discs/models/configs/potts_config.py:7-12",
        trained: false,
        enumerable: false,
        build: |r| potts(30, 30, 4, 1.0, 0.5, 1.5, r),
    },
    DiscsTask {
        name: "fhmm",
        family: "fhmm",
        doc: "L = 200, K = 50 binary chains, σ = 2, α = 0.1, β = 0.8",
        source: "discs/models/configs/fhmm_config.py:7-11",
        trained: false,
        enumerable: false,
        build: |r| fhmm(200, 50, r),
    },
    DiscsTask {
        name: "rbm-standin",
        family: "rbm",
        doc: "STAND-IN: untrained binary RBM at DISCS's mnist-2-25 shape (784 visible, 25 hidden)",
        source: "discs/learning/rbm/exp_config.py:34 (784 visible), discs/run_configs/ebm/rbm/sampler_sweep.py:19 (mnist-2-25)",
        trained: false,
        enumerable: false,
        build: |r| rbm_standin(784, 25, r),
    },
    DiscsTask {
        name: "rbm-mnist-2-25",
        family: "rbm",
        doc: "binary RBM 784 × 25 trained here on MNIST (DISCS's mnist-2-25; our training, `just reproduce discs-rbm`)",
        source: "discs/learning/rbm/exp_config.py:15-21,34 (784 visible; Adam 1e-3, batch 100, PCD-100), discs/run_configs/ebm/rbm/sampler_sweep.py:19",
        trained: true,
        enumerable: false,
        build: |_| trained("rbm-mnist-2-25"),
    },
    DiscsTask {
        name: "rbm-mnist-2-200",
        family: "rbm",
        doc: "binary RBM 784 × 200 trained here on MNIST (DISCS's mnist-2-200; our training)",
        source: "discs/learning/rbm/exp_config.py:15-21,34, discs/run_configs/ebm/rbm/sampler_sweep.py:18",
        trained: true,
        enumerable: false,
        build: |_| trained("rbm-mnist-2-200"),
    },
    DiscsTask {
        name: "rbm-fashion-4-50",
        family: "cat-rbm",
        doc: "categorical RBM 784 sites × K = 4, 50 hidden, trained here on Fashion-MNIST (DISCS's fashion_mnist-4-50; our training)",
        source: "discs/models/configs/rbm_config.py:9-10 (fashion_mnist-4-50, K = 4), discs/models/rbm.py (NNCategorical)",
        trained: true,
        enumerable: false,
        build: |_| trained("rbm-fashion-4-50"),
    },
    DiscsTask {
        name: "rbm-fashion-8-50",
        family: "cat-rbm",
        doc: "categorical RBM 784 sites × K = 8, 50 hidden, trained here on Fashion-MNIST (DISCS's fashion_mnist-8-50; our training)",
        source: "discs/run_configs/ebm/rbm/sampler_sweep.py:87 (fashion_mnist-8-50), discs/models/rbm.py (NNCategorical)",
        trained: true,
        enumerable: false,
        build: |_| trained("rbm-fashion-8-50"),
    },
    DiscsTask {
        name: "bernoulli-small",
        family: "bernoulli",
        doc: "d = 12 bits, θ ~ N(0, 0.5²)",
        source: "discs/models/configs/bernoulli_config.py:9 (σ); d reduced to enumerate",
        trained: false,
        enumerable: true,
        build: |r| bernoulli(12, 0.5, r),
    },
    DiscsTask {
        name: "categorical-small",
        family: "categorical",
        doc: "d = 6, K = 4, θ ~ N(0, 1.5²)",
        source: "discs/models/configs/categorical_config.py:7-8 (K, σ); d reduced to enumerate",
        trained: false,
        enumerable: true,
        build: |r| categorical(6, 4, 1.5, r),
    },
    DiscsTask {
        name: "ising-small",
        family: "ising",
        doc: "3 × 4 open lattice, λ = 0.5, μ = 0.5, σ = 1.5",
        source: "discs/models/configs/ising_config.py:9-12 (λ, μ, σ); shape reduced to enumerate",
        trained: false,
        enumerable: true,
        build: |r| ising(3, 4, 0.5, 0.5, 1.5, r),
    },
    DiscsTask {
        name: "potts-small",
        family: "potts",
        doc: "2 × 3 open lattice, K = 4, λ = 1, μ = 0.5, σ = 1.5",
        source: "discs/models/configs/potts_config.py:8-12 (λ, σ, K, μ); shape reduced to enumerate",
        trained: false,
        enumerable: true,
        build: |r| potts(2, 3, 4, 1.0, 0.5, 1.5, r),
    },
    DiscsTask {
        name: "fhmm-small",
        family: "fhmm",
        doc: "L = 3, K = 3 binary chains, σ = 2, α = 0.1, β = 0.8",
        source: "discs/models/configs/fhmm_config.py:9-11 (σ, α, β); shape reduced to enumerate",
        trained: false,
        enumerable: true,
        build: |r| fhmm(3, 3, r),
    },
    DiscsTask {
        name: "rbm-small",
        family: "rbm",
        doc: "STAND-IN: untrained binary RBM, 12 visible, 4 hidden",
        source: "the stand-in of rbm-standin at an enumerable size",
        trained: false,
        enumerable: true,
        build: |r| rbm_standin(12, 4, r),
    },
    DiscsTask {
        name: "cat-rbm-small",
        family: "cat-rbm",
        doc: "untrained categorical RBM, 5 sites × K = 4, 3 hidden",
        source: "the categorical RBM family of rbm-fashion-4-50 at an enumerable size",
        trained: false,
        enumerable: true,
        build: |r| cat_rbm_standin(5, 4, 3, r),
    },
];

/// The task called `name`.
pub fn find(name: &str) -> Option<&'static DiscsTask> {
    TASKS.iter().find(|t| t.name == name)
}

/// The model of `discs:<name>`, or the one-line error listing the names.
pub fn task(name: &str) -> Result<Model, ModelError> {
    match find(name) {
        Some(t) => t.model(),
        None => {
            let names: Vec<&str> = TASKS.iter().map(|t| t.name).collect();
            Err(ModelError::param(format!("unknown DISCS task \"{name}\" (expected one of {})", names.join(", "))))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dlp_core::{Target, TargetExt};

    #[test]
    fn tasks_have_discs_shapes_and_the_small_tier_enumerates() {
        let d = |n: &str| find(n).unwrap().model().unwrap().space().d;
        assert_eq!(
            (d("bernoulli"), d("categorical"), d("ising"), d("potts"), d("fhmm")),
            (10_000, 2000, 2500, 900, 10_000)
        );
        for t in TASKS.iter().filter(|t| t.enumerable) {
            let m = t.model().unwrap();
            let n = m.space().n_states().unwrap();
            assert!(n <= 4096, "{}: {n} states", t.name);
            assert!(TASKS.iter().any(|b| !b.enumerable && b.family == t.family), "{} has no full-size task", t.name);
        }
        // Same seed, same model; another seed, another one.
        let a = find("ising-small").unwrap();
        assert_eq!(a.model().unwrap(), a.model().unwrap());
        assert_ne!(a.model().unwrap(), a.model_with_seed(1).unwrap());
        assert!(task("nope").unwrap_err().to_string().contains("unknown DISCS task \"nope\""));
        // Every command's model argument takes `discs:NAME`.
        // A trained task without its file names the recipe (DLP_DATA_CACHE is not set by tests,
        // so this reads the checkout's cache: skip the check where the recipe has run).
        if !trained_path("rbm-fashion-8-50").exists() {
            let e = task("rbm-fashion-8-50").unwrap_err().to_string();
            assert!(e.contains("just reproduce discs-rbm"), "{e}");
        }
        let loaded = crate::load_model(std::path::Path::new("discs:ising-small")).unwrap();
        assert_eq!(loaded, a.model().unwrap());
        let e = crate::load_model(std::path::Path::new("discs:nope")).unwrap_err().to_string();
        assert!(e.starts_with("discs:nope: unknown DISCS task"), "{e}");
    }

    #[test]
    fn ising_is_discs_forward_on_an_open_lattice() {
        // DISCS's forward transcribed for a 3 × 4 state: −Σ_i s_i (Σ_{j~i} (−λ) s_j / 2 + b_i)
        // with open boundaries; our field is −b, so b_i = −field_i.
        let m = find("ising-small").unwrap().model().unwrap();
        let im = m.downcast_ref::<IsingModel>().unwrap();
        let b: Vec<f64> = im.fields().iter().map(|f| -f).collect();
        let x: Vec<u32> = vec![1, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 0];
        let s = |r: usize, c: usize| 2.0 * x[r * 4 + c] as f64 - 1.0;
        let mut discs = 0.0;
        for r in 0..3 {
            for c in 0..4 {
                let mut msg = 0.0;
                for (dr, dc) in [(-1i32, 0i32), (1, 0), (0, -1), (0, 1)] {
                    let (rr, cc) = (r as i32 + dr, c as i32 + dc);
                    if (0..3).contains(&rr) && (0..4).contains(&cc) {
                        msg += -0.5 * s(rr as usize, cc as usize);
                    }
                }
                discs -= s(r, c) * (msg / 2.0 + b[r * 4 + c]);
            }
        }
        assert!((m.log_density(&x).unwrap() - discs).abs() < 1e-12);
    }
}
