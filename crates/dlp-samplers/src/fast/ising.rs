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
//! * **Flip decisions** compare 16-bit uniforms with the top 16 bits of ⌊p·2⁶⁴⌋ (see
//!   [`super::Threshold`]); 48 more bits are drawn only on a tie (probability 2⁻¹⁶). Per
//!   chain and step the randomness is: 2·d bytes from `rngs[j]` (`fill_bytes`), then one
//!   `next_u64` per tie in site order, then (DMALA, if the proposal moves) the MH uniform.
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
//!   No log-density or gradient is evaluated; one pass over y recomputes its classes (the
//!   "incremental gradient": the gradient at y is its class array).
//!
//! `positions()` is kept up to date in the usual `n × d` u32 layout at every step (written
//! from the row kernel); `log_densities()` is computed on demand for DULA and maintained
//! for DMALA. `StepInfo` is the generic path's: a proposal that moves counts one density
//! and one gradient evaluation; a proposal that stays is not evaluated and (DMALA) draws no
//! MH uniform.

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
    /// Top and second bytes of the torus thresholds (the stage-1 16-bit value, split).
    thi: [u8; TORUS_CLASSES],
    tlo: [u8; TORUS_CLASSES],
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
    tag: Vec<u8>,
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
        let (mut thi, mut tlo) = ([0u8; TORUS_CLASSES], [0u8; TORUS_CLASSES]);
        let (mut t8, mut lo56) = ([0u8; TORUS_CLASSES], [0u64; TORUS_CLASSES]);
        let mut interior = Vec::new();
        if let Geometry::Torus { rows, cols } = geo {
            for (k, t) in cl.thr.iter().enumerate() {
                hi10[k] = t.hi;
                thi[k] = (t.hi >> 8) as u8;
                tlo[k] = t.hi as u8;
                t8[k] = (t.bits() >> 56) as u8;
                lo56[k] = t.bits() & LOW56;
            }
            let w = cols + 2;
            interior = (0..rows * w - 2).map(|q| u8::from((q + 1) % w != 0 && (q + 1) % w != w - 1)).collect();
        }
        let gl = geo.grid_len(d);
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
            thi,
            tlo,
            interior,
            t8,
            lo56,
            avx2: has_avx2(),
            grid: vec![vec![0; gl]; n],
            next: vec![0; gl],
            cls: if mh { vec![0; n * d] } else { Vec::new() },
            hist: if mh { vec![0; n * nc] } else { Vec::new() },
            tag: vec![0; d],
            scratch: FlipScratch::new(d, nc),
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
        let (mut cx, mut cy) = (vec![0; self.d], vec![0; self.d]);
        classes_of(&self.geo, &gx, &mut cx);
        classes_of(&self.geo, &gy, &mut cy);
        // The step's own path: the flipped sites' tags, then the flip-set statistics.
        let tag: Vec<u8> = (0..self.d).map(|i| if x[i] != y[i] { cx[i] } else { u8::MAX }).collect();
        let mut sc = FlipScratch::new(self.d, nc);
        collect_flipped(&tag, &mut sc.flipped);
        flip_set_stats(&self.geo, &gy, &cx, &mut sc);
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
        let (d, gl) = (self.d, self.gl);
        rng.fill_bytes(&mut self.rbuf);
        let x = &self.grid[j * gl..(j + 1) * gl];
        let pos = &mut self.pos[j * d..(j + 1) * d];
        let flips = match &self.geo {
            Geometry::Torus { rows, cols } => {
                let (r, c) = (*rows, *cols);
                let w = c + 2;
                let len = r * w - 2;
                let (rh, rl) = self.rbuf.split_at(len);
                let mut flips = 0;
                for b0 in (0..len).step_by(BLOCK) {
                    let bl = BLOCK.min(len - b0);
                    let (k, tie) = torus_dula_block(
                        self.avx2,
                        x,
                        &mut self.next,
                        rh,
                        rl,
                        &self.interior,
                        &self.thi,
                        &self.tlo,
                        b0,
                        bl,
                        w,
                    );
                    flips += k;
                    if tie {
                        flips +=
                            resolve_ties_block(x, &mut self.next, rh, rl, &self.interior, &self.cl.thr, b0, bl, w, rng);
                    }
                }
                refresh_ghosts(&mut self.next, r, c);
                gather(&self.geo, &self.next, pos);
                flips
            }
            Geometry::Csr { offsets, nbrs, deg, dmax } => {
                let s = dmax + 1;
                let mut flips = 0;
                for i in 0..d {
                    let up: u32 =
                        nbrs[offsets[i] as usize..offsets[i + 1] as usize].iter().map(|&q| x[q as usize] as u32).sum();
                    let k = x[i] as usize * s * s + deg[i] as usize * s + up as usize;
                    let r16 = u16::from_le_bytes([self.rbuf[2 * i], self.rbuf[2 * i + 1]]);
                    let flip = decide(r16, &self.cl.thr[k], rng);
                    self.next[i] = x[i] ^ flip as u8;
                    pos[i] = self.next[i] as u32;
                    flips += flip as u32;
                }
                flips
            }
        };
        self.grid[j * gl..(j + 1) * gl].copy_from_slice(&self.next);
        flips
    }

    /// DMALA: one step of chain j.
    fn dmala_chain(&mut self, j: usize, rng: &mut ChainRng) -> StepInfo {
        let (d, gl, nc) = (self.d, self.gl, self.geo.n_classes());
        rng.fill_bytes(&mut self.rbuf[..2 * d]);
        let x = &self.grid[j * gl..(j + 1) * gl];
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
        // Pass 2, at y: classes, their histogram, and the flipped sites' classes.
        classes_of(&self.geo, &self.next, &mut self.cls_next);
        for i in 0..d {
            self.tag_next[i] = if self.tag[i] != u8::MAX { self.cls_next[i] } else { u8::MAX };
        }
        let mut h2 = vec![0u32; nc];
        let mut fw = vec![0u32; nc];
        let mut rv = vec![0u32; nc];
        count_into(&self.cls_next, &mut h2);
        count_into(&self.tag, &mut fw);
        count_into(&self.tag_next, &mut rv);
        let (a, de2, dm) = self.ratio(&self.hist[j * nc..(j + 1) * nc], &h2, &fw, &rv);
        let (accepted, accept_prob) = mh_accept(a, rng);
        if accepted {
            self.grid[j * gl..(j + 1) * gl].copy_from_slice(&self.next);
            self.cls[j * d..(j + 1) * d].copy_from_slice(&self.cls_next);
            self.hist[j * nc..(j + 1) * nc].copy_from_slice(&h2);
            self.e2[j] += de2;
            self.mm[j] += dm;
            self.f[j] = self.f_of(self.e2[j], self.mm[j]);
            gather(&self.geo, &self.next, &mut self.pos[j * d..(j + 1) * d]);
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
}

impl Chains for IsingDlpChains {
    fn n_chains(&self) -> usize {
        self.n
    }

    fn positions(&self) -> &[u32] {
        &self.pos
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
                    classes_of(&self.geo, &self.grid[j * self.gl..(j + 1) * self.gl], &mut cls);
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

/// Positions per DULA block: short enough that a tie (probability 2⁻¹⁶ per site) costs a
/// scalar rescan of few sites, long enough to amortise the call.
const BLOCK: usize = 256;

/// DULA on positions `b0..b0 + bl` of the flattened padded range (position q is grid index
/// q + w + 1): stage-1 decisions with the 16-bit uniform (rh[q] << 8 | rl[q]) against the
/// class threshold, ghost columns masked out, ties left unflipped and reported. New bits go
/// to `next`. Returns (flips, any tie). All lanes are bytes, so AVX2 handles 32 sites per
/// instruction.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn dula_block_body(
    x: &[u8],
    next: &mut [u8],
    rh: &[u8],
    rl: &[u8],
    interior: &[u8],
    thi: &[u8; TORUS_CLASSES],
    tlo: &[u8; TORUS_CLASSES],
    b0: usize,
    bl: usize,
    w: usize,
) -> (u32, bool) {
    let g0 = b0 + w + 1;
    let up = &x[g0 - w..][..bl];
    let mid = &x[g0..][..bl];
    let left = &x[g0 - 1..][..bl];
    let right = &x[g0 + 1..][..bl];
    let down = &x[g0 + w..][..bl];
    let rh = &rh[b0..][..bl];
    let rl = &rl[b0..][..bl];
    let mask = &interior[b0..][..bl];
    let out = &mut next[g0..][..bl];
    let mut flips = 0u32;
    let mut tie = 0u8;
    for i in 0..bl {
        let k = mid[i] * 5 + up[i] + down[i] + left[i] + right[i];
        let (mut th, mut tl) = (thi[0], tlo[0]);
        for j in 1..TORUS_CLASSES {
            if k == j as u8 {
                th = thi[j];
                tl = tlo[j];
            }
        }
        let (a, b) = (rh[i], rl[i]);
        let lt = (a < th) | ((a == th) & (b < tl));
        let eq = (a == th) & (b == tl);
        let f = lt as u8 & mask[i];
        tie |= eq as u8 & mask[i];
        out[i] = mid[i] ^ f;
        flips += f as u32;
    }
    (flips, tie != 0)
}

/// The AVX2 form of [`dula_block_body`], written with intrinsics because the compiler's
/// version of the 10-way class select spilled registers: classes index two `pshufb`
/// tables (top and second byte of the 16-bit thresholds), 32 sites per iteration, the
/// unsigned byte comparisons done as signed ones after flipping the sign bit. The tail
/// (< 32 sites) goes through the portable body.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[allow(clippy::too_many_arguments)]
fn dula_block_avx2(
    x: &[u8],
    next: &mut [u8],
    rh: &[u8],
    rl: &[u8],
    interior: &[u8],
    thi: &[u8; TORUS_CLASSES],
    tlo: &[u8; TORUS_CLASSES],
    b0: usize,
    bl: usize,
    w: usize,
) -> (u32, bool) {
    use std::arch::x86_64::*;
    let g0 = b0 + w + 1;
    // Every load below reads 32 bytes at offset i < bl − 31 of slices of length ≥ bl.
    assert!(g0 + w + bl <= x.len() && g0 + bl <= next.len() && b0 + bl <= rh.len() && b0 + bl <= rl.len());
    assert!(b0 + bl <= interior.len() && g0 > w);
    let (mut th16, mut tl16) = ([0u8; 16], [0u8; 16]);
    th16[..TORUS_CLASSES].copy_from_slice(thi);
    tl16[..TORUS_CLASSES].copy_from_slice(tlo);
    let vec_len = bl - bl % 32;
    let mut flips = 0u32;
    let mut tie_any = false;
    // SAFETY: AVX2 is enabled on this function; all pointer reads/writes are in bounds by
    // the asserts above (i + 32 ≤ vec_len ≤ bl).
    unsafe {
        let load = |p: *const u8| _mm256_loadu_si256(p as *const __m256i);
        let th_t = _mm256_broadcastsi128_si256(_mm_loadu_si128(th16.as_ptr() as *const __m128i));
        let tl_t = _mm256_broadcastsi128_si256(_mm_loadu_si128(tl16.as_ptr() as *const __m128i));
        let sign = _mm256_set1_epi8(i8::MIN);
        let zero = _mm256_setzero_si256();
        let mut acc = _mm256_setzero_si256();
        let mut ties = _mm256_setzero_si256();
        let xp = x.as_ptr();
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
            let th = _mm256_shuffle_epi8(th_t, k);
            let tl = _mm256_shuffle_epi8(tl_t, k);
            let a = load(rh.as_ptr().add(b0 + i));
            let b = load(rl.as_ptr().add(b0 + i));
            let lt_hi = _mm256_cmpgt_epi8(_mm256_xor_si256(th, sign), _mm256_xor_si256(a, sign));
            let eq_hi = _mm256_cmpeq_epi8(th, a);
            let lt_lo = _mm256_cmpgt_epi8(_mm256_xor_si256(tl, sign), _mm256_xor_si256(b, sign));
            let eq_lo = _mm256_cmpeq_epi8(tl, b);
            let mask = load(interior.as_ptr().add(b0 + i));
            let flip = _mm256_and_si256(_mm256_or_si256(lt_hi, _mm256_and_si256(eq_hi, lt_lo)), mask);
            ties = _mm256_or_si256(ties, _mm256_and_si256(_mm256_and_si256(eq_hi, eq_lo), mask));
            _mm256_storeu_si256(next.as_mut_ptr().add(g) as *mut __m256i, _mm256_xor_si256(mid, flip));
            acc = _mm256_add_epi64(acc, _mm256_sad_epu8(flip, zero));
            i += 32;
        }
        let mut lanes = [0u64; 4];
        _mm256_storeu_si256(lanes.as_mut_ptr() as *mut __m256i, acc);
        flips += lanes.iter().sum::<u64>() as u32;
        tie_any |= _mm256_testz_si256(ties, ties) == 0;
    }
    if vec_len < bl {
        let (f, t) = dula_block_body(x, next, rh, rl, interior, thi, tlo, b0 + vec_len, bl - vec_len, w);
        flips += f;
        tie_any |= t;
    }
    (flips, tie_any)
}

#[allow(clippy::too_many_arguments)]
fn torus_dula_block(
    avx2: bool,
    x: &[u8],
    next: &mut [u8],
    rh: &[u8],
    rl: &[u8],
    interior: &[u8],
    thi: &[u8; TORUS_CLASSES],
    tlo: &[u8; TORUS_CLASSES],
    b0: usize,
    bl: usize,
    w: usize,
) -> (u32, bool) {
    #[cfg(target_arch = "x86_64")]
    if avx2 {
        // SAFETY: `avx2` is true only when the CPU reported AVX2 at run time.
        return unsafe { dula_block_avx2(x, next, rh, rl, interior, thi, tlo, b0, bl, w) };
    }
    let _ = avx2;
    dula_block_body(x, next, rh, rl, interior, thi, tlo, b0, bl, w)
}

/// Resolves the stage-1 ties of one DULA block (in site order) with 48 more bits each;
/// returns the number of extra flips.
#[allow(clippy::too_many_arguments)]
fn resolve_ties_block(
    x: &[u8],
    next: &mut [u8],
    rh: &[u8],
    rl: &[u8],
    interior: &[u8],
    thr: &[Threshold],
    b0: usize,
    bl: usize,
    w: usize,
    rng: &mut ChainRng,
) -> u32 {
    let mut extra = 0;
    for q in b0..b0 + bl {
        if interior[q] == 0 {
            continue;
        }
        let g = q + w + 1;
        let k = (x[g] * 5 + x[g - w] + x[g + w] + x[g - 1] + x[g + 1]) as usize;
        let r16 = (rh[q] as u16) << 8 | rl[q] as u16;
        if r16 == thr[k].hi && (rng.next_u64() >> 16) < thr[k].lo {
            next[g] = x[g] ^ 1;
            extra += 1;
        }
    }
    extra
}

/// DMALA pass 1 on one torus row: stage-1 decisions from the cached classes; the flipped
/// sites' classes go to `tag` (255 elsewhere). Returns (flips, any tie).
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
    let tag = &mut tag[row * c..][..c];
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
            tag[s] = k as u8;
            delta += 1;
        }
    }
    delta
}
