/*
 * cuzk NTT layer: C ABI of the GPU kernels over BLS12-381 Fr (Montgomery
 * form, 32 bytes an element, arkworks' layout). Turned into
 * crates/ntt/src/sys.rs by `cargo xtask bindings`.
 *
 * All data pointers are device pointers; every launch is asynchronous on
 * `stream` (a cudaStream_t) of `device`, and checked. A batch is `batch`
 * vectors of 2^log_n elements each, stored one after the other.
 *
 * Powers of a root (or of a coset shift) come as two-level tables
 * (cuzk_ntt_root), so any power costs one multiply and the tables stay
 * small.
 */
#ifndef CUZK_NTT_H
#define CUZK_NTT_H

#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest radix (log2) of one pass; passes load 2^pass_bits elements a
 * column into shared memory. */
#define CUZK_NTT_MAX_PASS_BITS 9

/* Bytes of the roots table of cuzk_ntt_roots (any log_n): the butterfly
 * roots of every pass, 2^(CUZK_NTT_MAX_PASS_BITS - 1) entries of 80 bytes. */
#define CUZK_NTT_ROOTS_BYTES 20480

/* Bytes of one entry of a Shoup twiddle table (cuzk_ntt_powers_shoup): w
 * plain (8 limbs), its Shoup constant (9 limbs), 12 bytes of padding. */
#define CUZK_NTT_SHOUP_ENTRY_BYTES 80

/* A root of unity w of order 2^log_n (or a coset shift w) by its two-level
 * tables in device memory, Montgomery form: tw_lo[j] = w^j for
 * j < 2^lo_bits, tw_hi[j] = w^(j 2^lo_bits) for j < 2^(log_n - lo_bits),
 * so that w^e = tw_hi[e >> lo_bits] * tw_lo[e & (2^lo_bits - 1)] for any
 * e < 2^log_n. Both tables non-null, lo_bits <= log_n <= 32 (else an
 * invalid-argument error). */
typedef struct cuzk_ntt_root {
    const void* tw_lo;
    const void* tw_hi;
    uint32_t lo_bits;
    uint32_t log_n;
} cuzk_ntt_root;

/* The table set of cuzk_ntt_dif for a root w of order 2^root.log_n, every
 * table in device memory and 16-byte aligned (else an invalid-argument
 * error):
 *   root: w's two-level tables.
 *   pass_tw: pass_tw_count entries (may be null when the count is 0), one
 *     per pass of cuzk_ntt_plan: entry p null (pass p multiplies its
 *     twiddles as two-level products), or pass p's twiddle table, whose
 *     loads replace those products (one Fr multiply an element less). With
 *     B = 2^log_b[p], the table is by default the half table
 *     w_B^k = w^(k 2^(root.log_n - log_b[p])) for k < B/2 made by
 *     cuzk_ntt_powers (the other half follows from w_B^(k + B/2) = -w_B^k).
 *   pass_tw_shoup: bit p set: entry p holds Shoup entries
 *     (CUZK_NTT_SHOUP_ENTRY_BYTES each, as cuzk_ntt_powers_shoup makes
 *     them: Shoup's product, cheaper than Montgomery's, on the loaded
 *     twiddle).
 *   pass_tw_tiled: bit p set: entry p is pass p's tiled table made by
 *     cuzk_ntt_powers_tiled with log_r = log_b[p] - log_b[p + 1] (all B
 *     twiddles in the order the pass's tiles read them: contiguous loads
 *     instead of scattered ones; Shoup entries when bit p of pass_tw_shoup
 *     is set too). The pass needs four or more columns, else an
 *     invalid-argument error.
 *   roots: the butterfly roots that cuzk_ntt_roots made from the same root
 *     (not null). */
typedef struct cuzk_ntt_tables {
    cuzk_ntt_root root;
    const void* const* pass_tw;
    uint32_t pass_tw_count;
    uint32_t pass_tw_shoup;
    uint32_t pass_tw_tiled;
    const void* roots;
} cuzk_ntt_tables;

/* The operands of cuzk_ntt_mul_sub_scale: n elements each, device memory;
 * a is required, b and c may be null (b = 1, c = 0). */
typedef struct cuzk_ntt_mul_sub_operands {
    const void* a;
    const void* b;
    const void* c;
} cuzk_ntt_mul_sub_operands;

/* In-place decimation-in-frequency NTT (Gentleman-Sande), natural-order
 * input to bit-reversed output, of every vector of the batch (vectors of
 * 2^tables->root.log_n elements), with root w and its tables as
 * `tables` describes. Four-step decomposition (Bailey 1990): passes of up
 * to 2^CUZK_NTT_MAX_PASS_BITS-point DFTs in shared memory with twiddle
 * multiplies between passes (see cuzk_ntt_plan). The tables are checked
 * before any work: a refused call leaves the data as it was. */
cuzk_status cuzk_ntt_dif(int32_t device, void* data, uint64_t batch, const cuzk_ntt_tables* tables,
                         void* stream);

/* The butterfly roots of cuzk_ntt_dif for root w of order 2^root->log_n:
 * w_T^j = w^(j 2^(log_n - t)) for j < 2^(t-1),
 * t = min(log_n, CUZK_NTT_MAX_PASS_BITS), each plain with its Shoup
 * constant floor(w_T^j 2^288 / r) or one less (CUZK_NTT_SHOUP_ENTRY_BYTES
 * an entry). roots: CUZK_NTT_ROOTS_BYTES bytes of device memory, 16-byte
 * aligned (else an invalid-argument error). Queued on `stream`: a
 * cuzk_ntt_dif on another stream must wait for it. Make it once per root
 * and keep it with the tables. */
cuzk_status cuzk_ntt_roots(int32_t device, void* roots, const cuzk_ntt_root* root, void* stream);

/* The pass plan of cuzk_ntt_dif for size 2^log_n (no GPU work): *passes
 * gets the number of passes, log_b[p] (p < capacity) pass p's sub-problem
 * size (log_b[0] = log_n). A pass with log_b[p] == log_b of the last pass
 * makes no twiddles. */
cuzk_status cuzk_ntt_plan(uint32_t log_n, uint32_t* log_b, uint32_t capacity, uint32_t* passes);

/* out[k] = w^(k * 2^(log_n - log_b)) for k < 2^(log_b - 1) (out holds
 * 2^(log_b - 1) elements; 1 <= log_b <= log_n = root->log_n), w given by
 * `root`: the half twiddle table of a pass (w_B^k for k < B/2,
 * B = 2^log_b). out: 16-byte aligned (else an invalid-argument error). */
cuzk_status cuzk_ntt_powers(int32_t device, void* out, uint32_t log_b, const cuzk_ntt_root* root,
                            void* stream);

/* The half twiddle table of cuzk_ntt_powers in Shoup form: entry k (of
 * CUZK_NTT_SHOUP_ENTRY_BYTES, 2^(log_b - 1) entries) holds w_B^k plain and
 * its Shoup constant floor(w_B^k 2^288 / r) or one less (V. Shoup, NTL's
 * MulModPrecon; D. Harvey, J. Symbolic Computation 60, 2014), for
 * cuzk_ntt_tables' pass_tw_shoup. out: 16-byte aligned (else an
 * invalid-argument error). */
cuzk_status cuzk_ntt_powers_shoup(int32_t device, void* out, uint32_t log_b, const cuzk_ntt_root* root,
                                  void* stream);

/* The tiled twiddle table of a pass with sub-problems of B = 2^log_b and
 * R = 2^log_r rows (C = B / R >= 4 columns: log_r >= 1, log_r + 2 <=
 * log_b <= log_n = root->log_n, else an invalid-argument error): entry
 * ((c >> 2) << (log_r + 2)) | (p << 2) | (c & 3) holds w_B^(bitrev_R(p) c),
 * the twiddle of row p, column c, with w_B = w^(2^(log_n - log_b)) and w
 * given by `root`. B entries (twice the half tables), in Montgomery form
 * (32 bytes) or, with shoup != 0, as cuzk_ntt_powers_shoup's entries
 * (CUZK_NTT_SHOUP_ENTRY_BYTES), for cuzk_ntt_tables' pass_tw_tiled. out:
 * 16-byte aligned (else an invalid-argument error). */
cuzk_status cuzk_ntt_powers_tiled(int32_t device, void* out, uint32_t log_b, uint32_t log_r, uint32_t shoup,
                                  const cuzk_ntt_root* root, void* stream);

/* In-place bit-reversal permutation of every vector of the batch. */
cuzk_status cuzk_ntt_bit_reverse(int32_t device, void* data, uint32_t log_n, uint64_t batch,
                                 void* stream);

/* data[i] *= factor * g^i for i in [0, 2^log_n) of every vector (natural
 * order), g^i from the two-level tables `shift` (null: g = 1, so
 * data *= factor; else log_n <= shift->log_n) and factor one element of
 * device memory (null: factor = 1). Coset shifts and the 1/n of inverse
 * NTTs. */
cuzk_status cuzk_ntt_scale_powers(int32_t device, void* data, uint32_t log_n, uint64_t batch,
                                  const cuzk_ntt_root* shift, const void* factor, void* stream);

/* out[i] = (a[i] * b[i] - c[i]) * factor for i in [0, n): Groth16's
 * quotient on a coset, where Z(x) = x^n - 1 is the constant g^n - 1 and
 * factor = 1 / (g^n - 1). out may alias a, b or c. A null b, c or factor
 * leaves its term out (b = 1, c = 0, factor = 1): a prover short of memory
 * forms a * b first, frees b, then subtracts c. */
cuzk_status cuzk_ntt_mul_sub_scale(int32_t device, const cuzk_ntt_mul_sub_operands* operands, void* out,
                                   uint64_t n, const void* factor, void* stream);

#ifdef __cplusplus
}
#endif

#endif /* CUZK_NTT_H */
