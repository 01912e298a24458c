/*
 * Developer check: the tiled bit reversal (cuzk_ntt_bit_reverse for
 * log_n >= 8) against the element-wise kernel on random data, for log sizes
 * 8..20 with batches and 24, 26, 27 alone, and the time of each (median of
 * 5, CUDA events).
 *
 *   nvcc -O3 -std=c++17 -arch=sm_90 -I csrc/include csrc/tests/bitrev_check.cu -o bitrev_check
 */
#include "../ntt/ntt.cu"

#include <algorithm>
#include <cstring>
#include <functional>
#include <cstdio>
#include <random>
#include <vector>

#include "dev_check.cuh"

static float time_ms(cudaStream_t s, const std::function<void()>& f) {
    std::vector<float> t = event_times_ms(s, 5, f);
    std::sort(t.begin(), t.end());
    return t[2];
}

int main() {
    setvbuf(stdout, nullptr, _IONBF, 0);
    std::mt19937_64 rng(7);
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    int bad = 0;
    const uint32_t logs[] = {8, 9, 10, 11, 12, 15, 16, 17, 20, 24, 26, 27};
    for (uint32_t log_n : logs) {
        const uint64_t batch = log_n <= 20 ? 3 : 1;
        const size_t n = (size_t)batch << log_n;
        std::vector<Fr> h(n);
        for (auto& x : h)
            for (int i = 0; i < 8; ++i) x.l[i] = (uint32_t)rng();
        Fr *d1, *d2;
        CHECK(cudaMalloc(&d1, n * sizeof(Fr)));
        CHECK(cudaMalloc(&d2, n * sizeof(Fr)));
        CHECK(cudaMemcpy(d1, h.data(), n * sizeof(Fr), cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(d2, h.data(), n * sizeof(Fr), cudaMemcpyHostToDevice));
        uint32_t blocks = 0;
        grid_for(0, n, 256, &blocks);
        bit_reverse_kernel<<<blocks, 256, 0, s>>>(d1, log_n, n);
        if (cuzk_ntt_bit_reverse(0, d2, log_n, batch, s).code != CUZK_OK) return 1;
        CHECK(cudaStreamSynchronize(s));
        std::vector<Fr> r1(n), r2(n);
        CHECK(cudaMemcpy(r1.data(), d1, n * sizeof(Fr), cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(r2.data(), d2, n * sizeof(Fr), cudaMemcpyDeviceToHost));
        bool same = std::memcmp(r1.data(), r2.data(), n * sizeof(Fr)) == 0;
        /* and against the definition on the host, for the first vector */
        const uint64_t m = 1ull << log_n;
        for (uint64_t i = 0; i < m && same; ++i) {
            uint64_t j = 0;
            for (uint32_t b = 0; b < log_n; ++b) j |= ((i >> b) & 1) << (log_n - 1 - b);
            same = std::memcmp(&r2[j], &h[i], sizeof(Fr)) == 0;
        }
        bad += !same;
        const float t_old = time_ms(s, [&] { bit_reverse_kernel<<<blocks, 256, 0, s>>>(d1, log_n, n); });
        const float t_new = time_ms(s, [&] { cuzk_ntt_bit_reverse(0, d2, log_n, batch, s); });
        std::printf("2^%u x %llu: %s; element-wise %.3f ms, tiled %.3f ms\n", log_n,
                    (unsigned long long)batch, same ? "equal" : "MISMATCH", t_old, t_new);
        CHECK(cudaFree(d1));
        CHECK(cudaFree(d2));
    }
    std::printf("%s\n", bad ? "FAILED" : "all equal");
    return bad ? 1 : 0;
}
