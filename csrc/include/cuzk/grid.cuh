// cuzk: grid sizes of grid-stride kernels (nvcc host code).
#ifndef CUZK_GRID_CUH
#define CUZK_GRID_CUH

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda_status.cuh"

namespace cuzk {

// Blocks for a grid-stride kernel over `work` items with `threads` threads
// a block: one item a thread, at most 32 blocks an SM (the rest loop), at
// least one block.
inline cuzk_status grid_for(int32_t device, uint64_t work, uint32_t threads, uint32_t* blocks) {
    int sms = 0;
    CUZK_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    const uint64_t want = (work + threads - 1) / threads;
    const uint64_t cap = (uint64_t)sms * 32;
    *blocks = (uint32_t)(want < cap ? (want ? want : 1) : cap);
    return ok();
}

}  // namespace cuzk

#endif  // CUZK_GRID_CUH
