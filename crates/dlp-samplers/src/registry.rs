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

pub use crate::spec::{
    BATCH_SIZE, BenchModel, Build, Constructor, Defaults, DeviceKernel, Inner, NO_DEFAULTS, NO_TESTS, NotErgodicOn,
    PLAIN, PRECONDITIONER, Param, ParamSpec, STEP_SIZE, STEP_SIZE_MIN, SamplerName, SamplerParams, SamplerSpec,
    TestSpec, Wrapper, ergodic_everywhere,
};

/// Every sampler family of dlp, in the order help and tables list them: one line per family,
/// the row itself ([`SamplerSpec`]: names, parameters, defaults, adaptation, tests) being a
/// `pub const` in the family's own module. Adding a sampler: its module with its row, and one
/// line here (its `tests` names then need a reference in `dlp_exact::reference`).
pub static REGISTRY: &[SamplerSpec] = &[
    crate::dlp::DULA,
    crate::dlp::DMALA,
    crate::dlp::PDULA,
    crate::dlp::PDMALA,
    crate::dlp::DULA_F32,
    crate::dlp::DMALA_F32,
    crate::sgdlp::SG_DULA,
    crate::sgdlp::SG_DMALA,
    crate::gibbs::GIBBS,
    crate::gibbs::GIBBS_SWEEP,
    crate::block_gibbs::BG,
    crate::hamming_ball::HB,
    crate::gwg::GWG,
    crate::locally_balanced::LB,
    crate::pas::PAS,
    crate::pas::PAS_R,
    crate::alb::ALB,
    crate::rwm::RWM,
    crate::rw::RW_R,
    crate::dlmc::DLMC,
    crate::dlmc::DLMCF,
    crate::acs::ACS_DMALA,
    crate::acs::ACS_DULA,
    crate::block_gibbs::BLOCK_GIBBS,
    crate::gf_svgd::GF_SVGD,
    crate::gf_svgd::GF_SVGD_RELAXED,
    crate::rmala::RMALA,
    crate::tempering::PT,
];

/// The usage forms of every registered sampler family, for help and error messages.
pub fn sampler_names() -> Vec<String> {
    REGISTRY.iter().map(SamplerSpec::usage).collect()
}

/// The family of `name` and the parsed name, if one is registered.
pub fn find(name: &str) -> Option<(&'static SamplerSpec, SamplerName)> {
    let parsed = SamplerName::parse(name);
    let spec = REGISTRY.iter().find(|s| {
        s.stem == parsed.stem && s.counts.contains(&parsed.numbers.len()) && s.wraps() == parsed.inner.is_some()
    })?;
    Some((spec, parsed))
}

/// Why the sampler called `name` is not irreducible and aperiodic on `space`, if it is not
/// (its row's [`SamplerSpec::not_ergodic_on`]); `None` for unknown names.
pub fn not_ergodic_on(name: &str, space: &Space) -> Option<String> {
    find(name).and_then(|(spec, parsed)| (spec.not_ergodic_on)(&parsed, space))
}

/// Builds the sampler called `name` with `params` (a wrapper around its resolved inner sampler).
pub fn build_sampler(name: &str, params: &SamplerParams) -> Result<Box<dyn Sampler>, SamplerError> {
    match find(name) {
        Some((spec, parsed)) => match spec.build {
            Build::Plain(construct) => construct(&parsed, params),
            Build::Wrapper(w) => (w.build)(&parsed, params, &inner_of(&parsed)?),
        },
        None => Err(SamplerError::UnknownSampler(name.to_string(), sampler_names().join(", "))),
    }
}

/// The inner sampler of a wrapper's parsed name (`pt-4:gwg` → `gwg`), resolved.
pub fn inner_of(parsed: &SamplerName) -> Result<Inner, SamplerError> {
    resolve_inner(parsed.inner.as_deref().unwrap_or_default())
}

/// The registry row and parsed name of `name`, as a wrapper's inner sampler.
pub fn resolve_inner(name: &str) -> Result<Inner, SamplerError> {
    let (spec, parsed) =
        find(name).ok_or_else(|| SamplerError::UnknownSampler(name.to_string(), sampler_names().join(", ")))?;
    Ok(Inner { name: name.to_string(), spec, parsed })
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
        assert_eq!(SamplerName::parse("hb-10-1"), SamplerName { stem: "hb".into(), numbers: vec![10, 1], inner: None });
        assert_eq!(SamplerName::parse("gwg-4"), SamplerName { stem: "gwg".into(), numbers: vec![4], inner: None });
        assert_eq!(
            SamplerName::parse("gibbs-sweep"),
            SamplerName { stem: "gibbs-sweep".into(), numbers: vec![], inner: None }
        );
        assert_eq!(SamplerName::parse("dmala"), SamplerName { stem: "dmala".into(), numbers: vec![], inner: None });
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
            // A step size given to the device kernel or on a benchmark model must be one the
            // family takes.
            let dlp = matches!(s.defaults.device, Some(DeviceKernel::Dula | DeviceKernel::Dmala));
            assert!(!dlp || s.takes(Param::StepSize), "{}: device DLP kernel without a step size", s.stem);
            let bench = [BenchModel::Ising, BenchModel::Rbm, BenchModel::Bnn];
            assert!(
                bench.iter().all(|&m| s.defaults.step_size(m).is_none_or(|a| a > 0.0 && s.takes(Param::StepSize))),
                "{}: benchmark step sizes",
                s.stem
            );
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
                        Param::Ladder => missing.ladder = None,
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

    #[test]
    fn the_registry_builds_it_by_name_with_ladder_checks() {
        let s = build_sampler("pt-3:lb", &SamplerParams::default()).unwrap();
        assert_eq!(s.name(), "pt-3:lb");
        let bad = |name: &str, ladder: Option<Vec<f64>>| {
            let e = build_sampler(name, &SamplerParams { ladder, step_size: Some(0.5), ..Default::default() });
            e.err().unwrap().to_string()
        };
        assert!(bad("pt-3:gwg", Some(vec![1.0, 0.5])).contains("2 values"));
        assert!(bad("pt-2:gwg", Some(vec![0.9, 0.5])).contains("start at β = 1"));
        assert!(bad("pt-2:gwg", Some(vec![1.0, 1.5])).contains("decrease strictly"));
        assert!(bad("pt-3:gwg", Some(vec![1.0, 0.5, 0.0])).contains("above 0"));
        assert!(bad("pt-1:gwg", None).contains("at least 2"));
        assert!(bad("pt-2:pt-2:gwg", None).contains("wrapper"));
        assert!(bad("pt-2:sg-dmala", None).contains("data model"));
        assert!(build_sampler("pt-2", &SamplerParams::default()).is_err(), "a wrapper needs an inner sampler");
        assert!(build_sampler("gwg:dmala", &SamplerParams::default()).is_err(), "only wrappers take one");
        // Chains that cannot be moved (block Gibbs) are refused at the start, naming them.
        let bg = build_sampler("pt-2:bg-2", &SamplerParams::default()).unwrap();
        let e = bg.start(&dlp_core::testing::Quadratic::spec_tiny(), &[0, 0, 0]).err().unwrap().to_string();
        assert!(e.contains("bg-2") && e.contains("exchange"), "{e}");
    }
}
