/*
 * BLS12-381 fields: Fr (scalar field), Fp (base field), Fp2 = Fp[u]/(u^2+1),
 * and the curve constants b.
 *
 * Moduli from the BLS12-381 definition (draft-irtf-cfrg-pairing-friendly-
 * curves, section 4.2.1; also https://electriccoin.co/blog/new-snark-curve/):
 *   p = 0x1a0111ea397fe69a4b1ba7b6434bacd764774b84f38512bf6730d2a0f6b0f624
 *         1eabfffeb153ffffb9feffffffffaaab                     (381 bits)
 *   r = 0x73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001
 *                                                               (255 bits)
 * The derived constants were computed with Python integers and checked
 * against p = (x-1)^2 (x^4 - x^2 + 1)/3 + x and r = x^4 - x^2 + 1 for
 * x = -0xd201000000010000, and m * INV = -1 mod 2^32. Limbs are 32-bit,
 * least significant first. Both top limbs are below 2^31, as MontField's
 * multiplication requires.
 *
 * Curves (a = 0): G1: y^2 = x^3 + 4 over Fp; G2: y^2 = x^3 + 4(u + 1) over Fp2.
 */
#ifndef CUZK_BLS12_381_CUH
#define CUZK_BLS12_381_CUH

#include "cuzk/ff.cuh"

namespace cuzk {

/* Base field Fp, R = 2^384. */
struct FpParams {
    static constexpr int LIMBS = 12;
    /* -p^-1 mod 2^32 */
    static constexpr uint32_t INV = 0xfffcfffdu;
    CUZK_HD static constexpr uint32_t modulus(int i) {
        constexpr uint32_t v[12] = {0xffffaaab, 0xb9feffff, 0xb153ffff, 0x1eabfffe,
                                    0xf6b0f624, 0x6730d2a0, 0xf38512bf, 0x64774b84,
                                    0x434bacd7, 0x4b1ba7b6, 0x397fe69a, 0x1a0111ea};
        return v[i];
    }
    /* R mod p (1 in Montgomery form) */
    CUZK_HD static constexpr uint32_t one(int i) {
        constexpr uint32_t v[12] = {0x0002fffd, 0x76090000, 0xc40c0002, 0xebf4000b,
                                    0x53c758ba, 0x5f489857, 0x70525745, 0x77ce5853,
                                    0xa256ec6d, 0x5c071a97, 0xfa80e493, 0x15f65ec3};
        return v[i];
    }
    /* R^2 mod p */
    CUZK_HD static constexpr uint32_t r2(int i) {
        constexpr uint32_t v[12] = {0x1c341746, 0xf4df1f34, 0x09d104f1, 0x0a76e6a6,
                                    0x4c95b6d5, 0x8de5476c, 0x939d83c0, 0x67eb88a9,
                                    0xb519952d, 0x9a793e85, 0x92cae3aa, 0x11988fe5};
        return v[i];
    }
};

/* Scalar field Fr, R = 2^256. */
struct FrParams {
    static constexpr int LIMBS = 8;
    /* -r^-1 mod 2^32 */
    static constexpr uint32_t INV = 0xffffffffu;
    CUZK_HD static constexpr uint32_t modulus(int i) {
        constexpr uint32_t v[8] = {0x00000001, 0xffffffff, 0xfffe5bfe, 0x53bda402,
                                   0x09a1d805, 0x3339d808, 0x299d7d48, 0x73eda753};
        return v[i];
    }
    /* R mod r (1 in Montgomery form) */
    CUZK_HD static constexpr uint32_t one(int i) {
        constexpr uint32_t v[8] = {0xfffffffe, 0x00000001, 0x00034802, 0x5884b7fa,
                                   0xecbc4ff5, 0x998c4fef, 0xacc5056f, 0x1824b159};
        return v[i];
    }
    /* R^2 mod r */
    CUZK_HD static constexpr uint32_t r2(int i) {
        constexpr uint32_t v[8] = {0xf3f29c6d, 0xc999e990, 0x87925c23, 0x2b6cedcb,
                                   0x7254398f, 0x05d31496, 0x9f59ff11, 0x0748d9d9};
        return v[i];
    }
};

using Fp = MontField<FpParams>;
using Fr = MontField<FrParams>;
using Fp2 = QuadExt<Fp>;

static_assert(sizeof(Fr) == 32, "Fr must be 32 bytes (arkworks layout)");
static_assert(sizeof(Fp) == 48, "Fp must be 48 bytes (arkworks layout)");
static_assert(sizeof(Fp2) == 96, "Fp2 must be 96 bytes (arkworks layout)");

/* G1's b = 4, in Montgomery form. */
CUZK_HD CUZK_INLINE Fp g1_b() { return Fp::one().dbl().dbl(); }
/* G2's b = 4(u + 1) = 4 + 4u, in Montgomery form. */
CUZK_HD CUZK_INLINE Fp2 g2_b() { return {g1_b(), g1_b()}; }

} // namespace cuzk

#endif /* CUZK_BLS12_381_CUH */
