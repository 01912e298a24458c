/*
 * Developer measurement (BENCHMARKS.md, session 4, "Managed memory and
 * cudaMemGetInfo"); run once per mode in a fresh process:
 *   nvcc -O2 -arch=sm_90 csrc/tests/managed_arena.cu -o managed_arena -cudart static
 *   for m in 0 1 2 3; do ./managed_arena $m; done
 */
// Managed arena experiment: a fixed managed range, sub-ranges populated by
// prefetch and released by discard / prefetch-to-host / nothing.
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>
#include "dev_check.cuh"

int main(int argc, char** argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    const int method = atoi(argv[1]);  // 0 discard, 1 prefetch to host, 2 keep, 3 discard + warm page tables first
    const size_t arena_bytes = size_t(16) << 30;
    CHECK(cudaSetDevice(0)); CHECK(cudaFree(0));
    cudaStream_t s; CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaMemLocation dev = {}; dev.type = cudaMemLocationTypeDevice; dev.id = 0;
    cudaMemLocation host = {}; host.type = cudaMemLocationTypeHost; host.id = 0;
    const char* names[] = {"discard", "prefetch to host", "keep", "discard, warmed"};
    const size_t f0 = settled_free();
    void* arena; CHECK(cudaMallocManaged(&arena, arena_bytes, cudaMemAttachGlobal));
    CHECK(cudaMemAdvise(arena, arena_bytes, cudaMemAdviseSetPreferredLocation, dev));
    if (method == 3) {
        CHECK(cudaMemPrefetchAsync(arena, arena_bytes, dev, 0, s));
        size_t sz = arena_bytes; void* p = arena;
        CHECK(cudaMemDiscardBatchAsync(&p, &sz, 1, 0, s));
        CHECK(cudaStreamSynchronize(s));
    }
    const size_t f1 = settled_free();
    printf("[%s] after create: %+.2f MiB\n", names[method], ((double)f1 - (double)f0) / 1048576.0);
    std::mt19937_64 rng(5);
    auto t0 = std::chrono::steady_clock::now();
    for (int round = 0; round < 3; ++round) {
        for (int c = 0; c < 100; ++c) {
            const size_t off = (rng() % 15360) << 20;
            size_t bytes = (size_t(1) << 20) + rng() % (size_t(1023) << 20);
            void* p = (char*)arena + off;
            CHECK(cudaMemPrefetchAsync(p, bytes, dev, 0, s));
            CHECK(cudaMemsetAsync(p, 1, bytes, s));
            if (method == 0 || method == 3) CHECK(cudaMemDiscardBatchAsync(&p, &bytes, 1, 0, s));
            if (method == 1) CHECK(cudaMemPrefetchAsync(p, bytes, host, 0, s));
            CHECK(cudaStreamSynchronize(s));
        }
        const size_t f2 = settled_free();
        double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        printf("[%s] round %d (t=%.1f s): %+.2f MiB vs before create\n", names[method], round, t, ((double)f2 - (double)f0) / 1048576.0);
    }
    CHECK(cudaFree(arena));
    const size_t f3 = settled_free();
    printf("[%s] arena freed: %+.2f MiB\n", names[method], ((double)f3 - (double)f0) / 1048576.0);
    return 0;
}
