//! cuzk-daemon: a persistent Groth16 proving service over cuzk-prover.
//!
//! The engine ([`Engine`]) keeps circuits' keys loaded, takes proof jobs
//! into a durable job store ([`JobStore`]: SQLite by default, PostgreSQL
//! for several daemons on one queue), and proves them on worker threads,
//! `gpu_workers_per_device` a GPU sharing its memory budget, highest
//! priority class first. A thin gRPC layer ([`service`]) exposes it; the
//! contract is `proto/cuzk/v1/prover.proto`. The binaries: `cuzk-daemon`
//! (the service) and `cuzk` (its command-line client, and `keygen` /
//! `witness` for the bundled circuits).
//!
//! ```no_run
//! # async fn demo() -> cuzk_daemon::Result<()> {
//! let config = cuzk_daemon::Config::default(); // localhost, SQLite in ./cuzk-data
//! let engine = cuzk_daemon::Engine::start(config).await?;
//! cuzk_daemon::service::serve(engine, async { let _ = tokio::signal::ctrl_c().await; }).await?;
//! # Ok(()) }
//! ```
//!
//! # Settings
//!
//! [`Config`] (a TOML file and the daemon's flags). With `auth_token_file`
//! every gRPC call needs a bearer token ([`auth`]); a daemon listening on
//! a non-loopback TCP address refuses to start without one (or client
//! certificates, `tls_client_ca_file`) unless `allow_unauthenticated` is
//! set. With `tls_cert_file` and `tls_key_file` the TCP listener serves
//! gRPC over TLS ([`tls`]; mutual TLS with `tls_client_ca_file`). Device
//! memory budgets come from cuzk-alloc's `CUZK_DEVICE_MEMORY_LIMIT` and
//! `CUZK_DEVICE_MEMORY_MARGIN`.

pub mod assignment;
pub mod auth;
pub mod circuits;
mod client_file;
pub mod config;
pub mod engine;
mod error;
pub mod job;
pub mod metrics;
pub mod service;
pub mod store;
pub mod tls;

pub use assignment::Assignment;
pub use auth::AuthToken;
pub use config::Config;
pub use engine::{Engine, Payload, Submit, Timings};
pub use error::{Error, Result};
pub use job::{JobRecord, JobState, Priority};
pub use store::JobStore;

/// The gRPC messages and services generated from
/// `proto/cuzk/v1/prover.proto`.
#[allow(missing_docs, unreachable_pub, clippy::all)]
pub mod pb {
    tonic::include_proto!("cuzk.v1");
}

/// Microseconds since the Unix epoch.
pub(crate) fn now_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}
