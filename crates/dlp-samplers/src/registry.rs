//! Samplers by name: `dmala`, `hb-10-1`, `gwg-4`, … → a configured [`Sampler`].
//!
//! A name is a stem followed by optional `-<integer>` parts (`hb-10-1` = stem `hb`, numbers
//! [10, 1]). [`REGISTRY`] has one [`SamplerSpec`] row per sampler family, and everything that
//! lists samplers is generated from it: [`build_sampler`], the CLI's `--sampler` help and
//! `dlp samplers` ([`form_list`], [`text_table`]), the README's sampler table
//! ([`markdown_table`], kept equal by `tests/readme.rs`), and the exact suite's cases
//! (`crates/dlp-exact/tests/common`, from [`SamplerSpec::tests`]), whose coverage test fails
//! for a family without a reference transcription in `dlp_exact::reference`.

use dlp_core::{Sampler, SamplerError, Space};

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
}

/// A parsed sampler name.
#[derive(Clone, Debug, PartialEq)]
pub struct SamplerName {
    /// The stem (`hb`, `gwg`, `dmala`, `gibbs-sweep`).
    pub stem: String,
    /// The integer parts after the stem.
    pub numbers: Vec<usize>,
}

impl SamplerName {
    /// Splits `name` into stem and trailing integer parts.
    pub fn parse(name: &str) -> SamplerName {
        let parts: Vec<&str> = name.split('-').collect();
        let first_number = parts.iter().position(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
        match first_number {
            Some(i) if i > 0 && parts[i..].iter().all(|p| p.parse::<usize>().is_ok()) => SamplerName {
                stem: parts[..i].join("-"),
                numbers: parts[i..].iter().map(|p| p.parse().unwrap_or(0)).collect(),
            },
            _ => SamplerName { stem: name.to_string(), numbers: vec![] },
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

/// Constructor of one sampler family.
pub type Constructor = fn(&SamplerName, &SamplerParams) -> Result<Box<dyn Sampler>, SamplerError>;

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
}

impl Param {
    /// The command-line flag that sets it.
    pub fn flag(self) -> &'static str {
        match self {
            Param::StepSize => "--step-size",
            Param::Preconditioner => "--preconditioner",
            Param::BatchSize => "--batch-size",
            Param::StepSizeMin => "--step-size-min",
        }
    }

    /// Whether `params` gives it.
    pub fn is_set(self, params: &SamplerParams) -> bool {
        match self {
            Param::StepSize => params.step_size.is_some(),
            Param::Preconditioner => params.preconditioner.is_some(),
            Param::BatchSize => params.batch_size.is_some(),
            Param::StepSizeMin => params.step_size_min.is_some(),
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
    /// The constructor.
    pub build: Constructor,
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
    /// Where the chain is not irreducible and aperiodic (exact samplers: the exact suite
    /// checks that every model this returns `None` for gives an irreducible, aperiodic chain).
    pub not_ergodic_on: NotErgodicOn,
    /// What the test suites run.
    pub tests: TestSpec,
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
                form
            })
            .collect()
    }

    /// The forms joined for messages (`gwg | gwg-<k>`).
    pub fn usage(&self) -> String {
        self.forms().join(" | ")
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
        }
    }
}

/// No integer parts.
const PLAIN: &[usize] = &[0];

/// A family with no test runs yet; rows spell out their own (the coverage test demands some).
const NO_TESTS: TestSpec = TestSpec { names: &[], step_size: None, batch_size: None };

/// Every sampler family of dlp, in the order help and tables list them. Adding a sampler:
/// one row here (its `tests` names then need a reference in `dlp_exact::reference`).
pub static REGISTRY: &[SamplerSpec] = &[
    SamplerSpec {
        stem: "dula",
        counts: PLAIN,
        numbers: &[],
        params: &[STEP_SIZE],
        build: crate::dlp::construct,
        doc: "discrete Langevin proposal, unadjusted (DULA)",
        paper: "Zhang et al. 2022, Alg. 1",
        exact: false,
        needs_data: false,
        particles: false,
        not_ergodic_on: ergodic_everywhere,
        tests: TestSpec { names: &["dula"], step_size: Some(0.4), ..NO_TESTS },
    },
    SamplerSpec {
        stem: "dmala",
        counts: PLAIN,
        numbers: &[],
        params: &[STEP_SIZE],
        build: crate::dlp::construct,
        doc: "discrete Langevin proposal, Metropolis-adjusted (DMALA)",
        paper: "Zhang et al. 2022, Alg. 1",
        exact: true,
        needs_data: false,
        particles: false,
        not_ergodic_on: ergodic_everywhere,
        tests: TestSpec { names: &["dmala"], step_size: Some(0.6), ..NO_TESTS },
    },
    SamplerSpec {
        stem: "pdula",
        counts: PLAIN,
        numbers: &[],
        params: &[STEP_SIZE, PRECONDITIONER],
        build: crate::dlp::construct,
        doc: "preconditioned DULA (diagonal h)",
        paper: "Zhang et al. 2022, §6 / App. H",
        exact: false,
        needs_data: false,
        particles: false,
        not_ergodic_on: ergodic_everywhere,
        tests: TestSpec { names: &["pdula"], step_size: Some(0.4), ..NO_TESTS },
    },
    SamplerSpec {
        stem: "pdmala",
        counts: PLAIN,
        numbers: &[],
        params: &[STEP_SIZE, PRECONDITIONER],
        build: crate::dlp::construct,
        doc: "preconditioned DMALA (diagonal h)",
        paper: "Zhang et al. 2022, §6 / App. H",
        exact: true,
        needs_data: false,
        particles: false,
        not_ergodic_on: ergodic_everywhere,
        tests: TestSpec { names: &["pdmala"], step_size: Some(0.6), ..NO_TESTS },
    },
    SamplerSpec {
        stem: "dula-f32",
        counts: PLAIN,
        numbers: &[],
        params: &[STEP_SIZE],
        build: crate::dlp::construct,
        doc: "DULA whose proposal reads the gradient at single precision; on RBMs the gradient \
              product then runs in f32, ≈2× faster per step at 784×500 (`paper/performance.md`)",
        paper: "as `dula`",
        exact: false,
        needs_data: false,
        particles: false,
        not_ergodic_on: ergodic_everywhere,
        tests: TestSpec { names: &["dula-f32"], step_size: Some(0.4), ..NO_TESTS },
    },
    SamplerSpec {
        stem: "dmala-f32",
        counts: PLAIN,
        numbers: &[],
        params: &[STEP_SIZE],
        build: crate::dlp::construct,
        doc: "DMALA with the single-precision proposal gradient (f and the MH test stay f64, so it \
              is still exact for π)",
        paper: "as `dmala`",
        exact: true,
        needs_data: false,
        particles: false,
        not_ergodic_on: ergodic_everywhere,
        tests: TestSpec { names: &["dmala-f32"], step_size: Some(0.6), ..NO_TESTS },
    },
    SamplerSpec {
        stem: "sg-dula",
        counts: PLAIN,
        numbers: &[],
        params: &[STEP_SIZE, BATCH_SIZE],
        build: crate::sgdlp::construct,
        doc: "stochastic-gradient DULA on data targets, one minibatch per step shared by all chains",
        paper: "Zhang et al. 2022, §6",
        exact: false,
        needs_data: true,
        particles: false,
        not_ergodic_on: ergodic_everywhere,
        tests: TestSpec { names: &["sg-dula"], step_size: Some(0.5), batch_size: Some(2) },
    },
    SamplerSpec {
        stem: "sg-dmala",
        counts: PLAIN,
        numbers: &[],
        params: &[STEP_SIZE, BATCH_SIZE],
        build: crate::sgdlp::construct,
        doc: "stochastic-gradient DMALA as the official BNN code runs it: the MH test on the \
              step's minibatch, so not exact for π",
        paper: "Zhang et al. 2022, §6 (official code)",
        exact: false,
        needs_data: true,
        particles: false,
        not_ergodic_on: ergodic_everywhere,
        tests: TestSpec { names: &["sg-dmala"], step_size: Some(0.5), batch_size: Some(2) },
    },
    SamplerSpec {
        stem: "gibbs",
        counts: PLAIN,
        numbers: &[],
        params: &[],
        build: crate::gibbs::Gibbs::build_random,
        doc: "single-site Gibbs, random scan",
        paper: "baseline",
        exact: true,
        needs_data: false,
        particles: false,
        not_ergodic_on: ergodic_everywhere,
        tests: TestSpec { names: &["gibbs"], ..NO_TESTS },
    },
    SamplerSpec {
        stem: "gibbs-sweep",
        counts: PLAIN,
        numbers: &[],
        params: &[],
        build: crate::gibbs::Gibbs::build_sweep,
        doc: "single-site Gibbs, systematic scan (one site per step)",
        paper: "baseline",
        exact: true,
        needs_data: false,
        particles: false,
        not_ergodic_on: ergodic_everywhere,
        tests: TestSpec { names: &["gibbs-sweep"], ..NO_TESTS },
    },
    SamplerSpec {
        stem: "bg",
        counts: &[1],
        numbers: &["k"],
        params: &[],
        build: crate::block_gibbs::BlockGibbs::build,
        doc: "Gibbs on random blocks of k coordinates (`bg-1` = the paper's Gibbs-1)",
        paper: "baseline",
        exact: true,
        needs_data: false,
        particles: false,
        not_ergodic_on: ergodic_everywhere,
        tests: TestSpec { names: &["bg-1", "bg-2"], ..NO_TESTS },
    },
    SamplerSpec {
        stem: "hb",
        counts: &[2],
        numbers: &["L", "r"],
        params: &[],
        build: crate::hamming_ball::HammingBall::build,
        doc: "Hamming-ball sampler, blocks of L, radius r (`hb-10-1`)",
        paper: "Titsias & Yau 2017",
        exact: true,
        needs_data: false,
        particles: false,
        not_ergodic_on: ergodic_everywhere,
        tests: TestSpec { names: &["hb-2-1", "hb-3-2"], ..NO_TESTS },
    },
    SamplerSpec {
        stem: "gwg",
        counts: &[0, 1],
        numbers: &["k"],
        params: &[],
        build: crate::gwg::Gwg::build,
        doc: "Gibbs-with-gradients, one flip or up to k (k draws with replacement)",
        paper: "Grathwohl et al. 2021",
        exact: true,
        needs_data: false,
        particles: false,
        not_ergodic_on: ergodic_everywhere,
        tests: TestSpec { names: &["gwg", "gwg-2", "gwg-3"], ..NO_TESTS },
    },
    SamplerSpec {
        stem: "lb",
        counts: PLAIN,
        numbers: &[],
        params: &[],
        build: crate::locally_balanced::LocallyBalanced::build,
        doc: "exact locally balanced one-flip proposal",
        paper: "Zanella 2020",
        exact: true,
        needs_data: false,
        particles: false,
        not_ergodic_on: ergodic_everywhere,
        tests: TestSpec { names: &["lb"], ..NO_TESTS },
    },
    SamplerSpec {
        stem: "pas",
        counts: PLAIN,
        numbers: &[],
        params: &[STEP_SIZE],
        build: crate::pas::Pas::build,
        doc: "path auxiliary sampler with a mean path length r (`--step-size`, adapted toward \
              acceptance 0.574 in `dlp sample`'s warm-up): each step flips ⌊r⌋ or ⌊r⌋ + 1 distinct sites \
              (both with probability ≥ 5%, so both parities: irreducible), drawn without replacement from \
              the first-order √-balanced weights of the start state, MH on the path; binary/spin",
        paper: "Sun et al. 2022 (ICLR), §4; adaptive length as Sun et al. 2022 (NeurIPS)",
        exact: true,
        needs_data: false,
        particles: false,
        not_ergodic_on: ergodic_everywhere,
        tests: TestSpec { names: &["pas"], step_size: Some(2.5), ..NO_TESTS },
    },
    SamplerSpec {
        stem: "pas",
        counts: &[1],
        numbers: &["R"],
        params: &[],
        build: crate::pas::Pas::build,
        doc: "path auxiliary sampler with exactly R flips per step (the published runs' fixed length); \
              reducible for even R (parity kept) and for R ≥ d (complements only): use `pas` there",
        paper: "Sun et al. 2022 (ICLR), §4",
        exact: true,
        needs_data: false,
        particles: false,
        not_ergodic_on: crate::pas::Pas::not_ergodic_on,
        tests: TestSpec { names: &["pas-1", "pas-2", "pas-3"], ..NO_TESTS },
    },
    SamplerSpec {
        stem: "dlmc",
        counts: PLAIN,
        numbers: &[],
        params: &[STEP_SIZE],
        build: crate::dlmc::Dlmc::build,
        doc: "discrete Langevin Monte Carlo: per-coordinate jump process (√ locally balanced \
              rates of the linearised f) run for time h, Metropolis-adjusted; binary/spin/categorical",
        paper: "Sun et al. 2023 (AISTATS; DISCS `dlmc.py`)",
        exact: true,
        needs_data: false,
        particles: false,
        not_ergodic_on: ergodic_everywhere,
        tests: TestSpec { names: &["dlmc"], step_size: Some(0.5), ..NO_TESTS },
    },
    SamplerSpec {
        stem: "dlmcf",
        counts: PLAIN,
        numbers: &[],
        params: &[STEP_SIZE],
        build: crate::dlmc::Dlmc::build,
        doc: "DLMC without the MH correction (unadjusted); binary/spin/categorical",
        paper: "Sun et al. 2023 (AISTATS; DISCS `dlmc.py`)",
        exact: false,
        needs_data: false,
        particles: false,
        not_ergodic_on: ergodic_everywhere,
        tests: TestSpec { names: &["dlmcf"], step_size: Some(0.5), ..NO_TESTS },
    },
    SamplerSpec {
        stem: "acs-dmala",
        counts: &[0, 1],
        numbers: &["s"],
        params: &[STEP_SIZE, STEP_SIZE_MIN],
        build: crate::acs::Acs::build,
        doc: "cyclical DMALA: cycles of s steps (default 40) from (α_max = --step-size, β_max = 0.95) \
              down to α_min, gradient weight β (balancing parameter) on a cosine schedule; \
              `--step-size auto` tunes α_min and α_max in warm-up",
        paper: "Pynadath et al. 2024 (NeurIPS; official `acs_samplers.py`)",
        exact: true,
        needs_data: false,
        particles: false,
        not_ergodic_on: ergodic_everywhere,
        tests: TestSpec { names: &["acs-dmala-4"], step_size: Some(2.0), ..NO_TESTS },
    },
    SamplerSpec {
        stem: "acs-dula",
        counts: &[0, 1],
        numbers: &["s"],
        params: &[STEP_SIZE, STEP_SIZE_MIN],
        build: crate::acs::Acs::build,
        doc: "cyclical DULA (the schedule of `acs-dmala`, no MH test)",
        paper: "Pynadath et al. 2024 (NeurIPS; official `acs_samplers.py`)",
        exact: false,
        needs_data: false,
        particles: false,
        not_ergodic_on: ergodic_everywhere,
        tests: TestSpec { names: &["acs-dula-3"], step_size: Some(2.0), ..NO_TESTS },
    },
    SamplerSpec {
        stem: "block-gibbs",
        counts: PLAIN,
        numbers: &[],
        params: &[],
        build: crate::block_gibbs::RbmBlockGibbs::build,
        doc: "RBM alternating hidden/visible block Gibbs",
        paper: "baseline",
        exact: true,
        needs_data: false,
        particles: false,
        not_ergodic_on: ergodic_everywhere,
        tests: TestSpec { names: &["block-gibbs"], ..NO_TESTS },
    },
    SamplerSpec {
        stem: "gf-svgd",
        counts: PLAIN,
        numbers: &[],
        params: &[ParamSpec { param: Param::StepSize, required: false }],
        build: crate::gf_svgd::GfSvgdSampler::build,
        doc: "gradient-free SVGD on the even-partition lift of N(0, I), ρ = p₀, importance weights: \
              chains are interacting particles (`--chains` = particle count n); `--step-size` is ε \
              of plain steps (d ≤ 5, default 0.5) or Adam's rate (default 0.1)",
        paper: "Han et al. 2020 (AISTATS), Alg. 1",
        exact: false,
        needs_data: false,
        particles: true,
        not_ergodic_on: ergodic_everywhere,
        tests: TestSpec { names: &["gf-svgd"], step_size: Some(0.5), ..NO_TESTS },
    },
    SamplerSpec {
        stem: "gf-svgd-relaxed",
        counts: PLAIN,
        numbers: &[],
        params: &[ParamSpec { param: Param::StepSize, required: false }],
        build: crate::gf_svgd::GfSvgdSampler::build,
        doc: "`gf-svgd` with the relaxed surrogate ρ ∝ p₀ exp(ℓ̃(tanh(x/2))) of binary/spin Ising \
              and RBM models",
        paper: "Han et al. 2020 (AISTATS), eq. 21",
        exact: false,
        needs_data: false,
        particles: true,
        not_ergodic_on: ergodic_everywhere,
        tests: TestSpec { names: &["gf-svgd-relaxed"], step_size: Some(0.5), ..NO_TESTS },
    },
];

/// The usage forms of every registered sampler family, for help and error messages.
pub fn sampler_names() -> Vec<String> {
    REGISTRY.iter().map(SamplerSpec::usage).collect()
}

/// The family of `name` and the parsed name, if one is registered.
pub fn find(name: &str) -> Option<(&'static SamplerSpec, SamplerName)> {
    let parsed = SamplerName::parse(name);
    let spec = REGISTRY.iter().find(|s| s.stem == parsed.stem && s.counts.contains(&parsed.numbers.len()))?;
    Some((spec, parsed))
}

/// Why the sampler called `name` is not irreducible and aperiodic on `space`, if it is not
/// (its row's [`SamplerSpec::not_ergodic_on`]); `None` for unknown names.
pub fn not_ergodic_on(name: &str, space: &Space) -> Option<String> {
    find(name).and_then(|(spec, parsed)| (spec.not_ergodic_on)(&parsed, space))
}

/// Builds the sampler called `name` with `params`.
pub fn build_sampler(name: &str, params: &SamplerParams) -> Result<Box<dyn Sampler>, SamplerError> {
    match find(name) {
        Some((spec, parsed)) => (spec.build)(&parsed, params),
        None => Err(SamplerError::UnknownSampler(name.to_string(), sampler_names().join(", "))),
    }
}

/// Every usage form of every family, comma-separated, for the CLI's `--sampler` help.
pub fn form_list() -> String {
    let forms: Vec<String> = REGISTRY.iter().flat_map(SamplerSpec::forms).collect();
    forms.join(", ")
}

/// One line per family: forms, flags, exactness and doc (what `dlp samplers` prints).
pub fn text_table() -> String {
    let rows: Vec<(String, String, &str, &str)> = REGISTRY
        .iter()
        .map(|s| (s.forms().join(", "), s.flags(), if s.exact { "exact" } else { "inexact" }, s.doc))
        .collect();
    let w0 = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(0);
    let w1 = rows.iter().map(|r| r.1.chars().count()).max().unwrap_or(0);
    let mut out = String::new();
    for (forms, flags, exact, doc) in rows {
        let line = format!("{forms:w0$}  {flags:w1$}  {exact:7}  {doc}");
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The README's sampler table (between `<!-- samplers:begin -->` and `<!-- samplers:end -->`).
pub fn markdown_table() -> String {
    let mut out = String::from("| name | what | flags | exact for π | paper |\n|---|---|---|---|---|\n");
    for s in REGISTRY {
        let forms: Vec<String> = s.forms().iter().map(|f| format!("`{f}`")).collect();
        let flags: Vec<String> = s
            .params
            .iter()
            .map(|p| if p.required { format!("`{}`", p.param.flag()) } else { format!("[`{}`]", p.param.flag()) })
            .collect();
        let flags = if flags.is_empty() { "—".to_string() } else { flags.join(", ") };
        let exact = if s.exact { "yes" } else { "no" };
        out.push_str(&format!("| {} | {} | {flags} | {exact} | {} |\n", forms.join(", "), s.doc, s.paper));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_into_stem_and_numbers() {
        assert_eq!(SamplerName::parse("hb-10-1"), SamplerName { stem: "hb".into(), numbers: vec![10, 1] });
        assert_eq!(SamplerName::parse("gwg-4"), SamplerName { stem: "gwg".into(), numbers: vec![4] });
        assert_eq!(SamplerName::parse("gibbs-sweep"), SamplerName { stem: "gibbs-sweep".into(), numbers: vec![] });
        assert_eq!(SamplerName::parse("dmala"), SamplerName { stem: "dmala".into(), numbers: vec![] });
    }

    #[test]
    fn unknown_names_are_reported_with_the_known_ones() {
        let err = build_sampler("nope", &SamplerParams::default()).err().unwrap();
        assert!(matches!(err, SamplerError::UnknownSampler(..)));
        assert!(err.to_string().contains("gwg | gwg-<k>, lb"), "{err}");
    }

    #[test]
    fn rows_are_consistent() {
        for (i, s) in REGISTRY.iter().enumerate() {
            let clash =
                REGISTRY[..i].iter().find(|o| o.stem == s.stem && o.counts.iter().any(|c| s.counts.contains(c)));
            assert!(clash.is_none(), "{}: two rows accept the same names", s.stem);
            assert!(s.counts.iter().all(|&c| c <= s.numbers.len()), "{}: unnamed integer parts", s.stem);
            for name in s.tests.names {
                assert_eq!(find(name).map(|f| f.0.stem), Some(s.stem), "{name} is not a name of its row");
            }
            assert_eq!(s.tests.step_size.is_some(), s.takes(Param::StepSize), "{}: test step size", s.stem);
            assert_eq!(s.tests.batch_size.is_some(), s.takes(Param::BatchSize), "{}: test batch size", s.stem);
        }
    }

    /// The `required` flags say what the constructors do: each test name builds with the
    /// row's test parameters and fails without any one required parameter.
    #[test]
    fn required_parameters_match_the_constructors() {
        for s in REGISTRY {
            let full = s.test_params(|| vec![1.0; 4]);
            for name in s.tests.names {
                let built = build_sampler(name, &full).unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(&built.name(), name);
                for p in s.params.iter().filter(|p| p.required) {
                    let mut missing = full.clone();
                    match p.param {
                        Param::StepSize => missing.step_size = None,
                        Param::Preconditioner => missing.preconditioner = None,
                        Param::BatchSize => missing.batch_size = None,
                        Param::StepSizeMin => missing.step_size_min = None,
                    }
                    assert!(!p.param.is_set(&missing));
                    assert!(build_sampler(name, &missing).is_err(), "{name} builds without {}", p.param.flag());
                }
            }
        }
    }

    #[test]
    fn generated_listings_name_every_form() {
        let help = form_list();
        let table = markdown_table();
        for s in REGISTRY {
            for f in s.forms() {
                assert!(help.contains(&f), "{f} missing from the help");
                assert!(table.contains(&format!("`{f}`")), "{f} missing from the table");
                assert!(text_table().contains(&f), "{f} missing from the text table");
            }
        }
        assert!(help.contains("hb-<L>-<r>, gwg, gwg-<k>, lb"), "{help}");
    }
}
