// cuzk MSM host drivers: the launches of one part's accumulation (steps
// 1-3), of the bucket reduction (step 4), of the precomputation, and the
// optional phase timing; part of msm.cu, one translation unit.
#pragma once

#include <cuda_runtime.h>

#include <cub/device/device_radix_sort.cuh>

#include <cstdint>

#include "cuzk/cuda_status.cuh"
#include "cuzk/msm.h"
#include "kernels.cuh"
#include "plan.cuh"

namespace {

// Returns a failed status from the enclosing function.
#define CUZK_TRY(expr)                                   \
    do {                                                 \
        const cuzk_status cuzk_s_ = (expr);              \
        if (cuzk_s_.code != CUZK_OK) return cuzk_s_;     \
    } while (0)

// Phase timing into a cuzk_msm_profile (null: off). Each mark records an
// event and waits for it, so profiling serializes the phases: for tuning.
struct Profile {
    using Field = double cuzk_msm_profile::*;
    cuzk_msm_profile* out;
    cudaStream_t stream;
    cudaEvent_t last = nullptr;
    Profile(cuzk_msm_profile* o, cudaStream_t s) : out(o), stream(s) {}
    Profile(const Profile&) = delete;
    Profile& operator=(const Profile&) = delete;
    ~Profile() {
        if (last != nullptr) (void)cudaEventDestroy(last);
    }
    cuzk_status start() {
        if (out == nullptr) return ok();
        CUZK_CUDA_TRY(cudaEventCreate(&last));
        CUZK_CUDA_TRY(cudaEventRecord(last, stream));
        return ok();
    }
    // Adds the device time since the previous mark to out->*phase.
    cuzk_status mark(Field phase) {
        if (out == nullptr) return ok();
        cudaEvent_t e = nullptr;
        CUZK_CUDA_TRY(cudaEventCreate(&e));
        const cuzk_status s = [&]() -> cuzk_status {
            CUZK_CUDA_TRY(cudaEventRecord(e, stream));
            CUZK_CUDA_TRY(cudaEventSynchronize(e));
            float ms = 0;
            CUZK_CUDA_TRY(cudaEventElapsedTime(&ms, last, e));
            out->*phase += ms;
            return ok();
        }();
        (void)cudaEventDestroy(last);
        last = e;
        return s;
    }
};

template <class F>
cuzk_status accumulate(const Plan& p, const Affine<F>* bases, uint64_t stride, const Fr* scalars,
                       const uint32_t* indices, bool scalars_indexed, uint64_t n, uint32_t c,
                       uint32_t part, char* scratch,
                       cuzk_msm_profile* profile, cudaStream_t stream) {
    using X = Xyzz<F>;
    auto* keys_in = reinterpret_cast<uint32_t*>(scratch + p.keys_in);
    auto* vals_in = reinterpret_cast<uint32_t*>(scratch + p.vals_in);
    auto* keys_out = reinterpret_cast<uint32_t*>(scratch + p.keys_out);
    auto* vals_out = reinterpret_cast<uint32_t*>(scratch + p.vals_out);
    auto* buckets = reinterpret_cast<X*>(scratch + p.buckets + part * p.bucket_bytes);
    // Part 0 clears every part's buckets (identities), so that a part never
    // accumulated adds nothing instead of stale memory.
    if (part == 0)
        CUZK_CUDA_TRY(cudaMemsetAsync(scratch + p.buckets, 0, p.parts * p.bucket_bytes, stream));
    uint32_t* list_keys[2] = {reinterpret_cast<uint32_t*>(scratch + p.list_a_keys),
                              reinterpret_cast<uint32_t*>(scratch + p.list_b_keys)};
    X* list_pts[2] = {reinterpret_cast<X*>(scratch + p.list_a_pts),
                      reinterpret_cast<X*>(scratch + p.list_b_pts)};
    if (n == 0) return ok();  // an empty part: identity buckets
    Profile prof(profile, stream);
    CUZK_TRY(prof.start());
    for (uint32_t w0 = 0; w0 < p.windows; w0 += p.batch) {
        const uint32_t nw = p.windows - w0 < p.batch ? p.windows - w0 : p.batch;
        digits_kernel<<<(unsigned)ceil_div(n, 256), 256, 0, stream>>>(
            scalars, indices, scalars_indexed, n, c, w0, nw, p.merged ? stride : 0, keys_in,
            vals_in);
        CUZK_CUDA_TRY(cudaGetLastError());
        CUZK_TRY(prof.mark(&cuzk_msm_profile::digits_ms));
        // Plain: one sort a window (keys carry the window above the c
        // bucket bits, so windows stay apart). Merged: one sort of all.
        const uint64_t items = p.merged ? n * nw : n;
        for (uint32_t k = 0; k < (p.merged ? 1u : nw); ++k) {
            size_t bytes = p.cub_bytes;
            CUZK_CUDA_TRY(cub::DeviceRadixSort::SortPairs(
                scratch + p.cub, bytes, keys_in + k * n, keys_out + k * n, vals_in + k * n,
                vals_out + k * n, (int)items, 0, (int)c, stream));
        }
        CUZK_TRY(prof.mark(&cuzk_msm_profile::sort_ms));
        // Level 0 over the sorted pairs, then the partial lists.
        uint64_t len = n * nw;
        uint64_t threads = ceil_div(len, kChunk0);
        int cur = 0;
        {
            PairSource<F> src{keys_out, vals_out, bases};
            // The accumulator lives in shared memory (level0_smem_kernel),
            // faster than in registers for both curves (BENCHMARKS.md) as
            // G2's accumulator spilled.
            level0_smem_kernel<F, kMinBlocksOf<F>>
                <<<(unsigned)ceil_div(threads, kThreads), kThreads, 0, stream>>>(
                src, len, kChunk0, c, buckets, threads > 1 ? list_keys[cur] : nullptr,
                threads > 1 ? list_pts[cur] : nullptr);
            CUZK_CUDA_TRY(cudaGetLastError());
        }
        CUZK_TRY(prof.mark(&cuzk_msm_profile::level0_ms));
        while (threads > 1) {
            len = 2 * threads;
            threads = ceil_div(len, kChunkN);
            PartialSource<F> src{list_keys[cur], list_pts[cur]};
            const int next = cur ^ 1;
            accumulate_kernel<F, PartialSource<F>, 1>
                <<<(unsigned)ceil_div(threads, kThreads), kThreads, 0, stream>>>(
                src, len, kChunkN, c, buckets, threads > 1 ? list_keys[next] : nullptr,
                threads > 1 ? list_pts[next] : nullptr);
            CUZK_CUDA_TRY(cudaGetLastError());
            cur = next;
        }
        CUZK_TRY(prof.mark(&cuzk_msm_profile::levels_ms));
    }
    return ok();
}

// Step 4 over the buckets (the parts' arrays added first), then the window
// sums to the host; waits for the stream.
template <class F>
cuzk_status finish(const Plan& p, char* scratch, void* window_sums, cuzk_msm_profile* profile,
                   cudaStream_t stream) {
    using X = Xyzz<F>;
    Profile prof(profile, stream);
    CUZK_TRY(prof.start());
    auto* buckets = reinterpret_cast<X*>(scratch + p.buckets);
    const uint64_t count = (uint64_t)p.bucket_windows * p.half;
    for (uint32_t k = 1; k < p.parts; ++k) {
        buckets_add_kernel<F><<<(unsigned)ceil_div(count, kSegThreads), kSegThreads, 0, stream>>>(
            buckets, reinterpret_cast<const X*>(scratch + p.buckets + k * p.bucket_bytes), count);
        CUZK_CUDA_TRY(cudaGetLastError());
    }
    // Bucket reduction: levels of segments (see segments_smem_kernel), each
    // level's T summed per window by a tree of kReduceGroup, then Horner.
    const uint32_t windows = p.bucket_windows;
    X* tbuf = reinterpret_cast<X*>(scratch + p.segs);
    X* tbuf2 = reinterpret_cast<X*>(scratch + p.segs2);
    X* rbuf[2] = {reinterpret_cast<X*>(scratch + p.r0), reinterpret_cast<X*>(scratch + p.r1)};
    X* level_sums = reinterpret_cast<X*>(scratch + p.level_sums);
    X* win = reinterpret_cast<X*>(scratch + p.win);
    const X* level_in = buckets;
    uint64_t per = p.half;
    uint32_t shift = 0;
    uint32_t levels = 0;
    int rcur = 0;
    for (;;) {
        if (levels == kMaxLevels)
            return cuzk::fail(CUZK_ERR_INTERNAL, 0, "cuzk_msm_finish: more than %u reduction levels",
                              kMaxLevels);
        const uint32_t seg = per < kSegment ? (uint32_t)per : kSegment;
        const bool last = per <= kSegment;
        uint64_t per_window = per / seg;
        const uint64_t threads = (uint64_t)windows * per_window;
        // The running sums in shared memory (segments_smem_kernel): faster
        // than in registers for G2, G1 unchanged or slightly faster
        // (BENCHMARKS.md).
        segments_smem_kernel<F>
            <<<(unsigned)ceil_div(threads, kSegThreads), kSegThreads, 0, stream>>>(
                level_in, windows, per, shift, seg, tbuf, last ? nullptr : rbuf[rcur]);
        CUZK_CUDA_TRY(cudaGetLastError());
        X* in = tbuf;
        X* out = tbuf2;
        while (per_window > 1) {
            const uint32_t g =
                per_window < kReduceGroup ? (uint32_t)per_window : kReduceGroup;
            const uint64_t count = (uint64_t)windows * (per_window / g);
            group_sum_kernel<F><<<(unsigned)ceil_div(count, 64), 64, 0, stream>>>(in, count, g,
                                                                                out);
            CUZK_CUDA_TRY(cudaGetLastError());
            per_window /= g;
            X* tmp = in;
            in = out;
            out = tmp;
        }
        CUZK_CUDA_TRY(cudaMemcpyAsync(level_sums + (uint64_t)levels * windows, in,
                                      (uint64_t)windows * sizeof(X), cudaMemcpyDeviceToDevice,
                                      stream));
        ++levels;
        if (last) break;
        level_in = rbuf[rcur];
        rcur ^= 1;
        per /= seg;
        shift = 1;
    }
    combine_levels_kernel<F><<<(unsigned)ceil_div(windows, 32), 32, 0, stream>>>(
        level_sums, windows, levels, kLogSegment, win);
    CUZK_CUDA_TRY(cudaGetLastError());
    CUZK_TRY(prof.mark(&cuzk_msm_profile::reduce_ms));
    CUZK_CUDA_TRY(cudaMemcpyAsync(window_sums, win, (uint64_t)windows * sizeof(X),
                                  cudaMemcpyDeviceToHost, stream));
    CUZK_CUDA_TRY(cudaStreamSynchronize(stream));
    return ok();
}

// out[j n + i] = 2^(c j) bases[i] for j < W, i < n.
template <class F>
cuzk_status precompute(const Affine<F>* bases, uint64_t n, uint32_t c, uint32_t windows,
                       Affine<F>* out, cudaStream_t stream) {
    CUZK_CUDA_TRY(cudaMemcpyAsync(out, bases, n * sizeof(Affine<F>), cudaMemcpyDeviceToDevice,
                                  stream));
    const uint64_t threads = ceil_div(n, kShiftChunk);
    for (uint32_t j = 1; j < windows; ++j) {
        shift_kernel<F><<<(unsigned)ceil_div(threads, 128), 128, 0, stream>>>(
            out + (j - 1) * n, out + j * n, n, c);
        CUZK_CUDA_TRY(cudaGetLastError());
    }
    CUZK_CUDA_TRY(cudaStreamSynchronize(stream));
    return ok();
}

cuzk_status check_scratch(const char* f, const Plan& p, const void* scratch, uint64_t bytes) {
    if (scratch == nullptr)
        return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0, "%s: null scratch", f);
    if (bytes < p.total)
        return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0,
                          "%s: scratch of %llu bytes, %llu needed (the plan's scratch.total)",
                          f, (unsigned long long)bytes, (unsigned long long)p.total);
    return ok();
}

}  // namespace
