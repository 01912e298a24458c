/*
 * Developer measurement (BENCHMARKS.md, session 4, "Managed memory and
 * cudaMemGetInfo"); run once per mode in a fresh process:
 *   nvcc -O2 -arch=sm_90 csrc/tests/managed_aligned.cu -o managed_aligned -cudart static
 *   for m in 0 1 2 3; do ./managed_aligned $m; done
 */
// Managed allocations rounded to 2 MiB: does cudaMemGetInfo come back?
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>
#include "dev_check.cuh"

int main(int argc, char** argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    const int mode = atoi(argv[1]);  // 0 unaligned, 1 aligned 2 MiB, 2 aligned + cudaMalloc/async mix, 3 aligned, small sizes
    const char* names[] = {"unaligned", "2 MiB multiples", "2 MiB multiples + sync/async mix", "2 MiB multiples, sizes 1 KiB..4 MiB"};
    CHECK(cudaSetDevice(0)); CHECK(cudaFree(0));
    cudaStream_t s; CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaMemLocation dev = {}; dev.type = cudaMemLocationTypeDevice; dev.id = 0;
    cudaMemPool_t pool; CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
    std::mt19937_64 rng(11);
    const size_t f0 = settled_free();
    for (int round = 0; round < 4; ++round) {
        for (int c = 0; c < 250; ++c) {
            size_t bytes = mode == 3 ? 1024 + rng() % (size_t(4) << 20) : (size_t(1) << 20) + rng() % (size_t(255) << 20);
            if (mode >= 1) bytes = (bytes + (size_t(2) << 20) - 1) & ~((size_t(2) << 20) - 1);
            void* p; CHECK(cudaMallocManaged(&p, bytes, cudaMemAttachGlobal));
            if (((uintptr_t)p & ((2 << 20) - 1)) != 0 && c == 0) printf("not 2 MiB aligned: %p\n", p);
            CHECK(cudaMemAdvise(p, bytes, cudaMemAdviseSetPreferredLocation, dev));
            CHECK(cudaMemPrefetchAsync(p, bytes, dev, 0, s));
            void *q = nullptr, *r = nullptr;
            if (mode == 2) { CHECK(cudaMalloc(&q, bytes / 3 + 4096)); CHECK(cudaMallocAsync(&r, bytes / 5 + 512, s)); }
            CHECK(cudaMemsetAsync(p, 1, bytes, s));
            CHECK(cudaStreamSynchronize(s));
            CHECK(cudaFree(p));
            if (q) CHECK(cudaFree(q));
            if (r) CHECK(cudaFreeAsync(r, s));
        }
        CHECK(cudaStreamSynchronize(s));
        CHECK(cudaMemPoolTrimTo(pool, 0));
        const size_t f1 = settled_free();
        printf("[%s] round %d (250 cycles): %+.2f MiB\n", names[mode], round, ((double)f1 - (double)f0) / 1048576.0);
    }
    return 0;
}
