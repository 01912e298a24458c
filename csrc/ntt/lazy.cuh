/* Lazy Fr arithmetic of the NTT passes: values kept below 2r instead of r between butterflies. */
#pragma once

#include "common.cuh"

namespace {

// Inside a pass values are kept below 2r instead of r (2r < 2^256 < 4r), so
// that the Shoup product, which takes any x < 2^256 and leaves t < 2r, needs
// no final conditional subtraction (shoup::mul_lazy); the pass reduces each
// element once before its twiddle and store. The sum a + b of two values
// below 2r can carry out of 256 bits: it is reduced by 2r with that carry
// taken into account.

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

}  // namespace
