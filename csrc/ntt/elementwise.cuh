/* Element-wise NTT kernels: bit reversal, scaling by powers (cosets, 1/n), the coset quotient. */
#pragma once

#include "common.cuh"

namespace {

// In-place bit reversal of each vector of 2^log_n elements (total elements
// in all), one swap a pair.
__global__ void bit_reverse_kernel(Fr* data, uint32_t log_n, uint64_t total) {
    for (uint64_t g = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; g < total;
         g += (uint64_t)gridDim.x * blockDim.x) {
        const uint64_t n = 1ull << log_n;
        const uint64_t v = g >> log_n, i = g & (n - 1);
        const uint64_t r = log_n == 0 ? 0 : (__brevll(i) >> (64 - log_n));
        if (i < r) {
            Fr* a = data + (v << log_n);
            const Fr x = load_fr(a + i), y = load_fr(a + r);
            store_fr(a + i, y);
            store_fr(a + r, x);
        }
    }
}

// Tiled in-place bit reversal for log_n >= 2 * kBrQ. Write an index as
// [a | m | b] with a, b of kBrQ bits each; its reversal is
// [rev(b) | rev(m) | rev(a)]. Tile m (the 2^kBrQ x 2^kBrQ elements with
// middle m, rows a of 2^kBrQ contiguous elements) goes transposed, with
// its rows and columns reversed, to tile rev(m): one block loads tiles m
// and rev(m) (m <= rev(m)) into shared memory, then writes both. Reads and
// writes run along rows of 2^kBrQ contiguous elements (512 bytes) instead
// of the single scattered 32-byte elements of bit_reverse_kernel. Rows are
// padded by one entry so that the transposed read is conflict-free.
constexpr uint32_t kBrQ = 4, kBrT = 1u << kBrQ, kBrRow = kBrT + 1;

__global__ void __launch_bounds__(kBrT * kBrT) bit_reverse_tiled_kernel(Fr* data, uint32_t log_n, uint64_t groups) {
    __shared__ uint4 tile_m[2 * kBrT * kBrRow], tile_r[2 * kBrT * kBrRow];
    const SharedTile sm{tile_m, kBrT * kBrRow}, sr{tile_r, kBrT * kBrRow};
    const uint32_t log_m = log_n - 2 * kBrQ, shift_a = log_n - kBrQ;
    const uint32_t t = threadIdx.x, row = t >> kBrQ, col = t & (kBrT - 1);
    for (uint64_t g = blockIdx.x; g < groups; g += gridDim.x) {
        const uint64_t v = g >> log_m;
        const uint32_t m = (uint32_t)(g & ((1ull << log_m) - 1));
        const uint32_t mr = bitrev(m, log_m);
        if (mr < m) continue;  // the block of rev(m) swaps this pair
        Fr* a = data + (v << log_n);
        // Load: thread (row, col) reads element [row | m | col] (and of rev(m)).
        const uint64_t in_m = ((uint64_t)row << shift_a) | ((uint64_t)m << kBrQ) | col;
        const uint64_t in_r = ((uint64_t)row << shift_a) | ((uint64_t)mr << kBrQ) | col;
        sm.st(row * kBrRow + col, load_fr(a + in_m));
        if (mr != m) sr.st(row * kBrRow + col, load_fr(a + in_r));
        __syncthreads();
        // Store: destination [row | rev(m) | col] takes source [rev(col) | m | rev(row)].
        const uint32_t src = bitrev(col, kBrQ) * kBrRow + bitrev(row, kBrQ);
        store_fr(a + in_r, sm.ld(src));
        if (mr != m) store_fr(a + in_m, sr.ld(src));
        __syncthreads();
    }
}

// Element x < total (all vectors) times factor * s^i, i = x mod 2^log_n,
// s^i from the two-level tables g_lo, g_hi (null g_lo: s = 1; null
// factor: 1).
__global__ void scale_powers_kernel(Fr* data, uint32_t log_n, uint64_t total, const Fr* g_lo,
                                    const Fr* g_hi, uint32_t lo_bits, const Fr* factor) {
    const Fr f = factor ? load_fr(factor) : Fr::one();
    for (uint64_t g = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; g < total;
         g += (uint64_t)gridDim.x * blockDim.x) {
        const uint64_t i = g & ((1ull << log_n) - 1);
        Fr m = f;
        if (g_lo) m = m * power(g_lo, g_hi, lo_bits, i);
        store_fr(data + g, load_fr(data + g) * m);
    }
}

// out[i] = (a[i] b[i] - c[i]) factor for i < n.
__global__ void mul_sub_scale_kernel(const Fr* a, const Fr* b, const Fr* c, Fr* out, uint64_t n,
                                     const Fr* factor) {
    // Null b, c or factor: the term is left out (b = 1, c = 0, factor = 1),
    // the same for every thread.
    Fr f;
    if (factor) f = load_fr(factor);
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x) {
        Fr x = load_fr(a + i);
        if (b) x = x * load_fr(b + i);
        if (c) x = x - load_fr(c + i);
        if (factor) x = x * f;
        store_fr(out + i, x);
    }
}

}  // namespace
