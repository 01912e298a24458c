// cuzk MSM C ABI (include/cuzk/msm.h): argument checks and dispatch by
// curve. The kernels are in kernels.cuh, the scratch plan in plan.cuh, the
// launches in run.cuh, the witness-shaped parts in witness.cuh; this file
// is their one translation unit.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuzk/cuda_status.cuh"
#include "cuzk/msm.h"
#include "kernels.cuh"
#include "plan.cuh"
#include "run.cuh"
#include "witness.cuh"

using cuzk::guard;
using cuzk::ok;

namespace {

// Loads every kernel of this file for curve F: under CUDA's lazy loading
// (the default since CUDA 12.2) a kernel's code is loaded, into device
// memory, at its first launch, unless cudaFuncGetAttributes asks for it
// first (CUDA C++ Programming Guide, "Lazy Loading").
template <class F>
cuzk_status load_kernels() {
    cudaFuncAttributes a;
    CUZK_CUDA_TRY(cudaFuncGetAttributes(&a, level0_smem_kernel<F, kMinBlocksOf<F>>));
    CUZK_CUDA_TRY(cudaFuncGetAttributes(&a, accumulate_kernel<F, PartialSource<F>, 1>));
    CUZK_CUDA_TRY(cudaFuncGetAttributes(&a, segments_smem_kernel<F>));
    CUZK_CUDA_TRY(cudaFuncGetAttributes(&a, combine_levels_kernel<F>));
    CUZK_CUDA_TRY(cudaFuncGetAttributes(&a, group_sum_kernel<F>));
    CUZK_CUDA_TRY(cudaFuncGetAttributes(&a, buckets_add_kernel<F>));
    CUZK_CUDA_TRY(cudaFuncGetAttributes(&a, shift_kernel<F>));
    CUZK_CUDA_TRY(cudaFuncGetAttributes(&a, sum_indexed_kernel<F, kMinBlocksOf<F>>));
    CUZK_CUDA_TRY(cudaFuncGetAttributes(&a, range_sum_kernel<F>));
    CUZK_CUDA_TRY(cudaFuncGetAttributes(&a, masked_sum_kernel<F, kMinBlocksOf<F>>));
    return ok();
}

}  // namespace

extern "C" {

cuzk_status cuzk_msm_load_kernels(int32_t device) {
    return guard("cuzk_msm_load_kernels", [&]() -> cuzk_status {
        CUZK_CUDA_TRY(cudaSetDevice(device));
        cudaFuncAttributes a;
        CUZK_CUDA_TRY(cudaFuncGetAttributes(&a, digits_kernel));
        const cuzk_status s = load_kernels<Fp>();
        if (s.code != CUZK_OK) return s;
        return load_kernels<Fp2>();
    });
}

cuzk_status cuzk_msm_plan_make(int32_t device, const cuzk_msm_plan_request* request,
                               cuzk_msm_plan* plan) {
    return guard("cuzk_msm_plan_make", [&]() -> cuzk_status {
        if (request == nullptr || plan == nullptr)
            return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0, "cuzk_msm_plan_make: null pointer");
        if (request->precomputed > 1)
            return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0,
                              "cuzk_msm_plan_make: precomputed = %u (give 0 or 1)",
                              request->precomputed);
        if (request->reserved != 0)
            return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0,
                              "cuzk_msm_plan_make: reserved = %u (give 0)", request->reserved);
        CUZK_CUDA_TRY(cudaSetDevice(device));
        Plan p;
        const cuzk_status s =
            make_plan(request->curve, request->n, request->window_bits,
                      request->windows_per_batch, request->precomputed != 0, request->parts, p);
        if (s.code != CUZK_OK) return s;
        *plan = to_public(p);
        return ok();
    });
}

cuzk_status cuzk_msm_precompute(int32_t device, uint32_t curve, const void* bases, uint64_t n,
                                uint32_t window_bits, void* out, void* stream) {
    return guard("cuzk_msm_precompute", [&]() -> cuzk_status {
        if (n > 0 && (bases == nullptr || out == nullptr))
            return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0, "cuzk_msm_precompute: null pointer");
        CUZK_CUDA_TRY(cudaSetDevice(device));
        Plan p;
        const cuzk_status s = make_plan(curve, n, window_bits, 0, true, 1, p);
        if (s.code != CUZK_OK) return s;
        if (n == 0) return ok();
        const auto st = (cudaStream_t)stream;
        if (curve == CUZK_MSM_G1)
            return precompute<Fp>(static_cast<const Affine<Fp>*>(bases), n, window_bits,
                                  p.windows, static_cast<Affine<Fp>*>(out), st);
        return precompute<Fp2>(static_cast<const Affine<Fp2>*>(bases), n, window_bits, p.windows,
                               static_cast<Affine<Fp2>*>(out), st);
    });
}

cuzk_status cuzk_msm_accumulate(int32_t device, const cuzk_msm_plan* plan,
                                const cuzk_msm_part* input, void* scratch, uint64_t scratch_bytes,
                                cuzk_msm_profile* profile, void* stream) {
    return guard("cuzk_msm_accumulate", [&]() -> cuzk_status {
        if (input == nullptr)
            return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0, "cuzk_msm_accumulate: null input");
        CUZK_CUDA_TRY(cudaSetDevice(device));
        Plan p;
        cuzk_status s = from_public("cuzk_msm_accumulate", plan, p);
        if (s.code != CUZK_OK) return s;
        const uint64_t n = input->n;
        const uint64_t stride = input->stride;
        if (n > p.n)
            return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0,
                              "cuzk_msm_accumulate: %llu points in a part, the scratch is "
                              "planned for %llu",
                              (unsigned long long)n, (unsigned long long)p.n);
        if (input->part >= p.parts)
            return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0,
                              "cuzk_msm_accumulate: part %u of %u", input->part, p.parts);
        if (input->scalars_indexed > 1 || (input->scalars_indexed && input->indices == nullptr))
            return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0,
                              "cuzk_msm_accumulate: scalars_indexed = %u %s (give 0 or 1, and 0 "
                              "without indices)",
                              input->scalars_indexed,
                              input->indices == nullptr ? "without indices" : "");
        if (n > 0 && (input->bases == nullptr || input->scalars == nullptr))
            return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0,
                              "cuzk_msm_accumulate: null device pointer");
        if ((stride != 0) != p.merged)
            return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0,
                              "cuzk_msm_accumulate: stride %llu with a plan for %s bases "
                              "(precomputed bases take their copies' n, plain ones 0)",
                              (unsigned long long)stride, p.merged ? "precomputed" : "plain");
        if (stride != 0 && stride < n)
            return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0,
                              "cuzk_msm_accumulate: %llu points past a stride of %llu",
                              (unsigned long long)n, (unsigned long long)stride);
        if (stride != 0 && stride > CUZK_MSM_MAX_POINTS / p.windows)
            return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0,
                              "cuzk_msm_accumulate: %u windows of %llu precomputed points pass "
                              "2^31 - 1",
                              p.windows, (unsigned long long)stride);
        s = check_scratch("cuzk_msm_accumulate", p, scratch, scratch_bytes);
        if (s.code != CUZK_OK) return s;
        auto* base = static_cast<char*>(scratch);
        const auto st = (cudaStream_t)stream;
        const auto* scalars = static_cast<const Fr*>(input->scalars);
        if (p.curve == CUZK_MSM_G1)
            return accumulate<Fp>(p, static_cast<const Affine<Fp>*>(input->bases), stride,
                                  scalars, input->indices, input->scalars_indexed != 0, n, p.c,
                                  input->part, base, profile, st);
        return accumulate<Fp2>(p, static_cast<const Affine<Fp2>*>(input->bases), stride, scalars,
                               input->indices, input->scalars_indexed != 0, n, p.c, input->part,
                               base, profile, st);
    });
}

cuzk_status cuzk_msm_finish(int32_t device, const cuzk_msm_plan* plan, void* scratch,
                            uint64_t scratch_bytes, void* window_sums, cuzk_msm_profile* profile,
                            void* stream) {
    return guard("cuzk_msm_finish", [&]() -> cuzk_status {
        if (window_sums == nullptr)
            return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0, "cuzk_msm_finish: null window_sums");
        CUZK_CUDA_TRY(cudaSetDevice(device));
        Plan p;
        cuzk_status s = from_public("cuzk_msm_finish", plan, p);
        if (s.code != CUZK_OK) return s;
        s = check_scratch("cuzk_msm_finish", p, scratch, scratch_bytes);
        if (s.code != CUZK_OK) return s;
        auto* base = static_cast<char*>(scratch);
        const auto st = (cudaStream_t)stream;
        if (p.curve == CUZK_MSM_G1) return finish<Fp>(p, base, window_sums, profile, st);
        return finish<Fp2>(p, base, window_sums, profile, st);
    });
}

cuzk_status cuzk_msm_classify_scratch(int32_t device, uint64_t n, uint64_t* bytes) {
    return guard("cuzk_msm_classify_scratch", [&]() -> cuzk_status {
        if (bytes == nullptr)
            return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0,
                              "cuzk_msm_classify_scratch: null pointer");
        if (n > CUZK_MSM_MAX_POINTS)
            return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0,
                              "cuzk_msm_classify_scratch: %llu scalars pass 2^31 - 1",
                              (unsigned long long)n);
        CUZK_CUDA_TRY(cudaSetDevice(device));
        return classify_scratch(n, *bytes);
    });
}

cuzk_status cuzk_msm_classify(int32_t device, const void* scalars, uint64_t n, uint32_t* indices,
                              const cuzk_msm_device_scratch* scratch, uint64_t* counts,
                              void* stream) {
    return guard("cuzk_msm_classify", [&]() -> cuzk_status {
        if (counts == nullptr || scratch == nullptr)
            return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0, "cuzk_msm_classify: null pointer");
        if (n > CUZK_MSM_MAX_POINTS)
            return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0,
                              "cuzk_msm_classify: %llu scalars pass 2^31 - 1",
                              (unsigned long long)n);
        if (n > 0 && (scalars == nullptr || indices == nullptr || scratch->ptr == nullptr))
            return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0,
                              "cuzk_msm_classify: null device pointer");
        CUZK_CUDA_TRY(cudaSetDevice(device));
        uint64_t need = 0;
        cuzk_status s = classify_scratch(n, need);
        if (s.code != CUZK_OK) return s;
        if (n > 0 && scratch->bytes < need)
            return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0,
                              "cuzk_msm_classify: scratch of %llu bytes, %llu needed "
                              "(cuzk_msm_classify_scratch)",
                              (unsigned long long)scratch->bytes, (unsigned long long)need);
        return classify(static_cast<const Fr*>(scalars), n, indices,
                        static_cast<char*>(scratch->ptr), counts, (cudaStream_t)stream);
    });
}

cuzk_status cuzk_msm_sum_scratch(int32_t device, uint32_t curve, uint64_t count, uint64_t* bytes) {
    return guard("cuzk_msm_sum_scratch", [&]() -> cuzk_status {
        (void)device;
        if (bytes == nullptr)
            return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0, "cuzk_msm_sum_scratch: null pointer");
        if (curve != CUZK_MSM_G1 && curve != CUZK_MSM_G2)
            return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0,
                              "cuzk_msm_sum_scratch: curve %u is neither G1 (1) nor G2 (2)",
                              curve);
        *bytes = sum_plan(count, curve == CUZK_MSM_G1 ? sizeof(Xyzz<Fp>) : sizeof(Xyzz<Fp2>))
                     .total;
        return ok();
    });
}

cuzk_status cuzk_msm_sum_indexed(int32_t device, const cuzk_msm_sum_input* input,
                                 const cuzk_msm_device_scratch* scratch, void* sum, void* stream) {
    return guard("cuzk_msm_sum_indexed", [&]() -> cuzk_status {
        if (input == nullptr || scratch == nullptr || sum == nullptr)
            return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0, "cuzk_msm_sum_indexed: null pointer");
        const uint32_t curve = input->curve;
        const uint64_t count = input->count;
        if (curve != CUZK_MSM_G1 && curve != CUZK_MSM_G2)
            return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0,
                              "cuzk_msm_sum_indexed: curve %u is neither G1 (1) nor G2 (2)",
                              curve);
        if (input->reserved != 0)
            return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0,
                              "cuzk_msm_sum_indexed: reserved = %u (give 0)", input->reserved);
        if (count > 0 &&
            (input->bases == nullptr || input->indices == nullptr || scratch->ptr == nullptr))
            return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0,
                              "cuzk_msm_sum_indexed: null device pointer");
        const bool g1 = curve == CUZK_MSM_G1;
        const SumPlan p = sum_plan(count, g1 ? sizeof(Xyzz<Fp>) : sizeof(Xyzz<Fp2>));
        if (count > 0 && scratch->bytes < p.total)
            return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0,
                              "cuzk_msm_sum_indexed: scratch of %llu bytes, %llu needed "
                              "(cuzk_msm_sum_scratch)",
                              (unsigned long long)scratch->bytes, (unsigned long long)p.total);
        CUZK_CUDA_TRY(cudaSetDevice(device));
        auto* base = static_cast<char*>(scratch->ptr);
        const auto st = (cudaStream_t)stream;
        if (g1)
            return sum_indexed<Fp>(static_cast<const Affine<Fp>*>(input->bases), input->indices,
                                   count, base, sum, st);
        return sum_indexed<Fp2>(static_cast<const Affine<Fp2>*>(input->bases), input->indices,
                                count, base, sum, st);
    });
}

}  // extern "C"

namespace {
// The scratch bytes of cuzk_msm_masked_* for `sets` masks of `curve`, or
// an error naming `fn` for a bad curve or count.
cuzk_status masked_check(const char* fn, uint32_t curve, uint64_t sets, uint64_t& bytes) {
    if (curve != CUZK_MSM_G1 && curve != CUZK_MSM_G2)
        return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0, "%s: curve %u is neither G1 (1) nor G2 (2)",
                          fn, curve);
    if (sets == 0 || sets > 1024)
        return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0, "%s: %llu masks (give 1 to 1024)", fn,
                          (unsigned long long)sets);
    bytes = masked_scratch(sets, curve == CUZK_MSM_G1 ? sizeof(Xyzz<Fp>) : sizeof(Xyzz<Fp2>));
    return ok();
}
}  // namespace

cuzk_status cuzk_msm_masked_scratch(int32_t device, uint32_t curve, uint64_t sets,
                                    uint64_t* bytes) {
    return guard("cuzk_msm_masked_scratch", [&]() -> cuzk_status {
        (void)device;
        if (bytes == nullptr)
            return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0,
                              "cuzk_msm_masked_scratch: null pointer");
        return masked_check("cuzk_msm_masked_scratch", curve, sets, *bytes);
    });
}

cuzk_status cuzk_msm_masked_accumulate(int32_t device, const cuzk_msm_masked_input* input,
                                       const cuzk_msm_device_scratch* scratch, void* stream) {
    return guard("cuzk_msm_masked_accumulate", [&]() -> cuzk_status {
        constexpr const char* fn = "cuzk_msm_masked_accumulate";
        if (input == nullptr || scratch == nullptr)
            return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0, "%s: null pointer", fn);
        uint64_t need = 0;
        CUZK_TRY(masked_check(fn, input->curve, input->sets, need));
        if (input->first > 1)
            return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0, "%s: first = %u (give 0 or 1)", fn,
                              input->first);
        if (scratch->ptr == nullptr || scratch->bytes < need)
            return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0,
                              "%s: scratch of %llu bytes, %llu needed (cuzk_msm_masked_scratch)",
                              fn, (unsigned long long)scratch->bytes, (unsigned long long)need);
        const uint64_t words = (input->count + 63) / 64;
        if (input->first_word > input->mask_words || words > input->mask_words - input->first_word)
            return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0,
                              "%s: %llu points from word %llu pass masks of %llu words", fn,
                              (unsigned long long)input->count,
                              (unsigned long long)input->first_word,
                              (unsigned long long)input->mask_words);
        if (input->count > 0 && (input->bases == nullptr || input->masks == nullptr))
            return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0, "%s: null device pointer", fn);
        CUZK_CUDA_TRY(cudaSetDevice(device));
        auto* base = static_cast<char*>(scratch->ptr);
        const auto st = (cudaStream_t)stream;
        const bool first = input->first == 1;
        if (input->curve == CUZK_MSM_G1)
            return masked_accumulate<Fp>(static_cast<const Affine<Fp>*>(input->bases),
                                         input->count, input->masks, input->sets,
                                         input->mask_words, input->first_word, first, base, st);
        return masked_accumulate<Fp2>(static_cast<const Affine<Fp2>*>(input->bases), input->count,
                                      input->masks, input->sets, input->mask_words,
                                      input->first_word, first, base, st);
    });
}

cuzk_status cuzk_msm_masked_finish(int32_t device, uint32_t curve, uint64_t sets,
                                   const cuzk_msm_device_scratch* scratch, void* sums,
                                   void* stream) {
    return guard("cuzk_msm_masked_finish", [&]() -> cuzk_status {
        constexpr const char* fn = "cuzk_msm_masked_finish";
        if (scratch == nullptr || sums == nullptr)
            return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0, "%s: null pointer", fn);
        uint64_t need = 0;
        CUZK_TRY(masked_check(fn, curve, sets, need));
        if (scratch->ptr == nullptr || scratch->bytes < need)
            return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0,
                              "%s: scratch of %llu bytes, %llu needed (cuzk_msm_masked_scratch)",
                              fn, (unsigned long long)scratch->bytes, (unsigned long long)need);
        CUZK_CUDA_TRY(cudaSetDevice(device));
        auto* base = static_cast<char*>(scratch->ptr);
        const auto st = (cudaStream_t)stream;
        if (curve == CUZK_MSM_G1) return masked_finish<Fp>(sets, base, sums, st);
        return masked_finish<Fp2>(sets, base, sums, st);
    });
}
