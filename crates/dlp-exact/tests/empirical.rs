//! The compiled `step` against exact laws (style.md rules 8–9).
//!
//! * One step: 4,000 chains started at each state of the §4.3 model take one step; each
//!   row's counts are G-tested against the exact row of the sampler's kernel (which
//!   `exact_matrices.rs` ties to the paper's formula). Family-wise false-failure rate ≤ 1e−3
//!   per test: Bonferroni over all rows of all samplers (α_row = 1e−3 / #rows).
//! * Chain level: 2,000 seeded chains run 240 steps from one state; the final states are
//!   G-tested at α = 1e−4 against the exact stationary law (DULA: its own biased law, solved
//!   from its matrix). For time-homogeneous kernels the test first checks exactly that
//!   240 steps bring the start's law within 1e−3 (TV) of stationarity, far below the
//!   test's resolution (~1/√2000 ≈ 0.022), so comparing with the stationary law is sound; for bg/hb (random schedules with
//!   memory) the averaged kernel mixes this fast too.
//!
//! The G statistic's χ² approximation is used with cells of expected count ≥ 5 (rest pooled).

mod common;

use common::{Case, cases, chi2_critical, g_test};
use dlp_core::testing::{PairwiseCategorical, Quadratic};
use dlp_core::{RunOptions, Sampler, StepInfo, Target, chain_rngs, run_chains};
use dlp_exact::matrix::{kernel_matrix, stationary};
use dlp_exact::{cycle_matrix, probabilities, total_variation};
use dlp_samplers::build_sampler;
use dlp_samplers::registry::not_ergodic_on;

const N: usize = 4000;
const N_CHAINS: usize = 2000;

fn small_rbm() -> dlp_models::Rbm {
    dlp_models::Rbm::new(
        dlp_core::DomainKind::Spin,
        3,
        2,
        vec![0.5, -1.0, 0.3, 0.8, -0.4, 0.2],
        vec![0.1, -0.2, 0.3],
        vec![0.4, -0.5],
    )
    .unwrap()
}

/// The targets each case runs on here, chosen by what the sampler accepts rather than by its
/// name: the §4.3 model where the chain is ergodic on it (pas-3 flips all 3 sites, pas-2 keeps
/// parity: see the row's `not_ergodic_on`), and a second model — the categorical one, or for
/// binary-only samplers the 4-site binary one; the RBM for samplers that need its structure
/// (block-gibbs) and start on nothing else.
fn targets(case: &Case) -> Vec<Box<dyn Target>> {
    let starts = |t: &dyn Target| {
        let d = t.space().d;
        build(case, d).start(t, &vec![0; d]).is_ok()
    };
    let mut out: Vec<Box<dyn Target>> = Vec::new();
    let tiny = Quadratic::spec_tiny();
    if starts(&tiny) && not_ergodic_on(case.name, tiny.space()).is_none() {
        out.push(Box::new(tiny));
    }
    let categorical = PairwiseCategorical::spec_small();
    if starts(&categorical) {
        out.push(Box::new(categorical));
    } else if starts(&binary_quadratic_4()) {
        out.push(Box::new(binary_quadratic_4()));
    }
    if out.is_empty() {
        out.push(Box::new(small_rbm()));
    }
    out
}

/// A 4-site binary quadratic (symmetric couplings), for samplers that need d > 3 to be
/// irreducible.
fn binary_quadratic_4() -> Quadratic {
    let mut w = vec![0.0; 16];
    for (i, j, v) in [(0, 1, 0.8), (0, 2, -0.6), (1, 3, 0.5), (2, 3, -0.4)] {
        w[i * 4 + j] = v;
        w[j * 4 + i] = v;
    }
    Quadratic::new(dlp_core::Space::binary(4), w, vec![0.3, -0.7, 0.25, 0.1])
}

fn build(case: &Case, d: usize) -> Box<dyn Sampler> {
    build_sampler(case.name, &case.params(d)).unwrap()
}

#[test]
fn one_step_rows_of_step_match_exact_rows() {
    let mut rows = Vec::new(); // (sampler, state, G, df)
    for case in cases() {
        for target in targets(&case) {
            let t = target.as_ref();
            let space = t.space();
            let d = space.d;
            let sampler = build(&case, d);
            let p = kernel_matrix(t, sampler.as_ref(), 0).unwrap();
            let n = p.nrows();
            for s in 0..n {
                let mut x = vec![0u32; d];
                space.state_of_index(s as u64, &mut x);
                let x0: Vec<u32> = x.iter().copied().cycle().take(N * d).collect();
                let mut chains = sampler.start(t, &x0).unwrap();
                // Seed = case position × 1000 + state: distinct, fixed streams per row.
                let mut rngs = chain_rngs(7_000 + s as u64, 0, N);
                let mut info = vec![StepInfo::default(); N];
                chains.step(&mut rngs, &mut info);
                let mut counts = vec![0u64; n];
                for y in chains.positions().chunks(d) {
                    counts[space.index_of_state(y) as usize] += 1;
                }
                let row: Vec<f64> = (0..n).map(|j| p[(s, j)]).collect();
                let (g, df) = g_test(&counts, &row);
                rows.push((case.name, n, s, g, df));
            }
        }
    }
    let alpha_row = 1e-3 / rows.len() as f64;
    for (name, n, s, g, df) in &rows {
        assert!(*g <= chi2_critical(*df, alpha_row), "{name} ({n} states): row {s}: G = {g:.2} on {df} df");
    }
}

#[test]
fn seeded_chains_reach_the_exact_stationary_law() {
    const T: usize = 240;
    for case in cases() {
        for target in targets(&case) {
            let t = target.as_ref();
            let d = t.space().d;
            // With h_1 = 0.5 the categorical chain moves coordinate 1 w.p. ≈ e^{−5} per step:
            // it needs thousands of steps to mix, so preconditioned cases use the binary model.
            if case.precond && t.space().kind == dlp_core::DomainKind::Categorical {
                continue;
            }
            let sampler = build(&case, d);
            let p = cycle_matrix(t, sampler.as_ref()).unwrap();
            let classes = dlp_exact::ergodic::classes(&p);
            let law = if !classes.unique_law() {
                // A reducible chain (pas-2) started at state 0 converges to the law of state
                // 0's closed class, which for an exact sampler is π conditioned on the class.
                let k = classes.closed.iter().position(|c| c.contains(&0)).expect("state 0 is recurrent");
                let laws = dlp_exact::ergodic::class_laws(&p, &classes).unwrap();
                let pi = probabilities(t).unwrap();
                let mass: f64 = classes.closed[k].iter().map(|&s| pi[s]).sum();
                let mut law = vec![0.0; pi.len()];
                for (&s, q) in classes.closed[k].iter().zip(&laws[k]) {
                    assert!(!case.exact || (q - pi[s] / mass).abs() < 1e-12, "{}: class law", case.name);
                    law[s] = *q;
                }
                law
            } else if case.exact {
                probabilities(t).unwrap()
            } else {
                stationary(&p).unwrap()
            };
            if !case.exact {
                assert!(
                    total_variation(&law, &probabilities(t).unwrap()) > 0.01,
                    "{}: DULA should be biased",
                    case.name
                );
            }
            let phases = dlp_exact::matrix::n_phases(t, sampler.as_ref()).unwrap();
            assert_eq!(T % phases, 0, "T must be a whole number of cycles");
            if !case.schedule_memory {
                let mut mu = vec![0.0; law.len()];
                mu[0] = 1.0;
                for _ in 0..T / phases {
                    mu = (0..law.len()).map(|j| (0..law.len()).map(|i| mu[i] * p[(i, j)]).sum()).collect();
                }
                let tv = total_variation(&mu, &law);
                assert!(tv < 1e-3, "{}: {} steps do not mix: TV {tv:e}", case.name, T);
            }
            let x0 = vec![0u32; N_CHAINS * d];
            let out = run_chains(
                sampler.as_ref(),
                t,
                &x0,
                T,
                &RunOptions { seed: 11, threads: 1, chains_per_task: 0 },
                |_, _| (),
            )
            .unwrap();
            let mut counts = vec![0u64; law.len()];
            for y in out.final_states.chunks(d) {
                counts[t.space().index_of_state(y) as usize] += 1;
            }
            let (g, df) = g_test(&counts, &law);
            assert!(g <= chi2_critical(df, 1e-4), "{}: G = {g:.2} on {df} df", case.name);
        }
    }
}

/// DULA/DMALA take a specialised kernel on lattice Ising models (`dlp_samplers::fast`); its
/// `step` must have the generic kernel's rows. 3×3 periodic spin lattice (the vectorised
/// path; 4 start states, 20,000 chains each) and a 4-site ring on bits (scalar path, all 16
/// rows, 4,000 chains each). Bonferroni over all rows: family-wise false-failure ≤ 1e−3.
#[test]
fn lattice_fast_paths_have_the_exact_rows() {
    use dlp_models::IsingModel;
    let grid = IsingModel::paper_lattice(3, 0.1, 0.2);
    let ring = IsingModel::lattice(&[4], true, -0.7, vec![0.3; 4], dlp_core::DomainKind::Binary).unwrap();
    let mut rows = Vec::new();
    for (target, starts, n) in [(&grid, vec![0u64, 37, 300, 511], 20_000usize), (&ring, (0..16).collect(), N)] {
        let t: &dyn Target = target;
        let d = t.space().d;
        for (name, alpha) in [("dula", 0.3), ("dmala", 0.6)] {
            let sampler =
                build_sampler(name, &dlp_samplers::SamplerParams { step_size: Some(alpha), ..Default::default() })
                    .unwrap();
            for &s in &starts {
                let row = sampler.exact().unwrap().transition_row(t, &state(t, s), 0).unwrap();
                let mut exact = vec![0.0; 1 << d];
                for (y, p) in row {
                    exact[t.space().index_of_state(&y) as usize] = p;
                }
                let x0: Vec<u32> = state(t, s).into_iter().cycle().take(n * d).collect();
                let mut chains = sampler.start(t, &x0).unwrap();
                let mut rngs = chain_rngs(9_000 + s, 0, n);
                let mut info = vec![StepInfo::default(); n];
                chains.step(&mut rngs, &mut info);
                let mut counts = vec![0u64; 1 << d];
                for y in chains.positions().chunks(d) {
                    counts[t.space().index_of_state(y) as usize] += 1;
                }
                let (g, df) = g_test(&counts, &exact);
                rows.push((name, d, s, g, df));
            }
        }
    }
    let alpha_row = 1e-3 / rows.len() as f64;
    for (name, d, s, g, df) in rows {
        assert!(g <= chi2_critical(df, alpha_row), "{name} (d = {d}): row {s}: G = {g:.2} on {df} df");
    }
}

fn state(t: &dyn Target, s: u64) -> Vec<u32> {
    let mut x = vec![0u32; t.space().d];
    t.space().state_of_index(s, &mut x);
    x
}

/// Three steps from one state: 20,000 chains against row 0 of P_0 P_1 P_2 (the exact
/// three-step law of a time-homogeneous or systematic kernel). One-step rows cannot see a
/// stale cache (the first step starts from freshly computed ones); this can. bg/hb are left
/// out: their random schedules carry memory, so their three-step law is not a matrix power.
/// Bonferroni over the cases: family-wise false-failure ≤ 1e−3.
#[test]
fn three_step_laws_match_matrix_products() {
    const N3: usize = 20_000;
    let mut results = Vec::new();
    for case in cases() {
        if case.schedule_memory {
            continue;
        }
        for target in targets(&case) {
            let t = target.as_ref();
            let d = t.space().d;
            let sampler = build(&case, d);
            let phases = dlp_exact::matrix::n_phases(t, sampler.as_ref()).unwrap();
            let mut p = kernel_matrix(t, sampler.as_ref(), 0).unwrap();
            for s in 1..3 {
                p *= kernel_matrix(t, sampler.as_ref(), s % phases).unwrap();
            }
            let x0 = vec![0u32; N3 * d];
            let opts = RunOptions { seed: 33, threads: 1, chains_per_task: 0 };
            let out = run_chains(sampler.as_ref(), t, &x0, 3, &opts, |_, _| ()).unwrap();
            let mut counts = vec![0u64; p.nrows()];
            for y in out.final_states.chunks(d) {
                counts[t.space().index_of_state(y) as usize] += 1;
            }
            let row: Vec<f64> = (0..p.nrows()).map(|j| p[(0, j)]).collect();
            results.push((case.name, p.nrows(), g_test(&counts, &row)));
        }
    }
    let alpha = 1e-3 / results.len() as f64;
    for (name, n, (g, df)) in results {
        assert!(g <= chi2_critical(df, alpha), "{name} ({n} states): G = {g:.2} on {df} df");
    }
}

/// The lattice fast paths over several steps: 20,000 chains take 4 steps from one state and
/// are G-tested against that row of P⁴ (P from the generic exact kernel). One-step rows
/// (above) start from freshly computed caches, so they cannot see a stale cache (e.g. DMALA
/// keeping the site classes — its gradient — of the state before an accepted move); this
/// can. 3×3 periodic spin lattice (vectorised path) and a 4-site bit ring (scalar path).
/// Bonferroni over all cases: family-wise false-failure ≤ 1e−3.
#[test]
fn lattice_fast_paths_have_the_exact_four_step_laws() {
    use dlp_models::IsingModel;
    const N4: usize = 20_000;
    const STEPS: usize = 4;
    let grid = IsingModel::paper_lattice(3, 0.1, 0.2);
    let ring = IsingModel::lattice(&[4], true, -0.7, vec![0.3; 4], dlp_core::DomainKind::Binary).unwrap();
    let mut results = Vec::new();
    for (target, starts) in [(&grid, [0u64, 300]), (&ring, [0, 9])] {
        let t: &dyn Target = target;
        let d = t.space().d;
        for (name, alpha) in [("dula", 0.3), ("dmala", 0.6)] {
            let params = dlp_samplers::SamplerParams { step_size: Some(alpha), ..Default::default() };
            let sampler = build_sampler(name, &params).unwrap();
            let p1 = kernel_matrix(t, sampler.as_ref(), 0).unwrap();
            let mut p = p1.clone();
            for _ in 1..STEPS {
                p *= &p1;
            }
            for s in starts {
                let x0: Vec<u32> = state(t, s).into_iter().cycle().take(N4 * d).collect();
                let opts = RunOptions { seed: 44 + s, threads: 1, chains_per_task: 0 };
                let out = run_chains(sampler.as_ref(), t, &x0, STEPS, &opts, |_, _| ()).unwrap();
                let mut counts = vec![0u64; p.nrows()];
                for y in out.final_states.chunks(d) {
                    counts[t.space().index_of_state(y) as usize] += 1;
                }
                let row: Vec<f64> = (0..p.nrows()).map(|j| p[(s as usize, j)]).collect();
                results.push((name, d, s, g_test(&counts, &row)));
            }
        }
    }
    let alpha = 1e-3 / results.len() as f64;
    for (name, d, s, (g, df)) in results {
        assert!(g <= chi2_critical(df, alpha), "{name} (d = {d}) from state {s}: G = {g:.2} on {df} df");
    }
}
