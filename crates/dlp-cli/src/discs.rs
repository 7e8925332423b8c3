//! `dlp discs`: DISCS's sampling protocol (google-research/discs, `experiment/sampling.py`) on
//! one of its classical tasks for some of our samplers, and the same DISCS ESS
//! ([`DiscsEss`]) for a peer's statistic traces, so that both sides of `just bench-peer-discs`
//! are scored by one estimator. JSON lines, one per (implementation, sampler).
//!
//! * `--export FILE` writes the task (its `dlp.model.v1` model, the `chains × d` initial
//!   states and the reference state of `--seed`) for the peer (`bench/peer/discs_jax.py`) and
//!   runs nothing.
//! * Otherwise each sampler runs `--steps` steps from those initial states: the first
//!   ⌊steps · ess_ratio⌋ are burn-in (DISCS's `discs_split`), spent adapting the step size
//!   when the sampler adapts (frozen afterwards, as `just reproduce discs`), the rest kept;
//!   the kept steps' statistic (DISCS's distance to the reference state) gives the ESS.
//! * `--peer FILE` adds the peer's cells: JSON lines naming a statistic trace (little-endian
//!   i32, chains × kept, chain-major, relative to FILE's directory), scored the same way.
//!
//! Seconds: ours are the wall time of the kept steps' run (the statistic's bookkeeping
//! included); the peer's are what it reports (for DISCS's JAX: its jit-compiled step over all
//! chains, compile time excluded). Evaluations: ours are our samplers' own counts per chain
//! (`StepInfo`); the peer's are DISCS's `num_ll_calls` formula.

use clap::Args as ClapArgs;
use dlp_cli::{CliError, atomic_write, check_writable, io_reason};
use dlp_core::stats::{DiscsEss, discs_split};
use dlp_core::{RunOptions, Target};
use dlp_session::discs::{initial_and_reference, run_cell};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// Arguments of `dlp discs`.
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// DISCS task (`dlp_models::discs`: ising, potts, rbm-standin, …; `discs:` prefix allowed).
    #[arg(long)]
    task: String,
    /// Samplers, comma-separated (registry names).
    #[arg(long, value_delimiter = ',', default_value = "dmala,gwg,pas")]
    samplers: Vec<String>,
    /// Chains (DISCS: 100).
    #[arg(long, default_value_t = 100)]
    chains: usize,
    /// Steps per chain, burn-in included (DISCS: 100,000).
    #[arg(long, default_value_t = 1000)]
    steps: usize,
    /// Burn-in fraction (DISCS's `ess_ratio`).
    #[arg(long, default_value_t = 0.5)]
    ess_ratio: f64,
    /// Seed of the initial and reference states (setup stream 0) and of the chains.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Worker threads (0 = one per core).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Write the task (model, initial states, reference state) to this JSON file and stop.
    #[arg(long, value_name = "FILE")]
    export: Option<PathBuf>,
    /// A peer's cells (JSON lines with a `trace` file each) to score with the same ESS.
    #[arg(long, value_name = "FILE")]
    peer: Option<PathBuf>,
    /// Write the JSON lines here (atomically) instead of stdout.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

/// The ESS fields shared by both sides' records.
fn scored(series: &[f64], chains: usize, kept: usize, seconds: f64) -> Value {
    let e = DiscsEss::of(series, chains);
    json!({
        "ess": e.mean, "ess_std": e.std, "ess_per_step": e.mean / kept as f64,
        "seconds": seconds, "ess_per_second": e.per_second(seconds),
        "stat_mean": series.iter().sum::<f64>() / series.len().max(1) as f64,
    })
}

/// One of our cells: `sampler` from `x0` for `burn` + `kept` steps, run by the cell every
/// DISCS front end shares ([`dlp_session::discs::run_cell`], as `just reproduce discs`): a
/// sampler that adapts its step size does so in the burn-in's
/// [`dlp_session::discs::ADAPT_WINDOWS`] windows toward its row's target acceptance, frozen afterwards; the others run the burn-in.
fn ours(target: &dyn Target, a: &Args, sampler: &str, x0: &[u32], reference: &[u32]) -> Result<Value, CliError> {
    let (burn, kept) = discs_split(a.steps, a.ess_ratio);
    let options = RunOptions { seed: a.seed, threads: a.threads, chains_per_task: 0 };
    let (spec, _) = dlp_samplers::registry::find(sampler)
        .ok_or_else(|| CliError::Input(format!("--samplers: unknown sampler {sampler:?}")))?;
    let cell = run_cell(target, sampler, spec, (a.chains, burn, kept), (x0.to_vec(), reference), &options)
        .map_err(CliError::from_run)?;
    let per_step = cell.ess / kept as f64;
    Ok(json!({
        "ess": cell.ess, "ess_std": cell.ess_std, "ess_per_step": per_step,
        "seconds": cell.wall_seconds, "ess_per_second": cell.ess / cell.wall_seconds,
        "stat_mean": cell.stat_mean, "evals_per_chain": cell.evals_per_chain,
        "ess_per_eval": cell.per_eval(),
        "eval_convention": "ours: density + gradient evaluations per chain in the kept steps",
        "accept": cell.accept, "step_size": cell.step_size, "adapted": cell.adapted, "kernel": cell.kernel,
    }))
}

/// The peer's cells of `file`, each scored from its trace.
fn peer(file: &Path, a: &Args, kept: usize) -> Result<Vec<Value>, CliError> {
    let bad = |what: String| CliError::Input(format!("--peer {}: {what}", file.display()));
    let text = std::fs::read_to_string(file).map_err(|e| bad(io_reason(&e)))?;
    let dir = file.parent().unwrap_or(Path::new("."));
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let mut rec: Value = serde_json::from_str(line).map_err(|e| bad(format!("line {}: {e}", i + 1)))?;
        let o = rec.as_object_mut().ok_or_else(|| bad(format!("line {}: not a JSON object", i + 1)))?;
        if o.contains_key("error") {
            rows.push(rec);
            continue;
        }
        let field =
            |k: &str| o.get(k).and_then(Value::as_f64).ok_or_else(|| bad(format!("line {}: no number {k}", i + 1)));
        let (chains, seconds, calls) = (field("chains")?, field("seconds")?, field("num_ll_calls")?);
        if chains as usize != a.chains || field("kept")? as usize != kept {
            return Err(bad(format!(
                "line {}: {chains} chains × {} kept steps, expected {} × {kept}",
                i + 1,
                field("kept")?,
                a.chains
            )));
        }
        let name = o.get("trace").and_then(Value::as_str).ok_or_else(|| bad(format!("line {}: no trace", i + 1)))?;
        let path = dir.join(name);
        let bytes = std::fs::read(&path).map_err(|e| bad(format!("trace {}: {}", path.display(), io_reason(&e))))?;
        if bytes.len() != 4 * a.chains * kept {
            return Err(bad(format!(
                "trace {}: {} bytes, expected {} (i32 × {} × {kept})",
                path.display(),
                bytes.len(),
                4 * a.chains * kept,
                a.chains
            )));
        }
        let series: Vec<f64> =
            bytes.chunks_exact(4).map(|b| f64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))).collect();
        let s = scored(&series, a.chains, kept, seconds);
        let ess = s["ess"].as_f64().unwrap_or(f64::NAN);
        for (k, v) in s.as_object().expect("object") {
            o.insert(k.clone(), v.clone());
        }
        // DISCS's `_eval_over_num_ll_calls`: ESS / (num_ll_calls · ess_ratio).
        o.insert("ess_per_eval".into(), json!(ess / (calls * a.ess_ratio)));
        o.insert(
            "eval_convention".into(),
            json!("DISCS: ESS / (num_ll_calls × ess_ratio), one count per step for all chains"),
        );
        rows.push(rec);
    }
    Ok(rows)
}

/// Runs `dlp discs`.
pub fn run(a: Args) -> Result<(), CliError> {
    let name = a.task.strip_prefix(dlp_models::file::DISCS_PREFIX).unwrap_or(&a.task);
    let model = dlp_models::discs::task(name).map_err(|e| CliError::Input(format!("--task: {e}")))?;
    let (burn, kept) = discs_split(a.steps, a.ess_ratio);
    if a.chains == 0 || kept < 4 || !(0.0..1.0).contains(&a.ess_ratio) {
        return Err(CliError::input("need --chains ≥ 1, --ess-ratio in [0, 1) and at least 4 kept steps"));
    }
    // A name the registry does not know is bad input; a known sampler that refuses the task
    // (pas on a categorical space) becomes a record with its reason.
    if let Some(bad) = a.samplers.iter().find(|s| dlp_samplers::registry::find(s).is_none()) {
        return Err(CliError::Input(format!("--samplers: unknown sampler {bad:?} (`dlp samplers` lists them)")));
    }
    let target: &dyn Target = &model;
    let (x0, reference) = initial_and_reference(target.space(), a.chains, a.seed);
    let dest = a.export.as_ref().or(a.out.as_ref());
    if let Some(p) = dest {
        check_writable(if a.export.is_some() { "--export" } else { "--out" }, p)?;
    }
    let text = if a.export.is_some() {
        let rows: Vec<&[u32]> = x0.chunks_exact(target.space().d).collect();
        let v = json!({
            "schema": "dlp.discs-task.v1", "task": name, "seed": a.seed, "chains": a.chains,
            "d": target.space().d, "K": target.space().k(), "model": model.to_json_value(),
            "x0": rows, "reference": reference,
        });
        serde_json::to_string(&v).expect("JSON") + "\n"
    } else {
        let peer_rows = a.peer.as_ref().map(|f| peer(f, &a, kept)).transpose()?.unwrap_or_default();
        let mut lines = String::new();
        let base = json!({"task": name, "chains": a.chains, "steps": a.steps, "burn": burn, "kept": kept,
                          "seed": a.seed, "threads": a.threads});
        for sampler in &a.samplers {
            eprintln!("discs: ours {sampler} on {name} ({} chains × {} steps)", a.chains, a.steps);
            let mut rec = base.clone();
            let o = rec.as_object_mut().expect("object");
            o.insert("impl".into(), json!("rust"));
            o.insert("sampler".into(), json!(sampler));
            match ours(target, &a, sampler, &x0, &reference) {
                Ok(v) => o.extend(v.as_object().expect("object").clone()),
                // A sampler that refuses the task (pas on a categorical space) is a record.
                Err(CliError::Input(e)) => {
                    o.insert("error".into(), json!(e));
                }
                Err(e) => return Err(e),
            }
            lines += &(serde_json::to_string(&rec).expect("JSON") + "\n");
        }
        for r in peer_rows {
            lines += &(serde_json::to_string(&r).expect("JSON") + "\n");
        }
        lines
    };
    match dest {
        Some(p) => atomic_write(p, text.as_bytes())
            .map_err(|e| CliError::Input(format!("{}: cannot write: {}", p.display(), io_reason(&e)))),
        None => {
            print!("{text}");
            Ok(())
        }
    }
}
