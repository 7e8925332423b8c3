// DULA / DMALA on a periodic R x C Ising lattice (one coupling, one field, spin or binary):
// the CUDA kernels of crates/dlp-device/src/device_lattice.rs. Each kernel has a CPU twin
// there that computes the same function (same Philox counters and purposes, same integer
// thresholds, the same f64 expression in the same order); keep the two in step.
//
// Layout: spins are bytes 0/1; chain j's buffer p (p = 0, 1) starts at (p*n + j)*stride
// (stride = d rounded up to 16); the current buffer of chain j is parity[j] ^ gpar (DULA
// passes the step's parity as gpar and never changes parity[]; DMALA passes gpar = 0 and the
// accept kernel flips parity[j]). Site s = r*C + c, row-major.
//
// Blocking: a block of DLP_LAT_THREADS threads owns DLP_LAT_SEG consecutive sites of one
// chain (blockIdx.x = j*segs + seg); it copies them plus one row above and below (wrapped mod
// d) into shared memory, the segment 8-byte aligned; thread t handles the 8 sites 8t..8t+7 of
// the segment, whose 16-bit draws are the 8 halves of the one Philox block of index s/8, and
// computes their 8 classes at once as bytes of a 64-bit word (SWAR: the four neighbour rows
// are shifted 64-bit words of the window, added lane by lane; lanes never carry since a
// class is at most 9).
#include "philox.cuh"

#define DLP_LAT_THREADS 128
#define DLP_LAT_SITES 8
#define DLP_LAT_SEG (DLP_LAT_THREADS * DLP_LAT_SITES)
#define DLP_LAT_CLASSES 10
#define DLP_LAT_STATS (DLP_LAT_CLASSES + 2)
#define DLP_PURPOSE_PROPOSE 0u
#define DLP_PURPOSE_TIE 1u
#define DLP_PURPOSE_MH 2u
#define DLP_LOW48 0xFFFFFFFFFFFFull

// The dynamic shared memory of a kernel (a macro so that the host emulation of these kernels,
// tests/emu/lattice_emu.cpp, can point it at a host buffer).
#ifndef DLP_LAT_DYNAMIC_SHARED
#define DLP_LAT_DYNAMIC_SHARED(name) extern __shared__ __align__(16) uint8_t name[]
#endif

// Bytes of one shared window (the Rust side's `window`, which sizes the dynamic shared
// memory): the segment at offset dlp_lat_off(cols) = C rounded up to 8, the row above before
// it, the row below after it, and slack for the 64-bit reads past the last group.
__device__ __forceinline__ int dlp_lat_window(int cols) {
    return (DLP_LAT_SEG + 2 * cols + 32 + 15) & ~15;
}

__device__ __forceinline__ int dlp_lat_off(int cols) {
    return (cols + 7) & ~7;
}

// Fills the window of chain buffer x for the segment [base, base + len): site base + i
// (-C <= i < len + C, wrapped mod d; every index is within one period since C < d and
// base + len <= d) goes to win[off + i]. Each thread copies its own 8 segment bytes with one
// aligned 64-bit load (the buffer is 16-byte aligned, base and 8t multiples of 8); the two
// halo rows are copied byte by byte.
__device__ __forceinline__ void dlp_lat_load_window(uint8_t* win, const uint8_t* __restrict__ x, int base,
                                                    int len, int cols, int d) {
    const int off = dlp_lat_off(cols), i0 = DLP_LAT_SITES * (int)threadIdx.x;
    if (i0 + DLP_LAT_SITES <= len) {
        *reinterpret_cast<uint64_t*>(win + off + i0) = *reinterpret_cast<const uint64_t*>(x + base + i0);
    } else {
        for (int i = i0; i < len; ++i) win[off + i] = x[base + i];
    }
    for (int h = threadIdx.x; h < 2 * cols; h += blockDim.x) {
        const int i = h < cols ? h - cols : len + (h - cols);
        int v = base + i;
        if (v < 0) v += d;
        else if (v >= d) v -= d;
        win[off + i] = x[v];
    }
}

// The 8 window bytes at a >= 0 (any alignment) as a little-endian 64-bit word, from the one or
// two aligned words covering them (a mod 8 is the same for every thread of a block).
__device__ __forceinline__ uint64_t dlp_lat_load8(const uint8_t* win, int a) {
    const int base = a & ~7, sh = 8 * (a & 7);
    const uint64_t w0 = *reinterpret_cast<const uint64_t*>(win + base);
    if (sh == 0) return w0;
    const uint64_t w1 = *reinterpret_cast<const uint64_t*>(win + base + 8);
    return (w0 >> sh) | (w1 << (64 - sh));
}

// The classes 5*x + up of the 8 sites at window offset p (a multiple of 8; centre = their
// bytes, the 8 bytes at p) as the bytes of one word; c0 is the column of the first, m the
// number of valid lanes (the lanes >= m hold garbage, which only carries upwards). The
// neighbours of lane q are the lanes of the rows above and below, and its left/right lanes
// (the bytes at p - 1 and p + 8 at the ends), fixed up where a row wraps: a site in column 0
// has its left neighbour at s + C - 1, not s - 1, and one in column C - 1 its right one at
// s - C + 1, not s + 1 (lane sums are at most 4, so the fix-ups never borrow).
__device__ __forceinline__ uint64_t dlp_lat_classes8(const uint8_t* win, int p, uint64_t centre, int c0, int m,
                                                     int cols) {
    const uint64_t left = (centre << 8) | (uint64_t)win[p - 1];
    const uint64_t right = (centre >> 8) | ((uint64_t)win[p + 8] << 56);
    uint64_t up = dlp_lat_load8(win, p - cols) + dlp_lat_load8(win, p + cols) + left + right;
    for (int q = (cols - c0) % cols; q < m; q += cols)
        up += ((uint64_t)win[p + q + cols - 1] << (8 * q)) - ((uint64_t)win[p + q - 1] << (8 * q));
    for (int q = cols - 1 - c0; q < m; q += cols)
        up += ((uint64_t)win[p + q - cols + 1] << (8 * q)) - ((uint64_t)win[p + q + 1] << (8 * q));
    return (centre << 2) + centre + up;
}

// s * (sum of the neighbours' u) of class k (device_lattice.rs `class_ints(k).3`).
__device__ __forceinline__ int dlp_lat_snb(uint32_t k, uint32_t spin) {
    const int x = k >= 5u ? 1 : 0, up = (int)k - 5 * x;
    const int nsum = spin ? 2 * up - 4 : up;
    return (1 - 2 * x) * nsum;
}

// The 48 tie-break bits of site s (probability 2^-16 per site, so kept out of line).
__device__ __noinline__ uint64_t dlp_lat_tie(uint32_t k0, uint32_t k1, uint32_t chain, uint32_t step, uint32_t s) {
    const dlp_u32x4 t = dlp_philox_block(k0, k1, chain, step, DLP_PURPOSE_TIE, s);
    return dlp_u64_of(t.x, t.y) >> 16;
}

// The proposal y of every chain from its current buffer x (DULA's step, DMALA's proposal):
// twin of device_lattice.rs `propose_chain`. Dynamic shared memory: dlp_lat_window(cols).
extern "C" __global__ void __launch_bounds__(DLP_LAT_THREADS)
dlp_lattice_propose(uint8_t* spins, const uint8_t* __restrict__ parity, uint32_t gpar,
                    const uint64_t* __restrict__ thr, uint32_t k0, uint32_t k1, uint32_t step, uint32_t rows,
                    uint32_t cols, uint32_t n, uint32_t stride, uint32_t segs) {
    DLP_LAT_DYNAMIC_SHARED(dlp_lat_smem);
    __shared__ uint32_t s_hi[DLP_LAT_CLASSES];
    __shared__ uint64_t s_lo[DLP_LAT_CLASSES];
    const uint32_t j = blockIdx.x / segs, seg = blockIdx.x - j * segs;
    const int C = (int)cols, d = (int)(rows * cols);
    const int base = (int)seg * DLP_LAT_SEG;
    const int len = min(DLP_LAT_SEG, d - base);
    const uint32_t cur = (uint32_t)parity[j] ^ gpar;
    const uint8_t* x = spins + ((size_t)cur * n + j) * stride;
    uint8_t* y = spins + ((size_t)(cur ^ 1u) * n + j) * stride;
    if (threadIdx.x < DLP_LAT_CLASSES) {
        const uint64_t t = thr[threadIdx.x];
        s_hi[threadIdx.x] = (uint32_t)(t >> 48);
        s_lo[threadIdx.x] = t & DLP_LOW48;
    }
    dlp_lat_load_window(dlp_lat_smem, x, base, len, C, d);
    __syncthreads();
    const int i0 = DLP_LAT_SITES * (int)threadIdx.x, s0 = base + i0;
    if (i0 >= len) return;  // no barrier follows
    const dlp_u32x4 blk = dlp_philox_block(k0, k1, j, step, DLP_PURPOSE_PROPOSE, (uint32_t)s0 / DLP_LAT_SITES);
    const uint32_t words[4] = {blk.x, blk.y, blk.z, blk.w};
    const int m = min(DLP_LAT_SITES, len - i0);
    const int p = dlp_lat_off(C) + i0;
    const uint64_t centre = *reinterpret_cast<const uint64_t*>(dlp_lat_smem + p);
    const uint64_t cls = dlp_lat_classes8(dlp_lat_smem, p, centre, s0 % C, m, C);
    uint64_t flips = 0;
#pragma unroll
    for (int q = 0; q < DLP_LAT_SITES; ++q) {
        if (q < m) {
            const uint32_t k = (uint32_t)(cls >> (8 * q)) & 0xFFu;
            const uint32_t r16 = (words[q >> 1] >> (16 * (q & 1))) & 0xFFFFu;
            const uint32_t hi = s_hi[k];
            bool flip = r16 < hi;
            if (r16 == hi) flip = dlp_lat_tie(k0, k1, j, step, (uint32_t)(s0 + q)) < s_lo[k];
            flips |= (uint64_t)flip << (8 * q);
        }
    }
    const uint64_t out = centre ^ flips;
    if (m == DLP_LAT_SITES) {
        // y + s0 is 8-byte aligned: the allocation is, stride is a multiple of 16, s0 of 8.
        *reinterpret_cast<uint64_t*>(y + s0) = out;
    } else {
        for (int q = 0; q < m; ++q) y[s0 + q] = (uint8_t)(out >> (8 * q));
    }
}

// Sum over the 32 lanes of a warp (all active).
__device__ __forceinline__ uint32_t dlp_lat_warp_sum(uint32_t v) {
#if __CUDA_ARCH__ >= 800
    return __reduce_add_sync(0xFFFFFFFFu, v);
#else
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, o);
    return v;
#endif
}

// DMALA's counters of every chain's proposal (x = current buffer, y = the other), added
// into stats[j*12 ..]: the class histogram at y (10), sb (two's complement) and the number
// of flips. Twin of device_lattice.rs `stats_chain`. Dynamic shared memory:
// 2 * dlp_lat_window(cols). The accept kernel zeroes the counters after reading them.
extern "C" __global__ void __launch_bounds__(DLP_LAT_THREADS)
dlp_lattice_stats(const uint8_t* __restrict__ spins, const uint8_t* __restrict__ parity,
                  uint32_t* __restrict__ stats, uint32_t spin, uint32_t rows, uint32_t cols, uint32_t n,
                  uint32_t stride, uint32_t segs) {
    DLP_LAT_DYNAMIC_SHARED(dlp_lat_smem);
    __shared__ uint32_t s_cnt[DLP_LAT_STATS];
    const uint32_t j = blockIdx.x / segs, seg = blockIdx.x - j * segs;
    const int C = (int)cols, d = (int)(rows * cols);
    const int base = (int)seg * DLP_LAT_SEG;
    const int len = min(DLP_LAT_SEG, d - base);
    const uint32_t cur = (uint32_t)parity[j];
    uint8_t* wx = dlp_lat_smem;
    uint8_t* wy = dlp_lat_smem + dlp_lat_window(C);
    if (threadIdx.x < DLP_LAT_STATS) s_cnt[threadIdx.x] = 0;
    dlp_lat_load_window(wx, spins + ((size_t)cur * n + j) * stride, base, len, C, d);
    dlp_lat_load_window(wy, spins + ((size_t)(cur ^ 1u) * n + j) * stride, base, len, C, d);
    __syncthreads();
    // Class counts of this thread's <= 8 sites, 6 bits per class (at most 8 per field).
    uint64_t packed = 0;
    int sb = 0;
    uint32_t flips = 0;
    const int i0 = DLP_LAT_SITES * (int)threadIdx.x;
    if (i0 < len) {
        const int m = min(DLP_LAT_SITES, len - i0), c0 = (base + i0) % C;
        const int p = dlp_lat_off(C) + i0;
        const uint64_t xc = *reinterpret_cast<const uint64_t*>(wx + p);
        const uint64_t yc = *reinterpret_cast<const uint64_t*>(wy + p);
        const uint64_t ky = dlp_lat_classes8(wy, p, yc, c0, m, C);
        for (int q = 0; q < m; ++q) packed += 1ull << (6u * ((uint32_t)(ky >> (8 * q)) & 0xFFu));
        // Flipped lanes: x ^ y is 0/1 per valid lane.
        uint64_t fm = (xc ^ yc) & (m == DLP_LAT_SITES ? ~0ull : (1ull << (8 * m)) - 1);
        flips = (uint32_t)__popcll(fm);
        if (fm != 0) {
            const uint64_t kx = dlp_lat_classes8(wx, p, xc, c0, m, C);
            while (fm != 0) {
                const int sh = __ffsll((long long)fm) - 1;  // 8 * lane
                sb += dlp_lat_snb((uint32_t)(ky >> sh) & 0xFFu, spin) - dlp_lat_snb((uint32_t)(kx >> sh) & 0xFFu, spin);
                fm &= fm - 1;
            }
        }
    }
    // Every thread reaches the reductions (no early return above).
    const bool lane0 = (threadIdx.x & 31u) == 0;
#pragma unroll
    for (int k = 0; k < DLP_LAT_CLASSES; ++k) {
        const uint32_t v = dlp_lat_warp_sum((uint32_t)(packed >> (6 * k)) & 63u);
        if (lane0 && v != 0) atomicAdd(&s_cnt[k], v);
    }
    const uint32_t vsb = dlp_lat_warp_sum((uint32_t)sb);
    const uint32_t vfl = dlp_lat_warp_sum(flips);
    if (lane0) {
        if (vsb != 0) atomicAdd(&s_cnt[DLP_LAT_CLASSES], vsb);
        if (vfl != 0) atomicAdd(&s_cnt[DLP_LAT_CLASSES + 1], vfl);
    }
    __syncthreads();
    if (threadIdx.x < DLP_LAT_STATS) {
        const uint32_t v = s_cnt[threadIdx.x];
        if (v != 0) atomicAdd(&stats[(size_t)j * DLP_LAT_STATS + threadIdx.x], v);
    }
}

// DMALA's MH test, one thread per chain: twin of device_lattice.rs `accept_chain` and
// `DeviceLattice::ratio` (the same f64 expression in the same order; the _rn intrinsics keep
// nvcc from contracting it into fused multiply-adds, which Rust does not do).
extern "C" __global__ void __launch_bounds__(DLP_LAT_THREADS)
dlp_lattice_accept(uint8_t* __restrict__ parity, uint32_t* __restrict__ hist, uint32_t* __restrict__ stats,
                   unsigned long long* __restrict__ accepted, const double* __restrict__ softplus, double w,
                   double b, uint32_t spin, uint32_t k0, uint32_t k1, uint32_t step, uint32_t n) {
    const uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    uint32_t* st = stats + (size_t)j * DLP_LAT_STATS;
    uint32_t* h = hist + (size_t)j * DLP_LAT_CLASSES;
    uint32_t cnt[DLP_LAT_STATS];
#pragma unroll
    for (int k = 0; k < DLP_LAT_STATS; ++k) {
        cnt[k] = st[k];
        st[k] = 0;
    }
    if (cnt[DLP_LAT_CLASSES + 1] == 0) {  // the proposal is x: it stays, counted as accepted
        accepted[j] += 1;
        return;
    }
    long long de2 = 0, dm = 0, sa = 0;
    double lq = 0.0;
#pragma unroll
    for (int k = 0; k < DLP_LAT_CLASSES; ++k) {
        const long long dh = (long long)cnt[k] - (long long)h[k];
        const long long x = k >= 5 ? 1 : 0, up = k - 5 * x;
        const long long nsum = spin ? 2 * up - 4 : up;
        const long long u = spin ? 2 * x - 1 : x;
        de2 += dh * (u * nsum);
        dm += dh * u;
        sa += dh * (1 - 2 * x);
        if (dh != 0) lq = __dsub_rn(lq, __dmul_rn((double)dh, softplus[k]));
    }
    const long long sb = (long long)(int)cnt[DLP_LAT_CLASSES];
    const double half_c = spin ? 1.0 : 0.5;
    lq = __dadd_rn(lq, __dmul_rn(half_c, __dadd_rn(__dmul_rn(b, (double)sa), __dmul_rn(w, (double)sb))));
    const double df = __dadd_rn(__dmul_rn(__dmul_rn(0.5, w), (double)de2), __dmul_rn(b, (double)dm));
    const double a = __dadd_rn(df, lq);
    const dlp_u32x4 blk = dlp_philox_block(k0, k1, j, step, DLP_PURPOSE_MH, 0u);
    const double u = dlp_u01_of_u64(dlp_u64_of(blk.x, blk.y));
    if (log(u) < a) {
        parity[j] ^= 1u;
#pragma unroll
        for (int k = 0; k < DLP_LAT_CLASSES; ++k) h[k] = cnt[k];
        accepted[j] += 1;
    }
}
