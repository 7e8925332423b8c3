//! Capabilities: what a model offers samplers beyond f and ∇f.
//!
//! [`crate::Target`] itself is only a space and one fallible batched evaluation; everything
//! else a model may offer is declared here: its number of data terms (minibatches), cheap
//! single-coordinate conditionals ([`Conditionals`]), parameter views for the fast paths, and
//! an interrupt the runner polls ([`Interrupt`]).
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

use crate::error::EvalError;

/// The capabilities one target declares; every field is optional.
#[derive(Clone, Copy, Default)]
pub struct Capabilities<'a> {
    /// N when f is a sum over N data items plus a prior, f(x) = Σ_{n<N} ℓ_n(x) + log p0(x),
    /// so that [`crate::Target::evaluate`] accepts [`crate::Batch::Items`] (minibatch
    /// estimates, paper 000 §6); `None` for models without data terms.
    pub n_data: Option<usize>,
    /// Single-coordinate differences computed without evaluating K whole states (Ising,
    /// Potts, RBM, tables). Absent, [`crate::TargetExt::coordinate_deltas`] evaluates them.
    pub conditionals: Option<&'a dyn Conditionals>,
    /// A stop request from outside the run (Python's Ctrl-C), which the runner polls after
    /// every step: fast paths may never call [`crate::Target::evaluate`] inside a step, so an
    /// error returned there alone would not stop them.
    pub interrupt: Option<&'a dyn Interrupt>,
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

impl std::fmt::Debug for Capabilities<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Capabilities")
            .field("n_data", &self.n_data)
            .field("conditionals", &self.conditionals.is_some())
            .field("interrupt", &self.interrupt.is_some())
            .field("rbm", &self.rbm)
            .field("ising", &self.ising)
            .field("potts", &self.potts)
            .field("site_updates", &self.site_updates)
            .finish()
    }
}

/// A target's full conditionals computed directly (see [`Capabilities::conditionals`]). They
/// must equal the differences of [`crate::Target::evaluate`] up to rounding, so a sampler is the
/// same Markov kernel with or without them. Samplers reach them through
/// [`crate::TargetExt::coordinate_deltas`] and friends, or [`crate::target::Deltas`] in hot loops.
pub trait Conditionals: Sync {
    /// For coordinate `i` and every index v < K: f(x with x_i = v) − f(x), into `out`
    /// (length K; entry x_i is 0).
    fn coordinate_deltas(&self, x: &[u32], i: usize, out: &mut [f64]) -> Result<(), EvalError>;

    /// Binary spaces: f(x^{(i)}) − f(x) for flipping each coordinate i, into `out` (length d).
    /// The default calls [`Conditionals::coordinate_deltas`] d times.
    fn flip_deltas(&self, x: &[u32], out: &mut [f64]) -> Result<(), EvalError> {
        let mut two = [0.0; 2];
        for (i, o) in out.iter_mut().enumerate() {
            self.coordinate_deltas(x, i, &mut two)?;
            *o = two[1 - x[i] as usize];
        }
        Ok(())
    }

    /// Binary spaces: `Some(f(x^{(i)}) − f(x))` for flipping coordinate i, when the model
    /// computes one flip in O(degree) (lattice Ising). `None` (the default) tells callers such
    /// as exhaustive enumeration that whole-state evaluation is cheaper for this model. Only
    /// CPU models offer it, so it cannot fail.
    fn cheap_flip_delta(&self, _x: &[u32], _i: usize) -> Option<f64> {
        None
    }
}

/// A stop request polled by the runner after every step (see [`Capabilities::interrupt`]).
pub trait Interrupt: Sync {
    /// `Some(error)` once the run should stop: [`crate::run_chains`] then fails with that error,
    /// [`crate::run::run_chains_until_interrupted`] stops with what ran.
    fn interrupted(&self) -> Option<EvalError>;
}

/// A target whose single-site changes are cheap to score from per-chain state (see
/// [`Capabilities::site_updates`]). The state must give the same f(x with x_i = v) − f(x) as
/// [`crate::TargetExt::coordinate_deltas`] up to rounding, so a fast path built on it is the same
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

/// A Potts model ℓ(c) = Σ_i h_i\[c_i\] + Σ_{i<j} J_ij [c_i = c_j] on classes c_i ∈ 0..K, with
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
