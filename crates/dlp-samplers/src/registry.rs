//! Samplers by name: `dmala`, `hb-10-1`, `gwg-4`, … → a configured [`Sampler`].
//!
//! A name is a stem followed by optional `-<integer>` parts (`hb-10-1` = stem `hb`, numbers
//! [10, 1]). Each registry row is one sampler family: its stem, how many numbers it takes,
//! a usage string, and its constructor.

use dlp_core::{Sampler, SamplerError};

/// Continuous parameters given next to the name (`--step-size`, …).
#[derive(Clone, Debug, Default)]
pub struct SamplerParams {
    /// Step size α of DLP samplers (in {0,1} units for binary/spin models, spec §1.5).
    pub step_size: Option<f64>,
    /// Diagonal preconditioner h (length d) of `pdula`/`pdmala`.
    pub preconditioner: Option<Vec<f64>>,
    /// Minibatch size of stochastic-gradient samplers.
    pub batch_size: Option<usize>,
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

/// Constructor of one sampler family.
pub type Constructor = fn(&SamplerName, &SamplerParams) -> Result<Box<dyn Sampler>, SamplerError>;

/// One registry row: (stem, allowed counts of integer parts, usage, constructor).
pub type Entry = (&'static str, &'static [usize], &'static str, Constructor);

/// Every sampler family of dlp. Add a sampler here with one line.
pub const REGISTRY: &[Entry] = &[
    // (stem, integer-part counts, usage, constructor)
    ("dula", &[0], "dula", crate::dlp::construct),
    ("dmala", &[0], "dmala", crate::dlp::construct),
    ("pdula", &[0], "pdula", crate::dlp::construct),
    ("pdmala", &[0], "pdmala", crate::dlp::construct),
    ("dula-f32", &[0], "dula-f32", crate::dlp::construct),
    ("dmala-f32", &[0], "dmala-f32", crate::dlp::construct),
    ("sg-dula", &[0], "sg-dula", crate::sgdlp::construct),
    ("sg-dmala", &[0], "sg-dmala", crate::sgdlp::construct),
    ("gibbs", &[0], "gibbs", crate::gibbs::Gibbs::build_random),
    ("gibbs-sweep", &[0], "gibbs-sweep", crate::gibbs::Gibbs::build_sweep),
    ("gwg", &[0, 1], "gwg | gwg-<k>", crate::gwg::Gwg::build),
    ("lb", &[0], "lb", crate::locally_balanced::LocallyBalanced::build),
    ("bg", &[1], "bg-<k>", crate::block_gibbs::BlockGibbs::build),
    ("block-gibbs", &[0], "block-gibbs", crate::block_gibbs::RbmBlockGibbs::build),
    ("hb", &[2], "hb-<L>-<r>", crate::hamming_ball::HammingBall::build),
];

/// The usage forms of every registered sampler, for help and error messages.
pub fn sampler_names() -> Vec<&'static str> {
    REGISTRY.iter().map(|e| e.2).collect()
}

/// Builds the sampler called `name` with `params`.
pub fn build_sampler(name: &str, params: &SamplerParams) -> Result<Box<dyn Sampler>, SamplerError> {
    let parsed = SamplerName::parse(name);
    for (stem, counts, _, make) in REGISTRY {
        if *stem == parsed.stem && counts.contains(&parsed.numbers.len()) {
            return make(&parsed, params);
        }
    }
    Err(SamplerError::UnknownSampler(name.to_string(), sampler_names().join(", ")))
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
    }
}
