//! `dlp infill`: fill the masked positions of sequences with a BERT masked language model
//! (a checkpoint directory: config.json, vocab.txt, model.safetensors or pytorch_model.bin),
//! by Wang & Cho's site updates (`gibbs`: one masked slot per step, in turn) or a registry
//! sampler (`gwg`, `dula`, `dmala`) on the one-pass energy
//! f(θ) = Σ_{i∈M} log softmax(logits_i)\[θ_i\] (main paper App. I.6); or, with `--score`, print
//! f of given fills.
//!
//! Input lines: English text with `[MASK]` tokens (WordPiece or word-level vocabularies), or a
//! protein sequence with `_` (or `[MASK]`) for masked residues; `[CLS]`/`[SEP]` are added.
//! Blank lines and lines starting with `#` are skipped. Every line is checked before any
//! sampling, so bad input leaves no output. Chains start from BERT's argmax prediction with
//! every masked slot `[MASK]` (all chains the same start; the paper does not say how its
//! chains start).

use dlp_cli::{CliError, atomic_write, check_writable, io_reason, progress_bar};
use dlp_core::RunOptions;
use dlp_core::rng::derive_seed;
use dlp_session::{Request, Session, Spelling, StepSize};
use dlp_tensor::bert::infill::{Fill, sample_infill, sample_infill_from, start_states, top_fills};
use dlp_tensor::bert::{BertMlm, InfillTarget, Vocab};
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
    /// Discrete Langevin, Metropolis-adjusted (without --step-size, α adapts over the first half
    /// of the steps of each line, as in `dlp sample`).
    Dmala,
}

/// Arguments of `dlp infill`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Checkpoint directory: config.json, vocab.txt, model.safetensors or pytorch_model.bin.
    #[arg(long, value_name = "DIR")]
    pub model: PathBuf,
    /// Input lines: sequences with `[MASK]` tokens (or `_` residues); with --score,
    /// `masked<TAB>filled`.
    #[arg(long, value_name = "FILE")]
    pub input: PathBuf,
    /// Score fills instead of sampling: one JSON object per line with its `energy`.
    #[arg(long)]
    pub score: bool,
    /// Sampler.
    #[arg(long, value_enum, default_value_t = InfillSampler::Dmala)]
    pub sampler: InfillSampler,
    /// Step size α of dula/dmala (tune it by the tokens changed per step, not the acceptance);
    /// without it dmala adapts α toward acceptance 0.574 over the first half of the steps.
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
    /// Master seed; line n (1-based) uses `derive_seed(seed, [n])`.
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
        None if args.sampler == InfillSampler::Dula => Err(CliError::input(
            "--sampler dula needs --step-size α (it has no acceptance to adapt α toward; dmala adapts it when none is given)",
        )),
        None if args.sampler == InfillSampler::Dmala && args.steps < 2 => Err(CliError::input(format!(
            "--sampler dmala without --step-size adapts α over half of --steps: needs --steps ≥ 2, got {}",
            args.steps
        ))),
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
        let at = |e: dlp_tensor::Error| {
            let why = match e {
                dlp_tensor::Error::Param(m) => m,
                other => other.to_string(),
            };
            CliError::input(format!("--input {} line {number}: {why}", args.input.display()))
        };
        let (masked_text, filled) = if args.score {
            let Some((m, f)) = raw.split_once('\t') else {
                return Err(at(dlp_tensor::Error::Param("expected `masked<TAB>filled`".into())));
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
fn fill_ids(vocab: &Vocab, target: &InfillTarget, filled: &str) -> Result<Vec<u32>, dlp_tensor::Error> {
    let bad = |m: String| dlp_tensor::Error::Param(format!("the filled sequence {m}"));
    let pieces = vocab.wrap(vocab.encode(filled)?);
    let mut ids = Vec::with_capacity(pieces.len());
    for p in pieces {
        match p {
            dlp_tensor::bert::Piece::Token(t) => ids.push(t),
            dlp_tensor::bert::Piece::Mask => return Err(bad("has a masked position".into())),
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
    let device = dlp_tensor::device(&args.device).map_err(CliError::input)?;
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
        // The registry samplers go through the session every front end uses: the same
        // resolution, so dmala without --step-size adapts α as `dlp sample` does.
        let session = match args.sampler {
            InfillSampler::Gibbs => None,
            other => {
                let request = Request {
                    sampler: format!("{other:?}").to_lowercase(),
                    step_size: args.step_size.map_or(StepSize::Default, StepSize::Fixed),
                    step_size_min: None,
                    preconditioner: None,
                    batch_size: None,
                    ladder: None,
                    chains: args.chains,
                    steps: args.steps,
                    burn_in: None,
                    thin: 1,
                    target_accept: None,
                    progress: false,
                };
                request.check(Spelling::Flags)?;
                Some(Session::resolve(request, Spelling::Flags, &lines[0].target)?)
            }
        };
        let total = (lines.len() * args.chains * args.steps) as u64;
        let bar = progress_bar(total, &format!("infill {:?}", args.sampler).to_lowercase(), args.quiet);
        let tick = |n: usize| bar.inc(n as u64);
        for l in &lines {
            let seed = derive_seed(args.seed, &[l.number as u64]);
            let t0 = std::time::Instant::now();
            let (run, used) = match &session {
                None => {
                    let run = sample_infill(&l.target, &vocab, None, args.chains, args.steps, seed, &tick)
                        .map_err(device_error)?;
                    (run, Used { step_size: None, warmup_steps: None })
                }
                Some(session) => {
                    // One task: the whole batch of chains goes through BERT together.
                    let options = RunOptions { seed, threads: 1, chains_per_task: args.chains };
                    let x0 = start_states(&l.target, &vocab, args.chains).map_err(device_error)?;
                    let warmed = session.warm_up(&l.target, x0, &options).map_err(CliError::from_run)?;
                    let kernel = session.build(&warmed).map_err(CliError::from_run)?;
                    tick(args.chains * warmed.warmup_steps);
                    let steps = args.steps - warmed.warmup_steps;
                    let run = sample_infill_from(
                        &l.target,
                        &vocab,
                        Some(kernel.as_ref()),
                        warmed.positions,
                        args.chains,
                        steps,
                        seed,
                        &tick,
                    )
                    .map_err(device_error)?;
                    let warmup_steps = warmed.adaptation.map(|a| a.steps);
                    (run, Used { step_size: warmed.step_size, warmup_steps })
                }
            };
            let fills = top_fills(&l.target, &run.states, args.top).map_err(device_error)?;
            out.push_str(&format!("{}\n", record(&args, &vocab, l, &fills, &run, &used, t0.elapsed().as_secs_f64())));
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
fn device_error(e: dlp_tensor::Error) -> CliError {
    match e {
        dlp_tensor::Error::Device { .. } => CliError::internal(e),
        other => CliError::input(other),
    }
}

/// The step size a line's run used: given, or adapted over `warmup_steps` first.
struct Used {
    step_size: Option<f64>,
    warmup_steps: Option<usize>,
}

fn record(
    args: &Args,
    vocab: &Vocab,
    l: &Line,
    fills: &[Fill],
    run: &dlp_tensor::bert::infill::InfillRun,
    used: &Used,
    seconds: f64,
) -> serde_json::Value {
    let tokens = |f: &Fill| f.tokens.iter().map(|&t| vocab.token(t).unwrap_or("?").to_string()).collect::<Vec<_>>();
    let mut rec = json!({
        "line": l.number,
        "input": l.text,
        "sampler": format!("{:?}", args.sampler).to_lowercase(),
        "step_size": used.step_size,
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
    });
    // Only adapted runs carry their warm-up, so records of a given α stay as they were.
    if let Some(w) = used.warmup_steps {
        rec["warmup_steps"] = json!(w);
    }
    rec
}
