/*
 * GPU side of the field layer (compiled by nvcc): device discovery and the
 * element-wise kernels of cuzk/field.h.
 *
 * One kernel template instance per (kind, op) (see ops.cuh), plus one with
 * 16-byte accesses for the field kinds; the host switches on (kind, op)
 * once per call and launches the matching instance. Kernels use 64-bit
 * indices and a grid-stride loop, so n may exceed 2^32.
 * Every CUDA call and every launch is checked; errors come back as
 * cuzk_status through cuzk::cuda_status (cuzk/cuda_status.cuh). Device
 * memory and events are released by RAII holders on every path.
 */
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "cuzk/cuda_status.cuh"
#include "cuzk/field.h"
#include "ops.cuh"

using cuzk::cuda_status;
using cuzk::fail;
using cuzk::guard;
using cuzk::ok;

/* Returns a failed cuzk_status from the enclosing function. */
#define CUZK_TRY(expr)                               \
    do {                                             \
        const cuzk_status cuzk_s_ = (expr);          \
        if (cuzk_s_.code != CUZK_OK) return cuzk_s_; \
    } while (0)

namespace {

/* Element i of an array of T at base, with 16-byte loads (every element
 * size is a multiple of 16; base must be 16-byte aligned). */
template <class T>
__device__ __forceinline__ T load16(const void* base, uint64_t i) {
    static_assert(sizeof(T) % 16 == 0, "element size must be a multiple of 16 bytes");
    const uint4* src = static_cast<const uint4*>(base) + i * (sizeof(T) / 16);
    T r;
#pragma unroll
    for (int k = 0; k < (int)(sizeof(T) / 16); ++k) {
        const uint4 v = src[k];
        memcpy(reinterpret_cast<char*>(&r) + 16 * k, &v, 16);
    }
    return r;
}
template <class T>
__device__ __forceinline__ void store16(void* base, uint64_t i, const T& x) {
    static_assert(sizeof(T) % 16 == 0, "element size must be a multiple of 16 bytes");
    uint4* dst = static_cast<uint4*>(base) + i * (sizeof(T) / 16);
#pragma unroll
    for (int k = 0; k < (int)(sizeof(T) / 16); ++k) {
        uint4 v;
        memcpy(&v, reinterpret_cast<const char*>(&x) + 16 * k, 16);
        dst[k] = v;
    }
}

/* out[i] = Op(a[i], b[i]) for i < n, grid-stride. kVec: whole elements with
 * 16-byte accesses (Op::kWholeLoads and 16-byte aligned pointers), which
 * the memory-bound field kernels need for full bandwidth (4-byte accesses
 * at 32..96-byte strides reach about half); else ops::apply_at. */
template <class Op, bool kVec>
__global__ void apply_kernel(const void* a, const void* b, void* out, uint64_t n) {
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        if constexpr (kVec) {
            const typename Op::A x = load16<typename Op::A>(a, i);
            if constexpr (Op::kReadsB)
                store16(out, i, Op::apply(x, load16<typename Op::B>(b, i)));
            else
                store16(out, i, Op::apply(x));
        } else {
            cuzk::ops::apply_at<Op>(a, b, out, i);
        }
    }
}

/* Launches apply_kernel<Op, kVec> on `stream` of the current device,
 * recording `start` (if not null) just before the launch so that it times
 * the kernel alone. Block size: the occupancy API's best for this kernel
 * (register use differs by an order of magnitude between Fr add and G2
 * add); grid: enough blocks to cover n, at most one full wave of resident
 * blocks (the grid-stride loop does the rest). */
template <class Op, bool kVec>
cuzk_status launch_as(const void* a, const void* b, void* out, uint64_t n, cudaStream_t stream,
                      cudaEvent_t start) {
    int min_grid = 0, block = 0;
    CUZK_CUDA_TRY(cudaOccupancyMaxPotentialBlockSize(&min_grid, &block, apply_kernel<Op, kVec>));
    const uint64_t blocks_needed = (n + (uint64_t)block - 1) / (uint64_t)block;
    const unsigned grid = (unsigned)std::min<uint64_t>(blocks_needed, (uint64_t)min_grid);
    if (start) CUZK_CUDA_TRY(cudaEventRecord(start, stream));
    (void)cudaGetLastError(); /* so that the check below sees this launch only */
    apply_kernel<Op, kVec><<<grid, block, 0, stream>>>(a, b, out, n);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return cuda_status(e, "launch of the field apply kernel");
    return ok();
}

/* Launches the kernel of run-time (kind, op) (validated by the caller) on
 * n > 0 elements, with 16-byte accesses where the op allows them and the
 * pointers are aligned. */
cuzk_status launch(int32_t kind, int32_t op, const void* a, const void* b, void* out, uint64_t n,
                   cudaStream_t stream, cudaEvent_t start) {
    cuzk_status st = fail(CUZK_ERR_INTERNAL, 0, "field apply: (kind, op) not dispatched");
    cuzk::ops::visit(kind, op, [&](auto tag) {
        using Op = typename decltype(tag)::type;
        bool vec = false;
        if constexpr (Op::kWholeLoads) {
            const uintptr_t bits =
                (uintptr_t)a | (uintptr_t)out | (Op::kReadsB ? (uintptr_t)b : 0);
            vec = bits % 16 == 0;
        }
        st = vec ? launch_as<Op, Op::kWholeLoads>(a, b, out, n, stream, start)
                 : launch_as<Op, false>(a, b, out, n, stream, start);
    });
    return st;
}

/* Device memory, freed on scope exit. */
struct DeviceBuffer {
    void* p = nullptr;
    DeviceBuffer() = default;
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    ~DeviceBuffer() {
        if (p) cudaFree(p);
    }
    cuzk_status alloc(uint64_t bytes) {
        if (bytes == 0) return ok();
        CUZK_CUDA_TRY(cudaMalloc(&p, bytes));
        return ok();
    }
};

/* Device copies of host inputs a and b (b only where the op reads it) and
 * room for out, freed on scope exit. */
struct Staging {
    DeviceBuffer a, b, out;
    cuzk_status load(const cuzk::ops::Layout& lay, const void* host_a, const void* host_b,
                     uint64_t n) {
        CUZK_TRY(a.alloc(n * lay.a_bytes));
        CUZK_TRY(b.alloc(n * lay.b_bytes));
        CUZK_TRY(out.alloc(n * lay.out_bytes));
        CUZK_CUDA_TRY(cudaMemcpy(a.p, host_a, n * lay.a_bytes, cudaMemcpyHostToDevice));
        if (lay.b_bytes != 0)
            CUZK_CUDA_TRY(cudaMemcpy(b.p, host_b, n * lay.b_bytes, cudaMemcpyHostToDevice));
        return ok();
    }
};

/* A CUDA event, destroyed on scope exit. */
struct Event {
    cudaEvent_t e = nullptr;
    Event() = default;
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    ~Event() {
        if (e) cudaEventDestroy(e);
    }
    cuzk_status create() {
        CUZK_CUDA_TRY(cudaEventCreate(&e));
        return ok();
    }
};

/* CUZK_ERR_INVALID_ARGUMENT unless p is memory the device can address
 * (device, managed or registered/pinned host memory). */
cuzk_status check_device_pointer(const char* function, const char* what, const void* p) {
    cudaPointerAttributes attr;
    CUZK_CUDA_TRY(cudaPointerGetAttributes(&attr, p));
    if (attr.type == cudaMemoryTypeUnregistered)
        return fail(CUZK_ERR_INVALID_ARGUMENT, 0,
                    "%s: %s is not device-accessible memory (pageable host memory?); use "
                    "cudaMalloc'd buffers or cuzk_field_gpu_apply",
                    function, what);
    return ok();
}

/* Kernel time between two recorded events, in milliseconds. */
cuzk_status elapsed(const Event& start, const Event& stop, float* ms) {
    CUZK_CUDA_TRY(cudaEventSynchronize(stop.e));
    CUZK_CUDA_TRY(cudaEventElapsedTime(ms, start.e, stop.e));
    return ok();
}

/* A copy of *operands, or CUZK_ERR_INVALID_ARGUMENT for a null pointer. */
cuzk_status read_operands(const char* function, const cuzk_field_operands* operands,
                          cuzk_field_operands* o) {
    if (operands == nullptr)
        return fail(CUZK_ERR_INVALID_ARGUMENT, 0, "%s: operands is null", function);
    *o = *operands;
    return ok();
}

} // namespace

extern "C" int32_t cuzk_field_cuda_compiled(void) { return 1; }

extern "C" cuzk_status cuzk_gpu_device_count(int32_t* count) {
    return guard("cuzk_gpu_device_count", [&]() -> cuzk_status {
        if (count == nullptr)
            return fail(CUZK_ERR_INVALID_ARGUMENT, 0, "cuzk_gpu_device_count: count is null");
        *count = 0;
        int n = 0;
        CUZK_CUDA_TRY(cudaGetDeviceCount(&n));
        if (n == 0)
            return fail(CUZK_ERR_NO_DEVICE, 0,
                        "cuzk_gpu_device_count: the CUDA driver sees no GPU (check nvidia-smi "
                        "and CUDA_VISIBLE_DEVICES)");
        *count = n;
        return ok();
    });
}

extern "C" cuzk_status cuzk_gpu_device_info(int32_t device, char* name, uint64_t name_bytes,
                                            int32_t* cc_major, int32_t* cc_minor,
                                            int32_t* sm_count, uint64_t* total_memory_bytes) {
    return guard("cuzk_gpu_device_info", [&]() -> cuzk_status {
        if (name == nullptr && name_bytes != 0)
            return fail(CUZK_ERR_INVALID_ARGUMENT, 0,
                        "cuzk_gpu_device_info: name is null with name_bytes > 0");
        cudaDeviceProp prop;
        CUZK_CUDA_TRY(cudaGetDeviceProperties(&prop, device));
        if (name_bytes != 0) {
            const uint64_t len = std::min<uint64_t>(strnlen(prop.name, sizeof prop.name),
                                                    name_bytes - 1);
            std::memcpy(name, prop.name, len);
            name[len] = '\0';
        }
        if (cc_major) *cc_major = prop.major;
        if (cc_minor) *cc_minor = prop.minor;
        if (sm_count) *sm_count = prop.multiProcessorCount;
        if (total_memory_bytes) *total_memory_bytes = prop.totalGlobalMem;
        return ok();
    });
}

extern "C" cuzk_status cuzk_field_gpu_apply_device(int32_t device,
                                                   const cuzk_field_operands* operands,
                                                   void* stream) {
    const char* fn = "cuzk_field_gpu_apply_device";
    return guard(fn, [&]() -> cuzk_status {
        cuzk_field_operands o = {};
        CUZK_TRY(read_operands(fn, operands, &o));
        cuzk::ops::Layout lay;
        CUZK_TRY(cuzk::ops::check_args(fn, o.kind, o.op, o.a, o.b, o.n, &lay));
        if (o.n == 0) return ok();
        if (o.out == nullptr) return fail(CUZK_ERR_INVALID_ARGUMENT, 0, "%s: out is null", fn);
        CUZK_CUDA_TRY(cudaSetDevice(device));
        CUZK_TRY(check_device_pointer(fn, "a", o.a));
        if (lay.b_bytes != 0) CUZK_TRY(check_device_pointer(fn, "b", o.b));
        CUZK_TRY(check_device_pointer(fn, "out", o.out));
        return launch(o.kind, o.op, o.a, o.b, o.out, o.n, static_cast<cudaStream_t>(stream), nullptr);
    });
}

extern "C" cuzk_status cuzk_field_gpu_apply(int32_t device, const cuzk_field_operands* operands,
                                            float* elapsed_ms) {
    const char* fn = "cuzk_field_gpu_apply";
    return guard(fn, [&]() -> cuzk_status {
        if (elapsed_ms) *elapsed_ms = 0.0f;
        cuzk_field_operands o = {};
        CUZK_TRY(read_operands(fn, operands, &o));
        cuzk::ops::Layout lay;
        CUZK_TRY(cuzk::ops::check_args(fn, o.kind, o.op, o.a, o.b, o.n, &lay));
        if (o.n == 0) return ok();
        if (o.out == nullptr) return fail(CUZK_ERR_INVALID_ARGUMENT, 0, "%s: out is null", fn);
        CUZK_CUDA_TRY(cudaSetDevice(device));

        Staging d;
        CUZK_TRY(d.load(lay, o.a, o.b, o.n));

        Event start, stop;
        CUZK_TRY(start.create());
        CUZK_TRY(stop.create());
        CUZK_TRY(launch(o.kind, o.op, d.a.p, d.b.p, d.out.p, o.n, 0, start.e));
        CUZK_CUDA_TRY(cudaEventRecord(stop.e, 0));
        float ms = 0.0f;
        CUZK_TRY(elapsed(start, stop, &ms));

        CUZK_CUDA_TRY(cudaMemcpy(o.out, d.out.p, o.n * lay.out_bytes, cudaMemcpyDeviceToHost));
        if (elapsed_ms) *elapsed_ms = ms;
        return ok();
    });
}

extern "C" cuzk_status cuzk_field_gpu_bench(int32_t device, const cuzk_field_operands* operands,
                                            uint32_t reps, float* median_ms) {
    const char* fn = "cuzk_field_gpu_bench";
    return guard(fn, [&]() -> cuzk_status {
        if (median_ms == nullptr)
            return fail(CUZK_ERR_INVALID_ARGUMENT, 0, "%s: median_ms is null", fn);
        *median_ms = 0.0f;
        if (reps == 0) return fail(CUZK_ERR_INVALID_ARGUMENT, 0, "%s: reps is 0", fn);
        cuzk_field_operands o = {};
        CUZK_TRY(read_operands(fn, operands, &o));
        cuzk::ops::Layout lay;
        CUZK_TRY(cuzk::ops::check_args(fn, o.kind, o.op, o.a, o.b, o.n, &lay));
        if (o.n == 0) return ok();
        CUZK_CUDA_TRY(cudaSetDevice(device));

        Staging d;
        CUZK_TRY(d.load(lay, o.a, o.b, o.n));

        Event start, stop;
        CUZK_TRY(start.create());
        CUZK_TRY(stop.create());
        /* One untimed run: module load, clocks, caches. */
        CUZK_TRY(launch(o.kind, o.op, d.a.p, d.b.p, d.out.p, o.n, 0, nullptr));
        CUZK_CUDA_TRY(cudaStreamSynchronize(0));

        std::vector<float> times(reps);
        for (uint32_t r = 0; r < reps; ++r) {
            CUZK_TRY(launch(o.kind, o.op, d.a.p, d.b.p, d.out.p, o.n, 0, start.e));
            CUZK_CUDA_TRY(cudaEventRecord(stop.e, 0));
            CUZK_TRY(elapsed(start, stop, &times[r]));
        }
        std::sort(times.begin(), times.end());
        const uint32_t mid = reps / 2;
        *median_ms = reps % 2 ? times[mid] : 0.5f * (times[mid - 1] + times[mid]);
        return ok();
    });
}
