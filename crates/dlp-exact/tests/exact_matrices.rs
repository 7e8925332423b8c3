//! The exact tier (style.md rule 8): for every registered sampler, the transition matrix
//! built from its `ExactKernel` (the functions `step` calls) equals the reference matrix
//! transcribed from the paper (`dlp_exact::reference`) to 1e−12, exact samplers satisfy
//! ‖πP − π‖∞ < 1e−10 and detailed balance, on fixed spec models and ≥ 100 random small models
//! per sampler (proptest, fixed seed; spaces up to 2^8 states).

mod common;

use common::{Case, ModelSpec, any_model, cases};
use dlp_core::{Sampler, SamplerError, Target};
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
    }
    Ok(Checked::Done)
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
    vec![
        (Box::new(Quadratic::spec_tiny()), None),
        (Box::new(PairwiseCategorical::spec_small()), None),
        (Box::new(dlp_models::IsingModel::paper_lattice(3, 0.1, 0.2)), None),
        (Box::new(rbm), Some(r)),
    ]
}

/// Every registry row is in the suite: rows on general models through `cases()` with a
/// reference for each test name on some spec model it runs on; data-target rows
/// (`needs_data`) through `sgdlp.rs`, which checks their references the same way; particle
/// rows (`particles`, no transition kernel) through `gf_svgd.rs`.
#[test]
fn every_registered_sampler_has_cases_and_a_reference() {
    let models = spec_models();
    for spec in REGISTRY.iter().filter(|s| !s.needs_data && !s.particles) {
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
