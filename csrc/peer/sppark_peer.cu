// Bench-only shim over sppark 0.1.16 (crates.io), the peer that cuzk's
// benchmark compares against on the same GPU in the same run. It calls
// sppark's public NTT and MSM entry points and times them with CUDA events;
// none of sppark's code is copied here. Not part of any cuzk library.
#include <cuda.h>

#include <ff/bls12-381.hpp>
#include <ntt/ntt.cuh>
#include <ec/jacobian_t.hpp>
#include <ec/xyzz_t.hpp>

typedef jacobian_t<fp_t> point_t;
typedef xyzz_t<fp_t> bucket_t;
typedef bucket_t::affine_t affine_t;
typedef fr_t scalar_t;

#include <msm/pippenger.cuh>

#include <algorithm>
#include <cstdio>
#include <vector>

namespace {
int fail(char* err, size_t len, const char* what, int code) {
    std::snprintf(err, len, "%s (code %d)", what, code);
    return code ? code : -1;
}
}  // namespace

extern "C" {

// Median over `reps` runs (after one warm-up) of sppark's forward NTT, natural
// order in and out (NN), of 2^lg_n elements already on the device (copied in
// once from `host`), in milliseconds, CUDA events around each call. The
// transformed values of the last run are copied back into `out` (may be null).
int cuzk_sppark_ntt_bench(const void* host, void* out, uint32_t lg_n, uint32_t reps,
                          float* median_ms, char* err, size_t errlen) {
    try {
        const gpu_t& gpu = select_gpu(0);
        const size_t n = size_t(1) << lg_n;
        fr_t* d = (fr_t*)gpu.Dmalloc(n * sizeof(fr_t));
        std::vector<float> times;
        cudaEvent_t a, b;
        cudaEventCreate(&a);
        cudaEventCreate(&b);
        stream_t& s = gpu;
        for (uint32_t r = 0; r <= reps; ++r) {
            s.HtoD(d, host, n);
            cudaEventRecord(a, s);
            NTT::Base_dev_ptr(s, d, lg_n, NTT::InputOutputOrder::NN, NTT::Direction::forward,
                              NTT::Type::standard);
            cudaEventRecord(b, s);
            s.sync();
            float ms = 0;
            cudaEventElapsedTime(&ms, a, b);
            if (r > 0) times.push_back(ms);
        }
        if (out) s.DtoH((fr_t*)out, d, n);
        s.sync();
        cudaEventDestroy(a);
        cudaEventDestroy(b);
        gpu.Dfree(d);
        std::sort(times.begin(), times.end());
        *median_ms = times.empty() ? 0 : times[times.size() / 2];
        cudaError_t e = cudaGetLastError();
        return e == cudaSuccess ? 0 : fail(err, errlen, cudaGetErrorString(e), e);
    } catch (const cuda_error& e) {
        return fail(err, errlen, e.what(), e.code());
    } catch (...) {
        return fail(err, errlen, "sppark NTT threw", -1);
    }
}

// sppark's G1 MSM (Pippenger) of n arkworks affine points (96 bytes, no
// flag) and Montgomery-form scalars from host memory, as its callers use it
// (scalars and points copied in per call): wall time of one call in ms
// (the caller takes the median); the Jacobian result goes to out_jacobian
// (144 bytes, arkworks Projective layout).
int cuzk_sppark_msm_g1(const void* points, const void* scalars, size_t n, void* out_jacobian,
                       char* err, size_t errlen) {
    try {
        point_t out;
        RustError r = mult_pippenger<bucket_t>(&out, (const affine_t*)points, n,
                                               (const scalar_t*)scalars, true, sizeof(affine_t));
        if (r.code != 0) return fail(err, errlen, "sppark mult_pippenger failed", r.code);
        std::memcpy(out_jacobian, &out, sizeof(out));
        return 0;
    } catch (...) {
        return fail(err, errlen, "sppark MSM threw", -1);
    }
}

// sppark's G1 MSM with the points uploaded once (msm_t's constructor) and
// the scalars copied in from host memory on each call (msm_t::invoke), the
// way the issue's sppark figures were taken: one warm-up call, then `reps`
// calls, each call's wall time (ms) in times_ms[0..reps). The last call's
// Jacobian result goes to out_jacobian (144 bytes, arkworks layout).
#include <chrono>
int cuzk_sppark_msm_g1_resident(const void* points, const void* scalars, size_t n,
                                uint32_t reps, void* out_jacobian, double* times_ms, char* err,
                                size_t errlen) {
    try {
        msm_t<bucket_t, point_t, affine_t, scalar_t> msm{(const affine_t*)points, n};
        // Points nullptr: the resident ones (msm_t's vec_t overload of
        // invoke does not compile in 0.1.16, so the pointer form).
        const auto* s = (const scalar_t*)scalars;
        const affine_t* resident = nullptr;
        point_t out;
        RustError r = msm.invoke(out, resident, n, s, true);
        if (r.code != 0) return fail(err, errlen, "sppark msm_t::invoke failed", r.code);
        for (uint32_t i = 0; i < reps; ++i) {
            const auto t0 = std::chrono::steady_clock::now();
            r = msm.invoke(out, resident, n, s, true);
            const auto t1 = std::chrono::steady_clock::now();
            if (r.code != 0) return fail(err, errlen, "sppark msm_t::invoke failed", r.code);
            times_ms[i] = std::chrono::duration<double, std::milli>(t1 - t0).count();
        }
        std::memcpy(out_jacobian, &out, sizeof(out));
        return 0;
    } catch (...) {
        return fail(err, errlen, "sppark resident MSM threw", -1);
    }
}

}  // extern "C"
