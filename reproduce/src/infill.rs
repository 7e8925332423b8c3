//! The infilling protocol of the main paper's Table 3 (§7.5 and App. I.6; `reproduction.md`
//! §3.7): sequences with 25 % of their tokens masked at random, 25 chains of 50 steps per
//! sequence and sampler, the top 5 chains by the one-pass energy f, and the diversity and
//! quality metrics of [`dlp_text::metrics`] over those generations.
//!
//! The models are AntiBERTy (a real pretrained BERT, on antibody V segments) and a
//! 1.5 M-parameter word-level MLM trained on Moby Dick, a stand-in for BERT; `--quick` uses an
//! untrained tiny random BERT (a plumbing check, not a result). The sampling itself is
//! [`dlp_tensor::bert::infill::sample_infill`], the one `dlp infill` runs.

use crate::Run;
use anyhow::{Context, Result, bail};
use dlp_core::Sampler;
use dlp_core::rng::{derive_seed, setup_rng};
use dlp_tensor::bert::infill::sample_infill;
use dlp_tensor::bert::{BertMlm, InfillTarget, Piece, Vocab};
use dlp_text::metrics::{
    corpus_bleu_against, corpus_unique_ngrams, ngram_set, recovery, self_bleu, self_unique_ngrams,
};
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::sync::Arc;

/// Table 3 of the paper (BERT-base and BERT-large on TBC/WikiText-103 sentences), columns as
/// in [`METRICS`] but with the paper's two corpora: Self-BLEU, unique self n = 2, 3, unique
/// WT103 n = 2, 3, unique TBC n = 2, 3, corpus BLEU.
pub const TABLE3: [(&str, &str, [f64; 8]); 8] = [
    ("BERT-base", "gibbs", [86.84, 10.98, 16.08, 18.57, 32.21, 21.22, 33.05, 23.82]),
    ("BERT-base", "gwg", [81.97, 15.12, 21.79, 22.76, 37.59, 24.72, 37.98, 22.84]),
    ("BERT-base", "dula", [72.37, 23.33, 32.88, 27.74, 45.85, 30.02, 46.75, 21.82]),
    ("BERT-base", "dmala", [72.59, 23.26, 32.64, 27.99, 45.77, 30.32, 46.49, 21.85]),
    ("BERT-large", "gibbs", [88.78, 9.31, 13.74, 17.78, 30.50, 20.48, 31.23, 22.57]),
    ("BERT-large", "gwg", [86.50, 11.03, 16.13, 19.25, 33.20, 21.42, 33.54, 23.08]),
    ("BERT-large", "dula", [77.96, 17.97, 26.64, 23.69, 41.30, 26.18, 42.14, 21.28]),
    ("BERT-large", "dmala", [76.27, 19.83, 28.48, 25.38, 42.94, 27.87, 43.77, 21.73]),
];

/// Our metric columns, in output order (`corpus` = the model's reference corpus, named per
/// model in [`Model::corpus_name`]).
pub const METRICS: [&str; 8] = [
    "self_bleu",
    "unique_self_2",
    "unique_self_3",
    "unique_corpus_2",
    "unique_corpus_3",
    "corpus_bleu",
    "recovery",
    "mean_energy",
];

/// The protocol's sizes.
#[derive(Clone, Debug, Serialize)]
pub struct Protocol {
    /// Sequences per model (paper: 20).
    pub sequences: usize,
    /// Fraction of each sequence's tokens masked (paper: 0.25; at least one).
    pub mask_fraction: f64,
    /// Chains per sequence (paper: 25).
    pub chains: usize,
    /// Steps per chain (paper: 50).
    pub steps: usize,
    /// Chains kept per sequence, best first by f (paper: 5).
    pub top: usize,
}

/// A loaded model with its evaluation sequences and reference corpus.
pub struct Model {
    /// Short name (`antiberty`, `standin`, `quick`, or the directory's name).
    pub name: String,
    /// What it is, as printed on the page (stand-ins say so).
    pub description: String,
    /// What the reference corpus of the `unique_corpus_*` and corpus-BLEU columns is.
    pub corpus_name: String,
    /// The network.
    pub bert: Arc<BertMlm>,
    /// Its vocabulary.
    pub vocab: Vocab,
    /// Evaluation sequences as text lines (one per sequence).
    pub lines: Vec<String>,
    /// Reference corpus, as token-id sequences (no specials).
    pub corpus: Vec<Vec<u32>>,
}

/// One masked sequence.
pub struct Example {
    /// The input ids with `[MASK]` at the masked positions (`[CLS] … [SEP]` when the model has them).
    pub ids: Vec<u32>,
    /// The true ids.
    pub truth: Vec<u32>,
    /// Masked positions.
    pub masked: Vec<usize>,
}

/// Masks `fraction` of the non-special positions of each line (at least one), chosen by a seeded
/// shuffle per line (stream 0 of `derive_seed(seed, [i])`).
pub fn mask_lines(model: &Model, fraction: f64, seed: u64) -> Result<Vec<Example>> {
    let v = &model.vocab;
    let max = model.bert.config().max_position_embeddings;
    model
        .lines
        .iter()
        .enumerate()
        .map(|(i, line)| {
            let pieces = v.wrap(v.encode(line).with_context(|| format!("{}: sequence {}", model.name, i + 1))?);
            let truth: Vec<u32> = pieces
                .iter()
                .map(|p| match p {
                    Piece::Token(t) => Ok(*t),
                    Piece::Mask => bail!("{}: sequence {} already has a mask", model.name, i + 1),
                })
                .collect::<Result<_>>()?;
            if truth.len() > max {
                bail!("{}: sequence {} has {} tokens, more than {max}", model.name, i + 1, truth.len());
            }
            let mut open: Vec<usize> = (0..truth.len()).filter(|&p| !v.is_special(truth[p])).collect();
            let k = ((fraction * open.len() as f64).round() as usize).clamp(1, open.len().max(1));
            open.shuffle(&mut setup_rng(derive_seed(seed, &[i as u64])));
            let mut masked = open[..k.min(open.len())].to_vec();
            masked.sort_unstable();
            let mut ids = truth.clone();
            for &p in &masked {
                ids[p] = v.mask();
            }
            Ok(Example { ids, truth, masked })
        })
        .collect()
}

/// What one sampler produced on one model.
#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    /// Sampler label (`gibbs`, `dmala α=0.5`).
    pub sampler: String,
    /// Kept generations per sequence (token ids without specials), best first.
    pub generations: Vec<Vec<Vec<u32>>>,
    /// Their energies f.
    pub energies: Vec<Vec<f64>>,
    /// Mean acceptance probability.
    pub acceptance: f64,
    /// Mean masked tokens changed per chain-step.
    pub changed_per_step: f64,
    /// The same at each step, averaged over sequences.
    pub changed_curve: Vec<f64>,
    /// Fraction of kept generations' masked tokens equal to the truth.
    pub recovery: f64,
    /// Wall-clock seconds (summed over sequences, read-back ones included).
    pub seconds: f64,
}

/// What one sampler did on one sequence: the resumable unit of [`run_cell`] (a cell of
/// [`Run::cell`]).
#[derive(Serialize, Deserialize)]
struct SequenceRun {
    /// The kept fills (whole id sequences), best first by f.
    kept: Vec<Vec<u32>>,
    /// Their energies f.
    #[serde(with = "crate::results::lenient_f64::vec")]
    energies: Vec<f64>,
    /// Mean acceptance probability of the sequence's chains.
    #[serde(with = "crate::results::lenient_f64")]
    acceptance: f64,
    /// Masked tokens changed per chain at each step.
    changed_per_step: Vec<f64>,
    /// Wall-clock seconds.
    seconds: f64,
}

/// Runs `sampler` (Wang & Cho's scan when `None`) on every example: `chains` chains, the best
/// `top` final states by f kept (duplicates included: a sampler whose chains agree shows it).
/// Each (sampler, sequence) is a cell of `run` ([`Run::cell`], keyed by `label`), so that
/// `table3 --resume` continues a long run from the sequences it finished.
#[allow(clippy::too_many_arguments)] // the protocol's pieces; one call site per use
pub fn run_cell(
    run: &Run,
    model: &Model,
    examples: &[Example],
    label: &str,
    sampler: Option<&dyn Sampler>,
    proto: &Protocol,
    seed: u64,
    progress: &(dyn Fn(usize) + Sync),
) -> Result<Cell> {
    let allowed = model.vocab.allowed();
    let (mut gens, mut energies) = (Vec::new(), Vec::new());
    let (mut acc, mut changed, mut seconds) = (0.0, 0.0, 0.0);
    // Kept fills and true tokens at the masked positions, pooled for one recovery value.
    let (mut got, mut want) = (Vec::new(), Vec::new());
    let mut curve = vec![0.0; proto.steps];
    for (i, ex) in examples.iter().enumerate() {
        let chain_seed = derive_seed(seed, &[i as u64]);
        let identity = json!({"model": model.name, "description": model.description, "ids": ex.ids,
            "sampler": label, "chains": proto.chains, "steps": proto.steps, "top": proto.top, "seed": chain_seed});
        let mut ran = false;
        let seq: SequenceRun = run.cell(&format!("{}_{label}_seq{}", model.name, i + 1), &identity, || {
            ran = true;
            let start = std::time::Instant::now();
            let target = InfillTarget::new(model.bert.clone(), ex.ids.clone(), ex.masked.clone(), allowed.clone())?;
            let r = sample_infill(&target, &model.vocab, sampler, proto.chains, proto.steps, chain_seed, progress)?;
            let fills: Vec<Vec<u32>> = r.states.chunks_exact(ex.masked.len()).map(|x| target.fill_ids(x)).collect();
            let f = target.energies(&fills)?;
            let mut order: Vec<usize> = (0..fills.len()).collect();
            order.sort_by(|&a, &b| f[b].total_cmp(&f[a]).then(a.cmp(&b)));
            order.truncate(proto.top);
            Ok(SequenceRun {
                kept: order.iter().map(|&j| fills[j].clone()).collect(),
                energies: order.iter().map(|&j| f[j]).collect(),
                acceptance: r.acceptance,
                changed_per_step: r.changed_per_step,
                seconds: start.elapsed().as_secs_f64(),
            })
        })?;
        if !ran {
            progress(proto.chains * proto.steps);
        }
        for fill in &seq.kept {
            got.extend(ex.masked.iter().map(|&p| fill[p]));
            want.extend(ex.masked.iter().map(|&p| ex.truth[p]));
        }
        gens.push(seq.kept.iter().map(|fill| strip(&model.vocab, fill)).collect());
        energies.push(seq.energies);
        acc += seq.acceptance;
        seconds += seq.seconds;
        changed += seq.changed_per_step.iter().sum::<f64>() / seq.changed_per_step.len().max(1) as f64;
        for (c, x) in curve.iter_mut().zip(&seq.changed_per_step) {
            *c += x / examples.len() as f64;
        }
    }
    let n = examples.len().max(1) as f64;
    Ok(Cell {
        sampler: label.to_string(),
        generations: gens,
        energies,
        acceptance: acc / n,
        changed_per_step: changed / n,
        changed_curve: curve,
        recovery: recovery(&got, &want).unwrap_or(f64::NAN),
        seconds,
    })
}

/// The ids of `ids` that are not special tokens.
pub fn strip(vocab: &Vocab, ids: &[u32]) -> Vec<u32> {
    ids.iter().copied().filter(|&t| !vocab.is_special(t)).collect()
}

/// The metric values of a cell, in [`METRICS`] order, over all its kept generations pooled
/// (Self-BLEU and unique-self are Wang & Cho's set-level definitions).
pub fn metrics(cell: &Cell, corpus: &[Vec<u32>]) -> [f64; 8] {
    let gens: Vec<&[u32]> = cell.generations.iter().flatten().map(Vec::as_slice).collect();
    let refs: Vec<&[u32]> = corpus.iter().map(Vec::as_slice).collect();
    let (c2, c3) = (ngram_set(&refs, 2), ngram_set(&refs, 3));
    let all_f: Vec<f64> = cell.energies.iter().flatten().copied().collect();
    [
        self_bleu(&gens),
        self_unique_ngrams(&gens, 2),
        self_unique_ngrams(&gens, 3),
        corpus_unique_ngrams(&gens, 2, &c2),
        corpus_unique_ngrams(&gens, 3, &c3),
        corpus_bleu_against(&gens, &refs),
        cell.recovery,
        all_f.iter().sum::<f64>() / all_f.len().max(1) as f64,
    ]
}

/// The step size for DMALA/DULA: on the first `pilot` examples, the α of `grid` whose DMALA
/// chains change the most tokens per chain-step after acceptance (`bert.md` §4: the raw
/// acceptance rate rewards proposals that stay put). Returns (α, accepted changes per step)
/// for every α tried; `progress` is told of finished chain-steps as in [`run_cell`].
pub fn tune_step_size(
    run: &Run,
    model: &Model,
    examples: &[Example],
    grid: &[f64],
    proto: &Protocol,
    seed: u64,
    progress: &(dyn Fn(usize) + Sync),
) -> Result<(f64, Vec<(f64, f64)>)> {
    let mut tried = Vec::new();
    for &a in grid {
        let s = crate::SamplerSpec::new("dmala", Some(a)).build()?;
        let cell =
            run_cell(run, model, examples, &format!("pilot dmala α={a}"), Some(s.as_ref()), proto, seed, progress)?;
        tried.push((a, cell.changed_per_step));
    }
    let best = tried.iter().copied().max_by(|x, y| x.1.total_cmp(&y.1)).map(|t| t.0).context("empty α grid")?;
    Ok((best, tried))
}

/// Where `just data antiberty` puts AntiBERTy.
pub fn antiberty_dir() -> std::path::PathBuf {
    dlp_text::cache_dir().join("antiberty")
}

/// Where `just train-mlm` puts the English stand-in.
pub fn standin_dir() -> std::path::PathBuf {
    dlp_text::cache_dir().join("mlm-moby")
}

fn load_bert(dir: &std::path::Path, what: &str, fetch: &str) -> Result<(Arc<BertMlm>, Vocab)> {
    if !dir.join("config.json").is_file() {
        bail!("{what}: no checkpoint in {} (run `{fetch}`)", dir.display());
    }
    let (bert, vocab) =
        BertMlm::load(dir, &dlp_tensor::Device::Cpu).with_context(|| format!("{what}: {}", dir.display()))?;
    Ok((Arc::new(bert), vocab))
}

/// AntiBERTy on `n` antibody V segments drawn by a seeded shuffle of `data/cache/antibodies.tsv`;
/// reference corpus: all of that file's sequences (AntiBERTy's training set, OAS, is not
/// available here).
pub fn antiberty(n: usize, seed: u64) -> Result<Model> {
    let (bert, vocab) = load_bert(&antiberty_dir(), "antiberty", "just data antiberty")?;
    let mut seqs = dlp_text::antibody::load_antibodies(&dlp_text::antibody::default_antibody_path())?;
    let corpus = seqs.iter().map(|s| encode_plain(&vocab, &s.sequence)).collect::<Result<Vec<_>>>()?;
    seqs.shuffle(&mut setup_rng(derive_seed(seed, &[0x616e7469])));
    Ok(Model {
        name: "antiberty".into(),
        description: "AntiBERTy (pretrained BERT MLM on 558 M antibody sequences; 8 layers, hidden 512)".into(),
        corpus_name: "the 111 IMGT V segments of `just data antibodies`".into(),
        bert,
        vocab,
        lines: seqs.into_iter().take(n).map(|s| s.sequence).collect(),
        corpus,
    })
}

/// A word-level BERT (`dir`: the stand-in of `just train-mlm`, or a user's checkpoint) on `n`
/// held-out Moby Dick sentences (chapters 126–135) of 10–30 tokens; reference corpus: the
/// sentences of the training chapters 1–125 (those the vocabulary can encode).
pub fn moby(dir: &std::path::Path, name: &str, n: usize, seed: u64) -> Result<Model> {
    let stand_in = name == "standin";
    let (bert, vocab) = load_bert(dir, name, if stand_in { "just train-mlm" } else { "--model DIR" })?;
    let book = dlp_text::corpus::MobyDick::load(&dlp_text::corpus::default_moby_dir())?;
    let words = book.vocab();
    let held: Vec<&str> = book.heldout_tokens().collect();
    let lines: Vec<String> =
        dlp_text::corpus::pick_sentences(&held, &words, n, (10, 30), seed).into_iter().map(|s| s.join(" ")).collect();
    let train: Vec<&str> = book.train_tokens().collect();
    // Every training sentence; a word the vocabulary lacks becomes [UNK] (word-level
    // vocabularies) so that the sentence's other n-grams still count. WordPiece checkpoints
    // tokenise the sentence (one that does not tokenise is skipped).
    let unk = vocab.unk();
    let corpus = dlp_text::corpus::sentences(&train)
        .iter()
        .filter_map(|s| match (vocab.kind(), unk) {
            (dlp_tensor::bert::VocabKind::Word, Some(u)) => Some(s.iter().map(|w| vocab.id(w).unwrap_or(u)).collect()),
            _ => encode_plain(&vocab, &s.join(" ")).ok(),
        })
        .collect();
    Ok(Model {
        name: name.into(),
        description: if stand_in {
            "a 1.5 M-parameter word-level MLM trained on Moby Dick, a stand-in for BERT".into()
        } else {
            format!("the checkpoint in {}", dir.display())
        },
        corpus_name: "the sentences of Moby Dick chapters 1–125 (the stand-in's training text)".into(),
        bert,
        vocab,
        lines,
        corpus,
    })
}

/// `--quick`: an untrained tiny random BERT over AntiBERTy's vocabulary (5 specials + 20 amino
/// acids) on `n` seeded random 16-residue sequences: checks the plumbing, measures nothing.
pub fn quick(n: usize, seed: u64) -> Result<Model> {
    use dlp_tensor::bert::{BertConfig, WeightLayout, random_weights};
    use rand::RngExt;
    let aa = dlp_text::antibody::AMINO_ACIDS;
    let tokens: Vec<String> = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        .iter()
        .map(|s| s.to_string())
        .chain(aa.chars().map(String::from))
        .collect();
    let vocab = Vocab::from_tokens(tokens)?;
    let cfg = BertConfig::from_json(
        r#"{"vocab_size":25,"hidden_size":16,"num_hidden_layers":1,"num_attention_heads":2,
            "intermediate_size":32,"hidden_act":"gelu","max_position_embeddings":32,"type_vocab_size":2,
            "layer_norm_eps":1e-12}"#,
    )?;
    let weights = random_weights(&cfg, 0.3, seed, WeightLayout { gamma_beta: false, tied: false });
    let vb =
        candle_nn::VarBuilder::from_tensors(weights, dlp_tensor::candle_core::DType::F32, &dlp_tensor::Device::Cpu);
    let bert = Arc::new(BertMlm::new(&cfg, vb)?);
    let mut rng = setup_rng(derive_seed(seed, &[0x717569636b]));
    let aa: Vec<char> = aa.chars().collect();
    let lines: Vec<String> = (0..n).map(|_| (0..16).map(|_| aa[rng.random_range(0..aa.len())]).collect()).collect();
    let corpus = lines.iter().map(|l| encode_plain(&vocab, l)).collect::<Result<Vec<_>>>()?;
    Ok(Model {
        name: "quick".into(),
        description: "an untrained tiny random BERT (plumbing check, not a result)".into(),
        corpus_name: "the random sequences themselves".into(),
        bert,
        vocab,
        lines,
        corpus,
    })
}

/// The token ids of a line without specials and masks (an error for an unknown token).
fn encode_plain(vocab: &Vocab, line: &str) -> Result<Vec<u32>> {
    vocab
        .encode(line)?
        .into_iter()
        .map(|p| match p {
            Piece::Token(t) => Ok(t),
            Piece::Mask => bail!("unexpected mask in a reference sequence"),
        })
        .collect()
}
