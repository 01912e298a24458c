/*
 * Developer smoke test of the host build of the field and curve formulas
 * (the same source the GPU kernels use, with portable carry chains).
 *
 *   g++ -std=c++17 -O2 -Wall -Wextra -I csrc/include -I csrc \
 *       csrc/tests/field_selftest.cpp csrc/field/host.cpp -o /tmp/selftest
 *   /tmp/selftest
 *
 * Field multiplication is checked against an independent bit-serial
 * reference (plain integers, double-and-add mod m); the curve formulas
 * against each other and against group facts ([r]G = 0, on-curve results).
 * The real tests, against arkworks, are in Rust.
 */
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "cuzk/bls12_381.cuh"
#include "cuzk/ec.cuh"
#include "cuzk/field.h"

using namespace cuzk;

static int g_passed = 0, g_failed = 0;

static void check(bool ok, const char* what, int line) {
    if (ok) {
        ++g_passed;
    } else {
        ++g_failed;
        std::printf("FAIL line %d: %s\n", line, what);
    }
}
#define CHECK(cond) check((cond), #cond, __LINE__)

/* splitmix64 (Steele, Lea, Flood 2014): deterministic test data. */
struct Rng {
    uint64_t s;
    uint64_t next() {
        uint64_t z = (s += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    uint32_t u32() { return (uint32_t)next(); }
};

/* ---- reference integer arithmetic (independent of ff.cuh) ---------------- */

template <int N>
using Limbs = BigInt<N>;

template <int N>
static int ref_cmp(const Limbs<N>& a, const Limbs<N>& b) {
    for (int i = N - 1; i >= 0; --i)
        if (a.l[i] != b.l[i]) return a.l[i] < b.l[i] ? -1 : 1;
    return 0;
}
/* (a + b) mod m for a, b < m. */
template <int N>
static Limbs<N> ref_add_mod(const Limbs<N>& a, const Limbs<N>& b, const Limbs<N>& m) {
    Limbs<N> s;
    uint64_t c = 0;
    for (int i = 0; i < N; ++i) {
        c += (uint64_t)a.l[i] + b.l[i];
        s.l[i] = (uint32_t)c;
        c >>= 32;
    }
    if (c || ref_cmp(s, m) >= 0) {
        int64_t br = 0;
        for (int i = 0; i < N; ++i) {
            int64_t d = (int64_t)s.l[i] - m.l[i] + br;
            s.l[i] = (uint32_t)d;
            br = d < 0 ? -1 : 0;
        }
    }
    return s;
}
/* x * y mod m by double-and-add over the bits of y. */
template <int N>
static Limbs<N> ref_mul_mod(const Limbs<N>& x, const Limbs<N>& y, const Limbs<N>& m) {
    Limbs<N> r = {};
    for (int bit = 32 * N - 1; bit >= 0; --bit) {
        r = ref_add_mod(r, r, m);
        if ((y.l[bit / 32] >> (bit % 32)) & 1) r = ref_add_mod(r, x, m);
    }
    return r;
}
/* x * 2^(32N) mod m: the Montgomery form of x. */
template <int N>
static Limbs<N> ref_to_mont(Limbs<N> x, const Limbs<N>& m) {
    for (int i = 0; i < 32 * N; ++i) x = ref_add_mod(x, x, m);
    return x;
}

template <class F>
static Limbs<F::N> limbs_of(const F& a) {
    Limbs<F::N> r;
    std::memcpy(r.l, a.l, sizeof r.l);
    return r;
}
template <class F>
static F field_of(const Limbs<F::N>& a) {
    F r;
    std::memcpy(r.l, a.l, sizeof r.l);
    return r;
}

/* A uniform-ish plain integer below the modulus (rejection sampling). */
template <class F>
static Limbs<F::N> random_plain(Rng& rng) {
    const Limbs<F::N> m = limbs_of(F::modulus());
    uint32_t mask = 0xffffffffu;
    while (mask >> 1 >= m.l[F::N - 1]) mask >>= 1;
    for (;;) {
        Limbs<F::N> x;
        for (int i = 0; i < F::N; ++i) x.l[i] = rng.u32();
        x.l[F::N - 1] &= mask;
        if (ref_cmp(x, m) < 0) return x;
    }
}
/* A random field element (any < m is a valid Montgomery representation). */
template <class F>
static F random_elem(Rng& rng) {
    return field_of<F>(random_plain<F>(rng));
}
/* Plain integer -> Montgomery form through the library (x * R^2 * R^-1). */
template <class F>
static F to_mont(const Limbs<F::N>& x) {
    return field_of<F>(x) * F::r2();
}

/* ---- prime fields --------------------------------------------------------- */

template <class F>
static void test_prime_field(const char* name, Rng& rng) {
    constexpr int N = F::N;
    const Limbs<N> m = limbs_of(F::modulus());
    std::printf("%s: constants, mul vs reference, add/sub/neg, inverse, pow\n", name);

    /* Constants: one() = R mod m, r2() = R^2 mod m, INV * m = -1 mod 2^32. */
    Limbs<N> plain_one = {};
    plain_one.l[0] = 1;
    const Limbs<N> R = ref_to_mont(plain_one, m);
    CHECK(ref_cmp(limbs_of(F::one()), R) == 0);
    CHECK(ref_cmp(limbs_of(F::r2()), ref_to_mont(R, m)) == 0);
    CHECK((uint32_t)(m.l[0] * F::Params::INV) == 0xffffffffu);

    /* Known values: one * one = one; mont(1) = one; from_mont(one) = 1. */
    CHECK(F::one() * F::one() == F::one());
    CHECK(to_mont<F>(plain_one) == F::one());
    CHECK(limbs_of(F::one() * field_of<F>(plain_one)).l[0] == 1);
    const F two = F::one().dbl();
    CHECK(two * two.inverse() == F::one());
    CHECK(F::zero().inverse() == F::zero());
    CHECK(F::one().inverse() == F::one());
    CHECK(-F::zero() == F::zero());
    const F minus_one = -F::one();
    CHECK(minus_one.sqr() == F::one());
    CHECK(minus_one + F::one() == F::zero());

    /* Multiplication against the bit-serial reference, including m-1. */
    Limbs<N> m_minus_1 = m;
    m_minus_1.l[0] -= 1; /* both moduli are odd */
    for (int it = 0; it < 200; ++it) {
        const Limbs<N> x = it == 0 ? m_minus_1 : random_plain<F>(rng);
        const Limbs<N> y = it < 2 ? m_minus_1 : random_plain<F>(rng);
        const F got = to_mont<F>(x) * to_mont<F>(y);
        const Limbs<N> want = ref_to_mont(ref_mul_mod(x, y, m), m);
        CHECK(ref_cmp(limbs_of(got), want) == 0);
        CHECK(ref_cmp(limbs_of(to_mont<F>(x)), ref_to_mont(x, m)) == 0);
    }

    /* The even/odd operator* against the plain CIOS mul_cios, with the
     * extremes 0, 1, m-1 (as plain values) among random elements. */
    {
        const F ext[3] = {F::zero(), F::one(), to_mont<F>(m_minus_1)};
        F raw_max; /* the largest canonical limbs: m - 1 itself as an element */
        std::memcpy(raw_max.l, m_minus_1.l, sizeof raw_max.l);
        for (int it = 0; it < 5000; ++it) {
            const F x = it < 12 ? (it % 4 == 3 ? raw_max : ext[it % 4]) : random_elem<F>(rng);
            const F y = it < 12 ? (it / 4 == 2 ? raw_max : ext[(it / 4) % 3]) : random_elem<F>(rng);
            CHECK(x * y == F::mul_cios(x, y));
        }
    }

    for (int it = 0; it < 200; ++it) {
        const F a = random_elem<F>(rng), b = random_elem<F>(rng), c = random_elem<F>(rng);
        /* addition is the same in Montgomery form */
        CHECK(ref_cmp(limbs_of(a + b), ref_add_mod(limbs_of(a), limbs_of(b), m)) == 0);
        CHECK((a - b) + b == a);
        CHECK(a - a == F::zero());
        CHECK(a + (-a) == F::zero());
        CHECK(a.dbl() == a + a);
        CHECK(a * (b + c) == a * b + a * c);
        CHECK(a * b == b * a);
        CHECK((a * b) * c == a * (b * c));
        CHECK(a.sqr() == a * a);
        if (!a.is_zero()) CHECK(a * a.inverse() == F::one());
    }

    /* pow: small exponents against repeated multiplication. */
    const F a = random_elem<F>(rng);
    F acc = F::one();
    for (uint32_t e = 0; e < 20; ++e) {
        BigInt<N> ex = {};
        ex.l[0] = e;
        CHECK(a.pow(ex) == acc);
        acc = acc * a;
    }
    /* a^(m-1) = 1 (Fermat), a^e1 * a^e2 = a^(e1+e2). */
    BigInt<N> fermat;
    std::memcpy(fermat.l, m_minus_1.l, sizeof fermat.l);
    CHECK(a.pow(fermat) == F::one());
    for (int it = 0; it < 10; ++it) {
        BigInt<N> e1, e2, e12;
        uint64_t c = 0;
        for (int i = 0; i < N; ++i) {
            e1.l[i] = rng.u32();
            e2.l[i] = rng.u32();
        }
        e1.l[N - 1] >>= 1;
        e2.l[N - 1] >>= 1;
        for (int i = 0; i < N; ++i) {
            c += (uint64_t)e1.l[i] + e2.l[i];
            e12.l[i] = (uint32_t)c;
            c >>= 32;
        }
        CHECK(a.pow(e1) * a.pow(e2) == a.pow(e12));
    }
}

/* ---- Fp2 ------------------------------------------------------------------- */

static Fp2 random_fp2(Rng& rng) { return {random_elem<Fp>(rng), random_elem<Fp>(rng)}; }

static void test_fp2(Rng& rng) {
    std::printf("Fp2: Karatsuba vs schoolbook, squaring, inverse, u^2 = -1\n");
    const Fp2 u = {Fp::zero(), Fp::one()};
    CHECK(u * u == -Fp2::one());
    CHECK(u.sqr() == -Fp2::one());
    CHECK(Fp2::zero().inverse() == Fp2::zero());
    for (int it = 0; it < 200; ++it) {
        const Fp2 a = random_fp2(rng), b = random_fp2(rng), c = random_fp2(rng);
        const Fp2 school = {a.c0 * b.c0 - a.c1 * b.c1, a.c0 * b.c1 + a.c1 * b.c0};
        CHECK(a * b == school);
        CHECK(a.sqr() == a * a);
        CHECK(a * (b + c) == a * b + a * c);
        CHECK((a - b) + b == a);
        CHECK(a + (-a) == Fp2::zero());
        CHECK(a.dbl() == a + a);
        if (!a.is_zero()) CHECK(a * a.inverse() == Fp2::one());
    }
    /* purely real / imaginary operands */
    const Fp2 r = {random_elem<Fp>(rng), Fp::zero()};
    CHECK(r.inverse() == Fp2({r.c0.inverse(), Fp::zero()}));
    const Fp2 i = {Fp::zero(), random_elem<Fp>(rng)};
    CHECK(i * i.inverse() == Fp2::one());
}

/* ---- curves ---------------------------------------------------------------- */

/* Jacobian / XYZZ equality as points (identity-aware). */
template <class F>
static bool same_point(const Jacobian<F>& p, const Jacobian<F>& q) {
    return to_affine(p) == to_affine(q);
}
template <class F>
static bool same_point(const Xyzz<F>& p, const Xyzz<F>& q) {
    return to_affine(p) == to_affine(q);
}
template <class F>
static bool canonical_identity(const Jacobian<F>& p) {
    return p.x == F::one() && p.y == F::one() && p.z.is_zero();
}
template <class F>
static bool canonical_identity(const Xyzz<F>& p) {
    return p.x == F::one() && p.y == F::one() && p.zz.is_zero() && p.zzz.is_zero();
}

/* [k]g, left-to-right double-and-add with mixed additions. */
template <class F>
static Jacobian<F> jac_mul(const Affine<F>& g, const BigInt<8>& k) {
    Jacobian<F> acc = Jacobian<F>::identity();
    for (int bit = 255; bit >= 0; --bit) {
        acc = jac_dbl(acc);
        if ((k.l[bit / 32] >> (bit % 32)) & 1) acc = jac_madd(acc, g);
    }
    return acc;
}
template <class F>
static Xyzz<F> xyzz_mul(const Affine<F>& g, const BigInt<8>& k) {
    Xyzz<F> acc = Xyzz<F>::identity();
    for (int bit = 255; bit >= 0; --bit) {
        acc = xyzz_dbl(acc);
        if ((k.l[bit / 32] >> (bit % 32)) & 1) acc = xyzz_madd(acc, g);
    }
    return acc;
}

/* The same point with other projective coordinates: (l^2 x, l^3 y, l z). */
template <class F>
static Jacobian<F> rescale(const Jacobian<F>& p, const F& l) {
    const F l2 = l.sqr();
    return {p.x * l2, p.y * l2 * l, p.z * l};
}
template <class F>
static Xyzz<F> rescale(const Xyzz<F>& p, const F& l) {
    const F l2 = l.sqr();
    return {p.x * l2, p.y * l2 * l, p.zz * l2, p.zzz * l2 * l};
}

template <class F>
static void test_curve(const char* name, const Affine<F>& g, const F& b, F (*rnd)(Rng&),
                       Rng& rng) {
    std::printf("%s: generator, [r]G, dbl/add/madd consistency, identities\n", name);
    const Limbs<8> r = limbs_of(Fr::modulus());
    CHECK(on_curve(g, b));
    CHECK(!g.is_identity());

    /* [r]G = identity, [r-1]G = -G, in both coordinate systems. */
    Limbs<8> r_minus_1 = r;
    r_minus_1.l[0] -= 1;
    CHECK(jac_mul(g, r).is_identity());
    CHECK(xyzz_mul(g, r).is_identity());
    CHECK(to_affine(jac_mul(g, r_minus_1)) == neg(g));
    CHECK(to_affine(xyzz_mul(g, r_minus_1)) == neg(g));

    const Jacobian<F> jid = Jacobian<F>::identity();
    const Xyzz<F> xid = Xyzz<F>::identity();
    const Affine<F> aid = Affine<F>::identity();
    /* identities given as z = 0 with arbitrary x, y */
    const Jacobian<F> jid2 = {rnd(rng), rnd(rng), F::zero()};
    const Xyzz<F> xid2 = {rnd(rng), rnd(rng), F::zero(), F::zero()};
    CHECK(canonical_identity(jac_dbl(jid2)));
    CHECK(canonical_identity(jac_add(jid2, jid2)));
    CHECK(canonical_identity(jac_madd(jid2, aid)));
    CHECK(canonical_identity(xyzz_dbl(xid2)));
    CHECK(canonical_identity(xyzz_add(xid2, xid2)));
    CHECK(canonical_identity(xyzz_madd(xid2, aid)));
    CHECK(same_point(jac_madd(jid, g), jac_from_affine(g)));
    CHECK(same_point(xyzz_madd(xid, g), xyzz_from_affine(g)));

    for (int it = 0; it < 8; ++it) {
        BigInt<8> k1, k2;
        for (int i = 0; i < 8; ++i) {
            k1.l[i] = rng.u32();
            k2.l[i] = rng.u32();
        }
        k1.l[7] &= 0x3fffffff;
        k2.l[7] &= 0x3fffffff;
        const Jacobian<F> P = jac_mul(g, k1), Q = jac_mul(g, k2);
        const Xyzz<F> Px = xyzz_mul(g, k1), Qx = xyzz_mul(g, k2);
        const Affine<F> Pa = to_affine(P), Qa = to_affine(Q);
        CHECK(on_curve(Pa, b));
        CHECK(on_curve(Qa, b));
        /* XYZZ and Jacobian agree; zz^3 = zzz^2 */
        CHECK(to_affine(Px) == Pa);
        CHECK(to_affine(Qx) == Qa);
        CHECK(Px.zz.sqr() * Px.zz == Px.zzz.sqr());

        /* Jacobian: dbl = add(P, P) (also with another representation of P),
         * madd agrees with add, P + (-P) = identity, identity operands. */
        const F l = rnd(rng);
        CHECK(same_point(jac_dbl(P), jac_add(P, P)));
        CHECK(same_point(jac_dbl(P), jac_add(P, rescale(P, l))));
        CHECK(same_point(jac_dbl(P), jac_madd(P, Pa)));
        CHECK(on_curve(to_affine(jac_dbl(P)), b));
        CHECK(same_point(jac_add(P, Q), jac_madd(P, Qa)));
        CHECK(same_point(jac_add(P, Q), jac_add(Q, P)));
        CHECK(on_curve(to_affine(jac_add(P, Q)), b));
        CHECK(canonical_identity(jac_add(P, neg(P))));
        CHECK(canonical_identity(jac_add(P, rescale(neg(P), l))));
        CHECK(canonical_identity(jac_madd(P, neg(Pa))));
        CHECK(same_point(jac_add(P, jid), P));
        CHECK(same_point(jac_add(jid, P), P));
        CHECK(same_point(jac_add(jid2, P), P));
        CHECK(same_point(jac_madd(P, aid), P));
        CHECK(same_point(jac_add(jac_add(P, Q), Q), jac_add(P, jac_dbl(Q))));

        /* XYZZ: the same facts, and agreement with Jacobian results. */
        CHECK(same_point(xyzz_dbl(Px), xyzz_add(Px, Px)));
        CHECK(same_point(xyzz_dbl(Px), xyzz_add(Px, rescale(Px, l))));
        CHECK(same_point(xyzz_dbl(Px), xyzz_madd(Px, Pa)));
        CHECK(to_affine(xyzz_dbl(Px)) == to_affine(jac_dbl(P)));
        CHECK(to_affine(xyzz_add(Px, Qx)) == to_affine(jac_add(P, Q)));
        CHECK(to_affine(xyzz_madd(Px, Qa)) == to_affine(jac_add(P, Q)));
        CHECK(canonical_identity(xyzz_add(Px, neg(Px))));
        CHECK(canonical_identity(xyzz_add(Px, rescale(neg(Px), l))));
        CHECK(canonical_identity(xyzz_madd(Px, neg(Pa))));
        CHECK(same_point(xyzz_add(Px, xid), Px));
        CHECK(same_point(xyzz_add(xid, Px), Px));
        CHECK(same_point(xyzz_add(xid2, Px), Px));
        CHECK(same_point(xyzz_madd(Px, aid), Px));
        const Xyzz<F> s = xyzz_add(xyzz_add(Px, Qx), Qx);
        CHECK(s.zz.sqr() * s.zz == s.zzz.sqr());
    }
}

/* ---- the C ABI ------------------------------------------------------------- */

static void test_abi(Rng& rng) {
    std::printf("C ABI: layouts, host_apply, aliasing, argument errors\n");
    uint64_t a = 0, b = 0, o = 0;
    CHECK(cuzk_field_op_layout(CUZK_KIND_FR, CUZK_OP_MUL, &a, &b, &o).code == CUZK_OK);
    CHECK(a == 32 && b == 32 && o == 32);
    CHECK(cuzk_field_op_layout(CUZK_KIND_FP, CUZK_OP_POW, &a, &b, &o).code == CUZK_OK);
    CHECK(a == 48 && b == 48 && o == 48);
    CHECK(cuzk_field_op_layout(CUZK_KIND_FP2, CUZK_OP_INV, &a, &b, &o).code == CUZK_OK);
    CHECK(a == 96 && b == 0 && o == 96);
    CHECK(cuzk_field_op_layout(CUZK_KIND_G1, CUZK_OP_JAC_MADD, &a, &b, &o).code == CUZK_OK);
    CHECK(a == 144 && b == 96 && o == 144);
    CHECK(cuzk_field_op_layout(CUZK_KIND_G2, CUZK_OP_XYZZ_ADD, &a, &b, &o).code == CUZK_OK);
    CHECK(a == 384 && b == 384 && o == 384);
    CHECK(cuzk_field_op_layout(CUZK_KIND_G2, CUZK_OP_XYZZ_DBL, &a, &b, &o).code == CUZK_OK);
    CHECK(a == 384 && b == 0 && o == 384);
    CHECK(cuzk_field_op_layout(CUZK_KIND_FP2, CUZK_OP_POW, &a, &b, &o).code ==
          CUZK_ERR_INVALID_ARGUMENT);
    CHECK(cuzk_field_op_layout(CUZK_KIND_FR, CUZK_OP_JAC_DBL, &a, &b, &o).code ==
          CUZK_ERR_INVALID_ARGUMENT);
    CHECK(cuzk_field_op_layout(CUZK_KIND_G1, CUZK_OP_MUL, &a, &b, &o).code ==
          CUZK_ERR_INVALID_ARGUMENT);
    CHECK(cuzk_field_op_layout(7, CUZK_OP_ADD, &a, &b, &o).code == CUZK_ERR_INVALID_ARGUMENT);

    const int n = 64;
    std::vector<Fr> x(n), y(n), z(n);
    for (int i = 0; i < n; ++i) {
        x[i] = random_elem<Fr>(rng);
        y[i] = random_elem<Fr>(rng);
    }
    CHECK(cuzk_field_host_apply(CUZK_KIND_FR, CUZK_OP_MUL, x.data(), y.data(), z.data(), n)
              .code == CUZK_OK);
    bool all = true;
    for (int i = 0; i < n; ++i) all = all && z[i] == x[i] * y[i];
    CHECK(all);
    /* out aliases a */
    std::vector<Fr> w = x;
    CHECK(cuzk_field_host_apply(CUZK_KIND_FR, CUZK_OP_SUB, w.data(), y.data(), w.data(), n)
              .code == CUZK_OK);
    all = true;
    for (int i = 0; i < n; ++i) all = all && w[i] == x[i] - y[i];
    CHECK(all);
    /* unary op with b = null */
    CHECK(cuzk_field_host_apply(CUZK_KIND_FR, CUZK_OP_INV, x.data(), nullptr, z.data(), n)
              .code == CUZK_OK);
    CHECK(z[5] * x[5] == Fr::one());

    const cuzk_status bad = cuzk_field_host_apply(CUZK_KIND_FR, CUZK_OP_MUL, x.data(), nullptr,
                                                  z.data(), n);
    CHECK(bad.code == CUZK_ERR_INVALID_ARGUMENT && bad.message[0] != 0);
    CHECK(cuzk_field_host_apply(CUZK_KIND_FR, CUZK_OP_MUL, nullptr, y.data(), z.data(), n)
              .code == CUZK_ERR_INVALID_ARGUMENT);
    CHECK(cuzk_field_host_apply(CUZK_KIND_FR, 99, x.data(), y.data(), z.data(), n).code ==
          CUZK_ERR_INVALID_ARGUMENT);
    CHECK(cuzk_field_host_apply(CUZK_KIND_FR, CUZK_OP_MUL, nullptr, nullptr, nullptr, 0).code ==
          CUZK_OK);
    CHECK(cuzk_field_host_apply(CUZK_KIND_G2, CUZK_OP_JAC_ADD, x.data(), y.data(), z.data(),
                                UINT64_MAX / 100)
              .code == CUZK_ERR_INVALID_ARGUMENT);
}

int main() {
    Rng rng{0x5eed};

    static_assert(sizeof(Affine<Fp>) == 96 && sizeof(Affine<Fp2>) == 192, "affine layout");
    static_assert(sizeof(Jacobian<Fp>) == 144 && sizeof(Xyzz<Fp2>) == 384, "projective layout");

    test_prime_field<Fr>("Fr", rng);
    test_prime_field<Fp>("Fp", rng);
    test_fp2(rng);

    /* Generators from the BLS12-381 definition (draft-irtf-cfrg-pairing-
     * friendly-curves, section 4.2.1), as plain little-endian limbs. */
    const Limbs<12> g1x = {{0xdb22c6bb, 0xfb3af00a, 0xf97a1aef, 0x6c55e83f, 0x171bac58,
                            0xa14e3a3f, 0x9774b905, 0xc3688c4f, 0x4fa9ac0f, 0x2695638c,
                            0x3197d794, 0x17f1d3a7}};
    const Limbs<12> g1y = {{0x46c5e7e1, 0x0caa2329, 0xa2888ae4, 0xd03cc744, 0x2c04b3ed,
                            0x00db18cb, 0xd5d00af6, 0xfcf5e095, 0x741d8ae4, 0xa09e30ed,
                            0xe3aaa0f1, 0x08b3f481}};
    const Limbs<12> g2x0 = {{0xc121bdb8, 0xd48056c8, 0xa805bbef, 0x0bac0326, 0x7ae3d177,
                             0xb4510b64, 0xfa403b02, 0xc6e47ad4, 0x2dc51051, 0x26080527,
                             0xf08f0a91, 0x024aa2b2}};
    const Limbs<12> g2x1 = {{0x5d042b7e, 0xe5ac7d05, 0x13945d57, 0x334cf112, 0xdc7f5049,
                             0xb5da61bb, 0x9920b61a, 0x596bd0d0, 0x88274f65, 0x7dacd3a0,
                             0x52719f60, 0x13e02b60}};
    const Limbs<12> g2y0 = {{0x08b82801, 0xe1935486, 0x3baca289, 0x923ac9cc, 0x5160d12c,
                             0x6d429a69, 0x8cbdd3a7, 0xadfd9baa, 0xda2e351a, 0x8cc9cdc6,
                             0x727d6e11, 0x0ce5d527}};
    const Limbs<12> g2y1 = {{0xf05f79be, 0xaaa9075f, 0x5cec1da1, 0x3f370d27, 0x572e99ab,
                             0x267492ab, 0x85a763af, 0xcb3e287e, 0x2bc28b99, 0x32acd2b0,
                             0x2ea734cc, 0x0606c4a0}};
    const Affine<Fp> g1 = {to_mont<Fp>(g1x), to_mont<Fp>(g1y)};
    const Affine<Fp2> g2 = {{to_mont<Fp>(g2x0), to_mont<Fp>(g2x1)},
                            {to_mont<Fp>(g2y0), to_mont<Fp>(g2y1)}};
    test_curve<Fp>("G1", g1, g1_b(), random_elem<Fp>, rng);
    test_curve<Fp2>("G2", g2, g2_b(), random_fp2, rng);

    test_abi(rng);

    std::printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed == 0 ? 0 : 1;
}
