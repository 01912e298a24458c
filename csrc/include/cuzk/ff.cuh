/*
 * Montgomery prime-field arithmetic for host and device, and the quadratic
 * extension F[u]/(u^2 + 1).
 *
 * An element of MontField<P> is P::LIMBS 32-bit limbs, least significant
 * first, holding a*R mod m with R = 2^(32*LIMBS) (Montgomery form). That is
 * byte for byte the arkworks layout on a little-endian machine. Elements must
 * be canonical (< m) on input, as arkworks keeps them; every operation
 * returns a canonical element.
 *
 * P (see bls12_381.cuh) supplies:
 *   LIMBS               number of 32-bit limbs N
 *   INV                 -m^-1 mod 2^32
 *   modulus(i), one(i), r2(i)   limb i of m, R mod m, R^2 mod m
 * The modulus must leave the top bit of its top limb clear (m < 2^(32N-1));
 * the multiplication below relies on it.
 *
 * Two implementations of the carry-chain primitives (add_n, sub_n, the
 * even/odd multiply steps add_rshift2_mad_odd, mad_pairs, add_rshift1, and
 * the CIOS row mac_row of the reference multiply) sit under every
 * operation:
 *   - device (__CUDA_ARCH__): PTX with the hardware carry flag
 *     (add.cc/addc, sub.cc/subc, mad.lo.cc/madc.hi...). Each chain is ONE asm
 *     statement that starts with a carry-less instruction and consumes its
 *     last carry itself, so no carry flag ever crosses an asm boundary (the
 *     compiler does not preserve CC between asm statements). Every output is
 *     early-clobber ("+&r"/"=&r"): a chain writes limb j before it reads
 *     limb j+1 of its inputs, and without "&" nvcc may give an output the
 *     register of an input that holds the same value (seen with nvcc 13.0).
 *   - host: portable C++ that performs the same chains limb by limb with
 *     uint64_t sums and drops the same carries, so host tests exercise the
 *     same algorithm and the same no-carry-out claims.
 * Everything above the primitives is shared source. Squaring is a plain
 * multiplication for now (a dedicated squaring would save about a quarter
 * of the partial products).
 */
#ifndef CUZK_FF_CUH
#define CUZK_FF_CUH

#include <stdint.h>

#ifdef __CUDACC__
#define CUZK_HD __host__ __device__
#define CUZK_INLINE __forceinline__
#else
#define CUZK_HD
#define CUZK_INLINE inline
#endif

/* Full unrolling of the fixed-length limb loops (compile-time indices keep
 * limbs in registers on the GPU). Nothing in nvcc's host pass, whose front
 * end knows neither spelling for the host compiler. */
#if defined(__CUDA_ARCH__)
#define CUZK_UNROLL _Pragma("unroll")
#elif defined(__CUDACC__)
#define CUZK_UNROLL
#else
#define CUZK_UNROLL _Pragma("GCC unroll 16")
#endif

namespace cuzk {

/* A plain (not Montgomery) little-endian integer of N 32-bit limbs, e.g. an
 * exponent. */
template <int N>
struct BigInt {
    uint32_t l[N];
};

namespace detail {

#if defined(__CUDACC__)
/* PTX carry chains, one specialisation per limb count used (8: Fr, 12: Fp).
 * Operand numbering is spelled out in each comment. */
template <int N>
struct Ptx;

template <>
struct Ptx<8> {
    /* t[0..8] += a[0..7] * b. %0..%8 = t, %9 = b, %10..%17 = a.
     * Low halves of the products go into t[0..7] (carry into t[8]), then the
     * high halves into t[1..8]; the final carry-out is zero (see mul). */
    static __device__ __forceinline__ void mac_row(uint32_t (&t)[9], const uint32_t (&a)[8],
                                                   uint32_t b) {
        asm("mad.lo.cc.u32 %0, %10, %9, %0;\n\t"
            "madc.lo.cc.u32 %1, %11, %9, %1;\n\t"
            "madc.lo.cc.u32 %2, %12, %9, %2;\n\t"
            "madc.lo.cc.u32 %3, %13, %9, %3;\n\t"
            "madc.lo.cc.u32 %4, %14, %9, %4;\n\t"
            "madc.lo.cc.u32 %5, %15, %9, %5;\n\t"
            "madc.lo.cc.u32 %6, %16, %9, %6;\n\t"
            "madc.lo.cc.u32 %7, %17, %9, %7;\n\t"
            "addc.u32 %8, %8, 0;\n\t"
            "mad.hi.cc.u32 %1, %10, %9, %1;\n\t"
            "madc.hi.cc.u32 %2, %11, %9, %2;\n\t"
            "madc.hi.cc.u32 %3, %12, %9, %3;\n\t"
            "madc.hi.cc.u32 %4, %13, %9, %4;\n\t"
            "madc.hi.cc.u32 %5, %14, %9, %5;\n\t"
            "madc.hi.cc.u32 %6, %15, %9, %6;\n\t"
            "madc.hi.cc.u32 %7, %16, %9, %7;\n\t"
            "madc.hi.u32 %8, %17, %9, %8;"
            : "+&r"(t[0]), "+&r"(t[1]), "+&r"(t[2]), "+&r"(t[3]), "+&r"(t[4]), "+&r"(t[5]),
              "+&r"(t[6]), "+&r"(t[7]), "+&r"(t[8])
            : "r"(b), "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(a[4]), "r"(a[5]),
              "r"(a[6]), "r"(a[7]));
    }

    /* r += b mod 2^256 (carry-out dropped). %0..%7 = r, %8..%15 = b. */
    static __device__ __forceinline__ void add_n(uint32_t (&r)[8], const uint32_t (&b)[8]) {
        asm("add.cc.u32 %0, %0, %8;\n\t"
            "addc.cc.u32 %1, %1, %9;\n\t"
            "addc.cc.u32 %2, %2, %10;\n\t"
            "addc.cc.u32 %3, %3, %11;\n\t"
            "addc.cc.u32 %4, %4, %12;\n\t"
            "addc.cc.u32 %5, %5, %13;\n\t"
            "addc.cc.u32 %6, %6, %14;\n\t"
            "addc.u32 %7, %7, %15;"
            : "+&r"(r[0]), "+&r"(r[1]), "+&r"(r[2]), "+&r"(r[3]), "+&r"(r[4]), "+&r"(r[5]),
              "+&r"(r[6]), "+&r"(r[7])
            : "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]), "r"(b[4]), "r"(b[5]), "r"(b[6]),
              "r"(b[7]));
    }

    /* r -= b mod 2^256; returns 0xffffffff on borrow, else 0.
     * %0..%7 = r, %8 = borrow mask, %9..%16 = b. */
    static __device__ __forceinline__ uint32_t sub_n(uint32_t (&r)[8], const uint32_t (&b)[8]) {
        uint32_t borrow;
        asm("sub.cc.u32 %0, %0, %9;\n\t"
            "subc.cc.u32 %1, %1, %10;\n\t"
            "subc.cc.u32 %2, %2, %11;\n\t"
            "subc.cc.u32 %3, %3, %12;\n\t"
            "subc.cc.u32 %4, %4, %13;\n\t"
            "subc.cc.u32 %5, %5, %14;\n\t"
            "subc.cc.u32 %6, %6, %15;\n\t"
            "subc.cc.u32 %7, %7, %16;\n\t"
            "subc.u32 %8, 0, 0;"
            : "+&r"(r[0]), "+&r"(r[1]), "+&r"(r[2]), "+&r"(r[3]), "+&r"(r[4]), "+&r"(r[5]),
              "+&r"(r[6]), "+&r"(r[7]), "=&r"(borrow)
            : "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]), "r"(b[4]), "r"(b[5]), "r"(b[6]),
              "r"(b[7]));
        return borrow;
    }

/* Row step C1 (see MontField::operator*): x0 += y[1], then
     * y[k] = y[k+2] + a_odd*b in place (pairs lo/hi of a[2p+1]*b at y[2p],
     * y[2p+1]; y[N], y[N+1] read as 0), carry of x0 into y[0]; no carry out.
     * %0 = x0, %1..%8 = y, %9 = b, %10..%13 = a[1], a[3], ... */
    static __device__ __forceinline__ void add_rshift2_mad_odd(uint32_t& x0, uint32_t (&y)[8],
                                                   const uint32_t (&a)[8], uint32_t b) {
        asm(
        "add.cc.u32 %0, %0, %2;\n\t"
        "madc.lo.cc.u32 %1, %10, %9, %3;\n\t"
        "madc.hi.cc.u32 %2, %10, %9, %4;\n\t"
        "madc.lo.cc.u32 %3, %11, %9, %5;\n\t"
        "madc.hi.cc.u32 %4, %11, %9, %6;\n\t"
        "madc.lo.cc.u32 %5, %12, %9, %7;\n\t"
        "madc.hi.cc.u32 %6, %12, %9, %8;\n\t"
        "madc.lo.cc.u32 %7, %13, %9, 0;\n\t"
        "madc.hi.u32 %8, %13, %9, 0;"
            : "+&r"(x0), "+&r"(y[0]), "+&r"(y[1]), "+&r"(y[2]), "+&r"(y[3]), "+&r"(y[4]), "+&r"(y[5]), "+&r"(y[6]), "+&r"(y[7])
            : "r"(b), "r"(a[1]), "r"(a[3]), "r"(a[5]), "r"(a[7]));
    }
    /* x[0..N-1] += sum over pairs p of a[2p+OFF]*b at x[2p], x[2p+1]; the
     * carry out goes into top. %0..%7 = x, %8 = top, %9 = b,
     * %10.. = a[OFF], a[OFF+2], ... */
    template <int OFF>
    static __device__ __forceinline__ void mad_pairs_top(uint32_t (&x)[8], uint32_t& top,
                                                   const uint32_t (&a)[8], uint32_t b) {
        asm(
        "mad.lo.cc.u32 %0, %10, %9, %0;\n\t"
        "madc.hi.cc.u32 %1, %10, %9, %1;\n\t"
        "madc.lo.cc.u32 %2, %11, %9, %2;\n\t"
        "madc.hi.cc.u32 %3, %11, %9, %3;\n\t"
        "madc.lo.cc.u32 %4, %12, %9, %4;\n\t"
        "madc.hi.cc.u32 %5, %12, %9, %5;\n\t"
        "madc.lo.cc.u32 %6, %13, %9, %6;\n\t"
        "madc.hi.cc.u32 %7, %13, %9, %7;\n\t"
        "addc.u32 %8, %8, 0;"
            : "+&r"(x[0]), "+&r"(x[1]), "+&r"(x[2]), "+&r"(x[3]), "+&r"(x[4]), "+&r"(x[5]), "+&r"(x[6]), "+&r"(x[7]), "+&r"(top)
            : "r"(b), "r"(a[0 + OFF]), "r"(a[2 + OFF]), "r"(a[4 + OFF]), "r"(a[6 + OFF]));
    }
    /* As mad_pairs_top with no carry out (the caller's bound makes it 0).
     * %0..%7 = x, %8 = b, %9.. = a[OFF], a[OFF+2], ... */
    template <int OFF>
    static __device__ __forceinline__ void mad_pairs(uint32_t (&x)[8], const uint32_t (&a)[8],
                                               uint32_t b) {
        asm(
        "mad.lo.cc.u32 %0, %9, %8, %0;\n\t"
        "madc.hi.cc.u32 %1, %9, %8, %1;\n\t"
        "madc.lo.cc.u32 %2, %10, %8, %2;\n\t"
        "madc.hi.cc.u32 %3, %10, %8, %3;\n\t"
        "madc.lo.cc.u32 %4, %11, %8, %4;\n\t"
        "madc.hi.cc.u32 %5, %11, %8, %5;\n\t"
        "madc.lo.cc.u32 %6, %12, %8, %6;\n\t"
        "madc.hi.u32 %7, %12, %8, %7;"
            : "+&r"(x[0]), "+&r"(x[1]), "+&r"(x[2]), "+&r"(x[3]), "+&r"(x[4]), "+&r"(x[5]), "+&r"(x[6]), "+&r"(x[7])
            : "r"(b), "r"(a[0 + OFF]), "r"(a[2 + OFF]), "r"(a[4 + OFF]), "r"(a[6 + OFF]));
    }
    /* y[0..N-2] += x[1..N-1], carry into y[N-1]; no carry out.
     * %0..%7 = y, %8..%14 = x[1..N-1]. */
    static __device__ __forceinline__ void add_rshift1(uint32_t (&y)[8], const uint32_t (&x)[8]) {
        asm(
        "add.cc.u32 %0, %0, %8;\n\t"
        "addc.cc.u32 %1, %1, %9;\n\t"
        "addc.cc.u32 %2, %2, %10;\n\t"
        "addc.cc.u32 %3, %3, %11;\n\t"
        "addc.cc.u32 %4, %4, %12;\n\t"
        "addc.cc.u32 %5, %5, %13;\n\t"
        "addc.cc.u32 %6, %6, %14;\n\t"
        "addc.u32 %7, %7, 0;"
            : "+&r"(y[0]), "+&r"(y[1]), "+&r"(y[2]), "+&r"(y[3]), "+&r"(y[4]), "+&r"(y[5]), "+&r"(y[6]), "+&r"(y[7])
            : "r"(x[1]), "r"(x[2]), "r"(x[3]), "r"(x[4]), "r"(x[5]), "r"(x[6]), "r"(x[7]));
    }
    /* As mad_pairs_top / mad_pairs with the first pair given as (lo, hi)
     * instead of a[OFF]*b: x[0] += lo, x[1] += hi, then the pairs
     * a[2p+OFF]*b, p >= 1. Used for moduli whose two low limbs make q*m[0]
     * and q*m[1] free (MontField::kLowOneMinus).
     * %0..%7 = x, %8 = top, %9 = b, %10 = lo, %11 = hi, %12.. = a[2+OFF], ... */
    template <int OFF>
    static __device__ __forceinline__ void add_mad_pairs_top(uint32_t (&x)[8], uint32_t& top,
                                                             uint32_t lo, uint32_t hi,
                                                             const uint32_t (&a)[8], uint32_t b) {
        asm(
        "add.cc.u32 %0, %0, %10;\n\t"
        "addc.cc.u32 %1, %1, %11;\n\t"
        "madc.lo.cc.u32 %2, %12, %9, %2;\n\t"
        "madc.hi.cc.u32 %3, %12, %9, %3;\n\t"
        "madc.lo.cc.u32 %4, %13, %9, %4;\n\t"
        "madc.hi.cc.u32 %5, %13, %9, %5;\n\t"
        "madc.lo.cc.u32 %6, %14, %9, %6;\n\t"
        "madc.hi.cc.u32 %7, %14, %9, %7;\n\t"
        "addc.u32 %8, %8, 0;"
            : "+&r"(x[0]), "+&r"(x[1]), "+&r"(x[2]), "+&r"(x[3]), "+&r"(x[4]), "+&r"(x[5]), "+&r"(x[6]), "+&r"(x[7]), "+&r"(top)
            : "r"(b), "r"(lo), "r"(hi), "r"(a[2 + OFF]), "r"(a[4 + OFF]), "r"(a[6 + OFF]));
    }
    /* %0..%7 = x, %8 = b, %9 = lo, %10 = hi, %11.. = a[2+OFF], ... */
    template <int OFF>
    static __device__ __forceinline__ void add_mad_pairs(uint32_t (&x)[8], uint32_t lo, uint32_t hi,
                                                         const uint32_t (&a)[8], uint32_t b) {
        asm(
        "add.cc.u32 %0, %0, %9;\n\t"
        "addc.cc.u32 %1, %1, %10;\n\t"
        "madc.lo.cc.u32 %2, %11, %8, %2;\n\t"
        "madc.hi.cc.u32 %3, %11, %8, %3;\n\t"
        "madc.lo.cc.u32 %4, %12, %8, %4;\n\t"
        "madc.hi.cc.u32 %5, %12, %8, %5;\n\t"
        "madc.lo.cc.u32 %6, %13, %8, %6;\n\t"
        "madc.hi.u32 %7, %13, %8, %7;"
            : "+&r"(x[0]), "+&r"(x[1]), "+&r"(x[2]), "+&r"(x[3]), "+&r"(x[4]), "+&r"(x[5]), "+&r"(x[6]), "+&r"(x[7])
            : "r"(b), "r"(lo), "r"(hi), "r"(a[2 + OFF]), "r"(a[4 + OFF]), "r"(a[6 + OFF]));
    }
};

template <>
struct Ptx<12> {
    /* t[0..12] += a[0..11] * b. %0..%12 = t, %13 = b, %14..%25 = a. */
    static __device__ __forceinline__ void mac_row(uint32_t (&t)[13], const uint32_t (&a)[12],
                                                   uint32_t b) {
        asm("mad.lo.cc.u32 %0, %14, %13, %0;\n\t"
            "madc.lo.cc.u32 %1, %15, %13, %1;\n\t"
            "madc.lo.cc.u32 %2, %16, %13, %2;\n\t"
            "madc.lo.cc.u32 %3, %17, %13, %3;\n\t"
            "madc.lo.cc.u32 %4, %18, %13, %4;\n\t"
            "madc.lo.cc.u32 %5, %19, %13, %5;\n\t"
            "madc.lo.cc.u32 %6, %20, %13, %6;\n\t"
            "madc.lo.cc.u32 %7, %21, %13, %7;\n\t"
            "madc.lo.cc.u32 %8, %22, %13, %8;\n\t"
            "madc.lo.cc.u32 %9, %23, %13, %9;\n\t"
            "madc.lo.cc.u32 %10, %24, %13, %10;\n\t"
            "madc.lo.cc.u32 %11, %25, %13, %11;\n\t"
            "addc.u32 %12, %12, 0;\n\t"
            "mad.hi.cc.u32 %1, %14, %13, %1;\n\t"
            "madc.hi.cc.u32 %2, %15, %13, %2;\n\t"
            "madc.hi.cc.u32 %3, %16, %13, %3;\n\t"
            "madc.hi.cc.u32 %4, %17, %13, %4;\n\t"
            "madc.hi.cc.u32 %5, %18, %13, %5;\n\t"
            "madc.hi.cc.u32 %6, %19, %13, %6;\n\t"
            "madc.hi.cc.u32 %7, %20, %13, %7;\n\t"
            "madc.hi.cc.u32 %8, %21, %13, %8;\n\t"
            "madc.hi.cc.u32 %9, %22, %13, %9;\n\t"
            "madc.hi.cc.u32 %10, %23, %13, %10;\n\t"
            "madc.hi.cc.u32 %11, %24, %13, %11;\n\t"
            "madc.hi.u32 %12, %25, %13, %12;"
            : "+&r"(t[0]), "+&r"(t[1]), "+&r"(t[2]), "+&r"(t[3]), "+&r"(t[4]), "+&r"(t[5]),
              "+&r"(t[6]), "+&r"(t[7]), "+&r"(t[8]), "+&r"(t[9]), "+&r"(t[10]), "+&r"(t[11]),
              "+&r"(t[12])
            : "r"(b), "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(a[4]), "r"(a[5]),
              "r"(a[6]), "r"(a[7]), "r"(a[8]), "r"(a[9]), "r"(a[10]), "r"(a[11]));
    }

    /* r += b mod 2^384 (carry-out dropped). %0..%11 = r, %12..%23 = b. */
    static __device__ __forceinline__ void add_n(uint32_t (&r)[12], const uint32_t (&b)[12]) {
        asm("add.cc.u32 %0, %0, %12;\n\t"
            "addc.cc.u32 %1, %1, %13;\n\t"
            "addc.cc.u32 %2, %2, %14;\n\t"
            "addc.cc.u32 %3, %3, %15;\n\t"
            "addc.cc.u32 %4, %4, %16;\n\t"
            "addc.cc.u32 %5, %5, %17;\n\t"
            "addc.cc.u32 %6, %6, %18;\n\t"
            "addc.cc.u32 %7, %7, %19;\n\t"
            "addc.cc.u32 %8, %8, %20;\n\t"
            "addc.cc.u32 %9, %9, %21;\n\t"
            "addc.cc.u32 %10, %10, %22;\n\t"
            "addc.u32 %11, %11, %23;"
            : "+&r"(r[0]), "+&r"(r[1]), "+&r"(r[2]), "+&r"(r[3]), "+&r"(r[4]), "+&r"(r[5]),
              "+&r"(r[6]), "+&r"(r[7]), "+&r"(r[8]), "+&r"(r[9]), "+&r"(r[10]), "+&r"(r[11])
            : "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]), "r"(b[4]), "r"(b[5]), "r"(b[6]),
              "r"(b[7]), "r"(b[8]), "r"(b[9]), "r"(b[10]), "r"(b[11]));
    }

    /* r -= b mod 2^384; returns 0xffffffff on borrow, else 0.
     * %0..%11 = r, %12 = borrow mask, %13..%24 = b. */
    static __device__ __forceinline__ uint32_t sub_n(uint32_t (&r)[12], const uint32_t (&b)[12]) {
        uint32_t borrow;
        asm("sub.cc.u32 %0, %0, %13;\n\t"
            "subc.cc.u32 %1, %1, %14;\n\t"
            "subc.cc.u32 %2, %2, %15;\n\t"
            "subc.cc.u32 %3, %3, %16;\n\t"
            "subc.cc.u32 %4, %4, %17;\n\t"
            "subc.cc.u32 %5, %5, %18;\n\t"
            "subc.cc.u32 %6, %6, %19;\n\t"
            "subc.cc.u32 %7, %7, %20;\n\t"
            "subc.cc.u32 %8, %8, %21;\n\t"
            "subc.cc.u32 %9, %9, %22;\n\t"
            "subc.cc.u32 %10, %10, %23;\n\t"
            "subc.cc.u32 %11, %11, %24;\n\t"
            "subc.u32 %12, 0, 0;"
            : "+&r"(r[0]), "+&r"(r[1]), "+&r"(r[2]), "+&r"(r[3]), "+&r"(r[4]), "+&r"(r[5]),
              "+&r"(r[6]), "+&r"(r[7]), "+&r"(r[8]), "+&r"(r[9]), "+&r"(r[10]), "+&r"(r[11]),
              "=&r"(borrow)
            : "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]), "r"(b[4]), "r"(b[5]), "r"(b[6]),
              "r"(b[7]), "r"(b[8]), "r"(b[9]), "r"(b[10]), "r"(b[11]));
        return borrow;
    }

/* Row step C1 (see MontField::operator*): x0 += y[1], then
     * y[k] = y[k+2] + a_odd*b in place (pairs lo/hi of a[2p+1]*b at y[2p],
     * y[2p+1]; y[N], y[N+1] read as 0), carry of x0 into y[0]; no carry out.
     * %0 = x0, %1..%12 = y, %13 = b, %14..%19 = a[1], a[3], ... */
    static __device__ __forceinline__ void add_rshift2_mad_odd(uint32_t& x0, uint32_t (&y)[12],
                                                   const uint32_t (&a)[12], uint32_t b) {
        asm(
        "add.cc.u32 %0, %0, %2;\n\t"
        "madc.lo.cc.u32 %1, %14, %13, %3;\n\t"
        "madc.hi.cc.u32 %2, %14, %13, %4;\n\t"
        "madc.lo.cc.u32 %3, %15, %13, %5;\n\t"
        "madc.hi.cc.u32 %4, %15, %13, %6;\n\t"
        "madc.lo.cc.u32 %5, %16, %13, %7;\n\t"
        "madc.hi.cc.u32 %6, %16, %13, %8;\n\t"
        "madc.lo.cc.u32 %7, %17, %13, %9;\n\t"
        "madc.hi.cc.u32 %8, %17, %13, %10;\n\t"
        "madc.lo.cc.u32 %9, %18, %13, %11;\n\t"
        "madc.hi.cc.u32 %10, %18, %13, %12;\n\t"
        "madc.lo.cc.u32 %11, %19, %13, 0;\n\t"
        "madc.hi.u32 %12, %19, %13, 0;"
            : "+&r"(x0), "+&r"(y[0]), "+&r"(y[1]), "+&r"(y[2]), "+&r"(y[3]), "+&r"(y[4]), "+&r"(y[5]), "+&r"(y[6]), "+&r"(y[7]), "+&r"(y[8]), "+&r"(y[9]), "+&r"(y[10]), "+&r"(y[11])
            : "r"(b), "r"(a[1]), "r"(a[3]), "r"(a[5]), "r"(a[7]), "r"(a[9]), "r"(a[11]));
    }
    /* x[0..N-1] += sum over pairs p of a[2p+OFF]*b at x[2p], x[2p+1]; the
     * carry out goes into top. %0..%11 = x, %12 = top, %13 = b,
     * %14.. = a[OFF], a[OFF+2], ... */
    template <int OFF>
    static __device__ __forceinline__ void mad_pairs_top(uint32_t (&x)[12], uint32_t& top,
                                                   const uint32_t (&a)[12], uint32_t b) {
        asm(
        "mad.lo.cc.u32 %0, %14, %13, %0;\n\t"
        "madc.hi.cc.u32 %1, %14, %13, %1;\n\t"
        "madc.lo.cc.u32 %2, %15, %13, %2;\n\t"
        "madc.hi.cc.u32 %3, %15, %13, %3;\n\t"
        "madc.lo.cc.u32 %4, %16, %13, %4;\n\t"
        "madc.hi.cc.u32 %5, %16, %13, %5;\n\t"
        "madc.lo.cc.u32 %6, %17, %13, %6;\n\t"
        "madc.hi.cc.u32 %7, %17, %13, %7;\n\t"
        "madc.lo.cc.u32 %8, %18, %13, %8;\n\t"
        "madc.hi.cc.u32 %9, %18, %13, %9;\n\t"
        "madc.lo.cc.u32 %10, %19, %13, %10;\n\t"
        "madc.hi.cc.u32 %11, %19, %13, %11;\n\t"
        "addc.u32 %12, %12, 0;"
            : "+&r"(x[0]), "+&r"(x[1]), "+&r"(x[2]), "+&r"(x[3]), "+&r"(x[4]), "+&r"(x[5]), "+&r"(x[6]), "+&r"(x[7]), "+&r"(x[8]), "+&r"(x[9]), "+&r"(x[10]), "+&r"(x[11]), "+&r"(top)
            : "r"(b), "r"(a[0 + OFF]), "r"(a[2 + OFF]), "r"(a[4 + OFF]), "r"(a[6 + OFF]), "r"(a[8 + OFF]), "r"(a[10 + OFF]));
    }
    /* As mad_pairs_top with no carry out (the caller's bound makes it 0).
     * %0..%11 = x, %12 = b, %13.. = a[OFF], a[OFF+2], ... */
    template <int OFF>
    static __device__ __forceinline__ void mad_pairs(uint32_t (&x)[12], const uint32_t (&a)[12],
                                               uint32_t b) {
        asm(
        "mad.lo.cc.u32 %0, %13, %12, %0;\n\t"
        "madc.hi.cc.u32 %1, %13, %12, %1;\n\t"
        "madc.lo.cc.u32 %2, %14, %12, %2;\n\t"
        "madc.hi.cc.u32 %3, %14, %12, %3;\n\t"
        "madc.lo.cc.u32 %4, %15, %12, %4;\n\t"
        "madc.hi.cc.u32 %5, %15, %12, %5;\n\t"
        "madc.lo.cc.u32 %6, %16, %12, %6;\n\t"
        "madc.hi.cc.u32 %7, %16, %12, %7;\n\t"
        "madc.lo.cc.u32 %8, %17, %12, %8;\n\t"
        "madc.hi.cc.u32 %9, %17, %12, %9;\n\t"
        "madc.lo.cc.u32 %10, %18, %12, %10;\n\t"
        "madc.hi.u32 %11, %18, %12, %11;"
            : "+&r"(x[0]), "+&r"(x[1]), "+&r"(x[2]), "+&r"(x[3]), "+&r"(x[4]), "+&r"(x[5]), "+&r"(x[6]), "+&r"(x[7]), "+&r"(x[8]), "+&r"(x[9]), "+&r"(x[10]), "+&r"(x[11])
            : "r"(b), "r"(a[0 + OFF]), "r"(a[2 + OFF]), "r"(a[4 + OFF]), "r"(a[6 + OFF]), "r"(a[8 + OFF]), "r"(a[10 + OFF]));
    }
    /* y[0..N-2] += x[1..N-1], carry into y[N-1]; no carry out.
     * %0..%11 = y, %12..%22 = x[1..N-1]. */
    static __device__ __forceinline__ void add_rshift1(uint32_t (&y)[12], const uint32_t (&x)[12]) {
        asm(
        "add.cc.u32 %0, %0, %12;\n\t"
        "addc.cc.u32 %1, %1, %13;\n\t"
        "addc.cc.u32 %2, %2, %14;\n\t"
        "addc.cc.u32 %3, %3, %15;\n\t"
        "addc.cc.u32 %4, %4, %16;\n\t"
        "addc.cc.u32 %5, %5, %17;\n\t"
        "addc.cc.u32 %6, %6, %18;\n\t"
        "addc.cc.u32 %7, %7, %19;\n\t"
        "addc.cc.u32 %8, %8, %20;\n\t"
        "addc.cc.u32 %9, %9, %21;\n\t"
        "addc.cc.u32 %10, %10, %22;\n\t"
        "addc.u32 %11, %11, 0;"
            : "+&r"(y[0]), "+&r"(y[1]), "+&r"(y[2]), "+&r"(y[3]), "+&r"(y[4]), "+&r"(y[5]), "+&r"(y[6]), "+&r"(y[7]), "+&r"(y[8]), "+&r"(y[9]), "+&r"(y[10]), "+&r"(y[11])
            : "r"(x[1]), "r"(x[2]), "r"(x[3]), "r"(x[4]), "r"(x[5]), "r"(x[6]), "r"(x[7]), "r"(x[8]), "r"(x[9]), "r"(x[10]), "r"(x[11]));
    }
};
#endif /* __CUDACC__ */

/* t[0..N] += a[0..N-1] * b, as two carry chains: the low 32 bits of each
 * product a[j]*b into t[j] (final carry into t[N]), then the high 32 bits
 * into t[j+1] (final carry dropped). The caller guarantees the sum fits in
 * N+1 limbs, so nothing is lost. */
template <int N>
CUZK_HD CUZK_INLINE void mac_row(uint32_t (&t)[N + 1], const uint32_t (&a)[N], uint32_t b) {
#ifdef __CUDA_ARCH__
    Ptx<N>::mac_row(t, a, b);
#else
    uint32_t carry = 0;
    for (int j = 0; j < N; ++j) {
        const uint64_t s = (uint64_t)t[j] + (uint32_t)((uint64_t)a[j] * b) + carry;
        t[j] = (uint32_t)s;
        carry = (uint32_t)(s >> 32);
    }
    t[N] += carry;
    carry = 0;
    for (int j = 0; j < N; ++j) {
        const uint64_t s = (uint64_t)t[j + 1] + (uint32_t)(((uint64_t)a[j] * b) >> 32) + carry;
        t[j + 1] = (uint32_t)s;
        carry = (uint32_t)(s >> 32);
    }
#endif
}

/* r += b mod 2^(32N). */
template <int N>
CUZK_HD CUZK_INLINE void add_n(uint32_t (&r)[N], const uint32_t (&b)[N]) {
#ifdef __CUDA_ARCH__
    Ptx<N>::add_n(r, b);
#else
    uint32_t carry = 0;
    for (int j = 0; j < N; ++j) {
        const uint64_t s = (uint64_t)r[j] + b[j] + carry;
        r[j] = (uint32_t)s;
        carry = (uint32_t)(s >> 32);
    }
#endif
}

/* r -= b mod 2^(32N); returns 0xffffffff if it borrowed (r < b), else 0. */
template <int N>
CUZK_HD CUZK_INLINE uint32_t sub_n(uint32_t (&r)[N], const uint32_t (&b)[N]) {
#ifdef __CUDA_ARCH__
    return Ptx<N>::sub_n(r, b);
#else
    uint32_t borrow = 0; /* 0 or 1 */
    for (int j = 0; j < N; ++j) {
        const uint64_t d = (uint64_t)r[j] - b[j] - borrow;
        r[j] = (uint32_t)d;
        borrow = (uint32_t)(d >> 63);
    }
    return 0u - borrow;
#endif
}


/* The even/odd primitives of MontField::operator* (the row steps C1..C4
 * and the final merge described there). Device: one PTX chain each (Ptx<N>
 * above); host: the same chains limb by limb. Products are taken in lo/hi
 * pairs of one a[j]*b so that the GPU can form each pair with one 64-bit
 * multiply-add (IMAD.WIDE). */

/* x0 += y[1]; y[k] = y[k+2] + sum_p a[2p+1]*b at y[2p], y[2p+1] (y[N] and
 * y[N+1] read as 0), with x0's carry into y[0]; the final carry is 0. */
template <int N>
CUZK_HD CUZK_INLINE void add_rshift2_mad_odd(uint32_t& x0, uint32_t (&y)[N],
                                             const uint32_t (&a)[N], uint32_t b) {
#ifdef __CUDA_ARCH__
    Ptx<N>::add_rshift2_mad_odd(x0, y, a, b);
#else
    uint64_t s = (uint64_t)x0 + y[1];
    x0 = (uint32_t)s;
    uint32_t c = (uint32_t)(s >> 32);
    for (int p = 0; p < N / 2; ++p) {
        const uint64_t t = (uint64_t)a[2 * p + 1] * b;
        const uint32_t lo_add = 2 * p + 2 < N ? y[2 * p + 2] : 0;
        const uint32_t hi_add = 2 * p + 3 < N ? y[2 * p + 3] : 0;
        s = (uint64_t)(uint32_t)t + lo_add + c;
        y[2 * p] = (uint32_t)s;
        c = (uint32_t)(s >> 32);
        s = (t >> 32) + hi_add + c;
        y[2 * p + 1] = (uint32_t)s;
        c = (uint32_t)(s >> 32);
    }
#endif
}

/* As mad_pairs with the first pair given as (lo, hi) instead of a[OFF]*b
 * (MontField::kLowOneMinus). Only N = 8 has a PTX chain. */
template <int N, int OFF, bool kTop>
CUZK_HD CUZK_INLINE void add_mad_pairs(uint32_t (&x)[N], uint32_t& top, uint32_t lo, uint32_t hi,
                                       const uint32_t (&a)[N], uint32_t b) {
#ifdef __CUDA_ARCH__
    static_assert(N == 8, "add_mad_pairs: PTX chain only for 8 limbs");
    if constexpr (kTop)
        Ptx<N>::template add_mad_pairs_top<OFF>(x, top, lo, hi, a, b);
    else
        Ptx<N>::template add_mad_pairs<OFF>(x, lo, hi, a, b);
#else
    uint64_t s = (uint64_t)x[0] + lo;
    x[0] = (uint32_t)s;
    uint32_t c = (uint32_t)(s >> 32);
    s = (uint64_t)x[1] + hi + c;
    x[1] = (uint32_t)s;
    c = (uint32_t)(s >> 32);
    for (int p = 1; p < N / 2; ++p) {
        const uint64_t t = (uint64_t)a[2 * p + OFF] * b;
        s = (uint64_t)x[2 * p] + (uint32_t)t + c;
        x[2 * p] = (uint32_t)s;
        c = (uint32_t)(s >> 32);
        s = (uint64_t)x[2 * p + 1] + (t >> 32) + c;
        x[2 * p + 1] = (uint32_t)s;
        c = (uint32_t)(s >> 32);
    }
    if (kTop) top += c;
#endif
}

/* x[0..N-1] += sum_p a[2p+OFF]*b at x[2p], x[2p+1]; with kTop the carry
 * out goes into top, without it the caller's bound makes it 0. */
template <int N, int OFF, bool kTop>
CUZK_HD CUZK_INLINE void mad_pairs(uint32_t (&x)[N], uint32_t& top, const uint32_t (&a)[N],
                                   uint32_t b) {
#ifdef __CUDA_ARCH__
    if constexpr (kTop)
        Ptx<N>::template mad_pairs_top<OFF>(x, top, a, b);
    else
        Ptx<N>::template mad_pairs<OFF>(x, a, b);
#else
    const uint64_t t = (uint64_t)a[OFF] * b;
    add_mad_pairs<N, OFF, kTop>(x, top, (uint32_t)t, (uint32_t)(t >> 32), a, b);
#endif
}

/* y[0..N-2] += x[1..N-1] with the carry into y[N-1]; the final carry is 0. */
template <int N>
CUZK_HD CUZK_INLINE void add_rshift1(uint32_t (&y)[N], const uint32_t (&x)[N]) {
#ifdef __CUDA_ARCH__
    Ptx<N>::add_rshift1(y, x);
#else
    uint32_t c = 0;
    for (int k = 0; k + 1 < N; ++k) {
        const uint64_t s = (uint64_t)y[k] + x[k + 1] + c;
        y[k] = (uint32_t)s;
        c = (uint32_t)(s >> 32);
    }
    y[N - 1] += c;
#endif
}



#if defined(__CUDACC__)
/* -m^-1 mod 2^32 of P in constant memory, deliberately not const: for Fr
 * INV = 2^32 - 1, and a foldable constant lets ptxas turn q = x * INV into
 * q = -x and then split every q*m lo/hi pair into two instructions instead
 * of one IMAD.WIDE (about a fifth of Fr's multiply; seen with nvcc 13.0). */
template <class P>
__device__ __constant__ uint32_t kInv = P::INV;
#endif

} // namespace detail

template <class P>
struct MontField {
    using Params = P;
    static constexpr int N = P::LIMBS;
    uint32_t l[N];

    CUZK_HD CUZK_INLINE static MontField zero() {
        MontField r;
        CUZK_UNROLL
        for (int i = 0; i < N; ++i) r.l[i] = 0;
        return r;
    }
    /* 1 in Montgomery form: R mod m. */
    CUZK_HD CUZK_INLINE static MontField one() {
        MontField r;
        CUZK_UNROLL
        for (int i = 0; i < N; ++i) r.l[i] = P::one(i);
        return r;
    }
    /* R^2 mod m: to_montgomery(x) = x * r2() for a plain x < m held in l[]. */
    CUZK_HD CUZK_INLINE static MontField r2() {
        MontField r;
        CUZK_UNROLL
        for (int i = 0; i < N; ++i) r.l[i] = P::r2(i);
        return r;
    }
    /* The modulus m itself (not a field element). */
    CUZK_HD CUZK_INLINE static MontField modulus() {
        MontField r;
        CUZK_UNROLL
        for (int i = 0; i < N; ++i) r.l[i] = P::modulus(i);
        return r;
    }

    CUZK_HD CUZK_INLINE bool is_zero() const {
        uint32_t acc = 0;
        CUZK_UNROLL
        for (int i = 0; i < N; ++i) acc |= l[i];
        return acc == 0;
    }
    CUZK_HD CUZK_INLINE friend bool operator==(const MontField& a, const MontField& b) {
        uint32_t acc = 0;
        CUZK_UNROLL
        for (int i = 0; i < N; ++i) acc |= a.l[i] ^ b.l[i];
        return acc == 0;
    }
    CUZK_HD CUZK_INLINE friend bool operator!=(const MontField& a, const MontField& b) {
        return !(a == b);
    }

    /* x - m if x >= m, else x; for x < 2m. */
    CUZK_HD CUZK_INLINE static MontField reduce_once(const MontField& x) {
        MontField s = x;
        const uint32_t borrow = detail::sub_n<N>(s.l, modulus().l);
        MontField r;
        CUZK_UNROLL
        for (int i = 0; i < N; ++i) r.l[i] = (x.l[i] & borrow) | (s.l[i] & ~borrow);
        return r;
    }

    /* a + b < 2m < 2^(32N): the sum never carries out of the top limb. */
    CUZK_HD CUZK_INLINE friend MontField operator+(const MontField& a, const MontField& b) {
        MontField r = a;
        detail::add_n<N>(r.l, b.l);
        return reduce_once(r);
    }
    /* a - b, plus m when it borrowed (the add then wraps mod 2^(32N)). */
    CUZK_HD CUZK_INLINE friend MontField operator-(const MontField& a, const MontField& b) {
        MontField r = a;
        const uint32_t borrow = detail::sub_n<N>(r.l, b.l);
        MontField m = modulus();
        CUZK_UNROLL
        for (int i = 0; i < N; ++i) m.l[i] &= borrow;
        detail::add_n<N>(r.l, m.l);
        return r;
    }
    /* m - a, or 0 for a = 0. */
    CUZK_HD CUZK_INLINE friend MontField operator-(const MontField& a) {
        MontField r = modulus();
        detail::sub_n<N>(r.l, a.l);
        const uint32_t keep = a.is_zero() ? 0u : ~0u;
        CUZK_UNROLL
        for (int i = 0; i < N; ++i) r.l[i] &= keep;
        return r;
    }
    CUZK_HD CUZK_INLINE MontField dbl() const { return *this + *this; }

    /* -m^-1 mod 2^32 (P::INV; on the device read from constant memory, see
     * detail::kInv). */
    CUZK_HD CUZK_INLINE static uint32_t mont_inv() {
#ifdef __CUDA_ARCH__
        return detail::kInv<P>;
#else
        return P::INV;
#endif
    }

    /* One row (i >= 1) of operator*: steps C1..C4 with X the row's even
     * accumulator and Y its odd one (see operator*). */
    CUZK_HD CUZK_INLINE static void mont_row(uint32_t (&X)[N], uint32_t (&Y)[N],
                                             const uint32_t (&a)[N], uint32_t bi,
                                             const uint32_t (&m)[N]) {
        detail::add_rshift2_mad_odd<N>(X[0], Y, a, bi);
        detail::mad_pairs<N, 0, true>(X, Y[N - 1], a, bi);
        reduce_row(X, Y, m);
    }

    /* True when m[0] = 1 and m[1] = 2^32 - 1 (so m = 1 - W + W^2 k, as
     * BLS12-381's r = 0x73ed...ffffffff00000001). Then INV = W - 1, q = -X[0]
     * mod W, and the two lowest pairs of q*m need no multiply:
     *   q*m[0] = (lo q, hi 0), and X[0] + q = 0 mod W;
     *   q*m[1] = q*W - q = (lo (-q mod W) = X[0], hi q - [q != 0]).
     * That removes two of the N/2 + N/2 lo/hi multiply pairs of each row's
     * reduction (an eighth of Fr's multiply pairs). */
    static constexpr bool kLowOneMinus =
        P::modulus(0) == 1u && P::modulus(1) == 0xffffffffu;

    /* Steps C3, C4 of a row (see operator*): q = X[0] * INV, Y += m_odd*q,
     * X += m_even*q with the carry into Y[N-1]. */
    CUZK_HD CUZK_INLINE static void reduce_row(uint32_t (&X)[N], uint32_t (&Y)[N],
                                               const uint32_t (&m)[N]) {
        const uint32_t q = X[0] * mont_inv();
        if constexpr (kLowOneMinus) {
            static_assert(P::INV == 0xffffffffu, "kLowOneMinus moduli have INV = 2^32 - 1");
            const uint32_t hi1 = (q > 1u ? q : 1u) - 1u; /* q - [q != 0] */
            detail::add_mad_pairs<N, 1, false>(Y, Y[N - 1], X[0], hi1, m, q);
            detail::add_mad_pairs<N, 0, true>(X, Y[N - 1], q, 0u, m, q);
        } else {
            detail::mad_pairs<N, 1, false>(Y, Y[N - 1], m, q);
            detail::mad_pairs<N, 0, true>(X, Y[N - 1], m, q);
        }
    }

    /* Montgomery product a*b*R^-1 mod m: CIOS (see mul_cios below) with the
     * accumulator split into an even and an odd half, after N. Emmart,
     * J. Luitjens, C. Weems and C. Woolley, "Optimizing modular
     * multiplication for NVIDIA's Maxwell GPUs", ARITH 23 (2016). Row i
     * adds a*b_i and q*m; the products a[j]*b_i with j even go, as lo/hi
     * pairs, into accumulator X at positions (j, j+1), those with j odd into
     * Y at (j+1, j+2), so no two products of one chain share a limb and the
     * GPU forms each pair with one IMAD.WIDE (64-bit multiply-add) instead
     * of a separate high multiply plus carry add.
     *
     * Frames (X[k] holds position k of the row's sum, Y[k] position k+1):
     *   C1  X[0] += Y[1]; Y[k] = Y[k+2] + a_odd*b_i: last row's X, which
     *       after the division by W sits one limb low, becomes this row's
     *       odd accumulator by a two-limb shift folded into its chain;
     *   C2  X += a_even*b_i, carry into Y[N-1] (position N);
     *       q = X[0] * INV, so that position 0 becomes 0 mod W;
     *   C3  Y += m_odd*q;  C4  X += m_even*q, carry into Y[N-1].
     * X[0] is now 0; dividing by W makes Y the next row's X and X the next
     * row's Y, so the two arrays swap roles each row. Row 0 starts from
     * zero: its products land on disjoint limbs and need no adds. At the
     * end the value is Y + X/W (add_rshift1).
     *
     * Bound, with W = 2^32 and a, b < m < W^N/2 (the same as CIOS): the
     * value entering a row is below 2m, the row's sum below
     * 2m + 2(W-1)m < 2Wm < W^(N+1), so the top limb (position N, Y[N-1])
     * never overflows and the chains marked carry-free are; the result is
     * below 2m, and one conditional subtraction makes it canonical. */
    CUZK_HD CUZK_INLINE friend MontField operator*(const MontField& a, const MontField& b) {
        return reduce_once(mul_lazy(a, b));
    }

    /* operator* without its final conditional subtraction: a*b*R^-1 mod m
     * or that plus m, below 2m, for a, b <= m (the bound of operator* holds
     * for a = m too), for callers that keep values below 2m. */
    CUZK_HD CUZK_INLINE static MontField mul_lazy(const MontField& a, const MontField& b) {
        const MontField m = modulus();
        uint32_t A[N], B[N];
        {
            const uint32_t b0 = b.l[0];
            CUZK_UNROLL
            for (int p = 0; p < N / 2; ++p) {
                const uint64_t e = (uint64_t)a.l[2 * p] * b0;
                const uint64_t o = (uint64_t)a.l[2 * p + 1] * b0;
                A[2 * p] = (uint32_t)e;
                A[2 * p + 1] = (uint32_t)(e >> 32);
                B[2 * p] = (uint32_t)o;
                B[2 * p + 1] = (uint32_t)(o >> 32);
            }
            reduce_row(A, B, m.l);
        }
        CUZK_UNROLL
        for (int i = 1; i < N; ++i) {
            if (i & 1)
                mont_row(B, A, a.l, b.l[i], m.l);
            else
                mont_row(A, B, a.l, b.l[i], m.l);
        }
        detail::add_rshift1<N>(A, B);
        MontField r;
        CUZK_UNROLL
        for (int j = 0; j < N; ++j) r.l[j] = A[j];
        return r;
    }

    /* The same product by plain CIOS, one row chain at a time: the reference
     * that operator* is tested against and the baseline of its benchmark.
     * Montgomery product a*b*R^-1 mod m by CIOS (Coarsely Integrated Operand
     * Scanning; C. K. Koc, T. Acar, B. S. Kaliski Jr., "Analyzing and
     * comparing Montgomery multiplication algorithms", IEEE Micro 16(3),
     * 1996), with the accumulator cut to N+1 limbs because m < 2^(32N-1):
     * the observation behind the "no-carry" CIOS of the gnark-crypto authors
     * ("Faster big-integer modular multiplication for most moduli", 2020,
     * https://hackmd.io/@gnark/modular_multiplication).
     *
     * Bound, with W = 2^32 and a, b < m: t < 2m at the top of every
     * iteration; t + a*b_i < 2m + (W-1)m and t + a*b_i + q*m < 2Wm < W^(N+1)
     * (as 2m < W^N), so both rows fit in t[0..N] and every chain's final
     * carry-out is zero; after the division by W, t < 2m again. One
     * conditional subtraction gives the canonical result. */
    CUZK_HD CUZK_INLINE static MontField mul_cios(const MontField& a, const MontField& b) {
        const MontField m = modulus();
        uint32_t t[N + 1];
        CUZK_UNROLL
        for (int j = 0; j <= N; ++j) t[j] = 0;
        CUZK_UNROLL
        for (int i = 0; i < N; ++i) {
            detail::mac_row<N>(t, a.l, b.l[i]);  /* t += a * b_i */
            const uint32_t q = t[0] * P::INV;   /* t + q*m = 0 mod W */
            detail::mac_row<N>(t, m.l, q);      /* t += q * m; t[0] = 0 */
            CUZK_UNROLL
            for (int j = 0; j < N; ++j) t[j] = t[j + 1]; /* t /= W */
            t[N] = 0;
        }
        MontField r;
        CUZK_UNROLL
        for (int j = 0; j < N; ++j) r.l[j] = t[j];
        return reduce_once(r);
    }
    CUZK_HD CUZK_INLINE MontField sqr() const { return *this * *this; }

    /* this^e for a plain little-endian integer e (left-to-right binary
     * square-and-multiply; not constant-time). 0^0 = 1. */
    CUZK_HD CUZK_INLINE MontField pow(const BigInt<N>& e) const {
        MontField r = one();
        for (int w = N - 1; w >= 0; --w) {
            /* e.l[w] without a run-time index into e (which would put e in
             * local memory on the GPU). */
            uint32_t word = 0;
            CUZK_UNROLL
            for (int k = 0; k < N; ++k) word = (k == w) ? e.l[k] : word;
            for (int bit = 31; bit >= 0; --bit) {
                r = r.sqr();
                if ((word >> bit) & 1u) r = r * *this;
            }
        }
        return r;
    }

    /* this^-1 by Fermat's little theorem, this^(m-2); 0 maps to 0. */
    CUZK_HD CUZK_INLINE MontField inverse() const {
        BigInt<N> e;
        CUZK_UNROLL
        for (int i = 0; i < N; ++i) e.l[i] = P::modulus(i);
        const uint32_t two[N] = {2};
        detail::sub_n<N>(e.l, two);
        return pow(e);
    }
};

/* The quadratic extension F[u]/(u^2 + 1): c0 + c1*u, layout {c0, c1} (the
 * arkworks Fp2 layout). Valid when -1 is a non-square in F (p = 3 mod 4). */
template <class F>
struct QuadExt {
    F c0, c1;

    CUZK_HD CUZK_INLINE static QuadExt zero() { return {F::zero(), F::zero()}; }
    CUZK_HD CUZK_INLINE static QuadExt one() { return {F::one(), F::zero()}; }

    CUZK_HD CUZK_INLINE bool is_zero() const { return c0.is_zero() && c1.is_zero(); }
    CUZK_HD CUZK_INLINE friend bool operator==(const QuadExt& a, const QuadExt& b) {
        return a.c0 == b.c0 && a.c1 == b.c1;
    }
    CUZK_HD CUZK_INLINE friend bool operator!=(const QuadExt& a, const QuadExt& b) {
        return !(a == b);
    }

    CUZK_HD CUZK_INLINE friend QuadExt operator+(const QuadExt& a, const QuadExt& b) {
        return {a.c0 + b.c0, a.c1 + b.c1};
    }
    CUZK_HD CUZK_INLINE friend QuadExt operator-(const QuadExt& a, const QuadExt& b) {
        return {a.c0 - b.c0, a.c1 - b.c1};
    }
    CUZK_HD CUZK_INLINE friend QuadExt operator-(const QuadExt& a) { return {-a.c0, -a.c1}; }
    CUZK_HD CUZK_INLINE QuadExt dbl() const { return {c0.dbl(), c1.dbl()}; }

    /* Karatsuba, 3 base multiplications:
     * c0 = a0 b0 - a1 b1, c1 = (a0 + a1)(b0 + b1) - a0 b0 - a1 b1. */
    CUZK_HD CUZK_INLINE friend QuadExt operator*(const QuadExt& a, const QuadExt& b) {
        const F v0 = a.c0 * b.c0;
        const F v1 = a.c1 * b.c1;
        const F s = (a.c0 + a.c1) * (b.c0 + b.c1);
        return {v0 - v1, s - v0 - v1};
    }
    /* Complex squaring, 2 base multiplications:
     * c0 = (a0 + a1)(a0 - a1), c1 = 2 a0 a1. */
    CUZK_HD CUZK_INLINE QuadExt sqr() const {
        return {(c0 + c1) * (c0 - c1), (c0 * c1).dbl()};
    }
    /* (c0 - c1 u) / (c0^2 + c1^2); 0 maps to 0 (the norm's inverse is 0). */
    CUZK_HD CUZK_INLINE QuadExt inverse() const {
        const F t = (c0.sqr() + c1.sqr()).inverse();
        return {c0 * t, -(c1 * t)};
    }
};

} // namespace cuzk

#endif /* CUZK_FF_CUH */
