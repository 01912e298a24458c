/*
 * The element-wise operations of field.h, shared by the host loop
 * (host.cpp) and the GPU kernels (gpu.cu).
 *
 * Each (kind, op) pair is one small struct ("Op") with
 *   A, B, Out     element types of a, b and out (B = NoOperand when the op
 *                 does not read b);
 *   kReadsB       whether b is read;
 *   kWholeLoads   whether a GPU kernel should load whole elements up front
 *                 (16-byte vector accesses; field kinds) rather than each
 *                 coordinate where it is used (point kinds: fewer registers
 *                 live, which matters at G2's 255-register limit);
 *   apply(a[, b]) the result, CUZK_HD.
 * apply_at<Op>() does one element; visit() maps a run-time (kind, op) to
 * its Op type, once per call on the host, so that each kernel is a separate
 * template instance with no per-thread switch.
 */
#ifndef CUZK_FIELD_OPS_CUH
#define CUZK_FIELD_OPS_CUH

#include <cinttypes>
#include <stdint.h>

#include "cuzk/bls12_381.cuh"
#include "cuzk/ec.cuh"
#include "cuzk/field.h"
#include "cuzk/status.hpp"

namespace cuzk {
namespace ops {

/* The b type of ops that do not read b. */
struct NoOperand {};

/* ---- field kinds (F = Fr, Fp, Fp2) --------------------------------------- */

template <class F>
struct Binary {
    using A = F;
    using B = F;
    using Out = F;
    static constexpr bool kReadsB = true;
    static constexpr bool kWholeLoads = true;
};
template <class F>
struct Unary {
    using A = F;
    using B = NoOperand;
    using Out = F;
    static constexpr bool kReadsB = false;
    static constexpr bool kWholeLoads = true;
};

template <class F>
struct Add : Binary<F> {
    CUZK_HD CUZK_INLINE static F apply(const F& a, const F& b) { return a + b; }
};
template <class F>
struct Sub : Binary<F> {
    CUZK_HD CUZK_INLINE static F apply(const F& a, const F& b) { return a - b; }
};
template <class F>
struct Neg : Unary<F> {
    CUZK_HD CUZK_INLINE static F apply(const F& a) { return -a; }
};
template <class F>
struct Mul : Binary<F> {
    CUZK_HD CUZK_INLINE static F apply(const F& a, const F& b) { return a * b; }
};
template <class F>
struct Sqr : Unary<F> {
    CUZK_HD CUZK_INLINE static F apply(const F& a) { return a.sqr(); }
};
template <class F>
struct Inv : Unary<F> {
    CUZK_HD CUZK_INLINE static F apply(const F& a) { return a.inverse(); }
};
/* b[i] is the exponent, a plain integer as wide as F (MontField only). */
template <class F>
struct Pow {
    using A = F;
    using B = BigInt<F::N>;
    using Out = F;
    static constexpr bool kReadsB = true;
    static constexpr bool kWholeLoads = true;
    CUZK_HD CUZK_INLINE static F apply(const F& a, const B& e) { return a.pow(e); }
};

/* ---- point kinds (F = Fp for G1, Fp2 for G2) ----------------------------- */

template <class F>
struct JacDbl {
    using A = Jacobian<F>;
    using B = NoOperand;
    using Out = Jacobian<F>;
    static constexpr bool kReadsB = false;
    static constexpr bool kWholeLoads = false;
    CUZK_HD CUZK_INLINE static Out apply(const A& a) { return jac_dbl(a); }
};
template <class F>
struct JacAdd {
    using A = Jacobian<F>;
    using B = Jacobian<F>;
    using Out = Jacobian<F>;
    static constexpr bool kReadsB = true;
    static constexpr bool kWholeLoads = false;
    CUZK_HD CUZK_INLINE static Out apply(const A& a, const B& b) { return jac_add(a, b); }
};
template <class F>
struct JacMadd {
    using A = Jacobian<F>;
    using B = Affine<F>;
    using Out = Jacobian<F>;
    static constexpr bool kReadsB = true;
    static constexpr bool kWholeLoads = false;
    CUZK_HD CUZK_INLINE static Out apply(const A& a, const B& b) { return jac_madd(a, b); }
};
template <class F>
struct XyzzDbl {
    using A = Xyzz<F>;
    using B = NoOperand;
    using Out = Xyzz<F>;
    static constexpr bool kReadsB = false;
    static constexpr bool kWholeLoads = false;
    CUZK_HD CUZK_INLINE static Out apply(const A& a) { return xyzz_dbl(a); }
};
template <class F>
struct XyzzAdd {
    using A = Xyzz<F>;
    using B = Xyzz<F>;
    using Out = Xyzz<F>;
    static constexpr bool kReadsB = true;
    static constexpr bool kWholeLoads = false;
    CUZK_HD CUZK_INLINE static Out apply(const A& a, const B& b) { return xyzz_add(a, b); }
};
template <class F>
struct XyzzMadd {
    using A = Xyzz<F>;
    using B = Affine<F>;
    using Out = Xyzz<F>;
    static constexpr bool kReadsB = true;
    static constexpr bool kWholeLoads = false;
    CUZK_HD CUZK_INLINE static Out apply(const A& a, const B& b) { return xyzz_madd(a, b); }
};

/* out[i] = Op(a[i], b[i]). The result is complete before it is stored, so
 * out may alias a. The operands are passed by reference into a and b (not
 * copied first): the compiler may then load each coordinate near its use,
 * which keeps the G2 kernels' register use down. */
template <class Op>
CUZK_HD CUZK_INLINE void apply_at(const void* a, const void* b, void* out, uint64_t i) {
    const typename Op::A& x = static_cast<const typename Op::A*>(a)[i];
    typename Op::Out r;
    if constexpr (Op::kReadsB) {
        r = Op::apply(x, static_cast<const typename Op::B*>(b)[i]);
    } else {
        r = Op::apply(x);
    }
    static_cast<typename Op::Out*>(out)[i] = r;
}

/* ---- host-side dispatch -------------------------------------------------- */

template <class Op>
struct Tag {
    using type = Op;
};

template <class F, bool kHasPow, class V>
bool visit_field(int32_t op, V& visitor) {
    switch (op) {
    case CUZK_OP_ADD: visitor(Tag<Add<F>>{}); return true;
    case CUZK_OP_SUB: visitor(Tag<Sub<F>>{}); return true;
    case CUZK_OP_NEG: visitor(Tag<Neg<F>>{}); return true;
    case CUZK_OP_MUL: visitor(Tag<Mul<F>>{}); return true;
    case CUZK_OP_SQR: visitor(Tag<Sqr<F>>{}); return true;
    case CUZK_OP_INV: visitor(Tag<Inv<F>>{}); return true;
    case CUZK_OP_POW:
        if constexpr (kHasPow) {
            visitor(Tag<Pow<F>>{});
            return true;
        }
        return false;
    default: return false;
    }
}

template <class F, class V>
bool visit_curve(int32_t op, V& visitor) {
    switch (op) {
    case CUZK_OP_JAC_DBL: visitor(Tag<JacDbl<F>>{}); return true;
    case CUZK_OP_JAC_ADD: visitor(Tag<JacAdd<F>>{}); return true;
    case CUZK_OP_JAC_MADD: visitor(Tag<JacMadd<F>>{}); return true;
    case CUZK_OP_XYZZ_DBL: visitor(Tag<XyzzDbl<F>>{}); return true;
    case CUZK_OP_XYZZ_ADD: visitor(Tag<XyzzAdd<F>>{}); return true;
    case CUZK_OP_XYZZ_MADD: visitor(Tag<XyzzMadd<F>>{}); return true;
    default: return false;
    }
}

/* Calls visitor(Tag<Op>{}) once, with the Op of (kind, op); returns false,
 * calling nothing, for an unsupported pair. */
template <class V>
bool visit(int32_t kind, int32_t op, V&& visitor) {
    switch (kind) {
    case CUZK_KIND_FR: return visit_field<Fr, true>(op, visitor);
    case CUZK_KIND_FP: return visit_field<Fp, true>(op, visitor);
    case CUZK_KIND_FP2: return visit_field<Fp2, false>(op, visitor);
    case CUZK_KIND_G1: return visit_curve<Fp>(op, visitor);
    case CUZK_KIND_G2: return visit_curve<Fp2>(op, visitor);
    default: return false;
    }
}

/* Bytes per element of a, b (0 when not read) and out. */
struct Layout {
    uint64_t a_bytes, b_bytes, out_bytes;
};

template <class Op>
constexpr Layout layout_of() {
    return {sizeof(typename Op::A), Op::kReadsB ? sizeof(typename Op::B) : 0,
            sizeof(typename Op::Out)};
}

/* The layout of (kind, op); false for an unsupported pair. */
inline bool layout(int32_t kind, int32_t op, Layout* out) {
    return visit(kind, op, [&](auto tag) { *out = layout_of<typename decltype(tag)::type>(); });
}

/* Validates (kind, op), the inputs a and b and the count n of an apply call
 * (the caller checks its output); fills *lay on success. */
inline cuzk_status check_args(const char* function, int32_t kind, int32_t op, const void* a,
                              const void* b, uint64_t n, Layout* lay) {
    const int bad = CUZK_ERR_INVALID_ARGUMENT;
    if (!layout(kind, op, lay))
        return fail(bad, 0,
                    "%s: unsupported (kind, op) = (%d, %d); see cuzk_kind and cuzk_op in "
                    "cuzk/field.h",
                    function, (int)kind, (int)op);
    if (n == 0) return ok();
    if (a == nullptr) return fail(bad, 0, "%s: a is null with n = %" PRIu64, function, n);
    if (lay->b_bytes != 0 && b == nullptr)
        return fail(bad, 0, "%s: b is null with n = %" PRIu64 " but op %d reads b", function,
                    n, (int)op);
    uint64_t widest = lay->a_bytes > lay->out_bytes ? lay->a_bytes : lay->out_bytes;
    if (lay->b_bytes > widest) widest = lay->b_bytes;
    if (n > UINT64_MAX / widest)
        return fail(bad, 0, "%s: n = %" PRIu64 " elements overflow a 64-bit byte count",
                    function, n);
    return ok();
}

} // namespace ops
} // namespace cuzk

#endif /* CUZK_FIELD_OPS_CUH */
