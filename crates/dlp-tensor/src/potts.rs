//! [`TensorPotts`]: the Potts model of [`dlp_models::PottsModel`] evaluated by candle.
//!
//! With E the d × K one-hot matrix of a state, f(E) = Σ_{i,k} h_ik E_ik + ½ Σ_k (Eᵀ J E)_kk
//! (J symmetric with zero diagonal, so the quadratic term is Σ_{i<j} J_ij [c_i = c_j]). ∇f with
//! respect to E is candle's autograd through E, giving G_i[k] = h_ik + Σ_j J_ij [c_j = k] as
//! the CPU model. Couplings are a dense d × d tensor whatever their sparsity.

use crate::{Error, TensorCommon, TensorModel, build_error, copy_out, device_name, input_grad};
use candle_core::{DType, Device, Tensor, Var};
use dlp_core::{DomainKind, Space, Target};
use dlp_models::PottsModel;

/// Potts model whose f and ∇f (with respect to the one-hot matrix) are computed by candle on a
/// device (see the module doc and the crate doc).
#[derive(Debug)]
pub struct TensorPotts {
    common: TensorCommon,
    device: Device,
    /// J, d × d, symmetric, zero diagonal, f32.
    j: Tensor,
    /// h, d × K, f32.
    h: Tensor,
}

impl TensorPotts {
    /// The Potts model `potts` with its fields and (densified) couplings uploaded as f32 to
    /// `device`.
    pub fn from_potts(potts: &PottsModel, device: &Device) -> Result<Self, Error> {
        let (d, k) = (potts.d(), potts.k());
        let mut j = vec![0f32; d * d];
        for i in 0..d {
            let (ns, ws) = potts.couplings().neighbours_of(i);
            for (&n, &w) in ns.iter().zip(ws) {
                j[i * d + n as usize] = w as f32;
            }
        }
        let h: Vec<f32> = potts.h().iter().map(|&x| x as f32).collect();
        let err = |e| build_error(device, e);
        let j = Tensor::from_vec(j, (d, d), device).map_err(err)?;
        let h = Tensor::from_vec(h, (d, k), device).map_err(err)?;
        Ok(TensorPotts { common: TensorCommon::new(potts.space().clone(), device), device: device.clone(), j, h })
    }

    /// A Potts model on the categorical `space` from tensors already on a device: J (d × d,
    /// symmetric within 1e-6, zero diagonal) and h (d × K), any float dtype (converted to f32),
    /// both on J's device.
    pub fn from_tensors(space: Space, j: Tensor, h: Tensor) -> Result<Self, Error> {
        if space.kind != DomainKind::Categorical || space.d == 0 || space.k() < 2 {
            return Err(Error::Param(format!(
                "the potts model needs a categorical space with d ≥ 1 and K ≥ 2, found {:?} with d = {}, K = {}",
                space.kind,
                space.d,
                space.k()
            )));
        }
        let (d, k) = (space.d, space.k());
        if j.dims() != [d, d] {
            return Err(Error::Param(format!("J must have shape [{d}, {d}] (d × d), found {:?}", j.dims())));
        }
        if h.dims() != [d, k] {
            return Err(Error::Param(format!("h must have shape [{d}, {k}] (d × K), found {:?}", h.dims())));
        }
        let device = j.device().clone();
        if !h.device().same_device(&device) {
            return Err(Error::Param(format!("h is not on J's device {}", device_name(&device))));
        }
        let err = |e| build_error(&device, e);
        let j = j.to_dtype(DType::F32).map_err(err)?;
        let h = h.to_dtype(DType::F32).map_err(err)?;
        let jv = j.to_vec2::<f32>().map_err(err)?;
        for (r, row) in jv.iter().enumerate() {
            if row[r] != 0.0 {
                return Err(Error::Param(format!("J has a nonzero diagonal: J[{r}][{r}] = {}", row[r])));
            }
            for (c, &v) in row.iter().enumerate().skip(r + 1) {
                if (v - jv[c][r]).abs() > 1e-6 {
                    return Err(Error::Param(format!(
                        "J is not symmetric: J[{r}][{c}] = {v}, J[{c}][{r}] = {}",
                        jv[c][r]
                    )));
                }
            }
        }
        Ok(TensorPotts { common: TensorCommon::new(space, &device), device, j, h })
    }

    /// Number of coordinates d.
    pub fn d(&self) -> usize {
        self.common.space.d
    }

    /// Number of classes K.
    pub fn k(&self) -> usize {
        self.common.space.k()
    }

    /// The device the parameters live on and the model is evaluated on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The one-hot matrices (n × d × K, f32) of the index rows `xs`, built on the device from
    /// one upload of the `u32` indices.
    fn one_hot(&self, xs: &[u32], n: usize) -> candle_core::Result<Tensor> {
        let (d, k) = (self.d(), self.k());
        let idx = Tensor::from_slice(xs, (n, d, 1), &self.device)?;
        let classes = Tensor::arange(0u32, k as u32, &self.device)?.reshape((1, 1, k))?;
        idx.broadcast_eq(&classes)?.to_dtype(DType::F32)
    }

    /// f of every one-hot matrix of `e` (n × d × K), shape (n).
    fn forward(&self, e: &Tensor) -> candle_core::Result<Tensor> {
        let (n, d, k) = e.dims3()?;
        // (J E)_{r,i,k} = Σ_j J_ij E_{r,j,k}: one (n·K) × d by d × d product (J = Jᵀ).
        let je = e
            .transpose(1, 2)?
            .contiguous()?
            .reshape((n * k, d))?
            .matmul(&self.j)?
            .reshape((n, k, d))?
            .transpose(1, 2)?;
        let score = je.affine(0.5, 0.0)?.broadcast_add(&self.h)?;
        (e * score)?.sum((1, 2))
    }
}

impl TensorModel for TensorPotts {
    fn common(&self) -> &TensorCommon {
        &self.common
    }

    fn evaluate_full(&self, xs: &[u32], log_density: &mut [f64], grad: Option<&mut [f64]>) -> candle_core::Result<()> {
        let n = log_density.len();
        let e = self.one_hot(xs, n)?;
        match grad {
            None => copy_out(&self.forward(&e)?, log_density),
            Some(g) => {
                let e = Var::from_tensor(&e)?;
                let f = self.forward(e.as_tensor())?;
                copy_out(&f, log_density)?;
                copy_out(&input_grad(&f, &e)?, g)
            }
        }
    }
}

crate::tensor_target!(TensorPotts);
