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

/* What an MSM plan is made for (see cuzk_msm_plan_make). */
typedef struct cuzk_msm_plan_request {
    uint32_t curve;       /* CUZK_MSM_G1 or CUZK_MSM_G2 */
    uint32_t window_bits; /* c, in MIN_WINDOW..=MAX_WINDOW (precomputed: ..=MAX_PRECOMPUTED_WINDOW) */
    uint64_t n;           /* the most points of one part */
    /* Windows digitized and sorted at a time: 0 or more than W, all W (more
     * windows a batch: fewer launches, more memory). Precomputed bases take
     * all W at once. */
    uint32_t windows_per_batch;
    uint32_t precomputed; /* 0: plain bases; 1: bases from cuzk_msm_precompute */
    uint32_t parts;       /* bucket arrays, one a part of the points: 1 or 2 */
    uint32_t reserved;    /* 0 */
} cuzk_msm_plan_request;

/* Byte offsets into the device scratch of one MSM, and its size. */
typedef struct cuzk_msm_scratch_layout {
    /* Digit pairs (keys, values) before and after the radix sort. */
    uint64_t keys_in, vals_in, keys_out, vals_out;
    /* Partial-sum lists of the accumulation levels (over the unsorted pairs). */
    uint64_t list_a_keys, list_a_pts, list_b_keys, list_b_pts;
    /* CUB's radix-sort storage and its size. */
    uint64_t sort, sort_bytes;
    /* Bucket arrays: `parts` of bucket_bytes each. */
    uint64_t buckets, bucket_bytes;
    /* Bucket reduction: segment sums, tree-sum output, two running-sum
     * buffers, the levels' sums and the window sums. */
    uint64_t segs, segs2, r0, r1, level_sums, window_sums;
    /* Bytes of the whole scratch. */
    uint64_t total;
} cuzk_msm_scratch_layout;

/* An MSM plan: the request's choices resolved (W = ceil(256 / c) windows,
 * windows_per_batch in 1..=W) and the scratch layout. Made once by
 * cuzk_msm_plan_make and passed unchanged to every call of one MSM. */
typedef struct cuzk_msm_plan {
    uint32_t curve;
    uint32_t window_bits;
    uint64_t plan_n; /* the most points of one part */
    uint32_t windows;
    uint32_t windows_per_batch;
    uint32_t precomputed;
    uint32_t parts;
    cuzk_msm_scratch_layout scratch;
} cuzk_msm_plan;

/* One part's inputs to cuzk_msm_accumulate (device memory of the plan's
 * device): `bases` the part's first point (plain: n points; precomputed:
 * window j's copy of point i at bases[j stride + i]) and `scalars` its n
 * scalars.
 *
 * With `indices` (device, n entries, each below 2^31 and below the number
 * of points there are): entry k of the part is point bases[indices[k]]
 * (precomputed: copy j at bases[j stride + indices[k]]) with scalar
 * scalars[indices[k]] when `scalars_indexed` is 1 (a subset of the scalars,
 * such as those neither 0 nor 1 from cuzk_msm_classify, runs without being
 * gathered) or scalars[k] when it is 0 (the subset's scalars gathered
 * already). Indices are not checked on the device: an index past the points
 * or scalars reads out of bounds. */
typedef struct cuzk_msm_part {
    const void* bases;
    const void* scalars;
    const uint32_t* indices; /* null: entry k is scalar k with point k */
    uint64_t stride; /* precomputed: the copies' n; 0 for plain bases */
    uint64_t n;      /* entries of this part, at most the plan's plan_n */
    uint32_t part;   /* which bucket array, below the plan's parts */
    uint32_t scalars_indexed; /* 0 or 1 (see above); 0 without indices */
} cuzk_msm_part;

/* Device time of an MSM's phases (milliseconds, CUDA events), filled when a
 * profile is passed (each phase waits for the stream: for tuning only).
 * cuzk_msm_accumulate adds to the first four, cuzk_msm_finish to reduce_ms
 * (zero the struct before an MSM). */
typedef struct cuzk_msm_profile {
    double digits_ms;
    double sort_ms;
    double level0_ms;  /* the first accumulation level, over the sorted pairs */
    double levels_ms;  /* the later accumulation levels, over partial sums */
    double reduce_ms;  /* the parts' buckets added and reduced to window sums */
} cuzk_msm_profile;

/* Loads the code of every MSM kernel onto `device` now. CUDA loads a kernel
 * at its first launch (lazy loading, the default since CUDA 12.2), and its
 * code takes device memory then: a process that must see device memory flat
 * after a warm-up (a proving daemon, a batch's memory check) loads them all
 * up front, whatever path its first proofs took. Idempotent. */
cuzk_status cuzk_msm_load_kernels(int32_t device);

/* Makes the plan of an MSM on `device` (the radix sort's storage depends on
 * it) for `request`. Invalid requests give CUZK_ERR_INVALID_ARGUMENT with
 * the reason. */
cuzk_status cuzk_msm_plan_make(int32_t device, const cuzk_msm_plan_request* request,
                               cuzk_msm_plan* plan);

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
 * one cuzk_msm_finish. Every call of one MSM takes the same plan (from
 * cuzk_msm_plan_make; a plan that differs from what cuzk_msm_plan_make
 * gives for its request fields is refused) and the same scratch of at
 * least plan->scratch.total bytes; with precomputed bases every part has
 * stride != 0, with plain ones stride = 0. Part 0 comes first (it clears
 * every part's buckets); a part never accumulated contributes nothing.
 *
 * cuzk_msm_accumulate queues (does not wait for) the digits, sort and
 * bucket sums of one part (see cuzk_msm_part).
 *
 * cuzk_msm_finish adds the parts' buckets, reduces them and writes the
 * window sums to the host buffer `window_sums`: W XYZZ points for plain
 * bases, one (the whole MSM) for precomputed ones. Waits for the stream.
 *
 * `profile`: null, or phase times to fill (see cuzk_msm_profile). */
cuzk_status cuzk_msm_accumulate(int32_t device, const cuzk_msm_plan* plan,
                                const cuzk_msm_part* input, void* scratch, uint64_t scratch_bytes,
                                cuzk_msm_profile* profile, void* stream);
cuzk_status cuzk_msm_finish(int32_t device, const cuzk_msm_plan* plan, void* scratch,
                            uint64_t scratch_bytes, void* window_sums, cuzk_msm_profile* profile,
                            void* stream);

/* Witness-shaped MSMs. Most scalars of a Groth16 witness are 0 or 1 (hash
 * gadgets allocate a variable a bit): a 0 adds nothing, and the points of
 * the scalars equal to 1 are summed directly (one mixed addition a point
 * instead of a sorted pair in each of W windows); only the rest go through
 * Pippenger, as the entries of a part with `indices`.
 *
 * cuzk_msm_classify_scratch: the device scratch (bytes) that
 * cuzk_msm_classify needs for n scalars (CUB's selection storage and the
 * counts).
 *
 * cuzk_msm_classify: sorts the n scalars (device, Fr in Montgomery form) of
 * `scalars` by value into `indices` (device, room for n entries): first the
 * indices of the scalars equal to 1, increasing, then those of the scalars
 * neither 0 nor 1, increasing; zeros are left out. Writes the two counts to
 * the host array `counts` (counts[0]: ones, counts[1]: the rest). n must be
 * below 2^31. Waits for the stream.
 *
 * cuzk_msm_sum_scratch: the device scratch (bytes) that cuzk_msm_sum_indexed
 * needs for `count` points of `curve`.
 *
 * cuzk_msm_sum_indexed: sum_k bases[indices[k]] for k < count (see
 * cuzk_msm_sum_input), written to the host buffer `sum` as one XYZZ point
 * (the layout of a window sum). Each thread sums an equal share of the points with
 * mixed additions, and the threads' partial sums are added by a tree.
 * Waits for the stream. */
typedef struct cuzk_msm_device_scratch {
    void* ptr;      /* device memory of the call's device */
    uint64_t bytes; /* its size */
} cuzk_msm_device_scratch;

/* What cuzk_msm_sum_indexed sums: bases[indices[k]] for k < count. */
typedef struct cuzk_msm_sum_input {
    uint32_t curve;           /* CUZK_MSM_G1 or CUZK_MSM_G2 */
    uint32_t reserved;        /* 0 */
    const void* bases;        /* device, affine points of `curve` */
    const uint32_t* indices;  /* device, `count` indices below the number of bases */
    uint64_t count;
} cuzk_msm_sum_input;

cuzk_status cuzk_msm_classify_scratch(int32_t device, uint64_t n, uint64_t* bytes);
cuzk_status cuzk_msm_classify(int32_t device, const void* scalars, uint64_t n, uint32_t* indices,
                              const cuzk_msm_device_scratch* scratch, uint64_t* counts,
                              void* stream);
cuzk_status cuzk_msm_sum_scratch(int32_t device, uint32_t curve, uint64_t count, uint64_t* bytes);
cuzk_status cuzk_msm_sum_indexed(int32_t device, const cuzk_msm_sum_input* input,
                                 const cuzk_msm_device_scratch* scratch, void* sum, void* stream);

/* Sums of the points selected by bitmasks, for several masks at once over
 * bases that arrive in parts (a streamed key's chunks): the share of a
 * Groth16 witness MSM whose scalars are 1, for several partitions' witnesses
 * with each chunk of bases sent once. Bit b of word w of mask p selects
 * point 64 w + b of the whole series.
 *
 * cuzk_msm_masked_scratch: the device scratch (bytes) for `sets` masks of
 * `curve` (2^15 XYZZ partial sums a mask, the tree's second buffer and the
 * pattern buckets of each group of four masks).
 *
 * cuzk_msm_masked_accumulate: adds, for each mask p, the points j < count of
 * `bases` whose bit first_word * 64 + j of row p is set into that mask's
 * partial sums in `scratch` (first = 1 starts them from the identity: the
 * first part of a series). Queues its kernel; does not wait. first_word
 * counts 64-bit words, so a part starts at a multiple of 64 points.
 *
 * cuzk_msm_masked_finish: adds each mask's partial sums and writes the
 * `sets` sums (XYZZ, the layout of a window sum) to the host array `sums`,
 * which holds `sets` points. Waits for the stream. Call it after a series
 * begun by an accumulate with first = 1 (before that the scratch holds no
 * partial sums).
 *
 * The scratch is sets * (2^15 + 2^12) + ceil(sets / 4) * 15 * 2^15 XYZZ
 * points (192 bytes in G1, 384 in G2: the partial sums, the tree's second
 * buffer and each group of four masks' pattern buckets), 256-byte aligned
 * parts. CUZK_ERR_INVALID_ARGUMENT for a curve other
 * than G1 or G2, `sets` outside 1..=1024, `first` above 1, a scratch too
 * small, a part past the masks' words, or a null pointer. */
typedef struct cuzk_msm_masked_input {
    uint32_t curve;          /* CUZK_MSM_G1 or CUZK_MSM_G2 */
    uint32_t first;          /* 1: the series' first part; 0: later parts */
    const void* bases;       /* device, `count` affine points of `curve` */
    uint64_t count;          /* points of this part */
    const uint64_t* masks;   /* device, `sets` rows of `mask_words` words */
    uint64_t sets;           /* rows, 1 to 1024 */
    uint64_t mask_words;     /* words a row */
    uint64_t first_word;     /* the word of a row that selects this part's point 0 */
} cuzk_msm_masked_input;

cuzk_status cuzk_msm_masked_scratch(int32_t device, uint32_t curve, uint64_t sets,
                                    uint64_t* bytes);
cuzk_status cuzk_msm_masked_accumulate(int32_t device, const cuzk_msm_masked_input* input,
                                       const cuzk_msm_device_scratch* scratch, void* stream);
cuzk_status cuzk_msm_masked_finish(int32_t device, uint32_t curve, uint64_t sets,
                                   const cuzk_msm_device_scratch* scratch, void* sums,
                                   void* stream);

#ifdef __cplusplus
}
#endif

#endif /* CUZK_MSM_H */
