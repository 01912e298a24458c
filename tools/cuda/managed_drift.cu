/*
 * Developer measurement: does cudaMemGetInfo's free figure come back after
 * managed allocations are freed? Runs each variant for `cycles` random-size
 * allocations (1 MiB .. 256 MiB, byte-granular), twice in a row, and prints
 * the change in free memory after each round (settled: three equal reads
 * 100 ms apart).
 *
 *   cargo xtask tools          (or: nvcc -O2 -arch=sm_90 -I tools/cuda \
 *                               tools/cuda/managed_drift.cu -o managed_drift)
 *   target/tools/managed_drift [cycles]
 */
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>

#include "dev_check.cuh"

/* The settled read of this program: up to 100 reads 100 ms apart. */
static size_t settled_free_slow() { return settled_free(100, 100); }

__global__ void touch(unsigned char* p, size_t n) {
    for (size_t i = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) * 4096; i < n;
         i += (size_t)gridDim.x * blockDim.x * 4096)
        p[i] = 1;
}

enum Variant { PLAIN, PREFETCH, ADVISE, BOTH, BOTH_TOUCH, BOTH_MIX, ALIGNED, POOL, POOL_MIX, NUM };
static const char* kNames[NUM] = {"managed only",        "managed+prefetch", "managed+advise",
                                  "managed+advise+prefetch (cuzk)", "cuzk + kernel touch",
                                  "cuzk interleaved with cudaMalloc", "cuzk, sizes rounded to 2 MiB",
                                  "managed mem pool (CUDA 13)", "managed pool + cudaMalloc"};

static void round_of(Variant v, int cycles, std::mt19937_64& rng, cudaStream_t s, cudaMemPool_t pool) {
    cudaMemLocation loc = {};
    loc.type = cudaMemLocationTypeDevice;
    loc.id = 0;
    for (int c = 0; c < cycles; ++c) {
        size_t bytes = (size_t(1) << 20) + rng() % (size_t(255) << 20);
        if (v == ALIGNED) bytes = (bytes + (size_t(2) << 20) - 1) & ~((size_t(2) << 20) - 1);
        void* p = nullptr;
        void* q = nullptr;
        if (v == POOL || v == POOL_MIX) {
            CHECK(cudaMallocFromPoolAsync(&p, bytes, pool, s));
            touch<<<132, 256, 0, s>>>((unsigned char*)p, bytes);
            if (v == POOL_MIX) CHECK(cudaMalloc(&q, bytes / 2 + 4096));
            CHECK(cudaFreeAsync(p, s));
            if (q) CHECK(cudaFree(q));
            continue;
        }
        CHECK(cudaMallocManaged(&p, bytes, cudaMemAttachGlobal));
        if (v == ADVISE || v >= BOTH) CHECK(cudaMemAdvise(p, bytes, cudaMemAdviseSetPreferredLocation, loc));
        if (v == PREFETCH || v >= BOTH) CHECK(cudaMemPrefetchAsync(p, bytes, loc, 0, s));
        if (v == BOTH_TOUCH) touch<<<132, 256, 0, s>>>((unsigned char*)p, bytes);
        if (v == BOTH_MIX) CHECK(cudaMalloc(&q, bytes / 2 + 4096));
        CHECK(cudaStreamSynchronize(s));
        CHECK(cudaFree(p));
        if (q) CHECK(cudaFree(q));
    }
    CHECK(cudaStreamSynchronize(s));
    if (pool) CHECK(cudaMemPoolTrimTo(pool, 0));
}

// Trajectory mode: after a round of the cuzk variant, print every change of
// the free figure for `secs` seconds, then squeeze (cudaMalloc nearly all
// free memory, free it) and print the free figure again.
static void trajectory(int cycles, int secs, Variant v) {
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    std::mt19937_64 rng(7);
    const size_t f0 = settled_free_slow();
    round_of(v, cycles, rng, s, nullptr);
    const auto t0 = std::chrono::steady_clock::now();
    size_t last = 0, total = 0;
    for (;;) {
        size_t f = 0;
        CHECK(cudaMemGetInfo(&f, &total));
        const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (f != last) std::printf("  [%s] t=%6.2f s  free - start = %+9.2f MiB\n", kNames[v], t, ((double)f - (double)f0) / 1048576.0);
        last = f;
        if (t > secs) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    size_t f = 0;
    CHECK(cudaMemGetInfo(&f, &total));
    void* big = nullptr;
    const size_t want = f - (size_t(256) << 20);
    cudaError_t e = cudaMalloc(&big, want);
    std::printf("  squeeze cudaMalloc(%.2f GiB): %s\n", want / 1073741824.0, cudaGetErrorString(e));
    if (e == cudaSuccess) CHECK(cudaFree(big));
    const size_t f2 = settled_free_slow();
    std::printf("  after squeeze: free - start = %+9.2f MiB\n", ((double)f2 - (double)f0) / 1048576.0);
    CHECK(cudaStreamDestroy(s));
}

// Scaling and reuse mode: drift of 100 cycles of one fixed size (does it
// scale with the bytes mapped?), and of an arena whose address range is
// reused (prefetch to the device, then discard) instead of freed.
static void scaling_and_reuse() {
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaMemLocation loc = {};
    loc.type = cudaMemLocationTypeDevice;
    loc.id = 0;
    const size_t sizes[] = {size_t(16) << 20, size_t(256) << 20, size_t(1) << 30, size_t(4) << 30};
    for (size_t bytes : sizes) {
        const size_t f0 = settled_free_slow();
        for (int c = 0; c < 50; ++c) {
            void* p;
            CHECK(cudaMallocManaged(&p, bytes, cudaMemAttachGlobal));
            CHECK(cudaMemAdvise(p, bytes, cudaMemAdviseSetPreferredLocation, loc));
            CHECK(cudaMemPrefetchAsync(p, bytes, loc, 0, s));
            CHECK(cudaStreamSynchronize(s));
            CHECK(cudaFree(p));
        }
        const size_t f1 = settled_free_slow();
        std::printf("50 x %6zu MiB managed+advise+prefetch: %+9.2f MiB (%.3f MiB per GiB mapped)\n", bytes >> 20,
                    ((double)f1 - (double)f0) / 1048576.0,
                    ((double)f1 - (double)f0) / 1048576.0 / (50.0 * bytes / 1073741824.0));
    }
    // Arena: one 8 GiB managed range, reused.
    const size_t arena_bytes = size_t(8) << 30;
    const size_t f0 = settled_free_slow();
    void* arena;
    CHECK(cudaMallocManaged(&arena, arena_bytes, cudaMemAttachGlobal));
    CHECK(cudaMemAdvise(arena, arena_bytes, cudaMemAdviseSetPreferredLocation, loc));
    const size_t f1 = settled_free_slow();
    std::mt19937_64 rng(3);
    for (int round = 0; round < 3; ++round) {
        for (int c = 0; c < 100; ++c) {
            const size_t off = (rng() % 4096) << 20;  // MiB offset below 4 GiB
            const size_t bytes = (size_t(1) << 20) + rng() % (size_t(4095) << 20);
            void* p = (char*)arena + off;
            const size_t n = off + bytes > arena_bytes ? arena_bytes - off : bytes;
            CHECK(cudaMemPrefetchAsync(p, n, loc, 0, s));
            touch<<<132, 256, 0, s>>>((unsigned char*)p, n);
            size_t sz = arena_bytes;
            CHECK(cudaMemDiscardBatchAsync(&arena, &sz, 1, 0, s));
            CHECK(cudaStreamSynchronize(s));
        }
        const size_t f2 = settled_free_slow();
        std::printf("arena round %d: after create %+9.2f MiB, after 100 prefetch+discard %+9.2f MiB\n", round,
                    ((double)f1 - (double)f0) / 1048576.0, ((double)f2 - (double)f0) / 1048576.0);
    }
    CHECK(cudaFree(arena));
    const size_t f3 = settled_free_slow();
    std::printf("arena freed: %+9.2f MiB\n", ((double)f3 - (double)f0) / 1048576.0);
}

int main(int argc, char** argv) {
    if (argc > 1 && std::strcmp(argv[1], "scale") == 0) {
        CHECK(cudaSetDevice(0));
        CHECK(cudaFree(0));
        scaling_and_reuse();
        return 0;
    }
    const int cycles = argc > 1 ? std::atoi(argv[1]) : 100;
    if (argc > 2) {
        CHECK(cudaSetDevice(0));
        CHECK(cudaFree(0));
        trajectory(cycles, std::atoi(argv[2]), BOTH);
        trajectory(cycles, std::atoi(argv[2]), BOTH_MIX);
        trajectory(cycles, std::atoi(argv[2]), PREFETCH);
        return 0;
    }
    CHECK(cudaSetDevice(0));
    CHECK(cudaFree(0));
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    std::mt19937_64 rng(42);
    for (int v = 0; v < NUM; ++v) {
        cudaMemPool_t pool = nullptr;
        if (v == POOL || v == POOL_MIX) {
            cudaMemPoolProps props = {};
            props.allocType = cudaMemAllocationTypeManaged;
            props.location.type = cudaMemLocationTypeDevice;
            props.location.id = 0;
            cudaError_t e = cudaMemPoolCreate(&pool, &props);
            if (e != cudaSuccess) {
                std::printf("%-34s cudaMemPoolCreate: %s\n", kNames[v], cudaGetErrorString(e));
                continue;
            }
        }
        const size_t f0 = settled_free_slow();
        round_of((Variant)v, cycles, rng, s, pool);
        const size_t f1 = settled_free_slow();
        round_of((Variant)v, cycles, rng, s, pool);
        const size_t f2 = settled_free_slow();
        if (pool) CHECK(cudaMemPoolDestroy(pool));
        const size_t f3 = settled_free_slow();
        std::printf("%-34s start %.3f GiB  round1 %+8.2f MiB  round2 %+8.2f MiB  (after pool destroy %+8.2f MiB)\n",
                    kNames[v], f0 / 1073741824.0, ((double)f1 - (double)f0) / 1048576.0,
                    ((double)f2 - (double)f1) / 1048576.0, ((double)f3 - (double)f0) / 1048576.0);
    }
    return 0;
}
