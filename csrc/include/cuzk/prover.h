/*
 * cuzk prover layer: C ABI of the prover's own kernels, which put a whole
 * Groth16 proof on the device: the evaluations A z, B z, C z of the R1CS
 * matrices (compressed sparse rows, in chunks of rows) against a full
 * assignment held dense or compact, the tail of those vectors, the
 * expansion of a compact assignment, and the gather of a compacted query's
 * scalars. Turned into
 * crates/prover/src/sys.rs by `cargo xtask bindings`.
 *
 * Field elements are BLS12-381 Fr in Montgomery form (32 bytes, arkworks'
 * layout). All data pointers are device pointers; every launch is
 * asynchronous on `stream` (a cudaStream_t) of `device`, and checked.
 */
#ifndef CUZK_PROVER_H
#define CUZK_PROVER_H

#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Coefficient indices with a meaning of their own: an entry whose index is
 * CUZK_R1CS_COEFF_ONE adds its variable, CUZK_R1CS_COEFF_MINUS_ONE
 * subtracts it, without a multiplication (the coefficient table still
 * holds 1 and -1 there). */
#define CUZK_R1CS_COEFF_ONE 0
#define CUZK_R1CS_COEFF_MINUS_ONE 1

/* A full assignment z of num_variables elements of Fr, in one of two forms:
 * - dense (ones, others and rank null): values holds z[0 .. num_variables);
 * - compact, for a witness of mostly 0s and 1s (a hash gadget's bits): for
 *   word w = i / 64 and bit b = i % 64, z[i] = 1 when bit b of ones[w] is
 *   set; else, when bit b of others[w] is set, z[i] = values[rank[w] +
 *   popcount(others[w] & (2^b - 1))]; else z[i] = 0. ones, others and rank
 *   hold ceil(num_variables / 64) words each; rank[w] is the number of set
 *   bits of others[0 .. w); values holds the values neither 0 nor 1, in
 *   order (at least one element, never null: pad with a zero where there
 *   are none). A bit past num_variables is never read.
 * Any other mix of null pointers is CUZK_ERR_INVALID_ARGUMENT. */
typedef struct cuzk_assignment {
    const uint64_t* ones;
    const uint64_t* others;
    const uint32_t* rank;
    const void* values;
    uint64_t num_variables;
} cuzk_assignment;

/* One chunk of consecutive rows of a sparse matrix and what to evaluate it
 * on, for cuzk_r1cs_eval_rows:
 * - row_end: `rows` offsets; row i's entries are entries[row_end[i - 1] ..
 *   row_end[i]) (from 0 for row 0), so offsets count from the chunk's
 *   first entry;
 * - entries: column (low 32 bits) | coefficient index (high 32 bits);
 * - coefficients: the table of distinct coefficients, num_coefficients
 *   elements of Fr;
 * - z: the full assignment (see cuzk_assignment);
 * - out: `rows` elements of Fr, out[i] = sum of coefficient * z[column]
 *   over row i's entries;
 * - bad: one uint32_t, or null. An entry whose column or coefficient index
 *   is out of range adds nothing and sets *bad to 1 (the kernel never
 *   reads past z or the table). */
typedef struct cuzk_r1cs_rows {
    const uint32_t* row_end;
    const uint64_t* entries;
    uint64_t rows;
    const void* coefficients;
    uint64_t num_coefficients;
    cuzk_assignment z;
    void* out;
    uint32_t* bad;
} cuzk_r1cs_rows;

/* out[i] = sum over row i of the chunk (see cuzk_r1cs_rows), one thread a
 * row. A null args, or a null pointer among row_end, entries,
 * coefficients, z's arrays, out with rows > 0, is
 * CUZK_ERR_INVALID_ARGUMENT. */
cuzk_status cuzk_r1cs_eval_rows(int32_t device, const cuzk_r1cs_rows* args, void* stream);

/* cuzk_r1cs_eval_rows on the host's CPU, one row after another, with the
 * same row code as the kernel (host pointers; *bad set as there): the
 * reference CPU tests check the kernel's arithmetic and the chunk layout
 * against. Built in every build, with or without CUDA. */
cuzk_status cuzk_r1cs_eval_rows_host(const cuzk_r1cs_rows* args);

/* out[i] = z[i] for i < copy, 0 for copy <= i < len: the part of an
 * evaluation vector past the constraints (libsnark's input-consistency
 * rows in A z, then zeros). copy <= len and copy <= z->num_variables. */
cuzk_status cuzk_r1cs_fill_tail(int32_t device, void* out, const cuzk_assignment* z, uint64_t copy,
                                uint64_t len, void* stream);

/* out[i] = z[i] for i < z->num_variables: a compact assignment written out
 * dense (a dense one copied), for the MSMs that take z's elements as
 * scalars in place. */
cuzk_status cuzk_assignment_expand(int32_t device, void* out, const cuzk_assignment* z, void* stream);

/* cuzk_assignment_expand on the host's CPU (host pointers), with the same
 * element code as the kernels: the reference CPU tests check the compact
 * form's lookup against. Built in every build, with or without CUDA. */
cuzk_status cuzk_assignment_expand_host(void* out, const cuzk_assignment* z);

/* out[i] = z[index[i]] for i < n (a compacted query's scalars from the
 * full assignment), 0 where index[i] >= num_variables. */
cuzk_status cuzk_prover_gather(int32_t device, void* out, const void* z, const uint32_t* index, uint64_t n,
                               uint64_t num_variables, void* stream);

#ifdef __cplusplus
}
#endif

#endif /* CUZK_PROVER_H */
