//! Process-wide memory settings.

/// Makes glibc's allocator keep freed memory for reuse: blocks of up to 1 GiB come from the
/// heap instead of their own mapping (by default blocks over 32 MiB are mapped and unmapped
/// on every allocation), and the heap is never trimmed. candle allocates a fresh buffer for
/// every op's output, so at the Table 1 ResNet's size (batch 100, 64 channels: 20 MB per
/// 28 × 28 activation) each op otherwise maps new pages and faults them in; on this project's
/// 2-core machine that was a quarter of the energy gradient's time (`examples/ebm_bench.rs`,
/// `paper/table1.md`). Trimming is off, not merely raised: a BERT gradient's live memory
/// passes 1 GiB, so with a 1 GiB trim threshold the heap's top was handed back after every
/// evaluation and faulted in again in the next (≈ 640,000 page faults per forward + gradient
/// at 25 chains × 96 tokens, `examples/bert_bench.rs`). The price is a resident size that
/// stays at its peak. Values are unchanged. Process-wide, so binaries call it once at start
/// (the reproduction runs and `dlp`); a no-op off glibc. It lives here, not with the tensor
/// code, so that a reproduction built without candle behaves the same.
pub fn keep_freed_buffers() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters; both are documented glibc options and
    // take effect for later allocations (a trim threshold of -1 disables trimming, mallopt(3)).
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 30);
        libc::mallopt(libc::M_TRIM_THRESHOLD, -1);
    }
}
