//! [`ResNetEbm`]: the deep energy-based model of the main paper's §7.3 / Table 1
//! (`reproduction.md` §3.5), an energy on binary H × W images evaluated by candle.
//!
//! log p̃(x) = net(x) + Σ_i [x_i log μ_i + (1 − x_i) log(1 − μ_i)], where net is the ResNet of
//! the official (GWG) code: a 3 × 3 conv 1 → C; `stride2_blocks` residual blocks with stride 2,
//! then `stride1_blocks` with stride 1 (each: conv3×3 → Swish → conv3×3, plus the identity or a
//! 1 × 1-conv shortcut when the stride is 2, then Swish); global average pool; linear C → 1.
//! Swish(z) = z·σ(z) with `candle_nn::ops::sigmoid`, which backpropagates (`bert.md` §1; the
//! fused ops listed there that silently detach are not used, and the tests fail on any `None`
//! gradient).
//!
//! Parameters live in a [`VarMap`] (names `proj.*`, `blocks.<i>.{conv1,conv2,shortcut}.*`,
//! `out.*`), initialised as PyTorch's default (U(±1/√fan_in) for weights and biases) from a
//! seeded dlp stream, never candle's unseeded RNG. As a [`dlp_core::Target`] (through
//! [`TensorModel`]) the model evaluates f and ∇_x f of the whole batch of chains in one
//! forward/backward, with the parameters detached so that sampling does not accumulate
//! parameter gradients; on the CPU its convolutions then skip the kernel gradient candle's
//! backward would otherwise compute (`layers.rs`).

use crate::{Error, TensorCommon, TensorModel, build_error, copy_out, input_grad};
use candle_core::{DType, Device, Tensor, Var};
use candle_nn::VarMap;
use dlp_core::{ChainRng, Space};
use rand::RngExt;
use std::collections::HashMap;

/// Shape of the ResNet energy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResNetConfig {
    /// Channels C of every convolution (paper: 64).
    pub channels: usize,
    /// Residual blocks with stride 2 (paper: 2).
    pub stride2_blocks: usize,
    /// Residual blocks with stride 1 after them (paper: 6).
    pub stride1_blocks: usize,
    /// Image height (MNIST: 28).
    pub height: usize,
    /// Image width (MNIST: 28).
    pub width: usize,
}

impl ResNetConfig {
    /// The paper's network on 28 × 28 MNIST: C = 64, 2 stride-2 and 6 stride-1 blocks.
    pub fn paper() -> Self {
        ResNetConfig { channels: 64, stride2_blocks: 2, stride1_blocks: 6, height: 28, width: 28 }
    }

    /// Number of pixels d = H·W.
    pub fn d(&self) -> usize {
        self.height * self.width
    }

    fn check(&self) -> Result<(), Error> {
        if self.channels == 0 || self.height == 0 || self.width == 0 {
            return Err(Error::Param(format!(
                "ResNet channels, height and width must be ≥ 1, found {} channels, {} × {}",
                self.channels, self.height, self.width
            )));
        }
        Ok(())
    }

    /// Parameter names and shapes, in a fixed order (the order of initialisation and of the
    /// optimiser's state).
    pub fn param_shapes(&self) -> Vec<(String, Vec<usize>)> {
        let c = self.channels;
        let mut out = vec![("proj.weight".to_string(), vec![c, 1, 3, 3]), ("proj.bias".to_string(), vec![c])];
        for i in 0..self.stride2_blocks + self.stride1_blocks {
            for conv in ["conv1", "conv2"] {
                out.push((format!("blocks.{i}.{conv}.weight"), vec![c, c, 3, 3]));
                out.push((format!("blocks.{i}.{conv}.bias"), vec![c]));
            }
            if i < self.stride2_blocks {
                out.push((format!("blocks.{i}.shortcut.weight"), vec![c, c, 1, 1]));
                out.push((format!("blocks.{i}.shortcut.bias"), vec![c]));
            }
        }
        out.push(("out.weight".to_string(), vec![1, c]));
        out.push(("out.bias".to_string(), vec![1]));
        out
    }
}

/// The ResNet energy with a Bernoulli(μ) base term (see the module doc).
pub struct ResNetEbm {
    config: ResNetConfig,
    common: TensorCommon,
    device: Device,
    dtype: DType,
    vars: VarMap,
    names: Vec<String>,
    /// logit μ_i, (d): the base term is x·logit μ + Σ log(1 − μ).
    logit_mu: Tensor,
    base_const: f64,
    mu: Vec<f64>,
}

impl std::fmt::Debug for ResNetEbm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // VarMap has no Debug; the shape and device say which model this is.
        f.debug_struct("ResNetEbm").field("config", &self.config).field("device", &self.common.device_name).finish()
    }
}

/// Which copies of the parameters a forward pass uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Params {
    /// The variables themselves: the graph reaches them (training loss).
    Attached,
    /// Detached copies sharing storage: only the input gets a gradient (sampling).
    Detached,
}

impl ResNetEbm {
    /// A network of shape `config` with base probabilities `mu` (d values in (0, 1)), tensors
    /// of type `dtype` (F32 or F64) on `device`, weights drawn from `rng` (PyTorch's default
    /// initialisation).
    pub fn new(
        config: ResNetConfig,
        mu: &[f64],
        dtype: DType,
        device: &Device,
        rng: &mut ChainRng,
    ) -> Result<Self, Error> {
        config.check()?;
        let mut params = HashMap::new();
        let shapes = config.param_shapes();
        for (name, shape) in shapes.clone() {
            // fan_in of a conv weight [out, in, kh, kw] is in·kh·kw; of linear [out, in], in;
            // a bias shares its layer's weight bound.
            let fan_in: usize = match name.strip_suffix(".bias") {
                Some(layer) => shapes
                    .iter()
                    .find(|(n, _)| *n == format!("{layer}.weight"))
                    .map_or(1, |(_, s)| s[1..].iter().product()),
                None => shape[1..].iter().product(),
            };
            let a = 1.0 / (fan_in as f64).sqrt();
            let n: usize = shape.iter().product();
            let v: Vec<f64> = (0..n).map(|_| rng.random_range(-a..a)).collect();
            let t = Tensor::from_vec(v, shape.as_slice(), device).map_err(|e| build_error(device, e))?;
            params.insert(name, t);
        }
        Self::from_params(config, mu, &params, dtype, device)
    }

    /// A network with the given parameter tensors (every name of
    /// [`ResNetConfig::param_shapes`], with that shape; any float dtype, converted to `dtype`).
    pub fn from_params(
        config: ResNetConfig,
        mu: &[f64],
        params: &HashMap<String, Tensor>,
        dtype: DType,
        device: &Device,
    ) -> Result<Self, Error> {
        config.check()?;
        let d = config.d();
        if mu.len() != d {
            return Err(Error::Param(format!("μ must have d = {d} entries (H·W), found {}", mu.len())));
        }
        if let Some(i) = mu.iter().position(|&m| !(m > 0.0 && m < 1.0)) {
            return Err(Error::Param(format!("μ[{i}] = {} is not in (0, 1)", mu[i])));
        }
        if !matches!(dtype, DType::F32 | DType::F64) {
            return Err(Error::Param(format!("dtype {dtype:?} is not supported (use f32 or f64)")));
        }
        let be = |e| build_error(device, e);
        let vars = VarMap::new();
        let mut names = Vec::new();
        {
            let mut data = vars.data().lock().unwrap_or_else(|p| p.into_inner());
            for (name, shape) in config.param_shapes() {
                let t = params.get(&name).ok_or_else(|| Error::Param(format!("parameter {name} is missing")))?;
                if t.dims() != shape.as_slice() {
                    return Err(Error::Param(format!("parameter {name} has shape {:?}, expected {shape:?}", t.dims())));
                }
                let t = t.to_device(device).and_then(|t| t.to_dtype(dtype)).map_err(be)?;
                data.insert(name.clone(), Var::from_tensor(&t).map_err(be)?);
                names.push(name);
            }
        }
        let logit: Vec<f64> = mu.iter().map(|&m| (m / (1.0 - m)).ln()).collect();
        let logit_mu = Tensor::from_vec(logit, d, device).and_then(|t| t.to_dtype(dtype)).map_err(be)?;
        let base_const = mu.iter().map(|&m| (1.0 - m).ln()).sum();
        let space = Space::binary(d);
        Ok(ResNetEbm {
            config,
            common: TensorCommon::new(space, device),
            device: device.clone(),
            dtype,
            vars,
            names,
            logit_mu,
            base_const,
            mu: mu.to_vec(),
        })
    }

    /// The network's shape.
    pub fn config(&self) -> &ResNetConfig {
        &self.config
    }

    /// The base probabilities μ.
    pub fn mu(&self) -> &[f64] {
        &self.mu
    }

    /// The device the parameters live on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The tensors' type (F32 or F64).
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The parameter variables in [`ResNetConfig::param_shapes`] order.
    pub fn vars(&self) -> Vec<(String, Var)> {
        let data = self.vars.data().lock().unwrap_or_else(|p| p.into_inner());
        self.names.iter().map(|n| (n.clone(), data[n].clone())).collect()
    }

    /// The parameters as a name → tensor map (detached copies).
    pub fn params(&self) -> HashMap<String, Tensor> {
        self.vars().into_iter().map(|(n, v)| (n, v.as_tensor().detach())).collect()
    }

    /// The [`VarMap`] holding the parameters.
    pub fn var_map(&self) -> &VarMap {
        &self.vars
    }

    /// net(x) of the images `x` (n × d, the model's dtype), shape (n).
    pub fn net(&self, x: &Tensor, which: Params) -> candle_core::Result<Tensor> {
        let vars = self.vars();
        let p: HashMap<&str, Tensor> = vars
            .iter()
            .map(|(n, v)| {
                let t = match which {
                    Params::Attached => v.as_tensor().clone(),
                    Params::Detached => v.as_tensor().detach(),
                };
                (n.as_str(), t)
            })
            .collect();
        let conv = |x: &Tensor, name: &str, stride: usize, padding: usize| -> candle_core::Result<Tensor> {
            let w = &p[format!("{name}.weight").as_str()];
            let b = &p[format!("{name}.bias").as_str()];
            // With detached parameters (sampling) the backward skips the kernel gradient.
            crate::layers::conv2d(x, w, Some(b), stride, padding)
        };
        let n = x.dim(0)?;
        let cfg = &self.config;
        let mut h = conv(&x.reshape((n, 1, cfg.height, cfg.width))?, "proj", 1, 1)?;
        for i in 0..cfg.stride2_blocks + cfg.stride1_blocks {
            let stride = if i < cfg.stride2_blocks { 2 } else { 1 };
            let inner = swish(&conv(&h, &format!("blocks.{i}.conv1"), stride, 1)?)?;
            let inner = conv(&inner, &format!("blocks.{i}.conv2"), 1, 1)?;
            let short = if stride == 2 { conv(&h, &format!("blocks.{i}.shortcut"), 2, 0)? } else { h };
            h = swish(&(inner + short)?)?;
        }
        let pooled = h.mean((2, 3))?; // n × C
        crate::layers::linear(&pooled, &p["out.weight"], Some(&p["out.bias"]))?.squeeze(1)
    }

    /// log p̃(x) = net(x) + Bernoulli(μ) log-probability, for images `x` (n × d), shape (n).
    pub fn log_density(&self, x: &Tensor, which: Params) -> candle_core::Result<Tensor> {
        let base = x.broadcast_mul(&self.logit_mu)?.sum(1)?.affine(1.0, self.base_const)?;
        self.net(x, which)? + base
    }

    /// The bit rows `xs` (n × d indices) as a tensor of the model's dtype.
    pub fn bits_tensor(&self, xs: &[u32], n: usize) -> candle_core::Result<Tensor> {
        let bits: Vec<f32> = xs.iter().map(|&v| v as f32).collect();
        Tensor::from_vec(bits, (n, self.config.d()), &self.device)?.to_dtype(self.dtype)
    }
}

/// Swish(z) = z·σ(z) (`layers::swish`: one fused op with a one-pass backward on the CPU,
/// `candle_nn::ops::sigmoid` times z elsewhere; both backpropagate, `bert.md` §1).
pub fn swish(z: &Tensor) -> candle_core::Result<Tensor> {
    crate::layers::swish(z)
}

impl TensorModel for ResNetEbm {
    fn common(&self) -> &TensorCommon {
        &self.common
    }

    fn evaluate_full(&self, xs: &[u32], log_density: &mut [f64], grad: Option<&mut [f64]>) -> candle_core::Result<()> {
        let n = log_density.len();
        let x = self.bits_tensor(xs, n)?;
        match grad {
            None => copy_out(&self.log_density(&x, Params::Detached)?, log_density),
            Some(g) => {
                let x = Var::from_tensor(&x)?;
                let f = self.log_density(x.as_tensor(), Params::Detached)?;
                copy_out(&f, log_density)?;
                copy_out(&input_grad(&f, &x)?, g)
            }
        }
    }
}

crate::tensor_target!(ResNetEbm);

impl crate::DeviceEnergy for ResNetEbm {
    fn device(&self) -> &Device {
        &self.device
    }

    fn space(&self) -> &Space {
        &self.common.space
    }

    /// log p̃ and its input gradient by the graph of `evaluate_full` (detached parameters), in
    /// the model's dtype, returned as f32.
    fn energy_grad(&self, x: &Tensor) -> candle_core::Result<(Tensor, Tensor)> {
        let x = Var::from_tensor(&x.to_dtype(self.dtype)?)?;
        let f = self.log_density(x.as_tensor(), Params::Detached)?;
        let g = input_grad(&f, &x)?.to_dtype(DType::F32)?;
        Ok((f.detach().to_dtype(DType::F32)?, g))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dlp_core::TargetExt;

    use dlp_core::rng::setup_rng;

    /// 6 × 6 images, 4 channels, one stride-2 block (with its 1 × 1 shortcut) and one stride-1
    /// block: every kind of layer of the paper's network, small enough for differences.
    fn tiny() -> ResNetConfig {
        ResNetConfig { channels: 4, stride2_blocks: 1, stride1_blocks: 1, height: 6, width: 6 }
    }

    fn mu(d: usize, seed: u64) -> Vec<f64> {
        let mut rng = setup_rng(seed);
        (0..d).map(|_| rng.random_range(0.05..0.95)).collect()
    }

    fn model(dtype: DType, seed: u64) -> ResNetEbm {
        let c = tiny();
        ResNetEbm::new(c, &mu(c.d(), seed), dtype, &Device::Cpu, &mut setup_rng(seed + 1)).unwrap()
    }

    fn bits(n: usize, d: usize, seed: u64) -> Vec<u32> {
        let mut rng = setup_rng(seed);
        (0..n * d).map(|_| u32::from(rng.random::<f64>() < 0.4)).collect()
    }

    fn rows_f64(m: &ResNetEbm, x: &[f64], n: usize) -> Vec<f64> {
        let t = Tensor::from_vec(x.to_vec(), (n, m.config().d()), &Device::Cpu).unwrap();
        m.log_density(&t, Params::Detached).unwrap().to_vec1::<f64>().unwrap()
    }

    #[test]
    fn input_gradient_matches_central_differences_in_f64() {
        let m = model(DType::F64, 3);
        let (n, d) = (3, m.config().d());
        let xs = bits(n, d, 4);
        let (mut f, mut g) = (vec![0.0; n], vec![0.0; n * d]);
        m.log_density_grad_batch(&xs, &mut f, &mut g).unwrap();
        let x: Vec<f64> = xs.iter().map(|&v| v as f64).collect();
        assert_eq!(f, rows_f64(&m, &x, n), "f of the Target equals the tensor forward");
        let h = 1e-5;
        let mut worst: f64 = 0.0;
        for i in 0..n * d {
            let (mut up, mut dn) = (x.clone(), x.clone());
            up[i] += h;
            dn[i] -= h;
            let r = i / d;
            let fd = (rows_f64(&m, &up, n)[r] - rows_f64(&m, &dn, n)[r]) / (2.0 * h);
            worst = worst.max((fd - g[i]).abs() / (1.0 + fd.abs()));
        }
        // Central differences err by O(h²·f''') ≈ 1e-10 plus rounding ε·|f|/h ≈ 1e-11.
        println!("max relative |∇f − FD| = {worst:.2e}");
        assert!(worst < 1e-7, "input gradient vs finite differences: {worst:e}");
        // The gradient is not trivially the base term's logit μ: the network contributes.
        let logit: Vec<f64> = m.mu().iter().map(|&p| (p / (1.0 - p)).ln()).collect();
        let net_part = (0..n * d).map(|i| (g[i] - logit[i % d]).abs()).fold(0.0, f64::max);
        assert!(net_part > 1e-4, "network part of the gradient {net_part}");
    }

    #[test]
    fn conv_kernel_gradients_match_central_differences_in_f64() {
        // Parameter gradients through stride-2, 1 × 1 and stride-1 convolutions and the head.
        let m = model(DType::F64, 5);
        let (n, d) = (2, m.config().d());
        let x: Vec<f64> = bits(n, d, 6).iter().map(|&v| v as f64).collect();
        let xt = Tensor::from_vec(x, (n, d), &Device::Cpu).unwrap();
        let loss = |m: &ResNetEbm| m.net(&xt, Params::Attached).unwrap().sum_all().unwrap();
        let grads = loss(&m).backward().unwrap();
        let h = 1e-6;
        for (name, var) in m.vars() {
            let g = grads.get(var.as_tensor()).expect("a gradient").flatten_all().unwrap().to_vec1::<f64>().unwrap();
            let p0 = var.as_tensor().copy().unwrap();
            let flat = p0.flatten_all().unwrap().to_vec1::<f64>().unwrap();
            for k in (0..flat.len()).step_by((flat.len() / 5).max(1)) {
                let at = |delta: f64| {
                    let mut v = flat.clone();
                    v[k] += delta;
                    var.set(&Tensor::from_vec(v, p0.dims(), &Device::Cpu).unwrap()).unwrap();
                    loss(&m).to_scalar::<f64>().unwrap()
                };
                let fd = (at(h) - at(-h)) / (2.0 * h);
                var.set(&p0).unwrap();
                assert!((fd - g[k]).abs() <= 1e-6 * (1.0 + fd.abs()), "{name}[{k}]: autograd {} vs FD {fd}", g[k]);
            }
        }
    }

    #[test]
    fn every_parameter_gets_a_gradient_from_the_training_loss() {
        let m = model(DType::F32, 7);
        let d = m.config().d();
        let a = m.bits_tensor(&bits(5, d, 8), 5).unwrap();
        let b = m.bits_tensor(&bits(5, d, 9), 5).unwrap();
        let loss = (m.net(&b, Params::Attached).unwrap().mean_all().unwrap()
            - m.net(&a, Params::Attached).unwrap().mean_all().unwrap())
        .unwrap();
        let grads = loss.backward().unwrap();
        let vars = m.vars();
        assert_eq!(vars.len(), 2 + 2 * 4 + 2 + 2, "proj, two blocks of two convs, one shortcut, head");
        for (name, var) in vars {
            let g = grads.get(var.as_tensor()).unwrap_or_else(|| panic!("{name}: no gradient (detached)"));
            let norm = g.sqr().unwrap().sum_all().unwrap().to_scalar::<f32>().unwrap();
            // The head's bias cancels in a difference of means: its gradient is exactly 0.
            let nonzero = name != "out.bias";
            assert!(norm.is_finite() && (norm > 0.0) == nonzero, "{name}: gradient norm² {norm}");
        }
        // Sampling uses detached parameters: the input gradient only.
        let f = m.log_density(&a, Params::Detached).unwrap().sum_all().unwrap();
        let x = Var::from_tensor(&a).unwrap();
        let g = m.log_density(x.as_tensor(), Params::Detached).unwrap().sum_all().unwrap().backward().unwrap();
        assert!(g.get(x.as_tensor()).is_some());
        assert!(m.vars().iter().all(|(_, v)| g.get(v.as_tensor()).is_none()));
        assert!(f.to_scalar::<f32>().unwrap().is_finite());
    }

    #[test]
    fn f32_and_f64_models_agree() {
        let m64 = model(DType::F64, 11);
        let m32 = ResNetEbm::from_params(*m64.config(), m64.mu(), &m64.params(), DType::F32, &Device::Cpu).unwrap();
        let (n, d) = (4, m64.config().d());
        let xs = bits(n, d, 12);
        let (mut f64s, mut g64) = (vec![0.0; n], vec![0.0; n * d]);
        let (mut f32s, mut g32) = (vec![0.0; n], vec![0.0; n * d]);
        m64.log_density_grad_batch(&xs, &mut f64s, &mut g64).unwrap();
        m32.log_density_grad_batch(&xs, &mut f32s, &mut g32).unwrap();
        let rel =
            |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| (x - y).abs() / (1.0 + y.abs())).fold(0.0, f64::max);
        let (ef, eg) = (rel(&f32s, &f64s), rel(&g32, &g64));
        println!("f32 vs f64: f {ef:.1e}, ∇f {eg:.1e}");
        assert!(ef < 1e-5 && eg < 1e-5, "f {ef:e}, grad {eg:e}");
    }

    #[test]
    fn bad_parameters_are_one_line_errors() {
        let c = tiny();
        let dev = Device::Cpu;
        let e = ResNetEbm::new(c, &vec![0.5; 35], DType::F32, &dev, &mut setup_rng(0)).unwrap_err();
        assert!(e.to_string().contains("d = 36"), "{e}");
        let mut m = vec![0.5; 36];
        m[3] = 1.0;
        let e = ResNetEbm::new(c, &m, DType::F32, &dev, &mut setup_rng(0)).unwrap_err();
        assert!(e.to_string().contains("μ[3] = 1"), "{e}");
        let e = ResNetEbm::new(ResNetConfig { channels: 0, ..c }, &[0.5; 36], DType::F32, &dev, &mut setup_rng(0));
        assert!(e.is_err());
        let mut p = model(DType::F32, 1).params();
        p.remove("out.bias");
        let e = ResNetEbm::from_params(c, &[0.5; 36], &p, DType::F32, &dev).unwrap_err();
        assert!(e.to_string().contains("out.bias is missing"), "{e}");
    }

    #[test]
    fn the_paper_network_has_the_papers_shape() {
        let c = ResNetConfig::paper();
        let n: usize = c.param_shapes().iter().map(|(_, s)| s.iter().product::<usize>()).sum();
        // proj 640 + 8 blocks × 2 × (36,864 + 64) + 2 shortcuts × (4,096 + 64) + head 65.
        assert_eq!(n, 640 + 8 * 2 * (36_864 + 64) + 2 * (4_096 + 64) + 65);
        let m = ResNetEbm::new(c, &vec![0.1; 784], DType::F32, &Device::Cpu, &mut setup_rng(0)).unwrap();
        let xs = bits(2, 784, 1);
        let (mut f, mut g) = (vec![0.0; 2], vec![0.0; 2 * 784]);
        m.log_density_grad_batch(&xs, &mut f, &mut g).unwrap();
        assert!(f.iter().chain(&g).all(|v| v.is_finite()));
    }
}
