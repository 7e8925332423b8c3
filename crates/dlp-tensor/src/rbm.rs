//! [`TensorRbm`]: the Bernoulli RBM of [`dlp_models::Rbm`] evaluated by candle.
//!
//! f(x) = Σ_i b_i u_i + Σ_k softplus(c_k + Σ_i W_ik u_i), u = x (binary) or u = 2x − 1 (spin),
//! for a batch U (n × d): F = (U ⊙ b) 1 + softplus(U W + c) 1. ∇f with respect to the bit x is
//! candle's autograd of Σ_rows F through the input variable X (the spin map u = 2x − 1 is part
//! of the graph, so the factor 2 comes out of `backward`).

use crate::{Error, TensorCommon, TensorModel, build_error, copy_out, device_name, input_grad};
use candle_core::{DType, Device, Tensor, Var};
use dlp_core::{DomainKind, Space};
use dlp_models::Rbm;

/// Bernoulli RBM (binary or spin visibles) whose f and ∇f are computed by candle on a device
/// (see the module doc and the crate doc).
#[derive(Debug)]
pub struct TensorRbm {
    common: TensorCommon,
    device: Device,
    m: usize,
    /// W, d × M, f32.
    w: Tensor,
    /// b, (d), f32.
    b: Tensor,
    /// c, (M), f32.
    c: Tensor,
}

impl TensorRbm {
    /// The RBM `rbm` with its parameters uploaded (as f32) to `device`.
    pub fn from_rbm(rbm: &Rbm, device: &Device) -> Result<Self, Error> {
        let (d, m) = (rbm.d(), rbm.m());
        let upload = |v: &[f64], shape: &[usize]| {
            let v: Vec<f32> = v.iter().map(|&x| x as f32).collect();
            Tensor::from_vec(v, shape, device).map_err(|e| build_error(device, e))
        };
        let domain = if rbm.is_spin() { DomainKind::Spin } else { DomainKind::Binary };
        Self::from_tensors(domain, upload(rbm.w(), &[d, m])?, upload(rbm.b(), &[d])?, upload(rbm.c(), &[m])?)
    }

    /// An RBM from tensors already on a device: W (d × M), b (d), c (M), any float dtype
    /// (converted to f32), all on W's device; `domain` is binary or spin.
    pub fn from_tensors(domain: DomainKind, w: Tensor, b: Tensor, c: Tensor) -> Result<Self, Error> {
        let (d, m) = w.dims2().map_err(|_| Error::Param(format!("W must be d × M, found shape {:?}", w.dims())))?;
        if d == 0 || m == 0 {
            return Err(Error::Param(format!("W must be d × M with d, M ≥ 1, found {d} × {m}")));
        }
        if b.dims() != [d] {
            return Err(Error::Param(format!("b must have shape [{d}] (d), found {:?}", b.dims())));
        }
        if c.dims() != [m] {
            return Err(Error::Param(format!("c must have shape [{m}] (M), found {:?}", c.dims())));
        }
        let device = w.device().clone();
        for (name, t) in [("b", &b), ("c", &c)] {
            if !t.device().same_device(&device) {
                return Err(Error::Param(format!("{name} is not on W's device {}", device_name(&device))));
            }
        }
        let f32 = |t: Tensor| t.to_dtype(DType::F32).map_err(|e| build_error(&device, e));
        let (w, b, c) = (f32(w)?, f32(b)?, f32(c)?);
        Self::build(domain, d, m, w, b, c)
    }

    /// Tensors of any shapes, unchecked: evaluation then fails inside candle (tests of the
    /// error path).
    #[cfg(test)]
    pub(crate) fn from_tensors_unchecked(domain: DomainKind, d: usize, w: Tensor, b: Tensor, c: Tensor) -> Self {
        let m = c.dims().iter().product();
        Self::build(domain, d, m, w, b, c).expect("binary or spin")
    }

    fn build(domain: DomainKind, d: usize, m: usize, w: Tensor, b: Tensor, c: Tensor) -> Result<Self, Error> {
        let space = Space::bits(domain, d).ok_or_else(|| {
            Error::Param(format!("domain {domain:?} is not supported by the rbm model (use spin or binary)"))
        })?;
        let device = w.device().clone();
        Ok(TensorRbm { common: TensorCommon::new(space, &device), device, m, w, b, c })
    }

    /// Number of visible units d.
    pub fn d(&self) -> usize {
        self.common.space.d
    }

    /// Number of hidden units M.
    pub fn m(&self) -> usize {
        self.m
    }

    /// True when the visible units are spins.
    pub fn is_spin(&self) -> bool {
        self.common.space.kind == DomainKind::Spin
    }

    /// The device the parameters live on and the model is evaluated on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// f of every row of the bit matrix `x` (n × d, f32), shape (n).
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let u = if self.is_spin() { x.affine(2.0, -1.0)? } else { x.clone() };
        let lin = u.broadcast_mul(&self.b)?.sum(1)?;
        let a = u.matmul(&self.w)?.broadcast_add(&self.c)?;
        lin + softplus(&a)?.sum(1)?
    }
}

/// softplus(a) = log(1 + e^a) as m + log(e^{−m} + e^{a−m}), m = max(a, 0): no overflow, and the
/// gradient is σ(a) whatever subgradient the kink of max takes (it cancels).
fn softplus(a: &Tensor) -> candle_core::Result<Tensor> {
    let m = a.relu()?;
    let s = (m.neg()?.exp()? + (a - &m)?.exp()?)?;
    m + s.log()?
}

impl TensorModel for TensorRbm {
    fn common(&self) -> &TensorCommon {
        &self.common
    }

    fn evaluate_full(&self, xs: &[u32], log_density: &mut [f64], grad: Option<&mut [f64]>) -> candle_core::Result<()> {
        let (n, d) = (log_density.len(), self.d());
        // One host → device upload of the states per call (device-resident chains: later work).
        let bits: Vec<f32> = xs.iter().map(|&v| v as f32).collect();
        match grad {
            None => copy_out(&self.forward(&Tensor::from_vec(bits, (n, d), &self.device)?)?, log_density),
            Some(g) => {
                let x = Var::from_vec(bits, (n, d), &self.device)?;
                let f = self.forward(x.as_tensor())?;
                copy_out(&f, log_density)?;
                copy_out(&input_grad(&f, &x)?, g)
            }
        }
    }
}

crate::tensor_target!(TensorRbm);

impl crate::DeviceEnergy for TensorRbm {
    fn device(&self) -> &Device {
        &self.device
    }

    fn space(&self) -> &Space {
        &self.common.space
    }

    /// The graph of `evaluate_full` on the device tensor `x`: ∇f with respect to the bit
    /// (for spin the map u = 2x − 1 is part of the graph).
    fn energy_grad(&self, x: &Tensor) -> candle_core::Result<(Tensor, Tensor)> {
        let x = Var::from_tensor(&x.to_dtype(DType::F32)?)?;
        let f = self.forward(x.as_tensor())?;
        let g = input_grad(&f, &x)?;
        Ok((f.detach(), g))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dlp_core::TargetExt;
    use dlp_core::{Batch, EvalError, RunOptions, SamplerError, Target, run_chains};
    use dlp_samplers::{SamplerParams, build_sampler};

    /// W is d × M but c has M + 1 entries: the broadcast add of c fails inside candle.
    fn broken(d: usize, m: usize) -> TensorRbm {
        let dev = Device::Cpu;
        let w = Tensor::zeros((d, m), DType::F32, &dev).unwrap();
        let b = Tensor::zeros(d, DType::F32, &dev).unwrap();
        let c = Tensor::zeros(m + 1, DType::F32, &dev).unwrap();
        TensorRbm::from_tensors_unchecked(DomainKind::Binary, d, w, b, c)
    }

    #[test]
    fn shape_errors_are_refused_by_the_checked_constructor() {
        let dev = Device::Cpu;
        let z = |s: &[usize]| Tensor::zeros(s, DType::F32, &dev).unwrap();
        let e = TensorRbm::from_tensors(DomainKind::Binary, z(&[4, 3]), z(&[4]), z(&[4])).unwrap_err();
        assert!(matches!(e, Error::Param(ref m) if m.contains("c must have shape [3]")), "{e}");
        let e = TensorRbm::from_tensors(DomainKind::Categorical, z(&[4, 3]), z(&[4]), z(&[3])).unwrap_err();
        assert!(matches!(e, Error::Param(_)), "{e}");
    }

    #[test]
    fn a_failing_evaluation_is_a_device_error_returned_by_every_convenience() {
        let t = broken(3, 2);
        let xs = [0, 1, 1, 1, 0, 0];
        let mut f = [0.0; 2];
        let mut g = [0.0; 6];
        let e = t.evaluate(&xs, Batch::Full, &mut f, Some(&mut g)).unwrap_err();
        assert!(matches!(e, EvalError::Device { ref device, .. } if device == "cpu"), "{e:?}");
        // One line, without the backtrace candle appends under RUST_BACKTRACE.
        let line = e.to_string();
        assert!(line.starts_with("device error on cpu: shape mismatch") && !line.contains('\n'), "{line}");

        assert_eq!(t.log_density_grad_batch(&xs, &mut f, &mut g), Err(e.clone()));
        assert_eq!(t.log_density_batch(&xs, &mut f), Err(e));
        let one = t.log_density(&xs[..3]).unwrap_err();
        assert!(matches!(one, EvalError::Device { ref device, .. } if device == "cpu"), "{one:?}");
    }

    #[test]
    fn run_chains_stops_with_the_device_error_instead_of_panicking() {
        let t = broken(4, 3);
        let sampler = build_sampler("dmala", &SamplerParams { step_size: Some(0.5), ..Default::default() }).unwrap();
        let x0 = vec![0u32; 4 * 4];
        for threads in [1, 2] {
            let opts = RunOptions { seed: 7, threads, chains_per_task: 0 };
            let err = run_chains(sampler.as_ref(), &t, &x0, 10, &opts, |_, _| ()).err().expect("the run must fail");
            match err {
                SamplerError::Eval(EvalError::Device { device, message }) => {
                    assert_eq!(device, "cpu");
                    assert!(!message.is_empty());
                }
                other => panic!("expected a device error, got {other:?}"),
            }
        }
    }

    /// Evaluates the good model for the first `starts` calls (the two tasks' `start`, which
    /// fill the sampler's caches) and the broken one afterwards, which DMALA's steps call: the
    /// error comes from inside a step.
    struct FailsInSteps {
        good: TensorRbm,
        bad: TensorRbm,
        calls: std::sync::atomic::AtomicUsize,
        starts: usize,
    }

    impl Target for FailsInSteps {
        fn space(&self) -> &Space {
            self.good.space()
        }
        fn evaluate(&self, xs: &[u32], b: Batch<'_>, f: &mut [f64], g: Option<&mut [f64]>) -> Result<(), EvalError> {
            if self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < self.starts {
                return self.good.evaluate(xs, b, f, g);
            }
            self.bad.evaluate(xs, b, f, g)
        }
    }

    #[test]
    fn a_device_error_inside_a_step_stops_the_run() {
        let dev = Device::Cpu;
        let w = Tensor::new(&[[0.5f32, -0.3], [0.2, 0.1], [-0.4, 0.6], [0.3, 0.3]], &dev).unwrap();
        let good = TensorRbm::from_tensors(
            DomainKind::Binary,
            w,
            Tensor::new(&[0.1f32, -0.2, 0.0, 0.3], &dev).unwrap(),
            Tensor::new(&[0.0f32, 0.1], &dev).unwrap(),
        )
        .unwrap();
        let target = FailsInSteps { good, bad: broken(4, 2), calls: 0.into(), starts: 2 };
        let sampler = build_sampler("dmala", &SamplerParams { step_size: Some(2.0), ..Default::default() }).unwrap();
        let x0 = vec![0u32; 8 * 4];
        let opts = RunOptions { seed: 3, threads: 2, chains_per_task: 0 };
        let err = run_chains(sampler.as_ref(), &target, &x0, 50, &opts, |_, _| ()).err().expect("the run must fail");
        assert!(matches!(err, SamplerError::Eval(EvalError::Device { .. })), "{err:?}");
    }

    #[test]
    fn minibatches_are_refused() {
        let t = broken(2, 2);
        let mut f = [0.0];
        assert_eq!(t.evaluate(&[0, 1], Batch::Items(&[0]), &mut f, None), Err(EvalError::NoData));
    }
}
