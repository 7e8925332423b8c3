//! Command-line plumbing shared by the binaries: the flags every binary takes, `main`, and the
//! two list syntaxes (`name@step_size` sampler lists and comma-separated values).

use anyhow::{Context, Result, anyhow};
use dlp_core::{Sampler, SamplerError};
use dlp_samplers::{SamplerParams, build_sampler};
use serde::Serialize;
use std::path::PathBuf;

/// Arguments every reproduction binary takes (`#[command(flatten)]`).
#[derive(clap::Args, Debug, Clone, Serialize)]
pub struct CommonArgs {
    /// Master seed (chains use streams 1.., setup work stream 0).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// A small version of the experiment that finishes in seconds (for tests and CI).
    #[arg(long)]
    pub quick: bool,
    /// Worker threads (default: one per core). Results do not depend on it; timings do.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Output directory (default `results/<name>`, relative to the current directory).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

impl CommonArgs {
    /// `given` if the flag was passed, else the `--quick` value under `--quick`, else the full
    /// value: the rule behind every `[default: …; --quick: …]` in the binaries' help.
    pub fn pick<T>(&self, given: Option<T>, full: T, quick: T) -> T {
        given.unwrap_or(if self.quick { quick } else { full })
    }
}

/// The `main` of every reproduction binary: parse the arguments, run, and on failure print one
/// `error: …` line and exit 2 (bad arguments or an impossible configuration). Files are
/// written atomically, so a failed run leaves no half-written output.
/// With [`crate::sweep::spec::FLAGS_ARG`] as its only argument it prints its long flags (for
/// `sweep`) and exits.
pub fn main_with<A: clap::Parser>(run: impl FnOnce(A) -> Result<()>) {
    let mut argv = std::env::args_os().skip(1);
    if let (Some(a), None) = (argv.next(), argv.next())
        && a == crate::sweep::spec::FLAGS_ARG
    {
        print!("{}", crate::sweep::spec::BinaryFlags::from_command(&A::command()).to_lines());
        return;
    }
    if let Err(e) = run(A::parse()) {
        eprintln!("error: {e:#}");
        std::process::exit(2);
    }
}

/// [`main_with`] for programs whose runner threads each evaluate their own chains' small
/// candle graphs (`001-bnn`, `table2`, `table4`): candle's shared CPU pool is made one thread
/// first ([`dlp_tensor::one_candle_thread_per_chain`]), since there it only contends.
#[cfg(feature = "tensor")]
pub fn main_with_chain_graphs<A: clap::Parser>(run: impl FnOnce(A) -> Result<()>) {
    dlp_tensor::one_candle_thread_per_chain();
    main_with(run)
}

/// One entry of a `--samplers` list: a registry name and an optional step size.
#[derive(Clone, Debug, PartialEq)]
pub struct SamplerSpec {
    /// Registry name (`dmala`, `gwg-4`, `hb-10-1`).
    pub name: String,
    /// Step size α, for the samplers that take one.
    pub step_size: Option<f64>,
}

impl SamplerSpec {
    /// The sampler `name` with step size `step_size`.
    pub fn new(name: &str, step_size: Option<f64>) -> Self {
        SamplerSpec { name: name.to_string(), step_size }
    }

    /// Builds the sampler from the registry (default parameters besides the step size).
    pub fn build(&self) -> Result<Box<dyn Sampler>, SamplerError> {
        build_sampler(&self.name, &SamplerParams { step_size: self.step_size, ..Default::default() })
    }

    /// `dmala(0.4)`, or the bare name without a step size: the label of the Ising figures.
    pub fn label(&self) -> String {
        self.step_size.map_or(self.name.clone(), |a| format!("{}({a})", self.name))
    }

    /// `dmala α=0.4`, or the bare name: the legend of the learning figures.
    pub fn legend(&self) -> String {
        self.step_size.map_or(self.name.clone(), |a| format!("{} α={a}", self.name))
    }
}

/// Exactly one sampler, `name` or `name@step_size`, built from the registry, for the
/// single-sampler flag `flag` (e.g. an AIS kernel).
pub fn one_sampler(text: &str, flag: &str) -> Result<Box<dyn Sampler>> {
    match parse_samplers(text)?.as_slice() {
        [one] => Ok(one.build()?),
        _ => anyhow::bail!("--{flag}: one sampler, `name` or `name@step_size`, found {text:?}"),
    }
}

/// Parses a comma-separated `--samplers` list of `name` or `name@step_size` (blank entries
/// are skipped).
pub fn parse_samplers(list: &str) -> Result<Vec<SamplerSpec>> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| match s.split_once('@') {
            Some((n, a)) => {
                Ok(SamplerSpec::new(n, Some(a.parse().with_context(|| format!("bad step size in {s:?}"))?)))
            }
            None => Ok(SamplerSpec::new(s, None)),
        })
        .collect()
}

/// Parses the comma-separated values of flag `--what` (blank entries are skipped, so `""`
/// is the empty list).
pub fn parse_list<T: std::str::FromStr>(text: &str, what: &str) -> Result<Vec<T>> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<T>().map_err(|_| anyhow!("--{what}: cannot parse {s:?}")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampler_lists_parse_names_and_step_sizes() {
        let s = parse_samplers(" bg-1, dmala@0.4 ,,gwg-4").unwrap();
        assert_eq!(
            s,
            [SamplerSpec::new("bg-1", None), SamplerSpec::new("dmala", Some(0.4)), SamplerSpec::new("gwg-4", None)]
        );
        assert_eq!((s[1].label(), s[1].legend()), ("dmala(0.4)".to_string(), "dmala α=0.4".to_string()));
        assert_eq!(s[0].label(), "bg-1");
        assert!(parse_samplers("dmala@x").is_err());
    }

    #[test]
    fn value_lists_skip_blanks_and_name_the_flag_on_errors() {
        assert_eq!(parse_list::<usize>("5, 10,", "ks").unwrap(), [5, 10]);
        assert!(parse_list::<usize>("", "ks").unwrap().is_empty());
        assert_eq!(parse_list::<f64>("0.1,x", "sigmas").unwrap_err().to_string(), "--sigmas: cannot parse \"x\"");
    }

    #[test]
    fn pick_prefers_the_flag_then_the_quick_value() {
        let mut c = CommonArgs { seed: 0, quick: false, threads: None, out: None };
        assert_eq!((c.pick(Some(3), 1, 2), c.pick(None, 1, 2)), (3, 1));
        c.quick = true;
        assert_eq!(c.pick(None, 1, 2), 2);
    }
}
