//! Sparse symmetric pair couplings shared by the Ising and Potts models.
//!
//! Stored as CSR neighbour lists (each pair appears in both rows) so that conditionals cost
//! O(degree) and lattices never allocate a dense d × d matrix.

use crate::error::ModelError;
use std::collections::BTreeMap;

/// A nearest-neighbour lattice as given in a model file. Defined in dlp-core, since the
/// Ising capability ([`dlp_core::capability::IsingView`]) hands it to the lattice kernel.
pub use dlp_core::capability::LatticeSpec;

/// Symmetric couplings J_ij with zero diagonal, as neighbour lists.
#[derive(Clone, Debug, PartialEq)]
pub struct Couplings {
    d: usize,
    offsets: Vec<usize>,
    neighbours: Vec<u32>,
    weights: Vec<f64>,
    lattice: Option<LatticeSpec>,
}

impl Couplings {
    /// No couplings on `d` sites.
    pub fn none(d: usize) -> Self {
        Couplings { d, offsets: vec![0; d + 1], neighbours: Vec::new(), weights: Vec::new(), lattice: None }
    }

    /// From a list of pairs `(i, j, weight)` with `0 ≤ i < j < d`, each pair at most once.
    pub fn from_edges(d: usize, edges: &[(usize, usize, f64)]) -> Result<Self, ModelError> {
        let mut seen: BTreeMap<(usize, usize), usize> = BTreeMap::new();
        for (e, &(i, j, w)) in edges.iter().enumerate() {
            if !(i < j && j < d) {
                return Err(ModelError::param(format!("edges[{e}]: need 0 <= i < j < d (d = {d}), found [{i}, {j}]")));
            }
            if !w.is_finite() {
                return Err(ModelError::param(format!("edges[{e}]: weight is not a finite number: {w}")));
            }
            if let Some(first) = seen.insert((i, j), e) {
                return Err(ModelError::param(format!(
                    "edges[{e}]: pair ({i}, {j}) appears twice (first at edges[{first}])"
                )));
            }
        }
        Ok(Self::from_unique_pairs(d, edges.iter().copied()))
    }

    /// From a dense row-major d × d matrix: symmetric within 1e-12, zero diagonal, finite.
    /// Zero entries are dropped; the upper triangle gives the weights.
    pub fn from_dense(d: usize, j: &[f64]) -> Result<Self, ModelError> {
        if j.len() != d * d {
            return Err(ModelError::param(format!("J must be a d × d matrix (d = {d}), found {} entries", j.len())));
        }
        for r in 0..d {
            for c in 0..d {
                let v = j[r * d + c];
                if !v.is_finite() {
                    return Err(ModelError::param(format!("J[{r}][{c}] is not a finite number: {v}")));
                }
            }
        }
        for r in 0..d {
            if j[r * d + r] != 0.0 {
                return Err(ModelError::param(format!("J has a nonzero diagonal: J[{r}][{r}] = {}", j[r * d + r])));
            }
            for c in r + 1..d {
                let (a, b) = (j[r * d + c], j[c * d + r]);
                if (a - b).abs() > 1e-12 {
                    return Err(ModelError::param(format!("J is not symmetric: J[{r}][{c}] = {a}, J[{c}][{r}] = {b}")));
                }
            }
        }
        let pairs = (0..d).flat_map(|r| (r + 1..d).map(move |c| (r, c))).filter_map(|(r, c)| {
            let w = j[r * d + c];
            (w != 0.0).then_some((r, c, w))
        });
        Ok(Self::from_unique_pairs(d, pairs))
    }

    /// Nearest-neighbour pairs of a lattice of `shape` (row-major site numbering), each with
    /// weight `coupling`. Distinct sites only, each pair once: on a periodic axis of length 2
    /// both neighbours are the same site, and on one of length 1 the site itself.
    pub fn lattice(shape: &[usize], periodic: bool, coupling: f64) -> Result<Self, ModelError> {
        if shape.is_empty() || shape.contains(&0) {
            return Err(ModelError::param(format!("lattice shape {shape:?} must be non-empty with positive extents")));
        }
        if !coupling.is_finite() {
            return Err(ModelError::param(format!("lattice coupling is not a finite number: {coupling}")));
        }
        let d = shape.iter().try_fold(1usize, |a, &s| a.checked_mul(s));
        let d = d
            .filter(|&d| d <= u32::MAX as usize)
            .ok_or_else(|| ModelError::param(format!("lattice shape {shape:?} has too many sites")))?;
        let mut strides = vec![1usize; shape.len()];
        for a in (0..shape.len().saturating_sub(1)).rev() {
            strides[a] = strides[a + 1] * shape[a + 1];
        }
        let mut pairs = std::collections::BTreeSet::new();
        for site in 0..d {
            for (&len, &stride) in shape.iter().zip(&strides) {
                let coord = (site / stride) % len;
                let next = if coord + 1 < len {
                    coord + 1
                } else if periodic {
                    0
                } else {
                    continue;
                };
                let other = site - coord * stride + next * stride;
                if other != site {
                    pairs.insert((site.min(other), site.max(other)));
                }
            }
        }
        let pairs: Vec<(usize, usize)> = pairs.into_iter().collect();
        let mut c = Self::from_unique_pairs(d, pairs.iter().map(|&(i, j)| (i, j, coupling)));
        c.lattice = Some(LatticeSpec { shape: shape.to_vec(), periodic, coupling });
        Ok(c)
    }

    fn from_unique_pairs(d: usize, pairs: impl Iterator<Item = (usize, usize, f64)> + Clone) -> Self {
        let mut deg = vec![0usize; d];
        for (i, j, _) in pairs.clone() {
            deg[i] += 1;
            deg[j] += 1;
        }
        let mut offsets = vec![0usize; d + 1];
        for i in 0..d {
            offsets[i + 1] = offsets[i] + deg[i];
        }
        let mut fill = offsets[..d].to_vec();
        let mut neighbours = vec![0u32; offsets[d]];
        let mut weights = vec![0.0; offsets[d]];
        for (i, j, w) in pairs {
            neighbours[fill[i]] = j as u32;
            weights[fill[i]] = w;
            fill[i] += 1;
            neighbours[fill[j]] = i as u32;
            weights[fill[j]] = w;
            fill[j] += 1;
        }
        // Sorted rows make the summation order (and so the floating-point result) independent
        // of the order the pairs were listed in.
        for i in 0..d {
            let (s, e) = (offsets[i], offsets[i + 1]);
            let mut row: Vec<(u32, f64)> =
                neighbours[s..e].iter().copied().zip(weights[s..e].iter().copied()).collect();
            row.sort_by_key(|p| p.0);
            for (k, (n, w)) in row.into_iter().enumerate() {
                neighbours[s + k] = n;
                weights[s + k] = w;
            }
        }
        Couplings { d, offsets, neighbours, weights, lattice: None }
    }

    /// Number of sites.
    pub fn d(&self) -> usize {
        self.d
    }

    /// CSR row offsets (length d + 1): the neighbours of i are `neighbours()[offsets[i]..offsets[i+1]]`.
    pub fn offsets(&self) -> &[usize] {
        &self.offsets
    }

    /// CSR column indices (each pair appears in both rows, rows sorted ascending).
    pub fn neighbours(&self) -> &[u32] {
        &self.neighbours
    }

    /// CSR weights J_ij aligned with [`Couplings::neighbours`].
    pub fn weights(&self) -> &[f64] {
        &self.weights
    }

    /// Neighbours of site `i` and their weights.
    #[inline]
    pub fn neighbours_of(&self, i: usize) -> (&[u32], &[f64]) {
        let (s, e) = (self.offsets[i], self.offsets[i + 1]);
        (&self.neighbours[s..e], &self.weights[s..e])
    }

    /// Number of distinct pairs.
    pub fn n_pairs(&self) -> usize {
        self.neighbours.len() / 2
    }

    /// The pairs `(i, j, J_ij)` with i < j, in row order.
    pub fn pairs(&self) -> Vec<(usize, usize, f64)> {
        let mut out = Vec::with_capacity(self.n_pairs());
        for i in 0..self.d {
            let (ns, ws) = self.neighbours_of(i);
            for (&j, &w) in ns.iter().zip(ws) {
                if j as usize > i {
                    out.push((i, j as usize, w));
                }
            }
        }
        out
    }

    /// The lattice these couplings were built from, if any.
    pub fn lattice_spec(&self) -> Option<&LatticeSpec> {
        self.lattice.as_ref()
    }
}
