//! The GPU path: kernels from `csrc/msm`, device memory from cuzk-alloc.

use crate::{check_lengths, sys, window_bits, MsmCurve};
use crate::{Error, Fr, Result};
use ark_ec::short_weierstrass::{Affine, Projective};
use ark_ff::AdditiveGroup;
use cuzk_alloc::{BudgetConfig, DeviceBuffer, DeviceMemory, StagedCopies, Strategy, Stream};
use cuzk_field::layout::Xyzz;
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
    /// The second part's scalars go up on this stream while the first
    /// part's kernels run on `stream` (see [`GpuMsm`]).
    copy_stream: Stream,
    copies2: StagedCopies,
}

/// MSMs on one GPU: a stream and the device's memory manager. Cheap to
/// clone (shared); calls are serialized on its stream. Scalars and
/// copied-in bases of 4 MiB or more go up through pinned staging buffers
/// ([`cuzk_alloc::StagedCopies`]: 64 MiB of pinned host memory, taken on
/// first use and held by the engine; 128 MiB once a split MSM ran).
///
/// From [`SPLIT_MIN_POINTS`] points on, an MSM runs in two parts: the
/// first eighth of the points is copied in and its kernels start, and the
/// other seven eighths' scalars go up on a second stream meanwhile; the
/// parts' buckets are added before the reduction (`CUZK_MSM_SPLIT=0` turns
/// this off, for A/B timing).
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
        let copy_stream = Stream::new(mem.device())?;
        Ok(GpuMsm {
            e: Arc::new(Engine {
                mem,
                stream,
                copies: StagedCopies::default(),
                copy_stream,
                copies2: StagedCopies::default(),
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
            window: None,
            _p: PhantomData,
        })
    }

    /// Uploads `bases` with precomputed shifted copies for window size `c`
    /// (W = ceil(256 / c) windows): copy j of point i is 2^(c j) P_i,
    /// computed on the GPU (c Jacobian doublings, 7 field multiplications
    /// each, and about 80 for the share of a batched inversion: about 250 a
    /// copy at c = 24), so
    /// that every MSM against them sorts all windows' digits into one set
    /// of 2^(c-1) buckets and reduces the buckets once: larger windows,
    /// fewer point additions (fixed-base exponentiation with precomputation,
    /// Brickell, Gordon, McCurley and Wilson, EUROCRYPT 1992). Device memory:
    /// W n points (96 bytes for G1, 192 for G2), e.g. 11 x 6 GiB for 2^26
    /// G1 points at c = 24.
    ///
    /// `window_bits`: `None` picks [`crate::precomputed_window_bits`]`(n)` and
    /// falls back to plain bases ([`GpuMsm::upload_bases`]) when the copies
    /// and one MSM's scratch do not fit the memory budget or W n passes
    /// 2^31 - 1; [`FixedBases::precomputed_window_bits`] tells which.
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
        let too_many = (windows as u64) * (n as u64) > sys::CUZK_MSM_MAX_POINTS as u64;
        let fits = || -> Result<bool> {
            let (parts, _, plan_n) = split(n);
            let scratch = self.scratch_bytes_for::<P>(plan_n, c, 0, true, parts)?;
            let copies = ((windows + 1) * n * point) as u64;
            self.e.mem.budget().fits(copies + scratch + 32 * n as u64)
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
        let mut d =
            self.e
                .mem
                .alloc::<u8>(windows * n * point, Strategy::Async, &self.e.stream, None)?;
        // SAFETY: `plain` holds n points of P on this device, `d` W n; the
        // call waits for the stream.
        check(unsafe {
            sys::cuzk_msm_precompute(
                self.e.mem.device(),
                P::CURVE,
                plain.bases.as_ptr().cast(),
                n as u64,
                c,
                d.as_mut_ptr().cast(),
                self.e.stream.as_raw(),
            )
        })?;
        Ok(FixedBases {
            engine: self.clone(),
            bases: d,
            n,
            window: Some(c),
            _p: PhantomData,
        })
    }

    /// Device scratch (bytes) of an MSM of `n` points of curve `P` with
    /// `windows_per_batch` windows sorted at a time (0: all).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for n >= 2^31; CUDA errors.
    pub fn scratch_bytes<P: MsmCurve>(&self, n: usize, windows_per_batch: u32) -> Result<u64> {
        let (parts, _, plan_n) = split(n);
        self.scratch_bytes_for::<P>(plan_n, self.window_for(n), windows_per_batch, false, parts)
    }

    /// Scratch bytes for parts of up to `n` points (see cuzk_msm_scratch_bytes).
    fn scratch_bytes_for<P: MsmCurve>(
        &self,
        n: usize,
        c: u32,
        windows_per_batch: u32,
        precomputed: bool,
        parts: u32,
    ) -> Result<u64> {
        let mut bytes = 0u64;
        // SAFETY: plain arguments and one output.
        check(unsafe {
            sys::cuzk_msm_scratch_bytes(
                self.e.mem.device(),
                P::CURVE,
                n as u64,
                c,
                windows_per_batch,
                u32::from(precomputed),
                parts,
                &mut bytes,
            )
        })?;
        Ok(bytes)
    }

    /// Runs one MSM over the first `scalars.len()` device-resident bases:
    /// plain (`precomputed: None`, at least as many points as scalars) or
    /// precomputed for window `c` with `stride` points a copy.
    fn run<P: MsmCurve>(
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
        let (parts, n0, plan_n) = split(n);
        let fits = |bytes: u64| e.mem.budget().fits(bytes + 32 * n as u64);
        // Precomputed bases need every window at once; when that does not
        // fit, copy 0 (the plain bases) serves with batches of windows.
        let mut job = match precomputed {
            Some(c) => {
                let bytes = self.scratch_bytes_for::<P>(plan_n, c, 0, true, parts)?;
                fits(bytes)?.then_some((c, 256u32.div_ceil(c), bytes, true))
            }
            None => None,
        };
        if job.is_none() {
            let c = self.window_for(n);
            let windows = 256u32.div_ceil(c);
            // As many windows a batch as the budget allows (all, when it fits).
            let mut batch = windows;
            let mut bytes = self.scratch_bytes_for::<P>(plan_n, c, batch, false, parts)?;
            while batch > 1 && !fits(bytes)? {
                batch = batch.div_ceil(2);
                bytes = self.scratch_bytes_for::<P>(plan_n, c, batch, false, parts)?;
            }
            job = Some((c, batch, bytes, false));
        }
        let (c, batch, bytes, merged) = job.expect("set above");
        let stride = if merged { stride } else { 0 };
        let point = std::mem::size_of::<Affine<P>>();
        let mut s0 = e.mem.alloc::<Fr>(n0, Strategy::Async, &e.stream, None)?;
        e.copies.upload(&mut s0, &scalars[..n0])?;
        let mut scratch = e
            .mem
            .alloc::<u8>(bytes as usize, Strategy::Async, &e.stream, None)?;
        let mut s1: Option<DeviceBuffer<Fr>> = None;
        let sums = (|| -> Result<Vec<Xyzz<P>>> {
            let accumulate =
                |part: u32, first: usize, s: &DeviceBuffer<Fr>, scratch: &mut DeviceBuffer<u8>| {
                    // SAFETY: `bases` holds the points [first, first + s.len())
                    // (each of the W copies, `stride` apart, when precomputed)
                    // and `s` as many scalars, on this device; `scratch` holds
                    // `bytes` bytes as cuzk_msm_scratch_bytes asked for these
                    // arguments. The work is queued on the engine's stream; the
                    // buffers outlive it (finish waits, and on error the
                    // closure's caller waits before they drop).
                    check(unsafe {
                        sys::cuzk_msm_accumulate(
                            e.mem.device(),
                            P::CURVE,
                            bases.wrapping_add(first * point).cast(),
                            stride as u64,
                            s.as_ptr().cast(),
                            s.len() as u64,
                            plan_n as u64,
                            c,
                            batch,
                            parts,
                            part,
                            scratch.as_mut_ptr().cast(),
                            bytes,
                            e.stream.as_raw(),
                        )
                    })
                };
            accumulate(0, 0, &s0, &mut scratch)?;
            if parts == 2 {
                // Meanwhile the rest of the scalars go up on the copy stream.
                // The buffer lives in `s1` (outside this closure) before any
                // kernel can read it, so an error still waits before it drops.
                let b =
                    s1.insert(
                        e.mem
                            .alloc::<Fr>(n - n0, Strategy::Async, &e.copy_stream, None)?,
                    );
                e.copies2.upload(b, &scalars[n0..])?;
                accumulate(1, n0, b, &mut scratch)?;
            }
            let count = if merged {
                1
            } else {
                256u32.div_ceil(c) as usize
            };
            let mut sums = vec![Xyzz::<P>::identity(); count];
            // SAFETY: as above; `sums` holds `count` XYZZ points of P's
            // layout (repr(C), 4 coordinates). The call waits for the stream.
            check(unsafe {
                sys::cuzk_msm_finish(
                    e.mem.device(),
                    P::CURVE,
                    plan_n as u64,
                    c,
                    batch,
                    u32::from(merged),
                    parts,
                    scratch.as_mut_ptr().cast(),
                    bytes,
                    sums.as_mut_ptr().cast(),
                    e.stream.as_raw(),
                )
            })?;
            Ok(sums)
        })();
        let sums = match sums {
            Ok(s) => s,
            Err(err) => {
                // Kernels may still read the buffers: wait before they drop.
                let _ = e.stream.synchronize();
                return Err(err);
            }
        };
        drop(s1);
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

/// Points from which an MSM runs in two parts, the second part's scalars
/// copied in while the first part's kernels run (2^20: 32 MiB of scalars).
pub const SPLIT_MIN_POINTS: usize = 1 << 20;

/// (parts, points of part 0, points of the larger part: the scratch's
/// plan) of an MSM of n points: two parts, the first an eighth, from
/// [`SPLIT_MIN_POINTS`] on unless `CUZK_MSM_SPLIT=0`.
fn split(n: usize) -> (u32, usize, usize) {
    if n >= SPLIT_MIN_POINTS && std::env::var("CUZK_MSM_SPLIT").as_deref() != Ok("0") {
        (2, n / 8, n - n / 8)
    } else {
        (1, n, n)
    }
}

/// Whether n scalars against bases precomputed for window c cost less than
/// plain bases with window `plain_c`, by the cost model of
/// [`crate::precomputed_window_bits`] (plain: W windows of buckets to reduce).
fn merged_pays(n: usize, c: u32, plain_c: u32) -> bool {
    let w = |c: u32| f64::from(256u32.div_ceil(c));
    let buckets = |c: u32| 4.5 * f64::from(1u32 << (c - 1));
    let merged = n as f64 * w(c) + buckets(c);
    let plain = n as f64 * w(plain_c) + w(plain_c) * buckets(plain_c);
    merged <= plain
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
    /// n points, or W copies of n points when precomputed.
    bases: DeviceBuffer<u8>,
    n: usize,
    /// The window of the precomputed copies.
    window: Option<u32>,
    _p: PhantomData<P>,
}

impl<P: MsmCurve> std::fmt::Debug for FixedBases<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FixedBases")
            .field("curve", &P::NAME)
            .field("points", &self.n)
            .field("precomputed_window_bits", &self.window)
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

    /// The window size (bits) of the precomputed copies, `None` for plain
    /// bases (see [`GpuMsm::upload_bases_precomputed`]).
    pub fn precomputed_window_bits(&self) -> Option<u32> {
        self.window
    }

    /// `sum_i scalars[i] * bases[i]` over all the bases.
    ///
    /// # Errors
    /// As [`GpuMsm::msm`].
    pub fn msm(&self, scalars: &[Fr]) -> Result<Projective<P>> {
        check_lengths(self.n, scalars.len())?;
        self.engine
            .run(self.bases.as_ptr(), self.n, self.window, scalars)
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
        // A short prefix is cheaper over copy 0 as plain bases: the merged
        // buckets (2^(c-1) of them) are reduced whatever the length.
        let k = scalars.len();
        let window = self
            .window
            .filter(|&c| k == self.n || merged_pays(k, c, self.engine.window_for(k)));
        self.engine
            .run(self.bases.as_ptr(), self.n, window, scalars)
    }

    /// One MSM per scalar vector, each against all the bases.
    ///
    /// # Errors
    /// As [`FixedBases::msm`], for the first vector that fails.
    pub fn msm_batch(&self, scalars: &[&[Fr]]) -> Result<Vec<Projective<P>>> {
        scalars.iter().map(|s| self.msm(s)).collect()
    }
}
