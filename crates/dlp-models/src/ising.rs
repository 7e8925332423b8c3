//! Ising model on spins or bits: ℓ(x) = Σ_i b_i u_i + Σ_{i<j} J_ij u_i u_j (`gof.md` §2), with
//! u the user value (±1 for spin, 0/1 for binary) and sparse couplings.
//!
//! Gradients are with respect to the bit x ∈ {0,1} (`model-file.md`): for spin u = 2x − 1, so
//! ∂ℓ/∂x_i = 2 (b_i + Σ_j J_ij u_j). The zero diagonal makes ℓ multilinear in x, so
//! g_i(x)(1 − 2x_i) is exactly the change of ℓ when bit i flips.

use crate::couplings::Couplings;
use crate::error::{ModelError, bit_space, check_finite};
use dlp_core::capability::{Conditionals, IsingView};
use dlp_core::{Capabilities, DomainKind, EvalError, RowTarget, Space};

/// Ising model with sparse symmetric couplings (see the module doc).
#[derive(Clone, Debug, PartialEq)]
pub struct IsingModel {
    space: Space,
    couplings: Couplings,
    b: Vec<f64>,
}

impl IsingModel {
    /// Builds the model on `domain` (spin or binary) with fields `b` (length d).
    pub fn new(domain: DomainKind, couplings: Couplings, b: Vec<f64>) -> Result<Self, ModelError> {
        let d = couplings.d();
        let space = bit_space(domain, d, "ising")?;
        if d == 0 {
            return Err(ModelError::param("d must be at least 1"));
        }
        if b.len() != d {
            return Err(ModelError::param(format!("b has length {} but d = {d}", b.len())));
        }
        check_finite("b", &b)?;
        Ok(IsingModel { space, couplings, b })
    }

    /// Nearest-neighbour lattice of `shape` with each pair weighted `coupling` (counted once).
    pub fn lattice(
        shape: &[usize],
        periodic: bool,
        coupling: f64,
        b: Vec<f64>,
        domain: DomainKind,
    ) -> Result<Self, ModelError> {
        Self::new(domain, Couplings::lattice(shape, periodic, coupling)?, b)
    }

    /// Couplings from pairs `(i, j, J_ij)`, 0 ≤ i < j < d, each pair once.
    pub fn from_edges(
        d: usize,
        edges: &[(usize, usize, f64)],
        b: Vec<f64>,
        domain: DomainKind,
    ) -> Result<Self, ModelError> {
        Self::new(domain, Couplings::from_edges(d, edges)?, b)
    }

    /// Couplings from a dense row-major d × d matrix (symmetric, zero diagonal), stored sparse.
    pub fn from_dense(d: usize, j: &[f64], b: Vec<f64>, domain: DomainKind) -> Result<Self, ModelError> {
        Self::new(domain, Couplings::from_dense(d, j)?, b)
    }

    /// The main paper's model (§3.2, spec P3): f(s) = sᵀJs + bᵀs on the L × L periodic lattice
    /// with J = σ·A, i.e. a once-counted coupling of 2σ per edge, and b_i = `bias`.
    pub fn paper_lattice(l: usize, sigma: f64, bias: f64) -> Self {
        Self::lattice(&[l, l], true, 2.0 * sigma, vec![bias; l * l], DomainKind::Spin)
            .expect("paper lattice parameters must be finite and L >= 1")
    }

    /// Number of sites.
    pub fn d(&self) -> usize {
        self.space.d
    }

    /// True on the spin domain (u = 2x − 1), false on binary (u = x).
    pub fn is_spin(&self) -> bool {
        self.space.kind == DomainKind::Spin
    }

    /// du/dx: 2 for spin, 1 for binary (the factor between value and bit gradients).
    pub fn value_scale(&self) -> f64 {
        if self.is_spin() { 2.0 } else { 1.0 }
    }

    /// The user value u of bit `c` (−1/+1 for spin, 0/1 for binary).
    #[inline]
    pub fn value_of(&self, c: u32) -> f64 {
        if self.is_spin() { 2.0 * c as f64 - 1.0 } else { c as f64 }
    }

    /// The couplings.
    pub fn couplings(&self) -> &Couplings {
        &self.couplings
    }

    /// The fields b (length d).
    pub fn fields(&self) -> &[f64] {
        &self.b
    }

    /// CSR offsets of the neighbour lists (length d + 1).
    pub fn neighbour_offsets(&self) -> &[usize] {
        self.couplings.offsets()
    }

    /// CSR neighbour indices (each pair in both rows).
    pub fn neighbours(&self) -> &[u32] {
        self.couplings.neighbours()
    }

    /// CSR weights aligned with [`IsingModel::neighbours`].
    pub fn neighbour_weights(&self) -> &[f64] {
        self.couplings.weights()
    }

    /// The model as the Ising capability: the CSR couplings, the fields and the lattice the
    /// couplings were built from, borrowed (what the lattice DLP kernel reads at `start`).
    pub fn view(&self) -> IsingView<'_> {
        IsingView {
            spin: self.is_spin(),
            offsets: self.couplings.offsets(),
            neighbours: self.couplings.neighbours(),
            weights: self.couplings.weights(),
            fields: &self.b,
            lattice: self.couplings.lattice_spec(),
        }
    }

    /// Neighbours of `i` and their weights.
    pub fn neighbours_of(&self, i: usize) -> (&[u32], &[f64]) {
        self.couplings.neighbours_of(i)
    }

    /// ∂ℓ/∂u_i = b_i + Σ_j J_ij u_j at state `x` (bits); O(degree).
    #[inline]
    pub fn local_field(&self, x: &[u32], i: usize) -> f64 {
        let (ns, ws) = self.couplings.neighbours_of(i);
        let mut s = self.b[i];
        for (&j, &w) in ns.iter().zip(ws) {
            s += w * self.value_of(x[j as usize]);
        }
        s
    }

    /// ℓ(x^{(i)}) − ℓ(x): the change of ℓ when bit i flips; O(degree).
    #[inline]
    pub fn flip_delta(&self, x: &[u32], i: usize) -> f64 {
        let du = self.value_of(1 - x[i]) - self.value_of(x[i]);
        du * self.local_field(x, i)
    }

    fn f(&self, x: &[u32]) -> f64 {
        let mut total = 0.0;
        for i in 0..self.d() {
            let ui = self.value_of(x[i]);
            if ui == 0.0 {
                continue;
            }
            let (ns, ws) = self.couplings.neighbours_of(i);
            let mut pair = 0.0;
            for (&j, &w) in ns.iter().zip(ws) {
                if j as usize > i {
                    pair += w * self.value_of(x[j as usize]);
                }
            }
            total += ui * (self.b[i] + pair);
        }
        total
    }
}

impl RowTarget for IsingModel {
    fn row_space(&self) -> &Space {
        &self.space
    }

    fn row_log_density(&self, x: &[u32]) -> f64 {
        self.f(x)
    }

    fn row_log_density_grad(&self, x: &[u32], g: &mut [f64]) -> f64 {
        let scale = self.value_scale();
        for (i, gi) in g.iter_mut().enumerate() {
            *gi = scale * self.local_field(x, i);
        }
        self.f(x)
    }

    fn row_capabilities(&self) -> Capabilities<'_> {
        Capabilities { ising: Some(self.view()), conditionals: Some(self), ..Capabilities::default() }
    }
}

/// One flip is O(degree): the Ising conditionals are its local fields.
impl Conditionals for IsingModel {
    fn coordinate_deltas(&self, x: &[u32], i: usize, out: &mut [f64]) -> Result<(), EvalError> {
        out[x[i] as usize] = 0.0;
        out[1 - x[i] as usize] = self.flip_delta(x, i);
        Ok(())
    }

    fn flip_deltas(&self, x: &[u32], out: &mut [f64]) -> Result<(), EvalError> {
        for (i, o) in out.iter_mut().enumerate() {
            *o = self.flip_delta(x, i);
        }
        Ok(())
    }

    fn cheap_flip_delta(&self, x: &[u32], i: usize) -> Option<f64> {
        Some(self.flip_delta(x, i))
    }
}
