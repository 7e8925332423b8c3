//! Parallel tempering (the registry's wrapper rows, `pt-<K>:<inner>`) on the product space of
//! its replicas: the kernel `Tempering::product_row` gives, assembled over every product state,
//! equals an independent construction — the inner samplers' reference matrices
//! (`dlp_exact::reference`, transcribed from the papers) on each replica's β_k f, combined as
//! independent moves, then the exchange step written here from the definition — and its
//! unique stationary law is Π_k π_k (irreducible, aperiodic, πP = π), whose first factor is π.

use dlp_core::testing::{PairwiseCategorical, Quadratic};
use dlp_core::{Batch, Capabilities, EvalError, Space, Target, TargetExt};
use dlp_exact::enumerate::{all_states, probabilities};
use dlp_exact::ergodic::classes;
use dlp_exact::matrix::{max_abs_diff, stationarity_residual};
use dlp_exact::reference::{RefParams, reference_by_name};
use dlp_samplers::registry::{REGISTRY, SamplerName, resolve_inner};
use dlp_samplers::tempering::{Tempering, product_space};
use dlp_samplers::{SamplerParams, build_sampler};
use nalgebra::DMatrix;
use std::collections::HashMap;

/// β f, written here (not the crate's `Tempered`), for the references.
struct Scaled<'a> {
    inner: &'a dyn Target,
    beta: f64,
}

impl Target for Scaled<'_> {
    fn space(&self) -> &Space {
        self.inner.space()
    }
    fn evaluate(&self, xs: &[u32], batch: Batch<'_>, f: &mut [f64], grad: Option<&mut [f64]>) -> Result<(), EvalError> {
        let mut g = grad;
        self.inner.evaluate(xs, batch, f, g.as_deref_mut())?;
        f.iter_mut().for_each(|v| *v *= self.beta);
        if let Some(g) = g {
            g.iter_mut().for_each(|v| *v *= self.beta);
        }
        Ok(())
    }
    fn capabilities(&self) -> Capabilities<'_> {
        Capabilities::default()
    }
}

/// The independent transition matrix over the product states `states` (K × d each).
fn reference(inner: &str, step: Option<f64>, t: &dyn Target, ladder: &[f64], states: &[Vec<u32>]) -> DMatrix<f64> {
    let d = t.space().d;
    let single = all_states(t.space(), 1 << 12).unwrap();
    let index: HashMap<&[u32], usize> = single.chunks(d).enumerate().map(|(i, s)| (s, i)).collect();
    let params = RefParams { step_size: step, preconditioner: None, batch_size: None, rbm: None };
    let m: Vec<DMatrix<f64>> = ladder
        .iter()
        .map(|&beta| {
            let mut r = reference_by_name(inner, &params, &Scaled { inner: t, beta }).unwrap().unwrap();
            assert_eq!(r.len(), 1, "single-phase inner samplers only");
            r.remove(0)
        })
        .collect();
    let n = states.len();
    let pos: HashMap<&[u32], usize> = states.iter().enumerate().map(|(i, s)| (s.as_slice(), i)).collect();
    // Independent moves of the replicas.
    let mut moves = DMatrix::<f64>::zeros(n, n);
    for (a, za) in states.iter().enumerate() {
        for (b, zb) in states.iter().enumerate() {
            moves[(a, b)] = (0..ladder.len())
                .map(|k| m[k][(index[&za[k * d..(k + 1) * d]], index[&zb[k * d..(k + 1) * d]])])
                .product::<f64>();
        }
    }
    // The exchange step: even or odd pairs with probability ½, each pair swapped with
    // min(1, π_k(x_{k+1}) π_{k+1}(x_k) / (π_k(x_k) π_{k+1}(x_{k+1}))).
    let mut swap = DMatrix::<f64>::zeros(n, n);
    for (a, z) in states.iter().enumerate() {
        let logp = |k: usize, x: &[u32]| ladder[k] * t.log_density(x).unwrap();
        let rep = |z: &[u32], k: usize| z[k * d..(k + 1) * d].to_vec();
        for first in 0..2 {
            let pairs: Vec<usize> = (first..ladder.len() - 1).step_by(2).collect();
            for mask in 0..(1usize << pairs.len()) {
                let (mut y, mut p) = (z.clone(), 0.5);
                for (bit, &k) in pairs.iter().enumerate() {
                    let (xk, xk1) = (rep(z, k), rep(z, k + 1));
                    let ratio = (logp(k, &xk1) + logp(k + 1, &xk) - logp(k, &xk) - logp(k + 1, &xk1)).exp();
                    let acc = ratio.min(1.0);
                    if mask >> bit & 1 == 1 {
                        p *= acc;
                        y[k * d..(k + 1) * d].copy_from_slice(&xk1);
                        y[(k + 1) * d..(k + 2) * d].copy_from_slice(&xk);
                    } else {
                        p *= 1.0 - acc;
                    }
                }
                swap[(a, pos[y.as_slice()])] += p;
            }
        }
    }
    moves * swap
}

/// Every wrapper row's test names on a binary and a categorical model, at the default ladder
/// and at an uneven one.
#[test]
fn product_kernels_match_the_independent_construction_and_have_the_product_law() {
    let q = Quadratic::spec_tiny();
    let cat = PairwiseCategorical::spec_small();
    let models: [&dyn Target; 2] = [&q, &cat];
    let mut checked = 0;
    for spec in REGISTRY.iter().filter(|s| s.wraps()) {
        assert!(!spec.tests.names.is_empty(), "{}: no test names", spec.usage());
        for &name in spec.tests.names {
            let parsed = SamplerName::parse(name);
            let (k, inner) = (parsed.numbers[0], parsed.inner.clone().unwrap());
            let params = SamplerParams { step_size: spec.tests.step_size, ..Default::default() };
            assert_eq!(build_sampler(name, &params).unwrap().name(), name);
            let uneven: Vec<f64> = (0..k).map(|i| 0.35f64.powf(i as f64 * 0.8)).collect();
            for t in models {
                // Only the models the inner sampler runs on (lb and gwg: binary and spin).
                let zeros = vec![0u32; t.space().d];
                if build_sampler(&inner, &params).unwrap().start(t, &zeros).is_err() {
                    continue;
                }
                for ladder in [dlp_samplers::tempering::default_ladder(k), uneven.clone()] {
                    let pt = Tempering::new(&resolve_inner(&inner).unwrap(), &params, ladder.clone()).unwrap();
                    let d = t.space().d;
                    let pspace = product_space(t.space(), k);
                    let flat = all_states(&pspace, 1 << 12).unwrap();
                    let states: Vec<Vec<u32>> = flat.chunks(k * d).map(<[u32]>::to_vec).collect();
                    let pos: HashMap<&[u32], usize> =
                        states.iter().enumerate().map(|(i, s)| (s.as_slice(), i)).collect();
                    let n = states.len();
                    let mut p = DMatrix::<f64>::zeros(n, n);
                    for (a, z) in states.iter().enumerate() {
                        for (y, w) in pt.product_row(t, z, 0).unwrap() {
                            p[(a, pos[y.as_slice()])] += w;
                        }
                    }
                    let r = reference(&inner, spec.tests.step_size, t, &ladder, &states);
                    let diff = max_abs_diff(&p, &r);
                    assert!(diff < 1e-12, "{name} {ladder:?}: differs from the reference by {diff}");
                    // Π_k π_k: each replica's law under β_k f.
                    let laws: Vec<Vec<f64>> =
                        ladder.iter().map(|&beta| probabilities(&Scaled { inner: t, beta }).unwrap()).collect();
                    let single = all_states(t.space(), 1 << 12).unwrap();
                    let idx: HashMap<&[u32], usize> = single.chunks(d).enumerate().map(|(i, s)| (s, i)).collect();
                    let pi: Vec<f64> =
                        states.iter().map(|z| (0..k).map(|r| laws[r][idx[&z[r * d..(r + 1) * d]]]).product()).collect();
                    let res = stationarity_residual(&pi, &p);
                    assert!(res < 1e-12, "{name} {ladder:?}: πP ≠ π ({res})");
                    let c = classes(&p);
                    assert!(c.irreducible() && c.aperiodic(), "{name} {ladder:?}: {c:?}");
                    checked += 1;
                }
            }
        }
    }
    assert!(checked >= 14, "only {checked} cases");
}
