//! DULA and DMALA on a sparse Ising model whose sites each have **one coupling to all their
//! neighbours** and **any fields** — DISCS's Ising tasks (open lattices with a random field
//! per site) are the case in point — with per-site class tables: per step O(d) random bytes
//! and byte comparisons, plus O(|M|·(degree + 1)) table look-ups for the flip set M, and no
//! gradient, density or transcendental function evaluated.
//!
//! The same kernel as [`crate::dlp`] (spec `reproduction.md` §1.4, §1.8), specialised:
//!
//! * **Classes per site.** With u = 2x − 1 (spin) or x (binary), the local field of site i is
//!   h_i = b_i + w_i Σ_{j~i} u_j, and Σ_j u_j = 2·up − deg_i (spin) or up (binary), where `up`
//!   counts the neighbours whose bit is 1. So site i is in one of 2·(deg_i + 1) classes
//!   k = x_i·S + up (S = max degree + 1), and its gradient entry g_i = c h_i (c = 2 spin, 1
//!   binary), flip logit ℓ_i = β g_i (1 − 2x_i) − 1/(2α), softplus(ℓ_i), flip threshold and
//!   first-order change g_i (1 − 2x_i) (exact for this multilinear f: the flip's f(x') − f(x))
//!   are tabulated per (site, class) in f64 from the generic formula (one rounding for w_i·Σu
//!   instead of one per neighbour; the tests compare with the generic kernel to 1e-12). This
//!   differs from [`super::ising`], whose classes are shared by all sites because its field is
//!   uniform; here tables are d·2S entries, so the fast path requires d·2S ≤ [`MAX_ENTRIES`].
//! * **Flip decisions** compare one random byte per site with the top byte of
//!   T = ⌊p·2⁶⁴⌋ (kept per chain and site, so the scan is two byte streams and vectorises);
//!   on a tie (probability 2⁻⁸) `next_u64() >> 8` is compared with the low 56 bits, so the
//!   realised flip probability is exactly T/2⁶⁴ (see [`super::Threshold`]). Per chain and
//!   step: d bytes (`fill_bytes`), one `next_u64` per tie in site order, then (DMALA, if the
//!   proposal moves) the MH uniform.
//! * **DMALA's ratio** A = f(y) − f(x) + log q(x|y) − log q(y|x) needs only the sites whose
//!   class changes — M and its neighbours, the "touched" sites T: f(y) − f(x) is the sum of
//!   the flips' first-order changes taken one after another (each flip moving its
//!   neighbours' classes), and log q(x|y) − log q(y|x) = Σ_{i∈M} (ℓ_i(y) − ℓ_i(x)) −
//!   Σ_{i∈T} (softplus ℓ_i(y) − softplus ℓ_i(x)), every other site keeping its class and so its
//!   factor. A rejection restores the touched classes; an acceptance refreshes their
//!   thresholds.
//!
//! `StepInfo` is the generic path's: a proposal that moves counts one density and one gradient
//! evaluation; a proposal that stays is not evaluated and (DMALA) draws no MH uniform. The
//! cached f of a chain is updated by the flip differences and recomputed from its classes
//! every [`super::REFRESH`] steps.

use super::RefreshClock;
use super::Threshold;
use crate::proposal::mh_accept;
use dlp_core::capability::IsingView;
use dlp_core::math::{sigmoid, softplus};
use dlp_core::{ChainRng, SamplerError, StepInfo, Target};
use rand::Rng;

/// Largest degree the class byte holds (2·(degree + 1) ≤ 32 classes per site).
const MAX_DEGREE: usize = 15;

/// Largest table size d·2S (entries of 33 bytes) for which the fast path is taken.
pub const MAX_ENTRIES: usize = 1 << 22;

/// Sites per block of the flip scan ([`super::block_hits`]).
const BLOCK: usize = super::HIT_BLOCK;

const LOW56: u64 = (1 << 56) - 1;

/// The model's Ising view when this fast path applies: every site's couplings equal (one
/// w_i per row; J is symmetric, so one coupling per connected component), degrees at most
/// [`MAX_DEGREE`], everything finite, tables within [`MAX_ENTRIES`].
pub fn qualifying_model(target: &dyn Target) -> Option<IsingView<'_>> {
    let m = target.capabilities().ising?;
    let d = m.d();
    let mut dmax = 0;
    for i in 0..d {
        let row = &m.weights[m.offsets[i]..m.offsets[i + 1]];
        dmax = dmax.max(row.len());
        if row.iter().any(|&w| w != row[0] || !w.is_finite()) || !m.fields[i].is_finite() {
            return None;
        }
    }
    (d > 0 && dmax <= MAX_DEGREE && d * 2 * (dmax + 1) <= MAX_ENTRIES).then_some(m)
}

/// One (site, class) entry: the flip's f(x') − f(x), its logit, softplus of the logit, and
/// the low 56 bits of its threshold — together, so a visit to a site is one cache line (the
/// four tables apart were four misses per touched site at d = 2,500).
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(32))]
struct Entry {
    change: f64,
    logit: f64,
    softplus: f64,
    low: u64,
}

/// Running DULA/DMALA chains on an Ising view with one coupling per site (module doc).
pub struct SiteIsingChains {
    n: usize,
    d: usize,
    mh: bool,
    spin: bool,
    /// Classes per bit value: max degree + 1.
    s: usize,
    offsets: Vec<usize>,
    nbrs: Vec<u32>,
    /// The per-site quantities the tables are built from: field, coupling, degree.
    fields: Vec<f64>,
    coupling: Vec<f64>,
    degree: Vec<usize>,
    /// Tables, site-major (`[i·2S + k]`): per (site, class) one [`Entry`], and the threshold's
    /// top byte apart (the scan's and an acceptance's only read).
    table: Vec<Entry>,
    top: Vec<u8>,
    /// Per chain: bits, classes, current threshold top bytes, f, steps since f was recomputed.
    x: Vec<u32>,
    cls: Vec<u8>,
    t8: Vec<u8>,
    f: Vec<f64>,
    refresh: RefreshClock,
    // Scratch, reused every step.
    rbuf: Vec<u8>,
    flips: Vec<usize>,
    /// Sites whose class the proposal changed, with their class at x.
    touched: Vec<(usize, u8)>,
    /// `marks[i] == stamp` iff site i is in `touched` for the current proposal.
    marks: Vec<u32>,
    stamp: u32,
}

impl SiteIsingChains {
    /// Starts `x0.len() / d` chains on the Ising view `m` (DMALA when `mh`, DULA otherwise);
    /// [`SiteIsingChains::set_proposal`] sets the step size and gradient weight (until then
    /// α = ∞, β = ½).
    pub fn new(m: &IsingView<'_>, mh: bool, x0: &[u32]) -> Result<Self, SamplerError> {
        let d = m.d();
        let n = x0.len() / d;
        if n == 0 || !x0.len().is_multiple_of(d) {
            return Err(SamplerError::BadInitialState(format!("{} values do not form rows of d = {d}", x0.len())));
        }
        if let Some(v) = x0.iter().find(|&&v| v > 1) {
            return Err(SamplerError::BadInitialState(format!("value {v} is not a bit")));
        }
        let degree: Vec<usize> = (0..d).map(|i| m.offsets[i + 1] - m.offsets[i]).collect();
        let s = degree.iter().copied().max().unwrap_or(0) + 1;
        let coupling = (0..d).map(|i| if degree[i] > 0 { m.weights[m.offsets[i]] } else { 0.0 }).collect();
        let entries = d * 2 * s;
        let mut c = SiteIsingChains {
            n,
            d,
            mh,
            spin: m.spin,
            s,
            offsets: m.offsets.to_vec(),
            nbrs: m.neighbours.to_vec(),
            fields: m.fields.to_vec(),
            coupling,
            degree,
            table: vec![Entry::default(); entries],
            top: vec![0; entries],
            x: x0.to_vec(),
            cls: vec![0; n * d],
            t8: vec![0; n * d],
            f: vec![0.0; n],
            refresh: RefreshClock::new(n),
            rbuf: vec![0; d],
            flips: Vec::new(),
            touched: Vec::new(),
            marks: vec![0; d],
            stamp: 0,
        };
        for j in 0..n {
            for i in 0..d {
                let up: usize = c.neighbours(i).iter().map(|&q| x0[j * d + q as usize] as usize).sum();
                c.cls[j * d + i] = (x0[j * d + i] as usize * s + up) as u8;
            }
            c.f[j] = c.f_from_classes(j);
        }
        c.set_proposal(0.0, 0.5);
        Ok(c)
    }

    fn neighbours(&self, i: usize) -> &[u32] {
        &self.nbrs[self.offsets[i]..self.offsets[i + 1]]
    }

    /// Rebuilds the logit tables for the distance penalty 1/(2α) = `half_inv_step` and the
    /// gradient weight β = `beta`, and every chain's thresholds.
    pub fn set_proposal(&mut self, half_inv_step: f64, beta: f64) {
        let (s, c) = (self.s, if self.spin { 2.0 } else { 1.0 });
        for i in 0..self.d {
            for k in 0..2 * s {
                let (bit, up) = ((k / s) as f64, (k % s) as f64);
                let sum_u = if self.spin { 2.0 * up - self.degree[i] as f64 } else { up };
                let g = c * (self.fields[i] + self.coupling[i] * sum_u);
                let r = 1.0 - 2.0 * bit;
                let e = i * 2 * s + k;
                // The generic logit's arithmetic (`DlpProposal::logits`), in its order.
                let l = beta * g * r - half_inv_step;
                let t = Threshold::of_probability(sigmoid(l)).bits();
                self.table[e] = Entry { change: g * r, logit: l, softplus: softplus(l), low: t & LOW56 };
                self.top[e] = (t >> 56) as u8;
            }
        }
        for j in 0..self.n {
            for i in 0..self.d {
                self.t8[j * self.d + i] = self.top[i * 2 * s + self.cls[j * self.d + i] as usize];
            }
        }
    }

    /// Table index of site i of chain j in its current class.
    #[inline]
    fn entry(&self, j: usize, i: usize) -> usize {
        i * 2 * self.s + self.cls[j * self.d + i] as usize
    }

    /// f of chain j from its classes: Σ_i u_i (b_i + ½ w_i Σ_{j~i} u_j).
    fn f_from_classes(&self, j: usize) -> f64 {
        (0..self.d)
            .map(|i| {
                let k = self.cls[j * self.d + i] as usize;
                let (bit, up) = ((k / self.s) as f64, (k % self.s) as f64);
                let (u, sum_u) =
                    if self.spin { (2.0 * bit - 1.0, 2.0 * up - self.degree[i] as f64) } else { (bit, up) };
                u * (self.fields[i] + 0.5 * self.coupling[i] * sum_u)
            })
            .sum()
    }

    /// The flip probability T/2⁶⁴ the kernel realises at every site of `x` (bits, length d),
    /// for tests against the generic logits.
    pub fn flip_probabilities(&self, x: &[u32]) -> Vec<f64> {
        let s = self.s;
        (0..self.d)
            .map(|i| {
                let up: usize = self.neighbours(i).iter().map(|&q| x[q as usize] as usize).sum();
                let e = i * 2 * s + x[i] as usize * s + up;
                ((self.top[e] as u64) << 56 | self.table[e].low) as f64 / 18_446_744_073_709_551_616.0
            })
            .collect()
    }

    /// The DMALA log acceptance ratio this kernel computes for the move from chain j's state
    /// to `y`, without moving the chain (tests compare it with the generic ratio).
    pub fn log_accept_ratio(&mut self, j: usize, y: &[u32]) -> f64 {
        let d = self.d;
        self.flips.clear();
        self.flips.extend((0..d).filter(|&i| self.x[j * d + i] != y[i]));
        let (_, a) = self.propose(j);
        self.restore(j);
        a
    }

    /// Draws chain j's flip set into `flips` (module doc: one byte per site, a tie drawing
    /// 56 more bits).
    fn draw_flips(&mut self, j: usize, rng: &mut ChainRng) {
        let d = self.d;
        let r8 = &mut self.rbuf[..d];
        rng.fill_bytes(r8);
        self.flips.clear();
        let t8 = &self.t8[j * d..(j + 1) * d];
        let cls = &self.cls[j * d..(j + 1) * d];
        for (b, (rb, tb)) in r8.chunks(BLOCK).zip(t8.chunks(BLOCK)).enumerate() {
            // One vectorised pass marks the block's flips and ties; only those are visited.
            let mut hits = super::block_hits(rb, tb);
            while hits != 0 {
                let q = hits.trailing_zeros() as usize;
                hits &= hits - 1;
                let (i, r, t) = (b * BLOCK + q, rb[q], tb[q]);
                if r < t || (rng.next_u64() >> 8) < self.table[i * 2 * self.s + cls[i] as usize].low {
                    self.flips.push(i);
                }
            }
        }
    }

    /// Records site i's class at x the first time the proposal touches it.
    #[inline]
    fn touch(&mut self, j: usize, i: usize) {
        if self.marks[i] != self.stamp {
            self.marks[i] = self.stamp;
            self.touched.push((i, self.cls[j * self.d + i]));
        }
    }

    /// Moves chain j's classes to y = x with `flips` flipped (bits untouched); returns
    /// f(y) − f(x) and DMALA's log acceptance ratio. [`SiteIsingChains::restore`] undoes it.
    fn propose(&mut self, j: usize) -> (f64, f64) {
        let (d, s) = (self.d, self.s);
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.marks.fill(0);
            self.stamp = 1;
        }
        self.touched.clear();
        let mut fwd = 0.0;
        for &i in &self.flips {
            fwd += self.table[self.entry(j, i)].logit;
        }
        let mut df = 0.0;
        for q in 0..self.flips.len() {
            let i = self.flips[q];
            self.touch(j, i);
            df += self.table[self.entry(j, i)].change;
            let k = self.cls[j * d + i] as usize;
            let rising = k < s;
            self.cls[j * d + i] = if rising { k + s } else { k - s } as u8;
            for e in self.offsets[i]..self.offsets[i + 1] {
                let nb = self.nbrs[e] as usize;
                self.touch(j, nb);
                let c = &mut self.cls[j * d + nb];
                *c = if rising { *c + 1 } else { *c - 1 };
            }
        }
        if !self.mh {
            return (df, 0.0);
        }
        let mut rev = 0.0;
        for &i in &self.flips {
            rev += self.table[self.entry(j, i)].logit;
        }
        let mut dsp = 0.0;
        for &(i, old) in &self.touched {
            dsp += self.table[self.entry(j, i)].softplus - self.table[i * 2 * s + old as usize].softplus;
        }
        (df, df + (rev - fwd) - dsp)
    }

    /// Puts the touched classes of chain j back to x's.
    fn restore(&mut self, j: usize) {
        for &(i, old) in &self.touched {
            self.cls[j * self.d + i] = old;
        }
    }

    /// Completes an accepted proposal of chain j: bits, thresholds and f.
    fn accept(&mut self, j: usize, df: f64) {
        let d = self.d;
        for &i in &self.flips {
            self.x[j * d + i] ^= 1;
        }
        for q in 0..self.touched.len() {
            let i = self.touched[q].0;
            self.t8[j * d + i] = self.top[self.entry(j, i)];
        }
        self.f[j] += df;
    }

    /// One step of chain j.
    fn step_chain(&mut self, j: usize, rng: &mut ChainRng) -> StepInfo {
        self.draw_flips(j, rng);
        let k = self.flips.len() as u32;
        let info = if k == 0 {
            StepInfo::stayed()
        } else {
            let (df, a) = self.propose(j);
            let (accepted, accept_prob) = if self.mh { mh_accept(a, rng) } else { (true, 1.0) };
            if accepted {
                self.accept(j, df);
            } else {
                self.restore(j);
            }
            StepInfo::evaluated(accepted, accept_prob, k)
        };
        if self.refresh.due(j) {
            self.f[j] = self.f_from_classes(j);
        }
        info
    }
}

super::chains_stepped_one_by_one!(SiteIsingChains, x);
