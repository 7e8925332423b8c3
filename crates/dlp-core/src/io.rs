//! Atomic file writes and one-line messages, shared by every binary and file format of dlp.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Environment variable of the kill-and-resume tests' hook (`reproduce/tests/kill_resume.rs`):
/// `N:MARKER` makes the N-th [`atomic_write`] of the process (1-based) write the first half of
/// its bytes to the temporary file, create the file `MARKER` (holding the destination path)
/// and stall there, so that the test's SIGKILL lands inside a checkpoint write; a stalled write
/// never completes (the process aborts after 60 s if nobody kills it). Unset (always, outside
/// those tests) it costs one environment lookup per write.
pub const STALL_WRITE_ENV: &str = "DLP_TEST_STALL_WRITE";

/// With [`STALL_WRITE_ENV`]: count only the writes whose destination path contains this text
/// (e.g. `.safetensors`, to land in a model checkpoint rather than a JSON file).
pub const STALL_WRITE_MATCH_ENV: &str = "DLP_TEST_STALL_WRITE_MATCH";

/// The data cache of this checkout (`data/cache/`, filled by `just data NAME` and by training
/// recipes such as `just reproduce discs-rbm`), or `$DLP_DATA_CACHE` when set.
pub fn data_cache_dir() -> PathBuf {
    std::env::var_os("DLP_DATA_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/cache"))
}

/// Writes counted by the [`STALL_WRITE_ENV`] hook in this process.
static HOOKED_WRITES: AtomicUsize = AtomicUsize::new(0);

/// The marker file when this write (to `path`) is the one the test hook stalls in.
fn stall_marker(path: &Path) -> Option<String> {
    let spec = std::env::var(STALL_WRITE_ENV).ok()?;
    let (n, marker) = spec.split_once(':')?;
    let n: usize = n.parse().ok()?;
    if let Ok(text) = std::env::var(STALL_WRITE_MATCH_ENV)
        && !path.to_string_lossy().contains(&text)
    {
        return None;
    }
    (HOOKED_WRITES.fetch_add(1, Ordering::SeqCst) + 1 == n).then(|| marker.to_string())
}

/// Writes `bytes` to `path` atomically: a temporary file in the same directory, flushed and
/// synced, then renamed over `path`, so readers never see a partial file and a failure
/// (or an interrupted run) leaves the old file or none. The result has ordinary
/// permissions (0644 before umask), not the temporary file's 0600.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    if let Some(marker) = stall_marker(path) {
        // The test hook: half the bytes are in the temporary file when the kill comes.
        tmp.write_all(&bytes[..bytes.len() / 2])?;
        tmp.flush()?;
        // The marker appears whole (written beside it, then renamed): the test reads it as soon
        // as it exists, and once read an empty one before the write had landed.
        let partial = format!("{marker}.partial");
        std::fs::write(&partial, path.to_string_lossy().as_bytes())?;
        std::fs::rename(&partial, &marker)?;
        std::thread::sleep(std::time::Duration::from_secs(60));
        std::process::abort();
    }
    tmp.write_all(bytes)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file().set_permissions(std::fs::Permissions::from_mode(0o644))?;
    }
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// The OS's reason for an I/O error without the `(os error N)` suffix, for one-line messages
/// such as `error: model.json: cannot read file: No such file or directory`.
pub fn io_reason(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Joins a multi-line message into one line, so that every failure prints exactly one line
/// (`dlp`'s `error:` lines, the Python package's exceptions).
pub fn one_line(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_file_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.txt");
        atomic_write(&path, b"one").unwrap();
        atomic_write(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode & 0o044, 0o044, "result must be readable by others: {mode:o}");
        }
        let err = atomic_write(&dir.path().join("missing/out.txt"), b"x").unwrap_err();
        assert_eq!(io_reason(&err), "No such file or directory");
    }
}
