// Host emulation of kernels/lattice.cu, for tests/device_lattice.rs on machines without a GPU:
// the CUDA source itself is compiled by g++ (C++20) with a shim for the few CUDA features it
// uses — one std::thread per CUDA thread of a block (blocks run one after another), a
// std::barrier for __syncthreads and for the warp shuffles, function statics for __shared__
// arrays, a host buffer for the dynamic shared memory — and driven exactly as
// device_lattice.rs's CUDA backend drives the GPU (layout, launches, arguments). Warp
// reductions take the kernel's __shfl_xor_sync path (__CUDA_ARCH__ is undefined here).
//
// Usage: lattice_emu INPUT > OUTPUT. INPUT (whitespace-separated): rows cols n spin mh steps
// k0 k1 / w b (f64 bit patterns) / 10 thresholds / 10 softplus (f64 bit patterns) / n x d
// bits. OUTPUT: the n x d positions after `steps` steps, then the n accepted counts.
#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <thread>
#include <vector>

using std::min;
struct dlp_emu_dim3 {
    unsigned x = 0, y = 0, z = 0;
};
inline thread_local dlp_emu_dim3 threadIdx;
inline dlp_emu_dim3 blockIdx, blockDim;
inline std::unique_ptr<std::barrier<>> g_block_barrier;
inline std::vector<std::unique_ptr<std::barrier<>>> g_warp_barrier;
inline uint32_t g_warp_slots[32][32];
// The dynamic shared memory of the running launch, allocated at exactly the size the Rust side
// asks for (so that a build with -fsanitize=address catches reads past it).
inline uint8_t* g_dynamic_shared = nullptr;

#define __global__
#define __device__
#define __forceinline__ inline
#define __noinline__
#define __launch_bounds__(x)
#define __restrict__
#define __align__(x)
#define __shared__ static
#define DLP_LAT_DYNAMIC_SHARED(name) uint8_t* name = g_dynamic_shared

inline void __syncthreads() { g_block_barrier->arrive_and_wait(); }
inline uint32_t __umulhi(uint32_t a, uint32_t b) { return (uint32_t)(((uint64_t)a * b) >> 32); }
// Compiled with -ffp-contract=off, so these are single roundings as on the GPU.
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline int __popcll(unsigned long long v) { return __builtin_popcountll(v); }
inline int __ffsll(long long v) { return __builtin_ffsll(v); }
inline uint32_t atomicAdd(uint32_t* p, uint32_t v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
inline uint32_t __shfl_xor_sync(unsigned, uint32_t v, int lane_mask) {
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    g_warp_slots[warp][lane] = v;
    g_warp_barrier[warp]->arrive_and_wait();
    const uint32_t r = g_warp_slots[warp][lane ^ (unsigned)lane_mask];
    g_warp_barrier[warp]->arrive_and_wait();
    return r;
}

#include "lattice.cu"

// Runs `kernel` on `blocks` blocks of `threads` threads with `shared` bytes of dynamic shared
// memory, one block at a time.
template <class F>
void launch(unsigned blocks, unsigned threads, unsigned shared, F kernel) {
    std::vector<uint8_t> dynamic_shared(shared ? shared : 1);
    g_dynamic_shared = dynamic_shared.data();
    blockDim.x = threads;
    for (unsigned b = 0; b < blocks; ++b) {
        blockIdx.x = b;
        g_block_barrier = std::make_unique<std::barrier<>>(threads);
        g_warp_barrier.clear();
        for (unsigned w = 0; w < threads / 32; ++w) g_warp_barrier.push_back(std::make_unique<std::barrier<>>(32));
        std::vector<std::thread> team;
        for (unsigned t = 0; t < threads; ++t) team.emplace_back([t, &kernel] {
            threadIdx.x = t;
            kernel();
        });
        for (auto& t : team) t.join();
    }
}

int main(int argc, char** argv) {
    if (argc != 2) return 2;
    std::ifstream in(argv[1]);
    unsigned rows, cols, n, spin, mh, steps, k0, k1;
    uint64_t wbits, bbits;
    in >> rows >> cols >> n >> spin >> mh >> steps >> k0 >> k1 >> wbits >> bbits;
    double w, b;
    std::memcpy(&w, &wbits, 8);
    std::memcpy(&b, &bbits, 8);
    std::vector<uint64_t> thr(DLP_LAT_CLASSES);
    std::vector<double> softplus(DLP_LAT_CLASSES);
    for (auto& t : thr) in >> t;
    for (auto& s : softplus) {
        uint64_t v;
        in >> v;
        std::memcpy(&s, &v, 8);
    }
    // device_lattice.rs's CUDA layout: chain j's buffer p at (p*n + j)*stride.
    const unsigned d = rows * cols, stride = (d + 15) / 16 * 16;
    std::vector<uint8_t> spins(2 * (size_t)n * stride, 0), parity(n, 0);
    for (unsigned j = 0; j < n; ++j)
        for (unsigned s = 0; s < d; ++s) {
            unsigned v;
            in >> v;
            spins[(size_t)j * stride + s] = (uint8_t)v;
        }
    if (!in) return 3;
    // The initial class histograms, counted here with modular indexing (independently of
    // both the kernels and the Rust side).
    std::vector<uint32_t> hist(DLP_LAT_CLASSES * (size_t)n, 0), stats(DLP_LAT_STATS * (size_t)n, 0);
    std::vector<unsigned long long> accepted(n, 0);
    for (unsigned j = 0; j < n; ++j) {
        const uint8_t* x = &spins[(size_t)j * stride];
        for (unsigned r = 0; r < rows; ++r)
            for (unsigned c = 0; c < cols; ++c) {
                const unsigned up = x[((r + rows - 1) % rows) * cols + c] + x[((r + 1) % rows) * cols + c] +
                                    x[r * cols + (c + cols - 1) % cols] + x[r * cols + (c + 1) % cols];
                hist[(size_t)j * DLP_LAT_CLASSES + 5 * x[r * cols + c] + up]++;
            }
    }
    const unsigned segs = (d + DLP_LAT_SEG - 1) / DLP_LAT_SEG;
    // device_lattice.rs `window`.
    const unsigned window = (DLP_LAT_SEG + 2 * cols + 32 + 15) / 16 * 16;
    for (unsigned t = 0; t < steps; ++t) {
        const unsigned gpar = mh ? 0 : (t & 1);
        launch(n * segs, DLP_LAT_THREADS, window, [&] {
            dlp_lattice_propose(spins.data(), parity.data(), gpar, thr.data(), k0, k1, t, rows, cols, n, stride, segs);
        });
        if (!mh) continue;
        launch(n * segs, DLP_LAT_THREADS, 2 * window, [&] {
            dlp_lattice_stats(spins.data(), parity.data(), stats.data(), spin, rows, cols, n, stride, segs);
        });
        launch((n + DLP_LAT_THREADS - 1) / DLP_LAT_THREADS, DLP_LAT_THREADS, 0, [&] {
            dlp_lattice_accept(parity.data(), hist.data(), stats.data(), accepted.data(), softplus.data(), w, b, spin,
                               k0, k1, t, n);
        });
    }
    const unsigned gpar = mh ? 0 : (steps & 1);
    for (unsigned j = 0; j < n; ++j) {
        const uint8_t* x = &spins[((size_t)(parity[j] ^ gpar) * n + j) * stride];
        for (unsigned s = 0; s < d; ++s) std::printf("%u%c", (unsigned)x[s], s + 1 < d ? ' ' : '\n');
    }
    for (unsigned j = 0; j < n; ++j) {
        const unsigned long long a = mh ? accepted[j] : (unsigned long long)steps;
        std::printf("%llu%c", a, j + 1 < n ? ' ' : '\n');
    }
    return 0;
}
