//! Sweep descriptions: seeds × flag values of one reproduction binary, from flags or a TOML
//! file, checked against the binary's own clap flags ([`FLAGS_ARG`]) and expanded into a
//! fixed, ordered task list with content-addressed run ids.

use anyhow::{Context, Result, anyhow, bail};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::Path;

/// The hidden first argument on which every reproduction binary ([`crate::main_with`]) prints
/// its long flags ([`BinaryFlags::to_lines`], from clap's own description of its arguments)
/// instead of running: the sweep asks clap rather than reading `--help` text.
pub const FLAGS_ARG: &str = "--sweep-list-flags";

/// The long flags a binary takes: name → whether it takes a value.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BinaryFlags(pub BTreeMap<String, bool>);

impl BinaryFlags {
    /// The long flags of a clap command (its long names and visible aliases, `--help`
    /// included), each with whether its action takes a value.
    pub fn from_command(command: &clap::Command) -> Self {
        let mut command = command.clone();
        command.build();
        let mut flags = BTreeMap::new();
        for arg in command.get_arguments() {
            for name in arg.get_long_and_visible_aliases().unwrap_or_default() {
                flags.insert(name.to_string(), arg.get_action().takes_values());
            }
        }
        BinaryFlags(flags)
    }

    /// One `name value` or `name flag` line per flag, what a binary prints on [`FLAGS_ARG`].
    pub fn to_lines(&self) -> String {
        self.0.iter().map(|(name, value)| format!("{name} {}\n", if *value { "value" } else { "flag" })).collect()
    }

    /// Reads [`BinaryFlags::to_lines`] back; `None` on any other line.
    pub fn from_lines(text: &str) -> Option<Self> {
        let mut flags = BTreeMap::new();
        for line in text.lines() {
            let (name, kind) = line.split_once(' ')?;
            flags.insert(
                name.to_string(),
                matches!(kind, "value").then_some(true).or((kind == "flag").then_some(false))?,
            );
        }
        Some(BinaryFlags(flags))
    }

    /// Runs `bin` with [`FLAGS_ARG`] and reads its flags.
    pub fn of_binary(bin: &Path) -> Result<Self> {
        let out = std::process::Command::new(bin)
            .arg(FLAGS_ARG)
            .output()
            .with_context(|| format!("cannot run {} {FLAGS_ARG}", bin.display()))?;
        if !out.status.success() {
            bail!("{} {FLAGS_ARG} failed with {} (not a reproduction binary?)", bin.display(), out.status);
        }
        Self::from_lines(&String::from_utf8_lossy(&out.stdout))
            .filter(|f| !f.0.is_empty())
            .ok_or_else(|| anyhow!("{} {FLAGS_ARG}: not a flag list (not a reproduction binary?)", bin.display()))
    }

    /// Whether the binary knows `--name`, and if so whether it takes a value.
    pub fn takes_value(&self, name: &str, bin: &str) -> Result<bool> {
        self.0.get(name).copied().ok_or_else(|| {
            let known: Vec<String> = self.0.keys().filter(|k| *k != "help").map(|k| format!("--{k}")).collect();
            anyhow!("{bin} has no flag --{name} (its flags: {})", known.join(" "))
        })
    }
}

/// Parses a seed list: `A..B` (B excluded), `A..=B`, or comma-separated seeds.
pub fn parse_seeds(text: &str) -> Result<Vec<u64>> {
    let text = text.trim();
    let num =
        |s: &str| s.trim().parse::<u64>().map_err(|_| anyhow!("--seeds {text}: cannot parse {:?} as a seed", s.trim()));
    let seeds: Vec<u64> = if let Some((a, b)) = text.split_once("..=") {
        let (a, b) = (num(a)?, num(b)?);
        if b < a {
            bail!("--seeds {text}: the range is reversed ({a} > {b})");
        }
        (a..=b).collect()
    } else if let Some((a, b)) = text.split_once("..") {
        let (a, b) = (num(a)?, num(b)?);
        if b < a {
            bail!("--seeds {text}: the range is reversed ({a} > {b})");
        }
        (a..b).collect()
    } else {
        text.split(',').filter(|s| !s.trim().is_empty()).map(num).collect::<Result<_>>()?
    };
    if seeds.is_empty() {
        bail!("--seeds {text}: no seeds (an empty range; `0..8` is 0 to 7)");
    }
    let mut sorted = seeds.clone();
    sorted.sort_unstable();
    if sorted.windows(2).any(|w| w[0] == w[1]) {
        bail!("--seeds {text}: a seed is listed twice");
    }
    Ok(seeds)
}

/// What to run: a binary, its fixed flags, the flags that vary (axes) and the seeds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Description {
    /// Seeds, passed as `--seed S`.
    pub seeds: Vec<u64>,
    /// Flags passed to every run, in order: (name without `--`, value; `None` for a switch).
    pub fixed: Vec<(String, Option<String>)>,
    /// Flags that vary, in order: one run per combination of their values.
    pub axes: Vec<(String, Vec<String>)>,
    /// Key columns of the runs' CSV files for the gather (empty: detected, see `gather`).
    pub keys: Vec<String>,
}

/// `[args]`, `[axes]`, `seeds` and `[gather]` of a sweep TOML file.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct TomlFile {
    seeds: Option<toml::Value>,
    #[serde(default)]
    args: toml::Table,
    #[serde(default)]
    axes: toml::Table,
    #[serde(default)]
    gather: TomlGather,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct TomlGather {
    #[serde(default)]
    keys: Vec<String>,
}

fn scalar(v: &toml::Value, what: &str) -> Result<String> {
    match v {
        toml::Value::String(s) => Ok(s.clone()),
        toml::Value::Integer(i) => Ok(i.to_string()),
        toml::Value::Float(f) => Ok(f.to_string()),
        _ => bail!("{what}: expected a string or a number, found {v}"),
    }
}

impl Description {
    /// Reads a sweep TOML file (`seeds = "0..8"` or a list, `[args]` fixed flags, `true` for
    /// a switch, `[axes]` lists of values, `[gather] keys`); axes are taken in name order.
    pub fn from_toml(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
        let file: TomlFile = toml::from_str(&text).map_err(|e| {
            let line = e.span().map_or(1, |s| text[..s.start.min(text.len())].matches('\n').count() + 1);
            anyhow!("{}:{line}: {}", path.display(), e.message().trim())
        })?;
        let at = |k: &str| format!("{}: {k}", path.display());
        let seeds = match &file.seeds {
            None => vec![],
            Some(toml::Value::String(s)) => parse_seeds(s).with_context(|| at("seeds"))?,
            Some(toml::Value::Array(a)) => {
                parse_seeds(&a.iter().map(|v| scalar(v, &at("seeds"))).collect::<Result<Vec<_>>>()?.join(","))?
            }
            Some(v) => bail!("{}: expected \"A..B\" or a list, found {v}", at("seeds")),
        };
        let mut fixed = Vec::new();
        for (k, v) in &file.args {
            match v {
                toml::Value::Boolean(true) => fixed.push((k.clone(), None)),
                toml::Value::Boolean(false) => {}
                v => fixed.push((k.clone(), Some(scalar(v, &at(&format!("args.{k}")))?))),
            }
        }
        let mut axes = Vec::new();
        for (k, v) in &file.axes {
            let toml::Value::Array(values) = v else {
                bail!("{}: expected a list of values", at(&format!("axes.{k}")));
            };
            let values = values.iter().map(|v| scalar(v, &at(&format!("axes.{k}")))).collect::<Result<Vec<_>>>()?;
            axes.push((k.clone(), values));
        }
        Ok(Description { seeds, fixed, axes, keys: file.gather.keys })
    }

    /// Adds the binary flags given on the command line (`--flag value`, `--flag=value`,
    /// `--switch`); a value with commas is an axis (`--step-size 0.1,0.2`). A flag given here
    /// replaces the same flag of the TOML file.
    pub fn add_cli(&mut self, tokens: &[String], flags: &BinaryFlags, bin: &str) -> Result<()> {
        let mut i = 0;
        while i < tokens.len() {
            let tok = &tokens[i];
            let Some(body) = tok.strip_prefix("--") else {
                bail!("unexpected argument {tok:?} (flags of {bin} are written --name value)");
            };
            let (name, inline) = match body.split_once('=') {
                Some((n, v)) => (n.to_string(), Some(v.to_string())),
                None => (body.to_string(), None),
            };
            let value = if flags.takes_value(&name, bin)? {
                match inline {
                    Some(v) => Some(v),
                    None => {
                        i += 1;
                        Some(tokens.get(i).cloned().ok_or_else(|| anyhow!("--{name} needs a value"))?)
                    }
                }
            } else if inline.is_some() {
                bail!("--{name} of {bin} takes no value");
            } else {
                None
            };
            self.fixed.retain(|(n, _)| *n != name);
            self.axes.retain(|(n, _)| *n != name);
            match value {
                Some(v) if v.contains(',') => {
                    let values: Vec<String> = v.split(',').map(|s| s.trim().to_string()).collect();
                    if values.iter().any(String::is_empty) {
                        bail!("--{name} {v}: an empty value in the list");
                    }
                    self.axes.push((name, values));
                }
                v => self.fixed.push((name, v)),
            }
            i += 1;
        }
        Ok(())
    }

    /// Checks every flag against the binary's and the sweep's own rules: known flags, values
    /// where the flag takes one, no `--seed`/`--out` (the sweep sets them), no empty axis,
    /// no value listed twice on an axis.
    pub fn check(&self, flags: &BinaryFlags, bin: &str) -> Result<()> {
        for name in ["seed", "out"] {
            flags.takes_value(name, bin).with_context(|| format!("{bin} cannot be swept: it lacks --{name}"))?;
        }
        if self.seeds.is_empty() {
            bail!("no seeds (give --seeds, e.g. --seeds 0..8)");
        }
        let names = self.fixed.iter().map(|f| &f.0).chain(self.axes.iter().map(|a| &a.0));
        for name in names {
            if name == "seed" || name == "out" {
                bail!("--{name} is set by the sweep for each run (use --seeds / --results)");
            }
            flags.takes_value(name, bin)?;
        }
        for (name, value) in &self.fixed {
            if flags.takes_value(name, bin)? != value.is_some() {
                bail!("--{name} of {bin} {}", if value.is_some() { "takes no value" } else { "needs a value" });
            }
        }
        for (name, values) in &self.axes {
            if !flags.takes_value(name, bin)? {
                bail!("--{name} of {bin} is a switch and cannot vary");
            }
            if values.is_empty() {
                bail!("--{name}: no values");
            }
            let mut v = values.clone();
            v.sort();
            if v.windows(2).any(|w| w[0] == w[1]) {
                bail!("--{name}: a value is listed twice");
            }
        }
        Ok(())
    }

    /// The task list: every combination of the axes' values (first axis outermost), then every
    /// seed (innermost), in that fixed order.
    pub fn expand(&self, bin: &str) -> Result<Vec<Task>> {
        let mut combos: Vec<Vec<(String, String)>> = vec![vec![]];
        for (name, values) in &self.axes {
            combos = combos
                .into_iter()
                .flat_map(|c| {
                    values.iter().map(move |v| {
                        let mut c = c.clone();
                        c.push((name.clone(), v.clone()));
                        c
                    })
                })
                .collect();
        }
        let mut tasks = Vec::new();
        for config in combos {
            for &seed in &self.seeds {
                let mut args = Vec::new();
                for (name, value) in &self.fixed {
                    args.push(format!("--{name}"));
                    args.extend(value.clone());
                }
                for (name, value) in &config {
                    args.extend([format!("--{name}"), value.clone()]);
                }
                args.extend(["--seed".to_string(), seed.to_string()]);
                let run_id = run_id(bin, &config, seed, &args);
                tasks.push(Task { run_id, seed, config: config.clone(), args });
            }
        }
        let mut ids: Vec<&str> = tasks.iter().map(|t| t.run_id.as_str()).collect();
        ids.sort_unstable();
        if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
            bail!("two runs map to the directory {} (values that differ only in punctuation)", w[0]);
        }
        Ok(tasks)
    }
}

/// One run of the binary.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Task {
    /// Directory name under `results/<name>/`.
    pub run_id: String,
    /// Its seed.
    pub seed: u64,
    /// The values of the axes for this run, in axis order.
    pub config: Vec<(String, String)>,
    /// The binary's arguments (all but `--out`, which the task adds).
    pub args: Vec<String>,
}

/// First `n` hex digits of the SHA-256 of `parts` joined by NUL.
pub fn short_hash(parts: &[&str], n: usize) -> String {
    let digest = Sha256::digest(parts.join("\0").as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect::<String>()[..n].to_string()
}

/// `samplers-dmala@0.4_seed-3_1a2b3c4d`: the axis values (characters outside
/// `[A-Za-z0-9.@+-]` become `~`), the seed, and a hash of the binary and all its arguments,
/// so that a run is found again by any sweep that asks for the same arguments, and a run
/// with other fixed flags (`--quick` or not) gets another directory.
fn run_id(bin: &str, config: &[(String, String)], seed: u64, args: &[String]) -> String {
    let clean = |s: &str| -> String {
        s.chars().take(40).map(|c| if c.is_ascii_alphanumeric() || ".@+-".contains(c) { c } else { '~' }).collect()
    };
    let mut parts: Vec<String> = config.iter().map(|(n, v)| format!("{}-{}", clean(n), clean(v))).collect();
    parts.push(format!("seed-{seed}"));
    let mut all = vec![bin];
    all.extend(args.iter().map(String::as_str));
    parts.push(short_hash(&all, 8));
    parts.join("_")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A clap command with long flags `names`; those ending in `=` take a value.
    fn command(names: &[&'static str]) -> BinaryFlags {
        let cmd = names.iter().fold(clap::Command::new("fig3"), |cmd, n| match n.strip_suffix('=') {
            Some(n) => cmd.arg(clap::Arg::new(n).long(n)),
            None => cmd.arg(clap::Arg::new(*n).long(*n).action(clap::ArgAction::SetTrue)),
        });
        BinaryFlags::from_command(&cmd)
    }

    fn flags() -> BinaryFlags {
        command(&["seed=", "quick", "samplers=", "truth=", "out="])
    }

    #[test]
    fn clap_gives_the_flags_and_whether_they_take_values() {
        let f = flags();
        assert_eq!(BinaryFlags::from_lines(&f.to_lines()), Some(f.clone()));
        assert_eq!(BinaryFlags::from_lines("seed value\nUsage: x"), None);
        let names: Vec<(&str, bool)> = f.0.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        assert_eq!(
            names,
            [("help", false), ("out", true), ("quick", false), ("samplers", true), ("seed", true), ("truth", true)]
        );
        assert_eq!(
            f.takes_value("nope", "fig3").unwrap_err().to_string(),
            "fig3 has no flag --nope (its flags: --out --quick --samplers --seed --truth)"
        );
    }

    #[test]
    fn seed_lists_and_ranges() {
        assert_eq!(parse_seeds("0..3").unwrap(), [0, 1, 2]);
        assert_eq!(parse_seeds("2..=4").unwrap(), [2, 3, 4]);
        assert_eq!(parse_seeds("7, 1,3").unwrap(), [7, 1, 3]);
        assert_eq!(parse_seeds("5..2").unwrap_err().to_string(), "--seeds 5..2: the range is reversed (5 > 2)");
        assert!(parse_seeds("3..3").unwrap_err().to_string().contains("no seeds"));
        assert!(parse_seeds("").is_err());
        assert!(parse_seeds("1,x").is_err());
        assert!(parse_seeds("1,1").is_err());
    }

    fn cli(tokens: &str) -> Result<Description> {
        let mut d = Description { seeds: vec![0, 1], ..Default::default() };
        let toks: Vec<String> = tokens.split(' ').filter(|s| !s.is_empty()).map(String::from).collect();
        d.add_cli(&toks, &flags(), "fig3")?;
        d.check(&flags(), "fig3")?;
        Ok(d)
    }

    #[test]
    fn tasks_are_axes_outer_seeds_inner_with_stable_distinct_ids() {
        let d = cli("--quick --samplers dmala@0.4,gwg --truth=spec").unwrap();
        assert_eq!(d.fixed, [("quick".to_string(), None), ("truth".to_string(), Some("spec".to_string()))]);
        let tasks = d.expand("fig3").unwrap();
        let got: Vec<(String, u64)> = tasks.iter().map(|t| (t.config[0].1.clone(), t.seed)).collect();
        let want = [("dmala@0.4", 0), ("dmala@0.4", 1), ("gwg", 0), ("gwg", 1)];
        assert_eq!(got, want.map(|(s, k)| (s.to_string(), k)));
        assert_eq!(tasks[1].args, ["--quick", "--truth", "spec", "--samplers", "dmala@0.4", "--seed", "1"]);
        assert!(tasks[1].run_id.starts_with("samplers-dmala@0.4_seed-1_"), "{}", tasks[1].run_id);
        // The id depends on every argument: another fixed flag, another directory.
        let other = cli("--samplers dmala@0.4,gwg --truth=spec").unwrap().expand("fig3").unwrap();
        assert_ne!(other[1].run_id, tasks[1].run_id);
        assert_eq!(cli("--quick --samplers dmala@0.4,gwg --truth=spec").unwrap().expand("fig3").unwrap(), tasks);
    }

    #[test]
    fn bad_descriptions_are_refused_with_one_line() {
        let msg = |t: &str| cli(t).unwrap_err().to_string();
        assert!(msg("--stepz 3").starts_with("fig3 has no flag --stepz"));
        assert_eq!(msg("--seed 3"), "--seed is set by the sweep for each run (use --seeds / --results)");
        assert_eq!(msg("--samplers a,,b"), "--samplers a,,b: an empty value in the list");
        assert_eq!(msg("--samplers a,a"), "--samplers: a value is listed twice");
        assert_eq!(msg("--quick=1"), "--quick of fig3 takes no value");
        assert_eq!(msg("--truth"), "--truth needs a value");
        assert!(msg("dmala").starts_with("unexpected argument"));
        let mut d = Description::default();
        assert!(d.check(&flags(), "fig3").unwrap_err().to_string().starts_with("no seeds"));
        d.seeds = vec![0];
        let no_out = command(&["seed="]);
        assert_eq!(d.check(&no_out, "x").unwrap_err().to_string(), "x cannot be swept: it lacks --out");
    }

    #[test]
    fn toml_files_give_seeds_fixed_flags_axes_and_keys() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.toml");
        std::fs::write(
            &p,
            "seeds = \"0..2\"\n[args]\nquick = true\nchains = 4\n[axes]\nsamplers = [\"dmala@0.4\", \"gwg\"]\n[gather]\nkeys = [\"sampler\", \"step\"]\n",
        )
        .unwrap();
        let mut d = Description::from_toml(&p).unwrap();
        assert_eq!(d.seeds, [0, 1]);
        assert_eq!(d.fixed, [("chains".to_string(), Some("4".to_string())), ("quick".to_string(), None)]);
        assert_eq!(d.axes, [("samplers".to_string(), vec!["dmala@0.4".to_string(), "gwg".to_string()])]);
        assert_eq!(d.keys, ["sampler", "step"]);
        // A command-line flag replaces the file's.
        let f = command(&["chains=", "samplers=", "quick"]);
        d.add_cli(&["--samplers".into(), "lb".into()], &f, "fig3").unwrap();
        assert_eq!(d.fixed.len(), 3);
        assert!(d.axes.is_empty());
        std::fs::write(&p, "seeds = \"3..1\"\n").unwrap();
        let e = format!("{:#}", Description::from_toml(&p).unwrap_err());
        assert!(e.ends_with("s.toml: seeds: --seeds 3..1: the range is reversed (3 > 1)"), "{e}");
        std::fs::write(&p, "sedes = 1\n").unwrap();
        let e = Description::from_toml(&p).unwrap_err().to_string();
        assert!(e.contains("unknown field"), "{e}");
    }
}
