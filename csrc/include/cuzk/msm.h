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
 * (Horner's rule, c doublings a window) on the host.
 *
 * All data pointers except `window_sums` are device pointers of `device`;
 * work is queued on `stream` (a cudaStream_t) and every launch is checked.
 * `cuzk_msm_run` waits for its stream before it returns (it copies the
 * window sums to the host).
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

/* Window sizes accepted (bits). */
#define CUZK_MSM_MIN_WINDOW 2
#define CUZK_MSM_MAX_WINDOW 24

/* Largest number of points of one MSM (indices are 31-bit, the top bit of
 * an index holds the sign of its digit). */
#define CUZK_MSM_MAX_POINTS 0x7fffffffull

/* Writes to *bytes the device scratch memory (bytes) that cuzk_msm_run
 * needs on `device` for n points, window size `window_bits` and
 * `windows_per_batch` windows digitized and sorted at a time (0 or more
 * than W: all W; more windows a batch, fewer launches, more memory).
 * Invalid arguments give CUZK_ERR_INVALID_ARGUMENT. */
cuzk_status cuzk_msm_scratch_bytes(int32_t device, uint32_t curve, uint64_t n,
                                   uint32_t window_bits, uint32_t windows_per_batch,
                                   uint64_t* bytes);

/* Pippenger's bucket method (N. Pippenger, "On the evaluation of powers and
 * monomials", SIAM J. Comput. 9(2), 1980) with signed digits: every scalar
 * is cut into W digits in [-2^(c-1), 2^(c-1)]; for each window the
 * (digit, point) pairs are sorted by |digit| (CUB radix sort), the points of
 * each bucket are summed in XYZZ coordinates by threads that each take an
 * equal share of the sorted pairs (buckets shared between threads are
 * finished by a segmented reduction), and the buckets are combined as
 * sum_b b * S_b by running sums over segments of buckets.
 *
 * Writes W = ceil(256 / window_bits) XYZZ window sums to the host buffer
 * `window_sums`. n may be 0 (all sums are the identity). */
cuzk_status cuzk_msm_run(int32_t device, uint32_t curve, const void* bases, const void* scalars,
                         uint64_t n, uint32_t window_bits, uint32_t windows_per_batch,
                         void* scratch, uint64_t scratch_bytes, void* window_sums, void* stream);

#ifdef __cplusplus
}
#endif

#endif /* CUZK_MSM_H */
