/*
 * cuzk MSM layer: C ABI of the GPU Pippenger multi-scalar multiplication
 * over BLS12-381 G1 and G2. Turned into crates/msm/src/sys.rs by
 * `cargo xtask bindings`.
 *
 * Data layouts are arkworks' (see crates/field/src/layout.rs):
 *   bases:   affine points {x, y} in Montgomery form, identity = (0, 0);
 *            96 bytes a point for G1, 192 for G2.
 *   scalars: Fr in Montgomery form, 32 bytes each.
 *   window sums (output): XYZZ points {x, y, zz, zzz}, Montgomery form,
 *            identity when zz = 0; 192 bytes for G1, 384 for G2.
 *
 * The result of an MSM with window size c and W = ceil(256 / c) windows is
 * sum_w 2^(c w) * window_sums[w]; the caller combines the W window sums
 * (Horner's rule, c doublings a window) on the host. With precomputed
 * bases there is one window sum, the result.
 *
 * All data pointers except `window_sums` are device pointers of `device`;
 * work is queued on `stream` (a cudaStream_t) and every launch is checked.
 */
#ifndef CUZK_MSM_H
#define CUZK_MSM_H

#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Curves. */
#define CUZK_MSM_G1 1
#define CUZK_MSM_G2 2

/* Window sizes accepted (bits): plain bases, and precomputed bases (see
 * cuzk_msm_precompute). */
#define CUZK_MSM_MIN_WINDOW 2
#define CUZK_MSM_MAX_WINDOW 24
#define CUZK_MSM_MAX_PRECOMPUTED_WINDOW 26

/* Largest number of points of one MSM (indices are 31-bit, the top bit of
 * an index holds the sign of its digit); with precomputed bases, W times
 * the stride must stay within it. */
#define CUZK_MSM_MAX_POINTS 0x7fffffffull

/* Writes to *bytes the device scratch memory (bytes) that
 * cuzk_msm_accumulate and cuzk_msm_finish need on `device` for parts of up
 * to n points, window size `window_bits`, `windows_per_batch` windows
 * digitized and sorted at a time (0 or more than W: all W; more windows a
 * batch, fewer launches, more memory; precomputed bases take all W at
 * once), `precomputed` (0: plain bases; 1: bases from cuzk_msm_precompute)
 * and `parts` (1 or 2) bucket arrays. Invalid arguments give
 * CUZK_ERR_INVALID_ARGUMENT. */
cuzk_status cuzk_msm_scratch_bytes(int32_t device, uint32_t curve, uint64_t n,
                                   uint32_t window_bits, uint32_t windows_per_batch,
                                   uint32_t precomputed, uint32_t parts, uint64_t* bytes);

/* Precomputed bases for window size `window_bits` (W windows): writes
 * out[j n + i] = 2^(window_bits j) bases[i] (affine, arkworks' layout) for
 * j < W, i < n; `out` holds W n points (device memory). With them, every
 * window's digits index one shared set of 2^(c-1) buckets, so one bucket
 * reduction serves all windows and larger windows pay (fixed-base
 * exponentiation with precomputation: E. Brickell, D. Gordon, K. McCurley,
 * D. Wilson, "Fast exponentiation with precomputation", EUROCRYPT 1992).
 * c Jacobian doublings a point and window, and one
 * inversion for 8 points (Montgomery's trick). Waits for the stream. */
cuzk_status cuzk_msm_precompute(int32_t device, uint32_t curve, const void* bases, uint64_t n,
                                uint32_t window_bits, void* out, void* stream);

/* Pippenger's bucket method (N. Pippenger, "On the evaluation of powers and
 * monomials", SIAM J. Comput. 9(2), 1980) with signed digits: every scalar
 * is cut into W digits in [-2^(c-1), 2^(c-1)]; for each window the
 * (digit, point) pairs are sorted by |digit| (CUB radix sort), the points of
 * each bucket are summed in XYZZ coordinates by threads that each take an
 * equal share of the sorted pairs (buckets shared between threads are
 * finished by a segmented reduction), and the buckets are combined as
 * sum_b b * S_b by running sums over segments of buckets.
 *
 * An MSM is one or two parts (points [0, n0) and [n0, n), so that the
 * second part's scalars can be copied in while the first part runs), each
 * a cuzk_msm_accumulate call into its own bucket array `part`, and then
 * one cuzk_msm_finish. Every call of one MSM takes the same plan_n (the
 * most points of a part), window_bits, windows_per_batch, parts and
 * scratch (of cuzk_msm_scratch_bytes's size for them), and precomputed
 * bases throughout (stride != 0 in every cuzk_msm_accumulate and
 * precomputed = 1 in cuzk_msm_finish) or plain ones throughout. Part 0
 * comes first (it clears every part's buckets); a part never accumulated
 * contributes nothing.
 *
 * cuzk_msm_accumulate queues (does not wait for) the digits, sort and
 * bucket sums of n <= plan_n points: `bases` the part's first point (plain:
 * n points; precomputed: window j's copy of point i at bases[j stride + i],
 * stride the precomputed array's n; 0 for plain bases) and `scalars` its n
 * scalars, both device memory.
 *
 * cuzk_msm_finish adds the parts' buckets, reduces them and writes the
 * window sums to the host buffer `window_sums`: W XYZZ points for plain
 * bases, one (the whole MSM) for precomputed ones. Waits for the stream. */
cuzk_status cuzk_msm_accumulate(int32_t device, uint32_t curve, const void* bases,
                                uint64_t stride, const void* scalars, uint64_t n,
                                uint64_t plan_n, uint32_t window_bits,
                                uint32_t windows_per_batch, uint32_t parts, uint32_t part,
                                void* scratch, uint64_t scratch_bytes, void* stream);
cuzk_status cuzk_msm_finish(int32_t device, uint32_t curve, uint64_t plan_n, uint32_t window_bits,
                            uint32_t windows_per_batch, uint32_t precomputed, uint32_t parts,
                            void* scratch, uint64_t scratch_bytes, void* window_sums,
                            void* stream);

#ifdef __cplusplus
}
#endif

#endif /* CUZK_MSM_H */
