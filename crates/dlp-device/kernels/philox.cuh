// Philox4x32-10 for dlp's device-resident samplers: the same function as
// crates/dlp-device/src/philox.rs (whose tests pin it to Random123's known answers); keep the
// two in step. Counter layout [index, purpose, step, chain], key = key_of_seed(seed).
#pragma once
#include <stdint.h>

struct dlp_u32x4 { uint32_t x, y, z, w; };

__device__ __forceinline__ dlp_u32x4 dlp_philox4x32_10(dlp_u32x4 c, uint32_t k0, uint32_t k1) {
    #pragma unroll
    for (int round = 0; round < 10; ++round) {
        if (round > 0) { k0 += 0x9E3779B9u; k1 += 0xBB67AE85u; }
        uint32_t hi0 = __umulhi(0xD2511F53u, c.x), lo0 = 0xD2511F53u * c.x;
        uint32_t hi1 = __umulhi(0xCD9E8D57u, c.z), lo1 = 0xCD9E8D57u * c.z;
        dlp_u32x4 n;
        n.x = hi1 ^ c.y ^ k0;
        n.y = lo1;
        n.z = hi0 ^ c.w ^ k1;
        n.w = lo0;
        c = n;
    }
    return c;
}

// The block of `index` of `purpose` at `step` of chain `chain` (philox.rs `counter`).
__device__ __forceinline__ dlp_u32x4 dlp_philox_block(uint32_t k0, uint32_t k1, uint32_t chain,
                                                     uint32_t step, uint32_t purpose, uint32_t index) {
    dlp_u32x4 c; c.x = index; c.y = purpose; c.z = step; c.w = chain;
    return dlp_philox4x32_10(c, k0, k1);
}

__device__ __forceinline__ uint64_t dlp_u64_of(uint32_t hi, uint32_t lo) {
    return ((uint64_t)hi << 32) | (uint64_t)lo;
}

// (floor(r / 2^12) + 1/2) / 2^52: a uniform in (0, 1), never 0 or 1 (philox.rs `u01_of_u64`).
__device__ __forceinline__ double dlp_u01_of_u64(uint64_t r) {
    return ((double)(r >> 12) + 0.5) * (1.0 / 4503599627370496.0);
}
