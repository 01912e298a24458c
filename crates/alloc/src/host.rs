//! Page-locked host memory: [`PinnedBuffer`] (`cudaHostAlloc`),
//! [`HostRegistration`] and [`PageLock`] (`cudaHostRegister`) and
//! [`is_page_locked`].

use crate::raw::{check, Ptr};
use crate::sys;
use cuzk_field::{DeviceRepr, Error, Result};
use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::sync::Mutex;

/// The page-locked host ranges this crate allocated or registered, each
/// mapped for the GPUs (`cudaHostAllocMapped`, `cudaHostRegisterMapped`):
/// start address -> bytes, one entry a [`PinnedBuffer`],
/// [`HostRegistration`] or [`PageLock`], removed before it is freed or
/// unregistered. A kernel may read any byte inside one entry; a range that
/// merely looks locked at both ends may have pageable memory between them.
static MAPPED: Mutex<BTreeMap<usize, usize>> = Mutex::new(BTreeMap::new());

fn mapped() -> std::sync::MutexGuard<'static, BTreeMap<usize, usize>> {
    MAPPED.lock().unwrap_or_else(|p| p.into_inner())
}

fn mapped_insert(start: *const u8, bytes: usize) {
    if bytes > 0 {
        mapped().insert(start as usize, bytes);
    }
}

fn mapped_remove(start: *const u8) {
    mapped().remove(&(start as usize));
}

/// The mapped page-locked allocation or registration of this crate that
/// holds every byte of `data`: its start address and `data`'s byte offset
/// in it; `None` for an empty slice or one that no single
/// [`PinnedBuffer`], [`HostRegistration`] or [`PageLock`] holds.
pub(crate) fn mapped_range(data: &[u8]) -> Option<(*const u8, u64)> {
    if data.is_empty() {
        return None;
    }
    let at = data.as_ptr() as usize;
    let map = mapped();
    let (&start, &bytes) = map.range(..=at).next_back()?;
    let end = start.checked_add(bytes)?;
    (at + data.len() <= end).then_some((start as *const u8, (at - start) as u64))
}

/// `len` elements of `T` in pinned (page-locked) host memory from
/// `cudaHostAlloc`, zero-initialized, freed when dropped. Copies from and to
/// it run at full PCIe speed and can overlap with kernels.
pub struct PinnedBuffer<T: DeviceRepr> {
    ptr: Ptr,
    len: usize,
    _t: PhantomData<T>,
}

impl<T: DeviceRepr> PinnedBuffer<T> {
    /// Allocates `len` zeroed elements (all-zero bytes are a valid value of
    /// every [`DeviceRepr`] type: zero field elements, the (0, 0) affine
    /// identity).
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] when pinned memory runs out; [`Error::NoDevice`]
    /// or [`Error::NoCudaBuild`] without CUDA.
    pub fn new(len: usize) -> Result<Self> {
        let bytes = (len as u64)
            .checked_mul(std::mem::size_of::<T>() as u64)
            .ok_or_else(|| {
                Error::InvalidArgument(format!("{len} elements overflow a byte count"))
            })?;
        let mut p = std::ptr::null_mut();
        if bytes > 0 {
            // SAFETY: out-pointer valid.
            check(unsafe { sys::cuzk_host_alloc(bytes, &mut p) })?;
            // SAFETY: `p` points to `bytes` writable bytes just allocated.
            unsafe { std::ptr::write_bytes(p.cast::<u8>(), 0, bytes as usize) };
            mapped_insert(p.cast::<u8>(), bytes as usize);
        }
        Ok(PinnedBuffer {
            ptr: Ptr(p),
            len,
            _t: PhantomData,
        })
    }
}

impl<T: DeviceRepr> std::ops::Deref for PinnedBuffer<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: `len` initialized elements owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr.0 as *const T, self.len) }
    }
}

impl<T: DeviceRepr> std::ops::DerefMut for PinnedBuffer<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        if self.len == 0 {
            return &mut [];
        }
        // SAFETY: `len` initialized elements owned exclusively by self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.0 as *mut T, self.len) }
    }
}

impl<T: DeviceRepr> Drop for PinnedBuffer<T> {
    fn drop(&mut self) {
        if !self.ptr.0.is_null() {
            mapped_remove(self.ptr.0.cast::<u8>());
            // SAFETY: allocated by cuzk_host_alloc, freed once.
            let _ = check(unsafe { sys::cuzk_host_free(self.ptr.0) });
        }
    }
}

/// Pinned buffers kept for reuse: allocating and page-locking a large
/// buffer (an assignment of 0.5 to 4 GiB) costs more than the DMA it
/// speeds up, so workers that copy arrays of the same size again and again
/// take a kept buffer of that length and give it back. Shared by
/// reference across threads.
pub struct PinnedPool<T: DeviceRepr> {
    keep: usize,
    free: Mutex<Vec<PinnedBuffer<T>>>,
}

impl<T: DeviceRepr> std::fmt::Debug for PinnedPool<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PinnedPool")
            .field("keep", &self.keep)
            .field("kept", &self.kept())
            .finish()
    }
}

impl<T: DeviceRepr> PinnedPool<T> {
    /// A pool keeping at most `keep` idle buffers.
    pub fn new(keep: usize) -> Self {
        PinnedPool {
            keep,
            free: Mutex::new(Vec::new()),
        }
    }

    fn free(&self) -> std::sync::MutexGuard<'_, Vec<PinnedBuffer<T>>> {
        self.free.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Idle buffers kept now.
    pub fn kept(&self) -> usize {
        self.free().len()
    }

    /// A buffer of `len` elements: a kept one of that length (its contents
    /// those it was given back with), else a new zeroed one.
    ///
    /// # Errors
    /// As [`PinnedBuffer::new`].
    pub fn take(&self, len: usize) -> Result<PinnedBuffer<T>> {
        let kept = {
            let mut free = self.free();
            free.iter()
                .position(|b| b.len() == len)
                .map(|i| free.swap_remove(i))
        };
        match kept {
            Some(b) => Ok(b),
            None => PinnedBuffer::new(len),
        }
    }

    /// Keeps `buf` for a later [`PinnedPool::take`]; past `keep` idle
    /// buffers the one kept longest is dropped.
    pub fn give(&self, buf: PinnedBuffer<T>) {
        let mut free = self.free();
        free.push(buf);
        if free.len() > self.keep {
            free.remove(0);
        }
    }

    /// Makes the idle buffers `keep` buffers of `len` elements (others
    /// dropped), as far as pinned memory allows, so that the next takes of
    /// that length wait for no allocation; returns how many are kept.
    pub fn fill(&self, len: usize) -> usize {
        let have = {
            let mut free = self.free();
            free.retain(|b| b.len() == len);
            free.len()
        };
        for kept in have..self.keep {
            match PinnedBuffer::new(len) {
                Ok(b) => self.give(b),
                Err(_) => return kept,
            }
        }
        self.keep
    }
}

/// An existing slice page-locked with `cudaHostRegister` for as long as
/// this guard lives (unregistered on drop); the slice stays usable through
/// the guard.
pub struct HostRegistration<'a, T: DeviceRepr> {
    data: &'a mut [T],
}

impl<'a, T: DeviceRepr> HostRegistration<'a, T> {
    /// Registers `data` (a no-op for an empty slice).
    ///
    /// # Errors
    /// [`Error::Cuda`] (e.g. already registered), [`Error::NoDevice`],
    /// [`Error::NoCudaBuild`].
    pub fn new(data: &'a mut [T]) -> Result<Self> {
        if !data.is_empty() {
            // SAFETY: the slice is valid for its byte length for 'a; it is
            // unregistered before the borrow ends.
            check(unsafe {
                sys::cuzk_host_register(
                    data.as_mut_ptr().cast(),
                    std::mem::size_of_val(data) as u64,
                )
            })?;
            mapped_insert(data.as_ptr().cast(), std::mem::size_of_val(data));
        }
        Ok(HostRegistration { data })
    }
}

impl<T: DeviceRepr> std::ops::Deref for HostRegistration<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.data
    }
}

impl<T: DeviceRepr> std::ops::DerefMut for HostRegistration<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        self.data
    }
}

impl<T: DeviceRepr> Drop for HostRegistration<'_, T> {
    fn drop(&mut self) {
        if !self.data.is_empty() {
            mapped_remove(self.data.as_ptr().cast());
            // SAFETY: registered in `new`.
            let _ = check(unsafe { sys::cuzk_host_unregister(self.data.as_mut_ptr().cast()) });
        }
    }
}

/// Memory the caller owns and only reads, page-locked with
/// `cudaHostRegister` (portable: every GPU of the process copies from it
/// by DMA) until this guard drops; for data that outlives the guard but
/// cannot lend it a `&mut` borrow, such as a proving key shared by the
/// workers of several GPUs. The guard holds no borrow: keep the data
/// allocated, unmoved and unshrunk until the guard is dropped (drop it
/// first, e.g. by declaring it before the data in a struct).
pub struct PageLock {
    ptr: Ptr,
}

impl PageLock {
    /// Registers `data` (a no-op for an empty slice).
    ///
    /// # Safety
    /// `data`'s memory must stay allocated at the same address until the
    /// guard is dropped, and the guard must not be dropped while a copy or
    /// a gather ([`crate::Staging::upload_gather`], which lets the GPU read
    /// the locked range directly) from the range is in flight.
    ///
    /// # Errors
    /// [`Error::Cuda`] (e.g. the range is already registered, or the
    /// system's locked-memory limit is reached), [`Error::NoDevice`],
    /// [`Error::NoCudaBuild`].
    pub unsafe fn new<T: DeviceRepr>(data: &[T]) -> Result<Self> {
        if data.is_empty() {
            return Ok(PageLock {
                ptr: Ptr(std::ptr::null_mut()),
            });
        }
        let p = data.as_ptr() as *mut std::ffi::c_void;
        // SAFETY: the range is valid for its byte length until the guard
        // drops (the caller's promise); the runtime only locks its pages.
        check(unsafe { sys::cuzk_host_register(p, std::mem::size_of_val(data) as u64) })?;
        mapped_insert(p.cast::<u8>(), std::mem::size_of_val(data));
        Ok(PageLock { ptr: Ptr(p) })
    }
}

impl Drop for PageLock {
    fn drop(&mut self) {
        if !self.ptr.0.is_null() {
            mapped_remove(self.ptr.0.cast::<u8>());
            // SAFETY: registered in `new`, still allocated (the caller's
            // promise).
            let _ = check(unsafe { sys::cuzk_host_unregister(self.ptr.0) });
        }
    }
}

/// Whether `data` lies in page-locked host memory: a [`PinnedBuffer`] (or
/// part of one), a slice under a [`HostRegistration`], or any memory that
/// `cudaHostAlloc` / `cudaMallocHost` returned or `cudaHostRegister`
/// locked. Copies between such memory and the device run as direct DMA
/// transfers, so [`StagedCopies`](crate::StagedCopies) and
/// [`Staging`](crate::Staging) skip their staging buffers for it.
///
/// Asks `cudaPointerGetAttributes` about the first and the last byte of the
/// slice; a slice whose ends lie in two registrations with pageable memory
/// between them reads as locked, which only makes its copies slower (a
/// direct copy from pageable memory is still correct). An empty slice is
/// not locked. Pageable memory is an answer, never an error, and leaves no
/// CUDA error behind.
///
/// # Errors
/// [`Error::NoCudaBuild`] in a build without CUDA; [`Error::NoDevice`]
/// without a usable GPU; [`Error::Cuda`] for another runtime failure.
pub fn is_page_locked<T: DeviceRepr>(data: &[T]) -> Result<bool> {
    let mut out = 0i32;
    // SAFETY: the pointer is only inspected (never dereferenced) by the
    // runtime; the out-pointer is valid for the call.
    check(unsafe {
        sys::cuzk_host_is_page_locked(
            data.as_ptr().cast(),
            std::mem::size_of_val(data) as u64,
            &mut out,
        )
    })?;
    Ok(out != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The registry answers only for slices inside one entry, with their
    /// offset in it, and forgets an entry once removed. (Ordinary memory
    /// stands in for registered memory: the registry only keeps addresses.)
    #[test]
    fn mapped_range_needs_one_entry_holding_the_whole_slice() {
        let a = vec![0u8; 4096];
        let b = vec![0u8; 4096];
        mapped_insert(a.as_ptr(), a.len());
        mapped_insert(b.as_ptr(), 1024);
        assert_eq!(mapped_range(&a), Some((a.as_ptr(), 0)));
        assert_eq!(mapped_range(&a[10..100]), Some((a.as_ptr(), 10)));
        assert_eq!(mapped_range(&a[4095..]), Some((a.as_ptr(), 4095)));
        assert_eq!(mapped_range(&b[..1024]), Some((b.as_ptr(), 0)));
        assert_eq!(mapped_range(&b[1000..1025]), None, "past the entry's end");
        assert_eq!(mapped_range(&b[2000..2001]), None, "after the entry");
        assert_eq!(mapped_range(&a[..0]), None, "empty");
        mapped_remove(a.as_ptr());
        assert_eq!(mapped_range(&a[10..100]), None, "removed");
        mapped_remove(b.as_ptr());
        assert_eq!(mapped_range(&b[..10]), None);
    }
}
