// cuzk MSM kernels: Pippenger's bucket method over BLS12-381 G1 and G2
// (see include/cuzk/msm.h for the interface and the layouts); part of
// msm.cu, one translation unit.
//
// One MSM of n points with window size c, W = ceil(256 / c) windows and
// B = 2^(c-1) buckets a window:
//  1. digits: each scalar (Montgomery form) is turned into its integer and
//     cut into W signed digits d in [-2^(c-1), 2^(c-1)] (a digit above
//     2^(c-1) becomes d - 2^c and carries one into the next window). As
//     scalars are below 2^255 and W c >= 256, the top window never carries
//     out. Each (window, digit) pair becomes a key (window << c | |d| - 1,
//     or the window's "zero" key B when d = 0) and a value (point index,
//     sign of d in bit 31).
//  2. sort: the pairs of each window are sorted by key (CUB's radix sort on
//     the low c bits), so that every bucket's points are contiguous.
//  3. accumulate: thread t of a level takes the `chunk` consecutive sorted
//     entries [t chunk, (t+1) chunk) and sums each run of equal keys in
//     XYZZ coordinates (mixed additions from the affine bases at level 0).
//     A run that is a whole bucket is written to the bucket array. A run cut
//     by the chunk's ends is a partial sum: each thread leaves exactly two
//     (head, tail; an empty one is an invalid identity with a neighbouring
//     key, so keys stay sorted), and the next level runs the same procedure
//     over those 2T partials, until one thread holds everything. Every
//     thread does the same amount of work however skewed the buckets are
//     (a bucket of millions of points is spread over many threads).
//  4. reduce: sum_b (b + 1) S_b per window, by running sums over segments of
//     16 buckets, in levels: each thread's segment gives T (weighted) and R
//     (plain) sums; sum_b (b + 1) S_b = sum_s T_s + 16 sum_s s R_s, and the
//     second sum is the same problem over R one level down. Each level's T
//     are tree-summed per window; Horner's rule over the levels gives the
//     window sum (see segments_smem_kernel).
// The host combines the window sums: sum_w 2^(c w) window_sum[w].
//
// Precomputed bases (cuzk_msm_precompute: copy j of point i is 2^(c j) P_i
// at j stride + i): every window's digit of scalar i is a digit of copy j of
// point i, so all W n pairs are sorted together on the c bucket bits (keys
// carry no window) into one set of 2^(c-1) buckets, reduced once: the single
// window sum is the MSM. An MSM may come in two parts (points [0, n0) and
// [n0, n), each cuzk_msm_accumulate into its own bucket array, so that the
// second part's scalars are copied in while the first part runs);
// cuzk_msm_finish adds the arrays before step 4.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuzk/bls12_381.cuh"
#include "cuzk/ec.cuh"

using cuzk::Affine;
using cuzk::Fp;
using cuzk::Fp2;
using cuzk::Fr;
using cuzk::Xyzz;

namespace {

constexpr uint32_t kInvalid = 0x80000000u;  // key flag: an empty partial
constexpr uint32_t kChunk0 = 64;             // sorted pairs per thread, level 0
constexpr uint32_t kChunkN = 16;             // partials per thread, later levels
constexpr uint32_t kThreads = 128;           // threads per block, accumulation
// Blocks of kThreads an SM the accumulation kernels are built for
// (__launch_bounds__): G1 at most 168 registers a thread (3 blocks), G2 at
// 255 (2 blocks).
template <class F>
constexpr int kMinBlocksOf = sizeof(F) == sizeof(Fp) ? 3 : 2;
// Bucket reduction: segments of kSegment buckets a thread; each level
// divides the points a window by kSegment (2^23 buckets: at most 6 levels).
constexpr uint32_t kSegment = 16;
constexpr uint32_t kLogSegment = 4;
constexpr uint32_t kMaxLevels = 8;
constexpr uint32_t kReduceGroup = 8;  // partials summed per thread in the tree sum

// ---- loads and stores through 16-byte vectors ---------------------------

__device__ __forceinline__ void ld(Fp& r, const Fp* p) {
    const uint4* s = reinterpret_cast<const uint4*>(p);
#pragma unroll
    for (int i = 0; i < 3; ++i) {
        const uint4 v = s[i];
        r.l[4 * i] = v.x;
        r.l[4 * i + 1] = v.y;
        r.l[4 * i + 2] = v.z;
        r.l[4 * i + 3] = v.w;
    }
}
__device__ __forceinline__ void st(Fp* p, const Fp& v) {
    uint4* d = reinterpret_cast<uint4*>(p);
#pragma unroll
    for (int i = 0; i < 3; ++i)
        d[i] = make_uint4(v.l[4 * i], v.l[4 * i + 1], v.l[4 * i + 2], v.l[4 * i + 3]);
}
__device__ __forceinline__ void ld(Fp2& r, const Fp2* p) {
    ld(r.c0, &p->c0);
    ld(r.c1, &p->c1);
}
__device__ __forceinline__ void st(Fp2* p, const Fp2& v) {
    st(&p->c0, v.c0);
    st(&p->c1, v.c1);
}
template <class F>
__device__ __forceinline__ Affine<F> ld(const Affine<F>* p) {
    Affine<F> r;
    ld(r.x, &p->x);
    ld(r.y, &p->y);
    return r;
}
template <class F>
__device__ __forceinline__ Xyzz<F> ld(const Xyzz<F>* p) {
    Xyzz<F> r;
    ld(r.x, &p->x);
    ld(r.y, &p->y);
    ld(r.zz, &p->zz);
    ld(r.zzz, &p->zzz);
    return r;
}
template <class F>
__device__ __forceinline__ void st(Xyzz<F>* p, const Xyzz<F>& v) {
    st(&p->x, v.x);
    st(&p->y, v.y);
    st(&p->zz, v.zz);
    st(&p->zzz, v.zzz);
}

// ---- 1. digits -----------------------------------------------------------

// stride = 0: plain bases, key (window << c | bucket), value the point's
// index. stride > 0: precomputed bases (window w's copy of point i at
// w stride + i, all windows sharing one set of buckets): key = bucket,
// value = w stride + i. With `index` (non-null), entry i is point index[i]
// and scalar index[i] (`scalar_indexed`) or i (see cuzk_msm_part); pairs
// are still written at entry i.
__global__ void digits_kernel(const Fr* __restrict__ scalars, const uint32_t* __restrict__ index,
                              bool scalar_indexed, uint64_t n, uint32_t c, uint32_t w0,
                              uint32_t nw, uint64_t stride, uint32_t* __restrict__ keys,
                              uint32_t* __restrict__ vals) {
    const uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    const uint64_t src = index != nullptr ? index[i] : i;
    const uint4* s = reinterpret_cast<const uint4*>(scalars + (scalar_indexed ? src : i));
    const uint4 a = s[0], b = s[1];
    Fr m;
    m.l[0] = a.x; m.l[1] = a.y; m.l[2] = a.z; m.l[3] = a.w;
    m.l[4] = b.x; m.l[5] = b.y; m.l[6] = b.z; m.l[7] = b.w;
    // Montgomery form to integer: (x R) * 1 * R^-1 = x.
    Fr raw_one = Fr::zero();
    raw_one.l[0] = 1;
    const Fr x = m * raw_one;
    uint32_t limbs[9];
#pragma unroll
    for (int k = 0; k < 8; ++k) limbs[k] = x.l[k];
    limbs[8] = 0;
    const uint32_t half = 1u << (c - 1);
    const uint32_t mask = (1u << c) - 1;
    uint32_t carry = 0;
    for (uint32_t w = 0; w < w0 + nw; ++w) {
        const uint32_t o = w * c;  // < 256: the limb index o/32 + 1 <= 8
        const uint32_t li = o >> 5;
        const uint64_t v = ((((uint64_t)limbs[li + 1]) << 32) | limbs[li]) >> (o & 31);
        uint32_t d = ((uint32_t)v & mask) + carry;
        uint32_t neg = 0;
        if (d > half) {  // d - 2^c, negative: |digit| = 2^c - d
            d = (1u << c) - d;
            neg = 1;
            carry = 1;
        } else {
            carry = 0;
        }
        if (w >= w0) {
            const uint64_t at = (uint64_t)(w - w0) * n + i;
            const uint32_t bucket = d == 0 ? half : d - 1;
            keys[at] = stride == 0 ? (w << c) | bucket : bucket;
            vals[at] = (uint32_t)(stride == 0 ? src : w * stride + src) | (neg << 31);
        }
    }
}

// ---- 3. accumulation -----------------------------------------------------

// Level 0: sorted (key, index|sign) pairs over the affine bases.
template <class F>
struct PairSource {
    const uint32_t* keys;
    const uint32_t* vals;
    const Affine<F>* bases;
    __device__ __forceinline__ uint32_t key(uint64_t j) const { return keys[j]; }
    __device__ __forceinline__ bool add(Xyzz<F>& acc, uint64_t j) const {
        const uint32_t v = vals[j];
        Affine<F> p = ld(bases + (v & 0x7fffffffu));
        if (v >> 31) p.y = -p.y;
        acc = cuzk::xyzz_madd(acc, p);
        return true;
    }
};

// Later levels: (key, XYZZ partial), invalid partials flagged in the key.
template <class F>
struct PartialSource {
    const uint32_t* keys;
    const Xyzz<F>* pts;
    __device__ __forceinline__ uint32_t key(uint64_t j) const { return keys[j] & ~kInvalid; }
    __device__ __forceinline__ bool add(Xyzz<F>& acc, uint64_t j) const {
        if (keys[j] & kInvalid) return false;
        acc = cuzk::xyzz_add(acc, ld(pts + j));
        return true;
    }
};

// Where a run's sum goes when it is flushed (see accumulate_kernel): a whole
// bucket goes to the bucket array; a run cut by the chunk's start is the
// thread's head partial, one cut by its end the tail partial. The partials
// are stored at once (not held in registers through the loop: for G2 that
// would be 192 live registers).
struct Flush {
    uint32_t head_key = 0, tail_key = 0;
    bool have_head = false, have_tail = false;
    template <class F>
    __device__ __forceinline__ void put(const Xyzz<F>& acc, bool starts, bool ends, bool any,
                                        uint32_t k, uint32_t c, uint64_t t,
                                        Xyzz<F>* __restrict__ buckets,
                                        Xyzz<F>* __restrict__ out_pts) {
        const uint32_t half = 1u << (c - 1);
        const uint32_t mask = (1u << c) - 1;
        if (starts && ends) {
            if (any) st(buckets + (uint64_t)(k >> c) * half + (k & mask), acc);
        } else if (!starts) {
            if (any && out_pts != nullptr) st(out_pts + 2 * t, acc);
            head_key = k | (any ? 0u : kInvalid);
            have_head = true;
        } else {
            if (any && out_pts != nullptr) st(out_pts + 2 * t + 1, acc);
            tail_key = k | (any ? 0u : kInvalid);
            have_tail = true;
        }
    }
    // Keys of the two partials; a missing one is an invalid partial (its
    // point is never read) with a neighbouring key, so keys stay sorted.
    __device__ __forceinline__ void finish(uint32_t k_first, uint64_t t,
                                           uint32_t* __restrict__ out_keys) {
        if (out_keys == nullptr) return;  // the last level: every run was whole
        if (!have_head) head_key = (have_tail ? tail_key : k_first) | kInvalid;
        if (!have_tail) tail_key = head_key | kInvalid;
        out_keys[2 * t] = head_key;
        out_keys[2 * t + 1] = tail_key;
    }
};

template <class F, class Src, int MinBlocks>
__global__ void __launch_bounds__(kThreads, MinBlocks)
    accumulate_kernel(Src src, uint64_t len, uint32_t chunk, uint32_t c,
                      Xyzz<F>* __restrict__ buckets, uint32_t* __restrict__ out_keys,
                      Xyzz<F>* __restrict__ out_pts) {
    const uint64_t t = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
    const uint64_t begin = t * chunk;
    if (begin >= len) return;
    const uint64_t end = begin + chunk < len ? begin + chunk : len;
    const uint32_t half = 1u << (c - 1);
    const uint32_t mask = (1u << c) - 1;
    const uint32_t k_first = src.key(begin);
    const bool continues = begin > 0 && src.key(begin - 1) == k_first;
    Flush out;
    // One flat loop (every lane adds one entry an iteration, so a warp's
    // lanes stay converged through the additions); a run is flushed when the
    // next key differs or the chunk ends.
    Xyzz<F> acc = Xyzz<F>::identity();
    bool any = false;
    bool starts = !continues;  // the current run starts its bucket's list
    uint32_t k = k_first;
    for (uint64_t j = begin; j < end; ++j) {
        const bool zero_digit = (k & mask) == half;
        if (!zero_digit) any |= src.add(acc, j);
        const uint32_t next = j + 1 < len ? src.key(j + 1) : 0xffffffffu;
        if (next == k && j + 1 < end) continue;
        if (!zero_digit) out.put(acc, starts, next != k, any, k, c, t, buckets, out_pts);
        acc = Xyzz<F>::identity();
        any = false;
        starts = true;
        k = next;
    }
    out.finish(k_first, t, out_keys);
}

// ---- level 0 with the accumulator in shared memory -----------------------

// One thread's XYZZ accumulator in shared memory, laid out coordinate-word
// major ([16-byte word][thread]) so that a warp's 16-byte accesses are
// conflict-free. Coordinates are read where a formula needs them, so the
// registers hold only the temporaries of one step.
template <class F, uint32_t Stride = kThreads>
struct SmemAcc {
    static constexpr int kWords = sizeof(F) / 16;  // 16-byte words a coordinate
    uint4* p;                                        // &smem[0][threadIdx.x]
    __device__ __forceinline__ F ld(int coord) const {
        F r;
        uint32_t* w = reinterpret_cast<uint32_t*>(&r);
#pragma unroll
        for (int i = 0; i < kWords; ++i) {
            const uint4 v = p[(coord * kWords + i) * Stride];
            w[4 * i] = v.x;
            w[4 * i + 1] = v.y;
            w[4 * i + 2] = v.z;
            w[4 * i + 3] = v.w;
        }
        return r;
    }
    __device__ __forceinline__ void st(int coord, const F& v) const {
        const uint32_t* w = reinterpret_cast<const uint32_t*>(&v);
#pragma unroll
        for (int i = 0; i < kWords; ++i)
            p[(coord * kWords + i) * Stride] = make_uint4(w[4 * i], w[4 * i + 1], w[4 * i + 2],
                                                            w[4 * i + 3]);
    }
    __device__ __forceinline__ Xyzz<F> load() const { return {ld(0), ld(1), ld(2), ld(3)}; }
    __device__ __forceinline__ void store(const Xyzz<F>& v) const {
        st(0, v.x);
        st(1, v.y);
        st(2, v.zz);
        st(3, v.zzz);
    }
};

// acc += q (madd-2008-s, as cuzk::xyzz_madd, with the same exceptional
// cases), acc in shared memory; `fresh`: acc holds nothing yet (the
// identity). Returns whether acc is the identity afterwards.
template <class F, uint32_t Stride>
__device__ __forceinline__ bool madd_smem(const SmemAcc<F, Stride>& a, bool fresh,
                                          const Affine<F>& q) {
    if (q.is_identity()) return fresh;
    if (fresh) {
        a.st(0, q.x);
        a.st(1, q.y);
        a.st(2, F::one());
        a.st(3, F::one());
        return false;
    }
    const F pp_ = q.x * a.ld(2) - a.ld(0); /* EFD's P = U2 - X1 */
    const F r = q.y * a.ld(3) - a.ld(1);   /* EFD's R = S2 - Y1 */
    if (pp_.is_zero()) {
        if (!r.is_zero()) return true;  // q = -acc
        const Xyzz<F> d = cuzk::xyzz_dbl(a.load());
        a.store(d);
        return d.is_identity();
    }
    const F pp = pp_.sqr();
    const F ppp = pp_ * pp;
    a.st(2, a.ld(2) * pp);
    const F qq = a.ld(0) * pp; /* EFD's Q */
    a.st(3, a.ld(3) * ppp);
    const F x3 = r.sqr() - ppp - qq.dbl();
    a.st(0, x3);
    a.st(1, r * (qq - x3) - a.ld(1) * ppp);
    return false;
}

// One XYZZ point in global memory, read a coordinate at a time (the
// operand interface of add_smem, as SmemAcc).
template <class F>
struct GlobalXyzz {
    const Xyzz<F>* p;
    __device__ __forceinline__ F ld(int coord) const {
        F r;
        ::ld(r, &p->x + coord);
        return r;
    }
};

// acc += q (add-2008-s, as cuzk::xyzz_add, with the same exceptional cases),
// acc in shared memory, q read a coordinate at a time where the formula
// needs it (a SmemAcc or a GlobalXyzz, not aliasing acc).
template <class F, class A, class Q>
__device__ __forceinline__ void add_smem(const A& a, const Q& q) {
    if (q.ld(2).is_zero()) return;  // q is the identity
    if (a.ld(2).is_zero()) {
        for (int k = 0; k < 4; ++k) a.st(k, q.ld(k));
        return;
    }
    const F u1 = a.ld(0) * q.ld(2);
    const F s1 = a.ld(1) * q.ld(3);
    const F pp_ = q.ld(0) * a.ld(2) - u1; /* EFD's P = U2 - U1 */
    const F r = q.ld(1) * a.ld(3) - s1;   /* EFD's R = S2 - S1 */
    a.st(2, a.ld(2) * q.ld(2));
    a.st(3, a.ld(3) * q.ld(3));
    if (pp_.is_zero()) {
        const Xyzz<F> d = r.is_zero() ? cuzk::xyzz_dbl(Xyzz<F>{u1, s1, a.ld(2), a.ld(3)})
                                      : Xyzz<F>::identity();
        a.store(d);
        return;
    }
    const F pp = pp_.sqr();
    const F ppp = pp_ * pp;
    a.st(2, a.ld(2) * pp);
    a.st(3, a.ld(3) * ppp);
    const F qq = u1 * pp; /* EFD's Q */
    const F x3 = r.sqr() - ppp - qq.dbl();
    a.st(0, x3);
    a.st(1, r * (qq - x3) - s1 * ppp);
}

// Level 0 as accumulate_kernel over PairSource, with the accumulator in
// shared memory (SmemAcc): fewer live registers, for G2's spills.
template <class F, int MinBlocks>
__global__ void __launch_bounds__(kThreads, MinBlocks)
    level0_smem_kernel(PairSource<F> src, uint64_t len, uint32_t chunk, uint32_t c,
                       Xyzz<F>* __restrict__ buckets, uint32_t* __restrict__ out_keys,
                       Xyzz<F>* __restrict__ out_pts) {
    __shared__ uint4 smem[4 * SmemAcc<F>::kWords * kThreads];
    const uint64_t t = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
    const uint64_t begin = t * chunk;
    if (begin >= len) return;
    const SmemAcc<F> a{smem + threadIdx.x};
    const uint64_t end = begin + chunk < len ? begin + chunk : len;
    const uint32_t half = 1u << (c - 1);
    const uint32_t mask = (1u << c) - 1;
    const uint32_t k_first = src.key(begin);
    const bool continues = begin > 0 && src.key(begin - 1) == k_first;
    Flush out;
    bool fresh = true;  // the accumulator is the identity
    bool any = false;
    bool starts = !continues;
    uint32_t k = k_first;
    for (uint64_t j = begin; j < end; ++j) {
        const bool zero_digit = (k & mask) == half;
        if (!zero_digit) {
            const uint32_t v = src.vals[j];
            Affine<F> q = ld(src.bases + (v & 0x7fffffffu));
            if (v >> 31) q.y = -q.y;
            fresh = madd_smem(a, fresh, q);
            any = true;
        }
        const uint32_t next = j + 1 < len ? src.key(j + 1) : 0xffffffffu;
        if (next == k && j + 1 < end) continue;
        if (!zero_digit) {
            const Xyzz<F> acc = fresh ? Xyzz<F>::identity() : a.load();
            out.put(acc, starts, next != k, any, k, c, t, buckets, out_pts);
        }
        fresh = true;
        any = false;
        starts = true;
        k = next;
    }
    out.finish(k_first, t, out_keys);
}

// ---- 4. bucket reduction -------------------------------------------------

// One level of sum_b (b + 1) S_b over every window (S: W x P points,
// window-major; element b of a window is S[w P + b + shift], the identity
// past the end). Thread (w, s) takes the L elements [s L, s L + L) and, by
// running sums from the top, writes T[w, s] = sum (b - s L + 1) S_b and
// R[w, s] = sum S_b. Then
//   sum_b (b + 1) S_b = sum_s T_s + L sum_s s R_s,
// and sum_s s R_s is the same problem one level down, over R shifted by
// one (R_0 weighs 0): no thread multiplies a point by a scalar.
// The two running sums live in shared memory (add_smem), kSegThreads
// threads a block: fewer live registers than holding them in registers,
// which G2 spills. Each bucket is read from global memory a coordinate at a
// time, where the addition needs it.
constexpr uint32_t kSegThreads = 64;
template <class F>
__global__ void __launch_bounds__(kSegThreads)
    segments_smem_kernel(const Xyzz<F>* __restrict__ S, uint32_t windows, uint64_t per,
                         uint32_t shift, uint32_t seg, Xyzz<F>* __restrict__ T,
                         Xyzz<F>* __restrict__ R) {
    using Acc = SmemAcc<F, kSegThreads>;
    __shared__ uint4 smem[2 * 4 * Acc::kWords * kSegThreads];
    const uint64_t t = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
    const uint64_t per_window = per / seg;
    if (t >= (uint64_t)windows * per_window) return;
    const uint64_t w = t / per_window;
    const uint64_t lo = (t % per_window) * seg;
    const Xyzz<F>* base = S + w * per;
    const Acc r{smem + threadIdx.x};
    const Acc sum{smem + 4 * Acc::kWords * kSegThreads + threadIdx.x};
    r.store(Xyzz<F>::identity());
    sum.store(Xyzz<F>::identity());
    for (uint64_t k = lo + seg; k-- > lo;) {
        if (k + shift < per) add_smem<F>(r, GlobalXyzz<F>{base + k + shift});
        add_smem<F>(sum, r);
    }
    st(T + t, sum.load());
    if (R != nullptr) st(R + t, r.load());
}

// Window sums from the levels' sums (level_sums: levels x W): Horner's rule,
// V = sum_k L^k level_sums[k] with L = 2^log_seg.
template <class F>
__global__ void combine_levels_kernel(const Xyzz<F>* __restrict__ level_sums, uint32_t windows,
                                      uint32_t levels, uint32_t log_seg,
                                      Xyzz<F>* __restrict__ out) {
    const uint32_t w = blockIdx.x * blockDim.x + threadIdx.x;
    if (w >= windows) return;
    Xyzz<F> acc = ld(level_sums + (uint64_t)(levels - 1) * windows + w);
    for (uint32_t k = levels - 1; k-- > 0;) {
        for (uint32_t i = 0; i < log_seg; ++i) acc = cuzk::xyzz_dbl(acc);
        acc = cuzk::xyzz_add(acc, ld(level_sums + (uint64_t)k * windows + w));
    }
    st(out + w, acc);
}

// out[i] = sum of in[i g .. i g + g) for i < count.
template <class F>
__global__ void group_sum_kernel(const Xyzz<F>* __restrict__ in, uint64_t count, uint32_t g,
                                 Xyzz<F>* __restrict__ out) {
    const uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
    if (i >= count) return;
    Xyzz<F> acc = Xyzz<F>::identity();
    for (uint32_t k = 0; k < g; ++k) acc = cuzk::xyzz_add(acc, ld(in + i * g + k));
    st(out + i, acc);
}

// A[i] += B[i] for i < count (the buckets of a second part of the points
// added into the first's; see cuzk_msm_finish).
template <class F>
__global__ void __launch_bounds__(kSegThreads)
    buckets_add_kernel(Xyzz<F>* __restrict__ A, const Xyzz<F>* __restrict__ B, uint64_t count) {
    using Acc = SmemAcc<F, kSegThreads>;
    __shared__ uint4 smem[4 * Acc::kWords * kSegThreads];
    const uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
    if (i >= count) return;
    const Acc a{smem + threadIdx.x};
    a.store(ld(A + i));
    add_smem<F>(a, GlobalXyzz<F>{B + i});
    st(A + i, a.load());
}

// ---- precomputed bases ----------------------------------------------------

// Points a thread shifts and brings back to affine with one inversion
// (Montgomery's trick: P. L. Montgomery, "Speeding the Pollard and elliptic
// curve methods of factorization", Math. Comp. 48(177), 1987, sec. 10.3.1).
constexpr uint32_t kShiftChunk = 8;

// out[i] = 2^c in[i] for i < n, affine in and out (identity = (0, 0)):
// c Jacobian doublings a point, then one inversion for kShiftChunk points.
template <class F>
__global__ void shift_kernel(const Affine<F>* __restrict__ in, Affine<F>* __restrict__ out,
                             uint64_t n, uint32_t c) {
    const uint64_t t = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
    const uint64_t begin = t * kShiftChunk;
    if (begin >= n) return;
    const uint32_t m = n - begin < kShiftChunk ? (uint32_t)(n - begin) : kShiftChunk;
    F z[kShiftChunk], pre[kShiftChunk];
    F prod = F::one();
    for (uint32_t k = 0; k < m; ++k) {
        cuzk::Jacobian<F> p = cuzk::jac_from_affine(ld(in + begin + k));
        for (uint32_t b = 0; b < c; ++b) p = cuzk::jac_dbl(p);
        // The Jacobian x, y wait in the output slot for the inversion; an
        // identity takes z = 1 in the product and is written as (0, 0).
        Affine<F> xy{p.x, p.y};
        if (p.z.is_zero()) {
            xy = Affine<F>::identity();
            p.z = F::one();
        }
        st(&out[begin + k].x, xy.x);
        st(&out[begin + k].y, xy.y);
        z[k] = p.z;
        prod = prod * p.z;
        pre[k] = prod;
    }
    F inv = prod.inverse();  // (z_0 ... z_{m-1})^-1
    for (uint32_t k = m; k-- > 0;) {
        const F zi = k > 0 ? inv * pre[k - 1] : inv;  // z_k^-1
        inv = inv * z[k];
        Affine<F> q = ld(out + begin + k);
        if (q.is_identity()) continue;
        const F zi2 = zi.sqr();
        q.x = q.x * zi2;
        q.y = q.y * zi2 * zi;
        st(&out[begin + k].x, q.x);
        st(&out[begin + k].y, q.y);
    }
}

}  // namespace
