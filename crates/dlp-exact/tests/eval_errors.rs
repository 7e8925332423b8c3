//! Exact rows on a target whose evaluation fails: every registry kernel hands the target's
//! error back (`ExactError::Eval`) instead of panicking or building a matrix from a partial
//! row, so `dlp exact` and Python's `exact` on a callback or device model that fails report
//! it in one line.

mod common;

use common::cases;
use dlp_core::testing::Quadratic;
use dlp_core::{Batch, EvalError, Space, Target};
use dlp_exact::ExactError;
use dlp_exact::matrix::kernel_matrix;
use dlp_samplers::build_sampler;

/// The §4.3 model, failing whenever a batch contains the state (1, 1, 1) — a state every
/// kernel's rows reach (directly, or in the rows of other states).
struct FailsAtOnes(Quadratic);

impl Target for FailsAtOnes {
    fn space(&self) -> &Space {
        self.0.space()
    }

    fn evaluate(
        &self,
        xs: &[u32],
        batch: Batch<'_>,
        log_density: &mut [f64],
        grad: Option<&mut [f64]>,
    ) -> Result<(), EvalError> {
        if xs.chunks(3).any(|x| x == [1, 1, 1]) {
            return Err(EvalError::Device { device: "test".into(), message: "fails at (1, 1, 1)".into() });
        }
        self.0.evaluate(xs, batch, log_density, grad)
    }
}

#[test]
fn a_failing_evaluation_is_an_error_of_the_matrix() {
    let target = FailsAtOnes(Quadratic::spec_tiny());
    let mut checked = 0;
    for case in cases() {
        let sampler = build_sampler(case.name, &case.params(3)).unwrap();
        match kernel_matrix(&target, sampler.as_ref(), 0) {
            Err(ExactError::Eval(EvalError::Device { message, .. })) => {
                assert_eq!(message, "fails at (1, 1, 1)", "{}", case.name);
                checked += 1;
            }
            // Samplers that need a model structure this plain target lacks (block-gibbs: an
            // RBM) refuse at start, before any row.
            Err(ExactError::Refused(_)) => {}
            other => panic!("{}: expected the target's error, got {:?}", case.name, other.map(|m| m.nrows())),
        }
    }
    assert!(checked >= cases().len() - 1, "only {checked} of {} kernels reached the failing state", cases().len());
}
