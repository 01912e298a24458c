// cuzk allocator layer: checked wrappers over the CUDA runtime's memory
// calls (see include/cuzk/alloc.h). Policy lives in Rust (crates/alloc).
#include <cuda_runtime.h>

#include "cuzk/alloc.h"
#include "cuzk/cuda_status.cuh"

using cuzk::guard;
using cuzk::ok;

#define CUZK_NEED(cond, msg) \
    if (!(cond)) return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0, "%s", msg)

extern "C" {

cuzk_status cuzk_mem_get_info(int32_t device, uint64_t* free_bytes, uint64_t* total_bytes) {
    return guard("cuzk_mem_get_info", [&]() -> cuzk_status {
        CUZK_NEED(free_bytes && total_bytes, "cuzk_mem_get_info: null out-pointer");
        CUZK_CUDA_TRY(cudaSetDevice(device));
        size_t f = 0, t = 0;
        CUZK_CUDA_TRY(cudaMemGetInfo(&f, &t));
        *free_bytes = f;
        *total_bytes = t;
        return ok();
    });
}

cuzk_status cuzk_malloc(int32_t device, uint64_t bytes, void** ptr) {
    return guard("cuzk_malloc", [&]() -> cuzk_status {
        CUZK_NEED(ptr, "cuzk_malloc: null out-pointer");
        *ptr = nullptr;
        CUZK_CUDA_TRY(cudaSetDevice(device));
        CUZK_CUDA_TRY(cudaMalloc(ptr, bytes));
        return ok();
    });
}

cuzk_status cuzk_free(int32_t device, void* ptr) {
    return guard("cuzk_free", [&]() -> cuzk_status {
        CUZK_CUDA_TRY(cudaSetDevice(device));
        CUZK_CUDA_TRY(cudaFree(ptr));
        return ok();
    });
}

cuzk_status cuzk_malloc_async(int32_t device, uint64_t bytes, void* pool, void* stream, void** ptr) {
    return guard("cuzk_malloc_async", [&]() -> cuzk_status {
        CUZK_NEED(ptr, "cuzk_malloc_async: null out-pointer");
        *ptr = nullptr;
        CUZK_CUDA_TRY(cudaSetDevice(device));
        if (pool) {
            CUZK_CUDA_TRY(cudaMallocFromPoolAsync(ptr, bytes, (cudaMemPool_t)pool, (cudaStream_t)stream));
        } else {
            CUZK_CUDA_TRY(cudaMallocAsync(ptr, bytes, (cudaStream_t)stream));
        }
        return ok();
    });
}

cuzk_status cuzk_free_async(int32_t device, void* ptr, void* stream) {
    return guard("cuzk_free_async", [&]() -> cuzk_status {
        CUZK_CUDA_TRY(cudaSetDevice(device));
        CUZK_CUDA_TRY(cudaFreeAsync(ptr, (cudaStream_t)stream));
        return ok();
    });
}

cuzk_status cuzk_pool_default(int32_t device, void** pool) {
    return guard("cuzk_pool_default", [&]() -> cuzk_status {
        CUZK_NEED(pool, "cuzk_pool_default: null out-pointer");
        cudaMemPool_t p = nullptr;
        CUZK_CUDA_TRY(cudaDeviceGetDefaultMemPool(&p, device));
        *pool = (void*)p;
        return ok();
    });
}

cuzk_status cuzk_pool_create(int32_t device, uint64_t release_threshold, void** pool) {
    return guard("cuzk_pool_create", [&]() -> cuzk_status {
        CUZK_NEED(pool, "cuzk_pool_create: null out-pointer");
        cudaMemPoolProps props = {};
        props.allocType = cudaMemAllocationTypePinned;
        props.handleTypes = cudaMemHandleTypeNone;
        props.location.type = cudaMemLocationTypeDevice;
        props.location.id = device;
        cudaMemPool_t p = nullptr;
        CUZK_CUDA_TRY(cudaMemPoolCreate(&p, &props));
        unsigned long long t = release_threshold;
        cudaError_t e = cudaMemPoolSetAttribute(p, cudaMemPoolAttrReleaseThreshold, &t);
        if (e != cudaSuccess) {
            cudaMemPoolDestroy(p);
            return cuzk::cuda_status(e, "cudaMemPoolSetAttribute(ReleaseThreshold)");
        }
        *pool = (void*)p;
        return ok();
    });
}

cuzk_status cuzk_pool_destroy(int32_t device, void* pool) {
    return guard("cuzk_pool_destroy", [&]() -> cuzk_status {
        CUZK_CUDA_TRY(cudaSetDevice(device));
        CUZK_CUDA_TRY(cudaMemPoolDestroy((cudaMemPool_t)pool));
        return ok();
    });
}

cuzk_status cuzk_pool_set_release_threshold(int32_t device, void* pool, uint64_t bytes) {
    return guard("cuzk_pool_set_release_threshold", [&]() -> cuzk_status {
        CUZK_CUDA_TRY(cudaSetDevice(device));
        unsigned long long t = bytes;
        CUZK_CUDA_TRY(cudaMemPoolSetAttribute((cudaMemPool_t)pool, cudaMemPoolAttrReleaseThreshold, &t));
        return ok();
    });
}

cuzk_status cuzk_pool_trim(int32_t device, void* pool, uint64_t keep_bytes) {
    return guard("cuzk_pool_trim", [&]() -> cuzk_status {
        CUZK_CUDA_TRY(cudaSetDevice(device));
        CUZK_CUDA_TRY(cudaMemPoolTrimTo((cudaMemPool_t)pool, keep_bytes));
        return ok();
    });
}

cuzk_status cuzk_pool_usage(int32_t device, void* pool, uint64_t* reserved_bytes, uint64_t* used_bytes) {
    return guard("cuzk_pool_usage", [&]() -> cuzk_status {
        CUZK_NEED(reserved_bytes && used_bytes, "cuzk_pool_usage: null out-pointer");
        CUZK_CUDA_TRY(cudaSetDevice(device));
        unsigned long long r = 0, u = 0;
        CUZK_CUDA_TRY(cudaMemPoolGetAttribute((cudaMemPool_t)pool, cudaMemPoolAttrReservedMemCurrent, &r));
        CUZK_CUDA_TRY(cudaMemPoolGetAttribute((cudaMemPool_t)pool, cudaMemPoolAttrUsedMemCurrent, &u));
        *reserved_bytes = r;
        *used_bytes = u;
        return ok();
    });
}

cuzk_status cuzk_malloc_managed(int32_t device, uint64_t bytes, void* stream, void** ptr) {
    return guard("cuzk_malloc_managed", [&]() -> cuzk_status {
        CUZK_NEED(ptr, "cuzk_malloc_managed: null out-pointer");
        *ptr = nullptr;
        CUZK_CUDA_TRY(cudaSetDevice(device));
        void* p = nullptr;
        CUZK_CUDA_TRY(cudaMallocManaged(&p, bytes, cudaMemAttachGlobal));
        cudaMemLocation loc = {};
        loc.type = cudaMemLocationTypeDevice;
        loc.id = device;
        cudaError_t e = cudaMemAdvise(p, bytes, cudaMemAdviseSetPreferredLocation, loc);
        if (e == cudaSuccess) e = cudaMemPrefetchAsync(p, bytes, loc, 0, (cudaStream_t)stream);
        if (e != cudaSuccess) {
            cudaFree(p);
            return cuzk::cuda_status(e, "cudaMemAdvise/cudaMemPrefetchAsync (managed)");
        }
        *ptr = p;
        return ok();
    });
}

cuzk_status cuzk_host_alloc(uint64_t bytes, void** ptr) {
    return guard("cuzk_host_alloc", [&]() -> cuzk_status {
        CUZK_NEED(ptr, "cuzk_host_alloc: null out-pointer");
        *ptr = nullptr;
        CUZK_CUDA_TRY(cudaHostAlloc(ptr, bytes, cudaHostAllocPortable | cudaHostAllocMapped));
        return ok();
    });
}

cuzk_status cuzk_host_free(void* ptr) {
    return guard("cuzk_host_free", [&]() -> cuzk_status {
        CUZK_CUDA_TRY(cudaFreeHost(ptr));
        return ok();
    });
}

cuzk_status cuzk_host_register(void* ptr, uint64_t bytes) {
    return guard("cuzk_host_register", [&]() -> cuzk_status {
        CUZK_NEED(ptr && bytes, "cuzk_host_register: null pointer or zero length");
        CUZK_CUDA_TRY(cudaHostRegister(ptr, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped));
        return ok();
    });
}

cuzk_status cuzk_host_unregister(void* ptr) {
    return guard("cuzk_host_unregister", [&]() -> cuzk_status {
        CUZK_CUDA_TRY(cudaHostUnregister(ptr));
        return ok();
    });
}

// The memory type of host address `p`: cudaMemoryTypeUnregistered for
// pageable memory (older runtimes answer cudaErrorInvalidValue, which is
// cleared here and read as unregistered).
static cudaError_t host_memory_type(const void* p, cudaMemoryType* type) {
    cudaPointerAttributes attr = {};
    cudaError_t e = cudaPointerGetAttributes(&attr, p);
    if (e == cudaErrorInvalidValue) {
        (void)cudaGetLastError();
        *type = cudaMemoryTypeUnregistered;
        return cudaSuccess;
    }
    *type = attr.type;
    return e;
}

cuzk_status cuzk_host_is_page_locked(const void* ptr, uint64_t bytes, int32_t* out) {
    return guard("cuzk_host_is_page_locked", [&]() -> cuzk_status {
        CUZK_NEED(out, "cuzk_host_is_page_locked: null out-pointer");
        *out = 0;
        if (!ptr || bytes == 0) return ok();
        cudaMemoryType first = cudaMemoryTypeUnregistered, last = cudaMemoryTypeUnregistered;
        CUZK_CUDA_TRY(host_memory_type(ptr, &first));
        if (first != cudaMemoryTypeHost) return ok();
        CUZK_CUDA_TRY(host_memory_type((const char*)ptr + (bytes - 1), &last));
        *out = last == cudaMemoryTypeHost ? 1 : 0;
        return ok();
    });
}

cuzk_status cuzk_stream_create_priority(int32_t device, int32_t high, void** stream) {
    return guard("cuzk_stream_create_priority", [&]() -> cuzk_status {
        CUZK_NEED(stream, "cuzk_stream_create_priority: null out-pointer");
        CUZK_CUDA_TRY(cudaSetDevice(device));
        int least = 0, greatest = 0;
        CUZK_CUDA_TRY(cudaDeviceGetStreamPriorityRange(&least, &greatest));
        cudaStream_t s = nullptr;
        CUZK_CUDA_TRY(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking,
                                                   high ? greatest : least));
        *stream = (void*)s;
        return ok();
    });
}

cuzk_status cuzk_stream_destroy(int32_t device, void* stream) {
    return guard("cuzk_stream_destroy", [&]() -> cuzk_status {
        CUZK_CUDA_TRY(cudaSetDevice(device));
        CUZK_CUDA_TRY(cudaStreamDestroy((cudaStream_t)stream));
        return ok();
    });
}

cuzk_status cuzk_stream_synchronize(int32_t device, void* stream) {
    return guard("cuzk_stream_synchronize", [&]() -> cuzk_status {
        CUZK_CUDA_TRY(cudaSetDevice(device));
        CUZK_CUDA_TRY(cudaStreamSynchronize((cudaStream_t)stream));
        return ok();
    });
}

cuzk_status cuzk_event_create(int32_t device, void** event) {
    return guard("cuzk_event_create", [&]() -> cuzk_status {
        CUZK_NEED(event, "cuzk_event_create: null out-pointer");
        *event = nullptr;
        CUZK_CUDA_TRY(cudaSetDevice(device));
        cudaEvent_t e = nullptr;
        CUZK_CUDA_TRY(cudaEventCreate(&e));
        *event = (void*)e;
        return ok();
    });
}

cuzk_status cuzk_event_destroy(int32_t device, void* event) {
    return guard("cuzk_event_destroy", [&]() -> cuzk_status {
        CUZK_NEED(event, "cuzk_event_destroy: null event");
        CUZK_CUDA_TRY(cudaSetDevice(device));
        CUZK_CUDA_TRY(cudaEventDestroy((cudaEvent_t)event));
        return ok();
    });
}

cuzk_status cuzk_event_record(int32_t device, void* event, void* stream) {
    return guard("cuzk_event_record", [&]() -> cuzk_status {
        CUZK_NEED(event, "cuzk_event_record: null event");
        CUZK_CUDA_TRY(cudaSetDevice(device));
        CUZK_CUDA_TRY(cudaEventRecord((cudaEvent_t)event, (cudaStream_t)stream));
        return ok();
    });
}

cuzk_status cuzk_event_elapsed_ms(int32_t device, void* start, void* stop, float* ms) {
    return guard("cuzk_event_elapsed_ms", [&]() -> cuzk_status {
        CUZK_NEED(start && stop && ms, "cuzk_event_elapsed_ms: null pointer");
        CUZK_CUDA_TRY(cudaSetDevice(device));
        CUZK_CUDA_TRY(cudaEventSynchronize((cudaEvent_t)stop));
        CUZK_CUDA_TRY(cudaEventElapsedTime(ms, (cudaEvent_t)start, (cudaEvent_t)stop));
        return ok();
    });
}

cuzk_status cuzk_device_synchronize(int32_t device) {
    return guard("cuzk_device_synchronize", [&]() -> cuzk_status {
        CUZK_CUDA_TRY(cudaSetDevice(device));
        CUZK_CUDA_TRY(cudaDeviceSynchronize());
        return ok();
    });
}

cuzk_status cuzk_memcpy_async(int32_t device, void* dst, const void* src, uint64_t bytes, void* stream) {
    return guard("cuzk_memcpy_async", [&]() -> cuzk_status {
        CUZK_NEED((dst && src) || bytes == 0, "cuzk_memcpy_async: null pointer");
        CUZK_CUDA_TRY(cudaSetDevice(device));
        CUZK_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, (cudaStream_t)stream));
        return ok();
    });
}

static __global__ void fill_u32_kernel(uint32_t* p, uint64_t words, uint32_t value) {
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < words;
         i += (uint64_t)gridDim.x * blockDim.x)
        p[i] = value;
}

cuzk_status cuzk_fill_u32(int32_t device, void* ptr, uint64_t words, uint32_t value, void* stream) {
    return guard("cuzk_fill_u32", [&]() -> cuzk_status {
        CUZK_NEED(ptr || words == 0, "cuzk_fill_u32: null pointer");
        if (words == 0) return ok();
        CUZK_CUDA_TRY(cudaSetDevice(device));
        uint64_t blocks = (words + 255) / 256;
        if (blocks > 65535) blocks = 65535;
        fill_u32_kernel<<<(unsigned)blocks, 256, 0, (cudaStream_t)stream>>>((uint32_t*)ptr, words, value);
        CUZK_CUDA_TRY(cudaGetLastError());
        return ok();
    });
}

// Record k of dst is record idx[k] of src, in 16-byte words: thread w moves
// word w % words of record w / words, so that a warp reads consecutive words
// of its records (whole 32-byte sectors of each 96- or 192-byte record) and
// the reads of neighbouring records merge into full lines on the link.
// Plain global loads (no __restrict__, so no read-only-cache path) for the
// host-mapped source and indices.
static __global__ void gather_records_kernel(uint4* dst, const uint4* src, const uint32_t* idx,
                                             uint64_t count, uint32_t words) {
    uint64_t total = count * words;
    for (uint64_t w = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; w < total;
         w += (uint64_t)gridDim.x * blockDim.x) {
        uint64_t k = w / words;
        uint64_t j = w - k * words;
        dst[w] = src[(uint64_t)idx[k] * words + j];
    }
}

// The device address of byte `offset` of the mapped page-locked host
// allocation or registration that starts at `base`. Memory the runtime does
// not map for this device is CUZK_ERR_INVALID_ARGUMENT with no CUDA error
// left behind (the caller then gathers on the host); any other failure is
// the CUDA error itself.
static cuzk_status mapped_address(const void* base, uint64_t offset, const char* what, const void** out) {
    void* d = nullptr;
    cudaError_t e = cudaHostGetDevicePointer(&d, const_cast<void*>(base), 0);
    if (e == cudaErrorInvalidValue || e == cudaErrorNotSupported || (e == cudaSuccess && !d)) {
        (void)cudaGetLastError();
        return cuzk::fail(CUZK_ERR_INVALID_ARGUMENT, 0,
                          "cuzk_gather_mapped: the %s is not mapped page-locked host memory (%s)", what,
                          cudaGetErrorString(e));
    }
    CUZK_CUDA_TRY(e);
    *out = (const char*)d + offset;
    return ok();
}

cuzk_status cuzk_gather_mapped(int32_t device, const cuzk_gather_args* args, void* stream) {
    return guard("cuzk_gather_mapped", [&]() -> cuzk_status {
        CUZK_NEED(args, "cuzk_gather_mapped: null arguments");
        const cuzk_gather_args& a = *args;
        if (a.count == 0) return ok();
        CUZK_NEED(a.dst && a.src_base && a.indices_base, "cuzk_gather_mapped: null pointer");
        CUZK_NEED(a.record_bytes > 0 && a.record_bytes % 16 == 0,
                  "cuzk_gather_mapped: records must be a non-zero multiple of 16 bytes");
        CUZK_NEED((uintptr_t)a.dst % 16 == 0, "cuzk_gather_mapped: the destination must be 16-byte aligned");
        CUZK_CUDA_TRY(cudaSetDevice(device));
        // A failure reported below must be this call's own: clear any
        // earlier non-sticky error first.
        (void)cudaGetLastError();
        const void* src = nullptr;
        const void* idx = nullptr;
        cuzk_status s = mapped_address(a.src_base, a.src_offset, "source", &src);
        if (s.code != 0) return s;
        s = mapped_address(a.indices_base, a.indices_offset, "index list", &idx);
        if (s.code != 0) return s;
        CUZK_NEED((uintptr_t)src % 16 == 0 && (uintptr_t)idx % 4 == 0,
                  "cuzk_gather_mapped: the source must be 16-byte and the indices 4-byte aligned");
        int sms = 0;
        CUZK_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
        uint32_t words = a.record_bytes / 16;
        uint64_t total = a.count * words;
        // Two blocks an SM: each thread waits about two PCIe round trips
        // (its index, then its word) for 16 bytes, so 512 threads an SM keep
        // several times the link's bandwidth in flight, and the SMs stay
        // with the kernels beside the gather (H's MSM, the chunk's own).
        uint64_t blocks = (total + 255) / 256;
        uint64_t cap = 2 * (uint64_t)(sms > 0 ? sms : 1);
        if (blocks > cap) blocks = cap;
        gather_records_kernel<<<(unsigned)blocks, 256, 0, (cudaStream_t)stream>>>(
            (uint4*)a.dst, (const uint4*)src, (const uint32_t*)idx, a.count, words);
        CUZK_CUDA_TRY(cudaGetLastError());
        return ok();
    });
}

}  // extern "C"
