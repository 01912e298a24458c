/*
 * Shared by the single-file measurement programs in tools/cuda: a CUDA
 * call check that prints the call and exits, CUDA-event timing, and the
 * settled free-memory read of the managed-memory experiments.
 */
#ifndef CUZK_DEV_CHECK_CUH
#define CUZK_DEV_CHECK_CUH

#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#define CHECK(x)                                                                              \
    do {                                                                                      \
        cudaError_t e_ = (x);                                                                 \
        if (e_ != cudaSuccess) {                                                              \
            std::printf("%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));     \
            std::exit(1);                                                                     \
        }                                                                                     \
    } while (0)

/* The time (ms, CUDA events on `s`) of each of `runs` calls of f, which
 * queues work on `s`, in call order. */
template <class F>
std::vector<float> event_times_ms(cudaStream_t s, int runs, F&& f) {
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    std::vector<float> t;
    for (int r = 0; r < runs; ++r) {
        CHECK(cudaEventRecord(a, s));
        f();
        CHECK(cudaEventRecord(b, s));
        CHECK(cudaEventSynchronize(b));
        float ms;
        CHECK(cudaEventElapsedTime(&ms, a, b));
        t.push_back(ms);
    }
    CHECK(cudaEventDestroy(a));
    CHECK(cudaEventDestroy(b));
    return t;
}

/* cudaMemGetInfo's free bytes once three reads `ms` apart agree (at most
 * `reads` reads), after a device synchronize before each. */
inline size_t settled_free(int reads = 60, int ms = 50) {
    size_t last = 0, total = 0;
    int same = 0;
    for (int i = 0; i < reads && same < 3; ++i) {
        CHECK(cudaDeviceSynchronize());
        size_t f = 0;
        CHECK(cudaMemGetInfo(&f, &total));
        same = (f == last) ? same + 1 : 1;
        last = f;
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    }
    return last;
}

#endif
