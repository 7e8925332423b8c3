//! The exact tier (style.md rule 8): for every registered sampler, the transition matrix
//! built from its `ExactKernel` (the functions `step` calls) equals the reference matrix
//! transcribed from the paper (`dlp_exact::reference`) to 1e−12, exact samplers satisfy
//! ‖πP − π‖∞ < 1e−10 and detailed balance, and every sampler's one-cycle chain is irreducible
//! and aperiodic wherever its registry row does not flag the model (and is not where it does:
//! the flag must be true), on fixed spec models — among them parity and periodicity traps:
//! strong fields, odd and even numbers of sites, chains and rings, binary, spin and
//! categorical — and ≥ 100 random small models per sampler (proptest, fixed seed; spaces up to
//! 2^8 states). Every `dlp exact` report on the spec models is a law: no `stationary` entry
//! outside [0, 1].

mod common;

use common::{Case, ModelSpec, any_model, cases};
use dlp_core::{Sampler, SamplerError, Target};
use dlp_exact::ergodic::classes;
use dlp_exact::matrix::{detailed_balance_residual, kernel_matrix, max_abs_diff, stationarity_residual};
use dlp_exact::reference::{RbmRef, reference_by_name};
use dlp_exact::{ExactError, probabilities};
use dlp_models::Rbm;
use dlp_samplers::registry::REGISTRY;
use nalgebra::DMatrix;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};

/// Outcome of checking one sampler on one model.
#[derive(Debug, PartialEq)]
enum Checked {
    Done,
    Unsupported,
}

/// Reference matrices (one per phase) of `case` on `target` (`rbm`: its parameters if an RBM).
fn reference(case: &Case, target: &dyn Target, rbm: Option<RbmRef>) -> Vec<DMatrix<f64>> {
    reference_by_name(case.name, &case.ref_params(target.space().d, rbm), target)
        .unwrap_or_else(|| panic!("no reference for {} in dlp_exact::reference::reference_by_name", case.name))
        .unwrap()
}

/// Implementation == reference, and exactness, for one sampler on one target.
fn check(case: &Case, target: &dyn Target, rbm: Option<RbmRef>) -> Result<Checked, String> {
    let d = target.space().d;
    let sampler: Box<dyn Sampler> = match dlp_samplers::build_sampler(case.name, &case.params(d)) {
        Ok(s) => s,
        Err(e) => return Err(format!("{}: {e}", case.name)),
    };
    // A sampler that cannot run on this model says so at start; skip those combinations.
    let x0 = vec![0u32; d];
    match sampler.start(target, &x0) {
        Err(SamplerError::Unsupported { .. }) => return Ok(Checked::Unsupported),
        Err(e) => return Err(format!("{}: start failed: {e}", case.name)),
        Ok(_) => {}
    }
    let n_phases = sampler.exact().ok_or_else(|| format!("{} has no exact kernel", case.name))?.n_phases(target);
    let refs = reference(case, target, rbm);
    if refs.len() != n_phases {
        return Err(format!("{}: {} phases, reference has {}", case.name, n_phases, refs.len()));
    }
    let pi = probabilities(target).map_err(|e| e.to_string())?;
    let mut cycle: Option<DMatrix<f64>> = None;
    for (phase, r) in refs.iter().enumerate() {
        let p = kernel_matrix(target, sampler.as_ref(), phase).map_err(|e: ExactError| e.to_string())?;
        let diff = max_abs_diff(&p, r);
        if diff > 1e-12 {
            return Err(format!("{} phase {phase}: |P − P_ref|max = {diff:e}", case.name));
        }
        if case.exact {
            let s = stationarity_residual(&pi, &p);
            let db = detailed_balance_residual(&pi, &p);
            if s > 1e-10 || db > 1e-10 {
                return Err(format!("{} phase {phase}: ‖πP − π‖∞ = {s:e}, detailed balance {db:e}", case.name));
            }
        }
        cycle = Some(match cycle {
            None => p,
            Some(c) => c * p,
        });
    }
    check_ergodicity(case.name, target, &cycle.expect("at least one phase"))?;
    Ok(Checked::Done)
}

/// The one-cycle chain `p` of sampler `name` on `target` is irreducible and aperiodic unless
/// its registry row flags the model (`SamplerSpec::not_ergodic_on`), and is not where it does.
/// Every suite target is positive everywhere, so an unflagged exact sampler must connect all
/// states.
fn check_ergodicity(name: &str, target: &dyn Target, p: &DMatrix<f64>) -> Result<(), String> {
    let c = classes(p);
    // Every closed class's law (what `dlp exact` prints) is a probability law.
    for law in dlp_exact::ergodic::class_laws(p, &c).map_err(|e| format!("{name}: {e}"))? {
        let sum: f64 = law.iter().sum();
        if law.iter().any(|q| !(0.0..=1.0).contains(q)) || (sum - 1.0).abs() > 1e-9 {
            return Err(format!("{name}: a class law is not a law: {law:?}"));
        }
    }
    let good = c.irreducible() && c.aperiodic();
    let verdict = dlp_exact::ergodic::verdict(target.space(), &c);
    match dlp_samplers::registry::not_ergodic_on(name, target.space()) {
        None if !good => Err(format!("{name}: the chain is {verdict}, and its registry row does not flag this model")),
        Some(why) if good => Err(format!("{name}: flagged ({why}) but the chain is {verdict}")),
        _ => Ok(()),
    }
}

/// The fixed spec models, each with its RBM parameters if it is an RBM.
fn spec_models() -> Vec<(Box<dyn Target>, Option<RbmRef>)> {
    use dlp_core::testing::{PairwiseCategorical, Quadratic};
    let r = RbmRef {
        d: 3,
        m: 2,
        w: vec![0.5, -1.0, 0.3, 0.8, -0.4, 0.2],
        b: vec![0.1, -0.2, 0.3],
        c: vec![0.4, -0.5],
        spin: false,
    };
    let rbm = Rbm::new(dlp_core::DomainKind::Binary, r.d, r.m, r.w.clone(), r.b.clone(), r.c.clone()).unwrap();
    let mut models: Vec<(Box<dyn Target>, Option<RbmRef>)> = vec![
        (Box::new(Quadratic::spec_tiny()), None),
        (Box::new(PairwiseCategorical::spec_small()), None),
        (Box::new(dlp_models::IsingModel::paper_lattice(3, 0.1, 0.2)), None),
        (Box::new(rbm), Some(r)),
    ];
    models.extend(trap_models().into_iter().map(|t| (t, None)));
    models
}

/// Models that expose parity and periodicity traps: strong fields (most mass on one parity
/// class, rare rejections), odd and even numbers of sites, open chains and rings, binary, spin
/// and categorical. The first is the 4-spin chain on which `pas-2` was seen to sample the
/// wrong law (marginals 0.85–0.90 for an exact 0.967–0.977).
fn trap_models() -> Vec<Box<dyn Target>> {
    use dlp_core::{DomainKind, Space};
    use dlp_models::{Couplings, IsingModel, PottsModel};
    // Nearest-neighbour couplings J on d sites, a ring when `ring`.
    let chain = |d: usize, j: f64, ring: bool| {
        let mut m = vec![0.0; d * d];
        for i in 0..d - 1 {
            m[i * d + i + 1] = j;
            m[(i + 1) * d + i] = j;
        }
        if ring && d > 2 {
            m[d - 1] = j;
            m[(d - 1) * d] = j;
        }
        m
    };
    let ising = |d: usize, j: f64, b: f64, ring: bool, dom: DomainKind| -> Box<dyn Target> {
        Box::new(IsingModel::from_dense(d, &chain(d, j, ring), vec![b; d], dom).unwrap())
    };
    let potts = |d: usize, k: usize, j: f64, h: f64| -> Box<dyn Target> {
        let fields: Vec<f64> = (0..d * k).map(|t| if t % k == 0 { h } else { 0.0 }).collect();
        Box::new(
            PottsModel::new(Space::categorical(d, k), Couplings::from_dense(d, &chain(d, j, true)).unwrap(), fields)
                .unwrap(),
        )
    };
    vec![
        ising(4, 0.2, 1.5, false, DomainKind::Spin),
        ising(5, 0.2, 1.5, false, DomainKind::Spin),
        ising(5, 0.3, 2.0, true, DomainKind::Binary),
        ising(6, -0.4, 1.0, true, DomainKind::Spin),
        ising(2, 0.5, 2.5, false, DomainKind::Binary),
        ising(3, 0.1, -2.0, true, DomainKind::Binary),
        potts(3, 3, 0.5, 2.0),
        potts(4, 2, -0.6, 1.5),
    ]
}

/// Every sampler's `dlp exact` report on every spec model is a law: a unique `stationary` has
/// entries in [0, 1] summing to 1, and where the law is not unique there is no `stationary` or
/// `total_variation`, each closed class's law is a law, and the report says so (the reducible
/// `pas-2`/`pas-4` on the 4-spin trap model among them).
#[test]
fn every_report_is_a_law_on_every_spec_model() {
    let is_law = |v: &[f64]| v.iter().all(|p| (0.0..=1.0).contains(p)) && (v.iter().sum::<f64>() - 1.0).abs() < 1e-9;
    let mut reducible = 0;
    for case in cases() {
        // The 512-state lattice is left out: its spectra cost seconds each in a debug build.
        for (m, _) in spec_models().iter().filter(|(m, _)| m.space().n_states().unwrap() <= 64) {
            let d = m.space().d;
            let sampler = dlp_samplers::build_sampler(case.name, &case.params(d)).unwrap();
            if sampler.start(m.as_ref(), &vec![0u32; d]).is_err() {
                continue;
            }
            let r = dlp_exact::exact_report(m.as_ref(), sampler.as_ref()).unwrap();
            let e = &r.ergodicity;
            for c in &e.closed_classes {
                assert!(is_law(&c.stationary), "{}: class law {:?}", case.name, c.stationary);
            }
            if e.unique_stationary_law {
                assert!(is_law(r.stationary.as_ref().unwrap()), "{}: {:?}", case.name, r.stationary);
                assert!(r.total_variation.is_some() && r.uniform_start_limit.is_none(), "{}", case.name);
            } else {
                reducible += 1;
                assert!(r.stationary.is_none() && r.total_variation.is_none(), "{}", case.name);
                assert!(e.verdict.starts_with("reducible"), "{}: {}", case.name, e.verdict);
                assert!(r.mixing.undefined.is_some() && r.mixing.slem.is_none(), "{}: {:?}", case.name, r.mixing);
                assert!(is_law(r.uniform_start_limit.as_ref().unwrap()), "{}", case.name);
                if case.exact {
                    // π restricted to a closed class is that class's law for a π-invariant kernel.
                    for c in &e.closed_classes {
                        let tv = c.total_variation_to_conditioned_target.unwrap();
                        assert!(tv < 1e-10, "{}: class law off π|class by {tv:e}", case.name);
                    }
                }
            }
        }
    }
    assert!(reducible > 0, "no suite model exposed a reducible registry sampler (pas-2 should)");
}

/// The case: `pas-2` on the strong-field 4-spin chain has two parity classes with a
/// per-class law equal to π on the class; the mixture `pas` is irreducible with TV < 1e−10.
#[test]
fn pas_2_is_reducible_by_parity_and_pas_is_exact_on_the_4_spin_chain() {
    let t = &trap_models()[0];
    let pas2 = dlp_samplers::build_sampler("pas-2", &Default::default()).unwrap();
    let r = dlp_exact::exact_report(t.as_ref(), pas2.as_ref()).unwrap();
    assert_eq!(r.ergodicity.verdict, "reducible: 2 closed classes (parity)");
    assert_eq!(r.ergodicity.closed_classes.iter().map(|c| c.size).collect::<Vec<_>>(), vec![8, 8]);
    // From a uniform start each parity class gets half the chains, while π puts ≈ 0.5 ± δ on
    // them: the uniform-start limit is off π.
    let masses: Vec<f64> = r.ergodicity.closed_classes.iter().map(|c| c.uniform_start_mass.unwrap()).collect();
    assert!(masses.iter().all(|m| (m - 0.5).abs() < 1e-12), "{masses:?}");
    assert!(r.uniform_start_total_variation.unwrap() > 0.05, "{r:?}");
    let params = dlp_samplers::SamplerParams { step_size: Some(2.0), ..Default::default() };
    let pas = dlp_samplers::build_sampler("pas", &params).unwrap();
    let r = dlp_exact::exact_report(t.as_ref(), pas.as_ref()).unwrap();
    assert!(r.ergodicity.irreducible && r.ergodicity.aperiodic, "{}", r.ergodicity.verdict);
    assert!(r.total_variation.unwrap() < 1e-10, "{:?}", r.total_variation);
    assert!(r.mixing.slem.unwrap() < 1.0 && r.mixing.undefined.is_none(), "{:?}", r.mixing);
}

/// Every registry row is in the suite: rows on general models through `cases()` with a
/// reference for each test name on some spec model it runs on; data-target rows
/// (`needs_data`) through `sgdlp.rs`, which checks their references the same way; particle
/// rows (`particles`, no transition kernel) through `gf_svgd.rs`; wrappers (`wraps`, a kernel
/// on a product space) through `tempering.rs`.
#[test]
fn every_registered_sampler_has_cases_and_a_reference() {
    let models = spec_models();
    for spec in REGISTRY.iter().filter(|s| s.has_state_kernel()) {
        assert!(
            !spec.tests.names.is_empty(),
            "sampler {} has no exact-suite cases: give its registry row test names (SamplerSpec::tests) \
             and transcribe its kernel from the paper into dlp_exact::reference::reference_by_name",
            spec.usage()
        );
        for case in cases().iter().filter(|c| spec.tests.names.contains(&c.name)) {
            let has_reference = models.iter().any(|(t, rbm)| {
                let d = t.space().d;
                let sampler = dlp_samplers::build_sampler(case.name, &case.params(d)).unwrap();
                let runs = sampler.start(t.as_ref(), &vec![0u32; d]).is_ok();
                runs && reference_by_name(case.name, &case.ref_params(d, rbm.clone()), t.as_ref()).is_some()
            });
            assert!(
                has_reference,
                "{}: no reference in dlp_exact::reference::reference_by_name for a spec model it runs on; \
                 transcribe its kernel from the paper there (independently of dlp-samplers)",
                case.name
            );
        }
    }
}

#[test]
fn every_sampler_matches_its_reference_on_spec_models() {
    let models = spec_models();
    for case in cases() {
        let mut done = 0;
        for (m, rbm) in &models {
            match check(&case, m.as_ref(), rbm.clone()) {
                Ok(Checked::Done) => done += 1,
                Ok(Checked::Unsupported) => {}
                Err(e) => panic!("{e}"),
            }
        }
        assert!(done > 0, "{} ran on none of the spec models", case.name);
    }
}

fn config(cases: u32) -> Config {
    Config { cases, rng_seed: RngSeed::Fixed(20220707), failure_persistence: None, ..Config::default() }
}

/// Cases per sampler and largest binary dimension: default run vs `--features stat`.
const CASES: u32 = if cfg!(feature = "stat") { 500 } else { 100 };
const MAX_D: usize = if cfg!(feature = "stat") { 9 } else { 8 };

fn run_random(name: &str, strategy: impl Strategy<Value = ModelSpec>) {
    let case = cases().into_iter().find(|c| c.name == name).unwrap();
    let done = std::cell::Cell::new(0u32);
    proptest::test_runner::TestRunner::new(config(CASES))
        .run(&strategy, |spec| {
            let target = spec.build();
            match check(&case, target.as_ref(), spec.rbm_ref()) {
                Ok(Checked::Done) => done.set(done.get() + 1),
                Ok(Checked::Unsupported) => {}
                Err(e) => return Err(TestCaseError::fail(format!("{e}\nmodel: {spec:?}"))),
            }
            Ok(())
        })
        .unwrap();
    // Not a vacuous pass: most random models must be supported.
    let done = done.get();
    assert!(done >= CASES / 4, "{name}: only {done} of {CASES} random models were supported");
}

macro_rules! random_models {
    ($($test:ident => $name:literal, $strategy:expr;)*) => {
        $(
            #[test]
            fn $test() {
                run_random($name, $strategy);
            }
        )*

        /// The cases with their own test (and model strategy) above.
        const LISTED: &[&str] = &[$($name),*];
    };
}

/// A case without its own line below runs on every random model kind, so a new registry row
/// is tested on random models without editing this file; a sampler that supports few model
/// kinds fails `run_random`'s "only n of N supported" check and then needs its own line.
#[test]
fn unlisted_cases_on_random_models() {
    for case in cases().iter().filter(|c| !LISTED.contains(&c.name)) {
        run_random(case.name, any_model(MAX_D));
    }
}

random_models! {
    dula_random => "dula", any_model(MAX_D);
    dmala_random => "dmala", any_model(MAX_D);
    pdula_random => "pdula", any_model(MAX_D);
    pdmala_random => "pdmala", any_model(MAX_D);
    dula_f32_random => "dula-f32", any_model(MAX_D);
    dmala_f32_random => "dmala-f32", any_model(MAX_D);
    gibbs_random => "gibbs", any_model(MAX_D);
    gibbs_sweep_random => "gibbs-sweep", any_model(MAX_D.min(6));
    bg1_random => "bg-1", any_model(MAX_D);
    bg2_random => "bg-2", any_model(MAX_D);
    hb21_random => "hb-2-1", any_model(MAX_D);
    hb32_random => "hb-3-2", any_model(MAX_D.min(7));
    gwg_random => "gwg", any_model(MAX_D);
    gwg2_random => "gwg-2", common::ising(MAX_D);
    gwg3_random => "gwg-3", common::ising(MAX_D.min(6));
    lb_random => "lb", prop_oneof![common::ising(MAX_D), common::rbm(6)];
    block_gibbs_random => "block-gibbs", common::rbm(MAX_D.min(7));
}

/// Beyond the registry's test names: every family with integer parts, at every part value in
/// 1..=4 its constructor accepts (`pas-4`, `gwg-4`, `hb-4-3`, `bg-3`, `acs-dmala-2`, …), on
/// every trap model it runs on, is irreducible and aperiodic exactly where its row does not
/// flag the model (the cyclical samplers over a whole cycle).
#[test]
fn integer_parts_one_to_four_are_ergodic_where_unflagged() {
    let mut checked = 0;
    for spec in REGISTRY.iter().filter(|s| s.has_state_kernel()) {
        for &count in spec.counts.iter().filter(|&&c| c > 0) {
            let mut names = vec![spec.stem.to_string()];
            for _ in 0..count {
                names = names.iter().flat_map(|n| (1..=4).map(move |v| format!("{n}-{v}"))).collect();
            }
            for name in names {
                for t in trap_models() {
                    let d = t.space().d;
                    let params = spec.test_params(|| common::precond(d));
                    let Ok(sampler) = dlp_samplers::build_sampler(&name, &params) else { continue };
                    if sampler.start(t.as_ref(), &vec![0u32; d]).is_err() {
                        continue;
                    }
                    let p = dlp_exact::cycle_matrix(t.as_ref(), sampler.as_ref()).unwrap();
                    check_ergodicity(&name, t.as_ref(), &p).unwrap();
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 100, "only {checked} (sampler, model) pairs ran");
}
