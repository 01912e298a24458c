//! The GPU MSM engine [`GpuMsm`]: streams, staging and the driver of one
//! MSM through csrc/msm's C ABI (plan, accumulate per part, finish).

use crate::config::{split, window_bits, MsmConfig};
use crate::fixed::FixedBases;
use crate::plan::{self, Request};
use crate::{sys, Error, Fr, MsmCurve, Result};
use ark_ec::short_weierstrass::{Affine, Projective};
use ark_ff::AdditiveGroup;
use cuzk_alloc::{
    BudgetConfig, DeviceBuffer, DeviceMemory, Reservation, StagedCopies, Strategy, Stream,
};
use cuzk_field::layout::Xyzz;
use rayon::prelude::*;
use std::sync::Arc;

pub(crate) fn check(s: sys::cuzk_status) -> Result<()> {
    Error::from_status(s.code, s.cuda_error, &s.message)
}

/// Checks that `range` lies within the device buffer `scalars`.
pub(crate) fn check_range(
    scalars: &DeviceBuffer<Fr>,
    range: &std::ops::Range<usize>,
) -> Result<()> {
    if range.end > scalars.len() || range.start > range.end {
        return Err(Error::InvalidArgument(format!(
            "scalars {range:?} of a device buffer of {}",
            scalars.len()
        )));
    }
    Ok(())
}

/// Checks an MSM's shapes: as many scalars as bases.
pub(crate) fn check_lengths(bases: usize, scalars: usize) -> Result<()> {
    if bases != scalars {
        return Err(Error::InvalidArgument(format!(
            "MSM of {bases} bases and {scalars} scalars: give one scalar per base \
             (for fewer scalars, pass a prefix of the bases)"
        )));
    }
    Ok(())
}

/// The bytes of a slice of plain-data points (arkworks' BLS12-381 affine
/// points: coordinates only, no padding; layout asserted in cuzk-field).
pub(crate) fn point_bytes<P: MsmCurve>(bases: &[Affine<P>]) -> &[u8] {
    // SAFETY: Affine<P> for BLS12-381 is two base-field elements back to back
    // (96 or 192 bytes, asserted in cuzk_field::layout), every byte initialized.
    unsafe { std::slice::from_raw_parts(bases.as_ptr().cast::<u8>(), std::mem::size_of_val(bases)) }
}

pub(crate) struct Engine {
    pub(crate) mem: Arc<DeviceMemory>,
    pub(crate) stream: Stream,
    /// Scalars (and copied-in bases) go up through pinned staging buffers.
    pub(crate) copies: StagedCopies,
    /// The second part's scalars go up on this stream while the first
    /// part's kernels run on `stream` (see [`MsmConfig::split`]).
    pub(crate) copy_stream: Stream,
    pub(crate) copies2: StagedCopies,
}

/// MSMs on one GPU: a stream, the device's memory manager and an
/// [`MsmConfig`]. Cheap to clone (shared); calls are serialized on its
/// stream. Scalars and copied-in bases of 4 MiB or more go up through
/// pinned staging buffers ([`cuzk_alloc::StagedCopies`]: 64 MiB of pinned
/// host memory, taken on first use and held by the engine; 128 MiB once a
/// two-part MSM ran, see [`MsmConfig::split`]).
///
/// Entry points: [`GpuMsm::msm`] (one-off: bases and scalars copied in),
/// [`GpuMsm::upload_bases`] and [`GpuMsm::upload_bases_precomputed`]
/// ([`FixedBases`]: bases kept on the device for many MSMs and batches).
#[derive(Clone)]
pub struct GpuMsm {
    pub(crate) e: Arc<Engine>,
    pub(crate) config: MsmConfig,
    /// The device memory this engine's MSMs allocate within
    /// ([`GpuMsm::within`]); the whole budget when `None`.
    pub(crate) share: Option<Arc<Reservation>>,
}

impl std::fmt::Debug for GpuMsm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuMsm")
            .field("device", &self.e.mem.device())
            .field("config", &self.config)
            .field("share_bytes", &self.share.as_ref().map(|r| r.bytes()))
            .finish()
    }
}

impl GpuMsm {
    /// An MSM engine on `device` with the default [`MsmConfig`], with its
    /// own memory manager configured from the user's settings
    /// (`CUZK_DEVICE_MEMORY_LIMIT`, `CUZK_DEVICE_MEMORY_MARGIN`, see
    /// cuzk-alloc).
    ///
    /// # Errors
    /// [`Error::NoCudaBuild`] / [`Error::NoDevice`] without a usable GPU.
    pub fn new(device: i32) -> Result<Self> {
        let mem = DeviceMemory::new(device, BudgetConfig::from_env()?, u64::MAX)?;
        Self::with_memory(mem)
    }

    /// An MSM engine sharing `mem` (and so its budget) with other layers,
    /// with the default [`MsmConfig`].
    ///
    /// # Errors
    /// As [`GpuMsm::new`].
    pub fn with_memory(mem: Arc<DeviceMemory>) -> Result<Self> {
        Self::with_memory_priority(mem, false)
    }

    /// [`GpuMsm::with_memory`] with streams of the device's greatest
    /// scheduling priority (`high`) or its least (see
    /// [`cuzk_alloc::Stream::with_priority`]): an engine whose short
    /// kernels run beside another engine's long ones (the witness MSMs
    /// beside H's in a Groth16 proof) gets its blocks scheduled first.
    /// Every engine loads the code of all MSM kernels onto its device when
    /// it is made (each kernel once a process), so that no later MSM grows
    /// device memory by loading one.
    ///
    /// # Errors
    /// As [`GpuMsm::new`].
    pub fn with_memory_priority(mem: Arc<DeviceMemory>, high: bool) -> Result<Self> {
        let stream = Stream::with_priority(mem.device(), high)?;
        let copy_stream = Stream::with_priority(mem.device(), high)?;
        // Every MSM kernel's code onto the device now rather than at its
        // first launch (CUDA's lazy loading), so that device memory stays
        // flat from here on: a warm-up that skipped a path (a witness pass,
        // say) leaves nothing to load mid-batch.
        // SAFETY: no pointers; the device's streams exist (created above).
        check(unsafe { sys::cuzk_msm_load_kernels(mem.device()) })?;
        Ok(GpuMsm {
            e: Arc::new(Engine {
                mem,
                stream,
                copies: StagedCopies::default(),
                copy_stream,
                copies2: StagedCopies::default(),
            }),
            config: MsmConfig::default(),
            share: None,
        })
    }

    /// The same engine (stream, memory, staging, configuration) with every
    /// device allocation of its MSMs (scalars, scratch, streamed chunks,
    /// uploaded bases) taken within `share`, a reservation of this engine's
    /// budget, instead of the budget at large: plans and chunk sizes follow
    /// what `share` has left. Two MSMs that run at once (say, on two
    /// engines of one GPU) each within a share of their own cannot take the
    /// memory the other planned with. [`FixedBases`] uploaded from the
    /// returned engine keep `share` alive (and their bytes in it) until
    /// they drop. Give a reservation of this engine's device's budget
    /// ([`cuzk_alloc::Budget::try_reserve`] on [`GpuMsm::memory`]).
    pub fn within(&self, share: Arc<Reservation>) -> GpuMsm {
        GpuMsm {
            share: Some(share),
            ..self.clone()
        }
    }

    /// Device memory, in bytes, this engine's next allocation may take: what
    /// its share has left, or the budget's available bytes.
    ///
    /// # Errors
    /// When the device's memory figures cannot be read.
    pub fn available_bytes(&self) -> Result<u64> {
        match &self.share {
            Some(r) => Ok(r.bytes().saturating_sub(r.used_bytes())),
            None => Ok(self.e.mem.budget().available_bytes()?),
        }
    }

    /// Whether `bytes` fit [`GpuMsm::available_bytes`].
    fn fits(&self, bytes: u64) -> Result<bool> {
        Ok(bytes <= self.available_bytes()?)
    }

    /// `len` elements of device memory (stream-ordered, freed into the
    /// pool of `stream`), within the share when there is one.
    pub(crate) fn alloc<T: cuzk_field::DeviceRepr>(
        &self,
        len: usize,
        stream: &Stream,
    ) -> Result<DeviceBuffer<T>> {
        self.e
            .mem
            .alloc::<T>(len, Strategy::Async, stream, self.share.as_deref())
    }

    /// The same engine (stream, memory, staging) with `config` for every
    /// later MSM, including those of [`FixedBases`] uploaded from it.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `config.window_bits` is outside
    /// 2..=24 or `config.windows_per_batch` is `Some(0)`.
    pub fn with_config(mut self, config: MsmConfig) -> Result<Self> {
        config.check()?;
        self.config = config;
        Ok(self)
    }

    /// The engine's configuration.
    pub fn config(&self) -> &MsmConfig {
        &self.config
    }

    /// Creates the engine's pinned staging buffers now (two
    /// [`StagedCopies`], 64 MiB of pinned host memory each) instead of at
    /// the first staged copy of pageable scalars or bases, so that a
    /// warmed-up process allocates none later (see
    /// [`StagedCopies::prepare`]). Returns whether pinned memory could be
    /// had for both.
    pub fn prepare_staging(&self) -> bool {
        let first = self.e.copies.prepare();
        self.e.copies2.prepare() && first
    }

    /// The memory manager.
    pub fn memory(&self) -> &Arc<DeviceMemory> {
        &self.e.mem
    }

    /// The window size (bits) of a plain-base MSM of `n` points.
    fn window_for(&self, n: usize) -> u32 {
        self.config.window_bits.unwrap_or_else(|| window_bits(n))
    }

    /// `sum_i scalars[i] * bases[i]`: uploads both, runs, and waits. Bases
    /// that do not fit the memory budget stream from host memory in chunks
    /// instead ([`GpuMsm::msm_streamed`]).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the lengths differ or a part passes
    /// 2^31 - 1 points; [`Error::OutOfMemory`] when even the streamed MSM
    /// does not fit the budget (two chunks of
    /// [`crate::MIN_CHUNK_POINTS`] points and the smallest plan: one window
    /// at a time, 8-bit windows; see [`MsmConfig::windows_per_batch`]), the
    /// message naming its bytes; CUDA errors.
    pub fn msm<P: MsmCurve>(&self, bases: &[Affine<P>], scalars: &[Fr]) -> Result<Projective<P>> {
        check_lengths(bases.len(), scalars.len())?;
        if bases.is_empty() {
            return Ok(Projective::default());
        }
        // Bases that do not fit the budget with the smallest plan beside
        // them stream from host memory instead.
        match self.upload_bases(bases) {
            Ok(fixed) => match fixed.msm(scalars) {
                Err(Error::OutOfMemory(_)) => {
                    drop(fixed);
                    self.msm_streamed(bases, scalars)
                }
                r => r,
            },
            Err(Error::OutOfMemory(_)) => self.msm_streamed(bases, scalars),
            Err(e) => Err(e),
        }
    }

    /// Uploads `bases` once for many MSMs against them (one SRS, many
    /// proofs or blobs). Device memory: 96 bytes a G1 point, 192 a G2 point.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`]; CUDA errors.
    pub fn upload_bases<P: MsmCurve>(&self, bases: &[Affine<P>]) -> Result<FixedBases<P>> {
        let bytes = point_bytes(bases);
        let mut d = self.alloc::<u8>(bytes.len(), &self.e.stream)?;
        if !bytes.is_empty() {
            self.e.copies.upload(&mut d, bytes)?;
        }
        Ok(FixedBases::new(self.clone(), d, bases.len(), None))
    }

    /// Uploads `bases` with precomputed shifted copies for window size `c`
    /// (W = ceil(256 / c) windows): copy j of point i is 2^(c j) P_i,
    /// computed on the GPU (c Jacobian doublings, 7 field multiplications
    /// each, and about 80 for the share of a batched inversion: about 250 a
    /// copy at c = 24), so that every MSM against them sorts all windows'
    /// digits into one set of 2^(c-1) buckets and reduces the buckets once:
    /// larger windows, fewer point additions (fixed-base exponentiation with
    /// precomputation, Brickell, Gordon, McCurley and Wilson, EUROCRYPT
    /// 1992). Device memory: W n points (96 bytes for G1, 192 for G2), e.g.
    /// 11 x 6 GiB for 2^26 G1 points at c = 24.
    ///
    /// `window_bits`: `None` picks [`crate::precomputed_window_bits`]`(n)`
    /// and falls back to plain bases ([`GpuMsm::upload_bases`]) when the
    /// copies and one MSM's scratch do not fit the memory budget or W n
    /// passes 2^31 - 1; [`FixedBases::precomputed_window_bits`] tells which.
    /// `Some(c)` insists.
    ///
    /// # Errors
    /// With `Some(c)`: [`Error::InvalidArgument`] unless c is in 2..=26 and
    /// W n < 2^31; [`Error::OutOfMemory`] when the copies do not fit. Both:
    /// CUDA errors.
    pub fn upload_bases_precomputed<P: MsmCurve>(
        &self,
        bases: &[Affine<P>],
        window_bits: Option<u32>,
    ) -> Result<FixedBases<P>> {
        let n = bases.len();
        let c = window_bits.unwrap_or_else(|| crate::precomputed_window_bits(n));
        if !(sys::CUZK_MSM_MIN_WINDOW..=sys::CUZK_MSM_MAX_PRECOMPUTED_WINDOW).contains(&c) {
            return Err(Error::InvalidArgument(format!(
                "precomputed window of {c} bits: choose 2..=26"
            )));
        }
        let windows = 256u32.div_ceil(c) as usize;
        let point = std::mem::size_of::<Affine<P>>();
        let too_many = (windows as u64) * (n as u64) > u64::from(sys::CUZK_MSM_MAX_POINTS);
        let fits = || -> Result<bool> {
            let scratch = self.plan::<P>(n, c, 0, true, true)?.scratch.total;
            let copies = ((windows + 1) * n * point) as u64;
            self.fits(copies + scratch + 32 * n as u64)
        };
        if n == 0 || (window_bits.is_none() && (too_many || !fits()?)) {
            return self.upload_bases(bases);
        }
        if too_many {
            return Err(Error::InvalidArgument(format!(
                "{windows} precomputed copies of {n} points pass 2^31 - 1: choose a larger window"
            )));
        }
        let plain = self.upload_bases(bases)?;
        let mut d = self.alloc::<u8>(windows * n * point, &self.e.stream)?;
        // SAFETY: `plain` holds n points of P on this device, `d` W n; the
        // call waits for the stream.
        check(unsafe {
            sys::cuzk_msm_precompute(
                self.e.mem.device(),
                P::CURVE,
                plain.device_ptr().cast(),
                n as u64,
                c,
                d.as_mut_ptr().cast(),
                self.e.stream.as_raw(),
            )
        })?;
        Ok(FixedBases::new(self.clone(), d, n, Some(c)))
    }

    /// The plan (from csrc/msm) of an MSM of `n` points with window `c`,
    /// `windows_per_batch` (0: all) and precomputed or plain bases, split
    /// into parts per the configuration when `may_split`.
    fn plan<P: MsmCurve>(
        &self,
        n: usize,
        c: u32,
        windows_per_batch: u32,
        precomputed: bool,
        may_split: bool,
    ) -> Result<sys::cuzk_msm_plan> {
        let (parts, _, plan_n) = split(n, self.config.split && may_split);
        plan::make(
            self.e.mem.device(),
            Request {
                curve: P::CURVE,
                n: plan_n as u64,
                window_bits: c,
                windows_per_batch,
                precomputed,
                parts,
            },
        )
    }

    /// The plan of an MSM of `n` entries and its chunk (see
    /// [`plan::choose`]): the fastest that fits the budget with
    /// `bytes_per_point` for each point of a chunk beside the scratch.
    fn choose_plan<P: MsmCurve>(
        &self,
        n: usize,
        precomputed: Option<u32>,
        may_split: bool,
        bytes_per_point: u64,
    ) -> Result<plan::Choice> {
        let device = self.e.mem.device();
        plan::choose(
            &plan::Ask {
                curve: P::CURVE,
                n,
                window: self.config.window_bits,
                windows_per_batch: self.config.windows_per_batch,
                split: self.config.split && may_split,
                precomputed,
                bytes_per_point,
            },
            |bytes| self.fits(bytes),
            |req| plan::make(device, req),
        )
    }

    /// Runs one MSM over the first `scalars.len()` device-resident bases:
    /// plain (`precomputed: None`, at least as many points as scalars) or
    /// precomputed for window `c` with `stride` points a copy. Witness-shaped
    /// when [`MsmConfig::witness_shaped`] says so.
    pub(crate) fn run<P: MsmCurve>(
        &self,
        bases: *const u8,
        stride: usize,
        precomputed: Option<u32>,
        scalars: &[Fr],
    ) -> Result<Projective<P>> {
        let n = scalars.len();
        if n == 0 {
            return Ok(Projective::default());
        }
        let e = &self.e;
        if self.config.witness_shaped.applies(scalars) {
            return self.run_witness_host::<P>(bases, stride, precomputed, scalars);
        }
        // Precomputed bases need every window at once; when that does not
        // fit, copy 0 (the plain bases) serves with smaller plans.
        let choice = self.choose_plan::<P>(n, precomputed, true, 32)?;
        let plan = choice.plan;
        if choice.chunk < n || plan.parts == 1 {
            return self.run_chunks::<P>(bases, stride, scalars, choice);
        }
        let (_, n0, _) = split(n, true);
        let merged = plan.precomputed != 0;
        let parts = plan.parts;
        let stride = if merged { stride } else { 0 };
        let bytes = plan.scratch.total;
        let point = std::mem::size_of::<Affine<P>>();
        let mut profile = self.config.profile.then(sys::cuzk_msm_profile::default);
        let profile_ptr: *mut sys::cuzk_msm_profile = profile
            .as_mut()
            .map_or(std::ptr::null_mut(), |p| p as *mut _);
        let mut s0 = self.alloc::<Fr>(n0, &e.stream)?;
        e.copies.upload(&mut s0, &scalars[..n0])?;
        let mut scratch = self.alloc::<u8>(bytes as usize, &e.stream)?;
        let mut s1: Option<DeviceBuffer<Fr>> = None;
        let sums = (|| -> Result<Vec<Xyzz<P>>> {
            let accumulate =
                |part: u32, first: usize, s: &DeviceBuffer<Fr>, scratch: &mut DeviceBuffer<u8>| {
                    let input = sys::cuzk_msm_part {
                        bases: bases.wrapping_add(first * point).cast(),
                        scalars: s.as_ptr().cast(),
                        indices: std::ptr::null(),
                        stride: stride as u64,
                        n: s.len() as u64,
                        part,
                        scalars_indexed: 0,
                    };
                    // SAFETY: `bases` holds the points [first, first + s.len())
                    // (each of the W copies, `stride` apart, when precomputed)
                    // and `s` as many scalars, on this device; `scratch` holds
                    // the plan's scratch.total bytes. The work is queued on the
                    // engine's stream; the buffers outlive it (finish waits, and
                    // on error the closure's caller waits before they drop).
                    // `profile_ptr` is null or points at `profile`, alive here.
                    check(unsafe {
                        sys::cuzk_msm_accumulate(
                            e.mem.device(),
                            &plan,
                            &input,
                            scratch.as_mut_ptr().cast(),
                            bytes,
                            profile_ptr,
                            e.stream.as_raw(),
                        )
                    })
                };
            accumulate(0, 0, &s0, &mut scratch)?;
            if parts == 2 {
                // Meanwhile the rest of the scalars go up on the copy stream.
                // The buffer lives in `s1` (outside this closure) before any
                // kernel can read it, so an error still waits before it drops.
                let b = s1.insert(self.alloc::<Fr>(n - n0, &e.copy_stream)?);
                e.copies2.upload(b, &scalars[n0..])?;
                accumulate(1, n0, b, &mut scratch)?;
            }
            self.finish::<P>(&plan, &mut scratch, profile_ptr)
        })();
        let sums = self.waited(sums)?;
        drop(s1);
        self.conclude(&plan, &sums, profile.as_ref(), n, merged)
    }

    /// A device-resident MSM: `scalars[range]` (device memory of this
    /// engine's GPU) against the first `range.len()` bases. Classified on
    /// the device (one pass over the scalars: there is no host copy to
    /// sample) unless the configuration says
    /// [`crate::WitnessShaped::Never`]; with [`crate::WitnessShaped::Detect`]
    /// it runs dense when fewer than an eighth are 0 or 1.
    pub(crate) fn run_device<P: MsmCurve>(
        &self,
        bases: *const u8,
        stride: usize,
        precomputed: Option<u32>,
        scalars: &DeviceBuffer<Fr>,
        range: std::ops::Range<usize>,
    ) -> Result<Projective<P>> {
        check_range(scalars, &range)?;
        let n = range.len();
        if n == 0 {
            return Ok(Projective::default());
        }
        if scalars.stream().device() != self.e.mem.device() {
            return Err(Error::InvalidArgument(format!(
                "device-resident scalars on GPU {}, bases on GPU {}: give scalars on the \
                 bases' GPU",
                scalars.stream().device(),
                self.e.mem.device()
            )));
        }
        // The scalars' writes may be queued on their own stream.
        scalars.stream().synchronize()?;
        let first = scalars.as_ptr().wrapping_add(range.start);
        match self.config.witness_shaped {
            crate::WitnessShaped::Never => {
                self.run_dense_device::<P>(bases, stride, precomputed, first, n)
            }
            w => self.run_witness::<P>(
                bases,
                stride,
                precomputed,
                first,
                n,
                w == crate::WitnessShaped::Always,
            ),
        }
    }

    /// Pippenger over n device-resident scalars, no classification.
    fn run_dense_device<P: MsmCurve>(
        &self,
        bases: *const u8,
        stride: usize,
        precomputed: Option<u32>,
        scalars: *const Fr,
        n: usize,
    ) -> Result<Projective<P>> {
        let precomputed =
            precomputed.filter(|&c| crate::config::merged_pays(n, c, self.window_for(n)));
        self.run_indexed::<P>(
            bases,
            stride,
            precomputed,
            scalars,
            std::ptr::null(),
            false,
            n,
        )
    }

    /// A witness-shaped MSM over host scalars: the scalars go up in one
    /// piece and are classified on the device, then as
    /// [`GpuMsm::run_witness`] (a copy at the link's speed and a pass at
    /// HBM speed take less time than a pass of the host's threads over the
    /// scalars and the concatenation of their index lists). When the budget
    /// has no room for the scalars and their indices (36 bytes a scalar and
    /// the classification's storage), they are classified on the host's
    /// threads instead, and only the indices of the ones, the indices of
    /// the rest and the rest's scalars go up; then as
    /// [`GpuMsm::run_classified`].
    fn run_witness_host<P: MsmCurve>(
        &self,
        bases: *const u8,
        stride: usize,
        precomputed: Option<u32>,
        scalars: &[Fr],
    ) -> Result<Projective<P>> {
        let n = scalars.len();
        if n as u64 > u64::from(sys::CUZK_MSM_MAX_POINTS) {
            return Err(Error::InvalidArgument(format!(
                "{n} scalars pass the GPU MSM's 2^31 - 1 a call: split the MSM and add the \
                 results"
            )));
        }
        let e = &self.e;
        let mut class_bytes = 0u64;
        // SAFETY: an output integer, valid for the call.
        check(unsafe {
            sys::cuzk_msm_classify_scratch(e.mem.device(), n as u64, &mut class_bytes)
        })?;
        let on_device = (n as u64).saturating_mul(36).saturating_add(class_bytes);
        if self.fits(on_device)? {
            // Another worker may take the room first: then the host
            // classifies, as when there was none.
            match self.alloc::<Fr>(n, &e.stream) {
                Ok(mut d) => {
                    e.copies.upload(&mut d, scalars)?;
                    let always = self.config.witness_shaped == crate::WitnessShaped::Always;
                    let r =
                        self.run_witness::<P>(bases, stride, precomputed, d.as_ptr(), n, always);
                    return self.waited(r);
                }
                Err(Error::OutOfMemory(_)) => {}
                Err(err) => return Err(err),
            }
        }
        let (ones, others) = crate::cpu::classify_as(scalars, |i| i as u32);
        let rest: Vec<Fr> = others.par_iter().map(|&i| scalars[i as usize]).collect();
        // Empty lists stay on the host (nothing to allocate or read).
        fn up<T: cuzk_field::DeviceRepr>(g: &GpuMsm, v: &[T]) -> Result<Option<DeviceBuffer<T>>> {
            if v.is_empty() {
                return Ok(None);
            }
            let mut d = g.alloc::<T>(v.len(), &g.e.stream)?;
            g.e.copies.upload(&mut d, v)?;
            Ok(Some(d))
        }
        let ptr =
            |d: &Option<DeviceBuffer<u32>>| d.as_ref().map_or(std::ptr::null(), |d| d.as_ptr());
        let ones_d = up(self, &ones)?;
        let others_d = up(self, &others)?;
        let rest_d = up(self, &rest)?;
        self.run_classified::<P>(
            bases,
            stride,
            precomputed,
            Classified {
                ones: ptr(&ones_d),
                ones_len: ones.len(),
                others: ptr(&others_d),
                others_len: others.len(),
                scalars: rest_d.as_ref().map_or(std::ptr::null(), |d| d.as_ptr()),
                scalars_indexed: false,
            },
        )
    }

    /// A witness-shaped MSM over n device-resident scalars: classified on
    /// the device (cuzk_msm_classify), the points of the ones summed
    /// (cuzk_msm_sum_indexed), the rest through Pippenger with index
    /// indirection; zeros cost nothing. Unless `always`, fewer than an
    /// eighth of 0s and 1s run dense instead (the classification then cost
    /// one pass over the scalars).
    fn run_witness<P: MsmCurve>(
        &self,
        bases: *const u8,
        stride: usize,
        precomputed: Option<u32>,
        scalars: *const Fr,
        n: usize,
        always: bool,
    ) -> Result<Projective<P>> {
        let e = &self.e;
        let device = e.mem.device();
        let mut class_bytes = 0u64;
        // SAFETY: an output integer, valid for the call.
        check(unsafe { sys::cuzk_msm_classify_scratch(device, n as u64, &mut class_bytes) })?;
        // Without room for the indices and the selection's storage, the
        // dense path (which shrinks its plan to the budget) runs instead.
        let room = self.alloc::<u32>(n, &e.stream).and_then(|i| {
            let s = self.alloc::<u8>(class_bytes as usize, &e.stream)?;
            Ok((i, s))
        });
        let (mut indices, scratch) = match room {
            Ok(r) => r,
            Err(Error::OutOfMemory(_)) => {
                return self.run_dense_device::<P>(bases, stride, precomputed, scalars, n)
            }
            Err(err) => return Err(err),
        };
        let mut counts = [0u64; 2];
        {
            let mut scratch = scratch;
            let area = sys::cuzk_msm_device_scratch {
                ptr: scratch.as_mut_ptr().cast(),
                bytes: class_bytes,
            };
            // SAFETY: `scalars` holds n scalars and `indices` room for n
            // entries on this device, `area` names `scratch`'s class_bytes
            // bytes; `counts` two host integers. The call waits for the
            // stream.
            let r = check(unsafe {
                sys::cuzk_msm_classify(
                    device,
                    scalars.cast(),
                    n as u64,
                    indices.as_mut_ptr(),
                    &area,
                    counts.as_mut_ptr(),
                    e.stream.as_raw(),
                )
            });
            self.waited(r)?;
        }
        let (ones, others) = (counts[0] as usize, counts[1] as usize);
        if !always && (n - others) * 8 < n {
            drop(indices);
            return self.run_dense_device::<P>(bases, stride, precomputed, scalars, n);
        }
        self.run_classified::<P>(
            bases,
            stride,
            precomputed,
            Classified {
                ones: indices.as_ptr(),
                ones_len: ones,
                others: indices.as_ptr().wrapping_add(ones),
                others_len: others,
                scalars,
                scalars_indexed: true,
            },
        )
    }

    /// The MSM of classified scalars: the points of the ones summed
    /// (cuzk_msm_sum_indexed), the rest through Pippenger by index; zeros
    /// cost nothing.
    fn run_classified<P: MsmCurve>(
        &self,
        bases: *const u8,
        stride: usize,
        precomputed: Option<u32>,
        c: Classified,
    ) -> Result<Projective<P>> {
        tracing::debug!(target: "cuzk_msm", curve = P::NAME, ones = c.ones_len,
            others = c.others_len, "witness-shaped msm");
        let mut total = Projective::<P>::default();
        if c.ones_len > 0 {
            total += self.sum_indexed::<P>(bases, c.ones, c.ones_len)?;
        }
        let m = c.others_len;
        if m > 0 {
            // A few scalars left over do not pay for the merged buckets'
            // reduction: as FixedBases::msm decides for a short prefix.
            let precomputed =
                precomputed.filter(|&w| crate::config::merged_pays(m, w, self.window_for(m)));
            total += self.run_indexed::<P>(
                bases,
                stride,
                precomputed,
                c.scalars,
                c.others,
                c.scalars_indexed,
                m,
            )?;
        }
        Ok(total)
    }

    /// `sum_k bases[indices[k]]` for k < count (device indices).
    fn sum_indexed<P: MsmCurve>(
        &self,
        bases: *const u8,
        indices: *const u32,
        count: usize,
    ) -> Result<Projective<P>> {
        let e = &self.e;
        let device = e.mem.device();
        let mut bytes = 0u64;
        // SAFETY: an output integer, valid for the call.
        check(unsafe { sys::cuzk_msm_sum_scratch(device, P::CURVE, count as u64, &mut bytes) })?;
        let mut scratch = self.alloc::<u8>(bytes as usize, &e.stream)?;
        let mut sum = Xyzz::<P>::identity();
        let input = sys::cuzk_msm_sum_input {
            curve: P::CURVE,
            reserved: 0,
            bases: bases.cast(),
            indices,
            count: count as u64,
        };
        let area = sys::cuzk_msm_device_scratch {
            ptr: scratch.as_mut_ptr().cast(),
            bytes,
        };
        // SAFETY: `indices` holds `count` indices of points that `bases`
        // holds (from cuzk_msm_classify over as many scalars as there are
        // bases), on this device; `area` names `scratch`'s bytes; `input`,
        // `area` and `sum` (one XYZZ point of P's layout) outlive the call,
        // which waits for the stream.
        let r = check(unsafe {
            sys::cuzk_msm_sum_indexed(
                device,
                &input,
                &area,
                (&mut sum as *mut Xyzz<P>).cast(),
                e.stream.as_raw(),
            )
        });
        self.waited(r)?;
        if !sum.is_consistent() {
            return Err(Error::Internal(format!(
                "{} sum of {count} points: the GPU returned an XYZZ point with zz^3 != zzz^2",
                P::NAME
            )));
        }
        Ok(sum.to_affine().into())
    }

    /// Pippenger over `m` device-resident entries in one part: point
    /// `indices[k]` for entry k with scalar `indices[k]` (`scalars_indexed`)
    /// or k; point and scalar k when `indices` is null.
    #[allow(clippy::too_many_arguments)] // one internal driver, every field used
    fn run_indexed<P: MsmCurve>(
        &self,
        bases: *const u8,
        stride: usize,
        precomputed: Option<u32>,
        scalars: *const Fr,
        indices: *const u32,
        scalars_indexed: bool,
        m: usize,
    ) -> Result<Projective<P>> {
        let choice = self.choose_plan::<P>(m, precomputed, false, 0)?;
        let point = std::mem::size_of::<Affine<P>>();
        let mut total = Projective::<P>::default();
        for lo in (0..m).step_by(choice.chunk) {
            let len = choice.chunk.min(m - lo);
            // Entries [lo, lo + len): their indices, and the points and
            // scalars they name (absolute indices name them wherever they
            // are; without indices the chunk's own start does).
            let (b, s, i) = if indices.is_null() {
                (
                    bases.wrapping_add(lo * point),
                    scalars.wrapping_add(lo),
                    indices,
                )
            } else {
                let s = if scalars_indexed {
                    scalars
                } else {
                    scalars.wrapping_add(lo)
                };
                (bases, s, indices.wrapping_add(lo))
            };
            total += self.run_part::<P>(&choice.plan, b, stride, s, i, scalars_indexed, len)?;
        }
        Ok(total)
    }

    /// One run of a plan over `len` device-resident entries in one part
    /// (see [`GpuMsm::run_indexed`]).
    #[allow(clippy::too_many_arguments)] // one internal driver, every field used
    fn run_part<P: MsmCurve>(
        &self,
        plan: &sys::cuzk_msm_plan,
        bases: *const u8,
        stride: usize,
        scalars: *const Fr,
        indices: *const u32,
        scalars_indexed: bool,
        len: usize,
    ) -> Result<Projective<P>> {
        let e = &self.e;
        let plan = *plan;
        let merged = plan.precomputed != 0;
        let bytes = plan.scratch.total;
        let mut profile = self.config.profile.then(sys::cuzk_msm_profile::default);
        let profile_ptr: *mut sys::cuzk_msm_profile = profile
            .as_mut()
            .map_or(std::ptr::null_mut(), |p| p as *mut _);
        let mut scratch = self.alloc::<u8>(bytes as usize, &e.stream)?;
        let sums = (|| -> Result<Vec<Xyzz<P>>> {
            let input = sys::cuzk_msm_part {
                bases: bases.cast(),
                scalars: scalars.cast(),
                indices,
                stride: if merged { stride as u64 } else { 0 },
                n: len as u64,
                part: 0,
                scalars_indexed: u32::from(scalars_indexed && !indices.is_null()),
            };
            // SAFETY: `scalars` and `bases` (each of the W copies, `stride`
            // apart, when precomputed) hold every index of `indices` (from
            // a classification of these scalars), or `len` of each when it
            // is null, on this device; `scratch` the plan's scratch.total
            // bytes. Queued on the engine's stream; finish waits, and on
            // error `waited` waits before the buffers drop. `profile_ptr`
            // is null or points at `profile`, alive here.
            check(unsafe {
                sys::cuzk_msm_accumulate(
                    e.mem.device(),
                    &plan,
                    &input,
                    scratch.as_mut_ptr().cast(),
                    bytes,
                    profile_ptr,
                    e.stream.as_raw(),
                )
            })?;
            self.finish::<P>(&plan, &mut scratch, profile_ptr)
        })();
        let sums = self.waited(sums)?;
        self.conclude(&plan, &sums, profile.as_ref(), len, merged)
    }

    /// A dense MSM over host scalars in chunks of `choice.chunk` (or in one
    /// part when the plan has one): each chunk's scalars go up and run with
    /// the plan, and the sums are added.
    fn run_chunks<P: MsmCurve>(
        &self,
        bases: *const u8,
        stride: usize,
        scalars: &[Fr],
        choice: plan::Choice,
    ) -> Result<Projective<P>> {
        let e = &self.e;
        let point = std::mem::size_of::<Affine<P>>();
        let mut total = Projective::<P>::default();
        for (k, part) in scalars.chunks(choice.chunk).enumerate() {
            let lo = k * choice.chunk;
            let mut s = self.alloc::<Fr>(part.len(), &e.stream)?;
            e.copies.upload(&mut s, part)?;
            total += self.run_part::<P>(
                &choice.plan,
                bases.wrapping_add(lo * point),
                stride,
                s.as_ptr(),
                std::ptr::null(),
                false,
                part.len(),
            )?;
        }
        Ok(total)
    }

    /// cuzk_msm_finish into host window sums (waits for the stream).
    fn finish<P: MsmCurve>(
        &self,
        plan: &sys::cuzk_msm_plan,
        scratch: &mut DeviceBuffer<u8>,
        profile: *mut sys::cuzk_msm_profile,
    ) -> Result<Vec<Xyzz<P>>> {
        let e = &self.e;
        let count = if plan.precomputed != 0 {
            1
        } else {
            plan.windows as usize
        };
        let mut sums = vec![Xyzz::<P>::identity(); count];
        // SAFETY: `scratch` holds the plan's scratch.total bytes on this
        // device, accumulated by this MSM's parts; `sums` holds `count`
        // XYZZ points of P's layout (repr(C), 4 coordinates); `profile` is
        // null or a live profile. The call waits for the stream.
        check(unsafe {
            sys::cuzk_msm_finish(
                e.mem.device(),
                plan,
                scratch.as_mut_ptr().cast(),
                plan.scratch.total,
                sums.as_mut_ptr().cast(),
                profile,
                e.stream.as_raw(),
            )
        })?;
        Ok(sums)
    }

    /// `r`, after waiting for the stream when it is an error: kernels may
    /// still read the buffers that the caller drops next.
    pub(crate) fn waited<T>(&self, r: Result<T>) -> Result<T> {
        if r.is_err() {
            let _ = self.e.stream.synchronize();
        }
        r
    }

    /// The MSM from its window sums: the profile emitted, every sum checked
    /// to be a consistent XYZZ point, Horner's rule.
    fn conclude<P: MsmCurve>(
        &self,
        plan: &sys::cuzk_msm_plan,
        sums: &[Xyzz<P>],
        profile: Option<&sys::cuzk_msm_profile>,
        n: usize,
        merged: bool,
    ) -> Result<Projective<P>> {
        if let Some(t) = profile {
            tracing::info!(
                target: "cuzk_msm",
                curve = P::NAME,
                points = n,
                window_bits = plan.window_bits,
                precomputed = merged,
                parts = plan.parts,
                windows_per_batch = plan.windows_per_batch,
                scratch_bytes = plan.scratch.total,
                digits_ms = t.digits_ms,
                sort_ms = t.sort_ms,
                level0_ms = t.level0_ms,
                levels_ms = t.levels_ms,
                reduce_ms = t.reduce_ms,
                "msm profile"
            );
        }
        for w in sums {
            if !w.is_consistent() {
                return Err(Error::Internal(format!(
                    "{} MSM of {n} points: the GPU returned an XYZZ point with zz^3 != zzz^2",
                    P::NAME
                )));
            }
        }
        Ok(horner(sums, plan.window_bits))
    }
}

/// Classified scalars on the device (see [`GpuMsm::run_classified`]): the
/// indices of the ones, the indices of the rest, and the rest's scalars
/// (`scalars[indices[k]]` when `scalars_indexed`, else gathered:
/// `scalars[k]`).
struct Classified {
    ones: *const u32,
    ones_len: usize,
    others: *const u32,
    others_len: usize,
    scalars: *const Fr,
    scalars_indexed: bool,
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

#[cfg(test)]
mod tests {
    use super::*;
    use ark_bls12_381::{g1, g2};
    use ark_ec::{CurveGroup, PrimeGroup};

    /// n points cycling through 4096 multiples of the generator (cheap in
    /// a debug build), and scalars near r.
    fn inputs<P: MsmCurve>(n: usize) -> (Vec<Affine<P>>, Vec<Fr>) {
        let g = Projective::<P>::generator();
        let mut acc = g;
        let walk: Vec<Projective<P>> = (0..4096)
            .map(|_| {
                acc += g;
                acc
            })
            .collect();
        let base = Projective::normalize_batch(&walk);
        let pts = (0..n).map(|i| base[(i * 7) % 4096]).collect();
        let scalars = (0..n as u64)
            .map(|i| -Fr::from(i * i + 7) * Fr::from(0x1234_5678_9abc_def1u64))
            .collect();
        (pts, scalars)
    }

    /// The GPU path through the plan-struct ABI against blst, with the
    /// default configuration and others (window, batch, split, profile).
    #[test]
    #[ignore = "needs a GPU"]
    fn gpu_msm_equals_blst_under_every_config() {
        let g = match GpuMsm::new(0) {
            Ok(g) => g,
            Err(e) => panic!("{e} (this test needs a GPU)"),
        };
        let d = MsmConfig::default();
        let configs = [
            d,
            MsmConfig {
                window_bits: Some(5),
                ..d
            },
            MsmConfig {
                windows_per_batch: Some(2),
                ..d
            },
            MsmConfig { split: false, ..d },
            MsmConfig { profile: true, ..d },
        ];
        for n in [0usize, 1, 1000, 5000] {
            let (b, s) = inputs::<g1::Config>(n);
            let want = crate::cpu::msm(&b, &s).unwrap().into_affine();
            for c in configs {
                let gc = g.clone().with_config(c).unwrap();
                assert_eq!(
                    gc.msm(&b, &s).unwrap().into_affine(),
                    want,
                    "G1 n = {n}, {c:?}"
                );
            }
            let pre = g.upload_bases_precomputed(&b, Some(12)).unwrap();
            assert_eq!(
                pre.msm(&s).unwrap().into_affine(),
                want,
                "G1 precomputed n = {n}"
            );
            let (b, s) = inputs::<g2::Config>(n);
            let want = crate::cpu::msm(&b, &s).unwrap().into_affine();
            assert_eq!(g.msm(&b, &s).unwrap().into_affine(), want, "G2 n = {n}");
        }
        // Two parts: past 2^20 points.
        let n = (1 << 20) + 3;
        let (b, s) = inputs::<g1::Config>(n);
        let want = crate::cpu::msm(&b, &s).unwrap().into_affine();
        for c in [
            d,
            MsmConfig { profile: true, ..d },
            MsmConfig { split: false, ..d },
        ] {
            let gc = g.clone().with_config(c).unwrap();
            assert_eq!(
                gc.msm(&b, &s).unwrap().into_affine(),
                want,
                "G1 n = {n}, {c:?}"
            );
        }
    }
}
