//! Adam (Kingma & Ba 2015) on a flat `f64` parameter vector, as `torch.optim.Adam` with its
//! defaults: β = (0.9, 0.999), ε = 1e-8 added to √v̂, bias-corrected moments, no weight decay.
//!
//! The one Adam of the workspace for parameters held as `f64` slices (dlp-learn's RBM and PCD
//! training, GF-SVGD's particles, the binarised-network ensembles). Tensor parameters use
//! `dlp_learn::train::Adam`, which runs the same update as tensor operations on the device;
//! the two differ only in where the learning rate multiplies (see there).

/// Adam state for one flat parameter vector.
#[derive(Clone, Debug)]
pub struct Adam {
    /// Learning rate.
    pub lr: f64,
    /// First-moment decay β₁.
    pub beta1: f64,
    /// Second-moment decay β₂.
    pub beta2: f64,
    /// Added to √v̂.
    pub eps: f64,
    m: Vec<f64>,
    v: Vec<f64>,
    t: i32,
}

impl Adam {
    /// Adam with learning rate `lr` and PyTorch's other defaults for `n` parameters.
    pub fn new(n: usize, lr: f64) -> Adam {
        Adam::with_constants(n, lr, 0.9, 0.999, 1e-8)
    }

    /// Adam with learning rate `lr`, decays `beta1`, `beta2` and `eps` for `n` parameters.
    pub fn with_constants(n: usize, lr: f64, beta1: f64, beta2: f64, eps: f64) -> Adam {
        Adam { lr, beta1, beta2, eps, m: vec![0.0; n], v: vec![0.0; n], t: 0 }
    }

    /// Steps taken so far.
    pub fn steps(&self) -> i32 {
        self.t
    }

    /// One descent step: `params -= lr · m̂ / (√v̂ + ε)` for the loss gradient `grad`.
    pub fn step(&mut self, params: &mut [f64], grad: &[f64]) {
        assert_eq!(grad.len(), self.m.len(), "Adam: gradient length differs from the parameters");
        self.update(params, grad.iter().copied());
    }

    /// One ascent step along `direction`: a descent step fed the gradient −`direction`
    /// (GF-SVGD moves its particles along φ).
    pub fn ascend(&mut self, params: &mut [f64], direction: &[f64]) {
        assert_eq!(direction.len(), self.m.len(), "Adam: direction length differs from the parameters");
        self.update(params, direction.iter().map(|&d| -d));
    }

    fn update(&mut self, params: &mut [f64], grad: impl Iterator<Item = f64>) {
        assert_eq!(params.len(), self.m.len(), "Adam: parameter count changed");
        self.t += 1;
        let bc1 = 1.0 - self.beta1.powi(self.t);
        let bc2 = 1.0 - self.beta2.powi(self.t);
        // The operation order (lr · m̂ first, then ÷ (√v̂ + ε)) is part of every seeded result
        // that trains with Adam: changing it changes the last bits.
        for ((p, g), (m, v)) in params.iter_mut().zip(grad).zip(self.m.iter_mut().zip(self.v.iter_mut())) {
            *m = self.beta1 * *m + (1.0 - self.beta1) * g;
            *v = self.beta2 * *v + (1.0 - self.beta2) * g * g;
            *p -= self.lr * (*m / bc1) / ((*v / bc2).sqrt() + self.eps);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_step_moves_every_parameter_by_lr_against_the_gradient_sign() {
        // Hand computation: after one step m̂ = g and v̂ = g², so the move is lr·g/(|g| + ε).
        let mut a = Adam::new(3, 0.01);
        let mut p = vec![1.0, -2.0, 0.5];
        a.step(&mut p, &[3.0, -0.5, 0.0]);
        assert!((p[0] - (1.0 - 0.01 * 3.0 / (3.0 + 1e-8))).abs() < 1e-15);
        assert!((p[1] - (-2.0 + 0.01 * 0.5 / (0.5 + 1e-8))).abs() < 1e-15);
        assert_eq!(p[2], 0.5);
        assert_eq!(a.steps(), 1);
    }

    #[test]
    fn ascend_equals_a_step_on_the_negated_direction_bit_for_bit() {
        let (mut a, mut b) = (Adam::new(3, 0.05), Adam::new(3, 0.05));
        let (mut p, mut q) = (vec![0.3, -1.0, 2.0], vec![0.3, -1.0, 2.0]);
        for k in 0..20 {
            let phi = [0.7 - k as f64 * 0.1, 1.3, -0.2 * k as f64];
            a.ascend(&mut p, &phi);
            b.step(&mut q, &phi.map(|x| -x));
        }
        assert_eq!(p, q);
    }

    #[test]
    fn minimises_a_quadratic() {
        let mut a = Adam::new(2, 0.05);
        let mut p = vec![3.0, -4.0];
        for _ in 0..2000 {
            let g = vec![2.0 * (p[0] - 1.0), 2.0 * (p[1] + 2.0)];
            a.step(&mut p, &g);
        }
        assert!((p[0] - 1.0).abs() < 1e-3 && (p[1] + 2.0).abs() < 1e-3, "{p:?}");
    }
}
