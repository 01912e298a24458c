//! The GPU NTT engine ([`GpuNtt`]): a stream, device memory from
//! cuzk-alloc, the table cache, and the transforms over device buffers and
//! host slices.

use crate::tables::{check, full_twiddle_bytes, PowerTables, DEFAULT_FULL_TWIDDLE_MAX_BYTES};
use crate::{check_shape, root_of_unity, sys, Direction, NttOptions};
use crate::{Error, Fr, Result};
use ark_ff::{AdditiveGroup, Field};
use cuzk_alloc::{BudgetConfig, DeviceBuffer, DeviceMemory, StagedCopies, Strategy, Stream};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// What the engine's table cache is keyed by.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum TableKey {
    /// Powers of the 2^log_n-th root of unity (inverse: of its inverse).
    Root { log_n: u32, inverse: bool },
    /// Powers of a coset shift (inverse: of its inverse), limbs of g.
    Shift {
        log_n: u32,
        inverse: bool,
        g: [u64; 4],
    },
}

/// NTTs on one GPU. Keeps a stream, the device's memory manager and the
/// twiddle tables of every (size, direction, coset) used so far: two tables
/// of about 2^(log_n/2) elements each (1 MiB at 2^28), and for each root the
/// twiddle tables of its passes up to [`GpuNtt::full_twiddle_limit`]
/// (at the least default, 2 GiB: 1.25 GiB + 5 MiB at 2^24, 2 GiB + 10 MiB
/// at 2^26, 2 GiB + 20 MiB at 2^27, 160 MiB + 1.25 MiB at 2^28; with a
/// 17 GiB limit, 5 GiB + 10 MiB at 2^26 and 10 GiB + 20 MiB at 2^27; see
/// [`GpuNtt::full_twiddle_bytes`]) and the 20 KiB table of its butterfly
/// roots (`cuzk_ntt_roots`). A table that found no room in the budget when
/// first built stays on the two-level products for the engine's life.
/// Share one per device; calls are serialized on its stream. Host slices
/// copy through [`StagedCopies`] (direct from pinned memory; pageable
/// arrays of 4 MiB or more through 64 MiB of pinned staging buffers, taken
/// on first use and held).
pub struct GpuNtt {
    mem: Arc<DeviceMemory>,
    stream: Stream,
    tables: Mutex<HashMap<TableKey, Arc<PowerTables>>>,
    /// Copies of host slices in and out.
    copies: StagedCopies,
    /// Largest twiddle table of one pass, in bytes; `None`: the default
    /// ([`GpuNtt::full_twiddle_limit`]).
    full_twiddle_max_bytes: Option<u64>,
}

impl std::fmt::Debug for GpuNtt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuNtt")
            .field("device", &self.mem.device())
            .finish()
    }
}

impl GpuNtt {
    /// An NTT engine on `device`, with its own memory manager configured
    /// from the environment (`CUZK_DEVICE_MEMORY_LIMIT`, ...).
    ///
    /// # Errors
    /// [`Error::NoCudaBuild`] / [`Error::NoDevice`] without a usable GPU.
    pub fn new(device: i32) -> Result<Self> {
        let mem = DeviceMemory::new(device, BudgetConfig::from_env()?, u64::MAX)?;
        Self::with_memory(mem)
    }

    /// An NTT engine sharing `mem` (and so its budget) with other layers.
    ///
    /// # Errors
    /// As [`GpuNtt::new`].
    pub fn with_memory(mem: Arc<DeviceMemory>) -> Result<Self> {
        let stream = Stream::new(mem.device())?;
        Ok(GpuNtt {
            mem,
            stream,
            tables: Mutex::new(HashMap::new()),
            copies: StagedCopies::default(),
            full_twiddle_max_bytes: None,
        })
    }

    /// Sets the largest twiddle table (bytes) that one pass of a
    /// transform may keep on the device (default: the larger of
    /// [`DEFAULT_FULL_TWIDDLE_MAX_BYTES`] and an eighth of the memory
    /// budget's limit; 0 turns them off). A pass of sub-problem size
    /// B = 2^log_b between two shared-memory rounds needs the B twiddles
    /// w_B^k; with a table (the forms of [`full_twiddle_bytes`], from 80 B x
    /// B bytes for all of them in the tiles' order as Shoup entries down to
    /// 16 B x B for half of them in Montgomery form, built once per size
    /// and direction on first use, from the memory budget) each is a load
    /// instead of a two-level product: one Fr multiply an element less
    /// (faster, BENCHMARKS.md). Tables already built keep their form.
    pub fn with_full_twiddle_limit(mut self, bytes: u64) -> Self {
        self.full_twiddle_max_bytes = Some(bytes);
        self
    }

    /// The largest twiddle table (bytes) one pass may keep: the limit set
    /// by [`GpuNtt::with_full_twiddle_limit`], else the larger of
    /// [`DEFAULT_FULL_TWIDDLE_MAX_BYTES`] and an eighth of the memory
    /// budget's limit.
    pub fn full_twiddle_limit(&self) -> u64 {
        self.full_twiddle_max_bytes.unwrap_or_else(|| {
            let eighth = self.mem.budget().limit_bytes().unwrap_or(0) / 8;
            DEFAULT_FULL_TWIDDLE_MAX_BYTES.max(eighth)
        })
    }

    /// Device bytes of the twiddle tables that one direction of a
    /// 2^log_n transform keeps under this engine's limit (see
    /// [`GpuNtt::full_twiddle_limit`] and [`full_twiddle_bytes`]). For
    /// planning memory (the forward and the inverse root each keep one
    /// set); 0 when the pass plan is unavailable (a build without CUDA).
    pub fn full_twiddle_bytes(&self, log_n: u32) -> u64 {
        full_twiddle_bytes(log_n, self.full_twiddle_limit()).unwrap_or(0)
    }

    /// The memory manager (for device buffers to transform).
    pub fn memory(&self) -> &Arc<DeviceMemory> {
        &self.mem
    }

    /// Creates the engine's pinned staging buffers now (64 MiB of pinned
    /// host memory) instead of at the first staged copy of a pageable
    /// slice, so that a warmed-up process allocates none later (see
    /// [`StagedCopies::prepare`]). Returns whether pinned memory could be
    /// had.
    pub fn prepare_staging(&self) -> bool {
        self.copies.prepare()
    }

    /// The stream every transform runs on.
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    fn table(&self, key: TableKey, w: Fr, log_n: u32) -> Result<Arc<PowerTables>> {
        let mut t = self.tables.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(x) = t.get(&key) {
            return Ok(x.clone());
        }
        let mut tables = PowerTables::new(&self.mem, &self.stream, w, log_n)?;
        if matches!(key, TableKey::Root { inverse: true, .. }) {
            tables = tables.with_n_inv(&self.mem, &self.stream)?;
        }
        if matches!(key, TableKey::Root { .. }) {
            tables = tables.with_roots(&self.mem, &self.stream)?;
            tables = tables.with_pass_tables(&self.mem, &self.stream, self.full_twiddle_limit())?;
        }
        let x = Arc::new(tables);
        t.insert(key, x.clone());
        Ok(x)
    }

    /// Transforms each vector of 2^log_n elements of a device buffer in
    /// place (a batch of `len / 2^log_n` vectors), queued on this engine's
    /// stream; returns when the work is queued, not done (synchronize
    /// [`GpuNtt::stream`] or use [`GpuNtt::ntt`]). The buffer must have been
    /// allocated on this engine's device.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a bad shape, a zero coset shift or a
    /// buffer of another device; CUDA errors from the launches.
    pub fn ntt_device(
        &self,
        data: &mut DeviceBuffer<Fr>,
        log_n: u32,
        opts: NttOptions,
    ) -> Result<()> {
        let batch = check_shape(data.len(), log_n)? as u64;
        if data.stream().device() != self.mem.device() {
            return Err(Error::InvalidArgument(format!(
                "buffer of device {} given to the NTT engine of device {}",
                data.stream().device(),
                self.mem.device()
            )));
        }
        if opts.coset.is_some_and(|g| g == Fr::ZERO) {
            return Err(Error::InvalidArgument("coset shift must be nonzero".into()));
        }
        if log_n == 0 {
            return Ok(()); // size-1 transforms are the identity (1/n = 1, g^0 = 1)
        }
        let dev = self.mem.device();
        let s = self.stream.as_raw();
        // The data's own stream may hold pending work (uploads): order after
        // it. Buffers on this engine's stream are already in order.
        if data.stream().as_raw() != s {
            data.stream().synchronize()?;
        }
        let ptr = data.as_mut_ptr().cast::<std::ffi::c_void>();
        let bitrev = || {
            // SAFETY: `ptr` holds batch * 2^log_n elements on this device.
            check(unsafe { sys::cuzk_ntt_bit_reverse(dev, ptr, log_n, batch, s) })
        };
        let inverse = opts.direction == Direction::Inverse;
        let root = if inverse {
            root_of_unity(log_n)?
                .inverse()
                .expect("roots of unity are nonzero")
        } else {
            root_of_unity(log_n)?
        };
        let rt = self.table(TableKey::Root { log_n, inverse }, root, log_n)?;
        let shift = match opts.coset {
            Some(g) => {
                let g = if inverse {
                    g.inverse().expect("nonzero")
                } else {
                    g
                };
                let key = TableKey::Shift {
                    log_n,
                    inverse,
                    g: ark_ff::PrimeField::into_bigint(g).0,
                };
                Some(self.table(key, g, log_n)?)
            }
            None => None,
        };
        let shift_root = shift.as_ref().map(|t| t.root());
        let scale_dev = |factor: Option<&DeviceBuffer<Fr>>| -> Result<()> {
            let g = shift_root
                .as_ref()
                .map_or(std::ptr::null(), |r| r as *const sys::cuzk_ntt_root);
            let f = factor.map_or(std::ptr::null(), |f| f.as_ptr().cast());
            // SAFETY: the shift's tables (2^log_n powers) and the factor are
            // device buffers of this device held by the engine's table
            // cache, which outlives the kernel.
            check(unsafe { sys::cuzk_ntt_scale_powers(dev, ptr, log_n, batch, g, f, s) })
        };
        let mut pass_tw = Vec::new();
        let tables = rt.dif_tables(&mut pass_tw);
        let dif = || {
            // SAFETY: `tables` points at the root's two-level tables, per
            // pass null or the table of the form its bits of pass_tw_shoup
            // and pass_tw_tiled name, and the roots table of this root, all
            // held by the table cache (which outlives the kernels) and at
            // `pass_tw`, alive here; `ptr` holds batch * 2^log_n elements.
            check(unsafe { sys::cuzk_ntt_dif(dev, ptr, batch, &tables, s) })
        };
        if opts.order.input_reversed() {
            bitrev()?;
        }
        match opts.direction {
            Direction::Forward => {
                if shift.is_some() {
                    scale_dev(None)?;
                }
                dif()?;
                if !opts.order.output_reversed() {
                    bitrev()?;
                }
            }
            Direction::Inverse => {
                dif()?;
                let n_inv = rt.n_inv.as_ref().expect("inverse root tables carry n^-1");
                if shift.is_some() || !opts.order.output_reversed() {
                    // Natural order first: the coset factor g^-i depends on i.
                    bitrev()?;
                    scale_dev(Some(n_inv))?;
                    if opts.order.output_reversed() {
                        bitrev()?;
                    }
                } else {
                    scale_dev(Some(n_inv))?;
                }
            }
        }
        Ok(())
    }

    /// Transforms each vector of 2^log_n elements of a host slice in place
    /// (a batch of `data.len() / 2^log_n` vectors): copies in, transforms on
    /// the GPU, copies back, and waits. The copies go through the engine's
    /// [`StagedCopies`]: direct when `data` is page-locked (a
    /// [`PinnedBuffer`](crate::PinnedBuffer) or part of one, or a slice
    /// registered with `cuzk_alloc::HostRegistration`), else through its
    /// pinned staging buffers. Keep large arrays that are transformed
    /// repeatedly in pinned memory.
    ///
    /// # Errors
    /// As [`GpuNtt::ntt_device`], plus [`Error::OutOfMemory`] when the batch
    /// does not fit the device budget. `data` is written only by the copy
    /// back: it is unchanged after any error before it (a bad shape, the
    /// budget, the copy in, the transform), and may be partly written only
    /// when that copy fails.
    pub fn ntt(&self, data: &mut [Fr], log_n: u32, opts: NttOptions) -> Result<()> {
        check_shape(data.len(), log_n)?;
        let mut d = self.upload(data)?;
        self.ntt_device(&mut d, log_n, opts)?;
        self.download(&d, data)
    }

    /// A device copy of `data` (elements) from this engine's memory, copied
    /// in on its stream through its [`StagedCopies`] (direct from pinned
    /// memory, else through pinned staging buffers, several times faster
    /// than a plain copy from pageable memory), for [`GpuNtt::ntt_device`].
    /// Waits for the copy.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] when it does not fit the budget; CUDA errors.
    pub fn upload(&self, data: &[Fr]) -> Result<DeviceBuffer<Fr>> {
        let mut d = self.alloc(data.len())?;
        self.copies.upload(&mut d, data)?;
        Ok(d)
    }

    /// `len` elements of this engine's memory, ordered on its stream.
    fn alloc(&self, len: usize) -> Result<DeviceBuffer<Fr>> {
        self.mem
            .alloc::<Fr>(len, Strategy::Async, &self.stream, None)
    }

    /// Copies `d` back into `out` (equal lengths, elements) through the
    /// engine's [`StagedCopies`], after the work queued on this engine's
    /// stream.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the lengths differ; CUDA errors
    /// (discard `out` then).
    pub fn download(&self, d: &DeviceBuffer<Fr>, out: &mut [Fr]) -> Result<()> {
        self.stream.synchronize()?;
        self.copies.download(d, out)
    }

    /// Groth16's quotient on the coset: `out[i] = (a[i] * b[i] - c[i]) / Z`
    /// where `Z = g^n - 1` is the vanishing polynomial x^n - 1 on the coset
    /// `g H` (constant there). Queued on this engine's stream.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when lengths differ or `g^n = 1` (the coset
    /// is H itself, where Z vanishes); CUDA errors.
    pub fn coset_quotient(
        &self,
        a: &DeviceBuffer<Fr>,
        b: &DeviceBuffer<Fr>,
        c: &DeviceBuffer<Fr>,
        out: &mut DeviceBuffer<Fr>,
        g: Fr,
    ) -> Result<()> {
        if out.len() != a.len() {
            return Err(Error::InvalidArgument(format!(
                "coset_quotient: lengths a {}, out {} differ",
                a.len(),
                out.len()
            )));
        }
        a.stream().synchronize()?;
        let z_inv = vanishing_inverse(a.len(), g)?;
        self.mul_sub_scale(
            a.as_ptr(),
            a.len(),
            Some(b),
            Some(c),
            out.as_mut_ptr(),
            Some(z_inv),
        )
    }

    /// [`GpuNtt::coset_quotient`] into `a` itself: `a[i] = (a[i] * b[i] -
    /// c[i]) / Z`, with no output buffer (a Groth16 quotient at 2^27 then
    /// holds three vectors of 4 GiB on the device rather than four).
    ///
    /// # Errors
    /// As [`GpuNtt::coset_quotient`].
    pub fn coset_quotient_in_place(
        &self,
        a: &mut DeviceBuffer<Fr>,
        b: &DeviceBuffer<Fr>,
        c: &DeviceBuffer<Fr>,
        g: Fr,
    ) -> Result<()> {
        a.stream().synchronize()?;
        let z_inv = vanishing_inverse(a.len(), g)?;
        let out = a.as_mut_ptr();
        self.mul_sub_scale(a.as_ptr(), a.len(), Some(b), Some(c), out, Some(z_inv))
    }

    /// `a[i] *= b[i]` element-wise (equal lengths), queued on this engine's
    /// stream and waited for: the first half of
    /// [`GpuNtt::coset_quotient_in_place`], for a prover that frees `b`
    /// before `c` exists (then [`GpuNtt::coset_quotient_of_product_in_place`]).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the lengths differ; CUDA errors.
    pub fn mul_in_place(&self, a: &mut DeviceBuffer<Fr>, b: &DeviceBuffer<Fr>) -> Result<()> {
        a.stream().synchronize()?;
        let out = a.as_mut_ptr();
        self.mul_sub_scale(a.as_ptr(), a.len(), Some(b), None, out, None)
    }

    /// The second half of [`GpuNtt::coset_quotient_in_place`]: `ab[i] =
    /// (ab[i] - c[i]) / (g^n - 1)`, where `ab` already holds `a * b` on the
    /// coset `g H` ([`GpuNtt::mul_in_place`]), so that only two vectors are
    /// on the device.
    ///
    /// # Errors
    /// As [`GpuNtt::coset_quotient`].
    pub fn coset_quotient_of_product_in_place(
        &self,
        ab: &mut DeviceBuffer<Fr>,
        c: &DeviceBuffer<Fr>,
        g: Fr,
    ) -> Result<()> {
        ab.stream().synchronize()?;
        let z_inv = vanishing_inverse(ab.len(), g)?;
        let out = ab.as_mut_ptr();
        self.mul_sub_scale(ab.as_ptr(), ab.len(), None, Some(c), out, Some(z_inv))
    }

    /// `out[i] = (a[i] * b[i] - c[i]) * factor` for the n elements at `a`
    /// and `out` (device memory of this GPU, which may be the same); a
    /// `None` operand is left out (b = 1, c = 0, factor = 1).
    fn mul_sub_scale(
        &self,
        a: *const Fr,
        n: usize,
        b: Option<&DeviceBuffer<Fr>>,
        c: Option<&DeviceBuffer<Fr>>,
        out: *mut Fr,
        factor: Option<Fr>,
    ) -> Result<()> {
        for (name, x) in [("b", b), ("c", c)] {
            if let Some(x) = x {
                if x.len() != n {
                    return Err(Error::InvalidArgument(format!(
                        "coset_quotient: lengths differ: a has {n} elements, {name} {}; give \
                         vectors of one length",
                        x.len()
                    )));
                }
                x.stream().synchronize()?;
            }
        }
        let f = match factor {
            Some(v) => {
                // Stream-ordered: freeing it does not wait for the whole
                // device (other workers' kernels).
                let mut f = self
                    .mem
                    .alloc::<Fr>(1, Strategy::Async, &self.stream, None)?;
                f.copy_from_host(&[v])?;
                Some(f)
            }
            None => None,
        };
        let ptr = |x: Option<&DeviceBuffer<Fr>>| x.map_or(std::ptr::null(), |x| x.as_ptr().cast());
        let operands = sys::cuzk_ntt_mul_sub_operands {
            a: a.cast(),
            b: ptr(b),
            c: ptr(c),
        };
        // SAFETY: a, out and the given b, c hold n elements of this device
        // (out may alias a: the kernel reads an element before it writes
        // it, and the ABI allows it; null b, c, factor are allowed); `f`
        // outlives the kernel (synchronized below).
        check(unsafe {
            sys::cuzk_ntt_mul_sub_scale(
                self.mem.device(),
                &operands,
                out.cast(),
                n as u64,
                f.as_ref().map_or(std::ptr::null(), |f| f.as_ptr().cast()),
                self.stream.as_raw(),
            )
        })?;
        self.stream.synchronize()
    }
}

/// `1 / (g^n - 1)` for the `n` elements of a vector (a power of two): the
/// inverse of the vanishing polynomial `x^n - 1` on the coset `g H`.
///
/// # Errors
/// [`Error::InvalidArgument`] when n is not a power of two or `g^n = 1`.
fn vanishing_inverse(n: usize, g: Fr) -> Result<Fr> {
    let log_n = crate::log2_exact(n)?;
    (g.pow([1u64 << log_n]) - Fr::ONE).inverse().ok_or_else(|| {
        Error::InvalidArgument("g^n = 1: Z vanishes on this coset; pick g outside H".into())
    })
}
