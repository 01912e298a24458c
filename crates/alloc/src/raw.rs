//! The C ABI's status check and the raw pointer the RAII types hold.

use crate::sys;
use cuzk_field::{Error, Result};
use std::ffi::c_void;

/// The status of a C ABI call as a `Result`.
pub(crate) fn check(s: sys::cuzk_status) -> Result<()> {
    Error::from_status(s.code, s.cuda_error, &s.message)
}

/// A raw pointer that may cross threads (device and pinned pointers are
/// plain addresses; the types holding them control access).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ptr(pub(crate) *mut c_void);
// SAFETY: a device or pinned-host address carries no thread affinity.
unsafe impl Send for Ptr {}
// SAFETY: as above; shared access is read-only at this level.
unsafe impl Sync for Ptr {}
