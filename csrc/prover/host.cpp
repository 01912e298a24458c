// The host (CPU) run of the R1CS row evaluation (cuzk_r1cs_eval_rows_host in
// include/cuzk/prover.h): eval.cuh's row code, compiled with the portable
// C++ carry chains, in every build.
#include "cuzk/prover.h"
#include "cuzk/status.hpp"
#include "eval.cuh"

extern "C" cuzk_status cuzk_r1cs_eval_rows_host(const cuzk_r1cs_rows* args) {
    return cuzk::guard("cuzk_r1cs_eval_rows_host", [&]() -> cuzk_status {
        if (!args) return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0, "cuzk_r1cs_eval_rows_host: null arguments");
        if (args->rows == 0) return cuzk::ok();
        if (!args->row_end || !args->entries || !args->coefficients || !args->z || !args->out)
            return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0,
                              "cuzk_r1cs_eval_rows_host: null pointer among row_end, entries, "
                              "coefficients, z, out");
        cuzk::Fr* out = static_cast<cuzk::Fr*>(args->out);
        bool bad = false;
        for (uint64_t r = 0; r < args->rows; r++) cuzk::prover::store_fr(out + r, cuzk::prover::eval_row(*args, r, &bad));
        if (bad && args->bad) *args->bad = 1;
        return cuzk::ok();
    });
}
