/* NTT table builders: butterfly roots, half twiddle tables (Montgomery, Shoup), tiled twiddle tables. */
#pragma once

#include "common.cuh"

namespace {

// roots[j] = w_T^j = w^(j 2^(log_n - log_t)) for j < 2^(log_t - 1).
__global__ void roots_kernel(Root* roots, uint32_t log_n, uint32_t log_t, const Fr* lo, const Fr* hi,
                             uint32_t lo_bits) {
    for (uint32_t j = blockIdx.x * blockDim.x + threadIdx.x; j < (1u << log_t) / 2; j += gridDim.x * blockDim.x)
        store_root(&roots[j], power(lo, hi, lo_bits, (uint64_t)j << (log_n - log_t)));
}

__global__ void powers_kernel(Fr* out, uint32_t log_count, uint32_t shift, const Fr* lo,
                              const Fr* hi, uint32_t lo_bits) {
    for (uint64_t k = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; k < (1ull << log_count);
         k += (uint64_t)gridDim.x * blockDim.x)
        store_fr(out + k, power(lo, hi, lo_bits, k << shift));
}

// out[k] = the Shoup entry (Root) of w_B^k for k < 2^log_count (B = 2^(log_count + 1)).
__global__ void shoup_powers_kernel(Root* out, uint32_t log_count, uint32_t shift, const Fr* lo, const Fr* hi,
                                    uint32_t lo_bits) {
    for (uint64_t k = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; k < (1ull << log_count);
         k += (uint64_t)gridDim.x * blockDim.x)
        store_root(&out[k], power(lo, hi, lo_bits, k << shift));
}

// Tiled twiddle table of a pass (cuzk_ntt_powers_tiled): entry
// ((c >> 2) << (log_r + 2)) | (p << 2) | (c & 3) = w_B^(bitrev_R(p) c) for
// row p < R = 2^log_r and column c < C = B / R (C >= 4), from w_N^e by the
// two-level tables (N = 2^log_n, shift = log_n - log_b). Shoup entries
// (Root) or Montgomery ones (Fr).
template <class Entry>
__global__ void tiled_powers_kernel(Entry* out, uint32_t log_b, uint32_t log_r, uint32_t shift, const Fr* lo,
                                    const Fr* hi, uint32_t lo_bits) {
    for (uint64_t at = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; at < (1ull << log_b);
         at += (uint64_t)gridDim.x * blockDim.x) {
        const uint32_t p = (uint32_t)(at >> 2) & ((1u << log_r) - 1);
        const uint64_t c = ((at >> (log_r + 2)) << 2) | (at & 3);
        const Fr w = power(lo, hi, lo_bits, ((uint64_t)bitrev(p, log_r) * c) << shift);
        if constexpr (sizeof(Entry) == sizeof(Fr))
            store_fr(reinterpret_cast<Fr*>(out + at), w);
        else
            store_root(reinterpret_cast<Root*>(out + at), w);
    }
}

}  // namespace
