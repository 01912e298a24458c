// The evaluation of one row of a compact R1CS chunk (cuzk_r1cs_rows, see
// include/cuzk/prover.h) and the read of one element of a full assignment,
// dense or compact (cuzk_assignment): the same code on the GPU (prover.cu's
// kernels) and on the host (host.cpp, which CPU tests check against the
// Rust references).
#pragma once

#include <cstdint>
#include <cstring>

#include "cuzk/bls12_381.cuh"
#include "cuzk/ff.cuh"
#include "cuzk/prover.h"

namespace cuzk {
namespace prover {

// Loads and stores of Fr: two 16-byte accesses on the device (the chunk's
// table is 16-byte aligned), a plain copy on the host.
CUZK_HD CUZK_INLINE Fr load_fr(const Fr* p) {
#ifdef __CUDA_ARCH__
    const uint4* s = reinterpret_cast<const uint4*>(p);
    const uint4 a = s[0], b = s[1];
    Fr r;
    r.l[0] = a.x; r.l[1] = a.y; r.l[2] = a.z; r.l[3] = a.w;
    r.l[4] = b.x; r.l[5] = b.y; r.l[6] = b.z; r.l[7] = b.w;
    return r;
#else
    Fr r;
    std::memcpy(&r, p, sizeof r);
    return r;
#endif
}

CUZK_HD CUZK_INLINE void store_fr(Fr* p, const Fr& v) {
#ifdef __CUDA_ARCH__
    uint4* d = reinterpret_cast<uint4*>(p);
    d[0] = make_uint4(v.l[0], v.l[1], v.l[2], v.l[3]);
    d[1] = make_uint4(v.l[4], v.l[5], v.l[6], v.l[7]);
#else
    std::memcpy(p, &v, sizeof v);
#endif
}

CUZK_HD CUZK_INLINE Fr zero_fr() {
    Fr r;
    for (int i = 0; i < 8; i++) r.l[i] = 0;
    return r;
}

CUZK_HD CUZK_INLINE uint32_t popcount64(uint64_t x) {
#ifdef __CUDA_ARCH__
    return (uint32_t)__popcll(x);
#else
    return (uint32_t)__builtin_popcountll(x);
#endif
}

// Whether an assignment's arrays are those of one form: values alone
// (dense), or values, ones, others and rank (compact). A half-filled
// compact form is refused rather than read as dense.
CUZK_HD CUZK_INLINE bool assignment_ok(const cuzk_assignment& z) {
    if (!z.values) return false;
    return z.ones ? (z.others && z.rank) : (!z.others && !z.rank);
}

// z[i] of an assignment (see cuzk_assignment), i < z.num_variables. The
// compact form's two bitmasks (two bits a variable against the dense
// form's 256: 20 MB at 2^27) mostly sit in the GPU's L2 cache, where the
// dense form's 32-byte loads of random columns go to device memory.
CUZK_HD CUZK_INLINE Fr load_z(const cuzk_assignment& z, uint64_t i) {
    const Fr* values = static_cast<const Fr*>(z.values);
    if (!z.ones) return load_fr(values + i);
    const uint64_t w = i >> 6, bit = 1ull << (i & 63);
    if (z.ones[w] & bit) return Fr::one();
    const uint64_t others = z.others[w];
    if (others & bit) return load_fr(values + z.rank[w] + popcount64(others & (bit - 1)));
    return zero_fr();
}

// Row r of the chunk: the sum of coefficient * z[column] over its entries
// (index CUZK_R1CS_COEFF_ONE adds, CUZK_R1CS_COEFF_MINUS_ONE subtracts,
// others multiply by the table's entry). An entry out of range adds
// nothing and sets *bad.
CUZK_HD CUZK_INLINE Fr eval_row(const cuzk_r1cs_rows& a, uint64_t r, bool* bad) {
    const Fr* coeff = static_cast<const Fr*>(a.coefficients);
    const uint32_t lo = r == 0 ? 0 : a.row_end[r - 1], hi = a.row_end[r];
    Fr acc = zero_fr();
    for (uint32_t k = lo; k < hi; k++) {
        const uint64_t e = a.entries[k];
        const uint32_t col = (uint32_t)e, ci = (uint32_t)(e >> 32);
        if (col >= a.z.num_variables || ci >= a.num_coefficients) {
            *bad = true;
            continue;
        }
        const Fr v = load_z(a.z, col);
        if (ci == CUZK_R1CS_COEFF_ONE)
            acc = acc + v;
        else if (ci == CUZK_R1CS_COEFF_MINUS_ONE)
            acc = acc - v;
        else
            acc = acc + v * load_fr(coeff + ci);
    }
    return acc;
}

}  // namespace prover
}  // namespace cuzk
