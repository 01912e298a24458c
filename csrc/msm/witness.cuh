// cuzk witness-shaped MSMs (see cuzk_msm_classify in include/cuzk/msm.h):
// the scalars sorted by value into the indices of the ones and of the rest
// (CUB's DeviceSelect over the indices), and the sum of the points at a
// list of indices (the ones' share of the MSM); part of msm.cu, one
// translation unit.
#pragma once

#include <cuda_runtime.h>

#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>

#include <cstdint>
#include <cstring>

#include "cuzk/cuda_status.cuh"
#include "cuzk/msm.h"
#include "kernels.cuh"
#include "plan.cuh"
#include "run.cuh"

namespace {

// ---- classification --------------------------------------------------------

// The class of a scalar in Montgomery form (canonical, below r, as arkworks
// keeps it): 0 is all-zero limbs, 1 is R mod r.
enum ScalarClass : uint32_t { kZero = 0, kOne = 1, kOther = 2 };

__device__ __forceinline__ uint32_t scalar_class(const Fr* __restrict__ scalars, uint32_t i) {
    const uint4* s = reinterpret_cast<const uint4*>(scalars + i);
    const uint4 a = s[0], b = s[1];
    const uint32_t l[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
    bool zero = true, one = true;
#pragma unroll
    for (int k = 0; k < 8; ++k) {
        zero &= l[k] == 0;
        one &= l[k] == cuzk::FrParams::one(k);
    }
    return zero ? kZero : one ? kOne : kOther;
}

// DeviceSelect's predicate over indices: scalar i is of class `want`.
struct HasClass {
    const Fr* scalars;
    uint32_t want;
    __device__ __forceinline__ bool operator()(uint32_t i) const {
        return scalar_class(scalars, i) == want;
    }
};

// Bytes of CUB's selection storage for n items (the larger of the two
// selections', which are the same type and size).
cuzk_status select_storage(uint64_t n, size_t& bytes) {
    bytes = 0;
    if (n == 0) return ok();
    const cudaError_t e = cub::DeviceSelect::If(
        nullptr, bytes, thrust::counting_iterator<uint32_t>(0), (uint32_t*)nullptr,
        (uint64_t*)nullptr, (int64_t)n, HasClass{nullptr, kOne}, (cudaStream_t)0);
    if (e != cudaSuccess) return cuzk::cuda_status(e, "cub::DeviceSelect::If (size)");
    return ok();
}

// Scratch of classify: two counts, then CUB's storage.
constexpr uint64_t kCountsBytes = 256;

cuzk_status classify_scratch(uint64_t n, uint64_t& bytes) {
    size_t cub_bytes = 0;
    const cuzk_status s = select_storage(n, cub_bytes);
    if (s.code != CUZK_OK) return s;
    bytes = kCountsBytes + align_up(cub_bytes);
    return ok();
}

cuzk_status classify(const Fr* scalars, uint64_t n, uint32_t* indices, char* scratch,
                     uint64_t* counts, cudaStream_t stream) {
    counts[0] = counts[1] = 0;
    if (n == 0) return ok();
    auto* d_counts = reinterpret_cast<uint64_t*>(scratch);
    size_t cub_bytes = 0;
    CUZK_TRY(select_storage(n, cub_bytes));
    void* storage = scratch + kCountsBytes;
    const thrust::counting_iterator<uint32_t> all(0);
    size_t bytes = cub_bytes;
    CUZK_CUDA_TRY(cub::DeviceSelect::If(storage, bytes, all, indices, d_counts, (int64_t)n,
                                        HasClass{scalars, kOne}, stream));
    CUZK_CUDA_TRY(cudaMemcpyAsync(counts, d_counts, sizeof(uint64_t), cudaMemcpyDeviceToHost,
                                  stream));
    CUZK_CUDA_TRY(cudaStreamSynchronize(stream));
    bytes = cub_bytes;
    CUZK_CUDA_TRY(cub::DeviceSelect::If(storage, bytes, all, indices + counts[0], d_counts + 1,
                                        (int64_t)n, HasClass{scalars, kOther}, stream));
    CUZK_CUDA_TRY(cudaMemcpyAsync(counts + 1, d_counts + 1, sizeof(uint64_t),
                                  cudaMemcpyDeviceToHost, stream));
    CUZK_CUDA_TRY(cudaStreamSynchronize(stream));
    if (counts[0] + counts[1] > n)
        return cuzk::fail(CUZK_ERR_INTERNAL, 0,
                          "cuzk_msm_classify: %llu ones and %llu others among %llu scalars",
                          (unsigned long long)counts[0], (unsigned long long)counts[1],
                          (unsigned long long)n);
    return ok();
}

// ---- the sum of the points at a list of indices -----------------------------

// At most this many first-level partial sums (2^18: enough threads to fill
// an H200's 132 SMs, and at most 48 MiB of G1 or 96 MiB of G2 partials).
constexpr uint64_t kSumMaxPartials = 1u << 18;
constexpr uint64_t kSumMinChunk = 32;  // points a thread, at least
constexpr uint32_t kSumGroup = 8;      // partials a thread in the tree

struct SumPlan {
    uint64_t chunk, partials, second, total;  // second: the tree's other buffer
};

SumPlan sum_plan(uint64_t count, uint64_t point_bytes) {
    SumPlan p;
    p.chunk = ceil_div(count, kSumMaxPartials);
    if (p.chunk < kSumMinChunk) p.chunk = kSumMinChunk;
    p.partials = count == 0 ? 0 : ceil_div(count, p.chunk);
    p.second = ceil_div(p.partials, kSumGroup);
    p.total = align_up(p.partials * point_bytes) + align_up(p.second * point_bytes);
    return p;
}

// out[t] = sum of bases[idx[j]] for j in [t chunk, (t+1) chunk) ∩ [0, count):
// mixed additions into an XYZZ accumulator in shared memory (as
// level0_smem_kernel).
// The accumulators of a block must fit the 48 KiB of static shared memory.
static_assert(4 * SmemAcc<Fp2>::kWords * kThreads * sizeof(uint4) <= 48 * 1024,
              "sum_indexed_kernel's G2 accumulators pass 48 KiB of shared memory");

template <class F, int MinBlocks>
__global__ void __launch_bounds__(kThreads, MinBlocks)
    sum_indexed_kernel(const Affine<F>* __restrict__ bases, const uint32_t* __restrict__ idx,
                       uint64_t count, uint64_t chunk, Xyzz<F>* __restrict__ out) {
    __shared__ uint4 smem[4 * SmemAcc<F>::kWords * kThreads];
    const uint64_t t = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
    const uint64_t begin = t * chunk;
    if (begin >= count) return;
    const uint64_t end = begin + chunk < count ? begin + chunk : count;
    const SmemAcc<F> a{smem + threadIdx.x};
    bool fresh = true;  // the accumulator is the identity
    for (uint64_t j = begin; j < end; ++j) fresh = madd_smem(a, fresh, ld(bases + idx[j]));
    st(out + t, fresh ? Xyzz<F>::identity() : a.load());
}

// out[i] = sum of in[j] for j in [i g, (i+1) g) ∩ [0, len).
template <class F>
__global__ void __launch_bounds__(kSegThreads)
    range_sum_kernel(const Xyzz<F>* __restrict__ in, uint64_t len, uint32_t g,
                     Xyzz<F>* __restrict__ out) {
    using Acc = SmemAcc<F, kSegThreads>;
    __shared__ uint4 smem[4 * Acc::kWords * kSegThreads];
    const uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
    const uint64_t begin = i * g;
    if (begin >= len) return;
    const uint64_t end = begin + g < len ? begin + g : len;
    const Acc a{smem + threadIdx.x};
    a.store(Xyzz<F>::identity());
    for (uint64_t j = begin; j < end; ++j) add_smem<F>(a, GlobalXyzz<F>{in + j});
    st(out + i, a.load());
}

template <class F>
cuzk_status sum_indexed(const Affine<F>* bases, const uint32_t* idx, uint64_t count,
                        char* scratch, void* sum, cudaStream_t stream) {
    using X = Xyzz<F>;
    const SumPlan p = sum_plan(count, sizeof(X));
    if (count == 0) {
        const X zero = X::identity();
        std::memcpy(sum, &zero, sizeof zero);
        return ok();
    }
    X* buf[2] = {reinterpret_cast<X*>(scratch),
                 reinterpret_cast<X*>(scratch + align_up(p.partials * sizeof(X)))};
    sum_indexed_kernel<F, kMinBlocksOf<F>>
        <<<(unsigned)ceil_div(p.partials, kThreads), kThreads, 0, stream>>>(bases, idx, count,
                                                                            p.chunk, buf[0]);
    CUZK_CUDA_TRY(cudaGetLastError());
    // The tree: each level divides the partials by kSumGroup, alternating
    // between the two buffers (the second holds the first level's output,
    // the larger; later levels fit either).
    uint64_t len = p.partials;
    int cur = 0;
    while (len > 1) {
        const uint64_t next = ceil_div(len, kSumGroup);
        range_sum_kernel<F><<<(unsigned)ceil_div(next, kSegThreads), kSegThreads, 0, stream>>>(
            buf[cur], len, kSumGroup, buf[cur ^ 1]);
        CUZK_CUDA_TRY(cudaGetLastError());
        cur ^= 1;
        len = next;
    }
    CUZK_CUDA_TRY(cudaMemcpyAsync(sum, buf[cur], sizeof(X), cudaMemcpyDeviceToHost, stream));
    CUZK_CUDA_TRY(cudaStreamSynchronize(stream));
    return ok();
}

}  // namespace

// ---- sums of the points selected by bitmasks (several masks at once) -------

namespace {

// Partial sums a mask: 8^5, so that the tree's groups of kSumGroup never
// straddle two masks' partials (each level divides every mask's count by 8
// exactly) and 2^15 threads a group of masks fill the card.
constexpr uint32_t kMaskedPartials = 1u << 15;
static_assert(kSumGroup == 8, "kMaskedPartials is a power of kSumGroup");

// Masks a group. A thread adds each selected point of its share once, into
// the bucket of its pattern (bit i: whether mask i of the group selects
// it), then sums for each mask the buckets whose pattern has its bit. With
// half of the bits set (a Groth16 witness's ones), a point costs
// 1 - 2^-k mixed additions instead of k / 2, plus 2^(k-1) - 1 full
// additions a mask and thread to combine: k = 4 halves the additions of
// masks of 64 points a thread or more.
constexpr uint32_t kGroupMasks = 4;
constexpr uint32_t kPatterns = (1u << kGroupMasks) - 1;  // buckets a thread: non-zero patterns

uint64_t masked_groups(uint64_t sets) { return ceil_div(sets, kGroupMasks); }

// The bits of mask word w that name one of `count` points.
__device__ __forceinline__ uint64_t word_bits(uint64_t w, uint64_t count) {
    const uint64_t left = count - w * 64;
    return left < 64 ? (uint64_t(1) << left) - 1 : ~uint64_t(0);
}

// Bytes of each part of the scratch for `sets` masks of points of
// `point_bytes` (XYZZ) bytes: the partial sums, the tree's second buffer,
// and the pattern buckets (kPatterns a thread of each group).
uint64_t masked_partials_bytes(uint64_t sets, uint64_t point_bytes) {
    return align_up(sets * kMaskedPartials * point_bytes);
}
uint64_t masked_tree_bytes(uint64_t sets, uint64_t point_bytes) {
    return align_up(sets * (kMaskedPartials / kSumGroup) * point_bytes);
}
uint64_t masked_scratch(uint64_t sets, uint64_t point_bytes) {
    return masked_partials_bytes(sets, point_bytes) + masked_tree_bytes(sets, point_bytes) +
           align_up(masked_groups(sets) * kPatterns * kMaskedPartials * point_bytes);
}

// Thread t of group g (blockIdx.y: masks g kGroupMasks onwards) adds the
// points of its share of the call's mask words (word w of the call is word
// first_word + w of a row; bits at or past `count` are ignored) into the
// bucket of their pattern with mixed additions, then, for each mask p of
// the group, adds the buckets whose pattern has p's bit (full additions,
// the accumulator in shared memory), adds partials[p T + t] unless
// `first`, and stores the result there. Buckets live in global memory,
// coordinate-word major over the group's threads (as SmemAcc, stride T),
// and only within one call: a bucket no point reached is skipped. A group
// of one mask adds its points straight into the shared accumulator.
template <class F, int MinBlocks>
__global__ void __launch_bounds__(kThreads, MinBlocks)
    masked_sum_kernel(const Affine<F>* __restrict__ bases, uint64_t count,
                      const uint64_t* __restrict__ masks, uint64_t sets, uint64_t mask_words,
                      uint64_t first_word, uint64_t words_a_thread, bool first,
                      Xyzz<F>* __restrict__ partials, uint4* __restrict__ buckets) {
    __shared__ uint4 smem[4 * SmemAcc<F>::kWords * kThreads];
    const uint64_t t = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
    if (t >= kMaskedPartials) return;
    const uint64_t p0 = blockIdx.y * (uint64_t)kGroupMasks;
    const uint32_t in_group = sets - p0 < kGroupMasks ? (uint32_t)(sets - p0) : kGroupMasks;
    const uint64_t words = (count + 63) / 64;
    const uint64_t w0 = t * words_a_thread;
    const uint64_t w1 = w0 + words_a_thread < words ? w0 + words_a_thread : words;
    constexpr uint64_t kPointWords = 4 * SmemAcc<F>::kWords;  // 16-byte words an XYZZ point
    uint4* const mine =
        buckets + blockIdx.y * (uint64_t)kPatterns * kPointWords * kMaskedPartials + t;
    auto bucket = [&](uint32_t b) {
        return SmemAcc<F, kMaskedPartials>{mine + b * kPointWords * kMaskedPartials};
    };
    const SmemAcc<F> a{smem + threadIdx.x};
    if (in_group == 1) {
        const uint64_t* row = masks + p0 * mask_words + first_word;
        bool empty = true;  // the accumulator is the identity
        for (uint64_t w = w0; w < w1; ++w) {
            uint64_t bits = row[w] & word_bits(w, count);
            while (bits != 0) {
                const uint64_t j = w * 64 + (uint64_t)(__ffsll((long long)bits) - 1);
                bits &= bits - 1;
                empty = madd_smem(a, empty, ld(bases + j));
            }
        }
        Xyzz<F>* out = partials + p0 * (uint64_t)kMaskedPartials + t;
        if (empty) a.store(Xyzz<F>::identity());
        if (!first) add_smem<F>(a, GlobalXyzz<F>{out});
        st(out, a.load());
        return;
    }
    uint32_t fresh = (1u << kPatterns) - 1;  // bit b: bucket b is the identity
    for (uint64_t w = w0; w < w1; ++w) {
        const uint64_t valid = word_bits(w, count);
        uint64_t m[kGroupMasks];
        uint64_t any = 0;
#pragma unroll
        for (uint32_t i = 0; i < kGroupMasks; ++i) {
            m[i] = i < in_group ? masks[(p0 + i) * mask_words + first_word + w] & valid : 0;
            any |= m[i];
        }
        while (any != 0) {
            const uint32_t bit = (uint32_t)(__ffsll((long long)any) - 1);
            any &= any - 1;
            uint32_t pattern = 0;
#pragma unroll
            for (uint32_t i = 0; i < kGroupMasks; ++i)
                pattern |= (uint32_t)((m[i] >> bit) & 1) << i;
            const uint32_t b = pattern - 1;
            const bool was = ((fresh >> b) & 1) != 0;
            const bool now = madd_smem(bucket(b), was, ld(bases + w * 64 + bit));
            fresh = (fresh & ~(1u << b)) | ((uint32_t)now << b);
        }
    }
    for (uint32_t i = 0; i < in_group; ++i) {
        a.store(Xyzz<F>::identity());
        for (uint32_t b = 0; b < kPatterns; ++b)
            if ((((b + 1) >> i) & 1) != 0 && ((fresh >> b) & 1) == 0) add_smem<F>(a, bucket(b));
        Xyzz<F>* out = partials + (p0 + i) * (uint64_t)kMaskedPartials + t;
        if (!first) add_smem<F>(a, GlobalXyzz<F>{out});
        st(out, a.load());
    }
}

template <class F>
cuzk_status masked_accumulate(const Affine<F>* bases, uint64_t count, const uint64_t* masks,
                              uint64_t sets, uint64_t mask_words, uint64_t first_word,
                              bool first, char* scratch, cudaStream_t stream) {
    const uint64_t words = ceil_div(count, 64);
    const uint64_t per = words == 0 ? 1 : ceil_div(words, kMaskedPartials);
    const uint64_t point = sizeof(Xyzz<F>);
    const dim3 grid((unsigned)ceil_div(kMaskedPartials, kThreads), (unsigned)masked_groups(sets));
    masked_sum_kernel<F, kMinBlocksOf<F>><<<grid, kThreads, 0, stream>>>(
        bases, count, masks, sets, mask_words, first_word, per, first,
        reinterpret_cast<Xyzz<F>*>(scratch),
        reinterpret_cast<uint4*>(scratch + masked_partials_bytes(sets, point) +
                                 masked_tree_bytes(sets, point)));
    CUZK_CUDA_TRY(cudaGetLastError());
    return ok();
}

// Adds each mask's partials by a tree of range_sum_kernel levels (groups of
// kSumGroup, alternating between the scratch's two buffers) and writes the
// `sets` sums to the host array `sums`. Waits for the stream.
template <class F>
cuzk_status masked_finish(uint64_t sets, char* scratch, void* sums, cudaStream_t stream) {
    using X = Xyzz<F>;
    X* buf[2] = {reinterpret_cast<X*>(scratch),
                 reinterpret_cast<X*>(scratch + masked_partials_bytes(sets, sizeof(X)))};
    uint64_t len = sets * kMaskedPartials;
    int cur = 0;
    while (len > sets) {
        const uint64_t next = len / kSumGroup;
        range_sum_kernel<F><<<(unsigned)ceil_div(next, kSegThreads), kSegThreads, 0, stream>>>(
            buf[cur], len, kSumGroup, buf[cur ^ 1]);
        CUZK_CUDA_TRY(cudaGetLastError());
        cur ^= 1;
        len = next;
    }
    CUZK_CUDA_TRY(
        cudaMemcpyAsync(sums, buf[cur], sets * sizeof(X), cudaMemcpyDeviceToHost, stream));
    CUZK_CUDA_TRY(cudaStreamSynchronize(stream));
    return ok();
}

}  // namespace
