//! Benchmark (not a test): the one-pass infilling energy f and f + ∇f of a BERT checkpoint on
//! the CPU for a batch of chains of one sequence, against a plain forward (all logits), one JSON
//! line (medians of the timed calls after one warm-up).
//!
//! `cargo run --release -p dlp-tensor --example bert_bench -- [DIR] [chains] [residues] [reps]`
//! Defaults: data/cache/antiberty (`just data antiberty`), 25 chains, 120 residues (+ [CLS],
//! [SEP]), 25 % of them masked, 5 reps. The residues are seeded random amino acids: the cost
//! does not depend on them. `RAYON_NUM_THREADS` sets candle's CPU threads.

use dlp_core::Target;
use dlp_core::TargetExt;
use dlp_core::rng::setup_rng;
use dlp_tensor::Device;
use dlp_tensor::bert::{BertMlm, InfillTarget};
use dlp_tensor::candle_core::{Tensor, utils::get_num_threads};
use rand::RngExt;
use rand::seq::SliceRandom;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dir = PathBuf::from(args.first().cloned().unwrap_or_else(|| "data/cache/antiberty".into()));
    let num = |i: usize, d: usize| args.get(i).map(|a| a.parse().expect("integer argument")).unwrap_or(d);
    let (chains, residues, reps) = (num(1, 25), num(2, 120), num(3, 5).max(1));
    dlp_tensor::keep_freed_buffers(); // as `table3` and `dlp infill` do
    let t = Instant::now();
    let (model, vocab) = BertMlm::load(&dir, &Device::Cpu).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let load_s = t.elapsed().as_secs_f64();
    let model = Arc::new(model);
    let allowed = vocab.allowed();
    let mut rng = setup_rng(1);
    let mut ids: Vec<u32> = vec![vocab.cls().expect("[CLS]")];
    ids.extend((0..residues).map(|_| allowed[rng.random_range(0..allowed.len())]));
    ids.push(vocab.sep().expect("[SEP]"));
    let mut positions: Vec<usize> = (1..=residues).collect();
    positions.shuffle(&mut rng);
    let mut masked: Vec<usize> = positions[..residues / 4].to_vec();
    masked.sort_unstable();
    let target = InfillTarget::new(model.clone(), ids.clone(), masked.clone(), allowed.clone()).expect("target");
    let d = masked.len();
    let xs: Vec<u32> = (0..chains * d).map(|_| rng.random_range(0..allowed.len() as u32)).collect();
    let (mut f, mut g) = (vec![0.0; chains], vec![0.0; chains * target.space().grad_len()]);
    let all: Vec<u32> = (0..chains).flat_map(|r| target.fill_ids(&xs[r * d..(r + 1) * d])).collect();
    let batch = Tensor::from_vec(all, (chains, ids.len()), &Device::Cpu).unwrap();
    // Interleaved (forward, energy, energy + gradient) rounds, so that a busy machine loads
    // the three alike; wall-clock and process CPU seconds (/proc/self/stat), medians.
    let mut run = |what: usize| match what {
        0 => drop(model.logits_from_ids(&batch).expect("forward")),
        1 => target.log_density_batch(&xs, &mut f).unwrap(),
        _ => target.log_density_grad_batch(&xs, &mut f, &mut g).unwrap(),
    };
    let (mut wall, mut cpu) = (vec![Vec::new(); 3], vec![Vec::new(); 3]);
    for r in 0..=reps {
        for what in 0..3 {
            let (t, c) = (Instant::now(), cpu_seconds());
            run(what);
            if r > 0 {
                wall[what].push(t.elapsed().as_secs_f64() * 1e3);
                cpu[what].push((cpu_seconds() - c) * 1e3);
            }
        }
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let [fwd, energy, both] = [0, 1, 2].map(|i| median(wall[i].clone()));
    let [fwd_cpu, energy_cpu, both_cpu] = [0, 1, 2].map(|i| median(cpu[i].clone()));
    println!(
        "{{\"bench\":\"bert_energy\",\"model\":\"{}\",\"device\":\"cpu\",\"threads\":{},\"chains\":{chains},\"tokens\":{},\"masked\":{d},\"reps\":{reps},\"load_s\":{load_s:.2},\"forward_ms\":{fwd:.1},\"energy_ms\":{energy:.1},\"energy_grad_ms\":{both:.1},\"grad_over_forward\":{:.2},\"grad_over_energy\":{:.2},\"forward_cpu_ms\":{fwd_cpu:.1},\"energy_cpu_ms\":{energy_cpu:.1},\"energy_grad_cpu_ms\":{both_cpu:.1},\"grad_over_forward_cpu\":{:.2}}}",
        dir.display(),
        get_num_threads(),
        ids.len(),
        both / fwd,
        both / energy,
        both_cpu / fwd_cpu
    );
}

/// User + system CPU seconds of this process so far (Linux /proc; 0 elsewhere).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the parenthesised command name: utime and stime are the 12th and 13th.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}
