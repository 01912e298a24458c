/* NTT device helpers: tuning constants, Fr loads and stores, shared-memory tiles, roots, two-level powers. */
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuzk/bls12_381.cuh"
#include "cuzk/ff.cuh"
#include "cuzk/ntt.h"
#include "fr_shoup.cuh"

// The parts of the NTT translation unit (ntt.cu) share one anonymous
// namespace: every kernel and helper has internal linkage.
using cuzk::Fr;

namespace {

constexpr int kThreads = 256;  // threads per block
// Radix-2 butterflies of a stage, two a trip of the rolled loop (faster than
// no unrolling, four no better; BENCHMARKS.md). ptxas runs the two one after
// the other, sharing the address arithmetic.
constexpr int kUnrollU = 2;
// Fewest columns (log2) of a tile for offset-major stages (dif_stage).
constexpr uint32_t kOffsetMajorMinLogW = 2;
constexpr int kTileLog = 11;  // 2^11 elements (64 KiB) per block tile
// Passes of at most 8 bits (2^24's three) take tiles of 2^10 elements, 4
// columns of 2^8: faster than 8 columns of 2^11 tiles (BENCHMARKS.md); for
// 9-bit passes, 2^10 tiles would have 2 columns and no offset-major stages.
constexpr int kTileLogSmall = 10;
static_assert(kTileLogSmall <= kTileLog, "smem_max is sized by kTileLog");
// The last pass (one column a sub-problem) packs 2^kLastLogW sub-problems a
// tile, as its columns (see ntt_pass_body).
constexpr uint32_t kLastLogW = 2;
// Large transforms run blocks of tile / 8 threads (at most kThreads): four
// butterflies a thread a stage (BENCHMARKS.md).
constexpr uint32_t kTileDiv = 8;
constexpr int kMaxPass = CUZK_NTT_MAX_PASS_BITS;
// Fewest elements (log2) of a transform (all vectors) whose pass outputs are
// streaming stores.
constexpr uint32_t kStreamOutLog = 22;
static_assert(kStreamOutLog < 64, "kStreamOutLog: a shift of a 64-bit count");
static_assert(kTileLog >= kMaxPass, "a tile must hold one column of the largest pass (smem_max)");

__device__ __forceinline__ Fr load_fr(const Fr* p) {
    const uint4* s = reinterpret_cast<const uint4*>(p);
    uint4 a = s[0], b = s[1];
    Fr r;
    r.l[0] = a.x; r.l[1] = a.y; r.l[2] = a.z; r.l[3] = a.w;
    r.l[4] = b.x; r.l[5] = b.y; r.l[6] = b.z; r.l[7] = b.w;
    return r;
}

__device__ __forceinline__ void store_fr(Fr* p, const Fr& v) {
    uint4* d = reinterpret_cast<uint4*>(p);
    d[0] = make_uint4(v.l[0], v.l[1], v.l[2], v.l[3]);
    d[1] = make_uint4(v.l[4], v.l[5], v.l[6], v.l[7]);
}

// store_fr as streaming stores (st.global.cs: evict first), for outputs not
// read again while they could stay in L2.
__device__ __forceinline__ void store_fr_cs(Fr* p, const Fr& v) {
    uint4* d = reinterpret_cast<uint4*>(p);
    __stcs(d, make_uint4(v.l[0], v.l[1], v.l[2], v.l[3]));
    __stcs(d + 1, make_uint4(v.l[4], v.l[5], v.l[6], v.l[7]));
}

// A tile of Fr elements in shared memory, in split layout: the low and the
// high 16 bytes of element i at lo[i] and lo[tile + i], so that lanes on
// consecutive elements read consecutive 16-byte words (no bank conflict;
// 32 bytes an element would put lanes 32 bytes apart, a 2-way conflict).
// One conflict is left: with 4 columns a tile (log_w = 2: the 9-bit passes
// of 2^26 and 2^27, the 2^10 tiles of 8-bit passes, packed last passes) the
// offset-major stages h = 2..32 put two 2h-blocks, 128 h bytes apart, in
// one 8-lane phase (2-way), and so does the last stage (h = 1: rows 2b and
// 2b + 2). Shared memory is not the bound (2% of the stall samples): an XOR
// swizzle that removes every conflict (bit 2 of the index flipped by the
// parity of row bits 1..6) was slower for its POPC and ALU work
// (BENCHMARKS.md). The pass kernels are built for the two full tile sizes
// (KTL in ntt_pass_body), so that lo + tile is an immediate offset there.
struct SharedTile {
    uint4* lo;
    uint32_t tile;
    __device__ __forceinline__ Fr ld(uint32_t i) const {
        const uint4 a = lo[i], b = lo[tile + i];
        Fr r;
        r.l[0] = a.x; r.l[1] = a.y; r.l[2] = a.z; r.l[3] = a.w;
        r.l[4] = b.x; r.l[5] = b.y; r.l[6] = b.z; r.l[7] = b.w;
        return r;
    }
    // Asynchronous copy of element i from global memory (cp.async, sm_80+:
    // no registers, every copy of the thread in flight at once); complete
    // after cp_async_wait() and a block barrier.
    __device__ __forceinline__ void cp_async(uint32_t i, const Fr* src) const {
        const uint32_t d0 = (uint32_t)__cvta_generic_to_shared(lo + i),
                       d1 = (uint32_t)__cvta_generic_to_shared(lo + tile + i);
        const uint4* s = reinterpret_cast<const uint4*>(src);
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d0), "l"(s) : "memory");
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d1), "l"(s + 1) : "memory");
    }
    static __device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_all;" ::: "memory"); }
    __device__ __forceinline__ void st(uint32_t i, const Fr& v) const {
        lo[i] = make_uint4(v.l[0], v.l[1], v.l[2], v.l[3]);
        lo[tile + i] = make_uint4(v.l[4], v.l[5], v.l[6], v.l[7]);
    }
};

// A butterfly root w_T^j of the roots table (cuzk_ntt_roots; global
// memory, read through the read-only cache), or an entry of a Shoup twiddle
// table: w plain (not Montgomery) and w' = floor(w 2^288 / r), 80 bytes,
// for Shoup's product by a constant (fr_shoup.cuh), which takes 78
// IMAD.WIDE against operator*'s 112 (SASS, nvcc 13.0). The roots live in
// global memory, not in shared memory, so that three 64 KiB tiles still fit
// an SM (3 x (64 + 20) KiB would not): with them in shared memory a pass
// ran at 2 blocks an SM and gained nothing (BENCHMARKS.md).
struct alignas(16) Root {
    uint32_t w[8];
    uint32_t wp[9];
    uint32_t pad[3];
};
static_assert(sizeof(Root) << (kMaxPass - 1) <= CUZK_NTT_ROOTS_BYTES, "roots table size (ntt.h)");
static_assert(sizeof(Root) % 16 == 0, "roots are read as uint4");
static_assert(sizeof(Root) == CUZK_NTT_SHOUP_ENTRY_BYTES, "Shoup twiddle entry size (ntt.h)");

// log2 of T, the order of the roots table's root: min(log_n, kMaxPass),
// at least every pass's radix.
uint32_t roots_log_t(uint32_t log_n) { return log_n < (uint32_t)kMaxPass ? log_n : (uint32_t)kMaxPass; }

// Root from w_T^j in Montgomery form.
__device__ __forceinline__ void store_root(Root* dst, const Fr& w_mont) {
    Fr raw_one;  // the integer 1: w_mont * 1 * R^-1 = w, plain
    for (int i = 0; i < 8; ++i) raw_one.l[i] = i == 0 ? 1u : 0u;
    const Fr w = w_mont * raw_one;
    Root e;
    for (int i = 0; i < 8; ++i) e.w[i] = w.l[i];
    cuzk::shoup::precompute(e.wp, e.w);
    e.pad[0] = e.pad[1] = e.pad[2] = 0;
    uint4* d = reinterpret_cast<uint4*>(dst);
    const uint4* src = reinterpret_cast<const uint4*>(&e);
    for (int i = 0; i < 5; ++i) d[i] = src[i];
}

// d * w_T^j for the root entry at `root` (global memory): below 2r for any
// d < 2^256 (Shoup's product without its final subtraction).
__device__ __forceinline__ Fr mul_root(const Fr& d, const Root* root) {
    const uint4* p = reinterpret_cast<const uint4*>(root);
    const uint4 a = __ldg(p), b = __ldg(p + 1), c = __ldg(p + 2), e = __ldg(p + 3), f = __ldg(p + 4);
    const uint32_t w[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
    const uint32_t wp[9] = {c.x, c.y, c.z, c.w, e.x, e.y, e.z, e.w, f.x};
    Fr r;
    cuzk::shoup::mul_lazy(r.l, d.l, w, wp);  // below 2r
    return r;
}

// w^e from two-level tables.
__device__ __forceinline__ Fr power(const Fr* lo, const Fr* hi, uint32_t lo_bits, uint64_t e) {
    return load_fr(hi + (e >> lo_bits)) * load_fr(lo + (e & ((1ull << lo_bits) - 1)));
}

__device__ __forceinline__ uint32_t bitrev(uint32_t x, uint32_t bits) {
    return bits == 0 ? 0 : (__brev(x) >> (32 - bits));
}

}  // namespace
