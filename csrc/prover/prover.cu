// cuzk prover kernels (include/cuzk/prover.h): the R1CS evaluations A z,
// B z, C z from compressed sparse rows, the tail of the evaluation vectors,
// the expansion of a compact assignment, and the gather of a compacted
// query's scalars.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuzk/bls12_381.cuh"
#include "cuzk/cuda_status.cuh"
#include "cuzk/grid.cuh"
#include "cuzk/ff.cuh"
#include "cuzk/prover.h"
#include "eval.cuh"

using cuzk::Fr;
using cuzk::grid_for;
using cuzk::guard;
using cuzk::ok;

namespace {

constexpr uint32_t kThreads = 256;

using cuzk::prover::assignment_ok;
using cuzk::prover::load_fr;
using cuzk::prover::load_z;
using cuzk::prover::store_fr;
using cuzk::prover::zero_fr;

// One thread a row: the rows of a PoRep-shaped circuit hold one to a few
// entries (a packing row 32), so a row's loop is short and the cost is the
// gather of z[column], one 32-byte load an entry.
__global__ void __launch_bounds__(kThreads) eval_rows_kernel(cuzk_r1cs_rows a) {
    Fr* out = static_cast<Fr*>(a.out);
    for (uint64_t r = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; r < a.rows;
         r += (uint64_t)gridDim.x * blockDim.x) {
        bool bad = false;
        const Fr acc = cuzk::prover::eval_row(a, r, &bad);
        if (bad && a.bad) *a.bad = 1;
        store_fr(out + r, acc);
    }
}

__global__ void fill_tail_kernel(Fr* out, cuzk_assignment z, uint64_t copy, uint64_t len) {
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < len;
         i += (uint64_t)gridDim.x * blockDim.x)
        store_fr(out + i, i < copy ? load_z(z, i) : zero_fr());
}

__global__ void expand_kernel(Fr* out, cuzk_assignment z) {
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < z.num_variables;
         i += (uint64_t)gridDim.x * blockDim.x)
        store_fr(out + i, load_z(z, i));
}

__global__ void gather_kernel(Fr* out, const Fr* z, const uint32_t* index, uint64_t n, uint64_t num_variables) {
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x) {
        const uint32_t j = index[i];
        store_fr(out + i, j < num_variables ? load_fr(z + j) : zero_fr());
    }
}

#define CUZK_NEED(cond, ...) \
    if (!(cond)) return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0, __VA_ARGS__)

}  // namespace

extern "C" {

cuzk_status cuzk_r1cs_eval_rows(int32_t device, const cuzk_r1cs_rows* args, void* stream) {
    return guard("cuzk_r1cs_eval_rows", [&]() -> cuzk_status {
        CUZK_NEED(args, "cuzk_r1cs_eval_rows: null arguments");
        if (args->rows == 0) return ok();
        CUZK_NEED(args->row_end && args->entries && args->coefficients && assignment_ok(args->z) && args->out,
                  "cuzk_r1cs_eval_rows: null pointer among row_end, entries, coefficients, z's arrays, out");
        CUZK_CUDA_TRY(cudaSetDevice(device));
        uint32_t blocks = 0;
        const cuzk_status s = grid_for(device, args->rows, kThreads, &blocks);
        if (s.code != CUZK_OK) return s;
        eval_rows_kernel<<<blocks, kThreads, 0, (cudaStream_t)stream>>>(*args);
        CUZK_CUDA_TRY(cudaGetLastError());
        return ok();
    });
}

cuzk_status cuzk_r1cs_fill_tail(int32_t device, void* out, const cuzk_assignment* z, uint64_t copy,
                                uint64_t len, void* stream) {
    return guard("cuzk_r1cs_fill_tail", [&]() -> cuzk_status {
        if (len == 0) return ok();
        CUZK_NEED(copy <= len, "cuzk_r1cs_fill_tail: copy %llu > len %llu", (unsigned long long)copy,
                  (unsigned long long)len);
        CUZK_NEED(out && (copy == 0 || (z && assignment_ok(*z))), "cuzk_r1cs_fill_tail: null pointer");
        const cuzk_assignment none = {};
        const cuzk_assignment& zv = copy == 0 ? none : *z;
        CUZK_NEED(copy <= zv.num_variables || copy == 0, "cuzk_r1cs_fill_tail: copy %llu > %llu variables",
                  (unsigned long long)copy, (unsigned long long)zv.num_variables);
        CUZK_CUDA_TRY(cudaSetDevice(device));
        uint32_t blocks = 0;
        const cuzk_status s = grid_for(device, len, kThreads, &blocks);
        if (s.code != CUZK_OK) return s;
        fill_tail_kernel<<<blocks, kThreads, 0, (cudaStream_t)stream>>>((Fr*)out, zv, copy, len);
        CUZK_CUDA_TRY(cudaGetLastError());
        return ok();
    });
}

cuzk_status cuzk_assignment_expand(int32_t device, void* out, const cuzk_assignment* z, void* stream) {
    return guard("cuzk_assignment_expand", [&]() -> cuzk_status {
        CUZK_NEED(z, "cuzk_assignment_expand: null assignment");
        if (z->num_variables == 0) return ok();
        CUZK_NEED(out && assignment_ok(*z), "cuzk_assignment_expand: null pointer among out and z's arrays");
        CUZK_CUDA_TRY(cudaSetDevice(device));
        uint32_t blocks = 0;
        const cuzk_status s = grid_for(device, z->num_variables, kThreads, &blocks);
        if (s.code != CUZK_OK) return s;
        expand_kernel<<<blocks, kThreads, 0, (cudaStream_t)stream>>>((Fr*)out, *z);
        CUZK_CUDA_TRY(cudaGetLastError());
        return ok();
    });
}

cuzk_status cuzk_prover_gather(int32_t device, void* out, const void* z, const uint32_t* index, uint64_t n,
                               uint64_t num_variables, void* stream) {
    return guard("cuzk_prover_gather", [&]() -> cuzk_status {
        if (n == 0) return ok();
        CUZK_NEED(out && z && index, "cuzk_prover_gather: null pointer");
        CUZK_CUDA_TRY(cudaSetDevice(device));
        uint32_t blocks = 0;
        const cuzk_status s = grid_for(device, n, kThreads, &blocks);
        if (s.code != CUZK_OK) return s;
        gather_kernel<<<blocks, kThreads, 0, (cudaStream_t)stream>>>((Fr*)out, (const Fr*)z, index, n,
                                                                     num_variables);
        CUZK_CUDA_TRY(cudaGetLastError());
        return ok();
    });
}

}  // extern "C"
