//! DULA / DMALA on a Bernoulli RBM (`dlp_models::Rbm`, binary or spin visibles), no
//! preconditioner: the same kernel as [`crate::dlp::DlpChains`], with the model evaluated
//! from cached hidden pre-activations.
//!
//! f(x) = b·u + Σ_k softplus(a_k), a = c + Wᵀu, ∇f = s·(b + W σ(a)) (s = 1 binary, 2 spin).
//! The generic path calls `log_density_grad_batch` on the proposals, i.e. two n×d×M matrix
//! products per step (A = U W, then σ(A) Wᵀ). Here each chain keeps its a and b·u; a
//! proposal that flips the set F gets a' = a + Σ_{i∈F} Δu_i W_i in O(M·|F|), so a step does
//! **one** matrix product (σ(A') Wᵀ over the task's moving chains, ndarray → matrixmultiply,
//! each row computed by the same kernel so chains do not interact) plus O(M) per chain.
//! The proposal itself (logits, draws, log q, acceptance) is the generic code's
//! ([`DlpProposal::logits`], [`DlpProposal::draw`], [`DlpProposal::log_prob`],
//! [`crate::dlp::log_accept_ratio`]), called in the same order with the same uniforms, so
//! only the rounding of f and ∇f differs (≈1e−13). To keep that rounding from accumulating,
//! a chain's a and b·u are recomputed from its state every [`REFRESH`] accepted moves.

use crate::dlp::{DlpProposal, log_accept_ratio};
use crate::proposal::mh_accept;
use dlp_core::math::{sigmoid, softplus};
use dlp_core::{ChainRng, Chains, SamplerError, StepInfo, Target};
use dlp_models::Rbm;
use ndarray::linalg::general_mat_mul;
use ndarray::{ArrayView2, ArrayViewMut2};

/// Accepted moves after which a chain's cached pre-activations are recomputed exactly.
pub const REFRESH: u32 = 64;

/// The RBM behind `target`, when the RBM fast path applies to it.
pub fn qualifying_rbm(target: &dyn Target) -> Option<&Rbm> {
    target.as_any()?.downcast_ref::<Rbm>()
}

/// DULA / DMALA chains on an RBM with cached pre-activations.
pub struct RbmDlpChains<'t> {
    rbm: &'t Rbm,
    proposal: DlpProposal,
    mh: bool,
    n: usize,
    x: Vec<u32>,
    f: Vec<f64>,
    /// b·u per chain.
    lin: Vec<f64>,
    /// Hidden pre-activations, n × M.
    a: Vec<f64>,
    logits: Vec<f64>,
    lognorm: Vec<f64>,
    log_z: Vec<f64>,
    since_refresh: Vec<u32>,
    // Scratch (no allocation inside `step`).
    y: Vec<u32>,
    n_prop: Vec<u32>,
    a_y: Vec<f64>,
    s_y: Vec<f64>,
    g_y: Vec<f64>,
    lin_y: Vec<f64>,
    f_y: Vec<f64>,
    y_logits: Vec<f64>,
    y_lognorm: Vec<f64>,
}

impl<'t> RbmDlpChains<'t> {
    /// Chains started at `x0` (n × d bits); `proposal` must have no preconditioner.
    pub fn new(rbm: &'t Rbm, proposal: DlpProposal, mh: bool, x0: &[u32]) -> Result<Self, SamplerError> {
        let space = rbm.space();
        space.check_states(x0).map_err(SamplerError::BadInitialState)?;
        let name = if mh { "dmala" } else { "dula" };
        proposal
            .check_space(space)
            .map_err(|message| SamplerError::BadParameter { sampler: name.into(), message })?;
        let (d, m) = (rbm.d(), rbm.m());
        let n = x0.len() / d;
        if n == 0 {
            return Err(SamplerError::BadInitialState("no chains".into()));
        }
        let mut c = RbmDlpChains {
            rbm,
            proposal,
            mh,
            n,
            x: x0.to_vec(),
            f: vec![0.0; n],
            lin: vec![0.0; n],
            a: vec![0.0; n * m],
            logits: vec![0.0; n * d],
            lognorm: vec![0.0; n * d],
            log_z: vec![0.0; n],
            since_refresh: vec![0; n],
            y: x0.to_vec(),
            n_prop: vec![0; n],
            a_y: vec![0.0; n * m],
            s_y: vec![0.0; n * m],
            g_y: vec![0.0; n * d],
            lin_y: vec![0.0; n],
            f_y: vec![0.0; n],
            y_logits: vec![0.0; d],
            y_lognorm: vec![0.0; d],
        };
        // Start: evaluate every chain as a "proposal" and take it.
        for j in 0..n {
            let xj = &c.x[j * d..(j + 1) * d];
            c.lin_y[j] = lin_of(rbm, xj);
            rbm.hidden_preactivation(xj, &mut c.a_y[j * m..(j + 1) * m]);
        }
        c.evaluate(n);
        for j in 0..n {
            c.f[j] = c.f_y[j];
            c.lin[j] = c.lin_y[j];
            c.a[j * m..(j + 1) * m].copy_from_slice(&c.a_y[j * m..(j + 1) * m]);
            c.log_z[j] = c.proposal.logits(
                space,
                &c.x[j * d..(j + 1) * d],
                &c.g_y[j * d..(j + 1) * d],
                &mut c.logits[j * d..(j + 1) * d],
                &mut c.lognorm[j * d..(j + 1) * d],
            );
        }
        Ok(c)
    }

    /// From the first `rows` rows of `a_y`/`lin_y`: f into `f_y`, ∇f into `g_y` (one
    /// matrix product σ(A') Wᵀ).
    fn evaluate(&mut self, rows: usize) {
        let (d, m) = (self.rbm.d(), self.rbm.m());
        for r in 0..rows {
            let (ar, sr) = (&self.a_y[r * m..(r + 1) * m], &mut self.s_y[r * m..(r + 1) * m]);
            let mut sp = 0.0;
            for (s, &a) in sr.iter_mut().zip(ar) {
                *s = sigmoid(a);
                sp += softplus(a);
            }
            self.f_y[r] = self.lin_y[r] + sp;
        }
        let w = ArrayView2::from_shape((d, m), self.rbm.w()).expect("W is d × M");
        let sv = ArrayView2::from_shape((rows, m), &self.s_y[..rows * m]).expect("rows × M");
        let mut g = ArrayViewMut2::from_shape((rows, d), &mut self.g_y[..rows * d]).expect("rows × d");
        general_mat_mul(1.0, &sv, &w.t(), 0.0, &mut g);
        let scale = self.rbm.value_scale();
        for mut row in g.rows_mut() {
            for (o, &bi) in row.iter_mut().zip(self.rbm.b()) {
                *o = scale * (bi + *o);
            }
        }
    }
}

/// b·u of a bit vector.
fn lin_of(rbm: &Rbm, x: &[u32]) -> f64 {
    let spin = rbm.is_spin();
    x.iter().zip(rbm.b()).map(|(&c, &b)| b * if spin { 2.0 * c as f64 - 1.0 } else { c as f64 }).sum()
}

impl Chains for RbmDlpChains<'_> {
    fn n_chains(&self) -> usize {
        self.n
    }

    fn positions(&self) -> &[u32] {
        &self.x
    }

    fn log_densities(&self) -> Option<&[f64]> {
        Some(&self.f)
    }

    // Chain j indexes several flat buffers at once; an index loop is clearer than zips.
    #[allow(clippy::needless_range_loop)]
    fn step(&mut self, rngs: &mut [ChainRng], info: &mut [StepInfo]) {
        let rbm = self.rbm;
        let space = rbm.space();
        let (d, m) = (rbm.d(), rbm.m());
        let spin = rbm.is_spin();
        // 1. Proposals, exactly as the generic chains draw them; moving chains are packed
        //    into rows 0..rows of the scratch matrices with their updated pre-activations.
        let mut rows = 0;
        for j in 0..self.n {
            let x = &self.x[j * d..(j + 1) * d];
            let y = &mut self.y[rows * d..(rows + 1) * d];
            let k = self.proposal.draw(
                space,
                x,
                &self.logits[j * d..(j + 1) * d],
                &self.lognorm[j * d..(j + 1) * d],
                &mut rngs[j],
                y,
            );
            self.n_prop[j] = k;
            if k == 0 {
                continue;
            }
            let ay = &mut self.a_y[rows * m..(rows + 1) * m];
            if self.since_refresh[j] >= REFRESH {
                rbm.hidden_preactivation(y, ay);
                self.lin_y[rows] = lin_of(rbm, y);
            } else {
                ay.copy_from_slice(&self.a[j * m..(j + 1) * m]);
                let mut lin = self.lin[j];
                for i in 0..d {
                    if x[i] != y[i] {
                        let du = match (spin, y[i]) {
                            (true, 1) => 2.0,
                            (true, _) => -2.0,
                            (false, 1) => 1.0,
                            (false, _) => -1.0,
                        };
                        lin += du * rbm.b()[i];
                        for (a, &w) in ay.iter_mut().zip(&rbm.w()[i * m..(i + 1) * m]) {
                            *a += du * w;
                        }
                    }
                }
                self.lin_y[rows] = lin;
            }
            rows += 1;
        }
        // 2. f and ∇f of every moving proposal: one matrix product.
        if rows > 0 {
            self.evaluate(rows);
        }
        // 3. Acceptance, as in the generic chains.
        let mut r = 0;
        for j in 0..self.n {
            let k = self.n_prop[j];
            if k == 0 {
                info[j] = StepInfo { accepted: true, accept_prob: 1.0, ..StepInfo::default() };
                continue;
            }
            let y = &self.y[r * d..(r + 1) * d];
            let g_y = &self.g_y[r * d..(r + 1) * d];
            let f_y = self.f_y[r];
            let x = &self.x[j * d..(j + 1) * d];
            let (accepted, accept_prob) = if self.mh {
                let log_z_y = self.proposal.logits(space, y, g_y, &mut self.y_logits, &mut self.y_lognorm);
                let fwd = self.proposal.log_prob(space, x, y, &self.logits[j * d..(j + 1) * d], self.log_z[j]);
                let rev = self.proposal.log_prob(space, y, x, &self.y_logits, log_z_y);
                let out = mh_accept(log_accept_ratio(self.f[j], f_y, fwd, rev), &mut rngs[j]);
                if out.0 {
                    self.logits[j * d..(j + 1) * d].copy_from_slice(&self.y_logits);
                    self.lognorm[j * d..(j + 1) * d].copy_from_slice(&self.y_lognorm);
                    self.log_z[j] = log_z_y;
                }
                out
            } else {
                (true, 1.0)
            };
            if accepted {
                self.x[j * d..(j + 1) * d].copy_from_slice(y);
                self.f[j] = f_y;
                self.lin[j] = self.lin_y[r];
                self.a[j * m..(j + 1) * m].copy_from_slice(&self.a_y[r * m..(r + 1) * m]);
                self.since_refresh[j] = if self.since_refresh[j] >= REFRESH { 0 } else { self.since_refresh[j] + 1 };
                if !self.mh {
                    self.log_z[j] = self.proposal.logits(
                        space,
                        &self.x[j * d..(j + 1) * d],
                        g_y,
                        &mut self.logits[j * d..(j + 1) * d],
                        &mut self.lognorm[j * d..(j + 1) * d],
                    );
                }
            }
            info[j] = StepInfo {
                accepted,
                accept_prob,
                n_proposed: k,
                n_changed: if accepted { k } else { 0 },
                density_evals: 1,
                grad_evals: 1,
            };
            r += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dlp::DlpSampler;
    use crate::gibbs::testkit::empirical_check;
    use dlp_core::{DomainKind, Sampler, chain_rngs};

    fn tiny_rbm(domain: DomainKind) -> Rbm {
        Rbm::new(domain, 3, 2, vec![0.9, -0.4, -0.7, 0.5, 0.3, 1.1], vec![0.2, -0.3, 0.1], vec![-0.5, 0.4]).unwrap()
    }

    #[test]
    fn the_fast_path_is_taken_for_rbms() {
        let r = tiny_rbm(DomainKind::Binary);
        assert!(qualifying_rbm(&r).is_some());
        assert!(qualifying_rbm(&crate::fast::Generic(&r)).is_none());
        let model = dlp_models::Model::Rbm(r.clone());
        assert!(qualifying_rbm(&model).is_some());
    }

    #[test]
    fn one_step_rows_match_the_generic_exact_rows() {
        // empirical_check: every state of the exact row (computed by the generic
        // `transition_row`) within 5 standard errors + 3/n of its empirical frequency, no
        // state outside the row. Per state the two-sided normal tail beyond 5σ is 5.7e−7; with
        // ≤ 8 states per row and 16 rows below the family-wise false-failure rate is < 1e−4
        // (the 3/n slack only makes it smaller).
        for dom in [DomainKind::Binary, DomainKind::Spin] {
            let r = tiny_rbm(dom);
            for (sampler, seed) in [(DlpSampler::dula(0.6).unwrap(), 1), (DlpSampler::dmala(0.6).unwrap(), 2)] {
                for x in [[0, 0, 0], [1, 0, 1], [0, 1, 1], [1, 1, 1]] {
                    empirical_check(&sampler, &r, &x, 40_000, seed + 10 * x.iter().sum::<u32>() as u64);
                }
            }
        }
    }

    #[test]
    fn cached_preactivations_stay_exact_over_many_steps() {
        // A bigger random RBM so that many coordinates flip per step; f (from the cached
        // pre-activations) must equal the model's f after every step, across refreshes.
        let (d, m) = (12, 7);
        let mut st = 12345u64;
        let mut next = || {
            st = st.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((st >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        };
        let w: Vec<f64> = (0..d * m).map(|_| next()).collect();
        let b: Vec<f64> = (0..d).map(|_| next()).collect();
        let c: Vec<f64> = (0..m).map(|_| next()).collect();
        for dom in [DomainKind::Binary, DomainKind::Spin] {
            let r = Rbm::new(dom, d, m, w.clone(), b.clone(), c.clone()).unwrap();
            for sampler in [DlpSampler::dula(1.0).unwrap(), DlpSampler::dmala(1.0).unwrap()] {
                let x0: Vec<u32> = (0..8 * d).map(|i| (i % 3 == 0) as u32).collect();
                let mut ch = sampler.start(&r, &x0).unwrap();
                let mut rngs = chain_rngs(3, 0, 8);
                let mut info = vec![StepInfo::default(); 8];
                let mut moved = 0;
                for _ in 0..300 {
                    ch.step(&mut rngs, &mut info);
                    moved += info.iter().map(|i| i.n_changed).sum::<u32>();
                    for (y, f) in ch.positions().chunks(d).zip(ch.log_densities().unwrap()) {
                        assert!((r.log_density(y) - f).abs() < 1e-10, "{}: stale f", sampler.name());
                    }
                }
                assert!(moved > 1000, "{}: the chains hardly moved ({moved})", sampler.name());
            }
        }
    }
}
