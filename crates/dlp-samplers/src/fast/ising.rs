//! DULA and DMALA on a lattice Ising model with one coupling w and one field b (a target whose
//! Ising capability, [`IsingView`], carries a lattice: `dlp_models::IsingModel` built from a
//! lattice, e.g. `IsingModel::paper_lattice`), spin or binary. The view is read once, at
//! `start`, into the class tables and neighbour lists below.
//!
//! The same kernel as [`crate::dlp`] (spec `reproduction.md` §1.4, §1.8), specialised:
//!
//! * **Classes.** The flip logit ℓ_i = ½ g_i (1 − 2x_i) − 1/(2α) of site i depends only on
//!   its bit x_i, its degree and the number `up` of neighbours whose bit is 1: the local
//!   field is b + w·Σ_j u_j with Σ_j u_j = 2·up − deg (spin) or up (binary). So every site
//!   falls into one of a few classes (10 on a 2-D torus) and ℓ, softplus(ℓ), the flip
//!   threshold and the site's share of f are tabulated per class, in f64 from the formula
//!   the generic path uses (one rounding for w·Σu instead of one per neighbour, so the two
//!   agree to an ulp or so; the tests compare them to 1e-12).
//! * **Flip decisions** compare uniform integers with T = ⌊p·2⁶⁴⌋ in two stages (see
//!   [`super::Threshold`]), so the realised flip probability is exactly T/2⁶⁴. Torus (DULA
//!   and DMALA proposals alike): one random byte per site against the top byte of T; on a
//!   tie (probability 2⁻⁸) 56 more bits (`next_u64() >> 8`) against the low 56 bits. Per
//!   chain and step: R·(C+2) − 2 bytes from `rngs[j]` (`fill_bytes`, one per position of the
//!   flattened padded range), then one `next_u64` per tie in site order, then (DMALA, if the
//!   proposal moves) the MH uniform. The CSR path: 16-bit first stage, 48 more bits on a tie
//!   (2·d bytes, then one `next_u64` per tie in site order, then the MH uniform as above).
//! * **2-D periodic lattices with both sides ≥ 3** are stored per chain as a (R+2)×(C+2)
//!   grid of bytes with ghost rows/columns, so a row of neighbour counts is four shifted
//!   slices and the row kernel vectorises (AVX2 when the CPU has it, chosen at run time).
//!   Every other lattice (L = 2, open boundaries, 1-D, 3-D) takes a scalar path over the
//!   CSR neighbour lists.
//! * **DMALA** needs, for the proposal y and its flip set M, the per-class differences
//!   H' − H (class histogram at y minus at x) and R − F (classes at y minus classes at x of
//!   the sites in M): f(y) − f(x) = ½w·ΔE₂ + b·ΔM with the integer statistics
//!   E₂ = Σ_i u_i Σ_{j~i} u_j and M = Σ_i u_i, and
//!   log q(x|y) − log q(y|x) = Σ_k (R_k − F_k) ℓ_k − Σ_k (H'_k − H_k) softplus(ℓ_k).
//!   No log-density or gradient is evaluated, and H is cached per chain. Since ℓ_k + 1/(2α)
//!   = ½c(b·s_k + w·s_k·Σu_k) with s = 1 − 2x (c = 2 spin, 1 binary), the R − F term needs
//!   only Σ_k (H'_k − H_k) s_k (a site that does not flip keeps s) and one integer sum, of
//!   s·Σu at y minus at x over the flipped sites. Torus: the proposal is the DULA kernel;
//!   then **one** vectorised pass over x and y computes the classes at y into per-lane byte
//!   counters (H', flushed before they can overflow) and the flipped sites' integer sum by
//!   `pshufb` + `sad` — no class cache, no flip list; an accepted move updates H, (E₂, M),
//!   f and the positions. CSR: the class of every site is cached too; only the flipped
//!   sites and their neighbours can change class, so small flip sets are visited once each
//!   at y (`flip_set_stats`), large ones take a full pass.
//!
//! A chain's padded grid is authoritative; a step writes the new grid into a spare buffer and
//! swaps. DMALA keeps `positions()` (`n × d` u32) up to date in place; DULA converts on
//! demand (at most once per step, buffer reused), since callers read positions less often
//! than they step. `log_densities()` is computed on demand for DULA and maintained for
//! DMALA. `StepInfo` is the generic path's: a proposal that moves counts one density and one
//! gradient evaluation; a proposal that stays is not evaluated and (DMALA) draws no MH
//! uniform.

use super::Threshold;
use crate::proposal::mh_accept;
use dlp_core::capability::IsingView;
use dlp_core::math::{sigmoid, softplus};
use dlp_core::{Batch, ChainRng, Chains, EvalError, SamplerError, Space, StepInfo, Target};
use rand::Rng;
use std::cell::{Cell, OnceCell};

/// Number of classes on the 2-D torus: bit × number of up neighbours (0..=4).
const TORUS_CLASSES: usize = 10;

/// The Ising capability of `target` if it qualifies for this fast path: couplings built from
/// a lattice (one coupling for every pair) with the same field at every site.
pub fn qualifying_model(target: &dyn Target) -> Option<IsingView<'_>> {
    let m = target.capabilities().ising?;
    let spec = m.lattice?;
    let b = *m.fields.first()?;
    let uniform = m.fields.iter().all(|&v| v == b) && m.weights.iter().all(|&v| v == spec.coupling);
    // Class indices are bytes: 2·(D+1)² ≤ 255 needs degree D ≤ 10.
    let small_degree = m.offsets.windows(2).all(|w| w[1] - w[0] <= 10);
    (uniform && small_degree).then_some(m)
}

enum Geometry {
    /// 2-D periodic R × C lattice, R, C ≥ 3: padded grid, class = x·5 + up.
    Torus { rows: usize, cols: usize },
    /// Anything else: class = x·(D+1)² + deg·(D+1) + up, D the largest degree.
    Csr(Csr),
}

/// Neighbour lists of a lattice that is not a padded torus; grid index = site index.
struct Csr {
    offsets: Vec<u32>,
    nbrs: Vec<u32>,
    deg: Vec<u8>,
    dmax: usize,
}

impl Geometry {
    fn grid_len(&self, d: usize) -> usize {
        match self {
            Geometry::Torus { rows, cols } => (rows + 2) * (cols + 2),
            Geometry::Csr(_) => d,
        }
    }

    fn n_classes(&self) -> usize {
        match self {
            Geometry::Torus { .. } => TORUS_CLASSES,
            Geometry::Csr(g) => 2 * (g.dmax + 1) * (g.dmax + 1),
        }
    }

    /// (bit, degree, up) of a class index.
    fn class_parts(&self, k: usize) -> (u32, u32, u32) {
        match self {
            Geometry::Torus { .. } => ((k / 5) as u32, 4, (k % 5) as u32),
            Geometry::Csr(g) => {
                let s = g.dmax + 1;
                ((k / (s * s)) as u32, ((k / s) % s) as u32, (k % s) as u32)
            }
        }
    }
}

/// Per-class quantities, in f64 from the generic formula.
struct Classes {
    /// g_i (1 − 2x_i) of a site of the class (the first-order change of f by its flip); the
    /// logit is β times it minus 1/(2α) ([`IsingDlpChains::set_proposal`]).
    gr: Vec<f64>,
    logit: Vec<f64>,
    softplus: Vec<f64>,
    thr: Vec<Threshold>,
    /// u_i · Σ_{j~i} u_j and u_i (integers) of a site of the class.
    e2: Vec<i64>,
    m: Vec<i64>,
    /// s = 1 − 2x_i and s·Σ_{j~i} u_j of a site of the class: ℓ + 1/(2α) = ½c(b·s + w·s·Σu)
    /// (c = 2 spin, 1 binary), so Σ_k (R_k − F_k) ℓ_k needs only the two integer sums
    /// Σ_k (R_k − F_k) s_k and Σ_k (R_k − F_k) (s·Σu)_k (R and F have the same total). The
    /// first is Σ_k (H'_k − H_k) s_k, since a site that does not flip keeps its s.
    s: Vec<i64>,
    snb: Vec<i64>,
    /// β·c (½c for the paper's DLP).
    half_c: f64,
    /// c = 2 spin, 1 binary.
    c: f64,
    /// The logits are DLP's, linear in (s, s·Σu), so Σ_k (R_k − F_k) ℓ_k comes from two
    /// integer sums; false for DLMC's logits, which need the per-class R − F (CSR path).
    linear: bool,
}

/// Running DULA/DMALA chains on a uniform lattice Ising model (see the module doc).
pub struct IsingDlpChains {
    geo: Geometry,
    mh: bool,
    n: usize,
    d: usize,
    gl: usize,
    w: f64,
    b: f64,
    cl: Classes,
    /// Torus: 1 at interior positions of the flattened padded range, 0 at ghost columns.
    interior: Vec<u8>,
    avx2: bool,
    /// Torus proposals: top byte of T and its low 56 bits per class (8-bit first stage).
    t8: [u8; TORUS_CLASSES],
    lo56: [u64; TORUS_CLASSES],
    /// Torus DMALA: `pshufb` table of the classes' s·Σu (see [`Classes`]).
    snb16: [i8; 16],
    /// Bits per chain (padded grid on the torus), one buffer of length gl per chain, so an
    /// accepted proposal is a buffer swap with `next`.
    grid: Vec<Vec<u8>>,
    /// The proposal of the chain being stepped (every byte rewritten by a step that uses it).
    next: Vec<u8>,
    /// DMALA: class histogram of the current state, n × classes; CSR DMALA: class of every
    /// site at the current state, n × d.
    hist: Vec<u32>,
    cls: Vec<u8>,
    /// CSR DMALA: class at x of each flipped site, 255 elsewhere (length d).
    tag: Vec<u8>,
    /// CSR DMALA, large flip sets: the classes at the proposal.
    cls_next: Vec<u8>,
    scratch: FlipScratch,
    e2: Vec<i64>,
    mm: Vec<i64>,
    f: Vec<f64>,
    f_lazy: OnceCell<Vec<f64>>,
    /// DMALA: positions kept in place (only flipped sites rewritten on an accepted move).
    pos: Vec<u32>,
    /// DULA: positions converted from the grids on demand, invalidated by `step`; the
    /// buffer of an invalidated conversion is kept in `pos_spare` and reused.
    pos_lazy: OnceCell<Vec<u32>>,
    pos_spare: Cell<Vec<u32>>,
    rbuf: Vec<u8>,
}

/// DMALA statistics of one proposal, and the CSR path's flip-set bookkeeping.
#[derive(Default)]
struct FlipScratch {
    /// CSR: flipped sites, in site order.
    flipped: Vec<u32>,
    /// Epoch stamp per site, to visit each site of the flip set's neighbourhood once.
    seen: Vec<u32>,
    epoch: u32,
    /// Sites whose class differs between x and y, with their class at y.
    changed: Vec<(u32, u8)>,
    /// H' − H (class histogram at y minus at x); CSR: R − F (classes at y minus classes at
    /// x of the flipped sites).
    dh: Vec<i64>,
    dr: Vec<i64>,
    /// Σ_k (R_k − F_k) (s·Σu)_k (see [`Classes`]).
    sb: i64,
    /// Σ_k (R_k − F_k) ℓ_k, for non-linear logits (DLMC).
    lr: f64,
}

impl IsingDlpChains {
    /// Starts chains at the rows of `x0` for DLP with step size α (`half_inv_step` =
    /// 1/(2α), 0 for α = ∞); `mh` = DMALA. `target` must satisfy [`qualifying_model`].
    pub fn new(target: &dyn Target, half_inv_step: f64, mh: bool, x0: &[u32]) -> Result<Self, SamplerError> {
        let model = qualifying_model(target).ok_or_else(|| SamplerError::Unsupported {
            sampler: if mh { "dmala" } else { "dula" }.into(),
            message: "the lattice kernel needs a uniform lattice Ising model".into(),
        })?;
        Self::from_view(target.space(), &model, half_inv_step, mh, x0)
    }

    /// [`IsingDlpChains::new`] from the qualifying view and the target's space.
    pub(crate) fn from_view(
        space: &Space,
        model: &IsingView<'_>,
        half_inv_step: f64,
        mh: bool,
        x0: &[u32],
    ) -> Result<Self, SamplerError> {
        Self::with_geometry(space, model, half_inv_step, mh, x0, false)
    }

    /// DLMC (`dlmc` = `mh`, `dlmcf`) with time h on the lattice kernel: the same per-class
    /// machinery with the per-class flip probabilities of [`crate::dlmc`]
    /// (p = σ(δ)(1 − e^{−2h cosh(δ/2)}), δ the class's linearised change of f). Those logits
    /// are not linear in the neighbour sum, so the MH ratio needs the per-class R − F of the
    /// flip set: the CSR path, on every lattice (the torus stencil kernel counts only H').
    pub(crate) fn dlmc(
        space: &Space,
        model: &IsingView<'_>,
        h: f64,
        mh: bool,
        x0: &[u32],
    ) -> Result<Self, SamplerError> {
        let mut c = Self::with_geometry(space, model, 0.0, mh, x0, true)?;
        let cl = &mut c.cl;
        for k in 0..cl.gr.len() {
            let (mut log_p, mut log_keep) = ([0.0], [0.0]);
            // flip_log_probs takes x and ∂f/∂x; (x = 0, g = δ) gives δ = (1 − 2x) g = δ.
            crate::dlmc::flip::flip_log_probs(h, &[0], &[cl.gr[k]], &mut log_p, &mut log_keep);
            cl.logit[k] = log_p[0] - log_keep[0];
            cl.softplus[k] = -log_keep[0];
            cl.thr[k] = Threshold::of_probability(log_p[0].exp());
        }
        cl.linear = false;
        Ok(c)
    }

    fn with_geometry(
        space: &Space,
        model: &IsingView<'_>,
        half_inv_step: f64,
        mh: bool,
        x0: &[u32],
        force_csr: bool,
    ) -> Result<Self, SamplerError> {
        space.check_states(x0).map_err(SamplerError::BadInitialState)?;
        let d = space.d;
        let n = x0.len() / d;
        if n == 0 {
            return Err(SamplerError::BadInitialState("no chains".into()));
        }
        let spec = model.lattice.expect("qualifying_model checked the lattice");
        let geo = if !force_csr && spec.periodic && spec.shape.len() == 2 && spec.shape[0] >= 3 && spec.shape[1] >= 3 {
            Geometry::Torus { rows: spec.shape[0], cols: spec.shape[1] }
        } else {
            let offsets: Vec<u32> = model.offsets.iter().map(|&o| o as u32).collect();
            let deg: Vec<u8> = offsets.windows(2).map(|w| (w[1] - w[0]) as u8).collect();
            let dmax = deg.iter().copied().max().unwrap_or(0) as usize;
            Geometry::Csr(Csr { offsets, nbrs: model.neighbours.to_vec(), deg, dmax })
        };
        let (w, b, spin) = (spec.coupling, model.fields[0], model.spin);
        let nc = geo.n_classes();
        let mut cl = Classes {
            gr: vec![0.0; nc],
            logit: vec![0.0; nc],
            softplus: vec![0.0; nc],
            thr: vec![Threshold::default(); nc],
            e2: vec![0; nc],
            m: vec![0; nc],
            s: vec![0; nc],
            snb: vec![0; nc],
            half_c: 0.0,
            c: if spin { 2.0 } else { 1.0 },
            linear: true,
        };
        for k in 0..nc {
            let (x, deg, up) = geo.class_parts(k);
            let (u, nsum) = if spin { (2 * x as i64 - 1, 2 * up as i64 - deg as i64) } else { (x as i64, up as i64) };
            // The generic path: g_i = (du/dx)·(b + Σ_j w u_j), ℓ = β g (1 − 2x) − 1/(2α).
            let g = if spin { 2.0 } else { 1.0 } * (b + w * nsum as f64);
            cl.gr[k] = g * (1.0 - 2.0 * x as f64);
            cl.e2[k] = u * nsum;
            cl.m[k] = u;
            cl.s[k] = 1 - 2 * x as i64;
            cl.snb[k] = cl.s[k] * nsum;
        }
        let (t8, lo56) = ([0u8; TORUS_CLASSES], [0u64; TORUS_CLASSES]);
        let mut snb16 = [0i8; 16];
        let mut interior = Vec::new();
        if let Geometry::Torus { rows, cols } = geo {
            for (t, &v) in snb16.iter_mut().zip(&cl.snb) {
                *t = v as i8;
            }
            let w = cols + 2;
            interior = (0..rows * w - 2).map(|q| u8::from((q + 1) % w != 0 && (q + 1) % w != w - 1)).collect();
        }
        let gl = geo.grid_len(d);
        let (rlen, csr_mh) = match geo {
            Geometry::Torus { rows, cols } => (rows * (cols + 2) - 2, false),
            Geometry::Csr(_) => (2 * d, mh),
        };
        let mut c = IsingDlpChains {
            mh,
            n,
            d,
            gl,
            w,
            b,
            interior,
            t8,
            lo56,
            snb16,
            avx2: has_avx2(),
            grid: vec![vec![0; gl]; n],
            next: vec![0; gl],
            cls: if csr_mh { vec![0; n * d] } else { Vec::new() },
            hist: if mh { vec![0; n * nc] } else { Vec::new() },
            tag: if csr_mh { vec![u8::MAX; d] } else { Vec::new() },
            cls_next: if csr_mh { vec![0; d] } else { Vec::new() },
            scratch: FlipScratch::new(if csr_mh { d } else { 0 }, nc),
            e2: vec![0; n],
            mm: vec![0; n],
            f: vec![0.0; n],
            f_lazy: OnceCell::new(),
            pos: if mh { x0.to_vec() } else { Vec::new() },
            pos_lazy: OnceCell::new(),
            pos_spare: Cell::new(Vec::new()),
            rbuf: vec![0; rlen],
            cl,
            geo,
        };
        c.set_proposal(half_inv_step, 0.5);
        let (mut cls, mut h) = (vec![0u8; d], vec![0u32; nc]);
        for j in 0..n {
            let g = &mut c.grid[j];
            scatter(&c.geo, &x0[j * d..(j + 1) * d], g);
            if mh {
                classes_of(&c.geo, g, &mut cls);
                h.fill(0);
                count_into(&cls, &mut h);
                let (e2, m) = stats(&c.cl, &h);
                c.e2[j] = e2;
                c.mm[j] = m;
                c.f[j] = 0.5 * w * e2 as f64 + b * m as f64;
                c.hist[j * nc..(j + 1) * nc].copy_from_slice(&h);
                if csr_mh {
                    c.cls[j * d..(j + 1) * d].copy_from_slice(&cls);
                }
            }
        }
        Ok(c)
    }

    /// Sets the proposal to step 1/(2α) = `half_inv_step` and gradient weight β (½ for the
    /// paper's DLP; cyclical DLP changes both every step, `crate::acs`): only the per-class
    /// logits, their softplus and flip thresholds and the torus tables change (tens of
    /// classes); the chains' states, class histograms and statistics do not depend on them.
    pub fn set_proposal(&mut self, half_inv_step: f64, beta: f64) {
        let cl = &mut self.cl;
        for k in 0..cl.gr.len() {
            let l = beta * cl.gr[k] - half_inv_step;
            cl.logit[k] = l;
            cl.softplus[k] = softplus(l);
            cl.thr[k] = Threshold::of_probability(sigmoid(l));
        }
        cl.half_c = beta * cl.c;
        if !self.interior.is_empty() {
            for (k, t) in cl.thr.iter().enumerate() {
                self.t8[k] = (t.bits() >> 56) as u8;
                self.lo56[k] = t.bits() & LOW56;
            }
        }
    }

    fn f_of(&self, e2: i64, m: i64) -> f64 {
        0.5 * self.w * e2 as f64 + self.b * m as f64
    }

    /// The flip probability T/2⁶⁴ the kernel realises for every site of `x` (bits, length d),
    /// for tests against the generic logits.
    pub fn flip_probabilities(&self, x: &[u32]) -> Vec<f64> {
        let mut g = vec![0; self.gl];
        scatter(&self.geo, x, &mut g);
        let mut cls = vec![0; self.d];
        classes_of(&self.geo, &g, &mut cls);
        cls.iter().map(|&k| self.cl.thr[k as usize].probability()).collect()
    }

    /// The DMALA log acceptance ratio this kernel computes for the move x → y (bits), for
    /// tests against the generic [`crate::dlp::proposal::log_accept_ratio`]. It runs the step's own
    /// statistics code: on the torus the fused pass the step uses (AVX2 or portable, as
    /// selected for these chains), on the CSR path both the flip-set and the full-pass
    /// statistics, which must agree since the step takes either by flip-set size.
    pub fn log_accept_ratio(&self, x: &[u32], y: &[u32]) -> f64 {
        let nc = self.geo.n_classes();
        let (mut gx, mut gy) = (vec![0; self.gl], vec![0; self.gl]);
        scatter(&self.geo, x, &mut gx);
        scatter(&self.geo, y, &mut gy);
        let mut sc = FlipScratch::new(self.d, nc);
        match &self.geo {
            &Geometry::Torus { rows, cols } => {
                let mut cx = vec![0; self.d];
                classes_of(&self.geo, &gx, &mut cx);
                let mut h = vec![0; nc];
                count_into(&cx, &mut h);
                let (hy, sb) = torus_stats(self.avx2, &gx, &gy, &self.interior, &self.snb16, rows, cols);
                for ((dh, &a), &b) in sc.dh.iter_mut().zip(&hy).zip(&h) {
                    *dh = a as i64 - b as i64;
                }
                sc.sb = sb;
            }
            Geometry::Csr(g) => {
                let mut cx = vec![0; self.d];
                csr_classes(g, &gx, &mut cx);
                let tag: Vec<u8> = (0..self.d).map(|s| if x[s] != y[s] { cx[s] } else { u8::MAX }).collect();
                collect_flipped(&tag, &mut sc.flipped);
                let mut h = vec![0; nc];
                count_into(&cx, &mut h);
                let mut full = FlipScratch::new(self.d, nc);
                full.flipped = sc.flipped.clone();
                full_set_stats(g, &gy, &cx, &h, &mut vec![0; self.d], &mut full);
                flip_set_stats(g, &gy, &cx, &mut sc);
                assert!((&sc.dh, &sc.dr) == (&full.dh, &full.dr), "flip-set and full-pass statistics differ");
                sc.fold_dr(&self.cl);
            }
        }
        self.ratio(&sc).0
    }

    /// (A, ΔE₂, ΔM) from the proposal's statistics (H' − H and the two sums of R − F).
    fn ratio(&self, sc: &FlipScratch) -> (f64, i64, i64) {
        let (mut de2, mut dm, mut sa, mut lq) = (0i64, 0i64, 0i64, 0.0);
        for (k, &dh) in sc.dh.iter().enumerate() {
            de2 += dh * self.cl.e2[k];
            dm += dh * self.cl.m[k];
            sa += dh * self.cl.s[k];
            if dh != 0 {
                lq -= dh as f64 * self.cl.softplus[k];
            }
        }
        lq += if self.cl.linear { self.cl.half_c * (self.b * sa as f64 + self.w * sc.sb as f64) } else { sc.lr };
        let df = 0.5 * self.w * de2 as f64 + self.b * dm as f64;
        (crate::dlp::proposal::log_accept_ratio(0.0, df, 0.0, lq), de2, dm)
    }

    /// The torus proposal of chain j (DULA's step, DMALA's proposal) into `next`, ghosts
    /// refreshed. Returns the number of flips.
    fn torus_propose(&mut self, j: usize, rows: usize, cols: usize, rng: &mut ChainRng) -> u32 {
        let w = cols + 2;
        let len = rows * w - 2;
        let r8 = &mut self.rbuf[..len];
        rng.fill_bytes(r8);
        let flips = torus_kernel(
            self.avx2,
            &self.grid[j],
            &mut self.next,
            r8,
            &self.interior,
            &self.t8,
            &self.lo56,
            len,
            w,
            rng,
        );
        refresh_ghosts(&mut self.next, rows, cols);
        flips
    }

    /// DULA: one step of chain j. Returns the number of flips.
    fn dula_chain(&mut self, j: usize, rng: &mut ChainRng) -> u32 {
        let d = self.d;
        let flips = match &self.geo {
            &Geometry::Torus { rows, cols } => self.torus_propose(j, rows, cols, rng),
            Geometry::Csr(Csr { offsets, nbrs, deg, dmax }) => {
                let x = &self.grid[j];
                rng.fill_bytes(&mut self.rbuf[..2 * d]);
                let s = dmax + 1;
                let mut flips = 0;
                for i in 0..d {
                    let up: u32 =
                        nbrs[offsets[i] as usize..offsets[i + 1] as usize].iter().map(|&q| x[q as usize] as u32).sum();
                    let k = x[i] as usize * s * s + deg[i] as usize * s + up as usize;
                    let r16 = u16::from_le_bytes([self.rbuf[2 * i], self.rbuf[2 * i + 1]]);
                    let flip = decide(r16, &self.cl.thr[k], rng);
                    self.next[i] = x[i] ^ flip as u8;
                    flips += flip as u32;
                }
                flips
            }
        };
        // `next` is now the whole new grid (ghosts included): swap instead of copying.
        std::mem::swap(&mut self.grid[j], &mut self.next);
        flips
    }

    /// DMALA: one step of chain j.
    fn dmala_chain(&mut self, j: usize, rng: &mut ChainRng) -> StepInfo {
        let k = match &self.geo {
            &Geometry::Torus { rows, cols } => {
                let k = self.torus_propose(j, rows, cols, rng);
                if k > 0 {
                    let (hy, sb) =
                        torus_stats(self.avx2, &self.grid[j], &self.next, &self.interior, &self.snb16, rows, cols);
                    let hist = &self.hist[j * TORUS_CLASSES..(j + 1) * TORUS_CLASSES];
                    for ((dh, &a), &b) in self.scratch.dh.iter_mut().zip(&hy).zip(hist) {
                        *dh = a as i64 - b as i64;
                    }
                    self.scratch.sb = sb;
                }
                k
            }
            Geometry::Csr(_) => self.csr_dmala_propose(j, rng),
        };
        if k == 0 {
            return StepInfo::stayed();
        }
        let (a, de2, dm) = self.ratio(&self.scratch);
        let (accepted, accept_prob) = mh_accept(a, rng);
        if accepted {
            std::mem::swap(&mut self.grid[j], &mut self.next);
            self.e2[j] += de2;
            self.mm[j] += dm;
            self.f[j] = self.f_of(self.e2[j], self.mm[j]);
            let (d, nc) = (self.d, self.geo.n_classes());
            for (h, &dh) in self.hist[j * nc..(j + 1) * nc].iter_mut().zip(&self.scratch.dh) {
                *h = (*h as i64 + dh) as u32;
            }
            let pos = &mut self.pos[j * d..(j + 1) * d];
            match &self.geo {
                Geometry::Torus { .. } => gather(&self.geo, &self.grid[j], pos),
                Geometry::Csr(_) => {
                    let cls = &mut self.cls[j * d..(j + 1) * d];
                    if k as usize * FULL_PASS_RATIO > d {
                        cls.copy_from_slice(&self.cls_next);
                    }
                    for &(s, cy) in &self.scratch.changed {
                        cls[s as usize] = cy;
                    }
                    for &s in &self.scratch.flipped {
                        pos[s as usize] ^= 1;
                    }
                }
            }
        }
        StepInfo::evaluated(accepted, accept_prob, k)
    }

    /// CSR DMALA proposal of chain j into `next` from the cached classes, and its statistics
    /// into `scratch` (flip-set or full pass by flip-set size). Returns the number of flips.
    fn csr_dmala_propose(&mut self, j: usize, rng: &mut ChainRng) -> u32 {
        let Geometry::Csr(g) = &self.geo else { unreachable!("CSR geometry") };
        let (d, nc) = (self.d, self.geo.n_classes());
        rng.fill_bytes(&mut self.rbuf[..2 * d]);
        let x = &self.grid[j];
        let cls = &self.cls[j * d..(j + 1) * d];
        let mut k = 0u32;
        for i in 0..d {
            let r16 = u16::from_le_bytes([self.rbuf[2 * i], self.rbuf[2 * i + 1]]);
            let flip = decide(r16, &self.cl.thr[cls[i] as usize], rng);
            self.next[i] = x[i] ^ flip as u8;
            self.tag[i] = if flip { cls[i] } else { u8::MAX };
            k += flip as u32;
        }
        if k > 0 {
            collect_flipped(&self.tag, &mut self.scratch.flipped);
            let hist = &self.hist[j * nc..(j + 1) * nc];
            if k as usize * FULL_PASS_RATIO > d {
                full_set_stats(g, &self.next, cls, hist, &mut self.cls_next, &mut self.scratch);
            } else {
                flip_set_stats(g, &self.next, cls, &mut self.scratch);
            }
            self.scratch.fold_dr(&self.cl);
        }
        k
    }

    /// Test hook: take the portable kernels even if the CPU has AVX2, so that tests can
    /// compare the two forms.
    #[cfg(test)]
    pub(crate) fn use_portable_kernels(&mut self) {
        self.avx2 = false;
    }

    /// Test hook: one torus proposal per chain (the kernel `step` uses for DULA and for the
    /// DMALA proposal), drawn from `rngs` in the step's order; returns the proposals' bits
    /// and leaves the chains where they were.
    #[cfg(test)]
    pub(crate) fn torus_proposals(&mut self, rngs: &mut [ChainRng]) -> Vec<u32> {
        let Geometry::Torus { rows, cols } = self.geo else { panic!("not a padded torus") };
        let mut out = vec![0; self.n * self.d];
        for (j, p) in out.chunks_mut(self.d).enumerate() {
            self.torus_propose(j, rows, cols, &mut rngs[j]);
            gather(&self.geo, &self.next, p);
        }
        out
    }

    /// Test hook: whether the DMALA caches (histogram, (E₂, M), f, positions; classes on the
    /// CSR path) of every chain equal a recomputation from its grid.
    #[cfg(test)]
    pub(crate) fn caches_consistent(&self) -> bool {
        let (d, nc) = (self.d, self.geo.n_classes());
        let mut c = vec![0u8; d];
        let mut x = vec![0u32; d];
        (0..self.n).all(|j| {
            classes_of(&self.geo, &self.grid[j], &mut c);
            let mut h = vec![0u32; nc];
            count_into(&c, &mut h);
            let (e2, m) = stats(&self.cl, &h);
            gather(&self.geo, &self.grid[j], &mut x);
            let csr_ok = match self.geo {
                Geometry::Torus { .. } => true,
                Geometry::Csr(_) => c == self.cls[j * d..(j + 1) * d],
            };
            csr_ok
                && h == self.hist[j * nc..(j + 1) * nc]
                && (e2, m) == (self.e2[j], self.mm[j])
                && self.f[j] == self.f_of(e2, m)
                && x == self.pos[j * d..(j + 1) * d]
        })
    }
}

impl Chains for IsingDlpChains {
    fn n_chains(&self) -> usize {
        self.n
    }

    fn positions(&self) -> &[u32] {
        if self.mh {
            return &self.pos;
        }
        // DULA keeps the grids authoritative and converts on demand (once per step at most).
        self.pos_lazy.get_or_init(|| {
            let mut pos = self.pos_spare.take();
            pos.resize(self.n * self.d, 0);
            for (j, p) in pos.chunks_mut(self.d).enumerate() {
                gather(&self.geo, &self.grid[j], p);
            }
            pos
        })
    }

    fn log_densities(&self) -> Option<&[f64]> {
        if self.mh {
            return Some(&self.f);
        }
        // DULA does not need f; it is computed on demand (one pass per chain).
        Some(self.f_lazy.get_or_init(|| {
            let nc = self.geo.n_classes();
            let mut cls = vec![0u8; self.d];
            (0..self.n)
                .map(|j| {
                    classes_of(&self.geo, &self.grid[j], &mut cls);
                    let mut h = vec![0u32; nc];
                    count_into(&cls, &mut h);
                    let (e2, m) = stats(&self.cl, &h);
                    self.f_of(e2, m)
                })
                .collect()
        }))
    }

    fn try_step(&mut self, rngs: &mut [ChainRng], info: &mut [StepInfo], _batch: Batch<'_>) -> Result<(), EvalError> {
        self.f_lazy.take();
        if let Some(pos) = self.pos_lazy.take() {
            self.pos_spare.set(pos);
        }
        for j in 0..self.n {
            info[j] = if self.mh {
                self.dmala_chain(j, &mut rngs[j])
            } else {
                let k = self.dula_chain(j, &mut rngs[j]);
                if k == 0 { StepInfo::stayed() } else { StepInfo::evaluated(true, 1.0, k) }
            };
        }
        Ok(())
    }
}

fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Two-stage decision u < T/2⁶⁴ from the 16-bit draw `r16` (48 more bits from `rng` on a tie).
#[inline]
fn decide(r16: u16, t: &Threshold, rng: &mut ChainRng) -> bool {
    if r16 != t.hi {
        return r16 < t.hi;
    }
    (rng.next_u64() >> 16) < t.lo
}

/// Bits of the user layout (`x`, length d) into the geometry's grid (ghosts included).
fn scatter(geo: &Geometry, x: &[u32], g: &mut [u8]) {
    match geo {
        Geometry::Torus { rows, cols } => {
            let w = cols + 2;
            for r in 0..*rows {
                for c in 0..*cols {
                    g[(r + 1) * w + c + 1] = x[r * cols + c] as u8;
                }
            }
            refresh_ghosts(g, *rows, *cols);
        }
        Geometry::Csr(_) => {
            for (gi, &xi) in g.iter_mut().zip(x) {
                *gi = xi as u8;
            }
        }
    }
}

/// Grid bits back to the user layout (u32 per site), AVX2-compiled when available.
fn gather(geo: &Geometry, g: &[u8], x: &mut [u32]) {
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: the CPU reported AVX2.
        return unsafe { gather_avx2(geo, g, x) };
    }
    gather_body(geo, g, x)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn gather_avx2(geo: &Geometry, g: &[u8], x: &mut [u32]) {
    gather_body(geo, g, x)
}

#[inline(always)]
fn gather_body(geo: &Geometry, g: &[u8], x: &mut [u32]) {
    match geo {
        Geometry::Torus { rows, cols } => {
            let w = cols + 2;
            for r in 0..*rows {
                let src = &g[(r + 1) * w + 1..][..*cols];
                for (o, &s) in x[r * cols..(r + 1) * cols].iter_mut().zip(src) {
                    *o = s as u32;
                }
            }
        }
        Geometry::Csr(_) => {
            for (o, &s) in x.iter_mut().zip(g) {
                *o = s as u32;
            }
        }
    }
}

/// Copies the wrapped neighbours into the ghost columns and rows of a padded torus grid.
fn refresh_ghosts(g: &mut [u8], rows: usize, cols: usize) {
    let w = cols + 2;
    for r in 1..=rows {
        g[r * w] = g[r * w + cols];
        g[r * w + cols + 1] = g[r * w + 1];
    }
    g.copy_within(rows * w..(rows + 1) * w, 0);
    g.copy_within(w..2 * w, (rows + 1) * w);
}

/// The class of every site of the grid `g`, into `out` (length d).
fn classes_of(geo: &Geometry, g: &[u8], out: &mut [u8]) {
    match geo {
        Geometry::Torus { rows, cols } => {
            let (c, w) = (*cols, cols + 2);
            for r in 0..*rows {
                let o = &mut out[r * c..(r + 1) * c];
                let up = &g[r * w + 1..][..c];
                let mid = &g[(r + 1) * w + 1..][..c];
                let left = &g[(r + 1) * w..][..c];
                let right = &g[(r + 1) * w + 2..][..c];
                let down = &g[(r + 2) * w + 1..][..c];
                for i in 0..c {
                    o[i] = mid[i] * 5 + up[i] + down[i] + left[i] + right[i];
                }
            }
        }
        Geometry::Csr(c) => csr_classes(c, g, out),
    }
}

/// The class of every site of the bits `g` of a CSR lattice, into `out`.
fn csr_classes(c: &Csr, g: &[u8], out: &mut [u8]) {
    for (i, o) in out.iter_mut().enumerate() {
        *o = class_at(c, g, i);
    }
}

/// Adds the number of entries equal to k to `h[k]` for every k < h.len() (entries ≥ h.len(),
/// the "not flipped" tag 255, are ignored). One vectorisable counting pass per class.
fn count_into(cls: &[u8], h: &mut [u32]) {
    if h.len() <= 16 {
        for (k, hk) in h.iter_mut().enumerate() {
            let k = k as u8;
            *hk += cls.iter().map(|&v| (v == k) as u32).sum::<u32>();
        }
    } else {
        for &v in cls {
            if let Some(hk) = h.get_mut(v as usize) {
                *hk += 1;
            }
        }
    }
}

/// (E₂, M) from a class histogram.
fn stats(cl: &Classes, h: &[u32]) -> (i64, i64) {
    let mut e2 = 0;
    let mut m = 0;
    for (k, &c) in h.iter().enumerate() {
        e2 += c as i64 * cl.e2[k];
        m += c as i64 * cl.m[k];
    }
    (e2, m)
}

/// Mask of the low 56 bits of a threshold (the second stage of the torus proposal test).
const LOW56: u64 = (1 << 56) - 1;

/// Torus proposal (DULA step, DMALA proposal) over positions `q0..q0 + ql` of the flattened
/// padded range (position q is grid index q + w + 1), portable form: flip iff the byte r8[q] is below the class's top
/// threshold byte, or equal to it and 56 more bits (`next_u64() >> 8`) are below the low 56
/// bits; so the flip probability is exactly T/2⁶⁴. Ghost columns (interior 0) never flip and
/// draw nothing. New bits go to `next`; returns the number of flips. Scalar (the tie branch
/// is inline): the AVX2 form below is the fast one, this is its tail and the fallback.
#[allow(clippy::too_many_arguments)]
fn dula_span_body(
    x: &[u8],
    next: &mut [u8],
    r8: &[u8],
    interior: &[u8],
    t8: &[u8; TORUS_CLASSES],
    lo56: &[u64; TORUS_CLASSES],
    q0: usize,
    ql: usize,
    w: usize,
    rng: &mut ChainRng,
) -> u32 {
    let mut flips = 0;
    for q in q0..q0 + ql {
        let g = q + w + 1;
        let k = (x[g] * 5 + x[g - w] + x[g + w] + x[g - 1] + x[g + 1]) as usize;
        let (a, th, m) = (r8[q], t8[k], interior[q]);
        let mut f = (a < th) as u8 & m;
        if a == th && m != 0 {
            f = ((rng.next_u64() >> 8) < lo56[k]) as u8;
        }
        next[g] = x[g] ^ f;
        flips += f as u32;
    }
    flips
}

/// The AVX2 form of [`dula_span_body`] over the whole range: classes index a `pshufb` table
/// of top threshold bytes, 32 sites per iteration, the unsigned byte comparison done as a
/// signed one after flipping the sign bit; tie lanes (probability 2⁻⁸ each) come out of
/// `movemask` and are resolved right after the store, in site order, with 56 more bits.
/// The tail (< 32 sites) goes through the portable body.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[allow(clippy::too_many_arguments)]
fn dula_avx2(
    x: &[u8],
    next: &mut [u8],
    r8: &[u8],
    interior: &[u8],
    t8: &[u8; TORUS_CLASSES],
    lo56: &[u64; TORUS_CLASSES],
    len: usize,
    w: usize,
    rng: &mut ChainRng,
) -> u32 {
    use std::arch::x86_64::*;
    let g0 = w + 1;
    // Every load reads 32 bytes at offset i < len − 31 of the ranges checked here.
    assert!(g0 + len + w <= x.len() && g0 + len <= next.len() && len <= r8.len() && len <= interior.len());
    let mut t16 = [0u8; 16];
    t16[..TORUS_CLASSES].copy_from_slice(t8);
    let vec_len = len - len % 32;
    let mut flips = 0u32;
    // SAFETY: AVX2 is enabled on this function; every pointer access is in bounds by the
    // assert above (i + 32 ≤ vec_len ≤ len; tie lanes are < i + 32).
    unsafe {
        let load = |p: *const u8| _mm256_loadu_si256(p as *const __m256i);
        let t_t = _mm256_broadcastsi128_si256(_mm_loadu_si128(t16.as_ptr() as *const __m128i));
        let sign = _mm256_set1_epi8(i8::MIN);
        let zero = _mm256_setzero_si256();
        let mut acc = _mm256_setzero_si256();
        let xp = x.as_ptr();
        let np = next.as_mut_ptr();
        let mut i = 0;
        while i < vec_len {
            let g = g0 + i;
            let mid = load(xp.add(g));
            let nb = _mm256_add_epi8(
                _mm256_add_epi8(load(xp.add(g - w)), load(xp.add(g + w))),
                _mm256_add_epi8(load(xp.add(g - 1)), load(xp.add(g + 1))),
            );
            let m2 = _mm256_add_epi8(mid, mid);
            let k = _mm256_add_epi8(_mm256_add_epi8(_mm256_add_epi8(m2, m2), mid), nb);
            let th = _mm256_shuffle_epi8(t_t, k);
            let a = load(r8.as_ptr().add(i));
            let mask = load(interior.as_ptr().add(i));
            let lt = _mm256_cmpgt_epi8(_mm256_xor_si256(th, sign), _mm256_xor_si256(a, sign));
            let eq = _mm256_and_si256(_mm256_cmpeq_epi8(th, a), _mm256_sub_epi8(zero, mask));
            let flip = _mm256_and_si256(lt, mask);
            _mm256_storeu_si256(np.add(g) as *mut __m256i, _mm256_xor_si256(mid, flip));
            acc = _mm256_add_epi64(acc, _mm256_sad_epu8(flip, zero));
            let mut ties = _mm256_movemask_epi8(eq) as u32;
            while ties != 0 {
                let q = i + ties.trailing_zeros() as usize;
                ties &= ties - 1;
                let gq = q + g0;
                let kq =
                    (*xp.add(gq) * 5 + *xp.add(gq - w) + *xp.add(gq + w) + *xp.add(gq - 1) + *xp.add(gq + 1)) as usize;
                if (rng.next_u64() >> 8) < lo56[kq] {
                    *np.add(gq) ^= 1;
                    flips += 1;
                }
            }
            i += 32;
        }
        let mut lanes = [0u64; 4];
        _mm256_storeu_si256(lanes.as_mut_ptr() as *mut __m256i, acc);
        flips += lanes.iter().sum::<u64>() as u32;
    }
    if vec_len < len {
        flips += dula_span_body(x, next, r8, interior, t8, lo56, vec_len, len - vec_len, w, rng);
    }
    flips
}

/// One torus DULA step (or DMALA proposal) of a chain: grid `x` → `next` (ghosts not
/// refreshed), from `len` random bytes `r8` and, on ties, 8-byte draws from `rng` in site
/// order.
#[allow(clippy::too_many_arguments)]
fn torus_kernel(
    avx2: bool,
    x: &[u8],
    next: &mut [u8],
    r8: &[u8],
    interior: &[u8],
    t8: &[u8; TORUS_CLASSES],
    lo56: &[u64; TORUS_CLASSES],
    len: usize,
    w: usize,
    rng: &mut ChainRng,
) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if avx2 {
        // SAFETY: `avx2` is true only when the CPU reported AVX2 at run time.
        return unsafe { dula_avx2(x, next, r8, interior, t8, lo56, len, w, rng) };
    }
    let _ = avx2;
    dula_span_body(x, next, r8, interior, t8, lo56, 0, len, w, rng)
}

/// Torus DMALA statistics of the move from grid `x` to grid `y` (both with fresh ghosts)
/// over positions `q0..q0 + ql` of the flattened padded range, portable form: adds the
/// classes at y to the histogram `hy` (H') and Σ (s·Σu)(at y) − (s·Σu)(at x) over the flipped
/// sites (`snb`, by class) to `sb`. Ghost columns (interior 0) are skipped.
#[allow(clippy::too_many_arguments)]
fn stats_span_body(
    x: &[u8],
    y: &[u8],
    interior: &[u8],
    snb: &[i8; 16],
    q0: usize,
    ql: usize,
    w: usize,
    hy: &mut [u32; TORUS_CLASSES],
    sb: &mut i64,
) {
    let class = |g: &[u8], q: usize| (g[q] * 5 + g[q - w] + g[q + w] + g[q - 1] + g[q + 1]) as usize;
    for (q, _) in interior.iter().enumerate().skip(q0).take(ql).filter(|&(_, &m)| m != 0) {
        let g = q + w + 1;
        let ky = class(y, g);
        hy[ky] += 1;
        if x[g] != y[g] {
            *sb += (snb[ky] - snb[class(x, g)]) as i64;
        }
    }
}

/// Iterations (of 32 sites) between flushes of the per-lane byte counters of
/// [`stats_avx2`]: a lane's counter grows by at most 1 per iteration.
const STATS_FLUSH: usize = 255;

/// The AVX2 form of [`stats_span_body`] over the whole range, in one pass: both class maps
/// from five shifted loads each; classes 1–9 at y counted into per-lane byte counters
/// (`cmpeq` + `sub`, flushed every [`STATS_FLUSH`] iterations; class 0 is the rest of the
/// d sites); s·Σu at y and at x by `pshufb` on the flipped lanes (the others forced to index
/// 255, which `pshufb` maps to 0), their difference summed by `sad`. The tail (< 32 sites)
/// goes through the portable body. Returns (H', sb) as the portable body would.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn stats_avx2(
    x: &[u8],
    y: &[u8],
    interior: &[u8],
    snb: &[i8; 16],
    len: usize,
    w: usize,
    d: usize,
) -> ([u32; TORUS_CLASSES], i64) {
    use std::arch::x86_64::*;
    let g0 = w + 1;
    // Every load reads 32 bytes at offset i < len − 31 of the ranges checked here.
    assert!(g0 + len + w <= x.len() && g0 + len + w <= y.len() && len <= interior.len());
    let vec_len = len - len % 32;
    let mut hy = [0u32; TORUS_CLASSES];
    // SAFETY: AVX2 is enabled on this function; every load is in bounds by the assert above
    // (i + 32 ≤ vec_len ≤ len).
    let mut sb = unsafe {
        let load = |p: *const u8| _mm256_loadu_si256(p as *const __m256i);
        let zero = _mm256_setzero_si256();
        let sign = _mm256_set1_epi8(i8::MIN);
        let t_snb = _mm256_broadcastsi128_si256(_mm_loadu_si128(snb.as_ptr() as *const __m128i));
        let kk: [__m256i; TORUS_CLASSES] = std::array::from_fn(|k| _mm256_set1_epi8(k as i8));
        let class = |p: *const u8| {
            let mid = load(p);
            let nb = _mm256_add_epi8(
                _mm256_add_epi8(load(p.sub(w)), load(p.add(w))),
                _mm256_add_epi8(load(p.sub(1)), load(p.add(1))),
            );
            let m2 = _mm256_add_epi8(mid, mid);
            (mid, _mm256_add_epi8(_mm256_add_epi8(_mm256_add_epi8(m2, m2), mid), nb))
        };
        let hsum = |v: __m256i| {
            let mut lanes = [0u64; 4];
            _mm256_storeu_si256(lanes.as_mut_ptr() as *mut __m256i, v);
            lanes.iter().sum::<u64>()
        };
        let (xp, yp, ip) = (x.as_ptr(), y.as_ptr(), interior.as_ptr());
        // Biased sums of the differences (each byte + 128, so `sad` sees them unsigned).
        let mut acc = zero;
        let mut i = 0;
        while i < vec_len {
            let end = vec_len.min(i + 32 * STATS_FLUSH);
            let mut c = [zero; TORUS_CLASSES - 1];
            while i < end {
                let (xm, kx) = class(xp.add(g0 + i));
                let (ym, ky) = class(yp.add(g0 + i));
                let ghost = _mm256_cmpeq_epi8(load(ip.add(i)), zero);
                let kyg = _mm256_or_si256(ky, ghost);
                for (ck, &k) in c.iter_mut().zip(&kk[1..]) {
                    // cmpeq is −1 on a match.
                    *ck = _mm256_sub_epi8(*ck, _mm256_cmpeq_epi8(kyg, k));
                }
                let off = _mm256_or_si256(_mm256_cmpeq_epi8(xm, ym), ghost);
                let dy = _mm256_shuffle_epi8(t_snb, _mm256_or_si256(ky, off));
                let dx = _mm256_shuffle_epi8(t_snb, _mm256_or_si256(kx, off));
                let diff = _mm256_xor_si256(_mm256_sub_epi8(dy, dx), sign);
                acc = _mm256_add_epi64(acc, _mm256_sad_epu8(diff, zero));
                i += 32;
            }
            for (h, &ck) in hy[1..].iter_mut().zip(&c) {
                *h += hsum(_mm256_sad_epu8(ck, zero)) as u32;
            }
        }
        hsum(acc) as i64 - 128 * vec_len as i64
    };
    if vec_len < len {
        stats_span_body(x, y, interior, snb, vec_len, len - vec_len, w, &mut hy, &mut sb);
    }
    hy[0] = d as u32 - hy[1..].iter().sum::<u32>();
    (hy, sb)
}

/// H' and Σ_k (R_k − F_k) (s·Σu)_k of the torus move from grid `x` to grid `y` (both with
/// fresh ghosts; R × C interior, so `len` = R·(C+2) − 2 positions of the flattened range).
fn torus_stats(
    avx2: bool,
    x: &[u8],
    y: &[u8],
    interior: &[u8],
    snb: &[i8; 16],
    rows: usize,
    cols: usize,
) -> ([u32; TORUS_CLASSES], i64) {
    let (w, len) = (cols + 2, rows * (cols + 2) - 2);
    #[cfg(target_arch = "x86_64")]
    if avx2 {
        // SAFETY: `avx2` is true only when the CPU reported AVX2 at run time.
        return unsafe { stats_avx2(x, y, interior, snb, len, w, rows * cols) };
    }
    let _ = avx2;
    let (mut hy, mut sb) = ([0; TORUS_CLASSES], 0);
    stats_span_body(x, y, interior, snb, 0, len, w, &mut hy, &mut sb);
    (hy, sb)
}

impl FlipScratch {
    fn new(d: usize, nc: usize) -> Self {
        FlipScratch { seen: vec![0; d], dh: vec![0; nc], dr: vec![0; nc], ..Default::default() }
    }

    /// `sb` from the per-class R − F of the CSR statistics.
    fn fold_dr(&mut self, cl: &Classes) {
        self.sb = self.dr.iter().zip(&cl.snb).map(|(&r, &v)| r * v).sum();
        if !cl.linear {
            self.lr = self.dr.iter().zip(&cl.logit).filter(|(r, _)| **r != 0).map(|(&r, &l)| r as f64 * l).sum();
        }
    }
}

/// The grid indices whose tag is not 255 (the flipped sites), in order, into `out`. Skips 8
/// untagged sites per comparison; inside a chunk the compaction is branchless (flip sets of
/// 10–20% of the sites make a per-site branch mispredict often).
fn collect_flipped(tag: &[u8], out: &mut Vec<u32>) {
    out.clear();
    out.resize(tag.len() + 8, 0);
    let mut n = 0;
    let mut chunks = tag.chunks_exact(8);
    for (ci, ch) in chunks.by_ref().enumerate() {
        if u64::from_ne_bytes(ch.try_into().expect("8 bytes")) == u64::MAX {
            continue;
        }
        let dst = &mut out[n..n + 8];
        let mut m = 0;
        for (o, &t) in ch.iter().enumerate() {
            dst[m & 7] = (ci * 8 + o) as u32;
            m += (t != u8::MAX) as usize;
        }
        n += m;
    }
    let base = tag.len() - chunks.remainder().len();
    for (o, &t) in chunks.remainder().iter().enumerate() {
        out[n] = (base + o) as u32;
        n += (t != u8::MAX) as usize;
    }
    out.truncate(n);
}

/// The class of site `q` of the bits `g` of a CSR lattice.
#[inline]
fn class_at(c: &Csr, g: &[u8], q: usize) -> u8 {
    let sz = c.dmax + 1;
    let up: usize =
        c.nbrs[c.offsets[q] as usize..c.offsets[q + 1] as usize].iter().map(|&t| g[t as usize] as usize).sum();
    (g[q] as usize * sz * sz + c.deg[q] as usize * sz + up) as u8
}

/// CSR flip sets larger than d / this take [`full_set_stats`]: visiting a flipped site and
/// its neighbours costs about as much as this many sites of a full pass (measured on the
/// torus bench lattices when they took this path; proposals at small α flip 10–20%).
const FULL_PASS_RATIO: usize = 16;

/// The same statistics as [`flip_set_stats`] from one pass over all sites at y: classes at
/// y into `cls_y`, H' − H from their histogram and `hist` (at x), R − F from the flipped
/// sites; `sc.changed` is left empty (the caller copies `cls_y`).
fn full_set_stats(c: &Csr, y: &[u8], cls_x: &[u8], hist: &[u32], cls_y: &mut [u8], sc: &mut FlipScratch) {
    csr_classes(c, y, cls_y);
    let mut h2 = vec![0u32; hist.len()];
    count_into(cls_y, &mut h2);
    for ((dh, &a), &b) in sc.dh.iter_mut().zip(&h2).zip(hist) {
        *dh = a as i64 - b as i64;
    }
    sc.dr.fill(0);
    sc.changed.clear();
    for &s in &sc.flipped {
        sc.dr[cls_x[s as usize] as usize] -= 1;
        sc.dr[cls_y[s as usize] as usize] += 1;
    }
}

/// H' − H and R − F of a proposal from its flipped sites (`sc.flipped`), the proposal's
/// bits `y` and the classes at x: only the flipped sites and their neighbours can change
/// class, so each of them is visited once (epoch stamps) and its class at y computed. Also
/// records the sites whose class changed (`sc.changed`), to update the cache on acceptance.
fn flip_set_stats(c: &Csr, y: &[u8], cls_x: &[u8], sc: &mut FlipScratch) {
    sc.dh.fill(0);
    sc.dr.fill(0);
    sc.changed.clear();
    sc.epoch = sc.epoch.wrapping_add(1);
    if sc.epoch == 0 {
        sc.seen.fill(0);
        sc.epoch = 1;
    }
    let FlipScratch { flipped, seen, epoch, changed, dh, dr, .. } = sc;
    let mut visit = |q: usize| {
        if seen[q] == *epoch {
            return;
        }
        seen[q] = *epoch;
        let (cx, cy) = (cls_x[q], class_at(c, y, q));
        if cx != cy {
            dh[cx as usize] -= 1;
            dh[cy as usize] += 1;
            changed.push((q as u32, cy));
        }
    };
    for &q in flipped.iter() {
        let q = q as usize;
        dr[cls_x[q] as usize] -= 1;
        dr[class_at(c, y, q) as usize] += 1;
        visit(q);
        for &t in &c.nbrs[c.offsets[q] as usize..c.offsets[q + 1] as usize] {
            visit(t as usize);
        }
    }
}
