// cuzk: C++ helpers for building cuzk_status values at the extern "C"
// boundary. Host C++ only (g++ or nvcc's host pass); no CUDA headers.
#ifndef CUZK_STATUS_HPP
#define CUZK_STATUS_HPP

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>

#include "status.h"

namespace cuzk {

inline cuzk_status ok() {
    cuzk_status s;
    s.code = CUZK_OK;
    s.cuda_error = 0;
    s.message[0] = '\0';
    return s;
}

// A status with a printf-style message (truncated to the buffer).
inline cuzk_status fail(int code, int cuda_error, const char* fmt, ...) {
    cuzk_status s;
    s.code = code;
    s.cuda_error = cuda_error;
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(s.message, sizeof s.message, fmt, ap);
    va_end(ap);
    return s;
}

// The status every GPU entry point of a CPU-only build returns; `what`
// names the entry point.
inline cuzk_status no_cuda_build(const char* what) {
    return fail(CUZK_ERR_NO_CUDA_BUILD, 0,
                "this cuzk build is CPU-only (compiled without nvcc, or with CUZK_NO_CUDA=1), so "
                "GPU calls are unavailable; rebuild without CUZK_NO_CUDA and with nvcc reachable "
                "through NVCC, CUDA_PATH or PATH (in the cuzk repo, `cargo xtask cuda-toolkit` "
                "installs one) (from %s)",
                what);
}

// Runs `f` (returning cuzk_status) and turns any C++ exception into a
// status, so that nothing unwinds across the extern "C" boundary.
template <class F>
cuzk_status guard(const char* what, F&& f) noexcept {
    try {
        return f();
    } catch (const std::bad_alloc&) {
        return fail(CUZK_ERR_OUT_OF_MEMORY, 0, "%s: host memory exhausted", what);
    } catch (const std::exception& e) {
        return fail(CUZK_ERR_INTERNAL, 0, "%s: %s", what, e.what());
    } catch (...) {
        return fail(CUZK_ERR_INTERNAL, 0, "%s: unknown C++ exception", what);
    }
}

}  // namespace cuzk

#endif  // CUZK_STATUS_HPP
