//! `dlp infill`: fill the masked positions of sequences with a BERT masked language model
//! (a checkpoint directory: config.json, vocab.txt, model.safetensors or pytorch_model.bin),
//! by Wang & Cho's site updates (`gibbs`: one masked slot per step, in turn) or a registry
//! sampler (`gwg`, `dula`, `dmala`) on the one-pass energy
//! f(θ) = Σ_{i∈M} log softmax(logits_i)[θ_i] (main paper App. I.6); or, with `--score`, print
//! f of given fills.
//!
//! Input lines: English text with `[MASK]` tokens (WordPiece or word-level vocabularies), or a
//! protein sequence with `_` (or `[MASK]`) for masked residues; `[CLS]`/`[SEP]` are added.
//! Blank lines and lines starting with `#` are skipped. Every line is checked before any
//! sampling, so bad input leaves no output. Chains start from BERT's argmax prediction with
//! every masked slot `[MASK]` (all chains the same start; the paper does not say how its
//! chains start).

use dlp_candle::bert::infill::{Fill, sample_infill, top_fills};
use dlp_candle::bert::{BertMlm, InfillTarget, Vocab};
use dlp_cli::{CliError, atomic_write, check_writable, io_reason, progress_bar};
use dlp_core::rng::derive_seed;
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;

/// The samplers `dlp infill` runs.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum InfillSampler {
    /// Wang & Cho: redraw each masked slot from BERT's conditional with that slot masked.
    Gibbs,
    /// Gibbs-with-gradients (one token per step).
    Gwg,
    /// Discrete Langevin, unadjusted (needs --step-size).
    Dula,
    /// Discrete Langevin, Metropolis-adjusted (needs --step-size).
    Dmala,
}

/// Arguments of `dlp infill`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Checkpoint directory: config.json, vocab.txt, model.safetensors or pytorch_model.bin.
    #[arg(long, value_name = "DIR")]
    pub model: PathBuf,
    /// Input lines: sequences with [MASK] tokens (or `_` residues); with --score,
    /// `masked<TAB>filled`.
    #[arg(long, value_name = "FILE")]
    pub input: PathBuf,
    /// Score fills instead of sampling: one JSON object per line with its `energy`.
    #[arg(long)]
    pub score: bool,
    /// Sampler.
    #[arg(long, value_enum, default_value_t = InfillSampler::Dmala)]
    pub sampler: InfillSampler,
    /// Step size α of dula/dmala (tune it by the tokens changed per step, not the acceptance).
    #[arg(long)]
    pub step_size: Option<f64>,
    /// Chains per input line.
    #[arg(long, default_value_t = 25)]
    pub chains: usize,
    /// Steps per chain (a Wang & Cho step redraws one masked slot, in turn).
    #[arg(long, default_value_t = 50)]
    pub steps: usize,
    /// Keep the K distinct final fills with the highest f.
    #[arg(long, default_value_t = 5)]
    pub top: usize,
    /// Master seed; line n (1-based) uses derive_seed(seed, [n]).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Device: cpu, or cuda / cuda:N (builds with the `cuda` feature only).
    #[arg(long, default_value = "cpu")]
    pub device: String,
    /// Output file (JSON lines); standard output when absent.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

/// One input line, checked.
struct Line {
    number: usize,
    text: String,
    target: InfillTarget,
    /// --score: the fill's ids.
    filled: Option<Vec<u32>>,
}

fn check_args(args: &Args) -> Result<(), CliError> {
    if args.score {
        return Ok(());
    }
    let needs_alpha = matches!(args.sampler, InfillSampler::Dula | InfillSampler::Dmala);
    match args.step_size {
        Some(a) if !(a.is_finite() && a > 0.0) => Err(CliError::input(format!("--step-size must be > 0, got {a}"))),
        Some(_) if !needs_alpha => {
            Err(CliError::input(format!("--step-size does not apply to --sampler {:?}", args.sampler).to_lowercase()))
        }
        None if needs_alpha => Err(CliError::input("--sampler dula and dmala need --step-size α")),
        _ if args.chains == 0 => Err(CliError::input("--chains must be at least 1")),
        _ if args.top == 0 => Err(CliError::input("--top must be at least 1")),
        _ => Ok(()),
    }
}

/// Reads and checks every line (tokens known, a masked position, length within the model's).
fn read_lines(args: &Args, model: &Arc<BertMlm>, vocab: &Vocab) -> Result<Vec<Line>, CliError> {
    let text = std::fs::read_to_string(&args.input)
        .map_err(|e| CliError::input(format!("--input {}: {}", args.input.display(), io_reason(&e))))?;
    let mut lines = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let number = i + 1;
        let raw = raw.trim_end_matches('\r');
        if raw.trim().is_empty() || raw.trim_start().starts_with('#') {
            continue;
        }
        let at = |e: dlp_candle::Error| {
            let why = match e {
                dlp_candle::Error::Param(m) => m,
                other => other.to_string(),
            };
            CliError::input(format!("--input {} line {number}: {why}", args.input.display()))
        };
        let (masked_text, filled) = if args.score {
            let Some((m, f)) = raw.split_once('\t') else {
                return Err(at(dlp_candle::Error::Param("expected `masked<TAB>filled`".into())));
            };
            (m, Some(f))
        } else {
            (raw, None)
        };
        let target = InfillTarget::for_line(model.clone(), vocab, masked_text).map_err(at)?;
        let filled = match filled {
            None => None,
            Some(f) => {
                let ids = fill_ids(vocab, &target, f).map_err(at)?;
                Some(ids)
            }
        };
        lines.push(Line { number, text: raw.to_string(), target, filled });
    }
    if lines.is_empty() {
        return Err(CliError::input(format!("--input {}: no sequence in the file", args.input.display())));
    }
    Ok(lines)
}

/// The ids of a filled line: same length as the masked one, equal outside the masked slots.
fn fill_ids(vocab: &Vocab, target: &InfillTarget, filled: &str) -> Result<Vec<u32>, dlp_candle::Error> {
    let bad = |m: String| dlp_candle::Error::Param(format!("the filled sequence {m}"));
    let pieces = vocab.wrap(vocab.encode(filled)?);
    let mut ids = Vec::with_capacity(pieces.len());
    for p in pieces {
        match p {
            dlp_candle::bert::Piece::Token(t) => ids.push(t),
            dlp_candle::bert::Piece::Mask => return Err(bad("has a masked position".into())),
        }
    }
    if ids.len() != target.base().len() {
        return Err(bad(format!("has {} tokens where the masked one has {}", ids.len(), target.base().len())));
    }
    for (i, (&a, &b)) in ids.iter().zip(target.base()).enumerate() {
        if !target.masked().contains(&i) && a != b {
            return Err(bad(format!("differs from the masked one at unmasked token {i}")));
        }
    }
    Ok(ids)
}

/// The tokens of a sequence without `[CLS]`/`[SEP]`, as text.
fn show(vocab: &Vocab, ids: &[u32]) -> String {
    let inner: Vec<u32> = ids.iter().copied().filter(|&t| Some(t) != vocab.cls() && Some(t) != vocab.sep()).collect();
    vocab.decode(&inner)
}

/// Runs `dlp infill`.
pub fn run(args: Args) -> Result<(), CliError> {
    check_args(&args)?;
    let device = dlp_candle::device(&args.device).map_err(CliError::input)?;
    if let Some(out) = &args.out {
        check_writable("--out", out)?;
    }
    let (model, vocab) = BertMlm::load(&args.model, &device)
        .map_err(|e| CliError::input(format!("--model {}: {e}", args.model.display())))?;
    let model = Arc::new(model);
    let lines = read_lines(&args, &model, &vocab)?;
    let mut out = String::new();
    if args.score {
        for l in &lines {
            let ids = l.filled.clone().expect("score lines carry a fill");
            let f = l.target.energies(std::slice::from_ref(&ids)).map_err(device_error)?[0];
            let rec = json!({"line": l.number, "filled": show(&vocab, &ids), "energy": f});
            out.push_str(&format!("{rec}\n"));
        }
    } else {
        let sampler = match args.sampler {
            InfillSampler::Gibbs => None,
            other => {
                let name = format!("{other:?}").to_lowercase();
                let params = dlp_samplers::SamplerParams { step_size: args.step_size, ..Default::default() };
                Some(dlp_samplers::build_sampler(&name, &params).map_err(CliError::input)?)
            }
        };
        let total = (lines.len() * args.chains * args.steps) as u64;
        let bar = progress_bar(total, &format!("infill {:?}", args.sampler).to_lowercase(), args.quiet);
        let tick = |n: usize| bar.inc(n as u64);
        for l in &lines {
            let seed = derive_seed(args.seed, &[l.number as u64]);
            let t0 = std::time::Instant::now();
            let run = sample_infill(&l.target, &vocab, sampler.as_deref(), args.chains, args.steps, seed, &tick)
                .map_err(device_error)?;
            let fills = top_fills(&l.target, &run.states, args.top).map_err(device_error)?;
            out.push_str(&format!("{}\n", record(&args, &vocab, l, &fills, &run, t0.elapsed().as_secs_f64())));
        }
        bar.finish_and_clear();
    }
    match &args.out {
        Some(path) => atomic_write(path, out.as_bytes())
            .map_err(|e| CliError::input(format!("--out {}: cannot write: {}", path.display(), io_reason(&e)))),
        None => {
            print!("{out}");
            Ok(())
        }
    }
}

/// A failure while running the model (the input was checked before): exit 1.
fn device_error(e: dlp_candle::Error) -> CliError {
    match e {
        dlp_candle::Error::Device { .. } => CliError::internal(e),
        other => CliError::input(other),
    }
}

fn record(
    args: &Args,
    vocab: &Vocab,
    l: &Line,
    fills: &[Fill],
    run: &dlp_candle::bert::infill::InfillRun,
    seconds: f64,
) -> serde_json::Value {
    let tokens = |f: &Fill| f.tokens.iter().map(|&t| vocab.token(t).unwrap_or("?").to_string()).collect::<Vec<_>>();
    json!({
        "line": l.number,
        "input": l.text,
        "sampler": format!("{:?}", args.sampler).to_lowercase(),
        "step_size": args.step_size,
        "chains": args.chains,
        "steps": args.steps,
        "seed": args.seed,
        "masked_positions": l.target.masked().len(),
        "fills": fills.iter().map(|f| show(vocab, &f.ids)).collect::<Vec<_>>(),
        "fill_tokens": fills.iter().map(tokens).collect::<Vec<_>>(),
        "energies": fills.iter().map(|f| f.energy).collect::<Vec<_>>(),
        "acceptance": run.acceptance,
        "changed_per_step": run.changed_per_step,
        "mean_changed_per_step": run.changed_per_step.iter().sum::<f64>() / run.changed_per_step.len().max(1) as f64,
        "seconds": seconds,
    })
}
