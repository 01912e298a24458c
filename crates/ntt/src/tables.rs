//! The NTT's twiddle tables: which form each pass keeps (planning, no GPU
//! needed) and building them on the device (`cuzk_ntt_powers*`,
//! `cuzk_ntt_roots`).

use crate::{inv_n, sys, Error, Fr, Result};
use ark_ff::Field;
use cuzk_alloc::{DeviceBuffer, DeviceMemory, Strategy, Stream};
use std::sync::Arc;

/// A `cuzk_status` as a [`Result`].
pub(crate) fn check(s: sys::cuzk_status) -> Result<()> {
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
/// first (BENCHMARKS.md: tiled tables, whose entries a tile reads as one
/// contiguous run, beat half tables; Shoup entries beat Montgomery ones
/// where they are read in order).
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
/// `w^e = hi[e >> lo_bits] * lo[e & (2^lo_bits - 1)]` for `e < 2^log_n`,
/// and, for a root of unity, what its transforms need besides.
pub(crate) struct PowerTables {
    lo: DeviceBuffer<Fr>,
    hi: DeviceBuffer<Fr>,
    lo_bits: u32,
    log_n: u32,
    /// For the inverse root's tables: n^-1 on the device (the inverse's
    /// scale), kept with them so that no call uploads or waits for it.
    pub(crate) n_inv: Option<DeviceBuffer<Fr>>,
    /// For a root's tables: per pass of the transform (`cuzk_ntt_plan`),
    /// the table of that pass's twiddles (`w_B^k = w^(k 2^(log_n - log_b))`)
    /// in the fastest form ([`TableForm`]) that fits
    /// [`GpuNtt::full_twiddle_limit`](crate::GpuNtt::full_twiddle_limit)
    /// and the budget, or none.
    pass_tw: Vec<Option<PassTable>>,
    /// For a root's tables: the butterfly roots of every pass with their
    /// Shoup constants (`cuzk_ntt_roots`, `CUZK_NTT_ROOTS_BYTES` = 20 KiB).
    roots: Option<DeviceBuffer<Fr>>,
}

impl PowerTables {
    /// The two-level tables of `w`, an element of order dividing 2^log_n
    /// (a root of unity, or a coset shift whose powers below 2^log_n are
    /// needed). Waits for the copies.
    pub(crate) fn new(mem: &Arc<DeviceMemory>, stream: &Stream, w: Fr, log_n: u32) -> Result<Self> {
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
            log_n,
            n_inv: None,
            pass_tw: Vec::new(),
            roots: None,
        })
    }

    /// The two-level tables as the C ABI takes them. The pointers are valid
    /// while `self` lives.
    pub(crate) fn root(&self) -> sys::cuzk_ntt_root {
        sys::cuzk_ntt_root {
            tw_lo: self.lo.as_ptr().cast(),
            tw_hi: self.hi.as_ptr().cast(),
            lo_bits: self.lo_bits,
            log_n: self.log_n,
        }
    }

    /// The table set of `cuzk_ntt_dif` for this root: `pass_tw` receives
    /// the pass tables' pointers, to which the result points (keep both,
    /// and `self`, alive while it is used).
    pub(crate) fn dif_tables(
        &self,
        pass_tw: &mut Vec<*const std::ffi::c_void>,
    ) -> sys::cuzk_ntt_tables {
        pass_tw.clear();
        pass_tw.extend(self.pass_tw.iter().map(|t| {
            t.as_ref()
                .map_or(std::ptr::null(), |t| t.buf.as_ptr().cast())
        }));
        let mask = |f: fn(TableForm) -> bool| {
            self.pass_tw
                .iter()
                .enumerate()
                .filter(|(_, t)| t.as_ref().is_some_and(|t| f(t.form)))
                .fold(0u32, |m, (p, _)| m | (1 << p))
        };
        sys::cuzk_ntt_tables {
            root: self.root(),
            pass_tw: pass_tw.as_ptr(),
            pass_tw_count: pass_tw.len() as u32,
            pass_tw_shoup: mask(TableForm::shoup),
            pass_tw_tiled: mask(TableForm::tiled),
            roots: self
                .roots
                .as_ref()
                .map_or(std::ptr::null(), |r| r.as_ptr().cast()),
        }
    }

    /// Adds the butterfly roots table (`cuzk_ntt_roots`) of this root.
    /// Queued on `stream`.
    pub(crate) fn with_roots(mut self, mem: &Arc<DeviceMemory>, stream: &Stream) -> Result<Self> {
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
                &self.root(),
                stream.as_raw(),
            )
        })?;
        self.roots = Some(r);
        Ok(self)
    }

    /// Adds the twiddle table of every pass whose table takes at
    /// most `max_bytes` (see [`pass_forms`]) and fits the memory budget;
    /// the others keep the two-level products. Queued on `stream`.
    pub(crate) fn with_pass_tables(
        mut self,
        mem: &Arc<DeviceMemory>,
        stream: &Stream,
        max_bytes: u64,
    ) -> Result<Self> {
        let root = self.root();
        for (b, r) in twiddle_pass_sizes(self.log_n)? {
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
            let (dev, out, s) = (mem.device(), t.as_mut_ptr().cast(), stream.as_raw());
            // SAFETY: `t` holds `form.bytes(b)` bytes, the entries of the
            // chosen form (b >= 1: a pass that makes twiddles has a radix
            // and columns; tiled forms only where it has four columns or
            // more: pass_forms), 256-byte aligned like every device
            // allocation; `root` names the two-level tables of `self`
            // (2^lo_bits and 2^(log_n - lo_bits) elements); all on this
            // device.
            check(unsafe {
                match form {
                    TableForm::TiledShoup | TableForm::TiledMont => sys::cuzk_ntt_powers_tiled(
                        dev,
                        out,
                        b,
                        r,
                        u32::from(form.shoup()),
                        &root,
                        s,
                    ),
                    TableForm::HalfShoup => sys::cuzk_ntt_powers_shoup(dev, out, b, &root, s),
                    TableForm::HalfMont => sys::cuzk_ntt_powers(dev, out, b, &root, s),
                }
            })?;
            self.pass_tw.push(Some(PassTable { buf: t, form }));
        }
        Ok(self)
    }

    /// Adds n^-1 (for the inverse transform of size 2^log_n).
    pub(crate) fn with_n_inv(mut self, mem: &Arc<DeviceMemory>, stream: &Stream) -> Result<Self> {
        let mut b = mem.alloc::<Fr>(1, Strategy::Sync, stream, None)?;
        b.copy_from_host(&[inv_n(self.log_n)])?;
        self.n_inv = Some(b);
        Ok(self)
    }
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
/// Montgomery's (fewer multiply-pipe cycles). A half table is read
/// scattered: a large one in Shoup form (80 bytes an entry) was slower
/// than Montgomery's 32 bytes (BENCHMARKS.md). Tiled tables (read in
/// order) take Shoup form at any size.
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

/// Default of [`GpuNtt::with_full_twiddle_limit`](crate::GpuNtt::with_full_twiddle_limit), the least of it: 2 GiB.
/// Without a limit set, an engine takes the larger of this and an eighth
/// of its memory budget's limit ([`GpuNtt::full_twiddle_limit`](crate::GpuNtt::full_twiddle_limit)). At 2 GiB
/// a 2^24 transform keeps tiled Shoup tables for both of its twiddle
/// passes (1.25 GiB + 5 MiB), 2^26 a tiled Montgomery one and a tiled
/// Shoup one (2 GiB + 10 MiB), 2^27 a half Montgomery one and a tiled
/// Shoup one (2 GiB + 20 MiB); with an eighth of an H200's 139 GiB (17 GiB)
/// 2^26 and 2^27 keep tiled Shoup tables throughout (5 GiB + 10 MiB, 10 GiB
/// + 20 MiB).
pub const DEFAULT_FULL_TWIDDLE_MAX_BYTES: u64 = 2 << 30;
