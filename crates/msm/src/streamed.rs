//! MSMs whose bases stay in host memory and stream to the GPU in chunks
//! (bases too large for the device budget, such as a 2^27 Groth16 key on a
//! 16 GiB card): the copy of chunk i + 1 overlaps the MSM of chunk i, and
//! the chunks' sums are added.

use crate::engine::check;
use crate::engine::{check_range, point_bytes, GpuMsm};
use crate::plan::MIN_CHUNK_POINTS;
use crate::sys;
use crate::{Error, Fr, MsmCurve, Result};
use ark_ec::short_weierstrass::{Affine, Projective};
use cuzk_alloc::DeviceBuffer;
use cuzk_field::layout::Xyzz;
use std::ops::Range;
use std::time::Duration;

/// Points a chunk of a streamed MSM of `n` points of `point_bytes` bytes
/// with `available` bytes of device memory: n when one buffer of them all
/// takes at most half of `available`; else `ceil(n / k)` for the fewest k
/// (rounded up to a multiple of [`MIN_CHUNK_POINTS`]) whose two chunk
/// buffers (the one in use and the next one arriving) take at most half of
/// it. The other half is for the MSM's scalars and scratch, whose plan
/// shrinks to what is left. Fewest chunks, because each chunk's MSM has a
/// fixed cost (its plan, its sort, its buckets' reduction; BENCHMARKS.md
/// fits it from MSMs of 2^22 to 2^26 points), and equal ones, so that
/// every copy overlaps an MSM of its size. At least [`MIN_CHUNK_POINTS`] (or `n` when smaller);
/// `None` when even that does not fit.
pub(crate) fn stream_chunk(n: usize, point_bytes: usize, available: u64) -> Option<usize> {
    if n == 0 {
        return Some(0);
    }
    // One chunk needs one buffer; more need two (the one in use and the
    // next one arriving). Either way as much again is left for the MSM.
    let fits = |c: usize| {
        let buffers = if c >= n { 1 } else { 2 };
        2 * buffers * (c as u64) * (point_bytes as u64) <= available
    };
    if fits(n) {
        return Some(n);
    }
    if n <= MIN_CHUNK_POINTS {
        return None;
    }
    // The largest chunk whose two buffers fit, down to a multiple of
    // MIN_CHUNK_POINTS; then as few equal chunks as cover n with it.
    let largest = usize::try_from(available / (4 * point_bytes.max(1) as u64))
        .unwrap_or(usize::MAX)
        / MIN_CHUNK_POINTS
        * MIN_CHUNK_POINTS;
    if largest < MIN_CHUNK_POINTS {
        return None;
    }
    let mut parts = n.div_ceil(largest).max(2);
    loop {
        let c = n.div_ceil(parts).next_multiple_of(MIN_CHUNK_POINTS).min(n);
        if fits(c) {
            return Some(c);
        }
        parts += 1;
    }
}

/// The largest chunk of bases (bytes) that [`GpuMsm::masked_sums_streamed`]
/// sends at once: 512 MiB. Its kernels are short, so a smaller chunk
/// leaves less of the first copy and the last chunk's sums outside the
/// overlap of copies and kernels.
const MASKED_CHUNK_BYTES: u64 = 512 << 20;

/// The device memory (bytes) a streamed MSM of `point_bytes`-byte points
/// needs at least: two chunks of [`MIN_CHUNK_POINTS`] points, and as much
/// again for the MSM (see [`stream_chunk`]).
pub(crate) fn stream_min_bytes(point_bytes: usize) -> u64 {
    4 * (MIN_CHUNK_POINTS * point_bytes) as u64
}

impl GpuMsm {
    /// `sum_i scalars[i] * bases[i]` with the bases read from host memory
    /// in chunks, for bases that do not fit the device budget (a proving
    /// key of several tens of GiB on a 16 GiB card): two chunk buffers on
    /// the device, the copy of the next chunk (on the engine's copy stream,
    /// from a thread of its own) overlapping the MSM of this one, each
    /// chunk's MSM as [`GpuMsm::msm`] runs it (witness-shaped per
    /// [`crate::MsmConfig::witness_shaped`]; its plan shrinks to what the
    /// budget has left). The chunk size follows the budget: n, or the
    /// fewest equal chunks (multiples of [`MIN_CHUNK_POINTS`] points) whose
    /// two buffers take at most half of the budget's available bytes (the
    /// share's, [`GpuMsm::within`]), down to [`MIN_CHUNK_POINTS`] points.
    ///
    /// Every base crosses PCIe on every call: keep the bases in page-locked
    /// memory ([`cuzk_alloc::PinnedBuffer`], [`cuzk_alloc::PageLock`]) for
    /// full-speed DMA; pageable bases go through the engine's pinned
    /// staging buffers. `bases` may be longer than `scalars` (a prefix is
    /// used, as Groth16's queries of different lengths use them).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when there are more scalars than bases;
    /// [`Error::OutOfMemory`] when the budget has less than two chunks of
    /// [`MIN_CHUNK_POINTS`] points and as much again (the message names the
    /// bytes); otherwise as [`GpuMsm::msm`].
    pub fn msm_streamed<P: MsmCurve>(
        &self,
        bases: &[Affine<P>],
        scalars: &[Fr],
    ) -> Result<Projective<P>> {
        if scalars.len() > bases.len() {
            return Err(Error::InvalidArgument(format!(
                "{} scalars for {} streamed bases: give at most one scalar a base",
                scalars.len(),
                bases.len()
            )));
        }
        let n = scalars.len();
        self.stream(&bases[..n], None, |g, chunk, at| {
            g.run::<P>(chunk, at.len(), None, &scalars[at])
        })
    }

    /// `sum_i scalars[range.start + i] * bases[i]` for i < `range.len()`,
    /// the scalars in this GPU's memory (say, the quotient H the NTTs left
    /// there) and the bases streamed from host memory as
    /// [`GpuMsm::msm_streamed`] streams them; each chunk's scalars are
    /// classified on the device as [`crate::FixedBases::msm_device`] does.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the range passes the buffer, holds
    /// more scalars than there are bases, or the scalars are on another GPU;
    /// otherwise as [`GpuMsm::msm_streamed`].
    pub fn msm_streamed_device<P: MsmCurve>(
        &self,
        bases: &[Affine<P>],
        scalars: &DeviceBuffer<Fr>,
        range: Range<usize>,
    ) -> Result<Projective<P>> {
        check_range(scalars, &range)?;
        let n = range.len();
        if n > bases.len() {
            return Err(Error::InvalidArgument(format!(
                "{n} device scalars for {} streamed bases: give at most one scalar a base",
                bases.len()
            )));
        }
        self.stream_device(&bases[..n], None, scalars, range.start)
    }

    /// `sum_j scalars[range.start + j] * bases[indices[j]]` for j <
    /// `range.len()`: [`GpuMsm::msm_streamed_device`] over the bases
    /// `indices` of `bases` only, gathered chunk by chunk
    /// ([`cuzk_alloc::StagedCopies::upload_gather`]) so that only they
    /// cross PCIe. For an MSM whose scalars are mostly zero (a Groth16
    /// witness of bits: about 58% zeros in the SHA-256 chain), the caller
    /// passes the indices of the non-zero scalars and those scalars,
    /// gathered in the same order. Bases in one mapped page-locked
    /// allocation or registration of cuzk-alloc ([`cuzk_alloc::PinnedBuffer`],
    /// [`cuzk_alloc::PageLock`]) are read by the GPU itself, over PCIe,
    /// without host threads; other bases are gathered by the staging's host
    /// threads into its pinned buffers while the copy engine moves the
    /// chunk before.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `indices` and `range` differ in
    /// length, when an index is past `bases`, when the range passes the
    /// buffer or the scalars are on another GPU; otherwise as
    /// [`GpuMsm::msm_streamed`].
    pub fn msm_streamed_device_gathered<P: MsmCurve>(
        &self,
        bases: &[Affine<P>],
        indices: &[u32],
        scalars: &DeviceBuffer<Fr>,
        range: Range<usize>,
    ) -> Result<Projective<P>> {
        check_range(scalars, &range)?;
        if indices.len() != range.len() {
            return Err(Error::InvalidArgument(format!(
                "{} base indices for {} device scalars: give one index a scalar",
                indices.len(),
                range.len()
            )));
        }
        self.stream_device(bases, Some(indices), scalars, range.start)
    }

    /// For each mask p, `sum_j bases[j]` over the bits j set in
    /// `masks[p]` (bit j % 64 of word j / 64), with the bases streamed
    /// from host memory once for all masks, in chunks as
    /// [`GpuMsm::msm_streamed`] sends them but of at most 512 MiB. This is the share of a Groth16
    /// witness MSM whose scalars are 1 (a witness of bits), for the
    /// witnesses of several partitions of one key at a time: each chunk of
    /// the key crosses PCIe once for all of them instead of once a
    /// partition. The masks go in groups of four, each group to 2^15
    /// threads: a thread adds each point of its share that a mask of the
    /// group selects once, into the bucket of its pattern (which of the
    /// four masks select it), then sums for each mask the buckets whose
    /// pattern includes it (mixed and full additions in XYZZ coordinates):
    /// at half of the bits set, about half the additions of one sum a mask.
    /// Each mask's 2^15 partial sums carry across the chunks, then a tree
    /// of additions.
    ///
    /// Device memory: the masks (8 bytes a 64 bases a mask), the partial
    /// sums (2^15 XYZZ points a mask and a tree buffer of an eighth: 6.75
    /// MiB in G1, 13.5 MiB in G2), the pattern buckets (15 x 2^15 XYZZ
    /// points a group of four masks: 90 MiB in G1, 180 MiB in G2), then two
    /// chunks and as much again.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when a mask is not `bases.len().div_ceil(64)`
    /// words or there are more than 1024 masks; [`Error::OutOfMemory`] when
    /// the budget cannot hold the masks, the scratch and two chunks of
    /// [`MIN_CHUNK_POINTS`] points and as much again; [`Error::Internal`]
    /// when the GPU returns an inconsistent XYZZ sum; CUDA errors.
    pub fn masked_sums_streamed<P: MsmCurve>(
        &self,
        bases: &[Affine<P>],
        masks: &[&[u64]],
    ) -> Result<Vec<Projective<P>>> {
        let words = bases.len().div_ceil(64);
        if let Some((p, m)) = masks.iter().enumerate().find(|(_, m)| m.len() != words) {
            return Err(Error::InvalidArgument(format!(
                "mask {p} has {} words for {} bases: give {words} (one bit a base)",
                m.len(),
                bases.len()
            )));
        }
        if masks.len() > 1024 {
            return Err(Error::InvalidArgument(format!(
                "{} masks in one call: give at most 1024",
                masks.len()
            )));
        }
        if masks.is_empty() || bases.is_empty() {
            return Ok(vec![Projective::default(); masks.len()]);
        }
        let e = &self.e;
        let device = e.mem.device();
        let sets = masks.len() as u64;
        let mut bytes = 0u64;
        // SAFETY: an output integer, valid for the call.
        check(unsafe { sys::cuzk_msm_masked_scratch(device, P::CURVE, sets, &mut bytes) })?;
        let mut scratch = self.alloc::<u8>(bytes as usize, &e.stream)?;
        let mut rows = self.alloc::<u64>(masks.len() * words, &e.stream)?;
        let host: Vec<u64> = masks.concat();
        e.copies2.upload(&mut rows, &host)?;
        drop(host);
        let area = sys::cuzk_msm_device_scratch {
            ptr: scratch.as_mut_ptr().cast(),
            bytes,
        };
        let rows_ptr = rows.as_ptr();
        // Chunks of at most MASKED_CHUNK_BYTES: a chunk's kernels are short
        // (no Pippenger plan to amortize), so smaller chunks leave less of
        // the first copy and the last chunk's sums outside the overlap.
        self.stream_within(bases, None, 4 * MASKED_CHUNK_BYTES, |g, chunk, at| {
            if at.start % 64 != 0 {
                return Err(Error::Internal(format!(
                    "a masked chunk starts at point {}, not a multiple of 64",
                    at.start
                )));
            }
            let input = sys::cuzk_msm_masked_input {
                curve: P::CURVE,
                first: u32::from(at.start == 0),
                bases: chunk.cast(),
                count: at.len() as u64,
                masks: rows_ptr,
                sets,
                mask_words: words as u64,
                first_word: (at.start / 64) as u64,
            };
            // SAFETY: `chunk` holds the chunk's `at.len()` points of P on
            // this device, `rows` `sets` rows of `words` words, `area`
            // names `scratch`'s bytes; all outlive the kernel, which the
            // stream's synchronize waits for before the chunk's buffer is
            // reused.
            let r = check(unsafe {
                sys::cuzk_msm_masked_accumulate(device, &input, &area, g.e.stream.as_raw())
            })
            .and_then(|()| g.e.stream.synchronize());
            g.waited(r).map(|()| Projective::default())
        })
        .map(drop)?;
        let mut sums = vec![Xyzz::<P>::identity(); masks.len()];
        // SAFETY: `area` names `scratch` (partial sums of `sets` masks
        // accumulated above); `sums` holds `sets` XYZZ points of P's
        // layout and outlives the call, which waits for the stream.
        let r = check(unsafe {
            sys::cuzk_msm_masked_finish(
                device,
                P::CURVE,
                sets,
                &area,
                sums.as_mut_ptr().cast(),
                e.stream.as_raw(),
            )
        });
        self.waited(r)?;
        drop(rows);
        sums.iter()
            .enumerate()
            .map(|(p, s)| {
                if s.is_consistent() {
                    Ok(s.to_affine().into())
                } else {
                    Err(Error::Internal(format!(
                        "{} masked sum {p}: the GPU returned an XYZZ point with zz^3 != zzz^2",
                        P::NAME
                    )))
                }
            })
            .collect()
    }

    /// [`GpuMsm::stream`] of `bases` (or the bases `indices` of them)
    /// against the device scalars from `first` on, one a streamed base.
    fn stream_device<P: MsmCurve>(
        &self,
        bases: &[Affine<P>],
        indices: Option<&[u32]>,
        scalars: &DeviceBuffer<Fr>,
        first: usize,
    ) -> Result<Projective<P>> {
        self.stream(bases, indices, |g, chunk, at| {
            g.run_device::<P>(
                chunk,
                at.len(),
                None,
                scalars,
                first + at.start..first + at.end,
            )
        })
    }

    /// `bases` up in chunks (see [`GpuMsm::msm_streamed`]), or with
    /// `indices` the bases `indices[j]` in that order (gathered on the
    /// host); `run(engine, chunk, range)` is the MSM, on `engine`, of the
    /// points `range` of that sequence, which lie at device address
    /// `chunk`. Sums the results.
    fn stream<P: MsmCurve>(
        &self,
        bases: &[Affine<P>],
        indices: Option<&[u32]>,
        run: impl Fn(&GpuMsm, *const u8, Range<usize>) -> Result<Projective<P>>,
    ) -> Result<Projective<P>> {
        self.stream_within(bases, indices, u64::MAX, run)
    }

    /// [`GpuMsm::stream`] with chunks sized as if at most `most` bytes of
    /// device memory were available.
    fn stream_within<P: MsmCurve>(
        &self,
        bases: &[Affine<P>],
        indices: Option<&[u32]>,
        most: u64,
        run: impl Fn(&GpuMsm, *const u8, Range<usize>) -> Result<Projective<P>>,
    ) -> Result<Projective<P>> {
        let n = indices.map_or(bases.len(), <[u32]>::len);
        if n == 0 {
            return Ok(Projective::default());
        }
        let e = &self.e;
        let point = std::mem::size_of::<Affine<P>>();
        let available = self.available_bytes()?.min(most);
        let chunk = stream_chunk(n, point, available).ok_or_else(|| {
            Error::OutOfMemory(format!(
                "streaming {n} {} bases needs at least {} bytes of device memory (two chunks \
                 of {MIN_CHUNK_POINTS} points, and as much again for their MSM); {available} \
                 are available: raise the budget (CUZK_DEVICE_MEMORY_LIMIT) or free device \
                 memory",
                P::NAME,
                stream_min_bytes(point)
            ))
        })?;
        let ranges: Vec<Range<usize>> = (0..n)
            .step_by(chunk)
            .map(|lo| lo..(lo + chunk).min(n))
            .collect();
        // A chunk's buffer is taken on this thread, before the MSM that
        // overlaps its copy chooses its plan, so that the plan sees the
        // budget without it.
        let alloc = |r: &Range<usize>| self.alloc::<u8>(r.len() * point, &e.copy_stream);
        // A chunk's points into its buffer, on the copy stream (waits for
        // the copy).
        let copy = |mut d: DeviceBuffer<u8>, r: Range<usize>| -> Result<DeviceBuffer<u8>> {
            match indices {
                None => e.copies2.upload(&mut d, point_bytes(&bases[r]))?,
                Some(ix) => e
                    .copies2
                    .upload_gather(&mut d, point_bytes(bases), point, &ix[r])?,
            }
            Ok(d)
        };
        let copy = &copy;
        // Each chunk's MSM in one part: the two-part split would send its
        // second part's scalars through the copy stream and staging
        // buffers that the next chunk's copy is using.
        let chunk_engine = GpuMsm {
            e: self.e.clone(),
            config: crate::MsmConfig {
                split: false,
                ..self.config
            },
            share: self.share.clone(),
        };
        // Where the time goes (a `cuzk_msm` debug event an MSM): the
        // first chunk's copy, the chunks' MSMs, and the waits after an MSM
        // for the next chunk's copy (the copies are the limit when these
        // are long, the kernels when they are near zero).
        let started = std::time::Instant::now();
        let mut current = copy(alloc(&ranges[0])?, ranges[0].clone())?;
        let first_copy = started.elapsed();
        let (mut msm_time, mut wait_time) = (Duration::ZERO, Duration::ZERO);
        let mut total = Projective::<P>::default();
        for (i, r) in ranges.iter().enumerate() {
            let next_buf = ranges.get(i + 1).map(alloc).transpose()?;
            let (sum, next) = std::thread::scope(|s| {
                // The next chunk goes up while this one's MSM runs; its
                // buffer is freed memory of the chunk before (each MSM
                // waits for its kernels before it returns).
                let next = next_buf
                    .zip(ranges.get(i + 1))
                    .map(|(b, nr)| s.spawn(move || copy(b, nr.clone())));
                let t = std::time::Instant::now();
                let sum = run(&chunk_engine, current.as_ptr(), r.clone());
                msm_time += t.elapsed();
                let t = std::time::Instant::now();
                let next = next.map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(Error::Internal("a streamed chunk's upload panicked".into()))
                    })
                });
                wait_time += t.elapsed();
                (sum, next)
            });
            total += sum?;
            if let Some(b) = next {
                current = b?;
            }
        }
        tracing::debug!(
            target: "cuzk_msm",
            curve = P::NAME,
            points = n,
            chunks = ranges.len(),
            gathered = indices.is_some(),
            total_ms = started.elapsed().as_secs_f64() * 1e3,
            first_copy_ms = first_copy.as_secs_f64() * 1e3,
            msm_ms = msm_time.as_secs_f64() * 1e3,
            wait_for_copy_ms = wait_time.as_secs_f64() * 1e3,
            "streamed MSM"
        );
        Ok(total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const G1: usize = 96;

    #[test]
    fn chunks_take_half_the_budget_in_two_buffers() {
        let n = 1 << 27;
        // Everything fits: one chunk of all n points, one buffer.
        assert_eq!(stream_chunk(n, G1, 2 * (n * G1) as u64), Some(n));
        // 16 GiB: three chunks would need 4 * 44.7 M * 96 bytes, just over;
        // four of 2^25 points fit (3 GiB a buffer).
        let c = stream_chunk(n, G1, 16 << 30).expect("fits");
        assert!(4 * (c * G1) as u64 <= 16 << 30);
        assert_eq!(c, n / 4, "2^25 points: 3 GiB a buffer");
        assert_eq!(c % MIN_CHUNK_POINTS, 0);
        // 4.4 GB (H's share of a 16 GiB PoRep partition at 2^27): 12 equal
        // chunks of 11.2 M points, not 16 of 2^23.
        let c = stream_chunk(n, G1, 4_400_000_000).expect("fits");
        assert!(4 * (c * G1) as u64 <= 4_400_000_000);
        assert_eq!(n.div_ceil(c), 12);
        assert_eq!(c % MIN_CHUNK_POINTS, 0);
        // Chunks are as few as fit: one fewer would not.
        let fewer = n.div_ceil(11).next_multiple_of(MIN_CHUNK_POINTS);
        assert!(4 * (fewer * G1) as u64 > 4_400_000_000);
        // Uneven n: chunks are multiples of MIN_CHUNK_POINTS covering n.
        let n = 3 * (1 << 20) + 5;
        let c = stream_chunk(n, G1, 300 << 20).expect("fits");
        assert_eq!(c % MIN_CHUNK_POINTS, 0);
        assert!(4 * (c * G1) as u64 <= 300 << 20);
        assert!(c * n.div_ceil(c) >= n);
        // The floor, exactly, and one byte under it.
        let min = stream_min_bytes(G1);
        assert_eq!(stream_chunk(1 << 24, G1, min), Some(MIN_CHUNK_POINTS));
        assert_eq!(stream_chunk(1 << 24, G1, min - 1), None);
        // Fewer points than a minimal chunk: one chunk of all of them, in
        // one buffer.
        assert_eq!(stream_chunk(1000, G1, 2 * 1000 * G1 as u64), Some(1000));
        assert_eq!(stream_chunk(1000, G1, 2 * 1000 * G1 as u64 - 1), None);
        assert_eq!(stream_chunk(0, G1, 0), Some(0));
    }
}
