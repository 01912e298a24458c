//! The GPU path: kernels from `csrc/ntt`, device memory from cuzk-alloc,
//! twiddle tables cached per domain size and direction.

use crate::{check_shape, inv_n, root_of_unity, sys, Direction, NttOptions};
use crate::{Error, Fr, Result};
use ark_ff::{AdditiveGroup, Field};
use cuzk_alloc::{BudgetConfig, DeviceBuffer, DeviceMemory, StagedCopies, Strategy, Stream};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

fn check(s: sys::cuzk_status) -> Result<()> {
    Error::from_status(s.code, s.cuda_error, &s.message)
}

/// The half twiddle table of one pass on the device.
struct PassTable {
    /// 2^(log_b - 1) entries: 32-byte Montgomery-form elements
    /// (`cuzk_ntt_powers`), or `CUZK_NTT_SHOUP_ENTRY_BYTES`-byte Shoup
    /// entries (`cuzk_ntt_powers_shoup`), held as whole `Fr`s.
    buf: DeviceBuffer<Fr>,
    shoup: bool,
}

/// Powers of one element as two tables on the device:
/// `w^e = hi[e >> lo_bits] * lo[e & (2^lo_bits - 1)]` for `e < 2^log_n`.
struct PowerTables {
    lo: DeviceBuffer<Fr>,
    hi: DeviceBuffer<Fr>,
    lo_bits: u32,
    /// For the inverse root's tables: n^-1 on the device (the inverse's
    /// scale), kept with them so that no call uploads or waits for it.
    n_inv: Option<DeviceBuffer<Fr>>,
    /// For a root's tables: per pass of the transform (`cuzk_ntt_plan`),
    /// the half table of that pass's twiddles (`w^(k 2^(log_n - log_b))`,
    /// k < 2^(log_b - 1); the kernel takes the other half from
    /// w_B^(k + B/2) = -w_B^k), where it fits
    /// [`GpuNtt::with_full_twiddle_limit`], in Shoup form where that takes
    /// at most [`SHOUP_TWIDDLE_MAX_BYTES`].
    pass_tw: Vec<Option<PassTable>>,
    /// For a root's tables: the butterfly roots of every pass with their
    /// Shoup constants (`cuzk_ntt_roots`, `CUZK_NTT_ROOTS_BYTES` = 20 KiB).
    roots: Option<DeviceBuffer<Fr>>,
}

impl PowerTables {
    fn new(mem: &Arc<DeviceMemory>, stream: &Stream, w: Fr, log_n: u32) -> Result<Self> {
        let lo_bits = log_n.div_ceil(2);
        let powers = |base: Fr, count: usize| {
            let mut v = Vec::with_capacity(count);
            let mut acc = Fr::ONE;
            for _ in 0..count {
                v.push(acc);
                acc *= base;
            }
            v
        };
        let lo_host = powers(w, 1 << lo_bits);
        let hi_host = powers(w.pow([1u64 << lo_bits]), 1 << (log_n - lo_bits));
        let mut lo = mem.alloc::<Fr>(lo_host.len(), Strategy::Sync, stream, None)?;
        lo.copy_from_host(&lo_host)?;
        let mut hi = mem.alloc::<Fr>(hi_host.len(), Strategy::Sync, stream, None)?;
        hi.copy_from_host(&hi_host)?;
        Ok(PowerTables {
            lo,
            hi,
            lo_bits,
            n_inv: None,
            pass_tw: Vec::new(),
            roots: None,
        })
    }

    /// Adds the butterfly roots table (`cuzk_ntt_roots`) of this root of
    /// order 2^log_n. Queued on `stream`.
    fn with_roots(mut self, mem: &Arc<DeviceMemory>, stream: &Stream, log_n: u32) -> Result<Self> {
        let elems = (sys::CUZK_NTT_ROOTS_BYTES as usize).div_ceil(std::mem::size_of::<Fr>());
        let mut r = mem.alloc::<Fr>(elems, Strategy::Sync, stream, None)?;
        // SAFETY: `r` holds at least CUZK_NTT_ROOTS_BYTES bytes (aligned as
        // Fr, 8 bytes; device allocations are 256-byte aligned); the
        // two-level tables hold 2^lo_bits and 2^(log_n - lo_bits); all on
        // this device.
        check(unsafe {
            sys::cuzk_ntt_roots(
                mem.device(),
                r.as_mut_ptr().cast(),
                log_n,
                self.lo.as_ptr().cast(),
                self.hi.as_ptr().cast(),
                self.lo_bits,
                stream.as_raw(),
            )
        })?;
        self.roots = Some(r);
        Ok(self)
    }

    /// Adds the (half) twiddle table of every pass whose table takes at
    /// most `max_bytes` (see [`pass_table`]) and fits the memory budget;
    /// the others keep the two-level products. Queued on `stream`.
    fn with_pass_tables(
        mut self,
        mem: &Arc<DeviceMemory>,
        stream: &Stream,
        log_n: u32,
        max_bytes: u64,
    ) -> Result<Self> {
        for b in twiddle_pass_sizes(log_n)? {
            // The table `pass_table` picks; if the budget has no room for a
            // Shoup table, the Montgomery one; with no room for that either,
            // this pass keeps the two-level products.
            let mut choice = pass_table(b, max_bytes);
            let mut table = None;
            while let Some((shoup, bytes)) = choice {
                let elems = bytes.div_ceil(std::mem::size_of::<Fr>() as u64) as usize;
                match mem.alloc::<Fr>(elems, Strategy::Sync, stream, None) {
                    Ok(t) => {
                        table = Some((shoup, t));
                        break;
                    }
                    Err(Error::OutOfMemory(_)) if shoup => {
                        let mont = (std::mem::size_of::<Fr>() as u64) << b.saturating_sub(1);
                        choice = (mont <= max_bytes).then_some((false, mont));
                    }
                    Err(Error::OutOfMemory(_)) => break,
                    Err(e) => return Err(e),
                }
            }
            let Some((shoup, mut t)) = table else {
                self.pass_tw.push(None);
                continue;
            };
            let make = if shoup {
                sys::cuzk_ntt_powers_shoup
            } else {
                sys::cuzk_ntt_powers
            };
            // SAFETY: `t` holds 2^(b-1) entries of the chosen
            // format (b >= 1: a pass that makes twiddles has a radix and
            // columns), 256-byte aligned like every device allocation; the
            // two-level tables hold 2^lo_bits and 2^(log_n - lo_bits); all
            // on this device.
            check(unsafe {
                make(
                    mem.device(),
                    t.as_mut_ptr().cast(),
                    b,
                    log_n,
                    self.lo.as_ptr().cast(),
                    self.hi.as_ptr().cast(),
                    self.lo_bits,
                    stream.as_raw(),
                )
            })?;
            self.pass_tw.push(Some(PassTable { buf: t, shoup }));
        }
        Ok(self)
    }

    /// Adds n^-1 (for the inverse transform of size 2^log_n).
    fn with_n_inv(mut self, mem: &Arc<DeviceMemory>, stream: &Stream, log_n: u32) -> Result<Self> {
        let mut b = mem.alloc::<Fr>(1, Strategy::Sync, stream, None)?;
        b.copy_from_host(&[inv_n(log_n)])?;
        self.n_inv = Some(b);
        Ok(self)
    }
}

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
/// twiddle tables of its passes up to [`GpuNtt::with_full_twiddle_limit`]
/// (256 + 2.5 MiB at 2^24, 1 GiB + 5 MiB at 2^26, 2 GiB + 10 MiB at 2^27,
/// 32 MiB + 640 KiB at 2^28; see
/// [`GpuNtt::full_twiddle_bytes`]) and the 20 KiB table of its butterfly
/// roots (`cuzk_ntt_roots`). A table that found no room in the
/// budget when first built stays on the two-level products for the
/// engine's life. Share one per device;
/// calls are serialized on its stream. Host-to-host transforms of 4 MiB or
/// more copy through pinned staging buffers ([`cuzk_alloc::StagedCopies`]:
/// 64 MiB of pinned host memory, taken on first use and held).
pub struct GpuNtt {
    mem: Arc<DeviceMemory>,
    stream: Stream,
    tables: Mutex<HashMap<TableKey, Arc<PowerTables>>>,
    /// Host-to-host transforms copy through pinned staging buffers.
    copies: StagedCopies,
    /// Largest full (half) twiddle table of one pass, in bytes.
    full_twiddle_max_bytes: u64,
}

/// Device bytes of the twiddle tables that one direction of a 2^log_n
/// transform keeps when each pass's table may take up to `max_bytes`: the
/// sum over the passes of `cuzk_ntt_plan` but the last of the table each
/// keeps (a pass of sub-problem size B keeps w_B^k for k < B/2 and takes
/// the other half from w_B^(k + B/2) = -w_B^k): 80 x 2^(log_b - 1) bytes
/// in Shoup form when that is at most [`SHOUP_TWIDDLE_MAX_BYTES`] and
/// `max_bytes`, else 32 x 2^(log_b - 1) when that is at most `max_bytes`,
/// else none. Needs no GPU.
///
/// # Errors
/// [`Error::NoCudaBuild`] in a build without the CUDA sources (the pass plan
/// lives in them); [`Error::InvalidArgument`] for log_n > 32.
pub fn full_twiddle_bytes(log_n: u32, max_bytes: u64) -> Result<u64> {
    Ok(twiddle_pass_sizes(log_n)?
        .filter_map(|b| pass_table(b, max_bytes))
        .map(|(_, bytes)| bytes)
        .sum())
}

/// Largest twiddle table of one pass (bytes) kept in Shoup form: entries
/// of w and its Shoup constant (`CUZK_NTT_SHOUP_ENTRY_BYTES` = 80 bytes), on
/// which the kernel multiplies by Shoup's product instead of Montgomery's
/// (about 19% fewer multiply-pipe cycles). On the H200 (BENCHMARKS.md,
/// session 13) the small tables of the second twiddle pass (5 and 10 MiB
/// at 2^26 and 2^27) took 0.5-0.7% off a forward transform, while the
/// 640 MiB one of 2^24's first pass cost 4% (80 scattered bytes an
/// element instead of 32); larger tables stay in Montgomery form.
pub const SHOUP_TWIDDLE_MAX_BYTES: u64 = 64 << 20;

/// The table a pass of sub-problem size 2^log_b (log_b >= 1) keeps under a
/// limit of `max_bytes`: `Some((shoup, bytes))`, Shoup form when its
/// 80 x 2^(log_b - 1) bytes are at most [`SHOUP_TWIDDLE_MAX_BYTES`] and
/// `max_bytes`, else Montgomery form (32 x 2^(log_b - 1) bytes) when that
/// is at most `max_bytes`, else `None` (two-level products).
fn pass_table(log_b: u32, max_bytes: u64) -> Option<(bool, u64)> {
    let half = log_b.saturating_sub(1);
    let shoup = u64::from(sys::CUZK_NTT_SHOUP_ENTRY_BYTES) << half;
    if shoup <= SHOUP_TWIDDLE_MAX_BYTES.min(max_bytes) {
        return Some((true, shoup));
    }
    let mont = (std::mem::size_of::<Fr>() as u64) << half;
    (mont <= max_bytes).then_some((false, mont))
}

/// log2 of the sub-problem size B of every pass of a 2^log_n transform
/// that makes twiddles (`cuzk_ntt_plan`'s passes but the last), in order.
fn twiddle_pass_sizes(log_n: u32) -> Result<impl Iterator<Item = u32>> {
    let mut log_b = [0u32; 8];
    let mut passes = 0u32;
    // SAFETY: out-pointers to 8 entries and a count; no GPU work.
    check(unsafe { sys::cuzk_ntt_plan(log_n, log_b.as_mut_ptr(), 8, &mut passes) })?;
    Ok(log_b.into_iter().take((passes as usize).saturating_sub(1)))
}

/// Default of [`GpuNtt::with_full_twiddle_limit`]: 2 GiB, the (half) table
/// of a 2^27-element pass. With it 2^24, 2^26 and 2^27 transforms keep
/// tables for both of their twiddle passes (256 + 2.5 MiB, 1 GiB + 5 MiB
/// and 2 GiB + 10 MiB, the second in Shoup form: [`SHOUP_TWIDDLE_MAX_BYTES`]),
/// a 2^28 one for all but its first (32 MiB + 640 KiB; the first would take
/// 4 GiB).
pub const DEFAULT_FULL_TWIDDLE_MAX_BYTES: u64 = 2 << 30;

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
            full_twiddle_max_bytes: DEFAULT_FULL_TWIDDLE_MAX_BYTES,
        })
    }

    /// Sets the largest twiddle table (bytes) that one pass of a
    /// transform may keep on the device (default
    /// [`DEFAULT_FULL_TWIDDLE_MAX_BYTES`]; 0 turns them off). A pass of
    /// sub-problem size B = 2^log_b between two shared-memory rounds needs
    /// the B twiddles w_B^k; with a table (w_B^k for k < B/2, 16 B x B, or
    /// 40 B x B in Shoup form up to [`SHOUP_TWIDDLE_MAX_BYTES`],
    /// built once per size and direction on first use, from the memory
    /// budget; the other half is -w_B^(k - B/2)) each is a load instead of
    /// a two-level product: one Fr multiply an element less. On the H200
    /// (BENCHMARKS.md) tables for every pass took 7-9% off a forward
    /// transform; the default limit gives 2^24, 2^26 and 2^27 tables for
    /// every pass. Tables already built keep their size.
    pub fn with_full_twiddle_limit(mut self, bytes: u64) -> Self {
        self.full_twiddle_max_bytes = bytes;
        self
    }

    /// Device bytes of the twiddle tables that one direction of a
    /// 2^log_n transform keeps under this engine's limit (see
    /// [`GpuNtt::with_full_twiddle_limit`] and [`full_twiddle_bytes`]). For
    /// planning memory (the forward and the inverse root each keep one
    /// set); 0 when the pass plan is unavailable (a build without CUDA).
    pub fn full_twiddle_bytes(&self, log_n: u32) -> u64 {
        full_twiddle_bytes(log_n, self.full_twiddle_max_bytes).unwrap_or(0)
    }

    /// The memory manager (for device buffers to transform).
    pub fn memory(&self) -> &Arc<DeviceMemory> {
        &self.mem
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
            tables = tables.with_n_inv(&self.mem, &self.stream, log_n)?;
        }
        if matches!(key, TableKey::Root { .. }) {
            tables = tables.with_roots(&self.mem, &self.stream, log_n)?;
            tables = tables.with_pass_tables(
                &self.mem,
                &self.stream,
                log_n,
                self.full_twiddle_max_bytes,
            )?;
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
            root_of_unity(log_n).inverse().expect("roots are nonzero")
        } else {
            root_of_unity(log_n)
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
        let scale_dev = |factor: Option<&DeviceBuffer<Fr>>| -> Result<()> {
            let (lo, hi, bits) = match &shift {
                Some(t) => (t.lo.as_ptr().cast(), t.hi.as_ptr().cast(), t.lo_bits),
                None => (std::ptr::null(), std::ptr::null(), 0),
            };
            let f = factor.map_or(std::ptr::null(), |f| f.as_ptr().cast());
            // SAFETY: tables and factor are device buffers of this device
            // held by the engine's table cache, which outlives the kernel.
            check(unsafe { sys::cuzk_ntt_scale_powers(dev, ptr, log_n, batch, lo, hi, bits, f, s) })
        };
        let pass_tw: Vec<*const std::ffi::c_void> = rt
            .pass_tw
            .iter()
            .map(|t| {
                t.as_ref()
                    .map_or(std::ptr::null(), |t| t.buf.as_ptr().cast())
            })
            .collect();
        let pass_tw_shoup = rt
            .pass_tw
            .iter()
            .enumerate()
            .filter(|(_, t)| t.as_ref().is_some_and(|t| t.shoup))
            .fold(0u32, |m, (p, _)| m | (1 << p));
        let roots = rt
            .roots
            .as_ref()
            .map_or(std::ptr::null(), |r| r.as_ptr().cast());
        let dif = || {
            // SAFETY: tables of 2^lo_bits and 2^(log_n - lo_bits) elements,
            // per pass null or 2^(log_b[p] - 1) entries in the format its
            // bit of pass_tw_shoup names (with_pass_tables)
            // and the roots table of this root (with_roots),
            // all held by the table cache, which outlives the kernels.
            check(unsafe {
                sys::cuzk_ntt_dif(
                    dev,
                    ptr,
                    log_n,
                    batch,
                    rt.lo.as_ptr().cast(),
                    rt.hi.as_ptr().cast(),
                    rt.lo_bits,
                    pass_tw.as_ptr(),
                    pass_tw.len() as u32,
                    pass_tw_shoup,
                    roots,
                    s,
                )
            })
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
    /// the GPU, copies back, and waits.
    ///
    /// # Errors
    /// As [`GpuNtt::ntt_device`], plus [`Error::OutOfMemory`] when the batch
    /// does not fit the device budget.
    pub fn ntt(&self, data: &mut [Fr], log_n: u32, opts: NttOptions) -> Result<()> {
        check_shape(data.len(), log_n)?;
        let mut d = self.upload(data)?;
        self.ntt_device(&mut d, log_n, opts)?;
        self.download(&d, data)
    }

    /// A device copy of `data` (elements) from this engine's memory, copied
    /// in on its stream through its pinned staging buffers (about 40-55 GB/s
    /// on PCIe 5, against 10-20 for a plain copy from pageable memory), for
    /// [`GpuNtt::ntt_device`]. Waits for the copy.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] when it does not fit the budget; CUDA errors.
    pub fn upload(&self, data: &[Fr]) -> Result<DeviceBuffer<Fr>> {
        let mut d = self
            .mem
            .alloc::<Fr>(data.len(), Strategy::Async, &self.stream, None)?;
        self.copies.upload(&mut d, data)?;
        Ok(d)
    }

    /// Copies `d` back into `out` (equal lengths, elements) through the
    /// staging buffers, after the work queued on this engine's stream.
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
        let n = a.len();
        if b.len() != n || c.len() != n || out.len() != n {
            return Err(Error::InvalidArgument(format!(
                "coset_quotient: lengths a {n}, b {}, c {}, out {} differ",
                b.len(),
                c.len(),
                out.len()
            )));
        }
        let log_n = crate::log2_exact(n)?;
        let z = g.pow([1u64 << log_n]) - Fr::ONE;
        let z_inv = z.inverse().ok_or_else(|| {
            Error::InvalidArgument("g^n = 1: Z vanishes on this coset; pick g outside H".into())
        })?;
        let mut f = self
            .mem
            .alloc::<Fr>(1, Strategy::Sync, &self.stream, None)?;
        f.copy_from_host(&[z_inv])?;
        for x in [a, b, c] {
            x.stream().synchronize()?;
        }
        // SAFETY: all buffers hold n elements of this device; `f` outlives the
        // kernel (synchronized below).
        check(unsafe {
            sys::cuzk_ntt_mul_sub_scale(
                self.mem.device(),
                a.as_ptr().cast(),
                b.as_ptr().cast(),
                c.as_ptr().cast(),
                out.as_mut_ptr().cast(),
                n as u64,
                f.as_ptr().cast(),
                self.stream.as_raw(),
            )
        })?;
        self.stream.synchronize()
    }
}
