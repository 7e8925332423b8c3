// Host emulation of kernels/lattice.cu, for tests/device_lattice.rs on machines without a GPU:
// the CUDA source itself is compiled by g++ (C++20) under the shim of cuda_shim.hpp (a fiber
// per CUDA thread, barriers for __syncthreads and the warp reductions, function statics for
// __shared__ arrays, a host buffer for the dynamic shared memory) and driven exactly
// as device_lattice.rs's CUDA backend drives the GPU (layout, launches, arguments). The warp
// sums take the kernel's __reduce_add_sync path (the shim sets __CUDA_ARCH__ to build.rs's
// default target, 900).
//
// Usage: lattice_emu INPUT > OUTPUT. INPUT (whitespace-separated): rows cols n spin mh steps
// k0 k1 / w b (f64 bit patterns) / 10 thresholds / 10 softplus (f64 bit patterns) / n x d
// bits. OUTPUT: the n x d positions after `steps` steps, then the n accepted counts.
#include "cuda_shim.hpp"
#include <cstdio>
#include <fstream>
#include <iostream>

#include "lattice.cu"

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
        dlp_emu_launch(n * segs, DLP_LAT_THREADS, window, [&] {
            dlp_lattice_propose(spins.data(), parity.data(), gpar, thr.data(), k0, k1, t, rows, cols, n, stride, segs);
        });
        if (!mh) continue;
        dlp_emu_launch(n * segs, DLP_LAT_THREADS, 2 * window, [&] {
            dlp_lattice_stats(spins.data(), parity.data(), stats.data(), spin, rows, cols, n, stride, segs);
        });
        dlp_emu_launch((n + DLP_LAT_THREADS - 1) / DLP_LAT_THREADS, DLP_LAT_THREADS, 0, [&] {
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
