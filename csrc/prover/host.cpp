// The host (CPU) runs of the R1CS row evaluation and of a compact
// assignment's expansion (cuzk_r1cs_eval_rows_host and
// cuzk_assignment_expand_host in include/cuzk/prover.h): eval.cuh's code,
// compiled with the portable C++ carry chains, in every build.
#include "cuzk/prover.h"
#include "cuzk/status.hpp"
#include "eval.cuh"

extern "C" cuzk_status cuzk_r1cs_eval_rows_host(const cuzk_r1cs_rows* args) {
    return cuzk::guard("cuzk_r1cs_eval_rows_host", [&]() -> cuzk_status {
        if (!args) return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0, "cuzk_r1cs_eval_rows_host: null arguments");
        if (args->rows == 0) return cuzk::ok();
        if (!args->row_end || !args->entries || !args->coefficients || !cuzk::prover::assignment_ok(args->z) ||
            !args->out)
            return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0,
                              "cuzk_r1cs_eval_rows_host: null pointer among row_end, entries, "
                              "coefficients, z's arrays, out");
        cuzk::Fr* out = static_cast<cuzk::Fr*>(args->out);
        bool bad = false;
        for (uint64_t r = 0; r < args->rows; r++) cuzk::prover::store_fr(out + r, cuzk::prover::eval_row(*args, r, &bad));
        if (bad && args->bad) *args->bad = 1;
        return cuzk::ok();
    });
}

extern "C" cuzk_status cuzk_assignment_expand_host(void* out, const cuzk_assignment* z) {
    return cuzk::guard("cuzk_assignment_expand_host", [&]() -> cuzk_status {
        if (!z) return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0, "cuzk_assignment_expand_host: null assignment");
        if (z->num_variables == 0) return cuzk::ok();
        if (!out || !cuzk::prover::assignment_ok(*z))
            return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0,
                              "cuzk_assignment_expand_host: null pointer among out and z's arrays");
        cuzk::Fr* o = static_cast<cuzk::Fr*>(out);
        for (uint64_t i = 0; i < z->num_variables; i++) cuzk::prover::store_fr(o + i, cuzk::prover::load_z(*z, i));
        return cuzk::ok();
    });
}
