//! Test targets written for these tests, independent of dlp-models.
#![allow(dead_code)]

use dlp_core::{RowTarget, Space};

/// L×L periodic lattice Ising in the paper's convention (spec §3.2, §4.1):
/// f(s) = sᵀJs + b Σ s_i with J = σ·A, i.e. 2σ per undirected edge; the sampler coordinate
/// is the bit x = (s+1)/2 and ∂f/∂x_i = 4σ n_i + 2b (n_i = Σ_{j~i} s_j).
pub struct LatticeIsing {
    space: Space,
    l: usize,
    sigma: f64,
    bias: f64,
}

impl LatticeIsing {
    pub fn new(l: usize, sigma: f64, bias: f64) -> Self {
        LatticeIsing { space: Space::spin(l * l), l, sigma, bias }
    }

    fn neighbours(&self, i: usize) -> [usize; 4] {
        let l = self.l;
        let (r, c) = (i / l, i % l);
        [((r + 1) % l) * l + c, ((r + l - 1) % l) * l + c, r * l + (c + 1) % l, r * l + (c + l - 1) % l]
    }

    fn f(&self, x: &[u32]) -> f64 {
        let s = |i: usize| 2.0 * x[i] as f64 - 1.0;
        let mut f = 0.0;
        for i in 0..x.len() {
            // Right and down neighbours count each edge once; sᵀJs counts it twice.
            let [down, _, right, _] = self.neighbours(i);
            f += 2.0 * self.sigma * s(i) * (s(down) + s(right)) + self.bias * s(i);
        }
        f
    }
}

impl RowTarget for LatticeIsing {
    fn row_space(&self) -> &Space {
        &self.space
    }
    fn row_log_density(&self, x: &[u32]) -> f64 {
        self.f(x)
    }
    fn row_log_density_grad(&self, x: &[u32], g: &mut [f64]) -> f64 {
        for (i, gi) in g.iter_mut().enumerate() {
            let n: f64 = self.neighbours(i).iter().map(|&j| 2.0 * x[j] as f64 - 1.0).sum();
            *gi = 4.0 * self.sigma * n + 2.0 * self.bias;
        }
        self.f(x)
    }
}

use dlp_core::DomainKind;
use dlp_core::testing::Quadratic;
use dlp_exact::reference::{RbmRef, RefParams};
use dlp_models::{Couplings, IsingModel, PottsModel, Rbm, TableModel};
use dlp_samplers::SamplerParams;
use proptest::prelude::*;

/// A small random model, described by its parameters so proptest can shrink and print it.
#[derive(Clone, Debug)]
pub enum ModelSpec {
    /// Ising with dense random couplings (upper triangle) and fields; spin or binary.
    Ising { d: usize, j: Vec<f64>, b: Vec<f64>, spin: bool },
    /// Potts on K classes.
    Potts { d: usize, k: usize, j: Vec<f64>, h: Vec<f64> },
    /// RBM with m hidden units.
    Rbm { d: usize, m: usize, w: Vec<f64>, b: Vec<f64>, c: Vec<f64>, spin: bool },
    /// Full random table on a categorical space.
    Table { d: usize, k: usize, logp: Vec<f64> },
    /// Quadratic on an ordinal space with values `values` (W with its diagonal).
    Ordinal { d: usize, values: Vec<i64>, w: Vec<f64>, b: Vec<f64> },
}

fn sym(d: usize, upper: &[f64]) -> Vec<f64> {
    let mut j = vec![0.0; d * d];
    let mut t = 0;
    for r in 0..d {
        for c in r + 1..d {
            j[r * d + c] = upper[t];
            j[c * d + r] = upper[t];
            t += 1;
        }
    }
    j
}

impl ModelSpec {
    pub fn build(&self) -> Box<dyn dlp_core::Target> {
        match self {
            ModelSpec::Ising { d, j, b, spin } => {
                let dom = if *spin { DomainKind::Spin } else { DomainKind::Binary };
                Box::new(IsingModel::from_dense(*d, &sym(*d, j), b.clone(), dom).unwrap())
            }
            ModelSpec::Potts { d, k, j, h } => Box::new(
                PottsModel::new(
                    dlp_core::Space::categorical(*d, *k),
                    Couplings::from_dense(*d, &sym(*d, j)).unwrap(),
                    h.clone(),
                )
                .unwrap(),
            ),
            ModelSpec::Rbm { d, m, w, b, c, spin } => {
                let dom = if *spin { DomainKind::Spin } else { DomainKind::Binary };
                Box::new(Rbm::new(dom, *d, *m, w.clone(), b.clone(), c.clone()).unwrap())
            }
            ModelSpec::Table { d, k, logp } => {
                Box::new(TableModel::new(dlp_core::Space::categorical(*d, *k), logp.clone()).unwrap())
            }
            ModelSpec::Ordinal { d, values, w, b } => {
                Box::new(Quadratic::new(dlp_core::Space::ordinal(*d, values.clone()), w.clone(), b.clone()))
            }
        }
    }

    /// The RBM's parameters, for references that need them.
    pub fn rbm_ref(&self) -> Option<RbmRef> {
        match self {
            ModelSpec::Rbm { d, m, w, b, c, spin } => {
                Some(RbmRef { d: *d, m: *m, w: w.clone(), b: b.clone(), c: c.clone(), spin: *spin })
            }
            _ => None,
        }
    }

    pub fn is_binary(&self) -> bool {
        matches!(self, ModelSpec::Ising { .. } | ModelSpec::Rbm { .. })
    }
}

fn coef(n: usize, scale: f64) -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(-scale..scale, n)
}

/// Binary/spin Ising, d ∈ 2..=max_d.
pub fn ising(max_d: usize) -> impl Strategy<Value = ModelSpec> {
    (2..=max_d, any::<bool>()).prop_flat_map(|(d, spin)| {
        (coef(d * (d - 1) / 2, 1.0), coef(d, 1.0)).prop_map(move |(j, b)| ModelSpec::Ising { d, j, b, spin })
    })
}

/// RBM with d ∈ 2..=max_d visibles and 1..=3 hiddens.
pub fn rbm(max_d: usize) -> impl Strategy<Value = ModelSpec> {
    (2..=max_d, 1usize..=3, any::<bool>()).prop_flat_map(|(d, m, spin)| {
        (coef(d * m, 1.5), coef(d, 1.0), coef(m, 1.0)).prop_map(move |(w, b, c)| ModelSpec::Rbm { d, m, w, b, c, spin })
    })
}

/// Potts (K ∈ 2..=4) or a random table, with at most `max_states` states.
pub fn categorical(max_states: usize) -> impl Strategy<Value = ModelSpec> {
    (1usize..=4, 2usize..=4, any::<bool>())
        .prop_filter("space too large", move |(d, k, _)| k.pow(*d as u32) <= max_states)
        .prop_flat_map(|(d, k, potts)| {
            if potts {
                (coef(d * (d - 1) / 2, 1.0), coef(d * k, 1.0))
                    .prop_map(move |(j, h)| ModelSpec::Potts { d, k, j, h })
                    .boxed()
            } else {
                coef(k.pow(d as u32), 2.0).prop_map(move |logp| ModelSpec::Table { d, k, logp }).boxed()
            }
        })
}

/// Ordinal quadratic, d ∈ 1..=3, values an increasing list of 3..=5 integers with gaps 1–2
/// (wider gaps make proposals of e^{−gap²/(2α)} and numerically reducible chains).
pub fn ordinal() -> impl Strategy<Value = ModelSpec> {
    (1usize..=3, -3i64..=1, prop::collection::vec(1i64..=2, 2..=4)).prop_flat_map(|(d, start, gaps)| {
        let mut values = vec![start];
        for g in gaps {
            values.push(values.last().unwrap() + g);
        }
        (coef(d * d, 0.4), coef(d, 1.0)).prop_map(move |(w, b)| ModelSpec::Ordinal { d, values: values.clone(), w, b })
    })
}

/// Every model kind (binary-like up to 2^max_d states).
pub fn any_model(max_d: usize) -> impl Strategy<Value = ModelSpec> {
    prop_oneof![3 => ising(max_d), 2 => rbm(max_d.min(6)), 2 => categorical(1 << max_d), 1 => ordinal()]
}

/// A registered sampler configuration used by the suite.
#[derive(Clone, Debug)]
pub struct Case {
    pub name: &'static str,
    pub step_size: Option<f64>,
    pub precond: bool,
    /// Leaves π invariant (all but DULA variants).
    pub exact: bool,
    /// Its random scan order carries memory across steps (the row's `tests.schedule_memory`).
    pub schedule_memory: bool,
}

/// The sampler configurations the suite runs: the test names of every registry row that runs
/// on general models, with the row's test parameters (data-target rows are covered by
/// `sgdlp.rs`, particle rows by `gf_svgd.rs`, wrappers by `tempering.rs`; `exact_matrices.rs`
/// checks that every row is covered).
pub fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    for spec in dlp_samplers::registry::REGISTRY.iter().filter(|s| s.has_state_kernel()) {
        for &name in spec.tests.names {
            out.push(Case {
                name,
                step_size: spec.tests.step_size,
                precond: spec.requires(dlp_samplers::registry::Param::Preconditioner),
                exact: spec.exact,
                schedule_memory: spec.tests.schedule_memory,
            });
        }
    }
    out
}

/// A preconditioner that differs per coordinate.
pub fn precond(d: usize) -> Vec<f64> {
    (0..d).map(|i| 0.5 + 0.75 * (i % 3) as f64).collect()
}

impl Case {
    pub fn params(&self, d: usize) -> SamplerParams {
        SamplerParams {
            step_size: self.step_size,
            preconditioner: self.precond.then(|| precond(d)),
            batch_size: None,
            step_size_min: None,
            ladder: None,
        }
    }
    /// The reference's parameters on a d-dimensional target (`rbm`: its parameters, if an RBM).
    pub fn ref_params(&self, d: usize, rbm: Option<RbmRef>) -> RefParams {
        RefParams { step_size: self.step_size, preconditioner: self.precond.then(|| precond(d)), batch_size: None, rbm }
    }
}

/// G statistic of observed counts against probabilities `p` (Σp = 1, n = Σcounts), cells
/// with expected count < 5 pooled into one (dropped if the pool is still < 5, which only
/// loses power), and its degrees of freedom (cells − 1).
pub fn g_test(counts: &[u64], p: &[f64]) -> (f64, usize) {
    let n: u64 = counts.iter().sum();
    let n = n as f64;
    let (mut cells, mut pool_o, mut pool_e) = (Vec::new(), 0.0, 0.0);
    for (&o, &q) in counts.iter().zip(p) {
        let e = n * q;
        if e >= 5.0 {
            cells.push((o as f64, e));
        } else {
            pool_o += o as f64;
            pool_e += e;
        }
    }
    if pool_e >= 5.0 {
        cells.push((pool_o, pool_e));
    } else {
        // Counts in cells of (near) zero probability are a failure no pooling may hide.
        assert!(pool_o <= pool_e + 10.0 * pool_e.sqrt() + 5.0, "{pool_o} observations in cells expecting {pool_e}");
    }
    let g = 2.0 * cells.iter().map(|&(o, e)| if o > 0.0 { o * (o / e).ln() } else { 0.0 }).sum::<f64>();
    (g, cells.len().saturating_sub(1))
}

/// The χ² critical value for `df` degrees of freedom at level `alpha` (0 for df = 0).
pub fn chi2_critical(df: usize, alpha: f64) -> f64 {
    use statrs::distribution::{ChiSquared, ContinuousCDF};
    if df == 0 {
        return 0.0;
    }
    ChiSquared::new(df as f64).unwrap().inverse_cdf(1.0 - alpha)
}
