//! What a sampler family is, for the registry: its name forms, parameters and their defaults,
//! adaptation, exactness and test runs ([`SamplerSpec`]), and the parsed name and parameters
//! every constructor takes ([`SamplerName`], [`SamplerParams`]). A leaf: each sampler module
//! imports it to declare its own row, and [`crate::registry`] lists the rows.

use crate::dual_averaging::{AdaptOptions, Adapted};
use dlp_core::{RunOptions, Sampler, SamplerError, Space, Target};

/// Continuous parameters given next to the name (`--step-size`, …).
#[derive(Clone, Debug, Default)]
pub struct SamplerParams {
    /// Step size α of DLP samplers (in {0,1} units for binary/spin models, spec §1.5).
    pub step_size: Option<f64>,
    /// Diagonal preconditioner h (length d) of `pdula`/`pdmala`.
    pub preconditioner: Option<Vec<f64>>,
    /// Minibatch size of stochastic-gradient samplers.
    pub batch_size: Option<usize>,
    /// Smallest step size α_min of cyclical samplers (`acs-dmala`, `acs-dula`).
    pub step_size_min: Option<f64>,
    /// Inverse temperatures 1 = β₁ > β₂ > … > β_K > 0 of replica exchange (`pt-<K>:<inner>`).
    pub ladder: Option<Vec<f64>>,
}

/// A parsed sampler name.
#[derive(Clone, Debug, PartialEq)]
pub struct SamplerName {
    /// The stem (`hb`, `gwg`, `dmala`, `gibbs-sweep`).
    pub stem: String,
    /// The integer parts after the stem.
    pub numbers: Vec<usize>,
    /// The wrapped sampler's name, after a colon (`pt-4:gwg` → `gwg`): only wrappers
    /// ([`SamplerSpec::wraps`]) take one.
    pub inner: Option<String>,
}

impl SamplerName {
    /// Splits `name` into stem and trailing integer parts, and what follows the first colon
    /// into the wrapped sampler's name.
    pub fn parse(name: &str) -> SamplerName {
        if let Some((outer, inner)) = name.split_once(':') {
            return SamplerName { inner: Some(inner.to_string()), ..SamplerName::parse(outer) };
        }
        let parts: Vec<&str> = name.split('-').collect();
        let first_number = parts.iter().position(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
        match first_number {
            Some(i) if i > 0 && parts[i..].iter().all(|p| p.parse::<usize>().is_ok()) => SamplerName {
                stem: parts[..i].join("-"),
                numbers: parts[i..].iter().map(|p| p.parse().unwrap_or(0)).collect(),
                inner: None,
            },
            _ => SamplerName { stem: name.to_string(), numbers: vec![], inner: None },
        }
    }
}

/// Where a family's chain is *not* irreducible and aperiodic: `None` on a space where it is,
/// else the reason (the CLI warns with it; the exact suite checks every unflagged model).
pub type NotErgodicOn = fn(&SamplerName, &Space) -> Option<String>;

/// [`NotErgodicOn`] of a family whose kernel is irreducible and aperiodic on every model it
/// accepts whose target is positive everywhere (what the exact suite checks on its models).
pub fn ergodic_everywhere(_: &SamplerName, _: &Space) -> Option<String> {
    None
}

/// A family's own warm-up tuner (cyclical DMALA tunes α_min and α_max), used by
/// [`crate::adapt::adapt_step_size`] instead of dual averaging of the one step size.
pub type AdaptFn =
    fn(&SamplerName, &SamplerParams, &dyn Target, &[u32], &AdaptOptions, &RunOptions) -> Result<Adapted, SamplerError>;

/// Constructor of one sampler family.
pub type Constructor = fn(&SamplerName, &SamplerParams) -> Result<Box<dyn Sampler>, SamplerError>;

/// How a family is built: from its name and parameters, or — a wrapper — around an inner
/// sampler that the registry resolves and hands over ([`Inner`]), so that a wrapper's module
/// never imports the registry that lists it.
#[derive(Clone, Copy, Debug)]
pub enum Build {
    /// A family built from its name and parameters.
    Plain(Constructor),
    /// A wrapper around another family, named after a colon (`pt-<K>:<inner>`).
    Wrapper(Wrapper),
}

/// The functions of a wrapper row; each gets the resolved inner sampler.
#[derive(Clone, Copy, Debug)]
pub struct Wrapper {
    /// Builds the wrapper around its inner sampler.
    pub build: WrapperConstructor,
    /// Its warm-up tuner (the inner sampler's step size, then the wrapper's own parameters).
    pub adapt: WrapperAdaptFn,
}

/// A wrapper's constructor: [`Constructor`] with the resolved inner sampler.
pub type WrapperConstructor = fn(&SamplerName, &SamplerParams, &Inner) -> Result<Box<dyn Sampler>, SamplerError>;

/// A wrapper's warm-up tuner: [`AdaptFn`] with the resolved inner sampler.
pub type WrapperAdaptFn = fn(
    &SamplerName,
    &SamplerParams,
    &Inner,
    &dyn Target,
    &[u32],
    &AdaptOptions,
    &RunOptions,
) -> Result<Adapted, SamplerError>;

/// A wrapper's inner sampler as the registry resolved it (`pt-4:gwg-2` → `gwg-2`).
#[derive(Clone, Debug)]
pub struct Inner {
    /// Its name as written after the colon.
    pub name: String,
    /// Its row.
    pub spec: &'static SamplerSpec,
    /// The name, parsed.
    pub parsed: SamplerName,
}

impl Inner {
    /// Builds the inner sampler with `params` (a wrapper inside a wrapper is refused).
    pub fn build(&self, params: &SamplerParams) -> Result<Box<dyn Sampler>, SamplerError> {
        match self.spec.build {
            Build::Plain(construct) => construct(&self.parsed, params),
            Build::Wrapper(_) => Err(SamplerError::BadParameter {
                sampler: self.name.clone(),
                message: "a wrapper cannot wrap another wrapper".into(),
            }),
        }
    }
}

/// A continuous parameter of [`SamplerParams`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Param {
    /// [`SamplerParams::step_size`].
    StepSize,
    /// [`SamplerParams::preconditioner`].
    Preconditioner,
    /// [`SamplerParams::batch_size`].
    BatchSize,
    /// [`SamplerParams::step_size_min`].
    StepSizeMin,
    /// [`SamplerParams::ladder`].
    Ladder,
}

impl Param {
    /// The command-line flag that sets it.
    pub fn flag(self) -> &'static str {
        match self {
            Param::StepSize => "--step-size",
            Param::Preconditioner => "--preconditioner",
            Param::BatchSize => "--batch-size",
            Param::StepSizeMin => "--step-size-min",
            Param::Ladder => "--ladder",
        }
    }

    /// Whether `params` gives it.
    pub fn is_set(self, params: &SamplerParams) -> bool {
        match self {
            Param::StepSize => params.step_size.is_some(),
            Param::Preconditioner => params.preconditioner.is_some(),
            Param::BatchSize => params.batch_size.is_some(),
            Param::StepSizeMin => params.step_size_min.is_some(),
            Param::Ladder => params.ladder.is_some(),
        }
    }
}

/// One parameter a family takes, and whether its constructor refuses to build without it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamSpec {
    /// The parameter.
    pub param: Param,
    /// The constructor fails without it.
    pub required: bool,
}

/// `--step-size`, required.
pub const STEP_SIZE: ParamSpec = ParamSpec { param: Param::StepSize, required: true };
/// `--preconditioner`, required.
pub const PRECONDITIONER: ParamSpec = ParamSpec { param: Param::Preconditioner, required: true };
/// `--batch-size`, required.
pub const BATCH_SIZE: ParamSpec = ParamSpec { param: Param::BatchSize, required: true };
/// `--step-size-min`, optional.
pub const STEP_SIZE_MIN: ParamSpec = ParamSpec { param: Param::StepSizeMin, required: false };
/// `--step-size`, optional (passed on to a wrapped sampler that takes one).
pub const STEP_SIZE_OPTIONAL: ParamSpec = ParamSpec { param: Param::StepSize, required: false };
/// `--ladder`, optional.
pub const LADDER: ParamSpec = ParamSpec { param: Param::Ladder, required: false };

/// What the test suites run of a family: concrete names and the parameters they use.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TestSpec {
    /// Concrete names of the family the exact suite and the determinism snapshot run
    /// (`hb-2-1`, `hb-3-2`); each needs a reference in `dlp_exact::reference::reference_by_name`.
    pub names: &'static [&'static str],
    /// Step size of those runs, for families that take one.
    pub step_size: Option<f64>,
    /// Minibatch size of those runs, for families that take one. (A required preconditioner
    /// is supplied by the suite, since it depends on the model's d.)
    pub batch_size: Option<usize>,
    /// The scan order is a random permutation consumed across steps (bg, hb): the chain of
    /// states alone is not Markov, so its multi-step law is not a product of the one-step
    /// matrices and the exact suite checks such a family by its averaged kernel only.
    pub schedule_memory: bool,
}

/// The algorithm of a family's device-resident chains (`dlp_device::device_samplers` runs it
/// on a candle device: `dlp sample --device`, `dlp bench --device`). Named here, as data, so
/// that a row can say it has one while this crate stays free of candle; which implementation
/// runs it (periodic lattice, RBM) follows from the model's capabilities there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceKernel {
    /// The DLP proposal accepted every step (DULA), step size from `--step-size`.
    Dula,
    /// The DLP proposal with the MH test (DMALA), step size from `--step-size`.
    Dmala,
    /// Random-scan single-site Gibbs (the registry's `gibbs`).
    Gibbs,
    /// RBM block Gibbs: h ~ p(h|x), then x ~ p(x|h) (the registry's `block-gibbs`).
    BlockGibbs,
}

/// A family's defaults outside the test suites: the algorithm of its device-resident chains,
/// if it has them, and the step sizes the upstream experiment scripts (`ising_sample.py`,
/// `rbm_sample.py`, the BNN tables) use on the three models `dlp bench` times, which are the
/// step sizes `dlp bench` runs it with.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Defaults {
    /// Its device-resident kernel.
    pub device: Option<DeviceKernel>,
    /// Step size on the paper's periodic Ising lattice.
    pub ising: Option<f64>,
    /// Step size on the 784 × 500 RBM.
    pub rbm: Option<f64>,
    /// Step size on the binary BNN of Tables 2 and 4.
    pub bnn: Option<f64>,
}

/// No device kernel and no benchmark step sizes.
pub const NO_DEFAULTS: Defaults = Defaults { device: None, ising: None, rbm: None, bnn: None };

/// The benchmark models of `dlp bench` that [`Defaults`] gives step sizes for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BenchModel {
    /// The paper's periodic Ising lattice.
    Ising,
    /// The 784 × 500 RBM.
    Rbm,
    /// The binary BNN of Tables 2 and 4.
    Bnn,
}

impl Defaults {
    /// The step size on `model`, if the row gives one.
    pub fn step_size(&self, model: BenchModel) -> Option<f64> {
        match model {
            BenchModel::Ising => self.ising,
            BenchModel::Rbm => self.rbm,
            BenchModel::Bnn => self.bnn,
        }
    }
}

/// One sampler family: how it is named, built, documented and tested.
#[derive(Clone, Copy, Debug)]
pub struct SamplerSpec {
    /// The name's stem (`hb`).
    pub stem: &'static str,
    /// Allowed counts of integer parts after the stem (`gwg`, `gwg-<k>`: [0, 1]).
    pub counts: &'static [usize],
    /// Placeholder names of the integer parts, for usage strings (`hb`: ["L", "r"]).
    pub numbers: &'static [&'static str],
    /// The continuous parameters it takes.
    pub params: &'static [ParamSpec],
    /// How it is built: a constructor, or a wrapper's functions.
    pub build: Build,
    /// One line: what it is.
    pub doc: &'static str,
    /// Where it comes from (paper and section), or `baseline`.
    pub paper: &'static str,
    /// Leaves π invariant.
    pub exact: bool,
    /// Needs a data target (minibatch gradients); the exact suite's cases run on general
    /// models, so such families are covered by `crates/dlp-exact/tests/sgdlp.rs` instead.
    pub needs_data: bool,
    /// Interacting particles (`--chains` is the particle count, one joint task): no transition
    /// kernel, so the exact suite and the determinism snapshot skip the row; the family's own
    /// tests cover it (`gf-svgd`: `dlp_samplers::gf_svgd` and `dlp-exact/tests/gf_svgd.rs`).
    pub particles: bool,
    /// The chain moves on an augmented continuous space and reports a function of it (`rmala`:
    /// z ∈ ℝ^d, reported x = 1[z > 0]). Exact on that space for the reported x-law, but x alone
    /// is not a Markov chain, so there is no transition matrix on the model's states: the
    /// general exact suite skips the row and the family's own statistical suite checks it
    /// (`rmala`: `dlp-exact/tests/rmala.rs`).
    pub augmented: bool,
    /// Where the chain is not irreducible and aperiodic (exact samplers: the exact suite
    /// checks that every model this returns `None` for gives an irreducible, aperiodic chain).
    pub not_ergodic_on: NotErgodicOn,
    /// The mean acceptance probability its warm-up adaptation aims at when the caller gives
    /// none (`dlp sample --target-accept`, Python's `target_accept`).
    pub target_accept: f64,
    /// Its own warm-up tuner; `None`: dual averaging of `--step-size` when
    /// [`SamplerSpec::adapts_step_size`] holds.
    pub adapt: Option<AdaptFn>,
    /// What the test suites run.
    pub tests: TestSpec,
    /// Its device-resident kernel and its step sizes on `dlp bench`'s models ([`Defaults`]).
    pub defaults: Defaults,
}

impl SamplerSpec {
    /// The usage forms, one per allowed count of integer parts (`gwg`, `gwg-<k>`).
    pub fn forms(&self) -> Vec<String> {
        self.counts
            .iter()
            .map(|&c| {
                let mut form = self.stem.to_string();
                for n in &self.numbers[..c.min(self.numbers.len())] {
                    form.push_str(&format!("-<{n}>"));
                }
                if self.wraps() {
                    form.push_str(":<sampler>");
                }
                form
            })
            .collect()
    }

    /// The forms joined for messages (`gwg | gwg-<k>`).
    pub fn usage(&self) -> String {
        self.forms().join(" | ")
    }

    /// A wrapper around another family, named after a colon (`pt-<K>:<inner>`, [`Build::Wrapper`]):
    /// its kernel lives on a product space, so the general exact suite skips the row and the
    /// family's own suite checks it (`pt`: `dlp-exact/tests/tempering.rs`).
    pub fn wraps(&self) -> bool {
        matches!(self.build, Build::Wrapper(_))
    }

    /// Whether the family takes `param`.
    pub fn takes(&self, param: Param) -> bool {
        self.params.iter().any(|p| p.param == param)
    }

    /// Whether warm-up adaptation ([`crate::adapt`]) can tune its step size: it takes one, has
    /// an MH test (exact for π) and needs no data model (a minibatch MH test is not exact).
    pub fn adapts_step_size(&self) -> bool {
        self.exact && !self.needs_data && self.takes(Param::StepSize)
    }

    /// Whether the general exact suite checks the family on the models' own state spaces:
    /// not a data-target row (`dlp-exact/tests/sgdlp.rs`), a particle row (`gf_svgd.rs`), a
    /// wrapper, whose kernel lives on a product space (`tempering.rs`), or a chain on an
    /// augmented continuous space (`rmala.rs`).
    pub fn has_state_kernel(&self) -> bool {
        !self.needs_data && !self.particles && !self.wraps() && !self.augmented
    }

    /// Whether the family refuses to build without `param`.
    pub fn requires(&self, param: Param) -> bool {
        self.params.iter().any(|p| p.param == param && p.required)
    }

    /// The flags it takes, optional ones in brackets (`--step-size --batch-size`).
    pub fn flags(&self) -> String {
        let flags: Vec<String> = self
            .params
            .iter()
            .map(|p| if p.required { p.param.flag().to_string() } else { format!("[{}]", p.param.flag()) })
            .collect();
        flags.join(" ")
    }

    /// The parameters of test runs of this family on a d-dimensional model: the row's test
    /// step and batch sizes, and `preconditioner(d)` if the family requires one.
    pub fn test_params(&self, preconditioner: impl FnOnce() -> Vec<f64>) -> SamplerParams {
        SamplerParams {
            step_size: self.tests.step_size,
            preconditioner: self.requires(Param::Preconditioner).then(preconditioner),
            batch_size: self.tests.batch_size,
            step_size_min: None,
            ladder: None,
        }
    }
}

/// No integer parts.
pub const PLAIN: &[usize] = &[0];

/// A family with no test runs yet; rows spell out their own (the coverage test demands some).
pub const NO_TESTS: TestSpec = TestSpec { names: &[], step_size: None, batch_size: None, schedule_memory: false };
