// cuzk: mapping of CUDA runtime errors to cuzk_status (nvcc host code).
#ifndef CUZK_CUDA_STATUS_CUH
#define CUZK_CUDA_STATUS_CUH

#include <cuda_runtime.h>

#include "status.hpp"

namespace cuzk {

// The status for CUDA error `e` returned by `call`; clears the runtime's
// last error (non-sticky errors such as a failed allocation then leave the
// device usable).
inline cuzk_status cuda_status(cudaError_t e, const char* call) {
    if (e == cudaSuccess) return ok();
    (void)cudaGetLastError();
    int code = CUZK_ERR_CUDA;
    const char* hint = "";
    switch (e) {
        case cudaErrorMemoryAllocation:
            code = CUZK_ERR_OUT_OF_MEMORY;
            hint = " (free device memory or lower the request)";
            break;
        case cudaErrorNoDevice:
        case cudaErrorInsufficientDriver:
        case cudaErrorInitializationError:
        case cudaErrorStubLibrary:
        case cudaErrorDevicesUnavailable:
        case cudaErrorSystemDriverMismatch:
        case cudaErrorSystemNotReady:
        case cudaErrorCompatNotSupportedOnDevice:
            code = CUZK_ERR_NO_DEVICE;
            hint = " (is an NVIDIA driver for CUDA 13 installed and a GPU visible?)";
            break;
        case cudaErrorInvalidDevice:
        case cudaErrorInvalidValue:
            code = CUZK_ERR_INVALID_ARGUMENT;
            break;
        default:
            break;
    }
    return fail(code, (int)e, "%s failed: %s (%s)%s", call, cudaGetErrorString(e),
                cudaGetErrorName(e), hint);
}

}  // namespace cuzk

// Evaluates a CUDA runtime call and returns its status from the enclosing
// function when it failed.
#define CUZK_CUDA_TRY(call)                                          \
    do {                                                             \
        cudaError_t cuzk_e_ = (call);                                \
        if (cuzk_e_ != cudaSuccess) return ::cuzk::cuda_status(cuzk_e_, #call); \
    } while (0)

#endif  // CUZK_CUDA_STATUS_CUH
