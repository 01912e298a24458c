// CPU-only build of the allocator C ABI (no nvcc found at build time):
// every entry point returns CUZK_ERR_NO_CUDA_BUILD with a message saying
// how to get a CUDA build. Keep in step with include/cuzk/alloc.h.
#include "cuzk/alloc.h"
#include "cuzk/status.hpp"

static cuzk_status no_cuda(const char* what) {
    return cuzk::fail(CUZK_ERR_NO_CUDA_BUILD, 0,
                      "%s: cuzk was built without CUDA (no nvcc found at build time); run `cargo xtask "
                      "cuda-toolkit` and rebuild, or set NVCC/CUDA_PATH", what);
}

extern "C" {

cuzk_status cuzk_mem_get_info(int32_t, uint64_t*, uint64_t*) { return no_cuda("cuzk_mem_get_info"); }
cuzk_status cuzk_malloc(int32_t, uint64_t, void**) { return no_cuda("cuzk_malloc"); }
cuzk_status cuzk_free(int32_t, void*) { return no_cuda("cuzk_free"); }
cuzk_status cuzk_malloc_async(int32_t, uint64_t, void*, void*, void**) { return no_cuda("cuzk_malloc_async"); }
cuzk_status cuzk_free_async(int32_t, void*, void*) { return no_cuda("cuzk_free_async"); }
cuzk_status cuzk_pool_default(int32_t, void**) { return no_cuda("cuzk_pool_default"); }
cuzk_status cuzk_pool_create(int32_t, uint64_t, void**) { return no_cuda("cuzk_pool_create"); }
cuzk_status cuzk_pool_destroy(int32_t, void*) { return no_cuda("cuzk_pool_destroy"); }
cuzk_status cuzk_pool_set_release_threshold(int32_t, void*, uint64_t) { return no_cuda("cuzk_pool_set_release_threshold"); }
cuzk_status cuzk_pool_trim(int32_t, void*, uint64_t) { return no_cuda("cuzk_pool_trim"); }
cuzk_status cuzk_pool_usage(int32_t, void*, uint64_t*, uint64_t*) { return no_cuda("cuzk_pool_usage"); }
cuzk_status cuzk_malloc_managed(int32_t, uint64_t, void*, void**) { return no_cuda("cuzk_malloc_managed"); }
cuzk_status cuzk_host_alloc(uint64_t, void**) { return no_cuda("cuzk_host_alloc"); }
cuzk_status cuzk_host_free(void*) { return no_cuda("cuzk_host_free"); }
cuzk_status cuzk_host_register(void*, uint64_t) { return no_cuda("cuzk_host_register"); }
cuzk_status cuzk_host_unregister(void*) { return no_cuda("cuzk_host_unregister"); }
cuzk_status cuzk_stream_create(int32_t, void**) { return no_cuda("cuzk_stream_create"); }
cuzk_status cuzk_stream_destroy(int32_t, void*) { return no_cuda("cuzk_stream_destroy"); }
cuzk_status cuzk_stream_synchronize(int32_t, void*) { return no_cuda("cuzk_stream_synchronize"); }
cuzk_status cuzk_device_synchronize(int32_t) { return no_cuda("cuzk_device_synchronize"); }
cuzk_status cuzk_memcpy_async(int32_t, void*, const void*, uint64_t, void*) { return no_cuda("cuzk_memcpy_async"); }
cuzk_status cuzk_fill_u32(int32_t, void*, uint64_t, uint32_t, void*) { return no_cuda("cuzk_fill_u32"); }

}  // extern "C"
