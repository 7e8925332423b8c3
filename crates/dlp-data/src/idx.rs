//! The IDX format: magic `0x0000 TT NN` (TT = 0x08 for u8, NN = number of dimensions),
//! NN big-endian u32 sizes, then the row-major payload.

use crate::DataError;
use std::io::{Read, Write};
use std::path::Path;

/// A u8 IDX array: its sizes (first dimension = items) and row-major payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdxArray {
    /// Sizes, outermost first (`[60000, 28, 28]` for MNIST training images).
    pub dims: Vec<usize>,
    /// Payload, `dims.iter().product()` bytes.
    pub data: Vec<u8>,
}

impl IdxArray {
    /// Number of items (the first dimension).
    pub fn n_items(&self) -> usize {
        self.dims.first().copied().unwrap_or(0)
    }

    /// Bytes per item (the product of the other dimensions).
    pub fn item_len(&self) -> usize {
        self.dims.iter().skip(1).product()
    }
}

fn format_err(what: &str, message: String) -> DataError {
    DataError::Format { what: what.to_string(), message }
}

/// Reads one u8 IDX array from `r`, which must end with it; `what` names the source in errors.
pub fn read_idx<R: Read>(mut r: R, what: &str) -> Result<IdxArray, DataError> {
    let a = read_idx_item(&mut r, what)?;
    let mut extra = [0u8; 1];
    let n = r.read(&mut extra).map_err(|e| format_err(what, format!("unreadable: {e}")))?;
    if n != 0 {
        return Err(format_err(what, format!("trailing bytes after the {}-byte payload", a.data.len())));
    }
    Ok(a)
}

/// Reads one u8 IDX array from `r`, leaving whatever follows it unread.
pub fn read_idx_item<R: Read>(mut r: R, what: &str) -> Result<IdxArray, DataError> {
    let io = |e: std::io::Error| format_err(what, format!("truncated or unreadable: {e}"));
    let mut magic = [0u8; 4];
    r.read_exact(&mut magic).map_err(io)?;
    if magic[0] != 0 || magic[1] != 0 || magic[2] != 0x08 || magic[3] == 0 || magic[3] > 4 {
        return Err(format_err(
            what,
            format!("bad magic 0x{:08x} (expected 0x0000080N, u8 data, 1 ≤ N ≤ 4)", u32::from_be_bytes(magic)),
        ));
    }
    let mut dims = Vec::with_capacity(magic[3] as usize);
    for _ in 0..magic[3] {
        let mut b = [0u8; 4];
        r.read_exact(&mut b).map_err(io)?;
        dims.push(u32::from_be_bytes(b) as usize);
    }
    let len: usize = dims.iter().product();
    let mut data = vec![0u8; len];
    r.read_exact(&mut data).map_err(io)?;
    Ok(IdxArray { dims, data })
}

/// Reads an IDX file, gunzipping it when the name ends in `.gz`.
pub fn read_idx_file(path: &Path) -> Result<IdxArray, DataError> {
    let what = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|source| DataError::Io { path: what.clone(), source })?;
    let reader = std::io::BufReader::new(file);
    if path.extension().is_some_and(|e| e == "gz") {
        read_idx(flate2::read::GzDecoder::new(reader), &what)
    } else {
        read_idx(reader, &what)
    }
}

/// Writes `data` with sizes `dims` as a u8 IDX array.
pub fn write_idx<W: Write>(mut w: W, dims: &[usize], data: &[u8]) -> std::io::Result<()> {
    assert!((1..=4).contains(&dims.len()), "IDX arrays have 1 to 4 dimensions");
    assert_eq!(dims.iter().product::<usize>(), data.len(), "payload does not match the sizes");
    w.write_all(&[0, 0, 0x08, dims.len() as u8])?;
    for &n in dims {
        w.write_all(&(n as u32).to_be_bytes())?;
    }
    w.write_all(data)
}
