//! The GPU path: kernels from `csrc/msm`, device memory from cuzk-alloc.

use crate::{check_lengths, sys, window_bits, MsmCurve};
use crate::{Error, Fr, Result};
use ark_ec::short_weierstrass::{Affine, Projective};
use ark_ff::AdditiveGroup;
use cuzk_alloc::{BudgetConfig, DeviceBuffer, DeviceMemory, StagedCopies, Strategy, Stream};
use cuzk_field::layout::Xyzz;
use std::ffi::c_void;
use std::marker::PhantomData;
use std::sync::Arc;

fn check(s: sys::cuzk_status) -> Result<()> {
    Error::from_status(s.code, s.cuda_error, &s.message)
}

/// The bytes of a slice of plain-data points (arkworks' BLS12-381 affine
/// points: coordinates only, no padding; layout asserted in cuzk-field).
fn point_bytes<P: MsmCurve>(bases: &[Affine<P>]) -> &[u8] {
    // SAFETY: Affine<P> for BLS12-381 is two base-field elements back to back
    // (96 or 192 bytes, asserted in cuzk_field::layout), every byte initialized.
    unsafe { std::slice::from_raw_parts(bases.as_ptr().cast::<u8>(), std::mem::size_of_val(bases)) }
}

struct Engine {
    mem: Arc<DeviceMemory>,
    stream: Stream,
    /// Scalars (and copied-in bases) go up through pinned staging buffers.
    copies: StagedCopies,
}

/// MSMs on one GPU: a stream and the device's memory manager. Cheap to
/// clone (shared); calls are serialized on its stream. Scalars and
/// copied-in bases of 4 MiB or more go up through pinned staging buffers
/// ([`cuzk_alloc::StagedCopies`]: 64 MiB of pinned host memory, taken on
/// first use and held by the engine).
#[derive(Clone)]
pub struct GpuMsm {
    e: Arc<Engine>,
    window: Option<u32>,
}

impl std::fmt::Debug for GpuMsm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuMsm")
            .field("device", &self.e.mem.device())
            .finish()
    }
}

impl GpuMsm {
    /// An MSM engine on `device`, with its own memory manager configured from
    /// the environment (`CUZK_DEVICE_MEMORY_LIMIT`, ...).
    ///
    /// # Errors
    /// [`Error::NoCudaBuild`] / [`Error::NoDevice`] without a usable GPU.
    pub fn new(device: i32) -> Result<Self> {
        let mem = DeviceMemory::new(device, BudgetConfig::from_env()?, u64::MAX)?;
        Self::with_memory(mem)
    }

    /// An MSM engine sharing `mem` (and so its budget) with other layers.
    ///
    /// # Errors
    /// As [`GpuMsm::new`].
    pub fn with_memory(mem: Arc<DeviceMemory>) -> Result<Self> {
        let stream = Stream::new(mem.device())?;
        Ok(GpuMsm {
            e: Arc::new(Engine {
                mem,
                stream,
                copies: StagedCopies::default(),
            }),
            window: None,
        })
    }

    /// The same engine with a fixed window size of `c` bits for every MSM
    /// (instead of [`window_bits`]'s choice from n); for tests and tuning.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] unless `c` is in 2..=24.
    pub fn with_window_bits(mut self, c: u32) -> Result<Self> {
        if !(sys::CUZK_MSM_MIN_WINDOW..=sys::CUZK_MSM_MAX_WINDOW).contains(&c) {
            return Err(Error::InvalidArgument(format!(
                "window of {c} bits: choose 2..=24"
            )));
        }
        self.window = Some(c);
        Ok(self)
    }

    /// The window size (bits) this engine uses for `n` points.
    pub fn window_for(&self, n: usize) -> u32 {
        self.window.unwrap_or_else(|| window_bits(n))
    }

    /// The memory manager.
    pub fn memory(&self) -> &Arc<DeviceMemory> {
        &self.e.mem
    }

    /// The stream every MSM runs on.
    pub fn stream(&self) -> &Stream {
        &self.e.stream
    }

    /// `sum_i scalars[i] * bases[i]`: uploads both, runs, and waits.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the lengths differ or n >= 2^31
    /// (after the bases' upload, which may fail first with
    /// [`Error::OutOfMemory`]); [`Error::OutOfMemory`] when the points and
    /// the scratch (see
    /// [`GpuMsm::scratch_bytes`]) do not fit the budget even one window at a
    /// time; CUDA errors.
    pub fn msm<P: MsmCurve>(&self, bases: &[Affine<P>], scalars: &[Fr]) -> Result<Projective<P>> {
        check_lengths(bases.len(), scalars.len())?;
        if bases.is_empty() {
            return Ok(Projective::default());
        }
        self.upload_bases(bases)?.msm(scalars)
    }

    /// Uploads `bases` once for many MSMs against them (one SRS, many
    /// proofs or blobs). Device memory: 96 bytes a G1 point, 192 a G2 point.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`]; CUDA errors.
    pub fn upload_bases<P: MsmCurve>(&self, bases: &[Affine<P>]) -> Result<FixedBases<P>> {
        let bytes = point_bytes(bases);
        let mut d = self
            .e
            .mem
            .alloc::<u8>(bytes.len(), Strategy::Async, &self.e.stream, None)?;
        if !bytes.is_empty() {
            self.e.copies.upload(&mut d, bytes)?;
        }
        Ok(FixedBases {
            engine: self.clone(),
            bases: d,
            n: bases.len(),
            _p: PhantomData,
        })
    }

    /// Device scratch (bytes) of an MSM of `n` points of curve `P` with
    /// `windows_per_batch` windows sorted at a time (0: all).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for n >= 2^31; CUDA errors.
    pub fn scratch_bytes<P: MsmCurve>(&self, n: usize, windows_per_batch: u32) -> Result<u64> {
        let mut bytes = 0u64;
        // SAFETY: plain arguments and one output.
        check(unsafe {
            sys::cuzk_msm_scratch_bytes(
                self.e.mem.device(),
                P::CURVE,
                n as u64,
                self.window_for(n),
                windows_per_batch,
                &mut bytes,
            )
        })?;
        Ok(bytes)
    }

    /// Runs one MSM over `n` device-resident bases and host scalars.
    fn run<P: MsmCurve>(
        &self,
        bases: *const c_void,
        n: usize,
        scalars: &[Fr],
    ) -> Result<Projective<P>> {
        check_lengths(n, scalars.len())?;
        if n == 0 {
            return Ok(Projective::default());
        }
        let e = &self.e;
        let c = self.window_for(n);
        let windows = 256u32.div_ceil(c);
        // As many windows a batch as the budget allows (all, when it fits).
        let mut batch = windows;
        let mut bytes = self.scratch_bytes::<P>(n, batch)?;
        while batch > 1 && !e.mem.budget().fits(bytes + 32 * n as u64)? {
            batch = batch.div_ceil(2);
            bytes = self.scratch_bytes::<P>(n, batch)?;
        }
        let mut s = e.mem.alloc::<Fr>(n, Strategy::Async, &e.stream, None)?;
        e.copies.upload(&mut s, scalars)?;
        let mut scratch = e
            .mem
            .alloc::<u8>(bytes as usize, Strategy::Async, &e.stream, None)?;
        let mut sums = vec![Xyzz::<P>::identity(); windows as usize];
        // SAFETY: `bases` holds n points and `s` n scalars on this device;
        // `scratch` holds `bytes` bytes as cuzk_msm_scratch_bytes asked; `sums`
        // holds W XYZZ points of P's layout (repr(C), 4 coordinates). The call
        // waits for its stream before it returns.
        check(unsafe {
            sys::cuzk_msm_run(
                e.mem.device(),
                P::CURVE,
                bases,
                s.as_ptr().cast(),
                n as u64,
                c,
                batch,
                scratch.as_mut_ptr().cast(),
                bytes,
                sums.as_mut_ptr().cast(),
                e.stream.as_raw(),
            )
        })?;
        for w in &sums {
            if !w.is_consistent() {
                return Err(Error::Internal(format!(
                    "{} MSM of {n} points: the GPU returned an XYZZ point with zz^3 != zzz^2",
                    P::NAME
                )));
            }
        }
        Ok(horner(&sums, c))
    }
}

/// sum_w 2^(c w) sums[w] by Horner's rule.
fn horner<P: MsmCurve>(sums: &[Xyzz<P>], c: u32) -> Projective<P> {
    let mut acc = Projective::<P>::default();
    for w in sums.iter().rev() {
        for _ in 0..c {
            acc.double_in_place();
        }
        acc += w.to_affine();
    }
    acc
}

/// Bases uploaded once to one GPU, for many MSMs against them (a Groth16
/// SRS, a KZG setup). Holds `n` points of device memory until dropped.
pub struct FixedBases<P: MsmCurve> {
    engine: GpuMsm,
    bases: DeviceBuffer<u8>,
    n: usize,
    _p: PhantomData<P>,
}

impl<P: MsmCurve> std::fmt::Debug for FixedBases<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FixedBases")
            .field("curve", &P::NAME)
            .field("points", &self.n)
            .finish()
    }
}

impl<P: MsmCurve> FixedBases<P> {
    /// Number of points.
    pub fn len(&self) -> usize {
        self.n
    }

    /// True when there are no points.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// `sum_i scalars[i] * bases[i]` over all the bases.
    ///
    /// # Errors
    /// As [`GpuMsm::msm`].
    pub fn msm(&self, scalars: &[Fr]) -> Result<Projective<P>> {
        self.engine.run(self.bases.as_ptr().cast(), self.n, scalars)
    }

    /// `sum_i scalars[i] * bases[i]` over the first `scalars.len()` bases
    /// (a prefix, as Groth16's queries of different lengths use).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when there are more scalars than bases;
    /// as [`GpuMsm::msm`].
    pub fn msm_prefix(&self, scalars: &[Fr]) -> Result<Projective<P>> {
        if scalars.len() > self.n {
            return Err(Error::InvalidArgument(format!(
                "{} scalars for {} fixed bases",
                scalars.len(),
                self.n
            )));
        }
        self.engine
            .run(self.bases.as_ptr().cast(), scalars.len(), scalars)
    }

    /// One MSM per scalar vector, each against all the bases.
    ///
    /// # Errors
    /// As [`FixedBases::msm`], for the first vector that fails.
    pub fn msm_batch(&self, scalars: &[&[Fr]]) -> Result<Vec<Projective<P>>> {
        scalars.iter().map(|s| self.msm(s)).collect()
    }
}
