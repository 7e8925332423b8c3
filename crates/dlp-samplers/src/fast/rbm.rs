//! DULA / DMALA on a Bernoulli RBM (a target with the RBM capability, [`RbmView`]: e.g.
//! `dlp_models::Rbm`, binary or spin visibles), no preconditioner: the same kernel as
//! [`crate::dlp::DlpChains`], with the model evaluated from cached hidden pre-activations; and
//! [`RbmCache`], the one cache of those pre-activations, which GWG, single-site Gibbs and
//! `bg-1` use on RBMs too.
//!
//! f(x) = b·u + Σ_k softplus(a_k), a = c + Wᵀu, ∇f = s·(b + W σ(a)) (s = 1 binary, 2 spin).
//! The generic path calls `log_density_grad_batch` on the proposals, i.e. two n×d×M matrix
//! products per step (A = U W, then σ(A) Wᵀ). Here each chain keeps its a and b·u; a
//! proposal that flips the set F gets a' = a + Σ_{i∈F} Δu_i W_i in O(M·|F|), so a step does
//! **one** matrix product (σ(A') Wᵀ over the task's moving chains,
//! [`RbmView::hidden_times_wt`], each row computed by the same kernel so chains do not
//! interact) plus O(M) per chain.
//! The proposal is the generic binary one: the logits ℓ_i = ½ g_i (1 − 2x_i) − 1/(2α) are
//! the same expression, the draw is `u < σ(ℓ_i)` with one uniform per coordinate in order,
//! log q uses [`DlpProposal::log_prob`] and the test [`crate::dlp::proposal::log_accept_ratio`] /
//! `mh_accept` with the same uniforms. Only rounding differs (≈1e−13): f and ∇f come from the
//! cached a, the exponentials from the vectorised [`exp_neg_abs`] (≤ 2 ulp from libm), and
//! Σ softplus is formed as Σ max(·, 0) + ln Π(1 + e^{−|·|}) (see [`binary_logits`]). To keep
//! that rounding from accumulating, a chain's a and b·u are recomputed from its state every
//! [`REFRESH`] accepted moves.
//!
//! `dula-f32` / `dmala-f32` ([`DlpProposal::single_precision_gradient`]) run the product in
//! f32 (an f32 copy of W, matrixmultiply's sgemm) and round ∇f to f32; f and the MH test stay
//! f64, so DMALA-f32 is still exact for π.
//!
//! What bounds it (784×500, 100 chains): the n×M×d gradient product is ≥ 60% of a step in
//! f64 (≈ 35% in f32); the rest is the O(M·|F|) updates (W rows streamed from L3), one
//! exponential per hidden and per visible unit, and the draws.

use crate::dlp::proposal::DlpProposal;
use crate::fast::Threshold;
use crate::fast::vexp::exp_neg_abs;
use crate::mh::{Caching, Evaluator, MhChains, Proposal, start_error};
use crate::proposal::sample_logits;
use dlp_core::TargetExt;
use dlp_core::capability::RbmView;
use dlp_core::{Batch, ChainRng, EvalError, SamplerError, Space, Target};
use rand::Rng;

/// Accepted moves after which a chain's cached pre-activations are recomputed exactly.
pub const REFRESH: u32 = 256;

/// Per-chain hidden pre-activations a = c + Wᵀu of an RBM: the one RBM cache of the samplers.
/// Two ways to use it:
///
/// * **proposals** ([`RbmCache::new`]: DLP chains here, GWG): each chain also keeps b·u, and
///   a batch of proposal rows (a', b·u') is formed in O(M) per changed coordinate
///   ([`RbmCache::propose`]), evaluated with one matrix product ([`RbmCache::evaluate`]) and
///   kept on acceptance ([`RbmCache::accept`]); a chain's a and b·u are recomputed from its
///   state every [`REFRESH`] accepted moves.
/// * **site updates** ([`RbmCache::for_site_updates`]: single-site Gibbs, `bg-1`): one
///   coordinate's conditional per step from the flip difference
///   ([`RbmView::flip_delta`], O(M) where `TargetExt::coordinate_deltas` recomputes a in
///   O(d·M)), a updated in place on a flip and recomputed from the state every d steps.
pub struct RbmCache<'t> {
    rbm: RbmView<'t>,
    /// a per chain, n × M.
    a: Vec<f64>,
    /// b·u per chain (proposals only).
    lin: Vec<f64>,
    /// Accepted moves (proposals) or steps (site updates) since a was last recomputed.
    since_refresh: Vec<u32>,
    /// Proposal rows: a', b·u', σ(a'), then f and ∇f (empty for site updates).
    a_y: Vec<f64>,
    lin_y: Vec<f64>,
    s_y: Vec<f64>,
    /// f of the evaluated proposal rows.
    pub f_y: Vec<f64>,
    /// ∇f of the evaluated proposal rows (rows × d, with respect to the bits).
    pub g_y: Vec<f64>,
    /// W in f32 when the gradient product runs in single precision (empty otherwise), with
    /// its σ(a') and product buffers.
    w32: Vec<f32>,
    s32: Vec<f32>,
    g32: Vec<f32>,
}

impl<'t> RbmCache<'t> {
    /// The proposal cache of chains at `x0` (n × d bits); `f_y`/`g_y` rows 0..n then hold f
    /// and ∇f of the starting states.
    pub fn new(rbm: RbmView<'t>, x0: &[u32]) -> Self {
        Self::with_precision(rbm, x0, false)
    }

    /// As [`RbmCache::new`]; with `f32_gradient` the product σ(A')Wᵀ runs in f32 (W kept as
    /// an f32 copy) and ∇f is rounded to f32, as `dula-f32` / `dmala-f32` read it.
    pub fn with_precision(rbm: RbmView<'t>, x0: &[u32], f32_gradient: bool) -> Self {
        let (d, m) = (rbm.d, rbm.m);
        let n = x0.len() / d;
        let single = |len: usize| if f32_gradient { vec![0.0f32; len] } else { Vec::new() };
        let mut c = RbmCache {
            w32: if f32_gradient { rbm.w.iter().map(|&w| w as f32).collect() } else { Vec::new() },
            s32: single(n * m),
            g32: single(n * d),
            rbm,
            a: vec![0.0; n * m],
            lin: vec![0.0; n],
            since_refresh: vec![0; n],
            a_y: vec![0.0; n * m],
            lin_y: vec![0.0; n],
            s_y: vec![0.0; n * m],
            f_y: vec![0.0; n],
            g_y: vec![0.0; n * d],
        };
        for j in 0..n {
            c.since_refresh[j] = REFRESH;
            c.propose(j, j, &x0[j * d..(j + 1) * d], &x0[j * d..(j + 1) * d]);
            c.accept(j, j);
        }
        c.evaluate(n);
        c
    }

    /// The site-update cache of chains at `x0` (n × d bits): a of every chain from one
    /// matrix product ([`RbmView::hidden_preactivations`]); no proposal buffers.
    pub fn for_site_updates(rbm: RbmView<'t>, x0: &[u32]) -> Self {
        let a = rbm.hidden_preactivations(x0).into_raw_vec_and_offset().0;
        RbmCache {
            rbm,
            a,
            lin: Vec::new(),
            since_refresh: vec![0; x0.len() / rbm.d],
            a_y: Vec::new(),
            lin_y: Vec::new(),
            s_y: Vec::new(),
            f_y: Vec::new(),
            g_y: Vec::new(),
            w32: Vec::new(),
            s32: Vec::new(),
            g32: Vec::new(),
        }
    }

    /// Sets proposal row `row` to the state `y` reached by chain `j` from its state `x`:
    /// a' = a + Σ_{i: y_i ≠ x_i} Δu_i W_i in O(M) per changed coordinate (from scratch once
    /// the chain has accepted [`REFRESH`] moves).
    pub fn propose(&mut self, j: usize, row: usize, x: &[u32], y: &[u32]) {
        let rbm = self.rbm;
        let m = rbm.m;
        let ay = &mut self.a_y[row * m..(row + 1) * m];
        if self.since_refresh[j] >= REFRESH {
            rbm.hidden_preactivation(y, ay);
            self.lin_y[row] = rbm.linear_term(y);
            return;
        }
        let step = rbm.value_scale();
        ay.copy_from_slice(&self.a[j * m..(j + 1) * m]);
        let mut lin = self.lin[j];
        for (i, (&xi, &yi)) in x.iter().zip(y).enumerate() {
            if xi != yi {
                let du = if yi == 1 { step } else { -step };
                lin += du * rbm.b[i];
                rbm.add_flip(ay, i, du);
            }
        }
        self.lin_y[row] = lin;
    }

    /// Chain `j` moved to the state of proposal row `row`.
    pub fn accept(&mut self, j: usize, row: usize) {
        let m = self.rbm.m;
        let (src, dst) = (&self.a_y[row * m..(row + 1) * m], &mut self.a[j * m..(j + 1) * m]);
        dst.copy_from_slice(src);
        self.lin[j] = self.lin_y[row];
        self.since_refresh[j] = if self.since_refresh[j] >= REFRESH { 0 } else { self.since_refresh[j] + 1 };
    }

    /// f and ∇f of proposal rows 0..rows into `f_y`, `g_y`: M exponentials per row and one
    /// matrix product σ(A') Wᵀ.
    pub fn evaluate(&mut self, rows: usize) {
        let (d, m) = (self.rbm.d, self.rbm.m);
        for r in 0..rows {
            let (ar, sr) = (&self.a_y[r * m..(r + 1) * m], &mut self.s_y[r * m..(r + 1) * m]);
            // e^{−|a_k|} for the row at once (vectorised), then σ and softplus from it in place.
            exp_neg_abs(ar, sr);
            // Σ_k softplus(a_k) = Σ_k max(a_k, 0) + ln Π_k (1 + e^{−|a_k|}): every factor is in
            // (1, 2], so a product of ≤ 1000 factors cannot overflow; one logarithm per chunk
            // instead of one log1p per unit (the log1p were 16% of an RBM DMALA step). Rounding:
            // ≤ 1 ulp per factor, ~1e−13 absolute on f. σ(a) shares the same e^{−|a|}.
            let (mut pos, mut logprod) = (0.0, 0.0);
            for (sc, ac) in sr.chunks_mut(1000).zip(ar.chunks(1000)) {
                let mut prod = 1.0;
                for (s, &a) in sc.iter_mut().zip(ac) {
                    let e = *s;
                    let one_e = 1.0 + e;
                    *s = if a >= 0.0 { 1.0 / one_e } else { e / one_e };
                    pos += a.max(0.0);
                    prod *= one_e;
                }
                logprod += prod.ln();
            }
            self.f_y[r] = self.lin_y[r] + pos + logprod;
        }
        if !self.w32.is_empty() {
            // Single precision: matrixmultiply's sgemm, ~3× its dgemm rate on this machine
            // (2.5 vs 7.5 ms for 100 × 500 × 784).
            for (o, &v) in self.s32[..rows * m].iter_mut().zip(&self.s_y[..rows * m]) {
                *o = v as f32;
            }
            self.rbm.hidden_times_wt(rows, &self.s32, &self.w32, &mut self.g32);
            let scale = self.rbm.value_scale();
            for (grow, prow) in self.g_y[..rows * d].chunks_mut(d).zip(self.g32.chunks(d)) {
                for ((o, &p), &bi) in grow.iter_mut().zip(prow).zip(self.rbm.b) {
                    *o = (scale * (bi + p as f64)) as f32 as f64;
                }
            }
            return;
        }
        self.rbm.hidden_times_wt(rows, &self.s_y, self.rbm.w, &mut self.g_y);
        self.rbm.finish_grads(&mut self.g_y[..rows * d]);
    }

    /// One exact single-site Gibbs update of chain `j` at coordinate `i` (state `x`, log-density
    /// `f_x`): the two candidates in the order of `block_gibbs::block_conditional` (x_i = 0,
    /// then 1) with log-weights f_x and f_x + flip difference, drawn with
    /// [`sample_logits`] (`logw`, `scratch`: reused buffers). Returns the new f and whether
    /// x_i flipped.
    #[allow(clippy::too_many_arguments)]
    pub fn site_update(
        &mut self,
        j: usize,
        x: &mut [u32],
        f_x: f64,
        i: usize,
        logw: &mut Vec<f64>,
        scratch: &mut Vec<f64>,
        rng: &mut ChainRng,
    ) -> (f64, bool) {
        let (rbm, m) = (self.rbm, self.rbm.m);
        let a = &mut self.a[j * m..(j + 1) * m];
        self.since_refresh[j] += 1;
        if self.since_refresh[j] as usize >= rbm.d {
            rbm.hidden_preactivation(x, a);
            self.since_refresh[j] = 0;
        }
        logw.clear();
        logw.resize(2, f_x);
        logw[1 - x[i] as usize] += rbm.flip_delta(a, x, i);
        let r = sample_logits(logw, scratch, rng);
        let flipped = r as u32 != x[i];
        if flipped {
            let du = rbm.value(r as u32) - rbm.value(x[i]);
            x[i] = r as u32;
            rbm.add_flip(a, i, du);
        }
        (logw[r], flipped)
    }
}

/// The binary DLP logits at `x` from the gradient `g` (ℓ_i = ½ g_i (1 − 2x_i) − `hinv`, the
/// expression of `DlpProposal::logits`), the flip probabilities σ(ℓ_i) (as
/// `dlp_core::math::sigmoid` forms them, from an e^{−|ℓ|} within 2 ulp of libm's, see
/// [`exp_neg_abs`]), and log Z_α(x) = Σ_i softplus(ℓ_i) formed as Σ max(ℓ_i, 0) + ln Π (1 + e^{−|ℓ_i|})
/// (factors in (1, 2], chunks of 1000: no overflow). One exponential per coordinate where
/// the generic path spends an exponential and a log1p here and another exponential in the
/// draw; log Z differs from the generic sum by rounding only (~1e−13).
pub fn binary_logits(x: &[u32], g: &[f64], hinv: f64, logits: &mut [f64], sig: &mut [f64]) -> f64 {
    for ((l, &xi), &gi) in logits.iter_mut().zip(x).zip(g) {
        let r = 1.0 - 2.0 * xi as f64;
        *l = 0.5 * gi * r - hinv;
    }
    // e^{−|ℓ_i|} into `sig` (vectorised), then σ and softplus from it in place.
    exp_neg_abs(logits, sig);
    let (mut pos, mut logprod) = (0.0, 0.0);
    for (lc, sc) in logits.chunks(1000).zip(sig.chunks_mut(1000)) {
        let mut prod = 1.0;
        for (&li, s) in lc.iter().zip(sc.iter_mut()) {
            let e = *s;
            *s = if li >= 0.0 { 1.0 / (1.0 + e) } else { e / (1.0 + e) };
            pos += li.max(0.0);
            prod *= 1.0 + e;
        }
        logprod += prod.ln();
    }
    pos + logprod
}

/// The draw thresholds of flip probabilities `sig` (see [`Threshold`]).
fn set_thresholds(out: &mut [Threshold], sig: &[f64]) {
    for (t, &p) in out.iter_mut().zip(sig) {
        *t = Threshold::of_probability(p);
    }
}

/// The DLP proposal on an RBM's bits as the fast path draws it: the generic binary logits
/// ([`binary_logits`]), drawn with the integer thresholds of [`Threshold`] (2 random bytes
/// per coordinate, 6 more on a 2⁻¹⁶ tie; the realised probability is ⌊σ·2⁶⁴⌋/2⁶⁴) instead
/// of one f64 uniform (8 bytes and a conversion per coordinate); log q is
/// [`DlpProposal::log_prob`].
pub struct RbmProposal {
    proposal: DlpProposal,
    /// 1/(2α).
    hinv: f64,
    /// Random bytes of one chain's draw (scratch).
    rbuf: Vec<u8>,
}

/// What an RBM DLP chain caches of its state.
pub struct RbmDlpCache {
    /// ½ g_i (1 − 2x_i) − 1/(2α) per coordinate.
    pub logits: Vec<f64>,
    /// σ(logits), the flip probabilities.
    sig: Vec<f64>,
    /// Draw thresholds of `sig`, set when a chain moves to the state (a rejected proposal's
    /// are never needed).
    thresholds: Vec<Threshold>,
    log_z: f64,
}

impl Proposal for RbmProposal {
    type Cache = RbmDlpCache;

    fn new_cache(&self, space: &Space) -> RbmDlpCache {
        let d = space.d;
        RbmDlpCache { logits: vec![0.0; d], sig: vec![0.0; d], thresholds: vec![Threshold::default(); d], log_z: 0.0 }
    }

    fn prepare(&self, _space: &Space, x: &[u32], grad: &[f64], c: &mut RbmDlpCache) {
        c.log_z = binary_logits(x, grad, self.hinv, &mut c.logits, &mut c.sig);
    }

    fn adopt(&self, c: &mut RbmDlpCache) {
        set_thresholds(&mut c.thresholds, &c.sig);
    }

    fn draw(&mut self, space: &Space, x: &[u32], c: &RbmDlpCache, rng: &mut ChainRng, y: &mut [u32]) -> u32 {
        // Flip i iff a uniform is below σ(ℓ_i), decided by the two-stage integer test.
        let bytes = &mut self.rbuf[..2 * space.d];
        rng.fill_bytes(bytes);
        let mut k = 0;
        for (((yi, &xi), t), r) in y.iter_mut().zip(x).zip(&c.thresholds).zip(bytes.chunks_exact(2)) {
            let r16 = u16::from_le_bytes([r[0], r[1]]);
            let flip = if r16 != t.hi { r16 < t.hi } else { (rng.next_u64() >> 16) < t.lo };
            *yi = xi ^ flip as u32;
            k += flip as u32;
        }
        k
    }

    fn log_prob(&self, space: &Space, from: &[u32], to: &[u32], c: &RbmDlpCache) -> f64 {
        self.proposal.log_prob(space, from, to, &c.logits, c.log_z)
    }
}

/// f and ∇f of the proposals from the chains' cached pre-activations ([`RbmCache`]): one
/// matrix product per step over the moving chains.
pub struct RbmEval<'t> {
    cache: RbmCache<'t>,
    d: usize,
    ys: Vec<u32>,
    /// Where the starting states' f and ∇f come from: the target's own evaluation (GWG's
    /// chains have always started from it) or, when None, the cache's first evaluation.
    start_target: Option<&'t dyn Target>,
}

impl<'t> RbmEval<'t> {
    /// The evaluator of GWG's chains at `x0` on an RBM: proposals from the cache, the
    /// starting states from `target`'s batched evaluation.
    pub fn starting_from_target(target: &'t dyn Target, rbm: RbmView<'t>, x0: &[u32]) -> Self {
        RbmEval { cache: RbmCache::new(rbm, x0), d: rbm.d, ys: vec![0; x0.len()], start_target: Some(target) }
    }
}

impl Evaluator for RbmEval<'_> {
    fn grad_len(&self) -> usize {
        self.d
    }

    /// [`RbmCache::with_precision`] has evaluated the starting states as rows 0..n (unless
    /// the target evaluates them, [`RbmEval::starting_from_target`]).
    fn start(&mut self, x0: &[u32], f: &mut [f64], grad: &mut [f64]) -> Result<(), EvalError> {
        if let Some(t) = self.start_target {
            return t.log_density_grad_batch(x0, f, grad);
        }
        let n = x0.len() / self.d;
        f.copy_from_slice(&self.cache.f_y[..n]);
        grad.copy_from_slice(&self.cache.g_y[..n * self.d]);
        Ok(())
    }

    fn current(&mut self, _x: &[u32], _b: Batch<'_>, _f: &mut [f64], _g: &mut [f64]) -> Result<(), EvalError> {
        // The RBM path runs with exact gradients (`Caching::Keep`); an RBM has no data items.
        Err(EvalError::NoData)
    }

    fn stage(&mut self, chain: usize, row: usize, x: &[u32], _f_x: f64, _grad_x: &[f64], y: &[u32]) {
        self.ys[row * self.d..(row + 1) * self.d].copy_from_slice(y);
        self.cache.propose(chain, row, x, y);
    }

    fn evaluate(&mut self, rows: usize, _batch: Batch<'_>) -> Result<(), EvalError> {
        self.cache.evaluate(rows);
        Ok(())
    }

    fn row(&self, r: usize) -> (&[u32], f64, &[f64]) {
        let d = self.d;
        (&self.ys[r * d..(r + 1) * d], self.cache.f_y[r], &self.cache.g_y[r * d..(r + 1) * d])
    }

    fn accept(&mut self, chain: usize, row: usize) {
        self.cache.accept(chain, row);
    }
}

/// DULA / DMALA chains on an RBM with cached pre-activations: the one MH kernel
/// ([`crate::mh`]) with the RBM's proposal draw and evaluator.
pub type RbmDlpChains<'t> = MhChains<'t, RbmProposal, RbmEval<'t>>;

/// Chains started at `x0` (n × d bits) on a target with the RBM capability; `proposal`
/// must have no preconditioner.
pub fn rbm_chains<'t>(
    target: &'t dyn Target,
    proposal: DlpProposal,
    mh: bool,
    x0: &[u32],
) -> Result<RbmDlpChains<'t>, SamplerError> {
    let name = if mh { "dmala" } else { "dula" };
    let rbm = target.capabilities().rbm.ok_or_else(|| SamplerError::Unsupported {
        sampler: name.into(),
        message: "the RBM kernel needs a target with the RBM capability".into(),
    })?;
    rbm_chains_from_view(target.space(), rbm, proposal, mh, x0)
}

/// [`rbm_chains`] from the target's space and RBM view.
pub(crate) fn rbm_chains_from_view<'t>(
    space: &'t Space,
    rbm: RbmView<'t>,
    proposal: DlpProposal,
    mh: bool,
    x0: &[u32],
) -> Result<RbmDlpChains<'t>, SamplerError> {
    space.check_states(x0).map_err(SamplerError::BadInitialState)?;
    let name = if mh { "dmala" } else { "dula" };
    proposal.check_space(space).map_err(|message| SamplerError::BadParameter { sampler: name.into(), message })?;
    let d = rbm.d;
    let n = x0.len() / d;
    if n == 0 {
        return Err(SamplerError::BadInitialState("no chains".into()));
    }
    let cache = RbmCache::with_precision(rbm, x0, proposal.has_f32_gradient());
    let eval = RbmEval { cache, d, ys: vec![0; n * d], start_target: None };
    let hinv = proposal.half_inv_step(0);
    let proposal = RbmProposal { proposal, hinv, rbuf: vec![0; 2 * d] };
    MhChains::new(space, proposal, eval, mh, Caching::Keep, x0).map_err(start_error)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::dlp::DlpSampler;
    use crate::gibbs::testkit::empirical_check;
    pub(crate) use dlp_core::StepInfo;
    use dlp_core::TargetExt;
    use dlp_core::{DomainKind, Sampler, chain_rngs};
    use dlp_models::Rbm;

    fn tiny_rbm(domain: DomainKind) -> Rbm {
        Rbm::new(domain, 3, 2, vec![0.9, -0.4, -0.7, 0.5, 0.3, 1.1], vec![0.2, -0.3, 0.1], vec![-0.5, 0.4]).unwrap()
    }

    #[test]
    fn the_fast_path_is_taken_for_rbms() {
        // The capability is declared by the model, forwarded by `Model` and hidden by `Generic`.
        let r = tiny_rbm(DomainKind::Binary);
        assert!(r.capabilities().rbm.is_some());
        assert!(crate::fast::Generic(&r).capabilities().rbm.is_none());
        let model = dlp_models::Model::from(r.clone());
        let view = model.capabilities().rbm.expect("forwarded by Model");
        assert_eq!((view.d, view.m, view.w, view.spin), (3, 2, r.view().w, false));
        let p = DlpProposal::new(0.6, None).unwrap();
        assert!(crate::fast::dlp_fast_path(&p, true, &model, &[0; 3]).unwrap().is_some());
        assert!(crate::fast::dlp_fast_path(&p, true, &crate::fast::Generic(&r), &[0; 3]).unwrap().is_none());
        assert!(matches!(
            rbm_chains(&crate::fast::Generic(&r), p, true, &[0; 3]),
            Err(SamplerError::Unsupported { .. })
        ));
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
    fn infinite_step_size_rows_match_the_generic_exact_rows() {
        // α = ∞ (the App. D ablation, flip probability σ(½ g_i (1 − 2x_i)); `000-appD` runs it
        // through this path): the same check as above, 4 rows × ≤ 8 states × 2 samplers, so
        // the family-wise false-failure rate is < 4e−5. The generic α = ∞ row is checked
        // against the spec's numbers in `dlp::tests`.
        let r = tiny_rbm(DomainKind::Binary);
        let inf = f64::INFINITY;
        for (sampler, seed) in [(DlpSampler::dula(inf).unwrap(), 101), (DlpSampler::dmala(inf).unwrap(), 102)] {
            for x in [[0, 0, 0], [1, 0, 1], [0, 1, 1], [1, 1, 1]] {
                empirical_check(&sampler, &r, &x, 40_000, seed + 10 * x.iter().sum::<u32>() as u64);
            }
        }
    }

    /// A d × m RBM with weights and biases uniform in (−1, 1) from a fixed LCG (tests only).
    pub(crate) fn random_rbm(dom: DomainKind, d: usize, m: usize, seed: u64) -> Rbm {
        let mut st = seed;
        let mut next = || {
            st = st.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((st >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        };
        let w: Vec<f64> = (0..d * m).map(|_| next()).collect();
        let b: Vec<f64> = (0..d).map(|_| next()).collect();
        let c: Vec<f64> = (0..m).map(|_| next()).collect();
        Rbm::new(dom, d, m, w, b, c).unwrap()
    }

    /// Runs `steps` steps of `sampler` on `r` from `x0` and checks after every step that the
    /// cached f equals the model's f (1e−10); returns the number of coordinate changes.
    pub(crate) fn check_cached_f(sampler: &dyn Sampler, r: &Rbm, x0: &[u32], steps: usize) -> u64 {
        let d = r.d();
        let n = x0.len() / d;
        let mut ch = sampler.start(r, x0).unwrap();
        let mut rngs = chain_rngs(3, 0, n);
        let mut info = vec![StepInfo::default(); n];
        let mut moved = 0;
        for _ in 0..steps {
            ch.step(&mut rngs, &mut info);
            moved += info.iter().map(|i| i.n_changed as u64).sum::<u64>();
            for (y, f) in ch.positions().chunks(d).zip(ch.log_densities().unwrap()) {
                assert!((r.log_density(y).unwrap() - f).abs() < 1e-10, "{}: stale f", sampler.name());
            }
        }
        moved
    }

    /// Chains stepped together and one at a time (same streams) agree bit for bit: the rows
    /// of the batched matrix product do not interact (thread-count independence).
    pub(crate) fn check_chains_do_not_interact(sampler: &dyn Sampler, r: &Rbm, x0: &[u32], steps: usize) {
        let d = r.d();
        let n = x0.len() / d;
        let mut all = sampler.start(r, x0).unwrap();
        let mut rngs = chain_rngs(9, 0, n);
        let mut info = vec![StepInfo::default(); n];
        for _ in 0..steps {
            all.step(&mut rngs, &mut info);
        }
        for j in 0..n {
            let mut one = sampler.start(r, &x0[j * d..(j + 1) * d]).unwrap();
            let mut rng = chain_rngs(9, j, 1);
            let mut inf = [StepInfo::default()];
            for _ in 0..steps {
                one.step(&mut rng, &mut inf);
            }
            assert_eq!(one.positions(), &all.positions()[j * d..(j + 1) * d], "{}: chain {j}", sampler.name());
            assert_eq!(one.log_densities().unwrap()[0], all.log_densities().unwrap()[j]);
        }
    }

    fn f32_sampler(name: &str, alpha: f64) -> Box<dyn Sampler> {
        crate::build_sampler(name, &crate::SamplerParams { step_size: Some(alpha), ..Default::default() }).unwrap()
    }

    #[test]
    fn single_precision_variants_follow_their_exact_rows() {
        // The f32 product path against the generic `transition_row` of dula-f32 / dmala-f32
        // (gradient rounded to f32 there; the two differ by f32 rounding only, ~1e−7, far
        // below what 40,000 chains resolve). Same 5σ + 3/n bound and family-wise rate
        // (< 1e−4) as `one_step_rows_match_the_generic_exact_rows`.
        for dom in [DomainKind::Binary, DomainKind::Spin] {
            let r = tiny_rbm(dom);
            for (name, seed) in [("dula-f32", 5), ("dmala-f32", 6)] {
                let sampler = f32_sampler(name, 0.6);
                for x in [[0, 0, 0], [1, 0, 1], [0, 1, 1], [1, 1, 1]] {
                    empirical_check(sampler.as_ref(), &r, &x, 40_000, seed + 10 * x.iter().sum::<u32>() as u64);
                }
            }
        }
    }

    #[test]
    fn single_precision_gradient_is_the_rounded_model_gradient() {
        // After each step the cached proposal logits must be those of the f32-rounded model
        // gradient up to the f32 product's own rounding (relative 1e−5 of the gradient's
        // scale), and f must stay exact (1e−10): the f32 path only touches the proposal.
        let r = random_rbm(DomainKind::Binary, 30, 20, 4242);
        let sampler = f32_sampler("dmala-f32", 0.5);
        let x0: Vec<u32> = (0..6 * 30).map(|i| (i % 4 == 1) as u32).collect();
        let moved = check_cached_f(sampler.as_ref(), &r, &x0, 300);
        assert!(moved > 100, "the chains hardly moved ({moved})");
        let ch = rbm_chains(&r, DlpProposal::new(0.5, None).unwrap().single_precision_gradient(), true, &x0).unwrap();
        let mut g = vec![0.0; 30];
        for (j, x) in x0.chunks(30).enumerate() {
            r.log_density_grad(x, &mut g).unwrap();
            let scale = g.iter().fold(1.0f64, |m, v| m.max(v.abs()));
            for i in 0..30 {
                let want = 0.5 * (g[i] as f32 as f64) * (1.0 - 2.0 * x[i] as f64) - 1.0;
                let got = ch.cache(j).logits[i];
                assert!((got - want).abs() < 1e-5 * scale, "chain {j} site {i}: {got} vs {want}");
                let gy = ch.grads()[j * 30 + i];
                assert_eq!(gy as f32 as f64, gy, "chain {j} site {i}: gradient not rounded to f32");
            }
        }
    }

    #[test]
    fn single_precision_chains_do_not_interact() {
        let r = random_rbm(DomainKind::Binary, 20, 9, 778);
        let x0: Vec<u32> = (0..13 * 20).map(|i| (i % 5 < 2) as u32).collect();
        for name in ["dula-f32", "dmala-f32"] {
            check_chains_do_not_interact(f32_sampler(name, 0.5).as_ref(), &r, &x0, 15);
        }
    }

    #[test]
    fn cached_preactivations_stay_exact_over_many_steps() {
        // Many coordinates flip per step (α = 1); 600 steps cross several refreshes.
        for dom in [DomainKind::Binary, DomainKind::Spin] {
            let r = random_rbm(dom, 12, 7, 12345);
            for sampler in [DlpSampler::dula(1.0).unwrap(), DlpSampler::dmala(1.0).unwrap()] {
                let x0: Vec<u32> = (0..8 * 12).map(|i| (i % 3 == 0) as u32).collect();
                let moved = check_cached_f(&sampler, &r, &x0, 600);
                assert!(moved > 1000, "{}: the chains hardly moved ({moved})", sampler.name());
            }
        }
    }

    #[test]
    fn rbm_chains_do_not_interact() {
        let r = random_rbm(DomainKind::Binary, 20, 9, 777);
        let x0: Vec<u32> = (0..13 * 20).map(|i| (i % 5 < 2) as u32).collect();
        for sampler in [DlpSampler::dula(0.5).unwrap(), DlpSampler::dmala(0.5).unwrap()] {
            check_chains_do_not_interact(&sampler, &r, &x0, 15);
        }
    }
}
