// cuzk NTT kernels over BLS12-381 Fr (see include/cuzk/ntt.h).
//
// Forward transform: in-place decimation in frequency (Gentleman-Sande),
// natural order in, bit-reversed order out, organised as Bailey's
// four-step method (D. H. Bailey, "FFTs in external or hierarchical
// memory", J. Supercomputing 4, 1990): with N = R * C and j = c + C t,
//   X[u + R v] = sum_c w_C^(v c) * [ w_N^(u c) * sum_t x[c + C t] w_R^(u t) ].
// One pass runs the size-R DFTs of all columns (stride C) in shared memory
// as radix-2 DIF stages, leaving column outputs in bit-reversed position,
// and multiplies output u of column c by w_N^(u c). The size-C DFTs of the
// rows are the next pass, on contiguous blocks of C elements, recursively.
// Output lands at bit-reversed positions overall: position
// C * bitrev_R(u) + bitrev_C(v) holds X[u + R v].
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>

#include "cuzk/bls12_381.cuh"
#include "cuzk/cuda_status.cuh"
#include "cuzk/ff.cuh"
#include "cuzk/ntt.h"
#ifndef CUZK_NTT_MONT_ROOTS
#include "fr_shoup.cuh"
#ifndef CUZK_NTT_NO_LAZY /* developer switch: canonical values inside a pass */
#define CUZK_NTT_LAZY 1  // values below 2r inside a pass (add_lazy)
#endif
#endif

using cuzk::Fr;
using cuzk::guard;
using cuzk::ok;

namespace {

#ifndef CUZK_NTT_THREADS /* developer switch: threads a block of full tiles */
#define CUZK_NTT_THREADS 256
#endif
constexpr int kThreads = CUZK_NTT_THREADS;  // threads per block
#ifndef CUZK_NTT_UNROLL_U /* developer switch: unroll of the butterfly loop of a stage (units not four a thread) */
#define CUZK_NTT_UNROLL_U 2
#endif
#ifndef CUZK_NTT_OM_MIN_LOG_W /* developer switch: fewest columns (log2) for offset-major stages */
#define CUZK_NTT_OM_MIN_LOG_W 2
#endif
#ifndef CUZK_NTT_TILE_LOG
#define CUZK_NTT_TILE_LOG 11
#endif
constexpr int kTileLog = CUZK_NTT_TILE_LOG;  // 2^11 elements (64 KiB) per block tile
#ifndef CUZK_NTT_TILE_LOG_SMALL /* developer switch: tile of the multi-column passes of at most 8 bits */
#define CUZK_NTT_TILE_LOG_SMALL 10
#endif
// Passes of at most 8 bits (2^24's three) take tiles of 2^10 elements, 4
// columns of 2^8 (session 13, H200: 2^24 -1.9% against 8 columns of 2^11
// tiles; for 9-bit passes, 2^10 tiles would have 2 columns and no
// offset-major stages).
constexpr int kTileLogSmall = CUZK_NTT_TILE_LOG_SMALL;
static_assert(kTileLogSmall <= kTileLog, "smem_max is sized by kTileLog");
#ifndef CUZK_NTT_LAST_LOG_W /* developer switch: sub-problems a tile of the last pass (log2) */
#define CUZK_NTT_LAST_LOG_W 2
#endif
// The last pass (one column a sub-problem) packs 2^kLastLogW sub-problems a
// tile, as its columns (see ntt_pass_body).
constexpr uint32_t kLastLogW = CUZK_NTT_LAST_LOG_W;
#ifndef CUZK_NTT_TILE_DIV /* developer switch: threads a block of a large transform = tile / this */
#define CUZK_NTT_TILE_DIV 8
#endif
// Large transforms run blocks of tile / 8 threads (at most kThreads): four
// butterflies a thread a stage (session 12 and 13, BENCHMARKS.md).
constexpr uint32_t kTileDiv = CUZK_NTT_TILE_DIV;
constexpr int kMaxPass = CUZK_NTT_MAX_PASS_BITS;
#ifndef CUZK_NTT_STREAM_OUT_LOG /* developer switch: fewest elements (log2) for streaming pass outputs */
#define CUZK_NTT_STREAM_OUT_LOG 22
#endif
constexpr uint32_t kStreamOutLog = CUZK_NTT_STREAM_OUT_LOG;
static_assert(kStreamOutLog < 64, "CUZK_NTT_STREAM_OUT_LOG: a shift of a 64-bit count");
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

// A tile of Fr elements in shared memory. Split layout (default): the low
// and the high 16 bytes of element i at lo[i] and lo[tile + i], so that
// lanes on consecutive elements read consecutive 16-byte words (no bank
// conflict); the interleaved layout (32 bytes an element, developer switch
// CUZK_NTT_SMEM_INTERLEAVED) has lanes 32 bytes apart, a 2-way conflict.
// One conflict is left: with 4 columns a tile (log_w = 2: the 9-bit passes
// of 2^26 and 2^27, the 2^10 tiles of 8-bit passes, packed last passes) the
// offset-major stages h = 2..32 put two 2h-blocks, 128 h bytes apart, in
// one 8-lane phase (2-way), and so does the last stage (h = 1: rows 2b and
// 2b + 2). Shared memory is not the bound (2% of the stall samples): an XOR
// swizzle that removes every conflict (bit 2 of the index flipped by the
// parity of row bits 1..6) was 0.8-1.7% slower for its POPC and ALU work
// (session 15, BENCHMARKS.md). The default kernels are built for the two
// full tile sizes (KTL in ntt_pass_body), so that lo + tile is an
// immediate offset there.
struct SharedTile {
    uint4* lo;
    uint32_t tile;
    __device__ __forceinline__ Fr ld(uint32_t i) const {
#ifdef CUZK_NTT_SMEM_INTERLEAVED
        return load_fr(reinterpret_cast<const Fr*>(lo) + i);
#else
        const uint4 a = lo[i], b = lo[tile + i];
        Fr r;
        r.l[0] = a.x; r.l[1] = a.y; r.l[2] = a.z; r.l[3] = a.w;
        r.l[4] = b.x; r.l[5] = b.y; r.l[6] = b.z; r.l[7] = b.w;
        return r;
#endif
    }
    // Asynchronous copy of element i from global memory (cp.async, sm_80+:
    // no registers, every copy of the thread in flight at once); complete
    // after cp_async_wait() and a block barrier.
    __device__ __forceinline__ void cp_async(uint32_t i, const Fr* src) const {
#ifdef CUZK_NTT_SMEM_INTERLEAVED
        const uint32_t d0 = (uint32_t)__cvta_generic_to_shared(lo + 2 * i), d1 = d0 + 16;
#else
        const uint32_t d0 = (uint32_t)__cvta_generic_to_shared(lo + i),
                       d1 = (uint32_t)__cvta_generic_to_shared(lo + tile + i);
#endif
        const uint4* s = reinterpret_cast<const uint4*>(src);
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d0), "l"(s) : "memory");
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d1), "l"(s + 1) : "memory");
    }
    static __device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_all;" ::: "memory"); }
    __device__ __forceinline__ void st(uint32_t i, const Fr& v) const {
#ifdef CUZK_NTT_SMEM_INTERLEAVED
        store_fr(reinterpret_cast<Fr*>(lo) + i, v);
#else
        lo[i] = make_uint4(v.l[0], v.l[1], v.l[2], v.l[3]);
        lo[tile + i] = make_uint4(v.l[4], v.l[5], v.l[6], v.l[7]);
#endif
    }
};

// A butterfly root w_T^j of the roots table (cuzk_ntt_roots; global
// memory, read through the read-only cache). Default: Shoup's product by a
// constant (fr_shoup.cuh): w plain (not Montgomery) and w' = floor(w 2^288
// / r), 80 bytes; it takes 78 IMAD.WIDE a product against operator*'s 112
// (SASS, nvcc 13.0). Developer switch CUZK_NTT_MONT_ROOTS: w in Montgomery
// form for operator*, 32 bytes. The roots live in global memory, not in
// shared memory, so that three 64 KiB tiles still fit an SM (3 x (64 + 20)
// KiB would not): with them in shared memory Shoup ran at 2 blocks an SM
// and gained nothing at 2^27 (BENCHMARKS.md, sessions 8 and 9).
struct alignas(16) Root {
#ifdef CUZK_NTT_MONT_ROOTS
    Fr w;
#else
    uint32_t w[8];
    uint32_t wp[9];
    uint32_t pad[3];
#endif
};
static_assert(sizeof(Root) << (kMaxPass - 1) <= CUZK_NTT_ROOTS_BYTES, "roots table size (ntt.h)");
static_assert(sizeof(Root) % 16 == 0, "roots are read as uint4");
#ifndef CUZK_NTT_MONT_ROOTS /* that developer build's Shoup twiddle tables hold 32-byte entries */
static_assert(sizeof(Root) == CUZK_NTT_SHOUP_ENTRY_BYTES, "Shoup twiddle entry size (ntt.h)");
#endif

// Root from w_T^j in Montgomery form.
__device__ __forceinline__ void store_root(Root* dst, const Fr& w_mont) {
#ifdef CUZK_NTT_MONT_ROOTS
    store_fr(&dst->w, w_mont);
#else
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
#endif
}

// d * w_T^j for the root entry at `root` (global memory).
__device__ __forceinline__ Fr mul_root(const Fr& d, const Root* root) {
    const uint4* p = reinterpret_cast<const uint4*>(root);
#ifdef CUZK_NTT_MONT_ROOTS
    const uint4 a = __ldg(p), b = __ldg(p + 1);
    Fr w;
    w.l[0] = a.x; w.l[1] = a.y; w.l[2] = a.z; w.l[3] = a.w;
    w.l[4] = b.x; w.l[5] = b.y; w.l[6] = b.z; w.l[7] = b.w;
    return d * w;
#else
    const uint4 a = __ldg(p), b = __ldg(p + 1), c = __ldg(p + 2), e = __ldg(p + 3), f = __ldg(p + 4);
    const uint32_t w[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
    const uint32_t wp[9] = {c.x, c.y, c.z, c.w, e.x, e.y, e.z, e.w, f.x};
    Fr r;
#ifdef CUZK_NTT_LAZY
    cuzk::shoup::mul_lazy(r.l, d.l, w, wp);  // below 2r
#else
    cuzk::shoup::mul(r.l, d.l, w, wp);
#endif
    return r;
#endif
}

#ifdef CUZK_NTT_LAZY
// Lazy butterflies (default with Shoup roots): inside a pass values are kept
// below 2r instead of r (2r < 2^256 < 4r), so that the Shoup product, which
// takes any x < 2^256 and leaves t < 2r, needs no final conditional
// subtraction (shoup::mul_lazy); the pass reduces each element once before
// its twiddle and store. The sum a + b of two values below 2r can carry out
// of 256 bits: it is reduced by 2r with that carry taken into account.
// Limb i of 2r (r < 2^255: 2r fits 8 limbs), from FrParams' modulus.
constexpr uint32_t two_r(int i) {
    return (cuzk::FrParams::modulus(i) << 1) | (i > 0 ? cuzk::FrParams::modulus(i - 1) >> 31 : 0u);
}
__device__ constexpr uint32_t kTwoR[8] = {two_r(0), two_r(1), two_r(2), two_r(3),
                                          two_r(4), two_r(5), two_r(6), two_r(7)};

// a + b, reduced below 2r, for a, b < 2r.
__device__ __forceinline__ Fr add_lazy(const Fr& a, const Fr& b) {
    uint32_t s[8], c, m;
    asm("add.cc.u32 %0, %9, %17;\n\t"
        "addc.cc.u32 %1, %10, %18;\n\t"
        "addc.cc.u32 %2, %11, %19;\n\t"
        "addc.cc.u32 %3, %12, %20;\n\t"
        "addc.cc.u32 %4, %13, %21;\n\t"
        "addc.cc.u32 %5, %14, %22;\n\t"
        "addc.cc.u32 %6, %15, %23;\n\t"
        "addc.cc.u32 %7, %16, %24;\n\t"
        "addc.u32 %8, 0, 0;"
        : "=r"(s[0]), "=r"(s[1]), "=r"(s[2]), "=r"(s[3]), "=r"(s[4]), "=r"(s[5]), "=r"(s[6]), "=r"(s[7]),
          "=r"(c)
        : "r"(a.l[0]), "r"(a.l[1]), "r"(a.l[2]), "r"(a.l[3]), "r"(a.l[4]), "r"(a.l[5]), "r"(a.l[6]),
          "r"(a.l[7]), "r"(b.l[0]), "r"(b.l[1]), "r"(b.l[2]), "r"(b.l[3]), "r"(b.l[4]), "r"(b.l[5]),
          "r"(b.l[6]), "r"(b.l[7]));
    uint32_t t[8];
    // t = s - 2r; m = carry - borrow: 0 (keep t) or all ones (s < 2r: keep s).
    asm("sub.cc.u32 %0, %9, %17;\n\t"
        "subc.cc.u32 %1, %10, %18;\n\t"
        "subc.cc.u32 %2, %11, %19;\n\t"
        "subc.cc.u32 %3, %12, %20;\n\t"
        "subc.cc.u32 %4, %13, %21;\n\t"
        "subc.cc.u32 %5, %14, %22;\n\t"
        "subc.cc.u32 %6, %15, %23;\n\t"
        "subc.cc.u32 %7, %16, %24;\n\t"
        "subc.u32 %8, %25, 0;"
        : "=r"(t[0]), "=r"(t[1]), "=r"(t[2]), "=r"(t[3]), "=r"(t[4]), "=r"(t[5]), "=r"(t[6]), "=r"(t[7]),
          "=r"(m)
        : "r"(s[0]), "r"(s[1]), "r"(s[2]), "r"(s[3]), "r"(s[4]), "r"(s[5]), "r"(s[6]), "r"(s[7]),
          "n"(kTwoR[0]), "n"(kTwoR[1]), "n"(kTwoR[2]), "n"(kTwoR[3]), "n"(kTwoR[4]), "n"(kTwoR[5]),
          "n"(kTwoR[6]), "n"(kTwoR[7]), "r"(c));
    Fr r;
#pragma unroll
    for (int i = 0; i < 8; ++i) r.l[i] = (s[i] & m) | (t[i] & ~m);
    return r;
}

// a - b, plus 2r when it borrowed: below 2r for a, b < 2r.
__device__ __forceinline__ Fr sub_lazy(const Fr& a, const Fr& b) {
    Fr r = a;
    const uint32_t borrow = cuzk::detail::sub_n<8>(r.l, b.l);
    uint32_t m[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) m[i] = kTwoR[i] & borrow;
    cuzk::detail::add_n<8>(r.l, m);
    return r;
}

// r - v for v < r: in (0, r] (r itself for v = 0), which the lazy passes
// and Fr::mul_lazy take as they are.
__device__ __forceinline__ Fr neg_lazy(const Fr& v) {
    Fr r = Fr::modulus();
    cuzk::detail::sub_n<8>(r.l, v.l);
    return r;
}
// 2r - v for v < 2r: in (0, 2r], below 2^256 (Shoup's product takes it).
__device__ __forceinline__ Fr neg_2r(const Fr& v) {
    Fr r;
#pragma unroll
    for (int i = 0; i < 8; ++i) r.l[i] = kTwoR[i];
    cuzk::detail::sub_n<8>(r.l, v.l);
    return r;
}
#endif

// The butterfly's sum and difference, and the reduction of a pass's output:
// below 2r with lazy butterflies (then to_canonical reduces once), else
// canonical.
__device__ __forceinline__ Fr bf_add(const Fr& a, const Fr& b) {
#ifdef CUZK_NTT_LAZY
    return add_lazy(a, b);
#else
    return a + b;
#endif
}
__device__ __forceinline__ Fr bf_sub(const Fr& a, const Fr& b) {
#ifdef CUZK_NTT_LAZY
    return sub_lazy(a, b);
#else
    return a - b;
#endif
}
__device__ __forceinline__ Fr to_canonical(const Fr& v) {
#ifdef CUZK_NTT_LAZY
    return Fr::reduce_once(v);  // below 2r -> below r
#else
    return v;
#endif
}

// w^e from two-level tables.
__device__ __forceinline__ Fr power(const Fr* lo, const Fr* hi, uint32_t lo_bits, uint64_t e) {
    return load_fr(hi + (e >> lo_bits)) * load_fr(lo + (e & ((1ull << lo_bits) - 1)));
}

__device__ __forceinline__ uint32_t bitrev(uint32_t x, uint32_t bits) {
    return bits == 0 ? 0 : (__brev(x) >> (32 - bits));
}

// Kernel variants, picked by CUZK_NTT_VARIANT so that the bench can time
// them side by side in one run: 0 the default, ntt_pass_r2 (radix-2 stages
// through shared memory, registers capped by __maxnreg__); 1, 2, 3 =
// ntt_pass<G, B> with (stages per register round G, min blocks per SM B)
// = (2, 2), (3, 2), (3, 1). On the H200 (BENCHMARKS.md) the register
// radix-4/8 variants were slower: fewer warps an SM cost more than the
// shared-memory rounds they save.
constexpr int kNumVariants = 4;

int ntt_variant() {
    const char* v = std::getenv("CUZK_NTT_VARIANT");
    const int i = v ? std::atoi(v) : 0;
    return i >= 0 && i < kNumVariants ? i : 0;
}

// G consecutive radix-2 DIF stages (s .. s+G-1 of a column of R = 2^log_r)
// on units of 2^G elements held in registers. The first stage's half-size
// is h = 2^(log_r - 1 - s); a unit is the 2^G elements base + e*H,
// H = h / 2^(G-1), of one 2h-block. Twiddles w_R^j = w_T^(j 2^rs) come
// from `roots` (w_T^j, T = 2^(log_r + rs)).
template <int G>
__device__ __forceinline__ void dif_group(const SharedTile sh, const Root* __restrict__ roots, uint32_t rs,
                                          uint32_t log_r, uint32_t log_w, uint32_t s, uint32_t tile) {
    const uint32_t log_h = log_r - 1 - s;
    const uint32_t log_H = log_h - (G - 1);
    const uint32_t W = 1u << log_w;
    // Units of one column: 2^(log_r - G) = blocks (2h-blocks) x offsets jj.
    // Offset-major order (jj in the high bits of u) when a warp's 32 units
    // then share one jj: the twiddle-free units (jj = 0, w^0 = 1) fill whole
    // warps, which skip their multiplies, instead of one lane in every warp
    // (which skips nothing). It pays at the small half-sizes h = 2, 4, 8, ...
    // where 1/h of the butterflies are twiddle-free; block-major order (jj
    // in the low bits, consecutive lanes on consecutive rows) otherwise.
    const uint32_t log_blocks = log_r - G - log_H;
#ifdef CUZK_NTT_BLOCK_MAJOR /* developer switch: the block-major order alone */
    const bool offset_major = false;
#else
    const bool offset_major = log_H > 0 && log_w >= CUZK_NTT_OM_MIN_LOG_W && log_blocks + log_w >= 5;
#endif
    // Radix-2 units two a trip (session 11: -0.8 to -1.1% against no
    // unrolling, 4 no better; ptxas runs the two one after the other,
    // sharing the address arithmetic, not interleaved: that would need
    // registers). The register radix-4/8 variants stay rolled.
    constexpr int kUnrollU = G == 1 ? CUZK_NTT_UNROLL_U : 1;
#pragma unroll kUnrollU
    for (uint32_t u = threadIdx.x; u < (tile >> G); u += blockDim.x) {
        const uint32_t k = u & (W - 1), j = u >> log_w;
        uint32_t blk, jj;
        if (offset_major) {
            blk = j & ((1u << log_blocks) - 1);
            jj = j >> log_blocks;
        } else {
            blk = j >> log_H;
            jj = j & ((1u << log_H) - 1);
        }
        const uint32_t base = (blk << (log_h + 1)) | jj;
        Fr x[1 << G];
#pragma unroll
        for (int e = 0; e < (1 << G); ++e) x[e] = sh.ld(((base + (e << log_H)) << log_w) | k);
#pragma unroll
        for (int t = 0; t < G; ++t) {
            const int half = 1 << (G - 1 - t);
#pragma unroll
            for (int e = 0; e < (1 << G); ++e) {
                if (e & half) continue;
                const uint32_t jm = jj + ((uint32_t)(e & (half - 1)) << log_H);
                const Fr a = x[e], b = x[e + half];
                x[e] = bf_add(a, b);
                const Fr d = bf_sub(a, b);
                x[e + half] = jm == 0 ? d : mul_root(d, &roots[jm << (s + t + rs)]);
            }
        }
#pragma unroll
        for (int e = 0; e < (1 << G); ++e) sh.st(((base + (e << log_H)) << log_w) | k, x[e]);
    }
}

// One radix-2 DIF stage s (half-size h = 2^(log_r - 1 - s)) on every column
// of the tile: dif_group<1> with its unit-to-row map as one bit permutation
// of the unit index, set up once a stage (session 13). Unit u holds column
// k (its low log_w bits) and j = u >> log_w, which is [blk | jj] in
// block-major order and [jj | blk] in offset-major order (jj: the offset in
// the 2h-block, log_h bits; blk: the block, log_r - 1 - log_h bits); its
// rows are blk 2h + jj and that + h. In both orders the tile index of the
// first row is ((u & mA) << sA) | ((u & mB) >> sB) | (u & mC), and
// jj = (u & mJ) >> sJ.
__device__ __forceinline__ void dif_stage(const SharedTile sh, const Root* __restrict__ roots, uint32_t rs,
                                          uint32_t log_r, uint32_t log_w, uint32_t s, uint32_t tile) {
    const uint32_t log_h = log_r - 1 - s;
    const uint32_t log_blocks = log_r - 1 - log_h;
#ifdef CUZK_NTT_BLOCK_MAJOR
    const bool offset_major = false;
#else
    const bool offset_major = log_h > 0 && log_w >= CUZK_NTT_OM_MIN_LOG_W && log_blocks + log_w >= 5;
#endif
    const uint32_t mk = (1u << log_w) - 1;
    // Offset-major: blk -> row bits log_h + 1 up, jj -> row bits 0 up, k stays.
    // Block-major: k and jj stay, blk moves up one bit.
    const uint32_t om_a = ((1u << log_blocks) - 1) << log_w, bm_c = (1u << (log_h + log_w)) - 1;
    const uint32_t mA = offset_major ? om_a : ~bm_c;
    const uint32_t sA = offset_major ? log_h + 1 : 1u;
    const uint32_t mB = offset_major ? ~(om_a | mk) : 0u;
    const uint32_t sB = offset_major ? log_blocks : 0u;
    const uint32_t mC = offset_major ? mk : bm_c;
    const uint32_t mJ = offset_major ? ~(om_a | mk) : bm_c & ~mk;
    const uint32_t sJ = offset_major ? log_w + log_blocks : log_w;
    const uint32_t step = 1u << (log_h + log_w);  // tile index of row + h
    const uint32_t rsh = s + rs;                   // root index jj << (s + rs)
#ifdef CUZK_NTT_DEV_ROOT_SHIFT
    const uint32_t rsh6 = rsh + 6, rsh4 = rsh + 4;  // 80 = 2^6 + 2^4
    static_assert(sizeof(Root) == 80, "CUZK_NTT_DEV_ROOT_SHIFT assumes 80-byte roots");
#endif
    // One butterfly: rows i0 and i0 + h of a column, root index jj.
    auto unit = [&](uint32_t i0, uint32_t jj) {
        const uint32_t i1 = i0 + step;
        const Fr a = sh.ld(i0), b = sh.ld(i1);
        const Fr d = bf_sub(a, b);
        sh.st(i0, bf_add(a, b));
#ifdef CUZK_NTT_DEV_ROOT_SHIFT /* developer switch: the root's address by shifts and adds (ALU), not IMAD.WIDE */
        // Byte offset (jj << rsh) * 80 by two variable shifts (ptxas turns
        // constant multiples into IMAD).
        const Root* rp = reinterpret_cast<const Root*>(reinterpret_cast<const char*>(roots) +
                                                       ((jj << rsh6) + (jj << rsh4)));
        sh.st(i1, jj == 0 ? d : mul_root(d, rp));
#else
        sh.st(i1, jj == 0 ? d : mul_root(d, &roots[jj << rsh]));
#endif
    };
    auto map_i0 = [&](uint32_t u) { return ((u & mA) << sA) | ((u & mB) >> sB) | (u & mC); };
    auto map_jj = [&](uint32_t u) { return (u & mJ) >> sJ; };
    constexpr int kUnrollU = CUZK_NTT_UNROLL_U;
#ifndef CUZK_NTT_DEV_UNIT_MAP /* developer switch: the rolled loop for four units a thread too */
    // Four units a thread (large transforms: blocks of tile / 8 threads),
    // as straight-line code. The map is linear in the bits of u, and the
    // thread's units are u = tid + m T (T = blockDim.x, a power of two above
    // tid's bits): the thread's part is mapped once a stage, the parts of T
    // and 2 T are the block's (uniform registers). Session 16, H200: 2^27
    // -0.4%, 2^26 -0.6%, 2^24 -0.9%; the same two units a trip of a rolled
    // loop were 1% slower at 2^27, and byte addresses with uniform offsets
    // had no fewer instructions (ptxas rebuilds the same LEAs).
    if (tile == 8 * blockDim.x) {
        const uint32_t tid = threadIdx.x, T = blockDim.x;
        const uint32_t i0_t = map_i0(tid), jj_t = map_jj(tid);
        const uint32_t i0_1 = map_i0(T), jj_1 = map_jj(T), i0_2 = map_i0(2 * T), jj_2 = map_jj(2 * T);
        unit(i0_t, jj_t);
        unit(i0_t + i0_1, jj_t + jj_1);
        unit(i0_t + i0_2, jj_t + jj_2);
        unit(i0_t + i0_1 + i0_2, jj_t + jj_1 + jj_2);
        return;
    }
#endif
#pragma unroll kUnrollU
    for (uint32_t u = threadIdx.x; u < (tile >> 1); u += blockDim.x) unit(map_i0(u), map_jj(u));
}

// One four-step pass over every vector of the batch.
//   log_n: vector size; log_b: sub-problem size B (contiguous blocks of B);
//   tw_full: null, or the pass's twiddle table: tw_tiled set, all B
//   twiddles in the tiles' order (cuzk_ntt_powers_tiled); else the half
//   table w_B^k for k < B/2 (w_B^(k + B/2) = -w_B^k); tw_shoup set: Shoup
//   entries (Root), else Montgomery Fr. With a table the twiddles between
//   passes are loads instead of two-level products (one Fr multiply an
//   element less);
//   log_r: radix R of this pass; columns have stride C = B / R;
//   log_w: columns per tile (tile = R x W elements);
//   roots: w_T^j for j < T/2, T = 2^log_t >= R (cuzk_ntt_roots).
// Grid: one block per tile; tiles enumerate (vector, sub-problem, column group).
// Developer switches for measuring what the twiddle-table reads cost (wrong
// results): CUZK_NTT_DEV_TW_HOT reads the first 1024 entries only (cache
// resident), CUZK_NTT_DEV_TW_COAL entries in the order of the tile's
// elements (coalesced, streamed once).
#if defined(CUZK_NTT_DEV_TW_HOT)
#define CUZK_NTT_TW_INDEX(x) ((x) & 1023u)
#elif defined(CUZK_NTT_DEV_TW_COAL)
#define CUZK_NTT_TW_INDEX(x) (((t_id << (log_r + log_w)) + (((uint64_t)p << log_w) | k)) & (half - 1))
#else
#define CUZK_NTT_TW_INDEX(x) (x)
#endif
// CS: the pass stores its outputs as streaming stores (store_fr_cs), for
// transforms far larger than L2 (the next pass reads them only after the
// whole pass has streamed through L2).
// KTL: log2 of the tile when the kernel is built for one tile size (0: any,
// from log_r + log_w), so that the offset of an element's high half in
// shared memory is an immediate (session 16).
template <int MAXG, bool CS = false, int KTL = 0>
__device__ __forceinline__ void ntt_pass_body(Fr* __restrict__ data, uint32_t log_n, uint32_t log_b, uint32_t log_r,
                                              uint32_t log_w, const Fr* __restrict__ tw_lo,
                                              const Fr* __restrict__ tw_hi, uint32_t lo_bits,
                                              const Fr* __restrict__ tw_full, uint32_t tw_shoup,
                                              uint32_t tw_tiled, const Root* __restrict__ roots,
                                              uint32_t log_t, uint64_t tiles) {
    extern __shared__ uint4 smem_raw[];
    const uint32_t R = 1u << log_r, W = 1u << log_w, tile = KTL ? 1u << KTL : R * W;
    const SharedTile sh{smem_raw, tile};
    const uint32_t rs = log_t - log_r;  // w_R^j = w_T^(j 2^rs)

    const uint32_t log_c = log_b - log_r;
    // Packed tiles: a pass of one column (log_c = 0, the last pass) holds W
    // whole sub-problems a tile, sub-problem k of the tile as its column k
    // (element t of it at base + k R + t), so that the stages run as on a
    // W-column tile (offset-major order, twiddle-free warps).
    const bool packed = log_c == 0 && log_w > 0;
    const uint32_t log_cs = packed ? log_r : 0;      // column stride in global memory
    const uint32_t log_rs = packed ? 0 : log_c;      // row stride in global memory
    // Column groups per sub-problem: C / W = 2^log_gps (a shift and a mask
    // per tile instead of a 64-bit division).
    const uint32_t log_gps = packed ? 0u : log_c - log_w;
    // A thread keeps its column k through the load and finish loops when the
    // block's stride is a whole number of rows (blockDim.x a multiple of W):
    // its global address, and its entry of a tiled twiddle table, then
    // advance by fixed steps (session 16: strength reduction of the
    // per-element index arithmetic); otherwise each element computes its own.
    const bool fixed_k = (blockDim.x & (W - 1)) == 0;
    const uint32_t k0 = threadIdx.x & (W - 1), p0 = threadIdx.x >> log_w, dp = blockDim.x >> log_w;
    const uint64_t g_step = (uint64_t)dp << log_rs;  // elements between a thread's consecutive rows

    for (uint64_t t_id = blockIdx.x; t_id < tiles; t_id += gridDim.x) {
        const uint64_t group = packed ? 0 : t_id & ((1ull << log_gps) - 1);
        const uint64_t sub = t_id >> log_gps;  // over all vectors: sub-problem (packed: tile) index
        const uint64_t base = packed ? sub << (log_r + log_w) : (sub << log_b) + (group << log_w);
        // Global offset of the tile's element (row t, column k).
        auto g_at = [&](uint32_t k, uint32_t t) -> uint64_t {
            return base + ((uint64_t)k << log_cs) + ((uint64_t)t << log_rs);
        };
#ifdef CUZK_NTT_DEV_GRID_DIV
        // Developer switch: tiles after a block's first were loaded during the
        // last one's finish (below).
        if (t_id == blockIdx.x)
#endif
        __syncthreads();
        // Load: element (row t, column k) at base + k + C t (packed: base +
        // k R + t); k fastest across threads.
#ifdef CUZK_NTT_DEV_GRID_DIV
        if (t_id == blockIdx.x)
#endif
        {
#ifdef CUZK_NTT_DEV_NO_GLOBAL /* developer switch: compute alone (wrong results) */
            for (uint32_t i = threadIdx.x; i < tile; i += blockDim.x) {
                Fr v;
                for (int q = 0; q < 8; ++q) v.l[q] = q == 0 ? (uint32_t)(base + i) : 0u;
                sh.st(i, v);
            }
#else
            auto load = [&](uint32_t i, const Fr* src) {
#ifdef CUZK_NTT_NO_CP_ASYNC /* developer switch: loads through registers */
                sh.st(i, load_fr(src));
#else
                sh.cp_async(i, src);
#endif
            };
            if (fixed_k) {
                const Fr* src = data + g_at(k0, p0);
                for (uint32_t i = threadIdx.x; i < tile; i += blockDim.x, src += g_step) load(i, src);
            } else {
                for (uint32_t i = threadIdx.x; i < tile; i += blockDim.x)
                    load(i, data + g_at(i & (W - 1), i >> log_w));
            }
#endif
        }
        SharedTile::cp_async_wait();
        __syncthreads();
        // Twiddle w_B^(u c) = w_N^(u c N/B) and store, for the element at
        // row p (holding u = bitrev(p)) of column k of the tile.
#if defined(CUZK_NTT_DEV_NO_COMPUTE) || defined(CUZK_NTT_DEV_NO_TWIDDLE) /* no twiddles (wrong results) */
        const bool twiddle = false;
#else
        const bool twiddle = log_c > 0;
#endif
        // Tiled table (cuzk_ntt_powers_tiled): the entry of w_B^(bitrev(p) c)
        // for row p and column c = group W + k is ((c >> 2) << (log_r + 2)) |
        // (p << 2) | (c & 3), so that a tile of 4 columns reads its twiddles as
        // one contiguous run.
        // tw_entry: that entry's address (Root or Fr by tw_shoup; null without
        // a tiled table).
        const uint32_t tw_bytes = tw_shoup ? (uint32_t)sizeof(Root) : (uint32_t)sizeof(Fr);
        auto tw_entry = [&](uint32_t k, uint32_t p) -> const char* {
            const uint64_t c = (group << log_w) + k;
            const uint64_t at = ((c >> 2) << (log_r + 2)) | ((uint64_t)p << 2) | (c & 3);
            return twiddle && tw_tiled ? reinterpret_cast<const char*>(tw_full) + at * tw_bytes : nullptr;
        };
        // Element (row p, column k) of the tile, stored at `out`; `tw_e`: its
        // entry of a tiled twiddle table (tw_entry).
        auto finish = [&](Fr v, uint32_t k, uint32_t p, Fr* out, const char* tw_e) {
#if defined(CUZK_NTT_LAZY) && !defined(CUZK_NTT_CANONICAL_STORE)
            // Lazy pass outputs (session 13): a pass with another after it
            // stores values below 2r, which that pass's lazy butterflies take
            // as they are; only the last pass reduces to canonical. An element
            // with a twiddle is reduced below r for the Montgomery product
            // (operator*'s bound), negated as r - v (in (0, r], no zero test)
            // and multiplied without the product's final subtraction.
            if (!twiddle) v = to_canonical(v);
#else
            v = to_canonical(v);
#endif
            if (twiddle && tw_tiled) {
                // Tiled table: w_B^(bitrev(p) c) at tw_e (tw_entry).
#if defined(CUZK_NTT_LAZY) && !defined(CUZK_NTT_CANONICAL_STORE)
                if (tw_shoup) {
                    v = mul_root(v, reinterpret_cast<const Root*>(tw_e));  // any v < 2^256
                } else {
                    v = Fr::mul_lazy(Fr::reduce_once(v), load_fr(reinterpret_cast<const Fr*>(tw_e)));
                }
#else
                if (tw_shoup) {
                    v = Fr::reduce_once(mul_root(v, reinterpret_cast<const Root*>(tw_e)));
                } else {
                    v = v * load_fr(reinterpret_cast<const Fr*>(tw_e));
                }
#endif
            } else if (twiddle) {
                const uint64_t c = (group << log_w) + k;
                const uint64_t e = (uint64_t)bitrev(p, log_r) * c;  // < B
                if (e != 0) {
#if defined(CUZK_NTT_LAZY) && !defined(CUZK_NTT_CANONICAL_STORE)
                    if (tw_full && tw_shoup) {
                        // Half table of Shoup entries (w, w'): any v < 2^256.
                        const uint64_t half = 1ull << (log_b - 1);
                        if (e & half) v = neg_2r(v);
                        v = mul_root(v, reinterpret_cast<const Root*>(tw_full) + CUZK_NTT_TW_INDEX(e & (half - 1)));
                    } else if (tw_full) {
                        // Half table: w_B^(e + B/2) = -w_B^e.
                        v = Fr::reduce_once(v);
                        const uint64_t half = 1ull << (log_b - 1);
                        if (e & half) v = neg_lazy(v);
                        v = Fr::mul_lazy(v, load_fr(tw_full + CUZK_NTT_TW_INDEX(e & (half - 1))));
                    } else {
                        v = Fr::reduce_once(v);
                        v = Fr::mul_lazy(v, power(tw_lo, tw_hi, lo_bits, e << (log_n - log_b)));
                    }
#else
                    if (tw_full && tw_shoup) {
                        // mul_root is below 2r in a lazy build: reduce before -v.
                        const uint64_t half = 1ull << (log_b - 1);
                        v = Fr::reduce_once(mul_root(v, reinterpret_cast<const Root*>(tw_full) + (e & (half - 1))));
                        if (e & half) v = -v;
                    } else if (tw_full) {
                        // Half table: w_B^(e + B/2) = -w_B^e.
                        const uint64_t half = 1ull << (log_b - 1);
                        v = v * load_fr(tw_full + (e & (half - 1)));
                        if (e & half) v = -v;
                    } else {
                        v = v * power(tw_lo, tw_hi, lo_bits, e << (log_n - log_b));
                    }
#endif
                }
            }
#ifdef CUZK_NTT_DEV_NO_GLOBAL
            if (v.l[0] == 0xdeadbeefu && v.l[1] == 0x12345678u)
#endif
            {
                if constexpr (CS) store_fr_cs(out, v);
                else store_fr(out, v);
            }
        };
        // log_r radix-2 DIF stages on every column, up to three at a time in
        // registers (radix-8 units): one shared-memory round trip and one
        // barrier per three stages.
#ifdef CUZK_NTT_DEV_NO_COMPUTE /* developer switch: memory alone (wrong results) */
        for (uint32_t st = log_r; st < log_r;) {
#else
        for (uint32_t st = 0; st < log_r;) {
#endif
            const uint32_t g = log_r - st >= (uint32_t)MAXG ? (uint32_t)MAXG : log_r - st;
            if (g == 3) dif_group<3>(sh, roots, rs, log_r, log_w, st, tile);
            else if (g == 2) dif_group<2>(sh, roots, rs, log_r, log_w, st, tile);
#ifdef CUZK_NTT_OLD_INDEX /* developer switch: session 12's unit-to-row map */
            else dif_group<1>(sh, roots, rs, log_r, log_w, st, tile);
#else
            else dif_stage(sh, roots, rs, log_r, log_w, st, tile);
#endif
            __syncthreads();
            st += g;
        }
#ifdef CUZK_NTT_DEV_GRID_DIV
        // The block's next tile, slot by slot into the slots this thread has
        // read (each refilled after finish consumed its value).
        const uint64_t nt = t_id + gridDim.x;
        const bool more = nt < tiles;
        const uint64_t ngroup = packed ? 0 : nt & ((1ull << log_gps) - 1);
        const uint64_t nbase = packed ? (nt >> log_gps) << (log_r + log_w)
                                      : ((nt >> log_gps) << log_b) + (ngroup << log_w);
        for (uint32_t i = threadIdx.x; i < tile; i += blockDim.x) {
            const uint32_t k = i & (W - 1), p = i >> log_w;
            finish(sh.ld(i), k, p, data + g_at(k, p), tw_entry(k, p));
            if (more) sh.cp_async(i, data + nbase + ((uint64_t)k << log_cs) + ((uint64_t)p << log_rs));
        }
#else
        if (fixed_k) {
            // Row p advances by dp: the table entry by dp << 2 (p << 2 is
            // disjoint from the column bits), the address by g_step.
            Fr* out = data + g_at(k0, p0);
            const char* tw_e = tw_entry(k0, p0);
            const uint64_t tw_step = twiddle && tw_tiled ? ((uint64_t)dp << 2) * tw_bytes : 0;
            uint32_t p = p0;
            for (uint32_t i = threadIdx.x; i < tile; i += blockDim.x, p += dp, out += g_step, tw_e += tw_step)
                finish(sh.ld(i), k0, p, out, tw_e);
        } else {
            for (uint32_t i = threadIdx.x; i < tile; i += blockDim.x) {
                const uint32_t k = i & (W - 1), p = i >> log_w;
                finish(sh.ld(i), k, p, data + g_at(k, p), tw_entry(k, p));
            }
        }
#endif
    }
}

#define CUZK_NTT_PASS_PARAMS                                                                          \
    Fr *__restrict__ data, uint32_t log_n, uint32_t log_b, uint32_t log_r, uint32_t log_w,           \
        const Fr *__restrict__ tw_lo, const Fr *__restrict__ tw_hi, uint32_t lo_bits,                 \
        const Fr *__restrict__ tw_full, uint32_t tw_shoup, uint32_t tw_tiled, const Root *__restrict__ roots, \
        uint32_t log_t, \
        uint64_t tiles
#define CUZK_NTT_PASS_ARGS \
    data, log_n, log_b, log_r, log_w, tw_lo, tw_hi, lo_bits, tw_full, tw_shoup, tw_tiled, roots, log_t, tiles

// The default variant: radix-2 stages with a register cap, so that three
// blocks of 256 threads fit an SM's 64 Ki registers (uncapped, ptxas takes
// 84, and 3 x 8 warps x 84 x 32 rounded up to 256 a warp is over 64 Ki).
// On the H200 (nvcc 13.0, BENCHMARKS.md sessions 9 and 10) fewer registers
// were faster as long as nothing spills: session 9's kernel took 64 under a
// cap of 72 (2^27 36.96 ms against 37.5-37.9 at 68-80); the lazy butterflies
// take 70 under 72 and run faster capped at 64 (2^27 36.0 against 36.5 ms,
// with no spills).
#ifndef CUZK_NTT_MAXNREG /* developer switch */
#define CUZK_NTT_MAXNREG 64
#endif
template <bool CS, int KTL>
__global__ void __maxnreg__(CUZK_NTT_MAXNREG) ntt_pass_r2(CUZK_NTT_PASS_PARAMS) {
    ntt_pass_body<1, CS, KTL>(CUZK_NTT_PASS_ARGS);
}

// The register radix-4/8 variants (CUZK_NTT_VARIANT 1..3).
template <int MAXG, int MINB>
__global__ void __launch_bounds__(kThreads, MINB) ntt_pass(CUZK_NTT_PASS_PARAMS) {
    ntt_pass_body<MAXG>(CUZK_NTT_PASS_ARGS);
}

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

// log2 of T, the order of the roots table's root: min(log_n, kMaxPass),
// at least every pass's radix.
uint32_t roots_log_t(uint32_t log_n) { return log_n < (uint32_t)kMaxPass ? log_n : (uint32_t)kMaxPass; }

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

// The pass plan of cuzk_ntt_dif: log_n split into passes of at most
// kMaxPass bits, as even as possible (ceil share of what is left first);
// log_b[p] is pass p's sub-problem size. Returns the number of passes.
uint32_t plan_passes(uint32_t log_n, uint32_t (&log_b)[8], uint32_t (&log_r)[8]) {
    const uint32_t passes = (log_n + kMaxPass - 1) / kMaxPass;
    uint32_t b = log_n;
    for (uint32_t p = 0; p < passes; ++p) {
        const uint32_t left = passes - p;
        log_b[p] = b;
        log_r[p] = (b + left - 1) / left;
        b -= log_r[p];
    }
    return passes;
}

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

__global__ void mul_sub_scale_kernel(const Fr* a, const Fr* b, const Fr* c, Fr* out, uint64_t n,
                                     const Fr* factor) {
    const Fr f = load_fr(factor);
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x)
        store_fr(out + i, (load_fr(a + i) * load_fr(b + i) - load_fr(c + i)) * f);
}

// A grid of at most `waves` blocks per SM for grid-stride kernels.
cuzk_status grid_for(int32_t device, uint64_t work, uint32_t threads, uint32_t* blocks) {
    int sms = 0;
    CUZK_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    const uint64_t want = (work + threads - 1) / threads;
    const uint64_t cap = (uint64_t)sms * 32;
    *blocks = (uint32_t)(want < cap ? (want ? want : 1) : cap);
    return ok();
}

#define CUZK_NEED(cond, ...) \
    if (!(cond)) return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0, __VA_ARGS__)

// The checks and launch shared by cuzk_ntt_powers and cuzk_ntt_powers_shoup:
// entries k < 2^(log_b - 1) of w_B^k (B = 2^log_b) from the two-level tables
// of w_N (N = 2^log_n), written by `kernel` as `Entry`s (Fr or Root).
template <class Entry>
cuzk_status launch_powers(const char* name, void (*kernel)(Entry*, uint32_t, uint32_t, const Fr*, const Fr*, uint32_t),
                          int32_t device, void* out, uint32_t log_b, uint32_t log_n, const void* tw_lo,
                          const void* tw_hi, uint32_t lo_bits, void* stream) {
    return guard(name, [&]() -> cuzk_status {
        CUZK_NEED(log_b >= 1 && log_b <= log_n && log_n <= 32,
                  "%s: log_b %u, log_n %u (need 1 <= log_b <= log_n <= 32)", name, log_b, log_n);
        CUZK_NEED(out && tw_lo && tw_hi, "%s: null pointer", name);
        CUZK_NEED(((uintptr_t)out & 15) == 0, "%s: out not 16-byte aligned", name);
        CUZK_NEED(lo_bits <= log_n, "%s: lo_bits %u > log_n %u", name, lo_bits, log_n);
        CUZK_CUDA_TRY(cudaSetDevice(device));
        uint32_t blocks = 0;
        cuzk_status s = grid_for(device, 1ull << (log_b - 1), 256, &blocks);
        if (s.code != CUZK_OK) return s;
        kernel<<<blocks, 256, 0, (cudaStream_t)stream>>>((Entry*)out, log_b - 1, log_n - log_b,
                                                          (const Fr*)tw_lo, (const Fr*)tw_hi, lo_bits);
        CUZK_CUDA_TRY(cudaGetLastError());
        return ok();
    });
}
}  // namespace

extern "C" {

cuzk_status cuzk_ntt_dif(int32_t device, void* data, uint32_t log_n, uint64_t batch,
                         const void* tw_lo, const void* tw_hi, uint32_t lo_bits,
                         const void* const* pass_tw, uint32_t pass_tw_count,
                         uint32_t pass_tw_shoup, uint32_t pass_tw_tiled, const void* roots, void* stream) {
    return guard("cuzk_ntt_dif", [&]() -> cuzk_status {
        CUZK_NEED(log_n <= 32, "cuzk_ntt_dif: log_n = %u exceeds Fr's two-adicity (32)", log_n);
        CUZK_NEED(data && tw_lo && tw_hi, "cuzk_ntt_dif: null pointer");
        CUZK_NEED(roots, "cuzk_ntt_dif: null roots table (make it with cuzk_ntt_roots)");
        CUZK_NEED(((uintptr_t)roots & 15) == 0, "cuzk_ntt_dif: roots table not 16-byte aligned");
        CUZK_NEED(lo_bits <= log_n, "cuzk_ntt_dif: lo_bits %u > log_n %u", lo_bits, log_n);
        CUZK_NEED(pass_tw || pass_tw_count == 0, "cuzk_ntt_dif: null pass_tw with count %u",
                  pass_tw_count);
        for (uint32_t p = 0; p < pass_tw_count; ++p)
            CUZK_NEED(((uintptr_t)pass_tw[p] & 15) == 0, "cuzk_ntt_dif: pass_tw[%u] not 16-byte aligned", p);
        uint32_t plan_b[8], plan_r[8];
        const uint32_t passes = plan_passes(log_n, plan_b, plan_r);
        // A tiled table needs four or more columns: checked before any
        // work, so that a refused call leaves the data and device as they were.
        for (uint32_t p = 0; p < passes && p < pass_tw_count; ++p)
            CUZK_NEED(!pass_tw[p] || !((pass_tw_tiled >> p) & 1u) || plan_b[p] >= plan_r[p] + 2,
                      "cuzk_ntt_dif: pass %u has %u columns, too few for a tiled table (need 4)", p,
                      1u << (plan_b[p] - plan_r[p]));
        if (batch == 0 || log_n == 0) return ok();
        CUZK_CUDA_TRY(cudaSetDevice(device));
        const int variant = ntt_variant();
        using Kernel = decltype(&ntt_pass_r2<false, 0>);
        const Kernel kernels[kNumVariants] = {ntt_pass_r2<false, 0>, ntt_pass<2, 2>, ntt_pass<3, 2>,
                                              ntt_pass<3, 1>};
        // Streaming stores of the pass outputs from 2^22 elements (128 MiB,
        // over twice the H200's 50 MB of L2) in all: the data streams
        // through L2 anyway, and evict-first outputs leave the roots and the
        // twiddle tables there (session 15, H200: 2^27 -0.3%, 2^24 even).
        const bool stream_out = log_n >= kStreamOutLog || batch >= (1ull << (kStreamOutLog - log_n));
        // The default variant has builds for the two full tile sizes, whose
        // shared-memory offsets are immediates (KTL).
        const Kernel k_any = variant == 0 && stream_out ? ntt_pass_r2<true, 0> : kernels[variant];
        const Kernel k_big = variant != 0 ? k_any : stream_out ? ntt_pass_r2<true, kTileLog> : ntt_pass_r2<false, kTileLog>;
        const Kernel k_small = variant != 0 ? k_any
                               : stream_out ? ntt_pass_r2<true, kTileLogSmall>
                                            : ntt_pass_r2<false, kTileLogSmall>;
        const size_t smem_max = sizeof(Fr) << kTileLog;
        // Raising the dynamic shared-memory limit is idempotent: do it each call.
        const Kernel launched[3] = {k_any, k_big, k_small};
        for (Kernel k : launched)
            CUZK_CUDA_TRY(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem_max));
        int sms = 0;
        CUZK_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
        for (uint32_t p = 0; p < passes; ++p) {
            const uint32_t log_b = plan_b[p], log_r = plan_r[p];
            const uint32_t log_c = log_b - log_r;
            // Columns a tile: a tile of 2^kTileLog elements (2^kTileLogSmall
            // for passes of at most 8 bits); the last pass (log_c = 0) packs
            // 2^kLastLogW whole sub-problems a tile (at most 2^kTileLog
            // elements), which lets its stages run offset-major like the
            // other passes' (session 13, H200: 2^27 32.40 -> 31.55 ms, 2^26
            // 15.72 -> 15.19, 2^24 3.70 -> 3.57 at 4 sub-problems a tile).
            const uint32_t tile_log = log_r <= 8 ? kTileLogSmall : kTileLog;
            uint32_t log_w = tile_log > log_r ? tile_log - log_r : 0;
            if (log_w > log_c) log_w = log_c;
            if (log_c == 0) {
                log_w = kLastLogW < (uint32_t)kTileLog - log_r ? kLastLogW : (uint32_t)kTileLog - log_r;
                if (log_w > log_n - log_r) log_w = log_n - log_r;
            }
            // Small transforms: narrower tiles until every SM has two
            // (2^16 has 32 tiles of 2^11 elements for 132 SMs; with one
            // column a tile, 256).
            while (log_w > 0 && (batch << (log_n - log_r - log_w)) < 2 * (uint64_t)sms) --log_w;
            const uint64_t tiles = batch << (log_n - log_r - log_w);
            const uint32_t tile = 1u << (log_r + log_w);
            uint32_t threads = tile / 2 < (uint32_t)kThreads ? (tile / 2 ? tile / 2 : 1) : kThreads;
            // Large transforms (64 tiles an SM or more): four butterflies a
            // thread a stage, in blocks of tile / 8 threads (128 for the 2^10
            // tiles of 8-bit passes, 256 for 2^11 tiles). The stage's four
            // units then run as straight-line code that shares the unit map
            // (dif_stage, session 16) and a barrier holds fewer warps
            // (sessions 12 and 13, H200: one-column tiles at two a
            // thread: 2^27 33.56 -> 32.45 ms; packed last pass and 2^10 tiles
            // at four: 2^24 3.70 -> 3.49). One-column tiles (a single pass
            // over a large batch) keep session 12's tile / 4 (four a thread
            // was slower there). Small transforms keep every thread they can
            // get: they have few tiles.
            const uint32_t div = log_w == 0 ? 4u : kTileDiv;  // one-column tiles: two a thread (session 12)
            if (tiles >= 64ull * (uint64_t)sms && tile / div >= 32 && tile / div < threads) threads = tile / div;
            const size_t smem = sizeof(Fr) << (log_r + log_w);
            // One block per tile, not a grid-stride loop over a few blocks an SM:
            // blocks then start and end at scattered times, so that one block's
            // loads and stores overlap the others' butterflies (at 8 blocks an SM,
            // 2^27 took 36.5 ms; at one block per tile 33.8 ms; at exactly the
            // resident blocks, which run in lockstep, 38.0; BENCHMARKS.md
            // session 10). The loop in the kernel remains for grids over 2^31.
#ifdef CUZK_NTT_GRID_PER_SM /* developer switch: cap the grid at this many blocks an SM */
            const uint64_t cap = (uint64_t)sms * CUZK_NTT_GRID_PER_SM;
#else
            const uint64_t cap = 0x7fffffffull;
#endif
#ifdef CUZK_NTT_DEV_GRID_DIV /* developer switch: tiles a block (each prefetched during the last one's finish) */
            const uint64_t want = (tiles + CUZK_NTT_DEV_GRID_DIV - 1) / CUZK_NTT_DEV_GRID_DIV;
#else
            const uint64_t want = tiles;
#endif
            const uint32_t blocks = (uint32_t)(want < cap ? want : cap);
            const Fr* full = p < pass_tw_count ? (const Fr*)pass_tw[p] : nullptr;
            const uint32_t shoup = full && p < 32 ? (pass_tw_shoup >> p) & 1u : 0u;
            const uint32_t tiled = full && p < 32 ? (pass_tw_tiled >> p) & 1u : 0u;
            const Kernel kernel = tile == (1u << kTileLog) ? k_big : tile == (1u << kTileLogSmall) ? k_small : k_any;
            kernel<<<blocks, threads, smem, (cudaStream_t)stream>>>(
                (Fr*)data, log_n, log_b, log_r, log_w, (const Fr*)tw_lo, (const Fr*)tw_hi, lo_bits,
                full, shoup, tiled, (const Root*)roots, roots_log_t(log_n), tiles);
            CUZK_CUDA_TRY(cudaGetLastError());
        }
        return ok();
    });
}

cuzk_status cuzk_ntt_plan(uint32_t log_n, uint32_t* log_b, uint32_t capacity, uint32_t* passes) {
    return guard("cuzk_ntt_plan", [&]() -> cuzk_status {
        CUZK_NEED(log_n <= 32, "cuzk_ntt_plan: log_n = %u > 32", log_n);
        CUZK_NEED(passes && (log_b || capacity == 0), "cuzk_ntt_plan: null out-pointer");
        uint32_t b[8], r[8];
        const uint32_t n = log_n == 0 ? 0 : plan_passes(log_n, b, r);
        *passes = n;
        for (uint32_t p = 0; p < n && p < capacity; ++p) log_b[p] = b[p];
        return ok();
    });
}

cuzk_status cuzk_ntt_roots(int32_t device, void* roots, uint32_t log_n, const void* tw_lo,
                           const void* tw_hi, uint32_t lo_bits, void* stream) {
    return guard("cuzk_ntt_roots", [&]() -> cuzk_status {
        CUZK_NEED(log_n <= 32, "cuzk_ntt_roots: log_n = %u > 32", log_n);
        CUZK_NEED(roots && tw_lo && tw_hi, "cuzk_ntt_roots: null pointer");
        CUZK_NEED(((uintptr_t)roots & 15) == 0, "cuzk_ntt_roots: roots table not 16-byte aligned");
        CUZK_NEED(lo_bits <= log_n, "cuzk_ntt_roots: lo_bits %u > log_n %u", lo_bits, log_n);
        const uint32_t log_t = roots_log_t(log_n);
        if (log_t == 0) return ok();
        CUZK_CUDA_TRY(cudaSetDevice(device));
        roots_kernel<<<1, 256, 0, (cudaStream_t)stream>>>((Root*)roots, log_n, log_t, (const Fr*)tw_lo,
                                                         (const Fr*)tw_hi, lo_bits);
        CUZK_CUDA_TRY(cudaGetLastError());
        return ok();
    });
}

cuzk_status cuzk_ntt_powers(int32_t device, void* out, uint32_t log_b, uint32_t log_n,
                            const void* tw_lo, const void* tw_hi, uint32_t lo_bits, void* stream) {
    return launch_powers<Fr>("cuzk_ntt_powers", powers_kernel, device, out, log_b, log_n, tw_lo, tw_hi,
                             lo_bits, stream);
}

cuzk_status cuzk_ntt_powers_shoup(int32_t device, void* out, uint32_t log_b, uint32_t log_n,
                                  const void* tw_lo, const void* tw_hi, uint32_t lo_bits, void* stream) {
    return launch_powers<Root>("cuzk_ntt_powers_shoup", shoup_powers_kernel, device, out, log_b, log_n,
                               tw_lo, tw_hi, lo_bits, stream);
}

cuzk_status cuzk_ntt_powers_tiled(int32_t device, void* out, uint32_t log_b, uint32_t log_r, uint32_t log_n,
                                  uint32_t shoup, const void* tw_lo, const void* tw_hi, uint32_t lo_bits,
                                  void* stream) {
    return guard("cuzk_ntt_powers_tiled", [&]() -> cuzk_status {
        CUZK_NEED(log_b >= 2 && log_r >= 1 && log_r <= log_b - 2 && log_b <= log_n && log_n <= 32,
                  "cuzk_ntt_powers_tiled: log_r %u, log_b %u, log_n %u (need 1 <= log_r, log_r + 2 <= log_b <= "
                  "log_n <= 32: four or more columns)",
                  log_r, log_b, log_n);
        CUZK_NEED(out && tw_lo && tw_hi, "cuzk_ntt_powers_tiled: null pointer");
        CUZK_NEED(((uintptr_t)out & 15) == 0, "cuzk_ntt_powers_tiled: out not 16-byte aligned");
        CUZK_NEED(lo_bits <= log_n, "cuzk_ntt_powers_tiled: lo_bits %u > log_n %u", lo_bits, log_n);
        CUZK_CUDA_TRY(cudaSetDevice(device));
        uint32_t blocks = 0;
        cuzk_status s = grid_for(device, 1ull << log_b, 256, &blocks);
        if (s.code != CUZK_OK) return s;
        if (shoup)
            tiled_powers_kernel<Root><<<blocks, 256, 0, (cudaStream_t)stream>>>(
                (Root*)out, log_b, log_r, log_n - log_b, (const Fr*)tw_lo, (const Fr*)tw_hi, lo_bits);
        else
            tiled_powers_kernel<Fr><<<blocks, 256, 0, (cudaStream_t)stream>>>(
                (Fr*)out, log_b, log_r, log_n - log_b, (const Fr*)tw_lo, (const Fr*)tw_hi, lo_bits);
        CUZK_CUDA_TRY(cudaGetLastError());
        return ok();
    });
}

cuzk_status cuzk_ntt_bit_reverse(int32_t device, void* data, uint32_t log_n, uint64_t batch,
                                 void* stream) {
    return guard("cuzk_ntt_bit_reverse", [&]() -> cuzk_status {
        CUZK_NEED(log_n <= 32, "cuzk_ntt_bit_reverse: log_n = %u > 32", log_n);
        CUZK_NEED(data || batch == 0, "cuzk_ntt_bit_reverse: null pointer");
        if (batch == 0 || log_n <= 1) return ok();
        CUZK_CUDA_TRY(cudaSetDevice(device));
        const uint64_t total = batch << log_n;
        uint32_t blocks = 0;
        if (log_n >= 2 * kBrQ) {
            const uint64_t groups = total >> (2 * kBrQ);  // tiles m over all vectors
            cuzk_status s = grid_for(device, total, kBrT * kBrT, &blocks);
            if (s.code != CUZK_OK) return s;
            bit_reverse_tiled_kernel<<<blocks, kBrT * kBrT, 0, (cudaStream_t)stream>>>((Fr*)data, log_n, groups);
            CUZK_CUDA_TRY(cudaGetLastError());
            return ok();
        }
        cuzk_status s = grid_for(device, total, 256, &blocks);
        if (s.code != CUZK_OK) return s;
        bit_reverse_kernel<<<blocks, 256, 0, (cudaStream_t)stream>>>((Fr*)data, log_n, total);
        CUZK_CUDA_TRY(cudaGetLastError());
        return ok();
    });
}

cuzk_status cuzk_ntt_scale_powers(int32_t device, void* data, uint32_t log_n, uint64_t batch,
                                  const void* g_lo, const void* g_hi, uint32_t lo_bits,
                                  const void* factor, void* stream) {
    return guard("cuzk_ntt_scale_powers", [&]() -> cuzk_status {
        CUZK_NEED(log_n <= 32, "cuzk_ntt_scale_powers: log_n = %u > 32", log_n);
        CUZK_NEED(data || batch == 0, "cuzk_ntt_scale_powers: null pointer");
        CUZK_NEED((g_lo == nullptr) == (g_hi == nullptr), "cuzk_ntt_scale_powers: give both tables or neither");
        if (batch == 0 || (!g_lo && !factor)) return ok();
        CUZK_CUDA_TRY(cudaSetDevice(device));
        const uint64_t total = batch << log_n;
        uint32_t blocks = 0;
        cuzk_status s = grid_for(device, total, 256, &blocks);
        if (s.code != CUZK_OK) return s;
        scale_powers_kernel<<<blocks, 256, 0, (cudaStream_t)stream>>>(
            (Fr*)data, log_n, total, (const Fr*)g_lo, (const Fr*)g_hi, lo_bits, (const Fr*)factor);
        CUZK_CUDA_TRY(cudaGetLastError());
        return ok();
    });
}

cuzk_status cuzk_ntt_mul_sub_scale(int32_t device, const void* a, const void* b, const void* c,
                                   void* out, uint64_t n, const void* factor, void* stream) {
    return guard("cuzk_ntt_mul_sub_scale", [&]() -> cuzk_status {
        CUZK_NEED((a && b && c && out && factor) || n == 0, "cuzk_ntt_mul_sub_scale: null pointer");
        if (n == 0) return ok();
        CUZK_CUDA_TRY(cudaSetDevice(device));
        uint32_t blocks = 0;
        cuzk_status s = grid_for(device, n, 256, &blocks);
        if (s.code != CUZK_OK) return s;
        mul_sub_scale_kernel<<<blocks, 256, 0, (cudaStream_t)stream>>>(
            (const Fr*)a, (const Fr*)b, (const Fr*)c, (Fr*)out, n, (const Fr*)factor);
        CUZK_CUDA_TRY(cudaGetLastError());
        return ok();
    });
}

}  // extern "C"
