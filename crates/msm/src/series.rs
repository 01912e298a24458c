//! One MSM accumulated part by part into one bucket array and reduced once:
//! the chunks of an MSM whose plan does not take all its points at once,
//! and the chunks of a streamed MSM's bases.

use crate::engine::{check, GpuMsm};
use crate::{sys, MsmCurve, Result};
use ark_ec::short_weierstrass::Projective;
use cuzk_alloc::DeviceBuffer;
use std::marker::PhantomData;

/// An MSM of one plan whose points come in parts of at most the plan's
/// `plan_n` entries: the first [`Series::add`] clears the plan's bucket
/// array (part 0), later ones add their bucket sums to it (csrc/msm's
/// `add_to_buckets`), and [`Series::finish`] reduces the buckets once. A
/// series of k parts pays one bucket reduction instead of k, and its
/// scratch is allocated once. Dropped unfinished, it waits for the work it
/// queued.
pub(crate) struct Series<'a, P: MsmCurve> {
    engine: &'a GpuMsm,
    plan: sys::cuzk_msm_plan,
    scratch: DeviceBuffer<u8>,
    profile: Option<sys::cuzk_msm_profile>,
    /// Parts accumulated.
    parts: usize,
    /// Work queued and not yet waited for.
    pending: bool,
    _curve: PhantomData<P>,
}

impl GpuMsm {
    /// A series of accumulations with `plan` (see [`Series`]), its scratch
    /// (`plan.scratch.total` bytes) taken from the budget.
    ///
    /// # Errors
    /// [`crate::Error::OutOfMemory`] when the scratch does not fit.
    pub(crate) fn series<P: MsmCurve>(&self, plan: &sys::cuzk_msm_plan) -> Result<Series<'_, P>> {
        let scratch = self.alloc::<u8>(plan.scratch.total as usize, &self.e.stream)?;
        Ok(Series {
            engine: self,
            plan: *plan,
            scratch,
            profile: self.config.profile.then(sys::cuzk_msm_profile::default),
            parts: 0,
            pending: false,
            _curve: PhantomData,
        })
    }
}

impl<P: MsmCurve> Series<'_, P> {
    /// Queues the accumulation of `input` (its `part` and `add_to_buckets`
    /// are set here) on the engine's stream; does not wait, except after an
    /// error.
    ///
    /// # Safety
    /// `input`'s pointers name device memory of the engine's GPU that holds
    /// what [`sys::cuzk_msm_part`] says, at most the plan's `plan_n`
    /// entries, alive until the stream has run the work (the caller waits
    /// for the engine's stream, or [`Series::finish`] does).
    pub(crate) unsafe fn add(&mut self, input: &sys::cuzk_msm_part) -> Result<()> {
        let input = sys::cuzk_msm_part {
            part: 0,
            add_to_buckets: u32::from(self.parts > 0),
            ..*input
        };
        let profile = self
            .profile
            .as_mut()
            .map_or(std::ptr::null_mut(), |p| p as *mut _);
        self.pending = true;
        let e = &self.engine.e;
        // SAFETY: the caller's contract for `input`; `scratch` holds the
        // plan's scratch.total bytes on this device; `profile` is null or
        // points into `self`, alive for the call, which only queues work.
        let r = check(unsafe {
            sys::cuzk_msm_accumulate(
                e.mem.device(),
                &self.plan,
                &input,
                self.scratch.as_mut_ptr().cast(),
                self.plan.scratch.total,
                profile,
                e.stream.as_raw(),
            )
        });
        self.parts += 1;
        self.engine.waited(r)
    }

    /// The MSM of the `n` entries the series accumulated: its buckets
    /// reduced (waits for the stream), the window sums checked and added
    /// by Horner's rule. A series with no part is the identity.
    ///
    /// # Errors
    /// [`crate::Error::Internal`] when the GPU returns an inconsistent XYZZ
    /// point; CUDA errors.
    pub(crate) fn finish(&mut self, n: usize) -> Result<Projective<P>> {
        if self.parts == 0 {
            return Ok(Projective::default());
        }
        let profile = self
            .profile
            .as_mut()
            .map_or(std::ptr::null_mut(), |p| p as *mut _);
        let sums = self
            .engine
            .finish::<P>(&self.plan, &mut self.scratch, profile);
        let sums = self.engine.waited(sums)?;
        self.pending = false;
        let merged = self.plan.precomputed != 0;
        self.engine
            .conclude(&self.plan, &sums, self.profile.as_ref(), n, merged)
    }
}

impl<P: MsmCurve> Drop for Series<'_, P> {
    fn drop(&mut self) {
        // Kernels may still read the scratch (and the caller's inputs) when
        // an error ends the series early.
        if self.pending {
            let _ = self.engine.e.stream.synchronize();
        }
    }
}
