// Host emulation of kernels/rbm.cu (with philox.cuh), for tests/device_rbm.rs and
// tests/device_dlp.rs on machines without a GPU: the CUDA source itself compiled by g++ under
// cuda_shim.hpp, each launch one block of DLP_THREADS threads per chain, as device_rbm.rs's
// `gpu` module launches it. The test drives the launches one at a time — the products between
// them are the Rust side's (candle's CPU matmul, as in the CPU twin), so a step here is the
// CUDA backend's sequence of launches with the kernels replaced by their CUDA source.
//
// Protocol: a stream of launches on stdin, each answered on stdout; all words little-endian
// u32 (f32 values by their bits). Request: kernel (0 propose, 1 hidden, 2 accept, 3 bernoulli,
// 4 gibbs_site), blocks, the buffer count, each buffer as its length and its words, the scalar
// count and the scalars — buffers and scalars in the kernel's argument order. Answer: every
// buffer's words after the launch, in the same order. The process ends at end of input.
#include "cuda_shim.hpp"
#include <cstdio>

#include "rbm.cu"

static bool read_words(uint32_t* p, size_t n) { return std::fread(p, 4, n, stdin) == n; }

static float f32_of(uint32_t bits) {
    float v;
    std::memcpy(&v, &bits, 4);
    return v;
}

int main() {
    for (;;) {
        uint32_t head[3];
        if (!read_words(head, 3)) return 0;
        const uint32_t kernel = head[0], blocks = head[1], nbuf = head[2];
        std::vector<std::vector<uint32_t>> buf(nbuf);
        for (auto& b : buf) {
            uint32_t len;
            if (!read_words(&len, 1)) return 3;
            // One spare word: a kernel handed an empty buffer still gets a valid pointer.
            b.resize(len + 1);
            if (!read_words(b.data(), len)) return 3;
            b.resize(len);
        }
        uint32_t nscal;
        if (!read_words(&nscal, 1)) return 3;
        std::vector<uint32_t> s(nscal);
        if (!read_words(s.data(), nscal)) return 3;
        auto f = [&](size_t i) { return reinterpret_cast<float*>(buf.at(i).data()); };
        auto u = [&](size_t i) { return buf.at(i).data(); };
        auto want = [&](uint32_t nb, uint32_t ns) {
            if (nbuf != nb || nscal != ns) {
                std::fprintf(stderr, "kernel %u: %u buffers and %u scalars, expected %u and %u\n", kernel, nbuf,
                             nscal, nb, ns);
                std::exit(4);
            }
        };
        switch (kernel) {
            case 0:
                want(5, 5);
                dlp_emu_launch(blocks, DLP_THREADS, 0, [&] {
                    dlp_rbm_propose(f(0), f(1), f(2), f(3), f(4), s[0], f32_of(s[1]), s[2], s[3], s[4]);
                });
                break;
            case 1:
                want(4, 1);
                dlp_emu_launch(blocks, DLP_THREADS, 0, [&] { dlp_rbm_hidden(f(0), f(1), f(2), f(3), s[0]); });
                break;
            case 2:
                want(9, 5);
                dlp_emu_launch(blocks, DLP_THREADS, 0, [&] {
                    dlp_rbm_accept(f(0), f(1), f(2), u(3), f(4), f(5), f(6), f(7), f(8), s[0], f32_of(s[1]), s[2],
                                   s[3], s[4]);
                });
                break;
            case 3:
                want(3, 5);
                dlp_emu_launch(blocks, DLP_THREADS, 0, [&] {
                    dlp_rbm_bernoulli(f(0), f(1), f(2), s[0], s[1], s[2], s[3], s[4]);
                });
                break;
            case 4:
                want(5, 5);
                dlp_emu_launch(blocks, DLP_THREADS, 0, [&] {
                    dlp_rbm_gibbs_site(f(0), f(1), f(2), f(3), f(4), s[0], s[1], s[2], s[3], s[4]);
                });
                break;
            default:
                std::fprintf(stderr, "unknown kernel %u\n", kernel);
                return 4;
        }
        for (const auto& b : buf) std::fwrite(b.data(), 4, b.size(), stdout);
        std::fflush(stdout);
    }
}
