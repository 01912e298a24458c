/*
 * Short-Weierstrass curves y^2 = x^3 + b with a = 0, over a coordinate field
 * F (Fp for G1, Fp2 for G2; F needs zero, one, is_zero, ==, binary + - *,
 * unary -, sqr, dbl, inverse). Host and device.
 *
 * Layouts (each struct is its coordinates back to back, no padding):
 *   Affine   {x, y}            identity (0, 0)      (arkworks Affine minus its flag)
 *   Jacobian {x, y, z}         (x/z^2, y/z^3)       identity: any z = 0
 *   Xyzz     {x, y, zz, zzz}   (x/zz, y/zzz)        identity: any zz = 0
 *                              with zz^3 = zzz^2 for points made by these formulas.
 * Identities are returned in one canonical form: Jacobian (1, 1, 0) (as
 * arkworks' Projective::zero()), Xyzz (1, 1, 0, 0), Affine (0, 0).
 *
 * Formulas are from the Explicit-Formulas Database (Bernstein, Lange):
 *   Jacobian, a = 0: https://hyperelliptic.org/EFD/g1p/auto-shortw-jacobian-0.html
 *     dbl-2009-l, add-2007-bl, madd-2007-bl
 *   XYZZ:            https://hyperelliptic.org/EFD/g1p/auto-shortw-xyzz.html
 *     dbl-2008-s-1 (with a = 0), add-2008-s, madd-2008-s
 * The EFD formulas are not complete; every function here handles the
 * exceptional inputs explicitly: identity operands, P == Q (doubling),
 * P == -Q (identity), and doubling a point with y = 0 (identity).
 *
 * On the GPU everything is inlined into one kernel per operation, and G2
 * (Fp2) points press on the 255-register limit: the statement order below
 * is chosen so that inputs die early (measured with ptxas -v), e.g. the
 * additions double P from values they already hold rather than from the
 * inputs.
 */
#ifndef CUZK_EC_CUH
#define CUZK_EC_CUH

#include "cuzk/ff.cuh"

namespace cuzk {

template <class F>
struct Affine {
    F x, y;
    CUZK_HD CUZK_INLINE static Affine identity() { return {F::zero(), F::zero()}; }
    CUZK_HD CUZK_INLINE bool is_identity() const { return x.is_zero() && y.is_zero(); }
    CUZK_HD CUZK_INLINE friend bool operator==(const Affine& p, const Affine& q) {
        return p.x == q.x && p.y == q.y;
    }
};

template <class F>
struct Jacobian {
    F x, y, z;
    CUZK_HD CUZK_INLINE static Jacobian identity() { return {F::one(), F::one(), F::zero()}; }
    CUZK_HD CUZK_INLINE bool is_identity() const { return z.is_zero(); }
};

template <class F>
struct Xyzz {
    F x, y, zz, zzz;
    CUZK_HD CUZK_INLINE static Xyzz identity() {
        return {F::one(), F::one(), F::zero(), F::zero()};
    }
    CUZK_HD CUZK_INLINE bool is_identity() const { return zz.is_zero(); }
};

/* y^2 == x^3 + b, or the identity. */
template <class F>
CUZK_HD CUZK_INLINE bool on_curve(const Affine<F>& p, const F& b) {
    return p.is_identity() || p.y.sqr() == p.x.sqr() * p.x + b;
}

template <class F>
CUZK_HD CUZK_INLINE Affine<F> neg(const Affine<F>& p) { return {p.x, -p.y}; }
template <class F>
CUZK_HD CUZK_INLINE Jacobian<F> neg(const Jacobian<F>& p) { return {p.x, -p.y, p.z}; }
template <class F>
CUZK_HD CUZK_INLINE Xyzz<F> neg(const Xyzz<F>& p) { return {p.x, -p.y, p.zz, p.zzz}; }

template <class F>
CUZK_HD CUZK_INLINE Jacobian<F> jac_from_affine(const Affine<F>& p) {
    return p.is_identity() ? Jacobian<F>::identity() : Jacobian<F>{p.x, p.y, F::one()};
}
template <class F>
CUZK_HD CUZK_INLINE Xyzz<F> xyzz_from_affine(const Affine<F>& p) {
    return p.is_identity() ? Xyzz<F>::identity() : Xyzz<F>{p.x, p.y, F::one(), F::one()};
}

/* (x/z^2, y/z^3): one inversion. */
template <class F>
CUZK_HD CUZK_INLINE Affine<F> to_affine(const Jacobian<F>& p) {
    if (p.is_identity()) return Affine<F>::identity();
    const F zi = p.z.inverse();
    const F zi2 = zi.sqr();
    return {p.x * zi2, p.y * zi2 * zi};
}
/* (x/zz, y/zzz) with one inversion t = (zz*zzz)^-1: 1/zz = zzz*t and
 * 1/zzz = zz*t. */
template <class F>
CUZK_HD CUZK_INLINE Affine<F> to_affine(const Xyzz<F>& p) {
    if (p.is_identity()) return Affine<F>::identity();
    const F t = (p.zz * p.zzz).inverse();
    return {p.x * p.zzz * t, p.y * p.zz * t};
}

/* ---- Jacobian ---------------------------------------------------------- */

/* 2P, dbl-2009-l (2M + 5S). */
template <class F>
CUZK_HD CUZK_INLINE Jacobian<F> jac_dbl(const Jacobian<F>& p) {
    if (p.is_identity() || p.y.is_zero()) return Jacobian<F>::identity();
    const F A = p.x.sqr();
    const F B = p.y.sqr();
    const F C = B.sqr();
    const F D = ((p.x + B).sqr() - A - C).dbl();
    const F E = A.dbl() + A;
    const F Fv = E.sqr();
    const F x3 = Fv - D.dbl();
    const F y3 = E * (D - x3) - C.dbl().dbl().dbl();
    const F z3 = (p.y * p.z).dbl();
    return {x3, y3, z3};
}

/* P + Q, add-2007-bl (11M + 5S). Operations are ordered so that inputs die
 * early (register pressure on the GPU). When P == Q it doubles
 * (u1, s1, z1*z2), another representation of P: u1 = x1 z2^2, s1 = y1 z2^3. */
template <class F>
CUZK_HD CUZK_INLINE Jacobian<F> jac_add(const Jacobian<F>& p, const Jacobian<F>& q) {
    if (p.is_identity()) return q.is_identity() ? Jacobian<F>::identity() : q;
    if (q.is_identity()) return p;
    const F z1z1 = p.z.sqr();
    const F z2z2 = q.z.sqr();
    const F u1 = p.x * z2z2;
    const F s1 = p.y * q.z * z2z2;
    const F h = q.x * z1z1 - u1;               /* u2 - u1 */
    const F r = (q.y * p.z * z1z1 - s1).dbl(); /* 2 (s2 - s1) */
    if (h.is_zero())
        return r.is_zero() ? jac_dbl(Jacobian<F>{u1, s1, p.z * q.z}) : Jacobian<F>::identity();
    const F z3 = ((p.z + q.z).sqr() - z1z1 - z2z2) * h;
    const F i = h.dbl().sqr();
    const F j = h * i;
    const F v = u1 * i;
    const F x3 = r.sqr() - j - v.dbl();
    const F y3 = r * (v - x3) - (s1 * j).dbl();
    return {x3, y3, z3};
}

/* P + Q with Q affine, madd-2007-bl (7M + 4S), ordered like jac_add. */
template <class F>
CUZK_HD CUZK_INLINE Jacobian<F> jac_madd(const Jacobian<F>& p, const Affine<F>& q) {
    if (q.is_identity()) return p.is_identity() ? Jacobian<F>::identity() : p;
    if (p.is_identity()) return {q.x, q.y, F::one()};
    const F z1z1 = p.z.sqr();
    const F h = q.x * z1z1 - p.x;               /* u2 - x1 */
    const F r = (q.y * p.z * z1z1 - p.y).dbl(); /* 2 (s2 - y1) */
    if (h.is_zero()) return r.is_zero() ? jac_dbl(p) : Jacobian<F>::identity();
    const F hh = h.sqr();
    const F z3 = (p.z + h).sqr() - z1z1 - hh;
    const F i = hh.dbl().dbl();
    const F j = h * i;
    const F v = p.x * i;
    const F x3 = r.sqr() - j - v.dbl();
    const F y3 = r * (v - x3) - (p.y * j).dbl();
    return {x3, y3, z3};
}

/* ---- XYZZ -------------------------------------------------------------- */

/* 2P, dbl-2008-s-1 with a = 0 (6M + 3S). */
template <class F>
CUZK_HD CUZK_INLINE Xyzz<F> xyzz_dbl(const Xyzz<F>& p) {
    if (p.is_identity() || p.y.is_zero()) return Xyzz<F>::identity();
    const F u = p.y.dbl();
    const F v = u.sqr();
    const F w = u * v;
    const F s = p.x * v;
    const F x1x1 = p.x.sqr();
    const F m = x1x1.dbl() + x1x1;
    const F x3 = m.sqr() - s.dbl();
    const F y3 = m * (s - x3) - w * p.y;
    return {x3, y3, v * p.zz, w * p.zzz};
}

/* P + Q, add-2008-s (12M + 2S). Operations are ordered so that inputs die
 * early (register pressure on the GPU). When P == Q it doubles
 * (u1, s1, zz1 zz2, zzz1 zzz2), another representation of P. */
template <class F>
CUZK_HD CUZK_INLINE Xyzz<F> xyzz_add(const Xyzz<F>& p, const Xyzz<F>& q) {
    if (p.is_identity()) return q.is_identity() ? Xyzz<F>::identity() : q;
    if (q.is_identity()) return p;
    const F u1 = p.x * q.zz;
    const F s1 = p.y * q.zzz;
    const F pp_ = q.x * p.zz - u1; /* EFD's P = U2 - U1 */
    const F r = q.y * p.zzz - s1;  /* EFD's R = S2 - S1 */
    const F zz = p.zz * q.zz;
    const F zzz = p.zzz * q.zzz;
    if (pp_.is_zero())
        return r.is_zero() ? xyzz_dbl(Xyzz<F>{u1, s1, zz, zzz}) : Xyzz<F>::identity();
    const F pp = pp_.sqr();
    const F ppp = pp_ * pp;
    const F qq = u1 * pp; /* EFD's Q */
    const F x3 = r.sqr() - ppp - qq.dbl();
    const F y3 = r * (qq - x3) - s1 * ppp;
    return {x3, y3, zz * pp, zzz * ppp};
}

/* P + Q with Q affine, madd-2008-s (8M + 2S). */
template <class F>
CUZK_HD CUZK_INLINE Xyzz<F> xyzz_madd(const Xyzz<F>& p, const Affine<F>& q) {
    if (q.is_identity()) return p.is_identity() ? Xyzz<F>::identity() : p;
    if (p.is_identity()) return {q.x, q.y, F::one(), F::one()};
    const F pp_ = q.x * p.zz - p.x; /* EFD's P = U2 - X1 */
    const F r = q.y * p.zzz - p.y;  /* EFD's R = S2 - Y1 */
    if (pp_.is_zero()) return r.is_zero() ? xyzz_dbl(p) : Xyzz<F>::identity();
    const F pp = pp_.sqr();
    const F ppp = pp_ * pp;
    const F qq = p.x * pp; /* EFD's Q */
    const F x3 = r.sqr() - ppp - qq.dbl();
    const F y3 = r * (qq - x3) - p.y * ppp;
    return {x3, y3, p.zz * pp, p.zzz * ppp};
}

} // namespace cuzk

#endif /* CUZK_EC_CUH */
