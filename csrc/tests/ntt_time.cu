/*
 * Developer measurement: cuzk_ntt_dif alone (device-resident data, random
 * Montgomery-form elements and random twiddle tables: the timing does not
 * depend on the values), median of 5 by CUDA events, for profiling with ncu
 * without the Rust bench.
 *
 *   nvcc -O3 -std=c++17 -arch=sm_90 -I csrc/include csrc/tests/ntt_time.cu -o ntt_time
 *   ./ntt_time 27 [batch] [full] [shoup] [tiled]  (CUZK_NTT_VARIANT picks the
 *                                   kernel variant; full = 1: full (half) twiddle
 *                                   tables between every two passes; shoup: bit p =
 *                                   pass p's table in Shoup form, default as the
 *                                   64 MiB rule; tiled: bit p = pass p's table tiled)
 */
#include "../ntt/ntt.cu"

#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>

#include "dev_check.cuh"

static std::vector<Fr> random_fr(size_t n, std::mt19937_64& rng) {
    std::vector<Fr> v(n);
    for (auto& x : v) {
        for (int i = 0; i < 8; ++i) x.l[i] = (uint32_t)rng();
        x.l[7] &= 0x3fffffff; /* < 2^254 < r */
    }
    return v;
}

/* Session 13's rule for half tables (crates/ntt/src/gpu.rs,
 * SHOUP_TWIDDLE_MAX_BYTES): Shoup form for the passes whose half Shoup
 * table takes at most 64 MiB. GpuNtt now keeps tiled Shoup tables where its
 * limit allows (arguments 3 3 here). */
static uint32_t default_shoup_mask(uint32_t log_n) {
    uint32_t log_b[8], passes = 0, mask = 0;
    if (cuzk_ntt_plan(log_n, log_b, 8, &passes).code != CUZK_OK) return 0;
    for (uint32_t p = 0; p + 1 < passes; ++p)
        if (((uint64_t)CUZK_NTT_SHOUP_ENTRY_BYTES << (log_b[p] - 1)) <= (64ull << 20)) mask |= 1u << p;
    return mask;
}

int main(int argc, char** argv) {
    setvbuf(stdout, nullptr, _IONBF, 0);
    const uint32_t log_n = argc > 1 ? (uint32_t)std::atoi(argv[1]) : 24;
    const uint64_t batch = argc > 2 ? (uint64_t)std::atoll(argv[2]) : 1;
    const uint32_t lo_bits = (log_n + 1) / 2;
    std::mt19937_64 rng(1);
    const size_t n = (size_t)batch << log_n;
    std::vector<Fr> h = random_fr(n, rng), lo = random_fr(size_t(1) << lo_bits, rng),
                    hi = random_fr(size_t(1) << (log_n - lo_bits), rng);
    Fr *d, *dlo, *dhi;
    CHECK(cudaMalloc(&d, n * sizeof(Fr)));
    CHECK(cudaMalloc(&dlo, lo.size() * sizeof(Fr)));
    CHECK(cudaMalloc(&dhi, hi.size() * sizeof(Fr)));
    CHECK(cudaMemcpy(d, h.data(), n * sizeof(Fr), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dlo, lo.data(), lo.size() * sizeof(Fr), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dhi, hi.data(), hi.size() * sizeof(Fr), cudaMemcpyHostToDevice));
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    const bool full = argc > 3 && std::atoi(argv[3]) != 0;
    /* Bit p: pass p's table in Shoup form (argument 4, default: the 64 MiB
     * rule of half tables, default_shoup_mask). */
    const uint32_t shoup_mask = argc > 4 ? (uint32_t)std::strtoul(argv[4], nullptr, 0) : default_shoup_mask(log_n);
    /* Bit p: pass p's table tiled (argument 5, cuzk_ntt_powers_tiled; Shoup
     * entries where the Shoup bit is set too; default none). */
    const uint32_t tiled_mask = argc > 5 ? (uint32_t)std::strtoul(argv[5], nullptr, 0) : 0u;
    std::vector<const void*> pass_tw;
    if (full) {
        uint32_t log_b[8], passes = 0;
        if (cuzk_ntt_plan(log_n, log_b, 8, &passes).code != CUZK_OK) return 1;
        for (uint32_t p = 0; p + 1 < passes; ++p) {
            if ((tiled_mask >> p) & 1u) { /* B entries in the tiles' order */
                const bool sh = (shoup_mask >> p) & 1u;
                void* t;
                CHECK(cudaMalloc(&t, (sh ? sizeof(Root) : sizeof(Fr)) << log_b[p]));
                const cuzk_status st = cuzk_ntt_powers_tiled(0, t, log_b[p], log_b[p] - log_b[p + 1], log_n,
                                                             sh ? 1u : 0u, dlo, dhi, lo_bits, s);
                if (st.code != CUZK_OK) {
                    std::printf("cuzk_ntt_powers_tiled: %s\n", st.message);
                    return 1;
                }
                pass_tw.push_back(t);
                continue;
            }
            if ((shoup_mask >> p) & 1u) { /* half table of Shoup entries */
                Root* t;
                CHECK(cudaMalloc(&t, sizeof(Root) << (log_b[p] - 1)));
                if (cuzk_ntt_powers_shoup(0, t, log_b[p], log_n, dlo, dhi, lo_bits, s).code != CUZK_OK) return 1;
                pass_tw.push_back(t);
                continue;
            }
            Fr* t;
            CHECK(cudaMalloc(&t, sizeof(Fr) << (log_b[p] - 1))); /* half table */
            if (cuzk_ntt_powers(0, t, log_b[p], log_n, dlo, dhi, lo_bits, s).code != CUZK_OK) return 1;
            pass_tw.push_back(t);
        }
        CHECK(cudaStreamSynchronize(s));
    }
    void* roots;
    CHECK(cudaMalloc(&roots, CUZK_NTT_ROOTS_BYTES));
    {
        const cuzk_status st = cuzk_ntt_roots(0, roots, log_n, dlo, dhi, lo_bits, s);
        if (st.code != CUZK_OK) {
            std::printf("cuzk_ntt_roots: %s\n", st.message);
            return 1;
        }
    }
    std::vector<float> t = event_times_ms(s, 7, [&] {
        cuzk_status st = cuzk_ntt_dif(0, d, log_n, batch, dlo, dhi, lo_bits, pass_tw.data(),
                                      (uint32_t)pass_tw.size(), full ? shoup_mask : 0u,
                                      full ? tiled_mask : 0u, roots, s);
        if (st.code != CUZK_OK) {
            std::printf("cuzk_ntt_dif: %s\n", st.message);
            std::exit(1);
        }
    });
    t.erase(t.begin(), t.begin() + 2); /* the first two are warm-up */
    /* Every variant computes the same function: after the same 7 transforms
     * of the same input, the checksums must agree. */
    CHECK(cudaMemcpy(h.data(), d, n * sizeof(Fr), cudaMemcpyDeviceToHost));
    uint64_t sum = 0;
    for (size_t i = 0; i < n; ++i)
        for (int j = 0; j < 8; ++j) sum = sum * 1000003u + h[i].l[j];
    std::sort(t.begin(), t.end());
    const char* v = std::getenv("CUZK_NTT_VARIANT");
    std::printf("NTT 2^%u x %llu, %s tables, variant %s: median %.3f ms (min %.3f), checksum %016llx\n",
                log_n, (unsigned long long)batch, full ? "full" : "two-level", v ? v : "0", t[t.size() / 2], t[0],
                (unsigned long long)sum);
    return 0;
}
