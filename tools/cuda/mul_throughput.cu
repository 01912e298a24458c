/*
 * Developer microbenchmark: Montgomery multiplications per second on one GPU,
 * for Fp (12 limbs) and Fr (8 limbs), cuzk's even/odd operator* against the
 * plain CIOS mul_cios and, when built with -DWITH_SPPARK, sppark's mont_t
 * (bench-only peer, from the cargo registry). It also checks that operator*
 * and mul_cios agree on every thread's final value.
 *
 *   cargo xtask tools && target/tools/mul_throughput
 *
 * or by hand, with sppark's for comparison:
 *   nvcc -O3 -std=c++17 -arch=sm_90 -I csrc/include -I tools/cuda \
 *        -DWITH_SPPARK -I ~/.cargo/registry/src/<index>/sppark-0.1.16/sppark \
 *        tools/cuda/mul_throughput.cu -o mul_throughput
 *
 * Each thread runs K independent chains x_k <- x_k * y (ILP), ITER steps;
 * multiplies per second = threads * K * ITER / kernel time (CUDA events).
 */
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#include "cuzk/bls12_381.cuh"

#ifdef WITH_SPPARK
#include <ff/bls12-381.hpp>
#endif

using namespace cuzk;

constexpr int K = 4;
constexpr int ITER = 256;

/* A run-time element (read from memory, so the compiler cannot fold its
 * limbs into immediates): R mod m with the low limb varied, still < m. */
template <class F>
__device__ F seed(const uint32_t* one, uint32_t tid, int k) {
    F x;
#pragma unroll
    for (int i = 0; i < F::N; ++i) x.l[i] = one[i];
    x.l[0] ^= tid * 2654435761u + k;
    return x;
}

template <class F, int kVariant>
__global__ void chain_kernel(const uint32_t* one, uint32_t* out) {
    const uint32_t tid = blockIdx.x * blockDim.x + threadIdx.x;
    F x[K];
#pragma unroll
    for (int k = 0; k < K; ++k) x[k] = seed<F>(one, tid, k);
    const F y = seed<F>(one, tid, 7);
    for (int it = 0; it < ITER; ++it) {
#pragma unroll
        for (int k = 0; k < K; ++k) x[k] = kVariant == 0 ? x[k] * y : F::mul_cios(x[k], y);
    }
    uint32_t acc = 0;
#pragma unroll
    for (int k = 0; k < K; ++k)
#pragma unroll
        for (int i = 0; i < F::N; ++i) acc = acc * 31 + x[k].l[i];
    out[tid] = acc;
}

#ifdef WITH_SPPARK
template <class S, int NL>
__global__ void sppark_kernel(const uint32_t* one, uint32_t* out) {
    const uint32_t tid = blockIdx.x * blockDim.x + threadIdx.x;
    S x[K];
    S y;
    for (int k = 0; k < K; ++k) {
        uint32_t* l = reinterpret_cast<uint32_t*>(&x[k]);
        for (int i = 0; i < NL; ++i) l[i] = one[i];
        l[0] ^= tid * 2654435761u + k;
    }
    uint32_t* yl = reinterpret_cast<uint32_t*>(&y);
    for (int i = 0; i < NL; ++i) yl[i] = one[i];
    yl[0] ^= tid * 2654435761u + 7;
    for (int it = 0; it < ITER; ++it) {
#pragma unroll
        for (int k = 0; k < K; ++k) x[k] = x[k] * y;
    }
    uint32_t acc = 0;
    for (int k = 0; k < K; ++k)
        for (int i = 0; i < NL; ++i) acc = acc * 31 + reinterpret_cast<uint32_t*>(&x[k])[i];
    out[tid] = acc;
}
#endif

#include "dev_check.cuh"

template <class Kern>
static double time_kernel(Kern kern, const uint32_t* one, uint32_t* out, int blocks, int threads) {
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    kern<<<blocks, threads>>>(one, out);  // warm-up
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    float best = 1e30f;
    for (int r = 0; r < 5; ++r) {
        CHECK(cudaEventRecord(a));
        kern<<<blocks, threads>>>(one, out);
        CHECK(cudaEventRecord(b));
        CHECK(cudaEventSynchronize(b));
        float ms;
        CHECK(cudaEventElapsedTime(&ms, a, b));
        if (ms < best) best = ms;
    }
    CHECK(cudaGetLastError());
    return best;
}

int main() {
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    const int threads = 256;
    const int blocks = prop.multiProcessorCount * 16;
    const double muls = (double)blocks * threads * K * ITER;
    uint32_t *o1, *o2;
    const size_t n = (size_t)blocks * threads;
    CHECK(cudaMalloc(&o1, n * 4));
    CHECK(cudaMalloc(&o2, n * 4));
    std::printf("%s, %d SMs; %d blocks x %d threads, K=%d, ITER=%d\n", prop.name,
                prop.multiProcessorCount, blocks, threads, K, ITER);
    auto report = [&](const char* what, double ms) {
        std::printf("%-28s %8.3f ms  %7.2f G mul/s\n", what, ms, muls / ms / 1e6);
    };
    auto same = [&](const char* what) {
        uint32_t* h1 = (uint32_t*)std::malloc(n * 4);
        uint32_t* h2 = (uint32_t*)std::malloc(n * 4);
        CHECK(cudaMemcpy(h1, o1, n * 4, cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(h2, o2, n * 4, cudaMemcpyDeviceToHost));
        size_t bad = 0;
        for (size_t i = 0; i < n; ++i) bad += h1[i] != h2[i];
        std::printf("%-28s %s (%zu of %zu differ)\n", what, bad ? "MISMATCH" : "agree", bad, n);
        std::free(h1);
        std::free(h2);
        return bad == 0;
    };
    /* R mod p and R mod r (1 in Montgomery form), uploaded. */
    uint32_t *one_fp, *one_fr;
    {
        uint32_t h[12];
        for (int i = 0; i < 12; ++i) h[i] = FpParams::one(i);
        CHECK(cudaMalloc(&one_fp, sizeof h));
        CHECK(cudaMemcpy(one_fp, h, sizeof h, cudaMemcpyHostToDevice));
        for (int i = 0; i < 8; ++i) h[i] = FrParams::one(i);
        CHECK(cudaMalloc(&one_fr, sizeof h));
        CHECK(cudaMemcpy(one_fr, h, 32, cudaMemcpyHostToDevice));
    }
    bool ok = true;
    report("Fp operator* (even/odd)", time_kernel(chain_kernel<Fp, 0>, one_fp, o1, blocks, threads));
    report("Fp mul_cios", time_kernel(chain_kernel<Fp, 1>, one_fp, o2, blocks, threads));
    ok &= same("Fp even/odd vs CIOS");
    report("Fr operator* (even/odd)", time_kernel(chain_kernel<Fr, 0>, one_fr, o1, blocks, threads));
    report("Fr mul_cios", time_kernel(chain_kernel<Fr, 1>, one_fr, o2, blocks, threads));
    ok &= same("Fr even/odd vs CIOS");
#ifdef WITH_SPPARK
    report("sppark fp_t", time_kernel(sppark_kernel<fp_t, 12>, one_fp, o2, blocks, threads));
    report("sppark fr_t", time_kernel(sppark_kernel<fr_t, 8>, one_fr, o2, blocks, threads));
#endif
    return ok ? 0 : 1;
}
