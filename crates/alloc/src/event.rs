//! [`Event`]: CUDA events for timing work on a stream.

use crate::raw::{check, Ptr};
use crate::stream::Stream;
use crate::sys;
use cuzk_field::{Error, Result};

/// A CUDA event with timing enabled, for measuring work on a [`Stream`]
/// (`cudaEventCreate` / `cudaEventRecord` / `cudaEventElapsedTime`);
/// destroyed on drop.
#[derive(Debug)]
pub struct Event {
    device: i32,
    raw: Ptr,
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: created by cuzk_event_create, destroyed once.
        let _ = check(unsafe { sys::cuzk_event_destroy(self.device, self.raw.0) });
    }
}

impl Event {
    /// A new event on `device`.
    ///
    /// # Errors
    /// [`Error::NoCudaBuild`], [`Error::NoDevice`] without a GPU,
    /// [`Error::InvalidArgument`] for an ordinal that names none, or
    /// [`Error::Cuda`].
    pub fn new(device: i32) -> Result<Event> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: out-pointer valid for the call.
        check(unsafe { sys::cuzk_event_create(device, &mut raw) })?;
        Ok(Event {
            device,
            raw: Ptr(raw),
        })
    }

    /// Records the event on `stream`: it completes when the work queued on
    /// the stream before it has.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the stream belongs to another device;
    /// [`Error::Cuda`].
    pub fn record(&self, stream: &Stream) -> Result<()> {
        if stream.device() != self.device {
            return Err(Error::InvalidArgument(format!(
                "event of device {} recorded on a stream of device {}",
                self.device,
                stream.device()
            )));
        }
        // SAFETY: a live event and stream of this device.
        check(unsafe { sys::cuzk_event_record(self.device, self.raw.0, stream.as_raw()) })
    }

    /// Milliseconds from this event to `stop` (device time, about 0.5 us
    /// resolution), after waiting for `stop`. Both must have been recorded.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the events belong to different
    /// devices; [`Error::Cuda`]: `cudaErrorInvalidResourceHandle` when one
    /// was never recorded, `cudaErrorNotReady` when this one has not
    /// completed yet (recorded after `stop` on another stream), or the error
    /// of failed work before `stop`.
    pub fn elapsed_ms(&self, stop: &Event) -> Result<f32> {
        if stop.device != self.device {
            return Err(Error::InvalidArgument(format!(
                "events of devices {} and {} cannot be compared",
                self.device, stop.device
            )));
        }
        let mut ms = 0f32;
        // SAFETY: live events of this device; out-pointer valid for the call.
        check(unsafe { sys::cuzk_event_elapsed_ms(self.device, self.raw.0, stop.raw.0, &mut ms) })?;
        Ok(ms)
    }
}
