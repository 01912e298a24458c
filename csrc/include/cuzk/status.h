/*
 * cuzk: the status every C ABI function returns. Shared by all cuzk headers.
 * Plain C; lengths are uint64_t (no size_t) so bindgen needs no builtin headers.
 */
#ifndef CUZK_STATUS_H
#define CUZK_STATUS_H

#include <stdint.h>

/* Status codes. */
#define CUZK_OK 0
/* An argument was wrong (unknown kind/op, null pointer, bad length). */
#define CUZK_ERR_INVALID_ARGUMENT 1
/* The library was built without CUDA (no nvcc at build time). */
#define CUZK_ERR_NO_CUDA_BUILD 2
/* No usable CUDA device (no driver, no GPU, or the driver is too old). */
#define CUZK_ERR_NO_DEVICE 3
/* A CUDA runtime call or kernel launch failed; message names it. */
#define CUZK_ERR_CUDA 4
/* Device or host memory could not be allocated. */
#define CUZK_ERR_OUT_OF_MEMORY 5
/* Anything else (a C++ exception that was caught). */
#define CUZK_ERR_INTERNAL 6

#define CUZK_STATUS_MESSAGE_BYTES 1024

/* Result of every call: code (CUZK_OK on success) and a NUL-terminated
 * message saying what went wrong and what to do. */
typedef struct cuzk_status {
    int32_t code;
    /* The cudaError_t number when the failure came from a CUDA call (whatever
     * the code it maps to), else 0. */
    int32_t cuda_error;
    char message[CUZK_STATUS_MESSAGE_BYTES];
} cuzk_status;

#endif /* CUZK_STATUS_H */
