//! DULA and DMALA on a lattice Ising model with one coupling w and one field b
//! (`IsingModel` built from a lattice, e.g. `IsingModel::paper_lattice`), spin or binary.
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
//!   [`super::Threshold`]), so the realised flip probability is exactly T/2⁶⁴. Torus DULA:
//!   one random byte per site against the top byte of T; on a tie (probability 2⁻⁸) 56 more
//!   bits (`next_u64() >> 8`) against the low 56 bits. Per chain and step: R·(C+2) − 2
//!   bytes from `rngs[j]` (`fill_bytes`, one per position of the flattened padded range),
//!   then one `next_u64` per tie in site order. DMALA and the CSR path: 16-bit first stage,
//!   48 more bits on a tie (2·d bytes, then one `next_u64` per tie in site order, then, if
//!   the proposal moves, the MH uniform).
//! * **2-D periodic lattices with both sides ≥ 3** are stored per chain as a (R+2)×(C+2)
//!   grid of bytes with ghost rows/columns, so a row of neighbour counts is four shifted
//!   slices and the row kernel vectorises (AVX2 when the CPU has it, chosen at run time).
//!   Every other lattice (L = 2, open boundaries, 1-D, 3-D) takes a scalar path over the
//!   CSR neighbour lists.
//! * **DMALA** keeps, per chain, the class of every site and the class histogram H of the
//!   current state. With the proposal y, the flip set M and the histograms F (classes at x
//!   of the sites in M), R (classes at y of the sites in M) and H' (all classes at y):
//!   f(y) − f(x) = ½w·ΔE₂ + b·ΔM with the integer statistics E₂ = Σ_i u_i Σ_{j~i} u_j and
//!   M = Σ_i u_i; log q(x|y) − log q(y|x) = Σ_k (R_k − F_k) ℓ_k − Σ_k (H'_k − H_k) softplus(ℓ_k).
//!   No log-density or gradient is evaluated, and there is no pass over all sites: only the
//!   flipped sites and their neighbours can change class, so F, R and H' − H come from
//!   visiting those once each at y (`flip_set_stats`); an accepted move rewrites their
//!   cached classes, the histogram and the flipped sites' positions (the "incremental
//!   gradient").
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
use dlp_core::math::{sigmoid, softplus};
use dlp_core::{ChainRng, Chains, SamplerError, StepInfo, Target};
use dlp_models::IsingModel;
use rand::Rng;
use std::cell::{Cell, OnceCell};

/// Number of classes on the 2-D torus: bit × number of up neighbours (0..=4).
const TORUS_CLASSES: usize = 10;

/// The Ising model if `target` qualifies for this fast path: an [`IsingModel`] built from
/// a lattice (one coupling for every pair) with the same field at every site.
pub fn qualifying_model(target: &dyn Target) -> Option<&IsingModel> {
    let m = target.as_any()?.downcast_ref::<IsingModel>()?;
    let spec = m.couplings().lattice_spec()?;
    let b = *m.fields().first()?;
    let uniform = m.fields().iter().all(|&v| v == b) && m.neighbour_weights().iter().all(|&v| v == spec.coupling);
    // Class indices are bytes: 2·(D+1)² ≤ 255 needs degree D ≤ 10.
    let small_degree = m.neighbour_offsets().windows(2).all(|w| w[1] - w[0] <= 10);
    (uniform && small_degree).then_some(m)
}

enum Geometry {
    /// 2-D periodic R × C lattice, R, C ≥ 3: padded grid, class = x·5 + up.
    Torus { rows: usize, cols: usize },
    /// Anything else: class = x·(D+1)² + deg·(D+1) + up, D the largest degree.
    Csr { offsets: Vec<u32>, nbrs: Vec<u32>, deg: Vec<u8>, dmax: usize },
}

impl Geometry {
    fn grid_len(&self, d: usize) -> usize {
        match self {
            Geometry::Torus { rows, cols } => (rows + 2) * (cols + 2),
            Geometry::Csr { .. } => d,
        }
    }

    fn n_classes(&self) -> usize {
        match self {
            Geometry::Torus { .. } => TORUS_CLASSES,
            Geometry::Csr { dmax, .. } => 2 * (dmax + 1) * (dmax + 1),
        }
    }

    /// (bit, degree, up) of a class index.
    fn class_parts(&self, k: usize) -> (u32, u32, u32) {
        match self {
            Geometry::Torus { .. } => ((k / 5) as u32, 4, (k % 5) as u32),
            Geometry::Csr { dmax, .. } => {
                let s = dmax + 1;
                ((k / (s * s)) as u32, ((k / s) % s) as u32, (k % s) as u32)
            }
        }
    }
}

/// Per-class quantities, in f64 from the generic formula.
struct Classes {
    logit: Vec<f64>,
    softplus: Vec<f64>,
    thr: Vec<Threshold>,
    /// u_i · Σ_{j~i} u_j and u_i (integers) of a site of the class.
    e2: Vec<i64>,
    m: Vec<i64>,
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
    hi10: [u16; TORUS_CLASSES],
    /// Torus: 1 at interior positions of the flattened padded range, 0 at ghost columns.
    interior: Vec<u8>,
    avx2: bool,
    /// Torus DULA: top byte of T and its low 56 bits per class (8-bit first stage).
    t8: [u8; TORUS_CLASSES],
    lo56: [u64; TORUS_CLASSES],
    /// Bits per chain (padded grid on the torus), one buffer of length gl per chain, so an
    /// accepted proposal is a buffer swap with `next`.
    grid: Vec<Vec<u8>>,
    /// The proposal of the chain being stepped (every byte rewritten by a step that uses it).
    next: Vec<u8>,
    /// DMALA: class of every site at the current state, n × d; histogram, n × classes.
    cls: Vec<u8>,
    hist: Vec<u32>,
    /// DMALA: class at x of each flipped site, 255 elsewhere, by grid index (length gl; the
    /// torus ghosts stay 255).
    tag: Vec<u8>,
    /// DMALA, large flip sets: the classes at the proposal (by site).
    cls_next: Vec<u8>,
    /// Grid index → user site index, and grid index → the interior grid index it mirrors
    /// (identity off the ghosts; both identity on the CSR path).
    site_of: Vec<u32>,
    canon: Vec<u32>,
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

/// DMALA bookkeeping for one proposal, from its flipped sites and their neighbours only.
#[derive(Default)]
struct FlipScratch {
    /// Flipped sites (user index), in site order.
    flipped: Vec<u32>,
    /// Epoch stamp per site, to visit each site of the flip set's neighbourhood once.
    seen: Vec<u32>,
    epoch: u32,
    /// Sites whose class differs between x and y, with their class at y.
    changed: Vec<(u32, u8)>,
    /// H' − H (class histogram at y minus at x), F (classes at x of the flipped sites),
    /// R (classes at y of the flipped sites).
    dh: Vec<i64>,
    fw: Vec<u32>,
    rv: Vec<u32>,
}

impl IsingDlpChains {
    /// Starts chains at the rows of `x0` for DLP with step size α (`half_inv_step` =
    /// 1/(2α), 0 for α = ∞); `mh` = DMALA. `model` must satisfy [`qualifying_model`].
    pub fn new(model: &IsingModel, half_inv_step: f64, mh: bool, x0: &[u32]) -> Result<Self, SamplerError> {
        let space = dlp_core::Target::space(model);
        space.check_states(x0).map_err(SamplerError::BadInitialState)?;
        let d = space.d;
        let n = x0.len() / d;
        if n == 0 {
            return Err(SamplerError::BadInitialState("no chains".into()));
        }
        let spec = model.couplings().lattice_spec().expect("qualifying_model checked the lattice");
        let geo = if spec.periodic && spec.shape.len() == 2 && spec.shape[0] >= 3 && spec.shape[1] >= 3 {
            Geometry::Torus { rows: spec.shape[0], cols: spec.shape[1] }
        } else {
            let offsets: Vec<u32> = model.neighbour_offsets().iter().map(|&o| o as u32).collect();
            let deg: Vec<u8> = offsets.windows(2).map(|w| (w[1] - w[0]) as u8).collect();
            let dmax = deg.iter().copied().max().unwrap_or(0) as usize;
            Geometry::Csr { offsets, nbrs: model.neighbours().to_vec(), deg, dmax }
        };
        let (w, b, spin) = (spec.coupling, model.fields()[0], model.is_spin());
        let nc = geo.n_classes();
        let mut cl = Classes {
            logit: vec![0.0; nc],
            softplus: vec![0.0; nc],
            thr: vec![Threshold::default(); nc],
            e2: vec![0; nc],
            m: vec![0; nc],
        };
        for k in 0..nc {
            let (x, deg, up) = geo.class_parts(k);
            let (u, nsum) = if spin { (2 * x as i64 - 1, 2 * up as i64 - deg as i64) } else { (x as i64, up as i64) };
            // The generic path: g_i = (du/dx)·(b + Σ_j w u_j), ℓ = ½ g (1 − 2x) − 1/(2α).
            let g = if spin { 2.0 } else { 1.0 } * (b + w * nsum as f64);
            let l = 0.5 * g * (1.0 - 2.0 * x as f64) - half_inv_step;
            cl.logit[k] = l;
            cl.softplus[k] = softplus(l);
            cl.thr[k] = Threshold::of_probability(sigmoid(l));
            cl.e2[k] = u * nsum;
            cl.m[k] = u;
        }
        let mut hi10 = [0u16; TORUS_CLASSES];
        let (mut t8, mut lo56) = ([0u8; TORUS_CLASSES], [0u64; TORUS_CLASSES]);
        let mut interior = Vec::new();
        if let Geometry::Torus { rows, cols } = geo {
            for (k, t) in cl.thr.iter().enumerate() {
                hi10[k] = t.hi;
                t8[k] = (t.bits() >> 56) as u8;
                lo56[k] = t.bits() & LOW56;
            }
            let w = cols + 2;
            interior = (0..rows * w - 2).map(|q| u8::from((q + 1) % w != 0 && (q + 1) % w != w - 1)).collect();
        }
        let gl = geo.grid_len(d);
        let (site_of, canon) = grid_maps(&geo, d);
        let rlen = match geo {
            Geometry::Torus { rows, cols } => 2 * (rows * (cols + 2) - 2),
            Geometry::Csr { .. } => 2 * d,
        };
        let mut c = IsingDlpChains {
            mh,
            n,
            d,
            gl,
            w,
            b,
            hi10,
            interior,
            t8,
            lo56,
            avx2: has_avx2(),
            grid: vec![vec![0; gl]; n],
            next: vec![0; gl],
            cls: if mh { vec![0; n * d] } else { Vec::new() },
            hist: if mh { vec![0; n * nc] } else { Vec::new() },
            tag: vec![u8::MAX; gl],
            cls_next: vec![0; d],
            site_of,
            canon,
            scratch: FlipScratch::new(gl, nc),
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
        for j in 0..n {
            let g = &mut c.grid[j];
            scatter(&c.geo, &x0[j * d..(j + 1) * d], g);
            if mh {
                classes_of(&c.geo, g, &mut c.cls[j * d..(j + 1) * d]);
                let h = &mut c.hist[j * nc..(j + 1) * nc];
                count_into(&c.cls[j * d..(j + 1) * d], h);
                let (e2, m) = stats(&c.cl, h);
                c.e2[j] = e2;
                c.mm[j] = m;
                c.f[j] = 0.5 * w * e2 as f64 + b * m as f64;
            }
        }
        Ok(c)
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
    /// tests against the generic [`crate::dlp::log_accept_ratio`].
    pub fn log_accept_ratio(&self, x: &[u32], y: &[u32]) -> f64 {
        let nc = self.geo.n_classes();
        let (mut gx, mut gy) = (vec![0; self.gl], vec![0; self.gl]);
        scatter(&self.geo, x, &mut gx);
        scatter(&self.geo, y, &mut gy);
        let mut cx = vec![0; self.d];
        classes_of(&self.geo, &gx, &mut cx);
        // The step's own path: the flipped sites' tags, then the flip-set statistics.
        let mut tag = vec![u8::MAX; self.gl];
        for (q, t) in tag.iter_mut().enumerate() {
            let s = self.site_of[q] as usize;
            if self.canon[q] as usize == q && x[s] != y[s] {
                *t = cx[s];
            }
        }
        let mut sc = FlipScratch::new(self.gl, nc);
        collect_flipped(&tag, &mut sc.flipped);
        let mut h = vec![0; nc];
        count_into(&cx, &mut h);
        let mut full = FlipScratch::new(self.gl, nc);
        full.flipped = sc.flipped.clone();
        full_set_stats(&self.geo, &self.site_of, &gy, &cx, &h, &mut vec![0; self.d], &mut full);
        flip_set_stats(&self.geo, &self.site_of, &self.canon, &gy, &cx, &mut sc);
        // The step takes either form by flip-set size; both must give the same statistics.
        assert!((&sc.dh, &sc.fw, &sc.rv) == (&full.dh, &full.fw, &full.rv), "flip-set and full-pass statistics differ");
        self.ratio(&sc).0
    }

    /// (A, ΔE₂, ΔM) from the flip-set statistics (H' − H, F, R).
    fn ratio(&self, sc: &FlipScratch) -> (f64, i64, i64) {
        let (dhs, fw, rv) = (&sc.dh, &sc.fw, &sc.rv);
        let (mut de2, mut dm, mut lq) = (0i64, 0i64, 0.0);
        for k in 0..dhs.len() {
            let dh = dhs[k];
            de2 += dh * self.cl.e2[k];
            dm += dh * self.cl.m[k];
            let dr = rv[k] as i64 - fw[k] as i64;
            if dr != 0 {
                lq += dr as f64 * self.cl.logit[k];
            }
            if dh != 0 {
                lq -= dh as f64 * self.cl.softplus[k];
            }
        }
        let df = 0.5 * self.w * de2 as f64 + self.b * dm as f64;
        (crate::dlp::log_accept_ratio(0.0, df, 0.0, lq), de2, dm)
    }

    /// DULA: one step of chain j. Returns the number of flips.
    fn dula_chain(&mut self, j: usize, rng: &mut ChainRng) -> u32 {
        let d = self.d;
        let x = &self.grid[j];
        let flips = match &self.geo {
            Geometry::Torus { rows, cols } => {
                let (r, c) = (*rows, *cols);
                let w = c + 2;
                let len = r * w - 2;
                let r8 = &mut self.rbuf[..len];
                rng.fill_bytes(r8);
                let flips =
                    torus_dula(self.avx2, x, &mut self.next, r8, &self.interior, &self.t8, &self.lo56, len, w, rng);
                refresh_ghosts(&mut self.next, r, c);
                flips
            }
            Geometry::Csr { offsets, nbrs, deg, dmax } => {
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
        let (d, nc) = (self.d, self.geo.n_classes());
        rng.fill_bytes(&mut self.rbuf[..2 * d]);
        let x = &self.grid[j];
        let cls = &self.cls[j * d..(j + 1) * d];
        // Pass 1, at x: flip decisions from the cached classes.
        let mut k = 0u32;
        match &self.geo {
            Geometry::Torus { rows, cols } => {
                let (r, c) = (*rows, *cols);
                for row in 0..r {
                    let (m, tie) = torus_propose_row(
                        self.avx2,
                        x,
                        &mut self.next,
                        &self.rbuf,
                        cls,
                        &mut self.tag,
                        &self.hi10,
                        row,
                        c,
                    );
                    k += m;
                    if tie {
                        k = (k as i64
                            + resolve_ties_tagged(
                                x,
                                &mut self.next,
                                &self.rbuf,
                                cls,
                                &mut self.tag,
                                &self.cl.thr,
                                row,
                                c,
                                rng,
                            )) as u32;
                    }
                }
                if k > 0 {
                    refresh_ghosts(&mut self.next, r, c);
                }
            }
            Geometry::Csr { .. } => {
                for i in 0..d {
                    let r16 = u16::from_le_bytes([self.rbuf[2 * i], self.rbuf[2 * i + 1]]);
                    let flip = decide(r16, &self.cl.thr[cls[i] as usize], rng);
                    self.next[i] = x[i] ^ flip as u8;
                    self.tag[i] = if flip { cls[i] } else { u8::MAX };
                    k += flip as u32;
                }
            }
        }
        if k == 0 {
            return StepInfo { accepted: true, accept_prob: 1.0, ..StepInfo::default() };
        }
        // Pass 2, only over the flipped sites and their neighbours.
        collect_flipped(&self.tag, &mut self.scratch.flipped);
        let hist = &self.hist[j * nc..(j + 1) * nc];
        let full = k as usize * FULL_PASS_RATIO > d;
        if full {
            full_set_stats(&self.geo, &self.site_of, &self.next, cls, hist, &mut self.cls_next, &mut self.scratch);
        } else {
            flip_set_stats(&self.geo, &self.site_of, &self.canon, &self.next, cls, &mut self.scratch);
        }
        let (a, de2, dm) = self.ratio(&self.scratch);
        let (accepted, accept_prob) = mh_accept(a, rng);
        if accepted {
            std::mem::swap(&mut self.grid[j], &mut self.next);
            let cls = &mut self.cls[j * d..(j + 1) * d];
            if full {
                cls.copy_from_slice(&self.cls_next);
            }
            for &(s, cy) in &self.scratch.changed {
                cls[s as usize] = cy;
            }
            for (h, &dh) in self.hist[j * nc..(j + 1) * nc].iter_mut().zip(&self.scratch.dh) {
                *h = (*h as i64 + dh) as u32;
            }
            self.e2[j] += de2;
            self.mm[j] += dm;
            self.f[j] = self.f_of(self.e2[j], self.mm[j]);
            let pos = &mut self.pos[j * d..(j + 1) * d];
            for &q in &self.scratch.flipped {
                pos[self.site_of[q as usize] as usize] ^= 1;
            }
        }
        StepInfo {
            accepted,
            accept_prob,
            n_proposed: k,
            n_changed: if accepted { k } else { 0 },
            density_evals: 1,
            grad_evals: 1,
        }
    }

    /// Test hook: whether the DMALA caches (classes, histogram, f, positions) of every chain
    /// equal a recomputation from its grid.
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
            c == self.cls[j * d..(j + 1) * d]
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

    fn step(&mut self, rngs: &mut [ChainRng], info: &mut [StepInfo]) {
        self.f_lazy.take();
        if let Some(pos) = self.pos_lazy.take() {
            self.pos_spare.set(pos);
        }
        for j in 0..self.n {
            info[j] = if self.mh {
                self.dmala_chain(j, &mut rngs[j])
            } else {
                let k = self.dula_chain(j, &mut rngs[j]);
                if k == 0 {
                    StepInfo { accepted: true, accept_prob: 1.0, ..StepInfo::default() }
                } else {
                    StepInfo {
                        accepted: true,
                        accept_prob: 1.0,
                        n_proposed: k,
                        n_changed: k,
                        density_evals: 1,
                        grad_evals: 1,
                    }
                }
            };
        }
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
        Geometry::Csr { .. } => {
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
        Geometry::Csr { .. } => {
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
        Geometry::Csr { offsets, nbrs, deg, dmax } => {
            let s = dmax + 1;
            for (i, o) in out.iter_mut().enumerate() {
                let up: usize =
                    nbrs[offsets[i] as usize..offsets[i + 1] as usize].iter().map(|&q| g[q as usize] as usize).sum();
                *o = (g[i] as usize * s * s + deg[i] as usize * s + up) as u8;
            }
        }
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

#[inline(always)]
fn sel10(k: u8, t: &[u16; TORUS_CLASSES]) -> u16 {
    let mut v = t[0];
    for (j, &tj) in t.iter().enumerate().skip(1) {
        if k == j as u8 {
            v = tj;
        }
    }
    v
}

/// Mask of the low 56 bits of a threshold (the second stage of the torus DULA test).
const LOW56: u64 = (1 << 56) - 1;

/// Torus DULA over positions `q0..q0 + ql` of the flattened padded range (position q is grid
/// index q + w + 1), portable form: flip iff the byte r8[q] is below the class's top
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

/// One torus DULA step of a chain: grid `x` → `next` (ghosts not refreshed), from `len`
/// random bytes `r8` and, on ties, 8-byte draws from `rng` in site order.
#[allow(clippy::too_many_arguments)]
fn torus_dula(
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

impl FlipScratch {
    fn new(d: usize, nc: usize) -> Self {
        FlipScratch { seen: vec![0; d], dh: vec![0; nc], fw: vec![0; nc], rv: vec![0; nc], ..Default::default() }
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

/// (grid index → site, grid index → mirrored interior grid index) of a geometry.
fn grid_maps(geo: &Geometry, d: usize) -> (Vec<u32>, Vec<u32>) {
    match geo {
        Geometry::Torus { rows, cols } => {
            let (r, c, w) = (*rows, *cols, cols + 2);
            let canon: Vec<u32> = (0..(r + 2) * w)
                .map(|q| {
                    let (gr, gc) = ((q / w + r - 1) % r, (q % w + c - 1) % c);
                    ((gr + 1) * w + gc + 1) as u32
                })
                .collect();
            let site_of = canon.iter().map(|&q| ((q as usize / w - 1) * c + q as usize % w - 1) as u32).collect();
            (site_of, canon)
        }
        Geometry::Csr { .. } => ((0..d as u32).collect(), (0..d as u32).collect()),
    }
}

/// The class of the site at grid index `q` of the grid `g`; torus grids need fresh ghosts.
#[inline]
fn class_at(geo: &Geometry, g: &[u8], q: usize) -> u8 {
    match geo {
        Geometry::Torus { cols, .. } => {
            let w = cols + 2;
            g[q] * 5 + g[q - w] + g[q + w] + g[q - 1] + g[q + 1]
        }
        Geometry::Csr { offsets, nbrs, deg, dmax } => {
            let sz = dmax + 1;
            let up: usize =
                nbrs[offsets[q] as usize..offsets[q + 1] as usize].iter().map(|&t| g[t as usize] as usize).sum();
            (g[q] as usize * sz * sz + deg[q] as usize * sz + up) as u8
        }
    }
}

/// Flip sets larger than d / this take [`full_set_stats`]: visiting a flipped site and its
/// neighbours costs about as much as this many sites of the vectorised full pass (measured
/// on the bench lattices; DMALA proposals at small α flip 10–20% of the sites).
const FULL_PASS_RATIO: usize = 16;

/// The same statistics as [`flip_set_stats`] from one vectorised pass over all sites at y:
/// classes at y into `cls_y` (by site), H' − H from their histogram and `hist` (at x), F and
/// R from the flipped sites; `sc.changed` is left empty (the caller copies `cls_y`).
fn full_set_stats(
    geo: &Geometry,
    site_of: &[u32],
    y: &[u8],
    cls_x: &[u8],
    hist: &[u32],
    cls_y: &mut [u8],
    sc: &mut FlipScratch,
) {
    classes_of(geo, y, cls_y);
    let mut h2 = vec![0u32; hist.len()];
    count_into(cls_y, &mut h2);
    for ((dh, &a), &b) in sc.dh.iter_mut().zip(&h2).zip(hist) {
        *dh = a as i64 - b as i64;
    }
    sc.fw.fill(0);
    sc.rv.fill(0);
    sc.changed.clear();
    for &q in &sc.flipped {
        let s = site_of[q as usize] as usize;
        sc.fw[cls_x[s] as usize] += 1;
        sc.rv[cls_y[s] as usize] += 1;
    }
}

/// H' − H, F and R of a proposal from its flipped sites (`sc.flipped`, grid indices), the
/// proposal's grid `y` and the classes at x (by site): only the flipped sites and their
/// neighbours can change class, so each of them is visited once (epoch stamps) and its class
/// at y computed. Also records the sites whose class changed (`sc.changed`), to update the
/// cache on acceptance. The torus works in grid indices throughout (neighbours q ± 1, q ± w
/// mapped off the ghosts by `canon`), so no division per site.
fn flip_set_stats(geo: &Geometry, site_of: &[u32], canon: &[u32], y: &[u8], cls_x: &[u8], sc: &mut FlipScratch) {
    sc.dh.fill(0);
    sc.fw.fill(0);
    sc.rv.fill(0);
    sc.changed.clear();
    sc.epoch = sc.epoch.wrapping_add(1);
    if sc.epoch == 0 {
        sc.seen.fill(0);
        sc.epoch = 1;
    }
    let FlipScratch { flipped, seen, epoch, changed, dh, fw, rv } = sc;
    let mut visit = |q: usize| {
        if seen[q] == *epoch {
            return;
        }
        seen[q] = *epoch;
        let s = site_of[q] as usize;
        let (cx, cy) = (cls_x[s], class_at(geo, y, q));
        if cx != cy {
            dh[cx as usize] -= 1;
            dh[cy as usize] += 1;
            changed.push((s as u32, cy));
        }
    };
    for &q in flipped.iter() {
        let q = q as usize;
        fw[cls_x[site_of[q] as usize] as usize] += 1;
        rv[class_at(geo, y, q) as usize] += 1;
        visit(q);
        match geo {
            Geometry::Torus { cols, .. } => {
                let w = cols + 2;
                for t in [q - w, q - 1, q + 1, q + w] {
                    visit(canon[t] as usize);
                }
            }
            Geometry::Csr { offsets, nbrs, .. } => {
                for &t in &nbrs[offsets[q] as usize..offsets[q + 1] as usize] {
                    visit(t as usize);
                }
            }
        }
    }
}

/// DMALA pass 1 on one torus row: stage-1 decisions from the cached classes; the flipped
/// sites' classes go to `tag` at their grid index (255 elsewhere). Returns (flips, any tie).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn propose_row_body(
    x: &[u8],
    next: &mut [u8],
    rbuf: &[u8],
    cls: &[u8],
    tag: &mut [u8],
    hi: &[u16; TORUS_CLASSES],
    row: usize,
    c: usize,
) -> (u32, bool) {
    let w = c + 2;
    let mid = &x[(row + 1) * w + 1..][..c];
    let cls = &cls[row * c..][..c];
    let tag = &mut tag[(row + 1) * w + 1..][..c];
    let rnd = &rbuf[2 * row * c..][..2 * c];
    let out = &mut next[(row + 1) * w + 1..][..c];
    let mut flips = 0u32;
    let mut tie = 0u8;
    for i in 0..c {
        let k = cls[i];
        let t = sel10(k, hi);
        let r = u16::from_le_bytes([rnd[2 * i], rnd[2 * i + 1]]);
        let f = (r < t) as u8;
        tie |= (r == t) as u8;
        out[i] = mid[i] ^ f;
        tag[i] = if f != 0 { k } else { u8::MAX };
        flips += f as u32;
    }
    (flips, tie != 0)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[allow(clippy::too_many_arguments)]
fn propose_row_avx2(
    x: &[u8],
    next: &mut [u8],
    rbuf: &[u8],
    cls: &[u8],
    tag: &mut [u8],
    hi: &[u16; TORUS_CLASSES],
    row: usize,
    c: usize,
) -> (u32, bool) {
    propose_row_body(x, next, rbuf, cls, tag, hi, row, c)
}

#[allow(clippy::too_many_arguments)]
fn torus_propose_row(
    avx2: bool,
    x: &[u8],
    next: &mut [u8],
    rbuf: &[u8],
    cls: &[u8],
    tag: &mut [u8],
    hi: &[u16; TORUS_CLASSES],
    row: usize,
    c: usize,
) -> (u32, bool) {
    #[cfg(target_arch = "x86_64")]
    if avx2 {
        // SAFETY: `avx2` is true only when the CPU reported AVX2 at run time.
        return unsafe { propose_row_avx2(x, next, rbuf, cls, tag, hi, row, c) };
    }
    let _ = avx2;
    propose_row_body(x, next, rbuf, cls, tag, hi, row, c)
}

/// Tie resolution for DMALA pass 1 (classes cached); returns the change in the flip count.
#[allow(clippy::too_many_arguments)]
fn resolve_ties_tagged(
    x: &[u8],
    next: &mut [u8],
    rbuf: &[u8],
    cls: &[u8],
    tag: &mut [u8],
    thr: &[Threshold],
    row: usize,
    c: usize,
    rng: &mut ChainRng,
) -> i64 {
    let w = c + 2;
    let mut delta = 0;
    for i in 0..c {
        let s = row * c + i;
        let k = cls[s] as usize;
        let r16 = u16::from_le_bytes([rbuf[2 * s], rbuf[2 * s + 1]]);
        if r16 == thr[k].hi && (rng.next_u64() >> 16) < thr[k].lo {
            next[(row + 1) * w + i + 1] = x[(row + 1) * w + i + 1] ^ 1;
            tag[(row + 1) * w + i + 1] = k as u8;
            delta += 1;
        }
    }
    delta
}
