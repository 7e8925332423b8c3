//! Times `dlp exact`'s three stages — the one-cycle matrix, the class structure with the law of
//! each closed class, and the mixing rates — for every sampler the exact suite runs, on a
//! binary pairwise model with 2^d states (random couplings and fields, fixed seed), and DULA
//! on a 1,024-state binary BNN. A measurement for the README's dependency notes, not a test:
//! `RAYON_NUM_THREADS=1 taskset -c 0 cargo run --release -p dlp-exact --example exact_times -- 10 [NAME…]`.

use dlp_core::{DomainKind, Target};
use dlp_exact::{cycle_matrix, ergodic, mixing};
use dlp_models::IsingModel;
use dlp_samplers::registry::{Param, REGISTRY};
use rand::RngExt;
use std::time::Instant;

fn time(label: &str, target: &dyn Target, name: &str, params: &dlp_samplers::SamplerParams) {
    let Ok(sampler) = dlp_samplers::build_sampler(name, params) else { return };
    let d = target.space().d;
    if sampler.start(target, &vec![0; d]).is_err() {
        return;
    }
    let t = Instant::now();
    let p = cycle_matrix(target, sampler.as_ref()).unwrap();
    let build = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let classes = ergodic::classes(&p);
    let structure = t.elapsed().as_secs_f64();
    let laws = ergodic::class_laws(&p, &classes).unwrap();
    let law = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let rates = if classes.ergodic() {
        let mut pi = vec![0.0; p.nrows()];
        for (&s, q) in classes.closed[0].iter().zip(&laws[0]) {
            pi[s] = *q;
        }
        let m = mixing(&p, &pi);
        format!("slem {:.6} ({})", m.slem.unwrap_or(f64::NAN), if m.reversible { "reversible" } else { "general" })
    } else {
        ergodic::verdict(target.space(), &classes)
    };
    let rate = t.elapsed().as_secs_f64();
    println!(
        "{label:>10} {name:>12}  matrix {build:7.2} s  law {law:7.2} s (classes {structure:.2} s)  rates {rate:7.2} s  total {:7.2} s  {rates}",
        build + law + rate
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let d: usize = args.get(1).and_then(|v| v.parse().ok()).unwrap_or(10);
    let only: Vec<&str> = args.iter().skip(2).map(String::as_str).collect();
    let mut rng = dlp_core::setup_rng(11);
    let mut j = vec![0.0; d * d];
    for a in 0..d {
        for b in a + 1..d {
            let v = 0.4 * (rng.random::<f64>() - 0.5);
            j[a * d + b] = v;
            j[b * d + a] = v;
        }
    }
    let b: Vec<f64> = (0..d).map(|_| rng.random::<f64>() - 0.5).collect();
    let model = IsingModel::from_dense(d, &j, b, DomainKind::Binary).unwrap();
    let label = format!("2^{d}");
    for spec in REGISTRY.iter().filter(|s| s.has_state_kernel()) {
        for &name in spec.tests.names {
            if !only.is_empty() && !only.contains(&name) {
                continue;
            }
            let params = dlp_samplers::SamplerParams {
                step_size: spec.tests.step_size,
                preconditioner: spec.requires(Param::Preconditioner).then(|| vec![1.0; d]),
                ..Default::default()
            };
            time(&label, &model, name, &params);
        }
    }
    if only.is_empty() || only.contains(&"bnn") {
        // p = 1 input, H = 3 hidden units: 3 + 3 + 3 + 1 = 10 binary weights, 8 data rows.
        let text = r#"{"schema": "dlp.model.v1", "kind": "bnn", "d": 10, "hidden": 3, "tau": 1.0,
            "x": [[0.3], [-1.2], [0.8], [1.5], [-0.4], [2.0], [-1.7], [0.1]],
            "y": [0.2, -0.9, 0.5, 1.1, -0.3, 1.4, -1.3, 0.0]}"#;
        let bnn = dlp_models::parse_model_str(text, dlp_models::Format::Json, "bnn.json").unwrap();
        let params = dlp_samplers::SamplerParams { step_size: Some(0.1), ..Default::default() };
        for name in ["dula", "dmala", "gibbs"] {
            time("bnn 2^10", &bnn, name, &params);
        }
    }
}
