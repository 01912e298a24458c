//! The error type of the field layer.

use crate::sys;

/// Result with the field layer's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong in a call into the field layer. Each message says what
/// was wrong and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// An argument was wrong: lengths that differ, an element type that does
    /// not match the operation, a non-canonical field encoding.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// cuzk was built without CUDA (no nvcc at build time).
    #[error("{0}")]
    NoCudaBuild(String),
    /// No usable CUDA device: no driver, no GPU, or a driver too old.
    #[error("no usable GPU: {0}")]
    NoDevice(String),
    /// A CUDA call or kernel launch failed; `code` is the `cudaError_t`.
    /// (Failures that map to another variant, such as an invalid device
    /// ordinal or out-of-memory, name the CUDA error in their message.)
    #[error("CUDA error {code}: {message}")]
    Cuda {
        /// The CUDA runtime error number.
        code: i32,
        /// Which call failed and the runtime's description.
        message: String,
    },
    /// Device or pinned host memory could not be allocated.
    #[error("out of memory: {0}")]
    OutOfMemory(String),
    /// A failure inside the native code that fits no other kind.
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    /// Turns a native status into `Ok(())` or the matching error.
    pub(crate) fn check(status: sys::cuzk_status) -> Result<()> {
        Self::from_status(status.code, status.cuda_error, &status.message)
    }

    /// Turns the parts of a native `cuzk_status` (any cuzk crate's bindings:
    /// code, CUDA error number, NUL-terminated message) into `Ok(())` or the
    /// matching error. For cuzk's own crates; not a stable interface.
    #[doc(hidden)]
    pub fn from_status(code: i32, cuda_error: i32, message: &[std::ffi::c_char]) -> Result<()> {
        let bytes: Vec<u8> = message
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        let message = String::from_utf8_lossy(&bytes).into_owned();
        Err(match code as u32 {
            sys::CUZK_OK => return Ok(()),
            sys::CUZK_ERR_INVALID_ARGUMENT => Error::InvalidArgument(message),
            sys::CUZK_ERR_NO_CUDA_BUILD => Error::NoCudaBuild(message),
            sys::CUZK_ERR_NO_DEVICE => Error::NoDevice(message),
            sys::CUZK_ERR_CUDA => Error::Cuda {
                code: cuda_error,
                message,
            },
            sys::CUZK_ERR_OUT_OF_MEMORY => Error::OutOfMemory(message),
            _ => Error::Internal(format!("status {code}: {message}")),
        })
    }

    /// True for the errors that mean "there is no GPU to use here" (a CPU-only
    /// build or no device), as opposed to a failure on a GPU that exists.
    pub fn is_no_gpu(&self) -> bool {
        matches!(self, Error::NoCudaBuild(_) | Error::NoDevice(_))
    }
}
