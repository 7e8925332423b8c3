//! Adam (Kingma & Ba), as `torch.optim.Adam` with its defaults: β = (0.9, 0.999), ε = 1e-8
//! added to √v̂, bias-corrected moments, no weight decay.

/// Adam state for one flat parameter vector.
#[derive(Clone, Debug)]
pub struct Adam {
    /// Learning rate.
    pub lr: f64,
    /// First-moment decay.
    pub beta1: f64,
    /// Second-moment decay.
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
        Adam { lr, beta1: 0.9, beta2: 0.999, eps: 1e-8, m: vec![0.0; n], v: vec![0.0; n], t: 0 }
    }

    /// Steps taken so far.
    pub fn steps(&self) -> i32 {
        self.t
    }

    /// One descent step: `params -= lr · m̂ / (√v̂ + ε)` for the loss gradient `grad`.
    pub fn step(&mut self, params: &mut [f64], grad: &[f64]) {
        assert_eq!(params.len(), self.m.len(), "Adam: parameter count changed");
        assert_eq!(grad.len(), self.m.len(), "Adam: gradient length differs from the parameters");
        self.t += 1;
        let bc1 = 1.0 - self.beta1.powi(self.t);
        let bc2 = 1.0 - self.beta2.powi(self.t);
        for ((p, &g), (m, v)) in params.iter_mut().zip(grad).zip(self.m.iter_mut().zip(self.v.iter_mut())) {
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
