//! cuzk-alloc: device memory that never strands, for proving engines that
//! share a GPU between several workers.
//!
//! - [`Strategy`]: `Sync` (`cudaMalloc`), `Async` / `AsyncDedicated`
//!   (stream-ordered pools), `Unified` (managed memory, refused beyond free
//!   device memory), chosen per allocation at run time.
//! - [`DeviceMemory`]: one per device, shared by its workers: the
//!   [`Budget`], the pools, statistics ([`Stats`]) and the out-of-memory
//!   path: before reporting out-of-memory it synchronizes, trims the pools
//!   it owns (`cudaMemPoolTrimTo`) and retries once, so bytes freed through
//!   `cudaFreeAsync` and still cached in a pool never make a later
//!   `cudaMalloc` fail.
//! - [`Budget`]: at most `min(total, cap) - margin` bytes (margin 512 MiB by
//!   default, cap from `CUZK_DEVICE_MEMORY_LIMIT`), RAII [`Reservation`]s,
//!   waiting or shrinking when workers compete, and planning answers
//!   ([`Budget::fits`], [`Budget::workers_that_fit`], [`Budget::chunk_elements`]).
//! - RAII memory: [`DeviceBuffer`] (typed, with its stream), [`PinnedBuffer`]
//!   (`cudaHostAlloc`), [`HostRegistration`] (`cudaHostRegister`), [`Stream`],
//!   [`Event`] (timing work on a stream).
//!
//! Built on the CUDA runtime through cuzk's C ABI (`csrc/alloc`), so its
//! pointers and streams go straight to the other crates' kernels.

mod budget;
mod device;
mod sys;

pub use budget::{
    fmt_bytes, parse_bytes, Budget, BudgetConfig, MemSource, Reservation, ReservationUse,
    SimulatedDevice, DEFAULT_MARGIN_BYTES,
};
pub use cuzk_field::{Error, Result};
pub use device::{
    is_page_locked, DeviceBuffer, DeviceMemory, Event, HostRegistration, PinnedBuffer,
    StagedCopies, Staging, Stats, Strategy, StrategyStats, Stream, DEFAULT_STAGING_CHUNK_BYTES,
};
