/* The NTT layer's C ABI (include/cuzk/ntt.h): argument checks and launches of the kernels in the .cuh parts. */
//
// Forward transform: in-place decimation in frequency (Gentleman-Sande),
// natural order in, bit-reversed order out, organised as Bailey's
// four-step method (D. H. Bailey, "FFTs in external or hierarchical
// memory", J. Supercomputing 4, 1990): with N = R * C and j = c + C t,
//   X[u + R v] = sum_c w_C^(v c) * [ w_N^(u c) * sum_t x[c + C t] w_R^(u t) ].
// One pass runs the size-R DFTs of all columns (stride C) in shared memory
// as radix-2 DIF stages, leaving column outputs in bit-reversed position,
// and multiplies output u of column c by w_N^(u c). The size-C DFTs of the
// rows are the next pass, on contiguous blocks of C elements, recursively.
// Output lands at bit-reversed positions overall: position
// C * bitrev_R(u) + bitrev_C(v) holds X[u + R v].
//
// One translation unit, in parts: common.cuh (constants, loads and stores,
// shared-memory tiles, roots), lazy.cuh (below-2r arithmetic), passes.cuh
// (the DIF pass kernels and their launches), tables.cuh (root and twiddle
// tables), elementwise.cuh (bit reversal, scaling, the quotient).
#include <cuda_runtime.h>

#include <cstdint>

#include "common.cuh"
#include "cuzk/cuda_status.cuh"
#include "cuzk/grid.cuh"
#include "cuzk/ntt.h"
#include "elementwise.cuh"
#include "passes.cuh"
#include "tables.cuh"

using cuzk::grid_for;
using cuzk::guard;
using cuzk::ok;

namespace {

#define CUZK_NEED(cond, ...) \
    if (!(cond)) return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0, __VA_ARGS__)

// Checks a cuzk_ntt_root (`what` names it in messages): non-null, both
// tables given, lo_bits <= log_n <= 32.
cuzk_status check_root(const char* fn, const char* what, const cuzk_ntt_root* root) {
    CUZK_NEED(root, "%s: null %s", fn, what);
    CUZK_NEED(root->log_n <= 32, "%s: %s.log_n = %u exceeds Fr's two-adicity (32)", fn, what, root->log_n);
    CUZK_NEED(root->tw_lo && root->tw_hi, "%s: null table in %s", fn, what);
    CUZK_NEED(root->lo_bits <= root->log_n, "%s: %s.lo_bits %u > log_n %u", fn, what, root->lo_bits, root->log_n);
    return ok();
}

#define CUZK_CHECK_ROOT(fn, what, root)                        \
    do {                                                       \
        const cuzk_status st_ = check_root(fn, what, root);    \
        if (st_.code != CUZK_OK) return st_;                   \
    } while (0)

// The checks and launch shared by cuzk_ntt_powers and cuzk_ntt_powers_shoup:
// entries k < 2^(log_b - 1) of w_B^k (B = 2^log_b) from the two-level tables
// of w_N (N = 2^root->log_n), written by `kernel` as `Entry`s (Fr or Root).
template <class Entry>
cuzk_status launch_powers(const char* name, void (*kernel)(Entry*, uint32_t, uint32_t, const Fr*, const Fr*, uint32_t),
                          int32_t device, void* out, uint32_t log_b, const cuzk_ntt_root* root, void* stream) {
    return guard(name, [&]() -> cuzk_status {
        CUZK_CHECK_ROOT(name, "root", root);
        const uint32_t log_n = root->log_n;
        CUZK_NEED(log_b >= 1 && log_b <= log_n, "%s: log_b %u, log_n %u (need 1 <= log_b <= log_n <= 32)", name,
                  log_b, log_n);
        CUZK_NEED(out, "%s: null pointer", name);
        CUZK_NEED(((uintptr_t)out & 15) == 0, "%s: out not 16-byte aligned", name);
        CUZK_CUDA_TRY(cudaSetDevice(device));
        uint32_t blocks = 0;
        cuzk_status s = grid_for(device, 1ull << (log_b - 1), 256, &blocks);
        if (s.code != CUZK_OK) return s;
        kernel<<<blocks, 256, 0, (cudaStream_t)stream>>>((Entry*)out, log_b - 1, log_n - log_b,
                                                          (const Fr*)root->tw_lo, (const Fr*)root->tw_hi,
                                                          root->lo_bits);
        CUZK_CUDA_TRY(cudaGetLastError());
        return ok();
    });
}
}  // namespace

extern "C" {

cuzk_status cuzk_ntt_dif(int32_t device, void* data, uint64_t batch, const cuzk_ntt_tables* tables,
                         void* stream) {
    return guard("cuzk_ntt_dif", [&]() -> cuzk_status {
        CUZK_NEED(tables, "cuzk_ntt_dif: null tables");
        const cuzk_ntt_tables& t = *tables;
        CUZK_CHECK_ROOT("cuzk_ntt_dif", "tables->root", &t.root);
        const uint32_t log_n = t.root.log_n;
        CUZK_NEED(data, "cuzk_ntt_dif: null data");
        CUZK_NEED(t.roots, "cuzk_ntt_dif: null roots table (make it with cuzk_ntt_roots)");
        CUZK_NEED(((uintptr_t)t.roots & 15) == 0, "cuzk_ntt_dif: roots table not 16-byte aligned");
        CUZK_NEED(t.pass_tw || t.pass_tw_count == 0, "cuzk_ntt_dif: null pass_tw with count %u",
                  t.pass_tw_count);
        for (uint32_t p = 0; p < t.pass_tw_count; ++p)
            CUZK_NEED(((uintptr_t)t.pass_tw[p] & 15) == 0, "cuzk_ntt_dif: pass_tw[%u] not 16-byte aligned", p);
        uint32_t plan_b[8], plan_r[8];
        const uint32_t passes = plan_passes(log_n, plan_b, plan_r);
        // A tiled table needs four or more columns: checked before any
        // work, so that a refused call leaves the data and device as they were.
        for (uint32_t p = 0; p < passes && p < t.pass_tw_count; ++p)
            CUZK_NEED(!t.pass_tw[p] || !((t.pass_tw_tiled >> p) & 1u) || plan_b[p] >= plan_r[p] + 2,
                      "cuzk_ntt_dif: pass %u has %u columns, too few for a tiled table (need 4)", p,
                      1u << (plan_b[p] - plan_r[p]));
        if (batch == 0 || log_n == 0) return ok();
        CUZK_CUDA_TRY(cudaSetDevice(device));
        return launch_passes(device, (Fr*)data, batch, t, (cudaStream_t)stream);
    });
}

cuzk_status cuzk_ntt_plan(uint32_t log_n, uint32_t* log_b, uint32_t capacity, uint32_t* passes) {
    return guard("cuzk_ntt_plan", [&]() -> cuzk_status {
        CUZK_NEED(log_n <= 32, "cuzk_ntt_plan: log_n = %u > 32", log_n);
        CUZK_NEED(passes && (log_b || capacity == 0), "cuzk_ntt_plan: null out-pointer");
        uint32_t b[8], r[8];
        const uint32_t n = log_n == 0 ? 0 : plan_passes(log_n, b, r);
        *passes = n;
        for (uint32_t p = 0; p < n && p < capacity; ++p) log_b[p] = b[p];
        return ok();
    });
}

cuzk_status cuzk_ntt_roots(int32_t device, void* roots, const cuzk_ntt_root* root, void* stream) {
    return guard("cuzk_ntt_roots", [&]() -> cuzk_status {
        CUZK_CHECK_ROOT("cuzk_ntt_roots", "root", root);
        CUZK_NEED(roots, "cuzk_ntt_roots: null roots table");
        CUZK_NEED(((uintptr_t)roots & 15) == 0, "cuzk_ntt_roots: roots table not 16-byte aligned");
        const uint32_t log_n = root->log_n, log_t = roots_log_t(log_n);
        if (log_t == 0) return ok();
        CUZK_CUDA_TRY(cudaSetDevice(device));
        roots_kernel<<<1, 256, 0, (cudaStream_t)stream>>>((Root*)roots, log_n, log_t, (const Fr*)root->tw_lo,
                                                         (const Fr*)root->tw_hi, root->lo_bits);
        CUZK_CUDA_TRY(cudaGetLastError());
        return ok();
    });
}

cuzk_status cuzk_ntt_powers(int32_t device, void* out, uint32_t log_b, const cuzk_ntt_root* root,
                            void* stream) {
    return launch_powers<Fr>("cuzk_ntt_powers", powers_kernel, device, out, log_b, root, stream);
}

cuzk_status cuzk_ntt_powers_shoup(int32_t device, void* out, uint32_t log_b, const cuzk_ntt_root* root,
                                  void* stream) {
    return launch_powers<Root>("cuzk_ntt_powers_shoup", shoup_powers_kernel, device, out, log_b, root, stream);
}

cuzk_status cuzk_ntt_powers_tiled(int32_t device, void* out, uint32_t log_b, uint32_t log_r, uint32_t shoup,
                                  const cuzk_ntt_root* root, void* stream) {
    return guard("cuzk_ntt_powers_tiled", [&]() -> cuzk_status {
        CUZK_CHECK_ROOT("cuzk_ntt_powers_tiled", "root", root);
        const uint32_t log_n = root->log_n;
        CUZK_NEED(log_b >= 2 && log_r >= 1 && log_r <= log_b - 2 && log_b <= log_n,
                  "cuzk_ntt_powers_tiled: log_r %u, log_b %u, log_n %u (need 1 <= log_r, log_r + 2 <= log_b <= "
                  "log_n <= 32: four or more columns)",
                  log_r, log_b, log_n);
        CUZK_NEED(out, "cuzk_ntt_powers_tiled: null pointer");
        CUZK_NEED(((uintptr_t)out & 15) == 0, "cuzk_ntt_powers_tiled: out not 16-byte aligned");
        CUZK_CUDA_TRY(cudaSetDevice(device));
        uint32_t blocks = 0;
        cuzk_status s = grid_for(device, 1ull << log_b, 256, &blocks);
        if (s.code != CUZK_OK) return s;
        const Fr* lo = (const Fr*)root->tw_lo;
        const Fr* hi = (const Fr*)root->tw_hi;
        if (shoup)
            tiled_powers_kernel<Root><<<blocks, 256, 0, (cudaStream_t)stream>>>((Root*)out, log_b, log_r,
                                                                                log_n - log_b, lo, hi, root->lo_bits);
        else
            tiled_powers_kernel<Fr><<<blocks, 256, 0, (cudaStream_t)stream>>>((Fr*)out, log_b, log_r, log_n - log_b,
                                                                              lo, hi, root->lo_bits);
        CUZK_CUDA_TRY(cudaGetLastError());
        return ok();
    });
}

cuzk_status cuzk_ntt_bit_reverse(int32_t device, void* data, uint32_t log_n, uint64_t batch,
                                 void* stream) {
    return guard("cuzk_ntt_bit_reverse", [&]() -> cuzk_status {
        CUZK_NEED(log_n <= 32, "cuzk_ntt_bit_reverse: log_n = %u > 32", log_n);
        CUZK_NEED(data || batch == 0, "cuzk_ntt_bit_reverse: null pointer");
        if (batch == 0 || log_n <= 1) return ok();
        CUZK_CUDA_TRY(cudaSetDevice(device));
        const uint64_t total = batch << log_n;
        uint32_t blocks = 0;
        if (log_n >= 2 * kBrQ) {
            const uint64_t groups = total >> (2 * kBrQ);  // tiles m over all vectors
            cuzk_status s = grid_for(device, total, kBrT * kBrT, &blocks);
            if (s.code != CUZK_OK) return s;
            bit_reverse_tiled_kernel<<<blocks, kBrT * kBrT, 0, (cudaStream_t)stream>>>((Fr*)data, log_n, groups);
            CUZK_CUDA_TRY(cudaGetLastError());
            return ok();
        }
        cuzk_status s = grid_for(device, total, 256, &blocks);
        if (s.code != CUZK_OK) return s;
        bit_reverse_kernel<<<blocks, 256, 0, (cudaStream_t)stream>>>((Fr*)data, log_n, total);
        CUZK_CUDA_TRY(cudaGetLastError());
        return ok();
    });
}

cuzk_status cuzk_ntt_scale_powers(int32_t device, void* data, uint32_t log_n, uint64_t batch,
                                  const cuzk_ntt_root* shift, const void* factor, void* stream) {
    return guard("cuzk_ntt_scale_powers", [&]() -> cuzk_status {
        CUZK_NEED(log_n <= 32, "cuzk_ntt_scale_powers: log_n = %u > 32", log_n);
        CUZK_NEED(data || batch == 0, "cuzk_ntt_scale_powers: null pointer");
        if (shift) {
            CUZK_CHECK_ROOT("cuzk_ntt_scale_powers", "shift", shift);
            CUZK_NEED(log_n <= shift->log_n, "cuzk_ntt_scale_powers: shift tables cover 2^%u powers, need 2^%u",
                      shift->log_n, log_n);
        }
        if (batch == 0 || (!shift && !factor)) return ok();
        CUZK_CUDA_TRY(cudaSetDevice(device));
        const uint64_t total = batch << log_n;
        uint32_t blocks = 0;
        cuzk_status s = grid_for(device, total, 256, &blocks);
        if (s.code != CUZK_OK) return s;
        const Fr* g_lo = shift ? (const Fr*)shift->tw_lo : nullptr;
        const Fr* g_hi = shift ? (const Fr*)shift->tw_hi : nullptr;
        const uint32_t lo_bits = shift ? shift->lo_bits : 0;
        scale_powers_kernel<<<blocks, 256, 0, (cudaStream_t)stream>>>((Fr*)data, log_n, total, g_lo, g_hi, lo_bits,
                                                                      (const Fr*)factor);
        CUZK_CUDA_TRY(cudaGetLastError());
        return ok();
    });
}

cuzk_status cuzk_ntt_mul_sub_scale(int32_t device, const cuzk_ntt_mul_sub_operands* operands, void* out,
                                   uint64_t n, const void* factor, void* stream) {
    return guard("cuzk_ntt_mul_sub_scale", [&]() -> cuzk_status {
        if (n == 0) return ok();
        CUZK_NEED(operands && operands->a && out, "cuzk_ntt_mul_sub_scale: null a or out");
        CUZK_CUDA_TRY(cudaSetDevice(device));
        uint32_t blocks = 0;
        cuzk_status s = grid_for(device, n, 256, &blocks);
        if (s.code != CUZK_OK) return s;
        mul_sub_scale_kernel<<<blocks, 256, 0, (cudaStream_t)stream>>>(
            (const Fr*)operands->a, (const Fr*)operands->b, (const Fr*)operands->c, (Fr*)out, n, (const Fr*)factor);
        CUZK_CUDA_TRY(cudaGetLastError());
        return ok();
    });
}

}  // extern "C"
