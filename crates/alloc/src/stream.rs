//! [`Stream`]: a CUDA stream shared by the buffers and kernels ordered on it.

use crate::raw::{check, Ptr};
use crate::sys;
use cuzk_field::Result;
use std::ffi::c_void;
use std::sync::Arc;

/// A CUDA stream (non-blocking), destroyed when its last handle is dropped.
/// Cloning shares it; buffers keep their stream alive for their async free.
#[derive(Clone, Debug)]
pub struct Stream {
    inner: Arc<StreamInner>,
}

#[derive(Debug)]
struct StreamInner {
    device: i32,
    raw: Ptr,
    owned: bool,
}

impl Drop for StreamInner {
    fn drop(&mut self) {
        if self.owned {
            // SAFETY: the stream was created by cuzk_stream_create_priority
            // and is destroyed once; CUDA lets pending work finish.
            let _ = check(unsafe { sys::cuzk_stream_destroy(self.device, self.raw.0) });
        }
    }
}

impl Stream {
    /// A new non-blocking stream on `device`.
    ///
    /// # Errors
    /// [`Error::NoCudaBuild`](crate::Error::NoCudaBuild),
    /// [`Error::NoDevice`](crate::Error::NoDevice) or
    /// [`Error::Cuda`](crate::Error::Cuda).
    pub fn new(device: i32) -> Result<Stream> {
        Self::with_priority(device, false)
    }

    /// A new non-blocking stream on `device` with the device's greatest
    /// scheduling priority (`high`) or its least (CUDA's default, as
    /// [`Stream::new`]):
    /// where kernels of several streams wait for the SMs, the blocks of a
    /// high-priority stream's kernels start first (cudaStreamCreateWithPriority;
    /// running blocks are not preempted).
    ///
    /// # Errors
    /// As [`Stream::new`].
    pub fn with_priority(device: i32, high: bool) -> Result<Stream> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: out-pointer valid for the call.
        check(unsafe { sys::cuzk_stream_create_priority(device, i32::from(high), &mut raw) })?;
        Ok(Stream {
            inner: Arc::new(StreamInner {
                device,
                raw: Ptr(raw),
                owned: true,
            }),
        })
    }

    /// The legacy default stream of `device` (never destroyed).
    pub fn legacy_default(device: i32) -> Stream {
        Stream {
            inner: Arc::new(StreamInner {
                device,
                raw: Ptr(std::ptr::null_mut()),
                owned: false,
            }),
        }
    }

    /// The `cudaStream_t`, for cuzk kernels' launch functions.
    pub fn as_raw(&self) -> *mut c_void {
        self.inner.raw.0
    }

    /// The device ordinal.
    pub fn device(&self) -> i32 {
        self.inner.device
    }

    /// Waits for all work queued on the stream.
    ///
    /// # Errors
    /// [`Error::Cuda`](crate::Error::Cuda) with the error of any failed work on it.
    pub fn synchronize(&self) -> Result<()> {
        // SAFETY: a live stream of this device.
        check(unsafe { sys::cuzk_stream_synchronize(self.inner.device, self.inner.raw.0) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CPU-only build's refusal is whole: the advice and the entry point's
    /// name fit the status message (a GPU build makes a stream instead).
    #[test]
    fn a_refusal_names_its_entry_point() {
        if let Err(e @ cuzk_field::Error::NoCudaBuild(_)) = Stream::new(0) {
            assert!(
                e.to_string()
                    .ends_with("(from cuzk_stream_create_priority)"),
                "{e}"
            );
        }
    }
}
