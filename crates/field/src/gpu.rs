//! CUDA device discovery.

use crate::{sys, Error, Result};

/// One CUDA device as the runtime reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Device ordinal (as in `cudaSetDevice`).
    pub ordinal: i32,
    /// Marketing name, e.g. `NVIDIA H200`.
    pub name: String,
    /// Compute capability (major, minor), e.g. (9, 0) for Hopper.
    pub compute_capability: (i32, i32),
    /// Number of streaming multiprocessors.
    pub sm_count: i32,
    /// Total device memory in bytes.
    pub total_memory_bytes: u64,
}

/// Number of usable CUDA devices.
///
/// # Errors
/// [`Error::NoCudaBuild`] when built without nvcc; [`Error::NoDevice`] when
/// the driver is missing or sees no GPU.
pub fn device_count() -> Result<usize> {
    let mut n = 0i32;
    // SAFETY: `n` is a valid out-pointer for the duration of the call.
    Error::check(unsafe { sys::cuzk_gpu_device_count(&mut n) })?;
    Ok(n as usize)
}

/// Describes device `ordinal`.
///
/// # Errors
/// As [`device_count`], plus [`Error::InvalidArgument`] for an ordinal out
/// of range.
pub fn device_info(ordinal: i32) -> Result<DeviceInfo> {
    let mut name = [0u8; 256];
    let (mut major, mut minor, mut sms, mut mem) = (0i32, 0i32, 0i32, 0u64);
    // SAFETY: every pointer is valid for the call; `name` holds 256 bytes.
    Error::check(unsafe {
        sys::cuzk_gpu_device_info(
            ordinal,
            name.as_mut_ptr().cast(),
            name.len() as u64,
            &mut major,
            &mut minor,
            &mut sms,
            &mut mem,
        )
    })?;
    let len = name.iter().position(|&c| c == 0).unwrap_or(name.len());
    Ok(DeviceInfo {
        ordinal,
        name: String::from_utf8_lossy(&name[..len]).into_owned(),
        compute_capability: (major, minor),
        sm_count: sms,
        total_memory_bytes: mem,
    })
}

/// Every usable device, or the reason there is none.
///
/// # Errors
/// As [`device_count`].
pub fn devices() -> Result<Vec<DeviceInfo>> {
    (0..device_count()? as i32).map(device_info).collect()
}
