/*
 * cuzk field layer: C ABI.
 *
 * This header is the only interface between Rust and the C++/CUDA code of the
 * field layer. It is turned into `crates/field/src/sys.rs` by
 * `cargo xtask bindings`; keep it plain C (no C++ types, no size_t: lengths
 * are uint64_t so that bindgen needs no compiler builtin headers).
 *
 * Every function returns a cuzk_status by value. No C++ exception crosses
 * this boundary: the implementations catch everything and turn it into a
 * status code with a message.
 */
#ifndef CUZK_FIELD_H
#define CUZK_FIELD_H

#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The element types. Layouts equal arkworks' (ark-bls12-381 0.6):
 *  FR:  Fr, 8 x u32 limbs little-endian, Montgomery form, R = 2^256 (32 bytes)
 *  FP:  Fp, 12 x u32 limbs little-endian, Montgomery form, R = 2^384 (48 bytes)
 *  FP2: Fp2 = c0 + c1*u with u^2 = -1, {c0, c1} (96 bytes)
 *  G1:  points over FP; G2: points over FP2. */
typedef enum cuzk_kind {
    CUZK_KIND_FR = 0,
    CUZK_KIND_FP = 1,
    CUZK_KIND_FP2 = 2,
    CUZK_KIND_G1 = 3,
    CUZK_KIND_G2 = 4
} cuzk_kind;

/* Element-wise operations: out[i] = op(a[i], b[i]).
 *
 * Field kinds (FR, FP, FP2), operands and result are field elements:
 *   ADD a+b, SUB a-b, NEG -a, MUL a*b, SQR a^2, INV a^-1 (0 maps to 0),
 *   POW a^e where b[i] holds e as a plain (non-Montgomery) little-endian
 *   integer of the element's width (FR: 256 bits, FP: 384 bits; FP2: not
 *   supported). NEG, SQR and INV ignore b (it may be null).
 *   FP2 supports ADD, SUB, NEG, MUL, SQR, INV.
 *
 * Point kinds (G1, G2). Layouts, with F the coordinate field:
 *   affine   {F x, y}           identity = (0, 0)           (arkworks Affine)
 *   jacobian {F x, y, z}        x/z^2, y/z^3; identity z = 0 (arkworks Projective)
 *   xyzz     {F x, y, zz, zzz}  x/zz, y/zzz; identity zz = 0
 *   JAC_DBL   a jacobian            -> out jacobian 2a
 *   JAC_ADD   a, b jacobian         -> out jacobian a+b
 *   JAC_MADD  a jacobian, b affine  -> out jacobian a+b
 *   XYZZ_DBL  a xyzz                -> out xyzz 2a
 *   XYZZ_ADD  a, b xyzz             -> out xyzz a+b
 *   XYZZ_MADD a xyzz, b affine      -> out xyzz a+b
 * All point operations are complete: identity operands, a == b and a == -b
 * give the right result. */
typedef enum cuzk_op {
    CUZK_OP_ADD = 0,
    CUZK_OP_SUB = 1,
    CUZK_OP_NEG = 2,
    CUZK_OP_MUL = 3,
    CUZK_OP_SQR = 4,
    CUZK_OP_INV = 5,
    CUZK_OP_POW = 6,
    CUZK_OP_JAC_DBL = 7,
    CUZK_OP_JAC_ADD = 8,
    CUZK_OP_JAC_MADD = 9,
    CUZK_OP_XYZZ_DBL = 10,
    CUZK_OP_XYZZ_ADD = 11,
    CUZK_OP_XYZZ_MADD = 12
} cuzk_op;

/* Sizes in bytes of one element of a, b and out for (kind, op); 0 for an
 * operand the op does not read. Returns CUZK_ERR_INVALID_ARGUMENT for an
 * unsupported pair. */
cuzk_status cuzk_field_op_layout(int32_t kind, int32_t op, uint64_t* a_bytes,
                                 uint64_t* b_bytes, uint64_t* out_bytes);

/* The same formulas as the GPU, compiled for the host CPU (portable C++ in
 * place of PTX). a, b, out are host arrays of n elements each (b may be null
 * where the op does not read it). out may alias a. */
cuzk_status cuzk_field_host_apply(int32_t kind, int32_t op, const void* a,
                                  const void* b, void* out, uint64_t n);

/* 1 when this library was compiled with nvcc (GPU kernels present). */
int32_t cuzk_field_cuda_compiled(void);

/* Number of usable CUDA devices; fails with CUZK_ERR_NO_CUDA_BUILD or
 * CUZK_ERR_NO_DEVICE when there are none. */
cuzk_status cuzk_gpu_device_count(int32_t* count);

/* Describes device `device`: name (NUL-terminated, truncated to name_bytes),
 * compute capability, multiprocessor count, total memory in bytes. */
cuzk_status cuzk_gpu_device_info(int32_t device, char* name, uint64_t name_bytes,
                                 int32_t* cc_major, int32_t* cc_minor,
                                 int32_t* sm_count, uint64_t* total_memory_bytes);

/* The operands of one element-wise operation: out[i] = op(a[i], b[i]) for
 * i < n, with element sizes from cuzk_field_op_layout(kind, op). `b` may be
 * null where the op reads no b; `out` is not read by cuzk_field_gpu_bench
 * (it may be null there). */
typedef struct cuzk_field_operands {
    int32_t kind; /* a cuzk_kind */
    int32_t op;   /* a cuzk_op */
    const void* a;
    const void* b;
    void* out;
    uint64_t n; /* elements of each array */
} cuzk_field_operands;

/* Element-wise op on the GPU over device-resident buffers (device
 * pointers), launched on `stream` (a cudaStream_t, 0 for the legacy default
 * stream) of device `device`. Asynchronous: the caller synchronizes. */
cuzk_status cuzk_field_gpu_apply_device(int32_t device, const cuzk_field_operands* operands,
                                        void* stream);

/* Element-wise op on the GPU from host arrays: copies a and b in, runs the
 * kernel, copies out back, synchronously. If elapsed_ms is not null it
 * receives the kernel time alone (CUDA events), in milliseconds. */
cuzk_status cuzk_field_gpu_apply(int32_t device, const cuzk_field_operands* operands,
                                 float* elapsed_ms);

/* Runs the op `reps` times on device-resident copies of the host arrays a
 * and b (out is not used) and reports the median kernel time in
 * milliseconds (CUDA events), for benchmarks. */
cuzk_status cuzk_field_gpu_bench(int32_t device, const cuzk_field_operands* operands,
                                 uint32_t reps, float* median_ms);

#ifdef __cplusplus
}
#endif

#endif /* CUZK_FIELD_H */
