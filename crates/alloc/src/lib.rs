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
//! - [`Budget`]: at most `min(total, cap) - margin` bytes, RAII
//!   [`Reservation`]s, waiting or shrinking when workers compete, and
//!   planning answers ([`Budget::fits`], [`Budget::workers_that_fit`],
//!   [`Budget::chunk_elements`]).
//! - RAII memory: [`DeviceBuffer`] (typed, with its stream), [`PinnedBuffer`]
//!   (`cudaHostAlloc`), [`HostRegistration`] (`cudaHostRegister`), [`Stream`],
//!   [`Event`] (timing work on a stream).
//! - Host copies: [`StagedCopies`] / [`Staging`] copy pageable arrays
//!   through pinned chunks and page-locked ones ([`is_page_locked`])
//!   directly.
//!
//! Built on the CUDA runtime through cuzk's C ABI (`csrc/alloc`), so its
//! pointers and streams go straight to the other crates' kernels.
//!
//! # User settings
//!
//! [`BudgetConfig::from_env`] (and so [`DeviceMemory::from_env`]) reads two
//! environment variables; nothing else in this crate reads the environment.
//! Both take a byte count: a number (fractions allowed) with an optional
//! binary unit, `B`, `KiB`, `MiB`, `GiB`, `TiB` (or `K`, `M`, `G`, `T`,
//! `KB`, ...; all powers of 1024), e.g. `16GiB`, `512MiB`, `1.5G`,
//! `1073741824`. A value that does not parse is an
//! [`Error::InvalidArgument`] naming the variable, never ignored.
//!
//! - `CUZK_DEVICE_MEMORY_LIMIT`: a cap on the bytes cuzk uses on each
//!   device, below the card's total (for example to share a card with
//!   another program, or to simulate a smaller card). Default: unset, the
//!   whole card.
//! - `CUZK_DEVICE_MEMORY_MARGIN`: bytes always left free on each device.
//!   Default: [`DEFAULT_MARGIN_BYTES`] (512 MiB).
//!
//! # Features
//!
//! - `cuda`: require CUDA (a missing nvcc is a build error).
//! - `test-utils`: test fixtures, `SimulatedDevice` and
//!   `DeviceMemory::inject_failures`; off by default.

mod budget;
mod buffer;
mod event;
mod host;
mod meminfo;
mod memory;
mod raw;
mod staging;
mod stream;
#[allow(unreachable_pub)] // generated bindings: `pub` items of a private module
mod sys;

#[cfg(any(test, feature = "test-utils"))]
pub use budget::SimulatedDevice;
pub use budget::{
    fmt_bytes, parse_bytes, Budget, BudgetConfig, MemSource, Reservation, ReservationUse,
    DEFAULT_MARGIN_BYTES,
};
pub use buffer::DeviceBuffer;
pub use cuzk_field::{Error, Result};
pub use event::Event;
pub use host::{is_page_locked, HostRegistration, PageLock, PinnedBuffer, PinnedPool};
pub use meminfo::{host_memory_available, host_memory_total};
pub use memory::{DeviceMemory, Stats, Strategy, StrategyStats};
pub use staging::{StagedCopies, Staging, DEFAULT_STAGING_CHUNK_BYTES};
pub use stream::Stream;
