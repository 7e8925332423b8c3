//! Capabilities: what a model offers samplers beyond f and ∇f.
//!
//! A sampler with a specialised path (lattice DLP, the RBM's cached pre-activations, RBM block
//! Gibbs) looks the capability up in [`crate::Target::capabilities`] at `start` and falls
//! back to its generic path when it is absent. Capabilities are plain views defined here, so
//! samplers need no concrete model type and `dlp-samplers` does not depend on `dlp-models`.
//!
//! Views are borrowed slices resolved once, at `start`: a fast path keeps the view (or what it
//! derives from it) and never goes back to the target inside a step, so looking a capability
//! up costs nothing per coordinate. A target that wraps another (`dlp_models::Model`) forwards
//! them; one that must hide them (`dlp_samplers::fast::Generic`, which forces the generic
//! kernels) simply does not.

mod rbm;

pub use rbm::RbmView;

/// The capabilities one target declares; every field is optional.
#[derive(Clone, Copy, Debug, Default)]
pub struct Capabilities<'a> {
    /// The parameters of a Bernoulli RBM: the RBM fast paths of DLP, GWG and single-site
    /// Gibbs, and `block-gibbs` (which needs it).
    pub rbm: Option<RbmView<'a>>,
    /// A pairwise binary/spin model with sparse couplings (Ising): the lattice DLP kernel,
    /// when the couplings form a uniform lattice, and GWG/LB's sum-tree kernel.
    pub ising: Option<IsingView<'a>>,
    /// A Potts model with sparse couplings: GWG's sum-tree kernel on categorical moves.
    pub potts: Option<PottsView<'a>>,
    /// A model that updates f after a one-site change from per-chain state, far cheaper than
    /// evaluating f afresh (the binary BNN: O(N) per site instead of O(N·p·H)): single-site
    /// Gibbs uses it.
    pub site_updates: Option<&'a dyn SiteUpdates>,
}

/// A target whose single-site changes are cheap to score from per-chain state (see
/// [`Capabilities::site_updates`]). The state must give the same f(x with x_i = v) − f(x) as
/// [`crate::Target::coordinate_deltas`] up to rounding, so a fast path built on it is the same
/// Markov kernel as the generic one (each implementation tests this).
pub trait SiteUpdates: std::fmt::Debug + Sync {
    /// The state of the chains `xs` (n × d, states in index form).
    fn site_state<'s>(&'s self, xs: &[u32]) -> Box<dyn SiteState + 's>;
}

/// Per-chain state of a [`SiteUpdates`] target; chain `j` is row j of the states it was built
/// from, and the caller keeps the states themselves.
pub trait SiteState: Send {
    /// `out[v]` = f(x with x_i = v) − f(x) for chain `j` at its current state `x` (length K;
    /// `out[x[i]]` = 0).
    fn deltas(&mut self, j: usize, x: &[u32], i: usize, out: &mut [f64]);
    /// Chain `j`'s site `i` changes from `x[i]` (`x` is still the old state) to `v`.
    fn set(&mut self, j: usize, x: &[u32], i: usize, v: u32);
}

/// A Potts model ℓ(c) = Σ_i h_i[c_i] + Σ_{i<j} J_ij [c_i = c_j] on classes c_i ∈ 0..K, with
/// symmetric couplings as CSR neighbour lists (each pair in both rows), as
/// `dlp_models::PottsModel` holds them.
#[derive(Clone, Copy, Debug)]
pub struct PottsView<'a> {
    /// Number of classes K.
    pub k: usize,
    /// CSR row offsets, length d + 1.
    pub offsets: &'a [usize],
    /// CSR neighbour indices.
    pub neighbours: &'a [u32],
    /// J_ij aligned with `neighbours`.
    pub weights: &'a [f64],
    /// The fields h, row-major d × K.
    pub fields: &'a [f64],
}

impl PottsView<'_> {
    /// Number of sites d.
    pub fn d(&self) -> usize {
        self.offsets.len() - 1
    }
}

/// A nearest-neighbour lattice as given in a model file (kept by the couplings built from it,
/// so that the lattice DLP kernel can recognise the geometry).
#[derive(Clone, Debug, PartialEq)]
pub struct LatticeSpec {
    /// Extent along each axis; sites are numbered row-major (first axis most significant).
    pub shape: Vec<usize>,
    /// Whether neighbours wrap around along every axis.
    pub periodic: bool,
    /// Weight of each nearest-neighbour pair (counted once per pair).
    pub coupling: f64,
}

/// An Ising model ℓ(x) = Σ_i b_i u_i + Σ_{i<j} J_ij u_i u_j on bits x (u = 2x − 1 for spin,
/// u = x for binary) with symmetric couplings stored as CSR neighbour lists (each pair in
/// both rows, rows sorted), as `dlp_models::IsingModel` holds them.
#[derive(Clone, Copy, Debug)]
pub struct IsingView<'a> {
    /// True on the spin domain (u = 2x − 1), false on binary (u = x).
    pub spin: bool,
    /// CSR row offsets, length d + 1: the neighbours of i are
    /// `neighbours[offsets[i]..offsets[i + 1]]`.
    pub offsets: &'a [usize],
    /// CSR neighbour indices.
    pub neighbours: &'a [u32],
    /// J_ij aligned with `neighbours`.
    pub weights: &'a [f64],
    /// The fields b, length d.
    pub fields: &'a [f64],
    /// The lattice the couplings were built from, if any.
    pub lattice: Option<&'a LatticeSpec>,
}

impl IsingView<'_> {
    /// Number of sites d.
    pub fn d(&self) -> usize {
        self.fields.len()
    }
}
