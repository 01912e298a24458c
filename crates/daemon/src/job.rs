//! Jobs as the engine and the job store see them: ids, priority classes,
//! states, and one job's row.

use crate::pb;

/// Priority classes, served highest first; first in, first out within one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Priority {
    /// Background work.
    Low = 1,
    /// The default.
    Normal = 2,
    /// Ahead of normal work.
    High = 3,
    /// Ahead of everything (a proof with a deadline).
    Critical = 4,
}

impl Priority {
    /// Every class, lowest first.
    pub const ALL: [Priority; 4] = [
        Priority::Low,
        Priority::Normal,
        Priority::High,
        Priority::Critical,
    ];

    /// The class stored in the job store (1..=4).
    pub fn as_i64(self) -> i64 {
        self as i64
    }

    /// The class of a stored value; unknown values read as normal.
    pub fn from_i64(v: i64) -> Self {
        match v {
            1 => Priority::Low,
            3 => Priority::High,
            4 => Priority::Critical,
            _ => Priority::Normal,
        }
    }

    /// The class's name: `low`, `normal`, `high`, `critical`.
    pub fn name(self) -> &'static str {
        match self {
            Priority::Low => "low",
            Priority::Normal => "normal",
            Priority::High => "high",
            Priority::Critical => "critical",
        }
    }
}

impl std::str::FromStr for Priority {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Priority::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| format!("priority `{s}`: give low, normal, high or critical"))
    }
}

impl From<pb::Priority> for Priority {
    fn from(p: pb::Priority) -> Self {
        match p {
            pb::Priority::Low => Priority::Low,
            pb::Priority::High => Priority::High,
            pb::Priority::Critical => Priority::Critical,
            pb::Priority::Normal | pb::Priority::Unspecified => Priority::Normal,
        }
    }
}

impl From<Priority> for pb::Priority {
    fn from(p: Priority) -> Self {
        match p {
            Priority::Low => pb::Priority::Low,
            Priority::Normal => pb::Priority::Normal,
            Priority::High => pb::Priority::High,
            Priority::Critical => pb::Priority::Critical,
        }
    }
}

/// Where a job is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JobState {
    /// Accepted, waiting for a worker.
    Queued,
    /// Held by a worker (under a lease).
    Running,
    /// Proved; the row holds the proof.
    Done,
    /// Failed; the row holds the error.
    Failed,
    /// Cancelled before it was proved.
    Cancelled,
}

impl JobState {
    /// The state's name in the job store.
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Running => "running",
            JobState::Done => "done",
            JobState::Failed => "failed",
            JobState::Cancelled => "cancelled",
        }
    }

    /// The state of a stored name.
    ///
    /// # Errors
    /// [`crate::Error::Internal`] for a name the store should never hold.
    pub fn parse(s: &str) -> crate::Result<Self> {
        Ok(match s {
            "queued" => JobState::Queued,
            "running" => JobState::Running,
            "done" => JobState::Done,
            "failed" => JobState::Failed,
            "cancelled" => JobState::Cancelled,
            other => {
                return Err(crate::Error::Internal(format!(
                    "job state `{other}` in the job store"
                )))
            }
        })
    }

    /// Done, failed or cancelled: the job will not change again.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            JobState::Done | JobState::Failed | JobState::Cancelled
        )
    }
}

impl From<JobState> for pb::JobState {
    fn from(s: JobState) -> Self {
        match s {
            JobState::Queued => pb::JobState::Queued,
            JobState::Running => pb::JobState::Running,
            JobState::Done => pb::JobState::Done,
            JobState::Failed => pb::JobState::Failed,
            JobState::Cancelled => pb::JobState::Cancelled,
        }
    }
}

/// A job to add to the store.
#[derive(Clone, Debug)]
pub struct NewJob {
    /// The job's id (a UUID, chosen by the engine).
    pub id: String,
    /// The circuit to prove.
    pub circuit_id: String,
    /// Its class.
    pub priority: Priority,
    /// The client's idempotency key, if any.
    pub idempotency_key: Option<String>,
    /// The assignment file.
    pub payload_path: String,
    /// Whether the daemon wrote the payload file (and removes it when the
    /// job ends) or the client named it.
    pub payload_owned: bool,
    /// The payload's size, bytes (for backpressure).
    pub payload_bytes: u64,
    /// BLAKE3 of what the client sent, hex (see
    /// [`crate::Payload::digest`]): a repeated idempotency key with another
    /// payload is refused rather than answered with the first job. `None`
    /// without an idempotency key (nothing compares it).
    pub payload_digest: Option<String>,
}

/// One job's row in the store.
#[derive(Clone, Debug)]
pub struct JobRecord {
    /// The job's id.
    pub id: String,
    /// The circuit to prove.
    pub circuit_id: String,
    /// Its class.
    pub priority: Priority,
    /// Where it is.
    pub state: JobState,
    /// The assignment file.
    pub payload_path: String,
    /// Whether the daemon owns the payload file.
    pub payload_owned: bool,
    /// BLAKE3 of what the client sent, hex; `None` for a job without an
    /// idempotency key and for jobs stored before the store kept it.
    pub payload_digest: Option<String>,
    /// Submission time, microseconds since the Unix epoch.
    pub submitted_us: i64,
    /// When a worker last took it, microseconds since the Unix epoch.
    pub started_us: Option<i64>,
    /// When it ended, microseconds since the Unix epoch.
    pub finished_us: Option<i64>,
    /// How many times a worker took it (more than one after a crash).
    pub attempts: i64,
    /// With `Done`: ark-serialize's compressed proof.
    pub proof: Option<Vec<u8>>,
    /// With `Done`: the stage timings as JSON (see [`crate::Timings`]).
    pub timings: Option<String>,
    /// With `Done`: the CUDA ordinal that proved it, -1 for the CPU path.
    pub device: Option<i64>,
    /// The daemon (host) that took it last.
    pub worker: Option<String>,
    /// With `Failed`: why.
    pub error: Option<String>,
    /// A cancellation was asked while it ran.
    pub cancel_requested: bool,
    /// While running: the lease token of the claim that holds it.
    pub lease: Option<String>,
    /// While running: a worker claimed it ahead, to load it while it
    /// proves another job, and has not started proving it (this claim's
    /// attempt is not counted yet).
    pub claimed_ahead: bool,
}
