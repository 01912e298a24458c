/*
 * Developer measurement: MSM level 0 (the accumulation over sorted pairs)
 * alone, on synthetic sorted (key, index|sign) pairs of uniformly random
 * signed digits over random bases (the timing does not depend on the points
 * being on the curve), for A/B timing of kernel variants without the Rust
 * bench. Prints each variant's median time and a checksum of the buckets and
 * the valid partials (equal checksums: equal results).
 *
 *   nvcc -O3 -std=c++17 -arch=sm_90 -I csrc/include -I csrc csrc/tests/msm_level0.cu -o msm_level0
 *   ./msm_level0 <curve 1|2> <log n> <c> <windows> [reps]
 *
 * The bench's window for n points is c = clamp(log2(n) - 3, 4, 20) with
 * ceil(256 / c) windows (crates/msm window_bits): 2^22: 19 and 14, 2^24: 20
 * and 13.
 */
#define CUZK_MSM_KERNELS_ONLY
#include "../msm/msm.cu"

#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>

#include "dev_check.cuh"


template <class F>
static void fill_random(F& x, std::mt19937_64& rng) {
    uint32_t* w = reinterpret_cast<uint32_t*>(&x);
    for (size_t i = 0; i < sizeof(F) / 4; ++i) w[i] = (uint32_t)rng();
    // keep every base-field coordinate below 2^380 < p
    for (size_t i = 11; i < sizeof(F) / 4; i += 12) w[i] &= 0x0fffffff;
}

template <class F>
static uint64_t checksum(const std::vector<Xyzz<F>>& b, const std::vector<uint32_t>& keys,
                         const std::vector<Xyzz<F>>& pts) {
    uint64_t h = 1469598103934665603ull;
    auto mix = [&](const void* p, size_t bytes) {
        const uint32_t* w = static_cast<const uint32_t*>(p);
        for (size_t i = 0; i < bytes / 4; ++i) h = (h ^ w[i]) * 1099511628211ull;
    };
    mix(b.data(), b.size() * sizeof(Xyzz<F>));
    for (size_t i = 0; i < keys.size(); ++i) {
        mix(&keys[i], 4);
        if (!(keys[i] & kInvalid)) mix(&pts[i], sizeof(Xyzz<F>));
    }
    return h;
}

template <class F>
static int bench(uint32_t log_n, uint32_t c, uint32_t nw, int reps) {
    using X = Xyzz<F>;
    const uint64_t n = 1ull << log_n, len = n * nw, half = 1ull << (c - 1);
    std::mt19937_64 rng(7);
    std::vector<Affine<F>> bases(n);
    for (auto& p : bases) {
        fill_random(p.x, rng);
        fill_random(p.y, rng);
    }
    // Sorted pairs a window: counting sort of uniformly random signed digits.
    std::vector<uint32_t> keys(len), vals(len);
    std::vector<uint64_t> count(half + 1);
    std::vector<uint32_t> digit(n);
    for (uint32_t w = 0; w < nw; ++w) {
        std::fill(count.begin(), count.end(), 0);
        for (uint64_t i = 0; i < n; ++i) {
            const uint32_t d = (uint32_t)(rng() % (half + 1));  // |digit| in [0, half]
            digit[i] = d == 0 ? (uint32_t)half : d - 1;         // the zero key is `half`
            ++count[digit[i]];
        }
        uint64_t at = 0;
        for (auto& x : count) {
            const uint64_t k = x;
            x = at;
            at += k;
        }
        for (uint64_t i = 0; i < n; ++i) {
            const uint64_t pos = w * n + count[digit[i]]++;
            keys[pos] = (w << c) | digit[i];
            vals[pos] = (uint32_t)i | ((uint32_t)(rng() & 1) << 31);
        }
    }
    const uint64_t threads = ceil_div(len, kChunk0);
    const uint64_t nb = nw * half, nl = 2 * threads;
    Affine<F>* d_bases;
    uint32_t *d_keys, *d_vals, *d_okeys;
    X *d_buckets, *d_opts;
    CHECK(cudaMalloc(&d_bases, n * sizeof(Affine<F>)));
    CHECK(cudaMalloc(&d_keys, len * 4));
    CHECK(cudaMalloc(&d_vals, len * 4));
    CHECK(cudaMalloc(&d_okeys, nl * 4));
    CHECK(cudaMalloc(&d_buckets, nb * sizeof(X)));
    CHECK(cudaMalloc(&d_opts, nl * sizeof(X)));
    CHECK(cudaMemcpy(d_bases, bases.data(), n * sizeof(Affine<F>), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_keys, keys.data(), len * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_vals, vals.data(), len * 4, cudaMemcpyHostToDevice));
    PairSource<F> src{d_keys, d_vals, d_bases};
    const unsigned blocks = (unsigned)ceil_div(threads, kThreads);
    constexpr int kMinBlocks = sizeof(F) == sizeof(Fp) ? 3 : 2;
    const char* names[] = {"register accumulator", "shared-memory accumulator"};
    for (int v = 0; v < 2; ++v) {
        auto launch = [&]() {
            if (v == 0)
                accumulate_kernel<F, PairSource<F>, kMinBlocks>
                    <<<blocks, kThreads>>>(src, len, kChunk0, c, d_buckets, d_okeys, d_opts);
            else
                level0_smem_kernel<F, kMinBlocks>
                    <<<blocks, kThreads>>>(src, len, kChunk0, c, d_buckets, d_okeys, d_opts);
        };
        CHECK(cudaMemset(d_buckets, 0, nb * sizeof(X)));
        launch();
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        std::vector<X> hb(nb), hp(nl);
        std::vector<uint32_t> hk(nl);
        CHECK(cudaMemcpy(hb.data(), d_buckets, nb * sizeof(X), cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(hk.data(), d_okeys, nl * 4, cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(hp.data(), d_opts, nl * sizeof(X), cudaMemcpyDeviceToHost));
        const uint64_t sum = checksum(hb, hk, hp);
        std::vector<float> ms;
        cudaEvent_t a, b;
        CHECK(cudaEventCreate(&a));
        CHECK(cudaEventCreate(&b));
        for (int r = 0; r < reps; ++r) {
            CHECK(cudaEventRecord(a));
            launch();
            CHECK(cudaEventRecord(b));
            CHECK(cudaEventSynchronize(b));
            float t = 0;
            CHECK(cudaEventElapsedTime(&t, a, b));
            ms.push_back(t);
        }
        std::sort(ms.begin(), ms.end());
        const double adds = (double)len * (double)half / (double)(half + 1);
        std::printf("G%d n=2^%u c=%u windows=%u %-24s median %8.3f ms  %.3f G madd/s  checksum %016llx\n",
                    sizeof(F) == sizeof(Fp) ? 1 : 2, log_n, c, nw, names[v], ms[ms.size() / 2],
                    adds / (ms[ms.size() / 2] * 1e6), (unsigned long long)sum);
    }
    // The first level of the bucket reduction over these buckets
    // (segments of kSegment buckets): T and R sums a thread.
    {
        const uint64_t nt = nw * (half / kSegment);
        X *d_t, *d_r;
        CHECK(cudaMalloc(&d_t, nt * sizeof(X)));
        CHECK(cudaMalloc(&d_r, nt * sizeof(X)));
        const char* rnames[] = {"segments, registers", "segments, shared memory"};
        for (int v = 0; v < 2; ++v) {
            auto launch = [&]() {
                if (v == 0)
                    segments_kernel<F><<<(unsigned)ceil_div(nt, 64), 64>>>(
                        d_buckets, nw, half, 0, kSegment, d_t, d_r);
                else
                    segments_smem_kernel<F><<<(unsigned)ceil_div(nt, kSegThreads), kSegThreads>>>(
                        d_buckets, nw, half, 0, kSegment, d_t, d_r);
            };
            CHECK(cudaMemset(d_t, 0, nt * sizeof(X)));
            CHECK(cudaMemset(d_r, 0, nt * sizeof(X)));
            launch();
            CHECK(cudaGetLastError());
            CHECK(cudaDeviceSynchronize());
            std::vector<X> ht(nt), hr(nt);
            CHECK(cudaMemcpy(ht.data(), d_t, nt * sizeof(X), cudaMemcpyDeviceToHost));
            CHECK(cudaMemcpy(hr.data(), d_r, nt * sizeof(X), cudaMemcpyDeviceToHost));
            const uint64_t sum = checksum(ht, {}, hr) ^ checksum(hr, {}, ht);
            std::vector<float> ms;
            cudaEvent_t a, b;
            CHECK(cudaEventCreate(&a));
            CHECK(cudaEventCreate(&b));
            for (int r = 0; r < reps; ++r) {
                CHECK(cudaEventRecord(a));
                launch();
                CHECK(cudaEventRecord(b));
                CHECK(cudaEventSynchronize(b));
                float t = 0;
                CHECK(cudaEventElapsedTime(&t, a, b));
                ms.push_back(t);
            }
            std::sort(ms.begin(), ms.end());
            std::printf("G%d n=2^%u c=%u windows=%u %-24s median %8.3f ms  checksum %016llx\n",
                        sizeof(F) == sizeof(Fp) ? 1 : 2, log_n, c, nw, rnames[v],
                        ms[ms.size() / 2], (unsigned long long)sum);
        }
    }
    return 0;
}

int main(int argc, char** argv) {
    setvbuf(stdout, nullptr, _IONBF, 0);
    if (argc < 5) {
        std::printf("usage: %s <curve 1|2> <log n> <c> <windows> [reps]\n", argv[0]);
        return 2;
    }
    const int curve = std::atoi(argv[1]);
    const uint32_t log_n = std::atoi(argv[2]), c = std::atoi(argv[3]), nw = std::atoi(argv[4]);
    const int reps = argc > 5 ? std::atoi(argv[5]) : 5;
    return curve == 1 ? bench<Fp>(log_n, c, nw, reps) : bench<Fp2>(log_n, c, nw, reps);
}
