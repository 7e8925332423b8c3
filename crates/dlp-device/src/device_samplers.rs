//! The registry's samplers on a device: a registry row that names a device kernel
//! (`dlp_samplers::spec::Defaults::device`, a [`DeviceKernel`]) runs as device-resident chains
//! ([`DeviceChains`]) under the same name (`dlp sample --sampler dmala --device cuda:0`,
//! `dlp bench --device`). This module is the one place that maps a kernel and a model to an
//! implementation, by the model's capabilities, never by the sampler's name:
//!
//! | kernel | periodic 2-D Ising lattice (one coupling, one field) | RBM |
//! |---|---|---|
//! | `Dula`, `Dmala` | [`DeviceLattice`] | [`DeviceRbm`] |
//! | `Gibbs`, `BlockGibbs` | — | [`DeviceRbm`] |
//!
//! [`DeviceSampler`] wraps the chains as a `dlp_core::Sampler` (one joint task: the device
//! moves every chain at once), so the runner, the sampling session and its observers (trace,
//! tallies, progress) see them like any host sampler, with one `StepInfo` per chain and step:
//! `accepted` from the chains' acceptance counts, `n_changed` from the positions before and
//! after (copied to the host every step: the price of observing; `dlp bench --device` times
//! [`DeviceChains::step`] alone), `accept_prob` and `n_proposed` from
//! [`DeviceChains::last_proposals`] where the backend keeps them (the lattice CPU twin's
//! DMALA), else the realised decision (1 or 0) and `n_changed`; samplers without an MH test
//! report `accepted`, `accept_prob` 1 and `n_proposed` = `n_changed`. Evaluation counts are
//! those of the host twin's records: DLP one f and one ∇f, single-site Gibbs the two values of
//! the site, block Gibbs one. Device chains draw from Philox streams keyed by (seed, chain)
//! ([`crate::device_chains`]), not from the runner's ChaCha streams, so a device run is
//! reproducible for a seed but is not the host sampler's path.

use crate::device_chains::DeviceChains;
use crate::device_lattice::{DeviceLattice, LatticeSampler};
use crate::device_rbm::{DeviceRbm, RbmSampler};
use candle_core::Device;
use dlp_core::{Batch, ChainRng, Chains, Coupling, DomainKind, EvalError, Sampler, SamplerError, StepInfo, Target};
use dlp_models::Rbm;
use dlp_samplers::SamplerParams;
use dlp_samplers::registry::{DeviceKernel, REGISTRY, find};
use dlp_tensor::{Error, device_name};

/// The device kernel of the registry's sampler `name`; an error naming the samplers that have
/// one when it is unknown or has none.
pub fn device_kernel(name: &str) -> Result<DeviceKernel, SamplerError> {
    let spec = find(name)
        .map(|(spec, _)| spec)
        .ok_or_else(|| SamplerError::UnknownSampler(name.to_string(), dlp_samplers::sampler_names().join(", ")))?;
    spec.defaults.device.ok_or_else(|| SamplerError::BadParameter {
        sampler: name.to_string(),
        message: format!("no device kernel for --device (samplers with one: {})", device_sampler_names().join(", ")),
    })
}

/// The registry's samplers that have a device kernel, in registry order.
pub fn device_sampler_names() -> Vec<String> {
    REGISTRY.iter().filter(|s| s.defaults.device.is_some()).map(|s| s.usage()).collect()
}

/// The device chains of the registry's sampler `name` with `params` (the step size of DULA and
/// DMALA) on `target`, started at the rows of `x0` with the Philox streams of `seed`:
/// `Ok(None)` when the sampler has no device kernel or its kernel has no implementation for
/// this model (module doc), an error for bad parameters or a failing device.
pub fn open(
    name: &str,
    params: &SamplerParams,
    target: &dyn Target,
    x0: &[u32],
    seed: u64,
    device: &Device,
) -> Result<Option<Box<dyn DeviceChains>>, Error> {
    let Some(kernel) = find(name).and_then(|(spec, _)| spec.defaults.device) else {
        return Ok(None);
    };
    open_kernel(kernel, params.step_size, target, x0, seed, device)
}

/// The implementation of `kernel` for `target` (module doc), `Ok(None)` when there is none.
fn open_kernel(
    kernel: DeviceKernel,
    alpha: Option<f64>,
    target: &dyn Target,
    x0: &[u32],
    seed: u64,
    device: &Device,
) -> Result<Option<Box<dyn DeviceChains>>, Error> {
    let alpha = || alpha.ok_or_else(|| Error::Param("the device DLP kernels need a step size (--step-size)".into()));
    let lattice = dlp_samplers::fast::ising::qualifying_model(target)
        .and_then(|v| v.lattice)
        .is_some_and(|l| l.periodic && l.shape.len() == 2);
    if lattice {
        let kind = match kernel {
            DeviceKernel::Dula => LatticeSampler::Dula { alpha: alpha()? },
            DeviceKernel::Dmala => LatticeSampler::Dmala { alpha: alpha()? },
            DeviceKernel::Gibbs | DeviceKernel::BlockGibbs => return Ok(None),
        };
        return Ok(Some(Box::new(DeviceLattice::new(target, kind, x0, seed, device)?)));
    }
    if let Some(view) = target.capabilities().rbm {
        let kind = match kernel {
            DeviceKernel::Dula => RbmSampler::Dula { alpha: alpha()? },
            DeviceKernel::Dmala => RbmSampler::Dmala { alpha: alpha()? },
            DeviceKernel::Gibbs => RbmSampler::Gibbs,
            DeviceKernel::BlockGibbs => RbmSampler::BlockGibbs,
        };
        let domain = if view.spin { DomainKind::Spin } else { DomainKind::Binary };
        let rbm = Rbm::new(domain, view.d, view.m, view.w.to_vec(), view.b.to_vec(), view.c.to_vec())
            .map_err(|e| Error::Param(e.to_string()))?;
        return Ok(Some(Box::new(DeviceRbm::new(&rbm, kind, x0, seed, device)?)));
    }
    Ok(None)
}

/// A registry sampler run as device chains: a `dlp_core::Sampler` whose chains live on
/// `device` and draw from the Philox streams of `seed` (module doc).
pub struct DeviceSampler {
    name: String,
    kernel: DeviceKernel,
    alpha: Option<f64>,
    seed: u64,
    device: Device,
}

impl DeviceSampler {
    /// The registry's sampler `name` on `device`, with `params` (the step size of DULA and
    /// DMALA, required there) and the Philox streams of `seed`; an error when the name is
    /// unknown, has no device kernel, or lacks its step size.
    pub fn new(name: &str, params: &SamplerParams, seed: u64, device: &Device) -> Result<Self, SamplerError> {
        let kernel = device_kernel(name)?;
        let alpha = params.step_size;
        if matches!(kernel, DeviceKernel::Dula | DeviceKernel::Dmala) {
            match alpha {
                Some(a) if a > 0.0 && !a.is_nan() => {}
                Some(a) => {
                    return Err(SamplerError::BadParameter {
                        sampler: name.to_string(),
                        message: format!("step_size (α) must be > 0, got {a}"),
                    });
                }
                None => {
                    return Err(SamplerError::BadParameter {
                        sampler: name.to_string(),
                        message: "step_size (α) is required (--step-size, {0,1} units)".into(),
                    });
                }
            }
        }
        Ok(DeviceSampler { name: name.to_string(), kernel, alpha, seed, device: device.clone() })
    }
}

impl Sampler for DeviceSampler {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn start<'t>(&self, target: &'t dyn Target, x0: &[u32]) -> Result<Box<dyn Chains + 't>, SamplerError> {
        let unsupported = |message: String| SamplerError::Unsupported { sampler: self.name.clone(), message };
        let chains = match open_kernel(self.kernel, self.alpha, target, x0, self.seed, &self.device) {
            Ok(Some(c)) => c,
            Ok(None) => {
                return Err(unsupported(
                    "its device kernel runs on a periodic 2-D Ising lattice with one coupling and one field \
                     (dula, dmala) or on an RBM (dula, dmala, gibbs, block-gibbs)"
                        .into(),
                ));
            }
            Err(Error::Device { device, message }) => {
                return Err(SamplerError::Eval(EvalError::Device { device, message }));
            }
            Err(e) => return Err(unsupported(e.to_string())),
        };
        let (density_evals, grad_evals) = match self.kernel {
            DeviceKernel::Dula | DeviceKernel::Dmala => (1, 1),
            // The two values of the drawn site, as the host `gibbs` counts them.
            DeviceKernel::Gibbs => (2, 0),
            DeviceKernel::BlockGibbs => (1, 0),
        };
        Ok(Box::new(HostView {
            chains,
            positions: x0.to_vec(),
            mh: self.kernel == DeviceKernel::Dmala,
            evals: (density_evals, grad_evals),
            device: device_name(&self.device),
        }))
    }

    /// The device moves every chain at once: one task.
    fn coupling(&self) -> Coupling {
        Coupling::Joint
    }
}

/// Device chains seen by the runner: their positions copied to the host after every step, and
/// one `StepInfo` per chain and step (module doc).
struct HostView {
    chains: Box<dyn DeviceChains>,
    positions: Vec<u32>,
    mh: bool,
    evals: (u32, u32),
    device: String,
}

impl HostView {
    fn device_error(&self, e: candle_core::Error) -> EvalError {
        EvalError::Device { device: self.device.clone(), message: e.to_string() }
    }
}

impl Chains for HostView {
    fn n_chains(&self) -> usize {
        self.chains.n_chains()
    }

    fn positions(&self) -> &[u32] {
        &self.positions
    }

    fn try_step(&mut self, _: &mut [ChainRng], info: &mut [StepInfo], _: Batch<'_>) -> Result<(), EvalError> {
        let before = if self.mh { Some(self.chains.accepted().map_err(|e| self.device_error(e))?) } else { None };
        self.chains.step().map_err(|e| self.device_error(e))?;
        let after = self.chains.positions().map_err(|e| self.device_error(e))?;
        let counts = match before {
            Some(b) => Some((b, self.chains.accepted().map_err(|e| self.device_error(e))?)),
            None => None,
        };
        let proposals = if self.mh { self.chains.last_proposals() } else { None };
        let d = self.chains.dim();
        for (j, rec) in info.iter_mut().enumerate() {
            let row = j * d..(j + 1) * d;
            let changed = self.positions[row.clone()].iter().zip(&after[row]).filter(|(a, b)| a != b).count() as u32;
            let accepted = counts.as_ref().is_none_or(|(b, a)| a[j] > b[j]);
            let (accept_prob, n_proposed) = match (&proposals, self.mh) {
                (Some(p), _) => p[j],
                (None, true) => (f64::from(u8::from(accepted)), changed),
                (None, false) => (1.0, changed),
            };
            *rec = StepInfo {
                accepted,
                accept_prob,
                n_proposed,
                n_changed: changed,
                density_evals: self.evals.0,
                grad_evals: self.evals.1,
                data_evals: 0,
            };
        }
        self.positions = after;
        Ok(())
    }
}
