//! [`DeviceBuffer`]: typed device memory from a [`DeviceMemory`], with its
//! stream, plain copies to and from the host, and its free on drop.

use crate::budget::{Reservation, ReservationUse};
use crate::memory::{DeviceMemory, Strategy};
use crate::raw::{check, Ptr};
use crate::stream::Stream;
use crate::sys;
use cuzk_field::{DeviceRepr, Error, Result};
use std::marker::PhantomData;
use std::sync::Arc;

/// The budget bytes a buffer holds: its own claim, or part of a caller's
/// reservation. Released on drop.
#[derive(Debug)]
pub(crate) enum Claim {
    Own { _held: Reservation },
    Within { _held: ReservationUse },
}

/// `len` elements of `T` in device memory, freed (on its stream, for the
/// async strategies) when dropped. The raw pointer and stream go to cuzk's
/// kernels.
pub struct DeviceBuffer<T: DeviceRepr> {
    pub(crate) ptr: Ptr,
    pub(crate) len: usize,
    pub(crate) bytes: u64,
    pub(crate) strategy: Strategy,
    pub(crate) stream: Stream,
    pub(crate) memory: Arc<DeviceMemory>,
    pub(crate) _claim: Claim,
    pub(crate) _t: PhantomData<T>,
}

impl<T: DeviceRepr> std::fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceBuffer")
            .field("len", &self.len)
            .field("bytes", &self.bytes)
            .field("strategy", &self.strategy)
            .finish()
    }
}

impl<T: DeviceRepr> DeviceBuffer<T> {
    /// Length in elements.
    pub fn len(&self) -> usize {
        self.len
    }
    /// True for a zero-length buffer.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Size in bytes.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    /// The strategy it came from.
    pub fn strategy(&self) -> Strategy {
        self.strategy
    }
    /// Its stream (allocation, copies and the async free are ordered on it).
    pub fn stream(&self) -> &Stream {
        &self.stream
    }
    /// Device pointer, for kernels.
    pub fn as_ptr(&self) -> *const T {
        self.ptr.0 as *const T
    }
    /// Mutable device pointer, for kernels.
    pub fn as_mut_ptr(&mut self) -> *mut T {
        self.ptr.0 as *mut T
    }

    /// Copies `src` into the buffer and waits for the copy.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] on a length mismatch; [`Error::Cuda`].
    pub fn copy_from_host(&mut self, src: &[T]) -> Result<()> {
        if src.len() != self.len {
            return Err(Error::InvalidArgument(format!(
                "copy_from_host: {} elements into a buffer of {}",
                src.len(),
                self.len
            )));
        }
        // SAFETY: both ranges hold `bytes` bytes; the copy completes before return.
        check(unsafe {
            sys::cuzk_memcpy_async(
                self.memory.device(),
                self.ptr.0,
                src.as_ptr().cast(),
                self.bytes,
                self.stream.as_raw(),
            )
        })?;
        self.stream.synchronize()
    }

    /// Copies the buffer into `dst` and waits for the copy.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] on a length mismatch; [`Error::Cuda`].
    pub fn copy_to_host(&self, dst: &mut [T]) -> Result<()> {
        if dst.len() != self.len {
            return Err(Error::InvalidArgument(format!(
                "copy_to_host: buffer of {} elements into {}",
                self.len,
                dst.len()
            )));
        }
        // SAFETY: both ranges hold `bytes` bytes; the copy completes before return.
        check(unsafe {
            sys::cuzk_memcpy_async(
                self.memory.device(),
                dst.as_mut_ptr().cast(),
                self.ptr.0,
                self.bytes,
                self.stream.as_raw(),
            )
        })?;
        self.stream.synchronize()
    }

    /// Launches a trivial kernel writing `value` to every 32-bit word of the
    /// buffer on its stream (a health check that the device runs kernels).
    ///
    /// # Errors
    /// [`Error::Cuda`] when the launch fails.
    pub fn fill_words(&mut self, value: u32) -> Result<()> {
        // SAFETY: the buffer holds bytes/4 whole words.
        check(unsafe {
            sys::cuzk_fill_u32(
                self.memory.device(),
                self.ptr.0,
                self.bytes / 4,
                value,
                self.stream.as_raw(),
            )
        })
    }
}

impl<T: DeviceRepr> Drop for DeviceBuffer<T> {
    fn drop(&mut self) {
        self.memory
            .free(self.ptr, self.bytes, self.strategy, &self.stream);
    }
}
