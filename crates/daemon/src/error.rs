//! The daemon's error type and its mapping onto gRPC status codes.

/// What went wrong in the engine, the job store or a request.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A request named something that does not exist (a circuit, a job).
    #[error("{0}")]
    NotFound(String),
    /// A request was malformed (an assignment of the wrong length, a bad
    /// encoding, a bad setting); the message says what to fix.
    #[error("{0}")]
    InvalidArgument(String),
    /// The queue is past its configured depth (jobs or bytes): retry later
    /// or raise `max_queued_jobs` / `max_queued_bytes`.
    #[error("{0}")]
    ResourceExhausted(String),
    /// The request cannot be served in the daemon's present state (a key
    /// in use, an idempotency key taken by another circuit).
    #[error("{0}")]
    FailedPrecondition(String),
    /// The daemon is shutting down: submit to another one, or retry after
    /// it restarts.
    #[error("{0}")]
    Unavailable(String),
    /// The job store (SQLite or PostgreSQL) failed.
    #[error("job store: {0}")]
    Store(#[from] sqlx::Error),
    /// A file could not be read or written.
    #[error("{what}: {error}")]
    Io {
        /// What the daemon was doing, with the path.
        what: String,
        /// The operating system's error, in the message (not a `source`,
        /// which error reports would print a second time).
        error: std::io::Error,
    },
    /// The prover failed.
    #[error("prover: {0}")]
    Prover(#[from] cuzk_prover::Error),
    /// A broken invariant inside the daemon (a bug: please report it).
    #[error("internal: {0}")]
    Internal(String),
}

impl Error {
    /// An [`Error::Io`] saying what was being done.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            what: what.into(),
            error: source,
        }
    }
}

/// The daemon's result type.
pub type Result<T> = std::result::Result<T, Error>;

impl From<Error> for tonic::Status {
    fn from(e: Error) -> Self {
        let msg = e.to_string();
        match e {
            Error::NotFound(_) => tonic::Status::not_found(msg),
            Error::InvalidArgument(_) => tonic::Status::invalid_argument(msg),
            Error::ResourceExhausted(_) => tonic::Status::resource_exhausted(msg),
            Error::FailedPrecondition(_) => tonic::Status::failed_precondition(msg),
            Error::Unavailable(_) => tonic::Status::unavailable(msg),
            Error::Prover(cuzk_prover::Error::InvalidArgument(_)) => {
                tonic::Status::invalid_argument(msg)
            }
            Error::Store(_) | Error::Io { .. } | Error::Prover(_) => {
                tonic::Status::unavailable(msg)
            }
            Error::Internal(_) => tonic::Status::internal(msg),
        }
    }
}
