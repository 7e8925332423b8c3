// A host shim for the CUDA features dlp-device's kernels (kernels/*.cu) use, so that g++
// (C++20) compiles the CUDA sources themselves and the tests run them against their CPU twins
// on machines without a GPU (tests/emu/lattice_emu.cpp, tests/emu/rbm_emu.cpp).
//
// Launch. `dlp_emu_launch(blocks, threads, shared, kernel)` runs the blocks one after another;
// within a block every CUDA thread is a fiber (ucontext: its own stack, one OS thread for all),
// started in thread order and run until it finishes or waits at a barrier, the waiting ones
// resumed once their barrier has opened. Deterministic and fast: a switch is a
// _setjmp/_longjmp pair: about 3 ms per 256-thread block of rbm.cu's propose or accept here,
// where a std::thread per CUDA thread (this shim's first form) took about 300 ms, in futex
// wake-ups on a loaded two-core machine. What it does not show is a data race between
// threads that the kernel's barriers fail to order — fibers interleave only at barriers —
// while a barrier that not every thread reaches is reported (a deadlock: the process aborts
// naming the block). No kernel here relies on blocks being concurrent: they communicate only
// through separate launches. threadIdx and blockIdx are set by the scheduler before each
// switch; blockDim and gridDim are the launch's.
//
// Synchronisation. __syncthreads is a barrier of the block's threads. A warp shuffle
// (__shfl_xor_sync, __shfl_down_sync, __reduce_add_sync) is a store of each lane's value into
// a slot of its warp, a barrier of the warp's 32 threads, the read of the source lane's slot,
// and a second barrier before the slots may be reused: the semantics of a full-mask shuffle
// (every lane of the warp takes part; each kernel only shuffles with full warps).
// __shfl_down_sync from a lane past 31 returns the caller's own value, as on the GPU.
// __shared__ variables become function statics (one instance, reused block after block, which
// run one at a time); the dynamic shared memory is one host buffer of exactly the launch's
// size.
//
// Arithmetic. The shim is compiled with -ffp-contract=off on x86-64 (SSE: no excess
// precision), so every float and double operation is one IEEE round to nearest, as written in
// the source — the kernels' arithmetic *as written*. (nvcc contracts a*b + c into FMAs by
// default; that, and CUDA's own expf/log1pf, is what only a GPU shows: tests/cuda.rs.) The math
// functions are the C library's expf, log1pf, log, fmaxf, fabsf, the very functions the Rust
// CPU twins call (f32::exp, f32::ln_1p, f64::ln and f32::max lower to glibc's expf, log1pf,
// log and a max with fmaxf's NaN rule), so the emulation and the twins agree bit for bit and
// no ulp bound is needed. The __dmul_rn family are plain operations (single roundings under
// -ffp-contract=off). Atomics are GCC's sequentially consistent builtins.
#pragma once
#include <algorithm>
#include <csetjmp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <ucontext.h>
#include <vector>

using std::min;

// The architecture build.rs targets by default (compute_90), so that `#if __CUDA_ARCH__`
// branches take the path the GPU runs (lattice.cu's __reduce_add_sync).
#define __CUDA_ARCH__ 900

struct dlp_emu_dim3 {
    unsigned x = 0, y = 0, z = 0;
};
inline dlp_emu_dim3 threadIdx, blockIdx, blockDim, gridDim;

// A barrier of `expected` fibers: the last to arrive opens it (a new generation) and goes on;
// the others wait in the scheduler until the generation has moved.
struct dlp_emu_barrier {
    unsigned expected = 0, arrived = 0;
    uint64_t generation = 0;
    void arrive_and_wait();
};
struct dlp_emu_fiber {
    ucontext_t ctx;
    jmp_buf jb;
    bool started = false;
    std::unique_ptr<char[]> stack;
    const dlp_emu_barrier* waits_on = nullptr;
    uint64_t waits_for = 0;
    bool done = false;
};
constexpr size_t DLP_EMU_STACK = 256 * 1024;
inline jmp_buf g_scheduler;
inline std::vector<dlp_emu_fiber> g_fibers;
inline unsigned g_current = 0;
inline const std::function<void()>* g_kernel = nullptr;
inline dlp_emu_barrier g_block_barrier;
inline std::vector<dlp_emu_barrier> g_warp_barrier;
inline uint32_t g_warp_slots[32][32];
// The dynamic shared memory of the running launch, allocated at exactly the size the Rust side
// asks for (so that a build with -fsanitize=address catches reads past it).
inline uint8_t* g_dynamic_shared = nullptr;

inline void dlp_emu_barrier::arrive_and_wait() {
    if (++arrived == expected) {
        arrived = 0;
        ++generation;
        return;
    }
    dlp_emu_fiber& f = g_fibers[g_current];
    f.waits_on = this;
    f.waits_for = generation;
    if (_setjmp(f.jb) == 0) _longjmp(g_scheduler, 1);
}

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __launch_bounds__(x)
#define __restrict__
#define __align__(x)
#define __shared__ static
#define DLP_LAT_DYNAMIC_SHARED(name) uint8_t* name = g_dynamic_shared

inline void __syncthreads() { g_block_barrier.arrive_and_wait(); }
inline uint32_t __umulhi(uint32_t a, uint32_t b) { return (uint32_t)(((uint64_t)a * b) >> 32); }
inline uint64_t __umul64hi(uint64_t a, uint64_t b) { return (uint64_t)(((unsigned __int128)a * b) >> 64); }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline int __popcll(unsigned long long v) { return __builtin_popcountll(v); }
inline int __ffsll(long long v) { return __builtin_ffsll(v); }
inline uint32_t atomicAdd(uint32_t* p, uint32_t v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }

// Lane `src(lane)`'s value of `v` in the caller's warp (a full-warp exchange, see above).
template <class T, class Src>
inline T dlp_emu_exchange(T v, Src src) {
    static_assert(sizeof(T) == 4, "32-bit shuffles only");
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    g_warp_slots[warp][lane] = bits;
    g_warp_barrier[warp].arrive_and_wait();
    bits = g_warp_slots[warp][src(lane)];
    g_warp_barrier[warp].arrive_and_wait();
    std::memcpy(&v, &bits, 4);
    return v;
}
template <class T>
inline T __shfl_xor_sync(unsigned, T v, int lane_mask) {
    return dlp_emu_exchange(v, [&](unsigned lane) { return lane ^ (unsigned)lane_mask; });
}
template <class T>
inline T __shfl_down_sync(unsigned, T v, unsigned delta) {
    return dlp_emu_exchange(v, [&](unsigned lane) { return lane + delta < 32 ? lane + delta : lane; });
}
// The sum of the 32 lanes' values (mod 2^32), in lane order.
inline uint32_t __reduce_add_sync(unsigned, uint32_t v) {
    const unsigned warp = threadIdx.x >> 5;
    uint32_t total = 0;
    g_warp_slots[warp][threadIdx.x & 31u] = v;
    g_warp_barrier[warp].arrive_and_wait();
    for (unsigned l = 0; l < 32; ++l) total += g_warp_slots[warp][l];
    g_warp_barrier[warp].arrive_and_wait();
    return total;
}

inline void dlp_emu_entry() {
    (*g_kernel)();
    g_fibers[g_current].done = true;
    _longjmp(g_scheduler, 1);
}

// Runs fiber `f` until it waits or finishes: its first start through its ucontext, every later
// switch (both ways) by _setjmp/_longjmp, which unlike swapcontext make no system call.
__attribute__((noinline)) inline void dlp_emu_resume(dlp_emu_fiber& f) {
    if (_setjmp(g_scheduler) == 0) {
        if (!f.started) {
            f.started = true;
            setcontext(&f.ctx);
        }
        _longjmp(f.jb, 1);
    }
}

// Runs `kernel` on `blocks` blocks of `threads` threads with `shared` bytes of dynamic shared
// memory (see the top of this file).
template <class F>
void dlp_emu_launch(unsigned blocks, unsigned threads, unsigned shared, F kernel) {
    std::vector<uint8_t> dynamic_shared(shared ? shared : 1);
    g_dynamic_shared = dynamic_shared.data();
    const std::function<void()> body = kernel;
    g_kernel = &body;
    blockDim.x = threads;
    gridDim.x = blocks;
    while (g_fibers.size() < threads) {
        g_fibers.emplace_back();
        g_fibers.back().stack.reset(new char[DLP_EMU_STACK]);
    }
    g_block_barrier = dlp_emu_barrier{threads};
    g_warp_barrier.assign((threads + 31) / 32, dlp_emu_barrier{});
    for (unsigned w = 0; w < g_warp_barrier.size(); ++w) g_warp_barrier[w].expected = min(32u, threads - 32 * w);
    for (unsigned b = 0; b < blocks; ++b) {
        blockIdx.x = b;
        for (unsigned t = 0; t < threads; ++t) {
            dlp_emu_fiber& f = g_fibers[t];
            f.done = false;
            f.started = false;
            f.waits_on = nullptr;
            getcontext(&f.ctx);
            f.ctx.uc_stack.ss_sp = f.stack.get();
            f.ctx.uc_stack.ss_size = DLP_EMU_STACK;
            f.ctx.uc_link = nullptr;
            makecontext(&f.ctx, dlp_emu_entry, 0);
        }
        for (unsigned live = threads; live > 0;) {
            bool progress = false;
            for (unsigned t = 0; t < threads; ++t) {
                dlp_emu_fiber& f = g_fibers[t];
                if (f.done || (f.waits_on && f.waits_on->generation == f.waits_for)) continue;
                f.waits_on = nullptr;
                g_current = t;
                threadIdx.x = t;
                dlp_emu_resume(f);
                progress = true;
                live -= f.done;
            }
            if (!progress) {
                std::fprintf(stderr, "block %u: %u threads wait at a barrier the others never reach\n", b, live);
                std::abort();
            }
        }
    }
}
