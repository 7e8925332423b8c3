//! Device samplers through the sampling session (`dlp_session`, what `dlp sample --device`
//! runs) on candle's CPU backend: their `StepInfo` tallies checked against the same device
//! chains stepped directly (`dlp_device::device_samplers::open`, outside the runner), and
//! `dlp sample --device cpu` end to end.

use dlp_core::{Observer, RunOptions, States, StepContext, StepInfo, Target};
use dlp_device::device_lattice::{DeviceLattice, LatticeSampler};
use dlp_device::device_samplers::{self, DeviceSampler};
use dlp_models::{IsingModel, Rbm};
use dlp_samplers::SamplerParams;
use dlp_session::{Request, Session, Spelling, StepSize, Tallies};
use dlp_tensor::Device;
use std::process::Command;
use std::sync::Arc;

const SEED: u64 = 11;
const CHAINS: usize = 6;
const STEPS: usize = 60;

/// Every step's records and positions, for checks the tallies cannot make.
#[derive(Default)]
struct Steps {
    infos: Vec<Vec<StepInfo>>,
    positions: Vec<Vec<u32>>,
}

impl Observer for Steps {
    fn observe(&mut self, _: &StepContext, states: States<'_>, info: &[StepInfo]) {
        self.infos.push(info.to_vec());
        self.positions.push(states.positions().to_vec());
    }
}

/// The session of `sampler` (step size α, if any) run on the CPU device from `x0`.
fn session_run(sampler: &str, alpha: Option<f64>, target: &dyn Target, x0: &[u32]) -> (Tallies, Steps, Vec<u32>) {
    let request = Request {
        sampler: sampler.into(),
        step_size: alpha.map_or(StepSize::Without, StepSize::Fixed),
        step_size_min: None,
        preconditioner: None,
        batch_size: None,
        ladder: None,
        chains: CHAINS,
        steps: STEPS,
        burn_in: None,
        thin: 1,
        target_accept: None,
        progress: false,
    };
    let session = Session::resolve(request, Spelling::Flags, target).unwrap();
    let session = session
        .with_builder(Arc::new(|name, params| {
            DeviceSampler::new(name, params, SEED, &Device::Cpu).map(|s| Box::new(s) as Box<dyn dlp_core::Sampler>)
        }))
        .unwrap();
    let options = RunOptions { seed: SEED, threads: 2, chains_per_task: 0 };
    let ran =
        session.run(target, x0.to_vec(), &options, |_| {}, |_, _, n| (Tallies::new(n), Steps::default())).unwrap();
    assert_eq!(ran.output.observers.len(), 1, "device chains run as one task");
    let (tallies, steps) = ran.output.observers.into_iter().next().unwrap();
    (tallies, steps, ran.output.final_states)
}

/// The same chains stepped directly: positions after every step and acceptance counts.
fn direct_run(sampler: &str, alpha: Option<f64>, target: &dyn Target, x0: &[u32]) -> (Vec<Vec<u32>>, Vec<u64>) {
    let params = SamplerParams { step_size: alpha, ..Default::default() };
    let mut chains = device_samplers::open(sampler, &params, target, x0, SEED, &Device::Cpu).unwrap().unwrap();
    let mut positions = Vec::new();
    for _ in 0..STEPS {
        chains.step().unwrap();
        positions.push(chains.positions().unwrap());
    }
    (positions, chains.accepted().unwrap())
}

fn hamming(a: &[u32], b: &[u32]) -> u64 {
    a.iter().zip(b).filter(|(x, y)| x != y).count() as u64
}

/// Checks the session's records of `sampler` against the direct run: one record per chain and
/// step, positions equal step by step, per-chain accepted counts equal the chains' own counts,
/// `n_changed` equal to the coordinates that changed, acceptance probabilities in [0, 1].
fn check(sampler: &str, alpha: Option<f64>, target: &dyn Target, x0: &[u32], mh: bool) -> Tallies {
    let d = target.space().d;
    let (tallies, steps, finals) = session_run(sampler, alpha, target, x0);
    let (direct, accepted) = direct_run(sampler, alpha, target, x0);
    assert_eq!(steps.infos.len(), STEPS, "{sampler}: one record set per step");
    assert_eq!(steps.positions, direct, "{sampler}: the session's chains are the device chains");
    assert_eq!(finals, direct[STEPS - 1]);
    assert_eq!(tallies.accepted, accepted, "{sampler}: accepted tallies vs the chains' counts");
    let mut changed = vec![0u64; CHAINS];
    for t in 0..STEPS {
        let before = if t == 0 { x0 } else { &direct[t - 1][..] };
        assert_eq!(steps.infos[t].len(), CHAINS);
        for (j, info) in steps.infos[t].iter().enumerate() {
            let row = j * d..(j + 1) * d;
            let h = hamming(&before[row.clone()], &direct[t][row]);
            changed[j] += h;
            assert_eq!(u64::from(info.n_changed), h, "{sampler} step {t} chain {j}");
            assert!((0.0..=1.0).contains(&info.accept_prob), "{sampler}: accept_prob {}", info.accept_prob);
            assert!(info.n_changed <= info.n_proposed || !info.accepted, "{sampler}: changed more than proposed");
            if !info.accepted {
                assert_eq!(info.n_changed, 0, "{sampler}: a rejected step moved");
            }
            if !mh {
                assert!(info.accepted && info.accept_prob == 1.0, "{sampler}: no MH test, every step accepted");
            }
        }
    }
    assert_eq!(tallies.changed, changed, "{sampler}: changed tallies");
    tallies
}

#[test]
fn lattice_dula_and_dmala_records_match_the_device_chains() {
    let model = IsingModel::paper_lattice(5, 0.25, 0.2);
    let d = 25;
    let x0: Vec<u32> = (0..CHAINS * d).map(|i| ((i * 7 + i / 3) % 2) as u32).collect();
    let dula = check("dula", Some(0.2), &model, &x0, false);
    assert!(dula.changed.iter().sum::<u64>() > 0, "DULA never moved");
    let dmala = check("dmala", Some(0.4), &model, &x0, true);
    let (acc, prob): (u64, f64) = (dmala.accepted.iter().sum(), dmala.accept_prob.iter().sum());
    let n = (CHAINS * STEPS) as f64;
    // The lattice twin reports min(1, e^A); its mean and the acceptance rate estimate the same
    // number. Each decision is Bernoulli(p_t) given the past, so the rate minus the mean of the
    // p_t has variance ≤ 1/(4n): 5σ = 0.16 at n = 360 (false failure < 1e-6).
    assert!(acc > 0 && (acc as f64) < n, "DMALA accepted {acc} of {n}");
    assert!(
        (acc as f64 / n - prob / n).abs() < 5.0 * (0.25 / n).sqrt(),
        "rate {} vs mean prob {}",
        acc as f64 / n,
        prob / n
    );
}

/// DMALA's reported probability is the lattice kernel's own ratio of the move made, computed
/// independently from the states (`DeviceLattice::log_accept_ratio`), on every accepted move.
#[test]
fn lattice_dmala_accept_prob_is_the_ratio_of_the_move() {
    let model = IsingModel::paper_lattice(5, 0.25, 0.2);
    let d = 25;
    let x0: Vec<u32> = (0..CHAINS * d).map(|i| ((i * 5 + i / 4) % 2) as u32).collect();
    let (_, steps, _) = session_run("dmala", Some(0.4), &model, &x0);
    let lat = DeviceLattice::new(&model, LatticeSampler::Dmala { alpha: 0.4 }, &x0[..d], 0, &Device::Cpu).unwrap();
    let mut checked = 0;
    for t in 0..STEPS {
        let before = if t == 0 { &x0[..] } else { &steps.positions[t - 1][..] };
        for (j, info) in steps.infos[t].iter().enumerate() {
            let row = j * d..(j + 1) * d;
            if info.accepted && info.n_changed > 0 {
                let a = lat.log_accept_ratio(&before[row.clone()], &steps.positions[t][row]);
                assert_eq!(info.accept_prob, a.exp().min(1.0), "step {t} chain {j}");
                assert_eq!(info.n_proposed, info.n_changed);
                checked += 1;
            }
        }
    }
    assert!(checked > 10, "only {checked} accepted moves");
}

#[test]
fn rbm_kernels_records_match_the_device_chains() {
    let (d, m) = (12, 5);
    let w: Vec<f64> = (0..d * m).map(|i| ((i * 37 % 17) as f64 - 8.0) / 10.0).collect();
    let b: Vec<f64> = (0..d).map(|i| ((i % 5) as f64 - 2.0) / 4.0).collect();
    let c: Vec<f64> = (0..m).map(|k| (k as f64 - 2.0) / 3.0).collect();
    let rbm = Rbm::new(dlp_core::DomainKind::Binary, d, m, w, b, c).unwrap();
    let x0: Vec<u32> = (0..CHAINS * d).map(|i| ((i * 3 + i / 5) % 2) as u32).collect();
    check("dula", Some(0.3), &rbm, &x0, false);
    let dmala = check("dmala", Some(0.3), &rbm, &x0, true);
    assert!(dmala.accepted.iter().sum::<u64>() > 0, "DMALA never accepted");
    let gibbs = check("gibbs", None, &rbm, &x0, false);
    // Single-site Gibbs changes at most one coordinate per step.
    assert!(gibbs.changed.iter().all(|&c| c <= STEPS as u64 && c > 0), "{:?}", gibbs.changed);
    check("block-gibbs", None, &rbm, &x0, false);
}

/// A sampler without a device kernel, or a model none of its kernels fits, is refused with one
/// line before any work; a registry name that has one builds.
#[test]
fn device_lookup_goes_through_the_registry() {
    assert_eq!(device_samplers::device_sampler_names(), ["dula", "dmala", "gibbs", "block-gibbs"]);
    let err = DeviceSampler::new("gwg", &SamplerParams::default(), 0, &Device::Cpu).err().unwrap().to_string();
    assert!(err.contains("no device kernel") && err.contains("dula, dmala, gibbs, block-gibbs"), "{err}");
    let err = DeviceSampler::new("dmala", &SamplerParams::default(), 0, &Device::Cpu).err().unwrap().to_string();
    assert!(err.contains("step_size"), "{err}");
    let model = IsingModel::paper_lattice(4, 0.1, 0.2);
    let opened = device_samplers::open("gibbs", &SamplerParams::default(), &model, &[0; 16], 0, &Device::Cpu);
    assert!(matches!(opened, Ok(None)), "gibbs has no lattice device kernel");
}

/// `dlp sample --device cpu` writes the device chains' final states and its trace.
#[test]
fn dlp_sample_device_cpu_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let model = r#"{"schema": "dlp.model.v1", "kind": "ising", "d": 16, "domain": "spin",
 "lattice": {"shape": [4, 4], "periodic": true, "coupling": 0.2}, "b": 0.2}"#;
    let model = model.replace("\"b\": 0.2", &format!("\"b\": {:?}", vec![0.2; 16]));
    std::fs::write(dir.path().join("m.json"), model).unwrap();
    let run = |sampler: &str, extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_dlp"))
            .args(["sample", "--model", "m.json", "--sampler", sampler, "--chains", "3", "--steps", "20"])
            .args([
                "--seed", "5", "--device", "cpu", "--init", "zeros", "--out", "o.csv", "--trace", "t.csv", "--quiet",
            ])
            .args(extra)
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    let out = run("dmala", &["--step-size", "0.4"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(dir.path().join("o.csv")).unwrap();
    let rows: Vec<Vec<u32>> =
        text.lines().skip(2).map(|l| l.split(',').map(|v| u32::from(v.trim() == "1")).collect()).collect();
    assert_eq!(rows.len(), 3);
    let model = dlp_models::load_model(&dir.path().join("m.json")).unwrap();
    let params = SamplerParams { step_size: Some(0.4), ..Default::default() };
    let mut chains = device_samplers::open("dmala", &params, &model, &[0; 48], 5, &Device::Cpu).unwrap().unwrap();
    for _ in 0..20 {
        chains.step().unwrap();
    }
    assert_eq!(rows.concat(), chains.positions().unwrap(), "dlp sample --device ran other chains");
    let trace = std::fs::read_to_string(dir.path().join("t.csv")).unwrap();
    assert_eq!(trace.lines().count(), 1 + 3 * 20, "every step of 3 chains (no burn-in)");
    let out = run("gwg", &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("error: ") && err.lines().count() == 1 && err.contains("no device kernel"), "{err}");
    assert_eq!(text, std::fs::read_to_string(dir.path().join("o.csv")).unwrap(), "a refused run wrote output");
}
