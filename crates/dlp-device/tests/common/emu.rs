//! The CUDA kernels run on the host: [`build`] compiles a `tests/emu/*.cpp` driver (the kernel
//! source under `tests/emu/cuda_shim.hpp`, see there for what is emulated and how) with g++;
//! [`RbmKernels`] talks to `rbm_emu` (the kernels of `kernels/rbm.cu`, one launch per
//! request); [`EmuRbm`] and [`EmuDlp`] are device_rbm.rs's and device_dlp.rs's CUDA backends
//! (their `gpu` modules: buffers, launch sequence, arguments) with the GPU replaced by those
//! emulated launches and cuBLAS by candle's CPU matmul (the CPU twin's products), so that a
//! step here can be compared bit for bit with the CPU twin's.

use candle_core::{Device, Tensor};
use dlp_device::device_dlp::DlpKind;
use dlp_device::device_rbm::{PURPOSE_HIDDEN, PURPOSE_VISIBLE, RbmSampler};
use dlp_device::philox::key_of_seed;
use dlp_models::Rbm;
use dlp_tensor::DeviceEnergy;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// Compiles `tests/emu/<name>.cpp` (with `kernels/` on the include path) by g++ (or `$CXX`)
/// into `dir`; `None` when there is none: a skip note outside CI and a failure under `CI` or
/// `DLP_REQUIRE_ALL=1` (`.ci/run` installs g++). -O2: every CUDA thread's code runs on one
/// host core; -ffp-contract=off: no fused multiply-adds, every operation rounded as written
/// (the CPU twins' arithmetic); -fcf-protection=none: the shim's fibers switch stacks by
/// longjmp, which a CET shadow stack would refuse, so the binary must not opt into one.
pub fn build(dir: &Path, name: &str) -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let gxx = std::env::var("CXX").unwrap_or_else(|_| "g++".into());
    let need = dlp_core::testing::require::Requirement::new(
        format!("{gxx}, to compile the host emulation of the CUDA kernels (tests/emu/{name}.cpp)"),
        "apt-get install g++",
    );
    if !need.command(&[&gxx, "--version"]) {
        return None;
    }
    let exe = dir.join(name);
    let out = Command::new(&gxx)
        .args(["-std=c++20", "-O2", "-ffp-contract=off", "-fcf-protection=none", "-w"])
        .arg(format!("-I{}", root.join("kernels").display()))
        .arg("-o")
        .arg(&exe)
        .arg(root.join(format!("tests/emu/{name}.cpp")))
        .output()
        .expect("g++ runs");
    assert!(
        out.status.success(),
        "the kernels do not compile under the host shim:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(exe)
}

/// A buffer argument of an emulated launch: read only (its answer is dropped), or f32 / u32
/// written back in place.
pub enum Buf<'a> {
    In(&'a [f32]),
    F(&'a mut [f32]),
    U(&'a mut [u32]),
}

/// The kernels of `kernels/rbm.cu` in a running `rbm_emu` process.
pub struct RbmKernels {
    child: Child,
    stdin: ChildStdin,
    stdout: ChildStdout,
}

/// `rbm_emu`'s kernel numbers.
pub const PROPOSE: u32 = 0;
pub const HIDDEN: u32 = 1;
pub const ACCEPT: u32 = 2;
pub const BERNOULLI: u32 = 3;
pub const GIBBS_SITE: u32 = 4;

impl RbmKernels {
    pub fn start(exe: &Path) -> Self {
        let mut child = Command::new(exe).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("rbm_emu starts");
        let (stdin, stdout) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
        RbmKernels { child, stdin, stdout }
    }

    /// Launches `kernel` on `blocks` blocks with the buffers `bufs` and the scalars `scalars`
    /// (in the kernel's argument order; f32 scalars by their bits) and reads the buffers back.
    pub fn launch(&mut self, kernel: u32, blocks: usize, bufs: &mut [Buf], scalars: &[u32]) {
        let mut req: Vec<u32> = vec![kernel, blocks as u32, bufs.len() as u32];
        for b in bufs.iter() {
            match b {
                Buf::In(v) => req.extend(std::iter::once(v.len() as u32).chain(v.iter().map(|x| x.to_bits()))),
                Buf::F(v) => req.extend(std::iter::once(v.len() as u32).chain(v.iter().map(|x| x.to_bits()))),
                Buf::U(v) => req.extend(std::iter::once(v.len() as u32).chain(v.iter().copied())),
            }
        }
        req.push(scalars.len() as u32);
        req.extend_from_slice(scalars);
        let bytes: Vec<u8> = req.iter().flat_map(|w| w.to_le_bytes()).collect();
        self.stdin.write_all(&bytes).expect("rbm_emu takes the request");
        self.stdin.flush().unwrap();
        for b in bufs.iter_mut() {
            let len = match b {
                Buf::In(v) => v.len(),
                Buf::F(v) => v.len(),
                Buf::U(v) => v.len(),
            };
            let mut raw = vec![0u8; 4 * len];
            if let Err(e) = self.stdout.read_exact(&mut raw) {
                let status = self.child.try_wait();
                panic!("rbm_emu did not answer kernel {kernel}: {e} (exit {status:?})");
            }
            let words = raw.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
            match b {
                Buf::In(_) => {}
                Buf::F(v) => v.iter_mut().zip(words).for_each(|(x, w)| *x = f32::from_bits(w)),
                Buf::U(v) => v.iter_mut().zip(words).for_each(|(x, w)| *x = w),
            }
        }
    }
}

impl Drop for RbmKernels {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// rows (n × k) times `w` (k × ·) by candle's CPU gemm (device_rbm.rs `cpu_product`).
fn product(rows: &[f32], n: usize, k: usize, w: &Tensor) -> Vec<f32> {
    Tensor::from_slice(rows, (n, k), &Device::Cpu).unwrap().matmul(w).unwrap().flatten_all().unwrap().to_vec1().unwrap()
}

/// DMALA's set-up step index (device_rbm.rs `INIT_STEP`).
const INIT_STEP: u32 = u32::MAX;

/// The shared launches of `dlp_rbm_propose` and `dlp_rbm_accept` (device_rbm.rs
/// `launch_propose`, `launch_accept`).
struct Dlp {
    n: usize,
    d: usize,
    hia: f32,
    key: [u32; 2],
}

impl Dlp {
    fn propose(&self, k: &mut RbmKernels, x: &[f32], g: &[f32], b: &[f32], step: u32) -> (Vec<f32>, Vec<f32>) {
        let (mut y, mut logq) = (vec![f32::NAN; self.n * self.d], vec![f32::NAN; self.n]);
        let mut bufs = [Buf::In(x), Buf::In(g), Buf::In(b), Buf::F(&mut y), Buf::F(&mut logq)];
        k.launch(PROPOSE, self.n, &mut bufs, &[self.d as u32, self.hia.to_bits(), self.key[0], self.key[1], step]);
        (y, logq)
    }

    #[allow(clippy::too_many_arguments)]
    fn accept(
        &self,
        k: &mut RbmKernels,
        (x, g, f, count): (&mut [f32], &mut [f32], &mut [f32], &mut [u32]),
        y: &[f32],
        gy: &[f32],
        sp: &[f32],
        logq: &[f32],
        b: &[f32],
        step: u32,
    ) {
        let mut bufs = [
            Buf::F(x),
            Buf::F(g),
            Buf::F(f),
            Buf::U(count),
            Buf::In(y),
            Buf::In(gy),
            Buf::In(sp),
            Buf::In(logq),
            Buf::In(b),
        ];
        k.launch(ACCEPT, self.n, &mut bufs, &[self.d as u32, self.hia.to_bits(), self.key[0], self.key[1], step]);
    }
}

/// device_rbm.rs's CUDA backend (`gpu::GpuState`) on the emulated kernels.
pub struct EmuRbm {
    sampler: RbmSampler,
    dlp: Dlp,
    m: usize,
    w: Tensor,
    wt: Tensor,
    w_host: Vec<f32>,
    b: Vec<f32>,
    c: Vec<f32>,
    x: Vec<f32>,
    g: Vec<f32>,
    f: Vec<f32>,
    a: Vec<f32>,
    count: Vec<u32>,
    steps: u32,
}

impl EmuRbm {
    /// `DeviceRbm::new` on CUDA: the spin fold (restated from device_rbm.rs's module doc:
    /// W̃ = sW, b̃ = sb, c̃ = c − [spin] Σ_i W_i in f64, then f32), the uploads and `start`.
    pub fn new(k: &mut RbmKernels, rbm: &Rbm, sampler: RbmSampler, x0: &[u32], seed: u64) -> Self {
        let (d, m) = (rbm.d(), rbm.m());
        let n = x0.len() / d;
        let hia = match sampler {
            RbmSampler::Dula { alpha } | RbmSampler::Dmala { alpha } => (0.5 / alpha) as f32,
            _ => 0.0,
        };
        let s = rbm.value_scale();
        let w_host: Vec<f32> = rbm.w().iter().map(|&v| (s * v) as f32).collect();
        let wt_host: Vec<f32> = (0..m * d).map(|q| w_host[(q % d) * m + q / d]).collect();
        let b = rbm.b().iter().map(|&v| (s * v) as f32).collect();
        let c = (0..m)
            .map(|j| {
                let shift: f64 = if rbm.is_spin() { (0..d).map(|i| rbm.w()[i * m + j]).sum() } else { 0.0 };
                (rbm.c()[j] - shift) as f32
            })
            .collect();
        let w = Tensor::from_slice(&w_host, (d, m), &Device::Cpu).unwrap();
        let wt = Tensor::from_slice(&wt_host, (m, d), &Device::Cpu).unwrap();
        let mut e = EmuRbm {
            sampler,
            dlp: Dlp { n, d, hia, key: key_of_seed(seed) },
            m,
            w,
            wt,
            w_host,
            b,
            c,
            x: x0.iter().map(|&v| v as f32).collect(),
            g: vec![0.0; n * d],
            f: vec![f32::NEG_INFINITY; n],
            a: Vec::new(),
            count: vec![0; n],
            steps: 0,
        };
        match sampler {
            RbmSampler::BlockGibbs => {}
            RbmSampler::Gibbs => e.a = product(&e.x, n, d, &e.w),
            RbmSampler::Dula { .. } => e.g = e.gradient(k, &e.x.clone()).0,
            RbmSampler::Dmala { .. } => {
                let y = e.x.clone();
                let (gy, sp) = e.gradient(k, &y);
                let logq = vec![f32::NEG_INFINITY; n];
                let st = (&mut e.x[..], &mut e.g[..], &mut e.f[..], &mut e.count[..]);
                e.dlp.accept(k, st, &y, &gy, &sp, &logq, &e.b, INIT_STEP);
                e.count.fill(0);
            }
        }
        e
    }

    /// σ(YW̃ + c̃)W̃ᵀ of the rows `y` and their Σ softplus: gemm, `hidden`, gemm.
    fn gradient(&self, k: &mut RbmKernels, y: &[f32]) -> (Vec<f32>, Vec<f32>) {
        let (n, d, m) = (self.dlp.n, self.dlp.d, self.m);
        let a = product(y, n, d, &self.w);
        let (mut s, mut sp) = (vec![f32::NAN; n * m], vec![f32::NAN; n]);
        k.launch(HIDDEN, n, &mut [Buf::In(&a), Buf::In(&self.c), Buf::F(&mut s), Buf::F(&mut sp)], &[m as u32]);
        (product(&s, n, m, &self.wt), sp)
    }

    fn bernoulli(&self, k: &mut RbmKernels, a: &[f32], bias: &[f32], step: u32, purpose: u32) -> Vec<f32> {
        let (n, key) = (self.dlp.n, self.dlp.key);
        let mut out = vec![f32::NAN; a.len()];
        let scalars = [bias.len() as u32, key[0], key[1], step, purpose];
        k.launch(BERNOULLI, n, &mut [Buf::In(a), Buf::In(bias), Buf::F(&mut out)], &scalars);
        out
    }

    /// `gpu::GpuState::step`.
    pub fn step(&mut self, k: &mut RbmKernels) {
        let (n, d, m, step, key) = (self.dlp.n, self.dlp.d, self.m, self.steps, self.dlp.key);
        match self.sampler {
            RbmSampler::Dmala { .. } => {
                let (y, logq) = self.dlp.propose(k, &self.x, &self.g, &self.b, step);
                let (gy, sp) = self.gradient(k, &y);
                let st = (&mut self.x[..], &mut self.g[..], &mut self.f[..], &mut self.count[..]);
                self.dlp.accept(k, st, &y, &gy, &sp, &logq, &self.b, step);
            }
            RbmSampler::Dula { .. } => {
                let (y, _) = self.dlp.propose(k, &self.x, &self.g, &self.b, step);
                self.g = self.gradient(k, &y).0;
                self.x = y;
            }
            RbmSampler::Gibbs => {
                // device_rbm.rs `refreshes`: every d steps, from step d on.
                if step > 0 && (step as usize).is_multiple_of(d) {
                    self.a = product(&self.x, n, d, &self.w);
                }
                let mut bufs = [
                    Buf::F(&mut self.x),
                    Buf::F(&mut self.a),
                    Buf::In(&self.w_host),
                    Buf::In(&self.b),
                    Buf::In(&self.c),
                ];
                k.launch(GIBBS_SITE, n, &mut bufs, &[d as u32, m as u32, key[0], key[1], step]);
            }
            RbmSampler::BlockGibbs => {
                let a = product(&self.x, n, d, &self.w);
                let h = self.bernoulli(k, &a, &self.c, step, PURPOSE_HIDDEN);
                let v = product(&h, n, m, &self.wt);
                self.x = self.bernoulli(k, &v, &self.b, step, PURPOSE_VISIBLE);
            }
        }
        self.steps += 1;
    }

    /// The positions as bits and the accepted counts (DMALA; the step count otherwise).
    pub fn state(&self) -> (Vec<u32>, Vec<u64>) {
        let counts = match self.sampler {
            RbmSampler::Dmala { .. } => self.count.iter().map(|&c| c as u64).collect(),
            _ => vec![self.steps as u64; self.dlp.n],
        };
        (bits(&self.x), counts)
    }
}

/// The 0/1 floats of a state row as bits; panics on anything else (a kernel wrote garbage).
fn bits(x: &[f32]) -> Vec<u32> {
    x.iter()
        .map(|&v| {
            assert!(v == 0.0 || v == 1.0, "a state holds {v}");
            v as u32
        })
        .collect()
}

/// device_dlp.rs's CUDA backend (`gpu::GpuState`) on the emulated kernels, the model's graph
/// evaluated by candle on the CPU.
pub struct EmuDlp {
    kind: DlpKind,
    dlp: Dlp,
    x: Vec<f32>,
    g: Vec<f32>,
    f: Vec<f32>,
    count: Vec<u32>,
    zeros: Vec<f32>,
    steps: u32,
}

/// f (n) and ∇f (n × d) of the rows `x` by the model's graph, as host vectors.
fn energy_grad(energy: &dyn DeviceEnergy, x: &[f32], n: usize, d: usize) -> (Vec<f32>, Vec<f32>) {
    let (f, g) = energy.energy_grad(&Tensor::from_slice(x, (n, d), &Device::Cpu).unwrap()).unwrap();
    (f.to_vec1().unwrap(), g.flatten_all().unwrap().to_vec1().unwrap())
}

impl EmuDlp {
    pub fn new(energy: &dyn DeviceEnergy, kind: DlpKind, x0: &[u32], seed: u64) -> Self {
        let d = energy.space().d;
        let n = x0.len() / d;
        let (DlpKind::Dula { alpha } | DlpKind::Dmala { alpha }) = kind;
        let x: Vec<f32> = x0.iter().map(|&v| v as f32).collect();
        let (f, g) = energy_grad(energy, &x, n, d);
        let dlp = Dlp { n, d, hia: (0.5 / alpha) as f32, key: key_of_seed(seed) };
        EmuDlp { kind, dlp, x, g, f, count: vec![0; n], zeros: vec![0.0; d], steps: 0 }
    }

    /// `gpu::GpuState::step`.
    pub fn step(&mut self, k: &mut RbmKernels, energy: &dyn DeviceEnergy) {
        let (n, d, step) = (self.dlp.n, self.dlp.d, self.steps);
        let (y, logq) = self.dlp.propose(k, &self.x, &self.g, &self.zeros, step);
        let (fy, gy) = energy_grad(energy, &y, n, d);
        match self.kind {
            DlpKind::Dula { .. } => {
                self.x = y;
                self.g = gy;
            }
            DlpKind::Dmala { .. } => {
                let st = (&mut self.x[..], &mut self.g[..], &mut self.f[..], &mut self.count[..]);
                self.dlp.accept(k, st, &y, &gy, &fy, &logq, &self.zeros, step);
            }
        }
        self.steps += 1;
    }

    /// The positions as bits and the accepted counts (DMALA; the step count for DULA).
    pub fn state(&self) -> (Vec<u32>, Vec<u64>) {
        let counts = match self.kind {
            DlpKind::Dmala { .. } => self.count.iter().map(|&c| c as u64).collect(),
            DlpKind::Dula { .. } => vec![self.steps as u64; self.dlp.n],
        };
        (bits(&self.x), counts)
    }
}
