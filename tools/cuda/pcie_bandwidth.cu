/*
 * Developer measurement: host <-> device copy bandwidth of one GPU, pinned
 * (cudaHostAlloc) and pageable (malloc), 1 GiB each way, best of 5.
 *
 *   cargo xtask tools && target/tools/pcie_bandwidth
 */
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "dev_check.cuh"

int main() {
    const size_t bytes = size_t(1) << 30;
    void *dev, *pinned, *pageable = std::malloc(bytes);
    CHECK(cudaMalloc(&dev, bytes));
    CHECK(cudaHostAlloc(&pinned, bytes, cudaHostAllocDefault));
    std::memset(pinned, 1, bytes);
    std::memset(pageable, 1, bytes);
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    struct Case { const char* name; void* dst; const void* src; };
    const Case cases[] = {{"H2D pinned", dev, pinned}, {"D2H pinned", pinned, dev},
                          {"H2D pageable", dev, pageable}, {"D2H pageable", pageable, dev}};
    for (const Case& c : cases) {
        float best = 1e30f;
        for (int r = 0; r < 5; ++r) {
            CHECK(cudaEventRecord(a));
            CHECK(cudaMemcpy(c.dst, c.src, bytes, cudaMemcpyDefault));
            CHECK(cudaEventRecord(b));
            CHECK(cudaEventSynchronize(b));
            float ms;
            CHECK(cudaEventElapsedTime(&ms, a, b));
            if (ms < best) best = ms;
        }
        std::printf("%-14s 1 GiB in %7.2f ms: %6.2f GB/s\n", c.name, best, bytes / best / 1e6);
    }
    // Both directions at once (pinned), on two streams: what a pipelined
    // host-to-host transform can use.
    void* dev2;
    void* pinned2;
    CHECK(cudaMalloc(&dev2, bytes));
    CHECK(cudaHostAlloc(&pinned2, bytes, cudaHostAllocDefault));
    cudaStream_t s1, s2;
    CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    float best = 1e30f;
    for (int r = 0; r < 5; ++r) {
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaEventRecord(a, s1));
        CHECK(cudaStreamWaitEvent(s2, a, 0));
        CHECK(cudaMemcpyAsync(dev, pinned, bytes, cudaMemcpyHostToDevice, s1));
        CHECK(cudaMemcpyAsync(pinned2, dev2, bytes, cudaMemcpyDeviceToHost, s2));
        cudaEvent_t c;
        CHECK(cudaEventCreate(&c));
        CHECK(cudaEventRecord(c, s2));
        CHECK(cudaStreamWaitEvent(s1, c, 0));
        CHECK(cudaEventRecord(b, s1));
        CHECK(cudaEventSynchronize(b));
        CHECK(cudaEventDestroy(c));
        float ms;
        CHECK(cudaEventElapsedTime(&ms, a, b));
        if (ms < best) best = ms;
    }
    std::printf("%-14s 1 GiB each way in %7.2f ms: %6.2f GB/s total\n", "bidir pinned", best,
                2.0 * bytes / best / 1e6);
    return 0;
}
