//! cuzk-field: BLS12-381 field elements and curve points, shared by the CPU
//! (arkworks) and the GPU (cuzk's CUDA device headers) without conversion.
//!
//! - [`layout`]: the element types. `Fr`, `Fp`, `Fp2`, `G1Affine`,
//!   `G1Projective` (Jacobian), `G2Affine`, `G2Projective` *are* arkworks'
//!   types (ark-bls12-381 0.6); their memory layout (Montgomery form,
//!   little-endian 64-bit limbs, R = 2^256 for Fr and 2^384 for Fp, affine
//!   identity as (0, 0)) is the layout the CUDA headers in `csrc/include/cuzk/`
//!   read, which compile-time assertions pin down. [`Xyzz`] is cuzk's own
//!   extended-Jacobian point for bucket accumulation.
//! - [`ops`]: element-wise field and point operations on the GPU, or on the
//!   CPU through a host build of the same device formulas; the entry point
//!   the tests and benchmarks use.
//! - [`gpu`]: device discovery.
//!
//! Everything returns [`Result`]; no panic crosses the FFI boundary.
//! Crates that compile their own CUDA code find the device headers through
//! the `DEP_CUZK_FIELD_INCLUDE` build variable (this crate `links` as
//! `cuzk_field`), and whether CUDA was compiled through `DEP_CUZK_FIELD_CUDA`.
//!
//! # Features
//!
//! - `cuda`: require CUDA (a missing nvcc is a build error instead of a
//!   CPU-only build).
//! - `test-utils`: helpers for benchmarks and tests outside the default
//!   API: `ops::gpu_bench` (median kernel time of one operation).

mod backend;
mod error;
pub mod gpu;
pub mod layout;
pub mod ops;
#[allow(unreachable_pub)] // generated bindings: `pub` items of a private module
mod sys;

pub use backend::Backend;
pub use error::{Error, Result};
pub use layout::{
    DeviceRepr, Fp, Fp2, Fr, G1Affine, G1Projective, G1Xyzz, G2Affine, G2Projective, G2Xyzz, Xyzz,
};
pub use ops::{Kind, Op};

/// True when this build compiled the CUDA kernels (nvcc was found at build
/// time). When false, every GPU entry point returns [`Error::NoCudaBuild`].
pub fn cuda_compiled() -> bool {
    // SAFETY: takes no arguments, reads a constant.
    unsafe { sys::cuzk_field_cuda_compiled() == 1 }
}
