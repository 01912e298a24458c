/* The DIF pass kernels of cuzk_ntt_dif (four-step passes in shared memory), their plan and launches. */
#pragma once

#include "common.cuh"
#include "cuzk/cuda_status.cuh"
#include "lazy.cuh"

namespace {

// One radix-2 DIF stage s (half-size h = 2^(log_r - 1 - s)) on every column
// of the tile (R = 2^log_r rows, 2^log_w columns), in place in shared
// memory; twiddles w_R^j = w_T^(j 2^rs) come from `roots` (w_T^j,
// T = 2^(log_r + rs)). Unit u (one butterfly) holds column k (its low
// log_w bits) and j = u >> log_w, which is [blk | jj] in block-major order
// and [jj | blk] in offset-major order (jj: the offset in the 2h-block,
// log_h bits; blk: the block, log_r - 1 - log_h bits); its rows are
// blk 2h + jj and that + h. In both orders the tile index of the first row
// is ((u & mA) << sA) | ((u & mB) >> sB) | (u & mC), and
// jj = (u & mJ) >> sJ: one bit permutation of the unit index, set up once
// a stage.
__device__ __forceinline__ void dif_stage(const SharedTile sh, const Root* __restrict__ roots, uint32_t rs,
                                          uint32_t log_r, uint32_t log_w, uint32_t s, uint32_t tile) {
    const uint32_t log_h = log_r - 1 - s;
    const uint32_t log_blocks = log_r - 1 - log_h;
    // Offset-major order (jj in the high bits of u) when a warp's 32 units
    // then share one jj: the twiddle-free units (jj = 0, w^0 = 1) fill whole
    // warps, which skip their multiplies, instead of one lane in every warp
    // (which skips nothing). It pays at the small half-sizes h = 2, 4, 8, ...
    // where 1/h of the butterflies are twiddle-free; block-major order (jj
    // in the low bits, consecutive lanes on consecutive rows) otherwise.
    const bool offset_major = log_h > 0 && log_w >= kOffsetMajorMinLogW && log_blocks + log_w >= 5;
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
    // One butterfly: rows i0 and i0 + h of a column, root index jj.
    auto unit = [&](uint32_t i0, uint32_t jj) {
        const uint32_t i1 = i0 + step;
        const Fr a = sh.ld(i0), b = sh.ld(i1);
        const Fr d = sub_lazy(a, b);
        sh.st(i0, add_lazy(a, b));
        sh.st(i1, jj == 0 ? d : mul_root(d, &roots[jj << rsh]));
    };
    auto map_i0 = [&](uint32_t u) { return ((u & mA) << sA) | ((u & mB) >> sB) | (u & mC); };
    auto map_jj = [&](uint32_t u) { return (u & mJ) >> sJ; };
    // Four units a thread (large transforms: blocks of tile / 8 threads),
    // as straight-line code. The map is linear in the bits of u, and the
    // thread's units are u = tid + m T (T = blockDim.x, a power of two above
    // tid's bits): the thread's part is mapped once a stage, the parts of T
    // and 2 T are the block's (uniform registers). Faster than the same
    // units two a trip of the rolled loop below (BENCHMARKS.md); byte
    // addresses with uniform offsets had no fewer instructions (ptxas
    // rebuilds the same LEAs).
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
// CS: the pass stores its outputs as streaming stores (store_fr_cs), for
// transforms far larger than L2 (the next pass reads them only after the
// whole pass has streamed through L2).
// KTL: log2 of the tile when the kernel is built for one tile size (0: any,
// from log_r + log_w), so that the offset of an element's high half in
// shared memory is an immediate.
template <bool CS = false, int KTL = 0>
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
    // advance by fixed steps (strength reduction of the per-element index
    // arithmetic); otherwise each element computes its own.
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
        __syncthreads();
        // Load: element (row t, column k) at base + k + C t (packed: base +
        // k R + t); k fastest across threads.
        {
            auto load = [&](uint32_t i, const Fr* src) { sh.cp_async(i, src); };
            if (fixed_k) {
                const Fr* src = data + g_at(k0, p0);
                for (uint32_t i = threadIdx.x; i < tile; i += blockDim.x, src += g_step) load(i, src);
            } else {
                for (uint32_t i = threadIdx.x; i < tile; i += blockDim.x)
                    load(i, data + g_at(i & (W - 1), i >> log_w));
            }
        }
        SharedTile::cp_async_wait();
        __syncthreads();
        // Twiddle w_B^(u c) = w_N^(u c N/B) and store, for the element at
        // row p (holding u = bitrev(p)) of column k of the tile.
        const bool twiddle = log_c > 0;
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
            // Lazy pass outputs: a pass with another after it stores values
            // below 2r, which that pass's lazy butterflies take as they are;
            // only the last pass reduces to canonical. An element with a
            // twiddle is reduced below r for the Montgomery product
            // (operator*'s bound), negated as r - v (in (0, r], no zero test)
            // and multiplied without the product's final subtraction.
            if (!twiddle) v = Fr::reduce_once(v);  // below 2r -> below r
            if (twiddle && tw_tiled) {
                // Tiled table: w_B^(bitrev(p) c) at tw_e (tw_entry).
                if (tw_shoup) {
                    v = mul_root(v, reinterpret_cast<const Root*>(tw_e));  // any v < 2^256
                } else {
                    v = Fr::mul_lazy(Fr::reduce_once(v), load_fr(reinterpret_cast<const Fr*>(tw_e)));
                }
            } else if (twiddle) {
                const uint64_t c = (group << log_w) + k;
                const uint64_t e = (uint64_t)bitrev(p, log_r) * c;  // < B
                if (e != 0) {
                    if (tw_full && tw_shoup) {
                        // Half table of Shoup entries (w, w'): any v < 2^256.
                        const uint64_t half = 1ull << (log_b - 1);
                        if (e & half) v = neg_2r(v);
                        v = mul_root(v, reinterpret_cast<const Root*>(tw_full) + (e & (half - 1)));
                    } else if (tw_full) {
                        // Half table: w_B^(e + B/2) = -w_B^e.
                        v = Fr::reduce_once(v);
                        const uint64_t half = 1ull << (log_b - 1);
                        if (e & half) v = neg_lazy(v);
                        v = Fr::mul_lazy(v, load_fr(tw_full + (e & (half - 1))));
                    } else {
                        v = Fr::reduce_once(v);
                        v = Fr::mul_lazy(v, power(tw_lo, tw_hi, lo_bits, e << (log_n - log_b)));
                    }
                }
            }
            {
                if constexpr (CS) store_fr_cs(out, v);
                else store_fr(out, v);
            }
        };
        // log_r radix-2 DIF stages on every column, one shared-memory round
        // trip and one barrier each.
        for (uint32_t st = 0; st < log_r; ++st) {
            dif_stage(sh, roots, rs, log_r, log_w, st, tile);
            __syncthreads();
        }
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
    }
}

// The pass kernel: radix-2 stages with a register cap, so that three blocks
// of 256 threads fit an SM's 64 Ki registers (uncapped, ptxas takes 84, and
// 3 x 8 warps x 84 x 32 rounded up to 256 a warp is over 64 Ki). Fewer
// registers were faster as long as nothing spills; the lazy butterflies
// take 70 under a cap of 72 and run faster capped at 64, with no spills
// (BENCHMARKS.md). Kernels that kept stages in registers (radix 4 and 8
// units) ran fewer warps an SM and were slower (BENCHMARKS.md).
template <bool CS, int KTL>
__global__ void __maxnreg__(64) ntt_pass_r2(Fr* __restrict__ data, uint32_t log_n, uint32_t log_b, uint32_t log_r,
                                            uint32_t log_w, const Fr* __restrict__ tw_lo,
                                            const Fr* __restrict__ tw_hi, uint32_t lo_bits,
                                            const Fr* __restrict__ tw_full, uint32_t tw_shoup, uint32_t tw_tiled,
                                            const Root* __restrict__ roots, uint32_t log_t, uint64_t tiles) {
    ntt_pass_body<CS, KTL>(data, log_n, log_b, log_r, log_w, tw_lo, tw_hi, lo_bits, tw_full, tw_shoup, tw_tiled,
                           roots, log_t, tiles);
}

// The pass plan of cuzk_ntt_dif: log_n split into passes of at most
// kMaxPass bits, as even as possible (ceil share of what is left first);
// log_b[p] is pass p's sub-problem size, log_r[p] its radix. Returns the
// number of passes.
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

// Launches the passes of a checked cuzk_ntt_dif (1 <= log_n <= 32,
// batch >= 1, tables validated; the current device is `device`) on `stream`.
cuzk_status launch_passes(int32_t device, Fr* data, uint64_t batch, const cuzk_ntt_tables& t, cudaStream_t stream) {
    const uint32_t log_n = t.root.log_n;
    uint32_t plan_b[8], plan_r[8];
    const uint32_t passes = plan_passes(log_n, plan_b, plan_r);
    using Kernel = decltype(&ntt_pass_r2<false, 0>);
    // Streaming stores of the pass outputs from 2^22 elements (128 MiB,
    // over twice the H200's 50 MB of L2) in all: the data streams through
    // L2 anyway, and evict-first outputs leave the roots and the twiddle
    // tables there (BENCHMARKS.md).
    const bool stream_out = log_n >= kStreamOutLog || batch >= (1ull << (kStreamOutLog - log_n));
    // Builds for the two full tile sizes, whose shared-memory offsets are
    // immediates (KTL), and one for any tile.
    const Kernel k_any = stream_out ? ntt_pass_r2<true, 0> : ntt_pass_r2<false, 0>;
    const Kernel k_big = stream_out ? ntt_pass_r2<true, kTileLog> : ntt_pass_r2<false, kTileLog>;
    const Kernel k_small = stream_out ? ntt_pass_r2<true, kTileLogSmall> : ntt_pass_r2<false, kTileLogSmall>;
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
        // elements), which lets its stages run offset-major like the other
        // passes'.
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
        // (dif_stage) and a barrier holds fewer warps. One-column tiles (a
        // single pass over a large batch) take tile / 4 (four a thread was
        // slower there). Small transforms keep every thread they can get:
        // they have few tiles.
        const uint32_t div = log_w == 0 ? 4u : kTileDiv;
        if (tiles >= 64ull * (uint64_t)sms && tile / div >= 32 && tile / div < threads) threads = tile / div;
        const size_t smem = sizeof(Fr) << (log_r + log_w);
        // One block per tile, not a grid-stride loop over a few blocks an
        // SM: blocks then start and end at scattered times, so that one
        // block's loads and stores overlap the others' butterflies (faster
        // than a few blocks an SM, or exactly the resident blocks, which run
        // in lockstep; BENCHMARKS.md). The loop in the kernel remains for
        // grids over 2^31.
        const uint64_t cap = 0x7fffffffull;
        const uint32_t blocks = (uint32_t)(tiles < cap ? tiles : cap);
        const Fr* full = p < t.pass_tw_count ? (const Fr*)t.pass_tw[p] : nullptr;
        const uint32_t shoup = full && p < 32 ? (t.pass_tw_shoup >> p) & 1u : 0u;
        const uint32_t tiled = full && p < 32 ? (t.pass_tw_tiled >> p) & 1u : 0u;
        const Kernel kernel = tile == (1u << kTileLog) ? k_big : tile == (1u << kTileLogSmall) ? k_small : k_any;
        kernel<<<blocks, threads, smem, stream>>>(data, log_n, log_b, log_r, log_w, (const Fr*)t.root.tw_lo,
                                                  (const Fr*)t.root.tw_hi, t.root.lo_bits, full, shoup, tiled,
                                                  (const Root*)t.roots, roots_log_t(log_n), tiles);
        CUZK_CUDA_TRY(cudaGetLastError());
    }
    return cuzk::ok();
}

}  // namespace
