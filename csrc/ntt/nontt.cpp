// CPU-only build of the NTT C ABI (no nvcc found at build time): every
// entry point returns CUZK_ERR_NO_CUDA_BUILD. Keep in step with
// include/cuzk/ntt.h.
#include "cuzk/ntt.h"
#include "cuzk/status.hpp"

static cuzk_status no_cuda(const char* what) {
    return cuzk::fail(CUZK_ERR_NO_CUDA_BUILD, 0,
                      "%s: cuzk was built without CUDA (no nvcc found at build time); run `cargo xtask "
                      "cuda-toolkit` and rebuild, or set NVCC/CUDA_PATH", what);
}

extern "C" {

cuzk_status cuzk_ntt_dif(int32_t, void*, uint32_t, uint64_t, const void*, const void*, uint32_t, void*) { return no_cuda("cuzk_ntt_dif"); }
cuzk_status cuzk_ntt_bit_reverse(int32_t, void*, uint32_t, uint64_t, void*) { return no_cuda("cuzk_ntt_bit_reverse"); }
cuzk_status cuzk_ntt_scale_powers(int32_t, void*, uint32_t, uint64_t, const void*, const void*, uint32_t, const void*, void*) { return no_cuda("cuzk_ntt_scale_powers"); }
cuzk_status cuzk_ntt_mul_sub_scale(int32_t, const void*, const void*, const void*, void*, uint64_t, const void*, void*) { return no_cuda("cuzk_ntt_mul_sub_scale"); }

}  // extern "C"
