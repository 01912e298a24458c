// cuzk MSM plan: the scratch layout of one MSM (offsets of the digit
// pairs, sort storage, partial lists, buckets and reduction buffers) from
// its curve, size, window and parts, checked; part of msm.cu, one
// translation unit.
#pragma once

#include <cub/device/device_radix_sort.cuh>

#include <cstdint>
#include <cstring>

#include "cuzk/cuda_status.cuh"
#include "cuzk/msm.h"
#include "kernels.cuh"

using cuzk::ok;

namespace {

uint64_t align_up(uint64_t x) { return (x + 255) & ~uint64_t(255); }

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

uint32_t num_windows(uint32_t c) { return (256 + c - 1) / c; }

// Offsets (bytes) of every scratch array. `n`: the most points of one part
// (see cuzk_msm_accumulate); `merged`: precomputed bases, every window's
// pairs sorted together into one set of buckets.
struct Plan {
    uint32_t windows, half, batch, seg;
    uint32_t bucket_windows;  // windows with their own buckets: W, or 1 merged
    uint32_t parts;           // bucket arrays, one a part of the points
    bool merged;
    uint64_t point_bytes;  // one XYZZ point
    uint64_t sort_items;   // pairs of one radix sort
    uint64_t list_len;     // entries of level-1 partial lists
    uint64_t keys_in, vals_in, keys_out, vals_out;
    uint64_t list_a_keys, list_a_pts, list_b_keys, list_b_pts;
    uint64_t cub, cub_bytes, buckets, bucket_bytes, segs, segs2, r0, r1, level_sums, win, total;
    uint32_t curve, c;  // the request: curve and window bits
    uint64_t n;         // the most points of one part
};

cuzk_status make_plan(uint32_t curve, uint64_t n, uint32_t c, uint32_t batch, bool merged,
                      uint32_t parts, Plan& p) {
    if (curve != CUZK_MSM_G1 && curve != CUZK_MSM_G2)
        return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0,
                          "cuzk_msm: curve %u is neither G1 (1) nor G2 (2)", curve);
    const uint32_t max_c = merged ? CUZK_MSM_MAX_PRECOMPUTED_WINDOW : CUZK_MSM_MAX_WINDOW;
    if (c < CUZK_MSM_MIN_WINDOW || c > max_c)
        return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0,
                          "cuzk_msm: window of %u bits is outside %u..=%u", c,
                          CUZK_MSM_MIN_WINDOW, max_c);
    if (parts != 1 && parts != 2)
        return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0,
                          "cuzk_msm: %u parts (give 1 or 2)", parts);
    p.curve = curve;
    p.c = c;
    p.n = n;
    p.windows = num_windows(c);
    const uint64_t limit = merged ? CUZK_MSM_MAX_POINTS / p.windows : CUZK_MSM_MAX_POINTS;
    if (n > limit)
        return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0,
                          "cuzk_msm: %llu points exceed the limit of %llu a call; split the "
                          "MSM and add the results",
                          (unsigned long long)n, (unsigned long long)limit);
    p.merged = merged;
    p.parts = parts;
    p.half = 1u << (c - 1);
    p.batch = merged || batch == 0 || batch > p.windows ? p.windows : batch;
    p.bucket_windows = merged ? 1 : p.windows;
    p.point_bytes = curve == CUZK_MSM_G1 ? sizeof(Xyzz<Fp>) : sizeof(Xyzz<Fp2>);
    const uint64_t entries = n * p.batch;
    p.sort_items = merged ? entries : n;
    const uint64_t l1 = 2 * ceil_div(entries, kChunk0);
    const uint64_t l2 = 2 * ceil_div(l1, kChunkN);
    p.list_len = l1;
    uint64_t at = 0;
    // Region 1: the unsorted pairs, later reused by the partial lists.
    const uint64_t pairs = align_up(entries * 4);
    p.keys_in = at;
    p.vals_in = at + pairs;
    p.list_a_keys = at;
    p.list_a_pts = p.list_a_keys + align_up(l1 * 4);
    p.list_b_keys = p.list_a_pts + align_up(l1 * p.point_bytes);
    p.list_b_pts = p.list_b_keys + align_up(l2 * 4);
    const uint64_t lists_end = p.list_b_pts + align_up(l2 * p.point_bytes);
    at = (2 * pairs > lists_end ? 2 * pairs : lists_end);
    p.keys_out = at;
    p.vals_out = at + pairs;
    at += 2 * pairs;
    p.cub = at;
    p.cub_bytes = 0;
    if (n > 0) {
        size_t bytes = 0;
        cudaError_t e = cub::DeviceRadixSort::SortPairs(
            nullptr, bytes, (const uint32_t*)nullptr, (uint32_t*)nullptr,
            (const uint32_t*)nullptr, (uint32_t*)nullptr, (int)p.sort_items, 0, (int)c);
        if (e != cudaSuccess) return cuzk::cuda_status(e, "cub::DeviceRadixSort::SortPairs (size)");
        p.cub_bytes = bytes;
    }
    at += align_up(p.cub_bytes);
    p.buckets = at;
    p.bucket_bytes = align_up((uint64_t)p.bucket_windows * p.half * p.point_bytes);
    at += parts * p.bucket_bytes;
    // Bucket reduction (segments of kSegment): T of a level, the tree sum's
    // second buffer, two R buffers (a level's R is the next level's input),
    // one point a window a level, and the window sums.
    p.seg = kSegment < p.half ? kSegment : p.half;
    const uint64_t level0 = (uint64_t)p.bucket_windows * (p.half / p.seg);
    p.segs = at;  // T
    at += align_up(level0 * p.point_bytes);
    p.segs2 = at;  // tree-sum output
    at += align_up(level0 * p.point_bytes);
    p.r0 = at;
    at += align_up(level0 * p.point_bytes);
    p.r1 = at;
    at += align_up(level0 * p.point_bytes);
    p.level_sums = at;
    at += align_up((uint64_t)kMaxLevels * p.bucket_windows * p.point_bytes);
    p.win = at;
    at += align_up((uint64_t)p.bucket_windows * p.point_bytes);
    p.total = at;
    return ok();
}

// Steps 1-3 for n points (one part) into bucket array `part`; queued, not
// waited for. `stride`: 0 for plain bases, else the precomputed copies'
// stride (points).
// The C ABI's view of a plan.
cuzk_msm_plan to_public(const Plan& p) {
    cuzk_msm_plan o;
    std::memset(&o, 0, sizeof o);
    o.curve = p.curve;
    o.window_bits = p.c;
    o.plan_n = p.n;
    o.windows = p.windows;
    o.windows_per_batch = p.batch;
    o.precomputed = p.merged ? 1 : 0;
    o.parts = p.parts;
    cuzk_msm_scratch_layout& s = o.scratch;
    s.keys_in = p.keys_in;
    s.vals_in = p.vals_in;
    s.keys_out = p.keys_out;
    s.vals_out = p.vals_out;
    s.list_a_keys = p.list_a_keys;
    s.list_a_pts = p.list_a_pts;
    s.list_b_keys = p.list_b_keys;
    s.list_b_pts = p.list_b_pts;
    s.sort = p.cub;
    s.sort_bytes = p.cub_bytes;
    s.buckets = p.buckets;
    s.bucket_bytes = p.bucket_bytes;
    s.segs = p.segs;
    s.segs2 = p.segs2;
    s.r0 = p.r0;
    s.r1 = p.r1;
    s.level_sums = p.level_sums;
    s.window_sums = p.win;
    s.total = p.total;
    return o;
}

// The internal plan of a caller's plan: made again from its request fields
// and checked field by field against it, so that a plan not from
// cuzk_msm_plan_make (or made for another device's sort) is refused.
cuzk_status from_public(const char* f, const cuzk_msm_plan* in, Plan& p) {
    if (in == nullptr) return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0, "%s: null plan", f);
    if (in->precomputed > 1)
        return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0, "%s: precomputed = %u (give 0 or 1)", f,
                          in->precomputed);
    const cuzk_status s = make_plan(in->curve, in->plan_n, in->window_bits, in->windows_per_batch,
                                    in->precomputed != 0, in->parts, p);
    if (s.code != CUZK_OK) return s;
    const cuzk_msm_plan want = to_public(p);
    // Both are fully initialized (memset, then every field): no padding
    // bytes differ.
    if (std::memcmp(&want, in, sizeof want) != 0)
        return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0,
                          "%s: the plan differs from cuzk_msm_plan_make's for its request "
                          "(make the plan with cuzk_msm_plan_make and do not change it)",
                          f);
    return ok();
}

}  // namespace
