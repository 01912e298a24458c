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

/// The twiddle table of one pass on the device.
struct PassTable {
    /// Entries in the layout and format of `form`, held as whole `Fr`s.
    buf: DeviceBuffer<Fr>,
    form: TableForm,
}

/// How a pass keeps its twiddles w_B^k (B = 2^log_b, R = 2^log_r rows,
/// C = B / R columns), in the order [`pass_forms`] lists them, fastest
/// first (H200, BENCHMARKS.md session 14: tiled tables, whose entries a
/// tile reads as one contiguous run, took 3.2-4.3% off a forward
/// transform at 2^24 to 2^27 in Shoup form).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TableForm {
    /// All B twiddles in the tiles' order (`cuzk_ntt_powers_tiled`), as
    /// Shoup entries: 80 B x B bytes.
    TiledShoup,
    /// All B twiddles in the tiles' order, in Montgomery form: 32 B x B.
    TiledMont,
    /// w_B^k for k < B/2 (the kernel negates for the other half) as Shoup
    /// entries (`cuzk_ntt_powers_shoup`): 40 B x B, only up to
    /// [`SHOUP_TWIDDLE_MAX_BYTES`] (large ones are read scattered: slower
    /// than Montgomery's).
    HalfShoup,
    /// w_B^k for k < B/2 in Montgomery form (`cuzk_ntt_powers`): 16 B x B.
    HalfMont,
}

impl TableForm {
    const ALL: [TableForm; 4] = [
        TableForm::TiledShoup,
        TableForm::TiledMont,
        TableForm::HalfShoup,
        TableForm::HalfMont,
    ];

    fn shoup(self) -> bool {
        matches!(self, TableForm::TiledShoup | TableForm::HalfShoup)
    }

    fn tiled(self) -> bool {
        matches!(self, TableForm::TiledShoup | TableForm::TiledMont)
    }

    /// Bytes of this form's table for a pass of 2^log_b (log_b >= 1).
    fn bytes(self, log_b: u32) -> u64 {
        let entry = if self.shoup() {
            u64::from(sys::CUZK_NTT_SHOUP_ENTRY_BYTES)
        } else {
            std::mem::size_of::<Fr>() as u64
        };
        entry
            << if self.tiled() {
                log_b
            } else {
                log_b.saturating_sub(1)
            }
    }
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
    /// the table of that pass's twiddles (`w_B^k = w^(k 2^(log_n - log_b))`)
    /// in the fastest form ([`TableForm`]) that fits
    /// [`GpuNtt::full_twiddle_limit`] and the budget, or none.
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

    /// Adds the twiddle table of every pass whose table takes at
    /// most `max_bytes` (see [`pass_forms`]) and fits the memory budget;
    /// the others keep the two-level products. Queued on `stream`.
    fn with_pass_tables(
        mut self,
        mem: &Arc<DeviceMemory>,
        stream: &Stream,
        log_n: u32,
        max_bytes: u64,
    ) -> Result<Self> {
        for (b, r) in twiddle_pass_sizes(log_n)? {
            // The fastest form `pass_forms` allows; when the budget has no
            // room for it, the next; with room for none, this pass keeps
            // the two-level products.
            let mut table = None;
            for (form, bytes) in pass_forms(b, r, max_bytes) {
                let elems = bytes.div_ceil(std::mem::size_of::<Fr>() as u64) as usize;
                match mem.alloc::<Fr>(elems, Strategy::Sync, stream, None) {
                    Ok(t) => {
                        table = Some((form, t));
                        break;
                    }
                    Err(Error::OutOfMemory(_)) => continue,
                    Err(e) => return Err(e),
                }
            }
            let Some((form, mut t)) = table else {
                self.pass_tw.push(None);
                continue;
            };
            let (dev, out, lo, hi) = (
                mem.device(),
                t.as_mut_ptr().cast(),
                self.lo.as_ptr().cast(),
                self.hi.as_ptr().cast(),
            );
            // SAFETY: `t` holds `form.bytes(b)` bytes, the entries of the
            // chosen form (b >= 1: a pass that makes twiddles has a radix
            // and columns; tiled forms only where it has four columns or
            // more: pass_forms), 256-byte aligned like every device
            // allocation; the two-level tables hold 2^lo_bits and
            // 2^(log_n - lo_bits); all on this device.
            check(unsafe {
                match form {
                    TableForm::TiledShoup | TableForm::TiledMont => sys::cuzk_ntt_powers_tiled(
                        dev,
                        out,
                        b,
                        r,
                        log_n,
                        u32::from(form.shoup()),
                        lo,
                        hi,
                        self.lo_bits,
                        stream.as_raw(),
                    ),
                    TableForm::HalfShoup => sys::cuzk_ntt_powers_shoup(
                        dev,
                        out,
                        b,
                        log_n,
                        lo,
                        hi,
                        self.lo_bits,
                        stream.as_raw(),
                    ),
                    TableForm::HalfMont => sys::cuzk_ntt_powers(
                        dev,
                        out,
                        b,
                        log_n,
                        lo,
                        hi,
                        self.lo_bits,
                        stream.as_raw(),
                    ),
                }
            })?;
            self.pass_tw.push(Some(PassTable { buf: t, form }));
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
/// twiddle tables of its passes up to [`GpuNtt::full_twiddle_limit`]
/// (at the least default, 2 GiB: 1.25 GiB + 5 MiB at 2^24, 2 GiB + 10 MiB
/// at 2^26, 2 GiB + 20 MiB at 2^27, 160 MiB + 1.25 MiB at 2^28; with an
/// H200's 17 GiB, 5 GiB + 10 MiB at 2^26 and 10 GiB + 20 MiB at 2^27; see
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
    /// Largest twiddle table of one pass, in bytes; `None`: the default
    /// ([`GpuNtt::full_twiddle_limit`]).
    full_twiddle_max_bytes: Option<u64>,
}

/// Device bytes of the twiddle tables that one direction of a 2^log_n
/// transform keeps when each pass's table may take up to `max_bytes`: the
/// sum over the passes of `cuzk_ntt_plan` but the last of the table each
/// keeps, the first of these forms that fits `max_bytes` (for a pass of
/// sub-problem size B): all B twiddles in the tiles' order as Shoup
/// entries (80 B x B bytes; passes of four columns or more), the same in
/// Montgomery form (32 B x B), half of them as Shoup entries (40 B x B, up
/// to [`SHOUP_TWIDDLE_MAX_BYTES`]), half in Montgomery form (16 B x B);
/// else none. This assumes the budget has room for each (a table that
/// does not fit falls back to the next form when built). Needs no GPU.
///
/// # Errors
/// [`Error::NoCudaBuild`] in a build without the CUDA sources (the pass plan
/// lives in them); [`Error::InvalidArgument`] for log_n > 32.
pub fn full_twiddle_bytes(log_n: u32, max_bytes: u64) -> Result<u64> {
    Ok(twiddle_pass_sizes(log_n)?
        .filter_map(|(b, r)| pass_forms(b, r, max_bytes).next())
        .map(|(_, bytes)| bytes)
        .sum())
}

/// Largest half twiddle table of one pass (bytes) kept in Shoup form:
/// entries of w and its Shoup constant (`CUZK_NTT_SHOUP_ENTRY_BYTES` = 80
/// bytes), on which the kernel multiplies by Shoup's product instead of
/// Montgomery's (about 19% fewer multiply-pipe cycles). A half table is
/// read scattered: on the H200 (BENCHMARKS.md, session 13) the 640 MiB one
/// of 2^24's first pass cost 4% against Montgomery's 32 bytes an element.
/// Tiled tables (read in order) take Shoup form at any size.
pub const SHOUP_TWIDDLE_MAX_BYTES: u64 = 64 << 20;

/// The table forms a pass of sub-problem size 2^log_b with 2^log_r rows
/// may keep under a limit of `max_bytes`, fastest first, with their bytes:
/// tiled forms only where the pass has four columns or more (log_b >=
/// log_r + 2), half Shoup tables only up to [`SHOUP_TWIDDLE_MAX_BYTES`].
fn pass_forms(log_b: u32, log_r: u32, max_bytes: u64) -> impl Iterator<Item = (TableForm, u64)> {
    TableForm::ALL.into_iter().filter_map(move |form| {
        let bytes = form.bytes(log_b);
        let allowed = bytes <= max_bytes
            && (!form.tiled() || log_b >= log_r + 2)
            && (form != TableForm::HalfShoup || bytes <= SHOUP_TWIDDLE_MAX_BYTES);
        allowed.then_some((form, bytes))
    })
}

/// (log2 of the sub-problem size B, log2 of the rows R) of every pass of a
/// 2^log_n transform that makes twiddles (`cuzk_ntt_plan`'s passes but the
/// last), in order: R of pass p is B of pass p over B of pass p + 1.
fn twiddle_pass_sizes(log_n: u32) -> Result<impl Iterator<Item = (u32, u32)>> {
    let mut log_b = [0u32; 8];
    let mut passes = 0u32;
    // SAFETY: out-pointers to 8 entries and a count; no GPU work.
    check(unsafe { sys::cuzk_ntt_plan(log_n, log_b.as_mut_ptr(), 8, &mut passes) })?;
    let n = (passes as usize).saturating_sub(1);
    Ok((0..n).map(move |p| (log_b[p], log_b[p] - log_b[p + 1])))
}

/// Default of [`GpuNtt::with_full_twiddle_limit`], the least of it: 2 GiB.
/// Without a limit set, an engine takes the larger of this and an eighth
/// of its memory budget's limit ([`GpuNtt::full_twiddle_limit`]). At 2 GiB
/// a 2^24 transform keeps tiled Shoup tables for both of its twiddle
/// passes (1.25 GiB + 5 MiB), 2^26 a tiled Montgomery one and a tiled
/// Shoup one (2 GiB + 10 MiB), 2^27 a half Montgomery one and a tiled
/// Shoup one (2 GiB + 20 MiB); with an eighth of an H200's 139 GiB (17 GiB)
/// 2^26 and 2^27 keep tiled Shoup tables throughout (5 GiB + 10 MiB, 10 GiB
/// + 20 MiB).
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
    /// instead of a two-level product: one Fr multiply an element less. On
    /// the H200 (BENCHMARKS.md) half tables for every pass took 7-9% off a
    /// forward transform, tiled Shoup ones another 3.2-4.3%. Tables
    /// already built keep their form.
    pub fn with_full_twiddle_limit(mut self, bytes: u64) -> Self {
        self.full_twiddle_max_bytes = Some(bytes);
        self
    }

    /// The largest twiddle table (bytes) one pass may keep: the limit set
    /// by [`GpuNtt::with_full_twiddle_limit`], else the larger of
    /// [`DEFAULT_FULL_TWIDDLE_MAX_BYTES`] and an eighth of the memory
    /// budget's limit (17 GiB on an H200 with the default budget).
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
                self.full_twiddle_limit(),
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
        let mask = |f: fn(TableForm) -> bool| {
            rt.pass_tw
                .iter()
                .enumerate()
                .filter(|(_, t)| t.as_ref().is_some_and(|t| f(t.form)))
                .fold(0u32, |m, (p, _)| m | (1 << p))
        };
        let (pass_tw_shoup, pass_tw_tiled) = (mask(TableForm::shoup), mask(TableForm::tiled));
        let roots = rt
            .roots
            .as_ref()
            .map_or(std::ptr::null(), |r| r.as_ptr().cast());
        let dif = || {
            // SAFETY: tables of 2^lo_bits and 2^(log_n - lo_bits) elements,
            // per pass null or the table of the form its bits of
            // pass_tw_shoup and pass_tw_tiled name (with_pass_tables)
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
                    pass_tw_tiled,
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
    /// the GPU, copies back, and waits. Large arrays go through the engine's
    /// pinned staging buffers; an array already in pinned host memory is
    /// faster with [`GpuNtt::ntt_pinned`] (direct copies).
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

    /// As [`GpuNtt::ntt`] for a host array in pinned (page-locked) memory: a
    /// [`PinnedBuffer`](crate::PinnedBuffer) (re-exported from cuzk-alloc) or any part of
    /// one, or a slice registered with [`cuzk_alloc::HostRegistration`]. The
    /// copies in and out are direct DMA transfers at the link's full rate
    /// (about 54 GB/s a direction on the H200's PCIe 5 link, BENCHMARKS.md),
    /// with no staging copy on the host, so the time is about the bytes over
    /// PCIe twice plus the transform (2^27: 187 ms against 159 ms for the
    /// bytes). Prefer it for large arrays a prover keeps between proofs. A
    /// pageable slice gives the same result, at the driver's pageable copy
    /// rate (several times slower than [`GpuNtt::ntt`]'s staging).
    /// Synchronous: returns after the copy back.
    ///
    /// # Errors
    /// As [`GpuNtt::ntt`]. `data` is written only by the final copy back: it
    /// is unchanged after any error before it (a bad shape, the budget, the
    /// copy in, the transform), and may be partly written only when that
    /// copy fails.
    pub fn ntt_pinned(&self, data: &mut [Fr], log_n: u32, opts: NttOptions) -> Result<()> {
        check_shape(data.len(), log_n)?;
        let mut d = self.alloc(data.len())?;
        d.copy_from_host(data)?;
        self.ntt_device(&mut d, log_n, opts)?;
        // On this engine's stream: the copy waits for the transform.
        d.copy_to_host(data)
    }

    /// A device copy of `data` (elements) from this engine's memory, copied
    /// in on its stream through its pinned staging buffers (about 40-55 GB/s
    /// on PCIe 5, against 10-20 for a plain copy from pageable memory), for
    /// [`GpuNtt::ntt_device`]. Waits for the copy.
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
