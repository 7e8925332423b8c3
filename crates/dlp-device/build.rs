//! With the `cuda` feature: compiles every `kernels/*.cu` to PTX with `nvcc` into `OUT_DIR`
//! (`<stem>.ptx`, embedded by `include_str!` and loaded through candle's CUDA device at run
//! time). Without it (CI, every CPU build): nothing, and no CUDA toolkit is needed.
//!
//! A plain `nvcc --ptx` call rather than a build crate: the kernels are a few self-contained
//! files with one shared header, and candle's own build helper is not a public dependency.
//! The PTX targets `compute_$CUDA_COMPUTE_CAP` (default 90, H100/H200); the driver JIT-compiles
//! it for the GPU it runs on (`../shared/specs/cuda.md` explains the toolchain from PyPI).

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=kernels");
    println!("cargo:rerun-if-env-changed=CUDA_COMPUTE_CAP");
    println!("cargo:rerun-if-env-changed=NVCC");
    if std::env::var_os("CARGO_FEATURE_CUDA").is_none() {
        return;
    }
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let cap = std::env::var("CUDA_COMPUTE_CAP").unwrap_or_else(|_| "90".to_string());
    let nvcc = std::env::var("NVCC").unwrap_or_else(|_| "nvcc".to_string());
    let mut sources: Vec<PathBuf> = std::fs::read_dir("kernels")
        .expect("kernels/ exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "cu"))
        .collect();
    sources.sort();
    for src in sources {
        let stem = src.file_stem().expect("a .cu file has a stem").to_string_lossy().into_owned();
        let ptx = out.join(format!("{stem}.ptx"));
        let status = Command::new(&nvcc)
            .args(["--ptx", "-O3", "-std=c++17", "-Ikernels"])
            .arg(format!("-arch=compute_{cap}"))
            .arg("-o")
            .arg(&ptx)
            .arg(&src)
            .status()
            .unwrap_or_else(|e| panic!("cannot run {nvcc} for {}: {e} (see scripts/cuda_toolchain.sh)", src.display()));
        assert!(status.success(), "{nvcc} failed on {}", src.display());
    }
}
