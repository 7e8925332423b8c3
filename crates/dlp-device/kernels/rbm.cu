// The fused elementwise kernels of dlp-device's device RBM samplers (src/device_rbm.rs, whose
// CPU twins compute the same functions: keep the two in step). The RBM is the binary form
// f(x) = b·x + Σ_k softplus(a_k), a = c + Wᵀx (spin visibles are folded into b, W, c on the host),
// all f32. G holds the raw gradient product σ(a)·Wᵀ; the kernels add b themselves.
//
// Layout: one block of DLP_THREADS threads per chain (blockIdx.x = chain). Element i of a row
// (a visible or hidden unit) belongs to thread (i / 4) mod DLP_THREADS, which visits its elements
// in increasing order: the four sites of Philox block i / 4 share one thread, and every per-chain
// sum is a sequential f32 sum per thread followed by a fixed shuffle tree (dlp_block_sum), the
// order the CPU twin reproduces. The thread count is a constant, never the device's choice, so
// a chain's numbers do not depend on the hardware.
#include "philox.cuh"

#define DLP_THREADS 256
#define DLP_WARPS (DLP_THREADS / 32)

// Purposes of the Philox counter (device_rbm.rs PURPOSE_*).
#define DLP_PURPOSE_FLIP 1u
#define DLP_PURPOSE_MH 2u
#define DLP_PURPOSE_HIDDEN 3u
#define DLP_PURPOSE_VISIBLE 4u
#define DLP_PURPOSE_SITE 5u

// The uniform of one site from its Philox word: its top 24 bits, as an exact f32 in [0, 1).
__device__ __forceinline__ float dlp_u24(uint32_t word) {
    return (float)(word >> 8) * (1.0f / 16777216.0f);
}

__device__ __forceinline__ uint32_t dlp_word(const dlp_u32x4& r, int k) {
    return k == 0 ? r.x : (k == 1 ? r.y : (k == 2 ? r.z : r.w));
}

// σ(l) and softplus(l) from one exponential e = exp(−|l|).
__device__ __forceinline__ float dlp_sigmoid_e(float l, float e) {
    return l >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
}
__device__ __forceinline__ float dlp_softplus_e(float l, float e) {
    return fmaxf(l, 0.0f) + log1pf(e);
}

// Sum over the block of each thread's `v`: a shuffle tree per warp (offsets 16 … 1), then warp
// 0 folds the DLP_WARPS warp sums (zero-padded to 32 lanes) the same way. Every thread gets
// the total. `scratch` holds DLP_WARPS floats; the call ends with a barrier, so it may be
// reused at once.
__device__ __forceinline__ float dlp_block_sum(float v, float* scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    #pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    __shared__ float total;
    if (warp == 0) {
        float w = lane < DLP_WARPS ? scratch[lane] : 0.0f;
        #pragma unroll
        for (int off = 16; off > 0; off >>= 1) w += __shfl_down_sync(0xffffffffu, w, off);
        if (lane == 0) total = w;
    }
    __syncthreads();
    float t = total;
    __syncthreads();
    return t;
}

// DLP proposal (DULA and DMALA). Per site: g = G + b, l = ½ g (1 − 2x) − 1/(2α), flip iff
// u24 < σ(l); writes the proposal row Y and log q(y|x) = Σ_flipped l − Σ_i softplus(l).
extern "C" __global__ void dlp_rbm_propose(
    const float* __restrict__ x, const float* __restrict__ g, const float* __restrict__ b,
    float* __restrict__ y, float* __restrict__ logq, uint32_t d, float half_inv_alpha,
    uint32_t k0, uint32_t k1, uint32_t step) {
    __shared__ float scratch[DLP_WARPS];
    const uint32_t chain = blockIdx.x;
    const size_t row = (size_t)chain * d;
    float acc = 0.0f;
    for (uint32_t q = threadIdx.x; 4 * q < d; q += DLP_THREADS) {
        const dlp_u32x4 r = dlp_philox_block(k0, k1, chain, step, DLP_PURPOSE_FLIP, q);
        #pragma unroll
        for (int k = 0; k < 4; ++k) {
            const uint32_t i = 4 * q + k;
            if (i < d) {
                const float xi = x[row + i];
                const float gi = g[row + i] + b[i];
                const float l = 0.5f * gi * (1.0f - 2.0f * xi) - half_inv_alpha;
                const float e = expf(-fabsf(l));
                const bool flip = dlp_u24(dlp_word(r, k)) < dlp_sigmoid_e(l, e);
                y[row + i] = flip ? 1.0f - xi : xi;
                acc += (flip ? l : 0.0f) - dlp_softplus_e(l, e);
            }
        }
    }
    const float total = dlp_block_sum(acc, scratch);
    if (threadIdx.x == 0) logq[chain] = total;
}

// Hidden units from the pre-activation product A = X·W (n × M): S = σ(A + c) and, per chain,
// sp = Σ_k softplus(A_k + c_k).
extern "C" __global__ void dlp_rbm_hidden(
    const float* __restrict__ a, const float* __restrict__ c, float* __restrict__ s,
    float* __restrict__ sp, uint32_t m) {
    __shared__ float scratch[DLP_WARPS];
    const uint32_t chain = blockIdx.x;
    const size_t row = (size_t)chain * m;
    float acc = 0.0f;
    for (uint32_t q = threadIdx.x; 4 * q < m; q += DLP_THREADS) {
        #pragma unroll
        for (int k = 0; k < 4; ++k) {
            const uint32_t i = 4 * q + k;
            if (i < m) {
                const float ai = a[row + i] + c[i];
                const float e = expf(-fabsf(ai));
                s[row + i] = dlp_sigmoid_e(ai, e);
                acc += dlp_softplus_e(ai, e);
            }
        }
    }
    const float total = dlp_block_sum(acc, scratch);
    if (threadIdx.x == 0) sp[chain] = total;
}

// DMALA's MH test and selection, in place. Per chain: reverse logits at y from gy = GY + b,
// log q(x|y) = Σ_{i: y_i ≠ x_i} l'_i − Σ_i softplus(l'_i), f(y) = b·y + sp, and
// log A = (f(y) − f(x)) + (log q(x|y) − log q(y|x)); accept iff ln u < log A (u: 53-bit uniform
// of purpose MH, NaN rejects). On acceptance the rows x, G and f(x) become y's; count += 1.
extern "C" __global__ void dlp_rbm_accept(
    float* __restrict__ x, float* __restrict__ g, float* __restrict__ fx, uint32_t* __restrict__ count,
    const float* __restrict__ y, const float* __restrict__ gy, const float* __restrict__ sp,
    const float* __restrict__ logq_fwd, const float* __restrict__ b, uint32_t d, float half_inv_alpha,
    uint32_t k0, uint32_t k1, uint32_t step) {
    __shared__ float scratch[DLP_WARPS];
    __shared__ int accept;
    const uint32_t chain = blockIdx.x;
    const size_t row = (size_t)chain * d;
    float acc_q = 0.0f, acc_lin = 0.0f;
    for (uint32_t q = threadIdx.x; 4 * q < d; q += DLP_THREADS) {
        #pragma unroll
        for (int k = 0; k < 4; ++k) {
            const uint32_t i = 4 * q + k;
            if (i < d) {
                const float yi = y[row + i];
                const float gi = gy[row + i] + b[i];
                const float l = 0.5f * gi * (1.0f - 2.0f * yi) - half_inv_alpha;
                const float e = expf(-fabsf(l));
                acc_q += (yi != x[row + i] ? l : 0.0f) - dlp_softplus_e(l, e);
                acc_lin += b[i] * yi;
            }
        }
    }
    const float logq_rev = dlp_block_sum(acc_q, scratch);
    const float lin = dlp_block_sum(acc_lin, scratch);
    if (threadIdx.x == 0) {
        const float fy = lin + sp[chain];
        const float log_ratio = (fy - fx[chain]) + (logq_rev - logq_fwd[chain]);
        const dlp_u32x4 r = dlp_philox_block(k0, k1, chain, step, DLP_PURPOSE_MH, 0);
        const double u = dlp_u01_of_u64(dlp_u64_of(r.x, r.y));
        accept = log(u) < (double)log_ratio;
        if (accept) {
            fx[chain] = fy;
            count[chain] += 1;
        }
    }
    __syncthreads();
    if (accept) {
        for (uint32_t i = threadIdx.x; i < d; i += DLP_THREADS) {
            x[row + i] = y[row + i];
            g[row + i] = gy[row + i];
        }
    }
}

// Bernoulli draws of block Gibbs: out = [u24 < σ(A + bias)] for one layer (hidden: bias c,
// purpose HIDDEN; visible: bias b, purpose VISIBLE), width `w` per chain.
extern "C" __global__ void dlp_rbm_bernoulli(
    const float* __restrict__ a, const float* __restrict__ bias, float* __restrict__ out, uint32_t w,
    uint32_t k0, uint32_t k1, uint32_t step, uint32_t purpose) {
    const uint32_t chain = blockIdx.x;
    const size_t row = (size_t)chain * w;
    for (uint32_t q = threadIdx.x; 4 * q < w; q += DLP_THREADS) {
        const dlp_u32x4 r = dlp_philox_block(k0, k1, chain, step, purpose, q);
        #pragma unroll
        for (int k = 0; k < 4; ++k) {
            const uint32_t i = 4 * q + k;
            if (i < w) {
                const float ai = a[row + i] + bias[i];
                const float e = expf(-fabsf(ai));
                out[row + i] = dlp_u24(dlp_word(r, k)) < dlp_sigmoid_e(ai, e) ? 1.0f : 0.0f;
            }
        }
    }
}

// Random-scan single-site Gibbs from the cached products A = X·W (n × M, c not included),
// in place. Per chain: block 0 of purpose SITE gives the site i = ⌊u64 · d / 2⁶⁴⌋ (words x, y)
// and the flip uniform (word z); with δ = 1 − 2x_i the flip's log-odds are
// Δ = b_i δ + Σ_k [softplus(A_k + c_k + W_ik δ) − softplus(A_k + c_k)], flip iff u24 < σ(Δ),
// and a flip adds W_i δ to the chain's A row.
extern "C" __global__ void dlp_rbm_gibbs_site(
    float* __restrict__ x, float* __restrict__ a, const float* __restrict__ w, const float* __restrict__ b,
    const float* __restrict__ c, uint32_t d, uint32_t m, uint32_t k0, uint32_t k1, uint32_t step) {
    __shared__ float scratch[DLP_WARPS];
    const uint32_t chain = blockIdx.x;
    const dlp_u32x4 r = dlp_philox_block(k0, k1, chain, step, DLP_PURPOSE_SITE, 0);
    const uint32_t i = (uint32_t)__umul64hi(dlp_u64_of(r.x, r.y), (uint64_t)d);
    const float xi = x[(size_t)chain * d + i];
    const float delta = 1.0f - 2.0f * xi;
    const float* wi = w + (size_t)i * m;
    float* ar = a + (size_t)chain * m;
    float acc = 0.0f;
    for (uint32_t q = threadIdx.x; 4 * q < m; q += DLP_THREADS) {
        #pragma unroll
        for (int k = 0; k < 4; ++k) {
            const uint32_t j = 4 * q + k;
            if (j < m) {
                const float v0 = ar[j] + c[j];
                const float v1 = v0 + wi[j] * delta;
                acc += dlp_softplus_e(v1, expf(-fabsf(v1))) - dlp_softplus_e(v0, expf(-fabsf(v0)));
            }
        }
    }
    const float log_odds = b[i] * delta + dlp_block_sum(acc, scratch);
    const float e = expf(-fabsf(log_odds));
    if (dlp_u24(r.z) < dlp_sigmoid_e(log_odds, e)) {
        for (uint32_t q = threadIdx.x; 4 * q < m; q += DLP_THREADS) {
            #pragma unroll
            for (int k = 0; k < 4; ++k) {
                const uint32_t j = 4 * q + k;
                if (j < m) ar[j] += wi[j] * delta;
            }
        }
        if (threadIdx.x == 0) x[(size_t)chain * d + i] = 1.0f - xi;
    }
}
