/*
 * Host (CPU) side of the field layer: cuzk_field_op_layout and
 * cuzk_field_host_apply. The formulas are the GPU's (ops.cuh and the headers
 * under cuzk/), compiled with the portable C++ carry chains.
 */
#include "cuzk/field.h"
#include "ops.cuh"

using cuzk::fail;
using cuzk::guard;
using cuzk::ok;

namespace {

template <class Op>
void host_loop(const void* a, const void* b, void* out, uint64_t n) {
    for (uint64_t i = 0; i < n; ++i) cuzk::ops::apply_at<Op>(a, b, out, i);
}

} // namespace

extern "C" cuzk_status cuzk_field_op_layout(int32_t kind, int32_t op, uint64_t* a_bytes,
                                            uint64_t* b_bytes, uint64_t* out_bytes) {
    return guard("cuzk_field_op_layout", [&]() -> cuzk_status {
        cuzk::ops::Layout lay;
        if (!cuzk::ops::layout(kind, op, &lay))
            return fail(CUZK_ERR_INVALID_ARGUMENT, 0,
                        "cuzk_field_op_layout: unsupported (kind, op) = (%d, %d); see "
                        "cuzk_kind and cuzk_op in cuzk/field.h",
                        (int)kind, (int)op);
        if (a_bytes) *a_bytes = lay.a_bytes;
        if (b_bytes) *b_bytes = lay.b_bytes;
        if (out_bytes) *out_bytes = lay.out_bytes;
        return ok();
    });
}

extern "C" cuzk_status cuzk_field_host_apply(int32_t kind, int32_t op, const void* a,
                                             const void* b, void* out, uint64_t n) {
    return guard("cuzk_field_host_apply", [&]() -> cuzk_status {
        cuzk::ops::Layout lay;
        const cuzk_status st =
            cuzk::ops::check_args("cuzk_field_host_apply", kind, op, a, b, n, &lay);
        if (st.code != CUZK_OK || n == 0) return st;
        if (out == nullptr)
            return fail(CUZK_ERR_INVALID_ARGUMENT, 0, "cuzk_field_host_apply: out is null");
        cuzk::ops::visit(kind, op, [&](auto tag) {
            host_loop<typename decltype(tag)::type>(a, b, out, n);
        });
        return ok();
    });
}
