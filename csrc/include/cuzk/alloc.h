/*
 * cuzk allocator layer: C ABI over the CUDA runtime's memory calls.
 *
 * Thin, checked wrappers: one per runtime call, each returning a
 * cuzk_status (never throwing, never aborting). The policy (budget,
 * retries, statistics, RAII) lives in Rust, in crates/alloc. Turned into
 * crates/alloc/src/sys.rs by `cargo xtask bindings`.
 *
 * Pointers are device pointers from the runtime API, usable by every cuzk
 * kernel; streams are cudaStream_t passed as void*.
 */
#ifndef CUZK_ALLOC_H
#define CUZK_ALLOC_H

#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* cudaMemGetInfo on `device`: free and total bytes. */
cuzk_status cuzk_mem_get_info(int32_t device, uint64_t* free_bytes, uint64_t* total_bytes);

/* cudaMalloc / cudaFree on `device`. */
cuzk_status cuzk_malloc(int32_t device, uint64_t bytes, void** ptr);
cuzk_status cuzk_free(int32_t device, void* ptr);

/* Stream-ordered allocation from `pool` (a cudaMemPool_t; null: the
 * device's default pool) on `stream`: cudaMallocFromPoolAsync /
 * cudaMallocAsync, and cudaFreeAsync. */
cuzk_status cuzk_malloc_async(int32_t device, uint64_t bytes, void* pool, void* stream, void** ptr);
cuzk_status cuzk_free_async(int32_t device, void* ptr, void* stream);

/* The device's default memory pool (cudaDeviceGetDefaultMemPool). */
cuzk_status cuzk_pool_default(int32_t device, void** pool);
/* A new pool on `device` (cudaMemPoolCreate, pinned device memory) with
 * the given release threshold in bytes (cudaMemPoolAttrReleaseThreshold). */
cuzk_status cuzk_pool_create(int32_t device, uint64_t release_threshold, void** pool);
cuzk_status cuzk_pool_destroy(int32_t device, void* pool);
cuzk_status cuzk_pool_set_release_threshold(int32_t device, void* pool, uint64_t bytes);
/* cudaMemPoolTrimTo(pool, keep_bytes). */
cuzk_status cuzk_pool_trim(int32_t device, void* pool, uint64_t keep_bytes);
/* Bytes the pool holds from the device (cudaMemPoolAttrReservedMemCurrent)
 * and bytes handed out (cudaMemPoolAttrUsedMemCurrent). */
cuzk_status cuzk_pool_usage(int32_t device, void* pool, uint64_t* reserved_bytes, uint64_t* used_bytes);

/* cudaMallocManaged (global attach), then cudaMemAdvise (preferred
 * location = device) and cudaMemPrefetchAsync to the device on `stream`. */
cuzk_status cuzk_malloc_managed(int32_t device, uint64_t bytes, void* stream, void** ptr);

/* Pinned host memory: cudaHostAlloc (portable, mapped) / cudaFreeHost, and
 * cudaHostRegister (portable, mapped) / cudaHostUnregister of existing
 * memory. Mapped: kernels may read it over PCIe (cuzk_gather_mapped). */
cuzk_status cuzk_host_alloc(uint64_t bytes, void** ptr);
cuzk_status cuzk_host_free(void* ptr);
cuzk_status cuzk_host_register(void* ptr, uint64_t bytes);
cuzk_status cuzk_host_unregister(void* ptr);

/* Whether the `bytes` bytes at host address `ptr` are page-locked host
 * memory (cudaHostAlloc / cudaMallocHost, or cudaHostRegister'ed): writes 1
 * to `*out` when cudaPointerGetAttributes reports cudaMemoryTypeHost for
 * both the first and the last byte of the range, else 0 (also for a null
 * pointer or zero bytes). A range whose two ends lie in two different
 * registrations with an unregistered hole between them reads as locked;
 * that only affects copy speed (cudaMemcpyAsync stays correct on pageable
 * memory). Pageable memory is not an error (CUDA >= 11 reports it as
 * cudaMemoryTypeUnregistered); should the runtime still report
 * cudaErrorInvalidValue for it, that error is cleared and the answer is 0.
 * No device, or a CUDA-less build, is an error. */
cuzk_status cuzk_host_is_page_locked(const void* ptr, uint64_t bytes, int32_t* out);

/* Streams: a non-blocking stream on `device` with the device's greatest
 * scheduling priority when `high` is nonzero, else its least (CUDA's
 * default): where kernels of several streams wait for the SMs, blocks of a
 * high-priority stream's kernels start first; its destruction, and
 * cudaStreamSynchronize; cudaDeviceSynchronize on `device`. */
cuzk_status cuzk_stream_create_priority(int32_t device, int32_t high, void** stream);
cuzk_status cuzk_stream_destroy(int32_t device, void* stream);
cuzk_status cuzk_stream_synchronize(int32_t device, void* stream);
cuzk_status cuzk_device_synchronize(int32_t device);

/* Events for timing work on a stream: cudaEventCreate (timing enabled) on
 * `device`, cudaEventDestroy, cudaEventRecord on `stream`, and the time in
 * milliseconds from `start` to `stop` (cudaEventElapsedTime, after waiting
 * for `stop` with cudaEventSynchronize; both must have been recorded). */
cuzk_status cuzk_event_create(int32_t device, void** event);
cuzk_status cuzk_event_destroy(int32_t device, void* event);
cuzk_status cuzk_event_record(int32_t device, void* event, void* stream);
cuzk_status cuzk_event_elapsed_ms(int32_t device, void* start, void* stop, float* ms);

/* Asynchronous copies on `stream` (cudaMemcpyAsync with cudaMemcpyDefault:
 * any direction, unified addressing). */
cuzk_status cuzk_memcpy_async(int32_t device, void* dst, const void* src, uint64_t bytes, void* stream);

/* A kernel that writes the 32-bit `value` to every word of `words` words
 * at `ptr` on `stream`: proves the device still runs kernels. */
cuzk_status cuzk_fill_u32(int32_t device, void* ptr, uint64_t words, uint32_t value, void* stream);

/* A gather of records from host memory by the GPU (cuzk_gather_mapped). */
typedef struct cuzk_gather_args {
    /* Device memory of `count * record_bytes` bytes, 16-byte aligned. */
    void* dst;
    /* The start of one mapped page-locked host allocation or registration
     * (cuzk_host_alloc, cuzk_host_register) that holds the source records,
     * and the byte offset of record 0 in it (the record's device address a
     * multiple of 16). */
    const void* src_base;
    uint64_t src_offset;
    /* The same for the `count` 32-bit record indices. */
    const void* indices_base;
    uint64_t indices_offset;
    uint64_t count;
    /* Bytes a record: a non-zero multiple of 16. */
    uint32_t record_bytes;
} cuzk_gather_args;

/* Record k of `dst` = record indices[k] of the source, read by a kernel on
 * `stream` from mapped page-locked host memory over PCIe (zero-copy): only
 * the chosen records cross the link and no host thread copies them. The
 * caller checks every index against the source's records and keeps both host
 * ranges locked until the stream has run the kernel. CUZK_ERR_INVALID_ARGUMENT
 * with no kernel launched (and no CUDA error left behind) when a range is not
 * mapped for `device` or misaligned; other failures are CUDA errors. */
cuzk_status cuzk_gather_mapped(int32_t device, const cuzk_gather_args* args, void* stream);

#ifdef __cplusplus
}
#endif

#endif /* CUZK_ALLOC_H */
