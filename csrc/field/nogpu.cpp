/*
 * CPU-only build of the field layer's GPU entry points (no nvcc at build
 * time, or CUZK_NO_CUDA=1): every one returns CUZK_ERR_NO_CUDA_BUILD with a message
 * saying how to get a CUDA build. Keep in step with include/cuzk/field.h.
 *
 * Includes are relative so that this file also compiles with no -I flags.
 */
#include "../include/cuzk/field.h"
#include "../include/cuzk/status.hpp"

namespace {

cuzk_status no_cuda(const char* what) { return cuzk::no_cuda_build(what); }

} // namespace

extern "C" {

int32_t cuzk_field_cuda_compiled(void) { return 0; }

cuzk_status cuzk_gpu_device_count(int32_t*) { return no_cuda("cuzk_gpu_device_count"); }

cuzk_status cuzk_gpu_device_info(int32_t, char*, uint64_t, int32_t*, int32_t*, int32_t*,
                                 uint64_t*) {
    return no_cuda("cuzk_gpu_device_info");
}

cuzk_status cuzk_field_gpu_apply_device(int32_t, const cuzk_field_operands*, void*) {
    return no_cuda("cuzk_field_gpu_apply_device");
}

cuzk_status cuzk_field_gpu_apply(int32_t, const cuzk_field_operands*, float*) {
    return no_cuda("cuzk_field_gpu_apply");
}

cuzk_status cuzk_field_gpu_bench(int32_t, const cuzk_field_operands*, uint32_t, float*) {
    return no_cuda("cuzk_field_gpu_bench");
}

} // extern "C"
