//! The durable job store: one table, `cuzk_jobs`, in SQLite (the embedded
//! default: one file under the data directory) or PostgreSQL (several
//! daemons sharing one queue), through sqlx's `Any` driver so that both
//! run the same statements.
//!
//! A job is in the store before SubmitProof returns. A worker claims the
//! oldest job of the highest class under a lease (`lease_owner`,
//! `lease_until_us`) that it renews while it proves; a job whose lease ran
//! out (its daemon died) is claimed again by whoever asks next. Finishing a
//! job checks the lease: only its current holder can store a result, so a
//! job ends exactly once even when a slow daemon and its successor both
//! proved it. On PostgreSQL the claim takes the row `FOR UPDATE SKIP
//! LOCKED`, so daemons on several hosts never take the same job; SQLite
//! serializes writers by itself. sqlx was chosen over a queue crate because
//! the queue needs priorities, cancellation, leases and idempotency keys
//! in one table that a person can query.

use crate::job::{JobRecord, JobState, NewJob, Priority};
use crate::{Error, Result};
use sqlx::any::{AnyPoolOptions, AnyRow};
use sqlx::{AnyPool, Executor, Row};
use std::time::Duration;

/// Which database holds the jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreKind {
    /// One SQLite file: one daemon.
    Sqlite,
    /// A PostgreSQL server: any number of daemons.
    Postgres,
}

/// The job store (cheap to clone: a connection pool).
#[derive(Clone, Debug)]
pub struct JobStore {
    pool: AnyPool,
    /// Connections of their own for lease renewals and the clock they read
    /// ([`JobStore::renew`], [`JobStore::now_us`]): a renewal never waits
    /// behind claims and submissions for a connection of `pool`, so a busy
    /// store does not let a running job's lease run out.
    leases: AnyPool,
    kind: StoreKind,
    /// The URL without its password, for status and logs.
    shown: String,
}

const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS cuzk_jobs (
        id TEXT PRIMARY KEY,
        idempotency_key TEXT UNIQUE,
        circuit_id TEXT NOT NULL,
        priority BIGINT NOT NULL,
        state TEXT NOT NULL,
        payload_path TEXT NOT NULL,
        payload_owned BIGINT NOT NULL,
        payload_bytes BIGINT NOT NULL,
        payload_digest TEXT,
        submitted_us BIGINT NOT NULL,
        started_us BIGINT,
        finished_us BIGINT,
        lease_owner TEXT,
        lease_until_us BIGINT,
        attempts BIGINT NOT NULL DEFAULT 0,
        cancel_requested BIGINT NOT NULL DEFAULT 0,
        claimed_ahead BIGINT NOT NULL DEFAULT 0,
        proof TEXT,
        timings TEXT,
        device BIGINT,
        worker TEXT,
        error TEXT
    )",
    "CREATE INDEX IF NOT EXISTS cuzk_jobs_queue ON cuzk_jobs (state, priority, submitted_us)",
    // ListJobs: newest first, this index read backwards (the queue's index
    // leads with the state and the class, which do not give that order).
    "CREATE INDEX IF NOT EXISTS cuzk_jobs_submitted ON cuzk_jobs (submitted_us, id)",
];

/// Columns added to the table after its first release, with the statement
/// that adds each to a store made before it (earlier rows take the
/// default): `payload_digest` (idempotency keys compare payloads) and
/// `claimed_ahead` (a claim that has not started proving, whose attempt
/// is not counted).
const ADDED_COLUMNS: &[(&str, &str)] = &[
    (
        "payload_digest",
        "ALTER TABLE cuzk_jobs ADD COLUMN payload_digest TEXT",
    ),
    (
        "claimed_ahead",
        "ALTER TABLE cuzk_jobs ADD COLUMN claimed_ahead BIGINT NOT NULL DEFAULT 0",
    ),
];

const COLUMNS: &str = "id, circuit_id, priority, state, payload_path, payload_owned, \
     payload_digest, submitted_us, started_us, finished_us, attempts, proof, timings, device, \
     worker, error, cancel_requested, lease_owner, claimed_ahead";

/// A position in [`JobStore::list`]'s order (newest submission first,
/// then job id descending): the last job of a page, from which the next
/// page starts. Carried between calls as an opaque token
/// ([`JobCursor::to_token`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobCursor {
    /// The job's submission time, microseconds since the Unix epoch.
    pub submitted_us: i64,
    /// The job's id.
    pub id: String,
}

impl JobCursor {
    /// The position of job `j`.
    pub fn of(j: &JobRecord) -> Self {
        JobCursor {
            submitted_us: j.submitted_us,
            id: j.id.clone(),
        }
    }

    /// The cursor as a page token: `SUBMITTED_US:ID` in hex, so that
    /// clients pass it back unchanged rather than build one.
    pub fn to_token(&self) -> String {
        hex::encode(format!("{}:{}", self.submitted_us, self.id))
    }

    /// The cursor of a token made by [`JobCursor::to_token`].
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for any other string.
    pub fn from_token(token: &str) -> Result<Self> {
        let bad = || {
            Error::InvalidArgument(format!(
                "page_token `{token}` is not a next_page_token of ListJobs: pass that token \
                 unchanged, or none for the first page"
            ))
        };
        let text = hex::decode(token)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(bad)?;
        let (us, id) = text.split_once(':').ok_or_else(bad)?;
        let submitted_us = us.parse::<i64>().map_err(|_| bad())?;
        if id.is_empty() {
            return Err(bad());
        }
        Ok(JobCursor {
            submitted_us,
            id: id.to_string(),
        })
    }
}

/// Which jobs [`JobStore::list`] returns: those matching every field set.
#[derive(Clone, Debug, Default)]
pub struct JobFilter {
    /// Only jobs in one of these states; empty: every state.
    pub states: Vec<JobState>,
    /// Only jobs of this circuit; `None`: every circuit.
    pub circuit_id: Option<String>,
    /// Only jobs after this position in the order (the previous page's
    /// last job); `None`: from the newest.
    pub after: Option<JobCursor>,
}

impl JobStore {
    /// Opens (and creates, for SQLite) the store at `url`
    /// (`sqlite:///path/jobs.db` or `postgres://user:pass@host/db`) and
    /// creates the table if it is missing.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a URL of another database;
    /// [`Error::Unavailable`] naming the store (password hidden) and the
    /// cause when its first connection fails; [`Error::Store`] when a
    /// later statement fails.
    pub async fn open(url: &str) -> Result<Self> {
        sqlx::any::install_default_drivers();
        let kind = if url.starts_with("sqlite:") {
            StoreKind::Sqlite
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            StoreKind::Postgres
        } else {
            return Err(Error::InvalidArgument(format!(
                "database URL `{}`: give sqlite://PATH or postgres://USER@HOST/DB",
                redact(url)
            )));
        };
        let url = match kind {
            StoreKind::Sqlite if !url.contains('?') => format!("{url}?mode=rwc"),
            _ => url.to_string(),
        };
        let options = |connections: u32| {
            let mut opts = AnyPoolOptions::new()
                .max_connections(connections)
                .acquire_timeout(Duration::from_secs(30));
            if kind == StoreKind::Sqlite {
                // WAL: readers never wait for the writer; synchronous FULL:
                // a committed job survives a power loss; busy_timeout:
                // writers queue rather than fail.
                opts = opts.after_connect(|conn, _| {
                    Box::pin(async move {
                        conn.execute("PRAGMA journal_mode = WAL").await?;
                        conn.execute("PRAGMA synchronous = FULL").await?;
                        conn.execute("PRAGMA busy_timeout = 10000").await?;
                        Ok(())
                    })
                });
            }
            opts
        };
        // One connection first: a pool retries a failing connection until
        // its acquire timeout and then reports the timeout, not the cause
        // (a refused connection, a file that is not a database).
        {
            use sqlx::Connection;
            let cause = |e: sqlx::Error| {
                Error::Unavailable(format!(
                    "job store {}: {e}; check the URL, that the server runs, or that the file \
                     is a SQLite database of cuzk-daemon",
                    redact(&url)
                ))
            };
            let mut c = sqlx::AnyConnection::connect(&url).await.map_err(cause)?;
            if kind == StoreKind::Sqlite {
                c.execute("PRAGMA journal_mode = WAL")
                    .await
                    .map_err(cause)?;
            }
            let _ = c.close().await;
        }
        let pool = options(if kind == StoreKind::Sqlite { 4 } else { 8 })
            .connect(&url)
            .await?;
        let mut conn = pool.acquire().await?;
        if kind == StoreKind::Postgres {
            // Daemons starting together would race on CREATE TABLE IF NOT
            // EXISTS (PostgreSQL's catalog is not guarded against it).
            sqlx::query("SELECT pg_advisory_lock(2782631)")
                .execute(&mut *conn)
                .await?;
        }
        let mut created = Ok(());
        for s in SCHEMA {
            if let Err(e) = sqlx::query(s).execute(&mut *conn).await {
                created = Err(e);
                break;
            }
        }
        // A store made before a column was added gets it.
        for (column, add) in ADDED_COLUMNS {
            if created.is_ok()
                && sqlx::query(&format!("SELECT {column} FROM cuzk_jobs LIMIT 0"))
                    .execute(&mut *conn)
                    .await
                    .is_err()
            {
                created = sqlx::query(add).execute(&mut *conn).await.map(|_| ());
            }
        }
        if kind == StoreKind::Postgres {
            sqlx::query("SELECT pg_advisory_unlock(2782631)")
                .execute(&mut *conn)
                .await?;
        }
        created?;
        drop(conn);
        // Opened after the table exists (a SQLite file is created above).
        let leases = options(2).connect(&url).await?;
        Ok(JobStore {
            pool,
            leases,
            kind,
            shown: redact(&url),
        })
    }

    /// The database kind.
    pub fn kind(&self) -> StoreKind {
        self.kind
    }

    /// The store's URL without its password.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// Adds a queued job. With an idempotency key already in the store,
    /// adds nothing and returns the earlier job's id with `true`.
    ///
    /// # Errors
    /// [`Error::Store`].
    pub async fn insert(&self, job: &NewJob, now_us: i64) -> Result<(String, bool)> {
        let r = sqlx::query(
            "INSERT INTO cuzk_jobs (id, idempotency_key, circuit_id, priority, state, \
             payload_path, payload_owned, payload_bytes, payload_digest, submitted_us) \
             VALUES ($1, $2, $3, $4, 'queued', $5, $6, $7, $8, $9) \
             ON CONFLICT (idempotency_key) DO NOTHING",
        )
        .bind(&job.id)
        .bind(job.idempotency_key.clone())
        .bind(&job.circuit_id)
        .bind(job.priority.as_i64())
        .bind(&job.payload_path)
        .bind(i64::from(job.payload_owned))
        .bind(job.payload_bytes as i64)
        .bind(job.payload_digest.clone())
        .bind(now_us)
        .execute(&self.pool)
        .await?;
        if r.rows_affected() == 1 {
            return Ok((job.id.clone(), false));
        }
        let key = job.idempotency_key.clone().unwrap_or_default();
        let row = sqlx::query("SELECT id FROM cuzk_jobs WHERE idempotency_key = $1")
            .bind(key)
            .fetch_one(&self.pool)
            .await?;
        Ok((row.try_get::<String, _>("id")?, true))
    }

    /// Jobs queued or running, and their payloads' bytes.
    ///
    /// # Errors
    /// [`Error::Store`].
    pub async fn depth(&self) -> Result<(u64, u64)> {
        let row = sqlx::query(
            "SELECT COUNT(*) AS n, CAST(COALESCE(SUM(payload_bytes), 0) AS BIGINT) AS bytes \
             FROM cuzk_jobs WHERE state IN ('queued', 'running')",
        )
        .fetch_one(&self.pool)
        .await?;
        Ok((
            row.try_get::<i64, _>("n")? as u64,
            row.try_get::<i64, _>("bytes")? as u64,
        ))
    }

    /// Takes the next job for worker `worker`: [`JobStore::sweep`], then
    /// [`JobStore::take`] of a claim that proves at once (its attempt
    /// counted).
    ///
    /// # Errors
    /// [`Error::Store`].
    pub async fn claim(
        &self,
        worker: &str,
        now_us: i64,
        lease_us: i64,
        max_attempts: i64,
    ) -> Result<Option<JobRecord>> {
        self.sweep(now_us, max_attempts).await?;
        self.take(worker, now_us, lease_us, false).await
    }

    /// Ends the jobs that can no longer be claimed, and returns them as
    /// they ended: running jobs whose lease ran out (their daemon died)
    /// with a cancellation asked become cancelled, and jobs taken
    /// `max_attempts` times already become failed, queued or with their
    /// lease run out. `now_us` is the database's clock
    /// ([`JobStore::now_us`]).
    ///
    /// # Errors
    /// [`Error::Store`].
    pub async fn sweep(&self, now_us: i64, max_attempts: i64) -> Result<Vec<JobRecord>> {
        let cancelled = sqlx::query(&format!(
            "UPDATE cuzk_jobs SET state = 'cancelled', finished_us = $1, lease_owner = NULL \
             WHERE state = 'running' AND lease_until_us < $1 AND cancel_requested = 1 \
             RETURNING {COLUMNS}"
        ))
        .bind(now_us)
        .fetch_all(&self.pool)
        .await?;
        let failed = sqlx::query(&format!(
            "UPDATE cuzk_jobs SET state = 'failed', finished_us = $1, lease_owner = NULL, \
             error = 'gave up after ' || CAST(attempts AS TEXT) || ' attempts, the last: ' || \
             COALESCE(error, 'its worker died or lost the lease') \
             WHERE attempts >= $2 AND (state = 'queued' OR \
             (state = 'running' AND lease_until_us < $1)) \
             RETURNING {COLUMNS}"
        ))
        .bind(now_us)
        .bind(max_attempts)
        .fetch_all(&self.pool)
        .await?;
        cancelled.iter().chain(&failed).map(record).collect()
    }

    /// Takes the next job for worker `worker`: the highest class first,
    /// the oldest first within it, among queued jobs and running jobs
    /// whose lease ran out. Holds it until `now_us + lease_us` unless
    /// renewed, under a lease token of this claim alone (the record's
    /// `lease`), which [`JobStore::renew`], [`JobStore::complete`],
    /// [`JobStore::fail`] and [`JobStore::release`] take. The start time is
    /// `now_us`, or the submission's when later (SQLite's clock counts
    /// milliseconds, the submission microseconds). A claim that proves at
    /// once counts an attempt; one `ahead` (a worker loads the job while it
    /// proves another) does not until [`JobStore::begin`], so that a job
    /// whose claim never started proving (the daemon stopped or died first)
    /// keeps its attempts. Call [`JobStore::sweep`] first: a job taken
    /// `max_attempts` times must not be taken again.
    ///
    /// # Errors
    /// [`Error::Store`].
    pub async fn take(
        &self,
        worker: &str,
        now_us: i64,
        lease_us: i64,
        ahead: bool,
    ) -> Result<Option<JobRecord>> {
        let lock = match self.kind {
            StoreKind::Postgres => " FOR UPDATE SKIP LOCKED",
            StoreKind::Sqlite => "",
        };
        let sql = format!(
            "UPDATE cuzk_jobs SET state = 'running', lease_owner = $1, worker = $2, \
             lease_until_us = $3, \
             started_us = CASE WHEN submitted_us > $4 THEN submitted_us ELSE $4 END, \
             attempts = attempts + $5, claimed_ahead = $6 \
             WHERE id = (SELECT id FROM cuzk_jobs \
               WHERE state = 'queued' OR (state = 'running' AND lease_until_us < $4) \
               ORDER BY priority DESC, submitted_us, id LIMIT 1{lock}) \
             RETURNING {COLUMNS}"
        );
        let token = format!("{worker}/{}", uuid::Uuid::new_v4().simple());
        let row = sqlx::query(&sql)
            .bind(&token)
            .bind(worker)
            .bind(now_us.saturating_add(lease_us))
            .bind(now_us)
            .bind(i64::from(!ahead))
            .bind(i64::from(ahead))
            .fetch_optional(&self.pool)
            .await?;
        row.map(|r| record(&r)).transpose()
    }

    /// Starts proving job `id`, claimed ahead under lease token `lease`
    /// ([`JobStore::take`] with `ahead`): counts its attempt. Returns the
    /// job as it is now; `None` when it is no longer held by `lease` (its
    /// lease ran out and another claim took it).
    ///
    /// # Errors
    /// [`Error::Store`].
    pub async fn begin(&self, id: &str, lease: &str) -> Result<Option<JobRecord>> {
        let row = sqlx::query(&format!(
            "UPDATE cuzk_jobs SET attempts = attempts + claimed_ahead, claimed_ahead = 0 \
             WHERE id = $1 AND lease_owner = $2 AND state = 'running' \
             RETURNING {COLUMNS}"
        ))
        .bind(id)
        .bind(lease)
        .fetch_optional(&self.pool)
        .await?;
        row.map(|r| record(&r)).transpose()
    }

    /// Gives job `id` back to the queue (its lease token `lease` still
    /// holding it), noting `error`: for failures of the daemon rather than
    /// the job (a GPU fault, a key this host lacks). A job whose
    /// cancellation was asked ends cancelled instead, finished at `now_us`
    /// (microseconds since the Unix epoch). Returns the job as the call
    /// left it (queued or cancelled), read in the same statement, so that
    /// a cancellation racing it is seen once; `None` when the job is no
    /// longer held by `lease`.
    ///
    /// # Errors
    /// [`Error::Store`].
    pub async fn release(
        &self,
        id: &str,
        lease: &str,
        error: &str,
        now_us: i64,
    ) -> Result<Option<JobRecord>> {
        let row = sqlx::query(&format!(
            "UPDATE cuzk_jobs SET state = CASE WHEN cancel_requested = 1 THEN 'cancelled' \
             ELSE 'queued' END, error = $1, lease_owner = NULL, lease_until_us = NULL, \
             finished_us = CASE WHEN cancel_requested = 1 THEN $4 ELSE finished_us END \
             WHERE id = $2 AND lease_owner = $3 AND state = 'running' \
             RETURNING {COLUMNS}"
        ))
        .bind(error)
        .bind(id)
        .bind(lease)
        .bind(now_us)
        .fetch_optional(&self.pool)
        .await?;
        row.map(|r| record(&r)).transpose()
    }

    /// Gives job `id`, claimed by lease token `lease` and never started
    /// (a job a worker claimed ahead when the daemon stopped), back to the
    /// queue as it was: its attempt not counted (a claim ahead counted
    /// none; another's is taken back), no start time. A job whose
    /// cancellation was asked ends cancelled instead, finished at `now_us`
    /// (microseconds since the Unix epoch). Returns the job as the call
    /// left it, as [`JobStore::release`] does; `None` when the job is no
    /// longer held by `lease`.
    ///
    /// # Errors
    /// [`Error::Store`].
    pub async fn unclaim(&self, id: &str, lease: &str, now_us: i64) -> Result<Option<JobRecord>> {
        let row = sqlx::query(&format!(
            "UPDATE cuzk_jobs SET state = CASE WHEN cancel_requested = 1 THEN 'cancelled' \
             ELSE 'queued' END, lease_owner = NULL, lease_until_us = NULL, started_us = NULL, \
             attempts = CASE WHEN claimed_ahead = 1 OR attempts = 0 THEN attempts \
             ELSE attempts - 1 END, claimed_ahead = 0, \
             finished_us = CASE WHEN cancel_requested = 1 THEN $3 ELSE finished_us END \
             WHERE id = $1 AND lease_owner = $2 AND state = 'running' \
             RETURNING {COLUMNS}"
        ))
        .bind(id)
        .bind(lease)
        .bind(now_us)
        .fetch_optional(&self.pool)
        .await?;
        row.map(|r| record(&r)).transpose()
    }

    /// The job submitted with idempotency key `key`, if any.
    ///
    /// # Errors
    /// [`Error::Store`].
    pub async fn by_key(&self, key: &str) -> Result<Option<JobRecord>> {
        let row = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM cuzk_jobs WHERE idempotency_key = $1"
        ))
        .bind(key)
        .fetch_optional(&self.pool)
        .await?;
        row.map(|r| record(&r)).transpose()
    }

    /// The database's clock: microseconds since the Unix epoch. Leases are
    /// measured by it (the daemons pass it to [`JobStore::claim`] and
    /// [`JobStore::renew`]), so that daemons on several hosts agree on when
    /// a lease ran out whatever their own clocks say.
    ///
    /// # Errors
    /// [`Error::Store`].
    pub async fn now_us(&self) -> Result<i64> {
        let sql = match self.kind {
            StoreKind::Postgres => {
                "SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000 AS BIGINT) AS t"
            }
            StoreKind::Sqlite => "SELECT CAST(unixepoch('subsec') * 1000000 AS INTEGER) AS t",
        };
        let row = sqlx::query(sql).fetch_one(&self.leases).await?;
        Ok(row.try_get::<i64, _>("t")?)
    }

    /// Extends the lease `owner` (a claim's token) on job `id` to
    /// `until_us`; false when the job is no longer held by it (its lease ran
    /// out and another claim took it, or it ended).
    ///
    /// # Errors
    /// [`Error::Store`].
    pub async fn renew(&self, id: &str, owner: &str, until_us: i64) -> Result<bool> {
        let r = sqlx::query(
            "UPDATE cuzk_jobs SET lease_until_us = $1 \
             WHERE id = $2 AND lease_owner = $3 AND state = 'running'",
        )
        .bind(until_us)
        .bind(id)
        .bind(owner)
        .execute(&self.leases)
        .await?;
        Ok(r.rows_affected() == 1)
    }

    /// Stores the proof of job `id` made under lease `owner` (a claim's
    /// token): done, or cancelled (the proof dropped) when a cancellation
    /// was asked meanwhile. Returns the job as the call left it, as
    /// [`JobStore::release`] does; `None` when the job is no longer held
    /// by `owner`, and then nothing changes.
    ///
    /// # Errors
    /// [`Error::Store`].
    pub async fn complete(
        &self,
        id: &str,
        owner: &str,
        proof: &[u8],
        timings_json: &str,
        device: i64,
        now_us: i64,
    ) -> Result<Option<JobRecord>> {
        let row = sqlx::query(&format!(
            "UPDATE cuzk_jobs SET \
             state = CASE WHEN cancel_requested = 1 THEN 'cancelled' ELSE 'done' END, \
             proof = CASE WHEN cancel_requested = 1 THEN NULL ELSE $1 END, \
             timings = $2, device = $3, finished_us = $4, lease_owner = NULL \
             WHERE id = $5 AND lease_owner = $6 AND state = 'running' \
             RETURNING {COLUMNS}"
        ))
        .bind(hex::encode(proof))
        .bind(timings_json)
        .bind(device)
        .bind(now_us)
        .bind(id)
        .bind(owner)
        .fetch_optional(&self.pool)
        .await?;
        row.map(|r| record(&r)).transpose()
    }

    /// Marks job `id`, held under lease `owner` (a claim's token), failed
    /// with `error`. Returns the job as the call left it, as
    /// [`JobStore::release`] does; `None` when the job is no longer held by
    /// `owner`.
    ///
    /// # Errors
    /// [`Error::Store`].
    pub async fn fail(
        &self,
        id: &str,
        owner: &str,
        error: &str,
        now_us: i64,
    ) -> Result<Option<JobRecord>> {
        let row = sqlx::query(&format!(
            "UPDATE cuzk_jobs SET state = 'failed', error = $1, finished_us = $2, \
             lease_owner = NULL WHERE id = $3 AND lease_owner = $4 AND state = 'running' \
             RETURNING {COLUMNS}"
        ))
        .bind(error)
        .bind(now_us)
        .bind(id)
        .bind(owner)
        .fetch_optional(&self.pool)
        .await?;
        row.map(|r| record(&r)).transpose()
    }

    /// Cancels job `id`: a queued job at once, a running one when its proof
    /// completes or it goes back to the queue. One statement does both, so
    /// that a job moving between queued and running meanwhile is not
    /// missed. Returns the job after the call and whether it was cancelled
    /// by this call (its payload can go).
    ///
    /// # Errors
    /// [`Error::NotFound`] for an unknown id; [`Error::Store`].
    pub async fn cancel(&self, id: &str, now_us: i64) -> Result<(JobRecord, bool)> {
        let row = sqlx::query(&format!(
            "UPDATE cuzk_jobs SET \
             finished_us = CASE WHEN state = 'queued' THEN $1 ELSE finished_us END, \
             cancel_requested = CASE WHEN state = 'running' THEN 1 ELSE cancel_requested END, \
             state = CASE WHEN state = 'queued' THEN 'cancelled' ELSE state END \
             WHERE id = $2 AND state IN ('queued', 'running') \
             RETURNING {COLUMNS}"
        ))
        .bind(now_us)
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        if let Some(j) = row.map(|r| record(&r)).transpose()? {
            let now = j.state == JobState::Cancelled;
            return Ok((j, now));
        }
        match self.get(id).await? {
            Some(j) => Ok((j, false)),
            None => Err(Error::NotFound(format!("no job {id}"))),
        }
    }

    /// Job `id`, if the store has it.
    ///
    /// # Errors
    /// [`Error::Store`].
    pub async fn get(&self, id: &str) -> Result<Option<JobRecord>> {
        let row = sqlx::query(&format!("SELECT {COLUMNS} FROM cuzk_jobs WHERE id = $1"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        row.map(|r| record(&r)).transpose()
    }

    /// Up to `limit` jobs matching `filter`, newest submission first (ties
    /// by id, descending), without their proofs (`proof` is `None`, whatever
    /// the state: a page of proofs is large and listing does not need
    /// them). Without a state filter the order is the `cuzk_jobs_submitted`
    /// index read backwards from the cursor, so a page costs about `limit`
    /// rows however many jobs the store holds (a circuit filter skips the
    /// rows of other circuits on the way). With one, the databases may take
    /// the queue's index (state first) and sort the rows of those states:
    /// cheap for queued and running jobs, in proportion to the finished
    /// jobs retained (`retain_finished_secs`) for done, failed and
    /// cancelled.
    ///
    /// # Errors
    /// [`Error::Store`].
    pub async fn list(&self, filter: &JobFilter, limit: u32) -> Result<Vec<JobRecord>> {
        let sql = list_sql(filter);
        // Bound in the order list_sql numbers the placeholders.
        let mut q = sqlx::query(&sql);
        for s in &filter.states {
            q = q.bind(s.as_str());
        }
        if let Some(c) = &filter.circuit_id {
            q = q.bind(c.as_str());
        }
        if let Some(a) = &filter.after {
            q = q.bind(a.submitted_us).bind(a.id.as_str());
        }
        let rows = q.bind(i64::from(limit)).fetch_all(&self.pool).await?;
        rows.iter().map(record).collect()
    }

    /// Puts every running job back in the queue: for a single daemon on
    /// SQLite at start, whose previous run died holding them. Those whose
    /// cancellation was asked end cancelled instead, finished at `now_us`
    /// (microseconds since the Unix epoch). A job claimed ahead that never
    /// started proving keeps its attempts (its claim counted none). Returns
    /// the jobs as they are now (queued or cancelled).
    ///
    /// # Errors
    /// [`Error::Store`].
    pub async fn requeue_running(&self, now_us: i64) -> Result<Vec<JobRecord>> {
        let rows = sqlx::query(&format!(
            "UPDATE cuzk_jobs SET state = CASE WHEN cancel_requested = 1 THEN 'cancelled' \
             ELSE 'queued' END, lease_owner = NULL, lease_until_us = NULL, claimed_ahead = 0, \
             finished_us = CASE WHEN cancel_requested = 1 THEN $1 ELSE finished_us END \
             WHERE state = 'running' \
             RETURNING {COLUMNS}"
        ))
        .bind(now_us)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(record).collect()
    }

    /// Whether the store answers a trivial query: the health check's.
    ///
    /// # Errors
    /// [`Error::Store`] with the driver's reason.
    pub async fn ping(&self) -> Result<()> {
        // On the leases' pool: a busy main pool must not fail the check.
        sqlx::query("SELECT 1").execute(&self.leases).await?;
        Ok(())
    }

    /// Deletes the jobs that ended before `before_us` (done, failed or
    /// cancelled); returns how many.
    ///
    /// # Errors
    /// [`Error::Store`].
    pub async fn prune(&self, before_us: i64) -> Result<u64> {
        let r = sqlx::query(
            "DELETE FROM cuzk_jobs WHERE state IN ('done', 'failed', 'cancelled') \
             AND finished_us < $1",
        )
        .bind(before_us)
        .execute(&self.pool)
        .await?;
        Ok(r.rows_affected())
    }

    /// The payload files the daemon owns of jobs queued or running.
    ///
    /// # Errors
    /// [`Error::Store`].
    pub async fn live_payloads(&self) -> Result<Vec<String>> {
        let rows = sqlx::query(
            "SELECT payload_path FROM cuzk_jobs \
             WHERE state IN ('queued', 'running') AND payload_owned = 1",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| Ok(r.try_get::<String, _>("payload_path")?))
            .collect()
    }

    /// How many jobs each (class, state, claimed ahead) has: claimed
    /// ahead is true for running jobs claimed ahead and not started
    /// ([`JobStore::take`] with `ahead`), false for every other job.
    ///
    /// # Errors
    /// [`Error::Store`].
    pub async fn counts(&self) -> Result<Vec<(Priority, JobState, bool, u64)>> {
        let rows = sqlx::query(
            "SELECT priority, state, claimed_ahead, COUNT(*) AS n FROM cuzk_jobs \
             GROUP BY priority, state, claimed_ahead",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                let state = JobState::parse(&r.try_get::<String, _>("state")?)?;
                Ok((
                    Priority::from_i64(r.try_get("priority")?),
                    state,
                    state == JobState::Running && r.try_get::<i64, _>("claimed_ahead")? != 0,
                    r.try_get::<i64, _>("n")? as u64,
                ))
            })
            .collect()
    }

    /// Closes the pools (waits for their connections to finish).
    pub async fn close(&self) {
        self.pool.close().await;
        self.leases.close().await;
    }
}

/// [`JobStore::list`]'s statement for `filter`. Its placeholders, numbered
/// in this order: each of `filter.states`, the circuit id (if set), the
/// cursor's submission time and id (if set), and the limit.
fn list_sql(filter: &JobFilter) -> String {
    let mut clauses = Vec::new();
    let mut n = 0;
    let mut next = || {
        n += 1;
        format!("${n}")
    };
    if !filter.states.is_empty() {
        let marks: Vec<String> = filter.states.iter().map(|_| next()).collect();
        clauses.push(format!("state IN ({})", marks.join(", ")));
    }
    if filter.circuit_id.is_some() {
        clauses.push(format!("circuit_id = {}", next()));
    }
    if filter.after.is_some() {
        // A row value: both databases compare it as a pair, and range over
        // the index with it.
        clauses.push(format!("(submitted_us, id) < ({}, {})", next(), next()));
    }
    let limit = next();
    let filter_sql = if clauses.is_empty() {
        String::new()
    } else {
        format!("WHERE {} ", clauses.join(" AND "))
    };
    // The proof is left out: NULL, typed for PostgreSQL.
    let columns = COLUMNS.replacen(" proof,", " CAST(NULL AS TEXT) AS proof,", 1);
    format!(
        "SELECT {columns} FROM cuzk_jobs {filter_sql}\
         ORDER BY submitted_us DESC, id DESC LIMIT {limit}"
    )
}

fn record(r: &AnyRow) -> Result<JobRecord> {
    let proof: Option<String> = r.try_get("proof")?;
    let proof = proof
        .map(hex::decode)
        .transpose()
        .map_err(|e| Error::Internal(format!("a stored proof is not hex: {e}")))?;
    Ok(JobRecord {
        id: r.try_get("id")?,
        circuit_id: r.try_get("circuit_id")?,
        priority: Priority::from_i64(r.try_get("priority")?),
        state: JobState::parse(&r.try_get::<String, _>("state")?)?,
        payload_path: r.try_get("payload_path")?,
        payload_owned: r.try_get::<i64, _>("payload_owned")? != 0,
        payload_digest: r.try_get("payload_digest")?,
        submitted_us: r.try_get("submitted_us")?,
        started_us: r.try_get("started_us")?,
        finished_us: r.try_get("finished_us")?,
        attempts: r.try_get("attempts")?,
        proof,
        timings: r.try_get("timings")?,
        device: r.try_get("device")?,
        worker: r.try_get("worker")?,
        error: r.try_get("error")?,
        cancel_requested: r.try_get::<i64, _>("cancel_requested")? != 0,
        lease: r.try_get("lease_owner")?,
        claimed_ahead: r.try_get::<i64, _>("claimed_ahead")? != 0,
    })
}

/// `url` with the password (between `:` and `@` after the scheme) hidden.
fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    match rest.split_once('@') {
        Some((auth, host)) => match auth.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(id: &str, p: Priority, key: Option<&str>) -> NewJob {
        NewJob {
            id: id.into(),
            circuit_id: "c".into(),
            priority: p,
            idempotency_key: key.map(String::from),
            payload_path: format!("/tmp/{id}"),
            payload_owned: true,
            payload_bytes: 100,
            payload_digest: None,
        }
    }

    async fn store() -> (JobStore, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("jobs.db").display());
        (JobStore::open(&url).await.unwrap(), dir)
    }

    #[tokio::test]
    async fn claims_by_class_then_age() {
        let (s, _d) = store().await;
        s.insert(&job("a", Priority::Low, None), 1).await.unwrap();
        s.insert(&job("b", Priority::Normal, None), 2)
            .await
            .unwrap();
        s.insert(&job("c", Priority::Critical, None), 3)
            .await
            .unwrap();
        s.insert(&job("d", Priority::Normal, None), 4)
            .await
            .unwrap();
        let order: Vec<String> = {
            let mut v = Vec::new();
            while let Some(j) = s.claim("w", 10, 1_000_000, 5).await.unwrap() {
                assert_eq!(j.state, JobState::Running);
                assert!(j.lease.as_deref().unwrap().starts_with("w/"));
                v.push(j.id);
            }
            v
        };
        assert_eq!(order, ["c", "b", "d", "a"]);
        assert_eq!(s.depth().await.unwrap(), (4, 400));
    }

    /// A store made before `payload_digest` and `claimed_ahead` gets both
    /// columns, its rows read with their defaults, and claims ahead work
    /// on it.
    #[tokio::test]
    async fn a_store_without_the_added_columns_gets_them() {
        use sqlx::Connection;
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("jobs.db").display());
        sqlx::any::install_default_drivers();
        let mut c = sqlx::AnyConnection::connect(&format!("{url}?mode=rwc"))
            .await
            .unwrap();
        let old = SCHEMA[0]
            .replace("payload_digest TEXT,", "")
            .replace("claimed_ahead BIGINT NOT NULL DEFAULT 0,", "");
        assert_eq!(
            old.len() + "payload_digest TEXT,claimed_ahead BIGINT NOT NULL DEFAULT 0,".len(),
            SCHEMA[0].len()
        );
        sqlx::query(&old).execute(&mut c).await.unwrap();
        sqlx::query(
            "INSERT INTO cuzk_jobs (id, idempotency_key, circuit_id, priority, state, \
             payload_path, payload_owned, payload_bytes, submitted_us) \
             VALUES ('old', 'k', 'c', 2, 'queued', '/p', 1, 10, 1)",
        )
        .execute(&mut c)
        .await
        .unwrap();
        c.close().await.unwrap();
        let s = JobStore::open(&url).await.unwrap();
        let old = s.by_key("k").await.unwrap().unwrap();
        assert_eq!((old.payload_digest, old.claimed_ahead), (None, false));
        let j = s.take("w", 5, 100, true).await.unwrap().unwrap();
        assert_eq!(
            (j.id.as_str(), j.attempts, j.claimed_ahead),
            ("old", 0, true)
        );
        let mut j = job("new", Priority::Normal, Some("k2"));
        j.payload_digest = Some("ab12".into());
        s.insert(&j, 2).await.unwrap();
        assert_eq!(
            s.get("new")
                .await
                .unwrap()
                .unwrap()
                .payload_digest
                .as_deref(),
            Some("ab12")
        );
        drop(s);
        // Opening it again finds the column there.
        JobStore::open(&url).await.unwrap();
    }

    #[tokio::test]
    async fn idempotency_key_returns_the_first_job() {
        let (s, _d) = store().await;
        assert_eq!(
            s.insert(&job("a", Priority::Normal, Some("k")), 1)
                .await
                .unwrap(),
            ("a".to_string(), false)
        );
        assert_eq!(
            s.insert(&job("b", Priority::High, Some("k")), 2)
                .await
                .unwrap(),
            ("a".to_string(), true)
        );
        assert!(s.get("b").await.unwrap().is_none());
        assert_eq!(s.by_key("k").await.unwrap().unwrap().id, "a");
        assert!(s.by_key("other").await.unwrap().is_none());
        // No key: never deduplicated.
        s.insert(&job("c", Priority::Normal, None), 3)
            .await
            .unwrap();
        s.insert(&job("d", Priority::Normal, None), 4)
            .await
            .unwrap();
        assert_eq!(s.depth().await.unwrap().0, 3);
    }

    /// The database's clock is the host's here (one machine), to within a
    /// few seconds, and runs forward.
    #[tokio::test]
    async fn database_clock() {
        let (s, _d) = store().await;
        let a = s.now_us().await.unwrap();
        let host = crate::now_us();
        assert!((a - host).abs() < 5_000_000, "{a} vs {host}");
        tokio::time::sleep(Duration::from_millis(20)).await;
        let b = s.now_us().await.unwrap();
        assert!(b > a, "{a} then {b}");
    }

    #[tokio::test]
    async fn leases_decide_who_finishes() {
        let (s, _d) = store().await;
        s.insert(&job("a", Priority::Normal, None), 1)
            .await
            .unwrap();
        let j1 = s.claim("w", 10, 100, 5).await.unwrap().unwrap();
        let l1 = j1.lease.unwrap();
        assert_eq!(j1.attempts, 1);
        // Within the lease nobody else gets it; after, a new claim does,
        // even by the same worker name: its token differs.
        assert!(s.claim("w", 50, 100, 5).await.unwrap().is_none());
        assert!(s.renew("a", &l1, 150).await.unwrap());
        assert!(s.claim("w", 149, 100, 5).await.unwrap().is_none());
        let j2 = s.claim("w", 151, 100, 5).await.unwrap().unwrap();
        let l2 = j2.lease.unwrap();
        assert_eq!(j2.attempts, 2);
        assert_ne!(l1, l2);
        // The first claim lost it: its result is refused, the second's is
        // kept, once.
        assert!(s
            .complete("a", &l1, &[1], "{}", 0, 160)
            .await
            .unwrap()
            .is_none());
        assert!(!s.renew("a", &l1, 300).await.unwrap());
        assert!(s.fail("a", &l1, "late", 165).await.unwrap().is_none());
        assert!(s
            .complete("a", &l2, &[2, 3], "{}", -1, 170)
            .await
            .unwrap()
            .is_some());
        assert!(s
            .complete("a", &l2, &[4], "{}", -1, 171)
            .await
            .unwrap()
            .is_none());
        let j = s.get("a").await.unwrap().unwrap();
        assert_eq!(j.state, JobState::Done);
        assert_eq!(j.proof.as_deref(), Some(&[2u8, 3][..]));
        assert_eq!(j.device, Some(-1));
        assert_eq!(j.worker.as_deref(), Some("w"));
    }

    #[tokio::test]
    async fn unclaim_returns_a_job_claimed_ahead_as_it_was() {
        let (s, _d) = store().await;
        s.insert(&job("a", Priority::Normal, None), 1)
            .await
            .unwrap();
        s.insert(&job("b", Priority::Normal, None), 2)
            .await
            .unwrap();
        let j = s.claim("w", 10, 100, 1).await.unwrap().unwrap();
        assert_eq!((j.id.as_str(), j.attempts), ("a", 1));
        let lease = j.lease.unwrap();
        assert!(s.unclaim("a", &lease, 15).await.unwrap().is_some());
        assert!(
            s.unclaim("a", &lease, 15).await.unwrap().is_none(),
            "no longer held"
        );
        let a = s.get("a").await.unwrap().unwrap();
        assert_eq!(
            (a.state, a.attempts, a.started_us),
            (JobState::Queued, 0, None)
        );
        // Claimed ahead: no attempt counted until it begins, none taken
        // back when it is given back.
        let j = s.take("w", 12, 100, true).await.unwrap().unwrap();
        assert_eq!((j.id.as_str(), j.attempts, j.claimed_ahead), ("a", 0, true));
        let lease = j.lease.unwrap();
        assert!(s.unclaim("a", &lease, 15).await.unwrap().is_some());
        let a = s.get("a").await.unwrap().unwrap();
        assert_eq!(
            (a.state, a.attempts, a.started_us),
            (JobState::Queued, 0, None)
        );
        // Still first in line, and its one attempt (max_attempts 1) is
        // still there.
        let j = s.claim("w", 20, 100, 1).await.unwrap().unwrap();
        assert_eq!((j.id.as_str(), j.attempts), ("a", 1));
        // A job cancelled while claimed ahead ends cancelled.
        let b = s.claim("w", 30, 100, 1).await.unwrap().unwrap();
        assert!(
            !s.cancel("b", 31).await.unwrap().1,
            "running: on completion"
        );
        assert!(s
            .unclaim("b", b.lease.as_deref().unwrap(), 32)
            .await
            .unwrap()
            .is_some());
        let b = s.get("b").await.unwrap().unwrap();
        assert_eq!((b.state, b.finished_us), (JobState::Cancelled, Some(32)));
        // Finished, so pruned like any other: "a" (running) stays.
        assert_eq!(s.prune(33).await.unwrap(), 1);
        assert!(s.get("b").await.unwrap().is_none());
        assert!(s.get("a").await.unwrap().is_some());
    }

    /// A claim ahead counts its attempt only when it begins: a daemon that
    /// dies (or stops) holding one, again and again, does not use up the
    /// job's attempts; one that dies proving it does.
    #[tokio::test]
    async fn a_claim_ahead_counts_its_attempt_when_it_begins() {
        let (s, d) = store().await;
        s.insert(&job("a", Priority::Normal, None), 1)
            .await
            .unwrap();
        let url = format!("sqlite://{}", d.path().join("jobs.db").display());
        let mut s = s;
        // max_attempts 1: three crashes holding it ahead, and it is still
        // taken.
        for t in [10, 20, 30] {
            assert!(s.sweep(t, 1).await.unwrap().is_empty());
            let j = s.take("w", t, 1_000_000, true).await.unwrap().unwrap();
            assert_eq!((j.id.as_str(), j.attempts, j.claimed_ahead), ("a", 0, true));
            s.close().await;
            s = JobStore::open(&url).await.unwrap();
            let back = s.requeue_running(t + 1).await.unwrap();
            assert_eq!(back.len(), 1);
            assert_eq!(
                (back[0].state, back[0].attempts, back[0].claimed_ahead),
                (JobState::Queued, 0, false)
            );
        }
        // On PostgreSQL its lease runs out instead: the next claim counts
        // one attempt, not two.
        let j = s.take("dead", 40, 10, true).await.unwrap().unwrap();
        assert!(s.sweep(60, 1).await.unwrap().is_empty());
        let j2 = s.claim("w", 60, 100, 1).await.unwrap().unwrap();
        assert_eq!((j2.attempts, j2.claimed_ahead), (1, false));
        assert!(
            s.begin("a", j.lease.as_deref().unwrap())
                .await
                .unwrap()
                .is_none(),
            "lost"
        );
        // Begun, the attempt counts: a crash while proving uses it up.
        assert!(s
            .release("a", j2.lease.as_deref().unwrap(), "GPU fault", 61)
            .await
            .unwrap()
            .is_some());
        let failed = s.sweep(70, 1).await.unwrap();
        assert_eq!(failed.len(), 1);
        assert_eq!((failed[0].state, failed[0].attempts), (JobState::Failed, 1));
        s.insert(&job("b", Priority::Normal, None), 80)
            .await
            .unwrap();
        let j = s.take("w", 81, 100, true).await.unwrap().unwrap();
        let begun = s
            .begin("b", j.lease.as_deref().unwrap())
            .await
            .unwrap()
            .unwrap();
        assert_eq!((begun.attempts, begun.claimed_ahead), (1, false));
        // Beginning twice counts once.
        let again = s
            .begin("b", j.lease.as_deref().unwrap())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(again.attempts, 1);
        assert_eq!(s.requeue_running(90).await.unwrap()[0].attempts, 1);
    }

    #[tokio::test]
    async fn release_requeues_and_attempts_are_bounded() {
        let (s, _d) = store().await;
        s.insert(&job("a", Priority::Normal, None), 1)
            .await
            .unwrap();
        for attempt in 1..=3 {
            let j = s.claim("w", 10, 100, 3).await.unwrap().unwrap();
            assert_eq!(j.attempts, attempt);
            let lease = j.lease.unwrap();
            assert!(s
                .release("a", &lease, "GPU fault", 11)
                .await
                .unwrap()
                .is_some());
            assert!(s.release("a", &lease, "again", 12).await.unwrap().is_none());
        }
        // Taken three times: the fourth claim fails it instead.
        assert!(s.claim("w", 20, 100, 3).await.unwrap().is_none());
        let j = s.get("a").await.unwrap().unwrap();
        assert_eq!(j.state, JobState::Failed);
        let e = j.error.unwrap();
        assert!(
            e.contains("gave up after 3 attempts") && e.contains("GPU fault"),
            "{e}"
        );
        // Given back with a cancellation asked: cancelled, finished then,
        // and pruned like any finished job.
        s.insert(&job("b", Priority::Normal, None), 30)
            .await
            .unwrap();
        let j = s.claim("w", 31, 100, 3).await.unwrap().unwrap();
        assert_eq!(j.id, "b");
        let lease = j.lease.unwrap();
        let (b, now) = s.cancel("b", 32).await.unwrap();
        assert_eq!(
            (b.state, b.cancel_requested, now),
            (JobState::Running, true, false)
        );
        // The release returns the job as it left it, cancelled: the one
        // place that sees the cancellation end it.
        let b = s.release("b", &lease, "GPU fault", 33).await.unwrap();
        let b = b.expect("held by its lease");
        assert_eq!((b.state, b.finished_us), (JobState::Cancelled, Some(33)));
        assert_eq!(
            s.get("b").await.unwrap().unwrap().state,
            JobState::Cancelled
        );
        // Asked again once ended: nothing changes, and not "cancelled now".
        let (b, now) = s.cancel("b", 35).await.unwrap();
        assert_eq!(
            (b.state, b.finished_us, now),
            (JobState::Cancelled, Some(33), false)
        );
        assert_eq!(s.prune(34).await.unwrap(), 2);
    }

    /// A job given back to the queue before its cancellation is asked is
    /// cancelled by the cancellation itself, at once: one statement sees
    /// it queued (two, one for each state, could miss it between them).
    #[tokio::test]
    async fn a_cancel_after_a_release_cancels_the_queued_job() {
        let (s, _d) = store().await;
        s.insert(&job("a", Priority::Normal, None), 1)
            .await
            .unwrap();
        let j = s.claim("w", 2, 100, 3).await.unwrap().unwrap();
        let a = s
            .release("a", &j.lease.unwrap(), "GPU fault", 3)
            .await
            .unwrap();
        assert_eq!(a.map(|a| a.state), Some(JobState::Queued));
        let (a, now) = s.cancel("a", 4).await.unwrap();
        assert_eq!(
            (a.state, a.finished_us, now),
            (JobState::Cancelled, Some(4), true)
        );
        assert!(s.claim("w", 5, 100, 3).await.unwrap().is_none());
    }

    #[tokio::test]
    async fn cancel_queued_now_running_at_the_end() {
        let (s, _d) = store().await;
        s.insert(&job("a", Priority::Normal, None), 1)
            .await
            .unwrap();
        s.insert(&job("b", Priority::Normal, None), 2)
            .await
            .unwrap();
        let (j, now) = s.cancel("b", 3).await.unwrap();
        assert_eq!((j.state, now), (JobState::Cancelled, true));
        let (_, again) = s.cancel("b", 3).await.unwrap();
        assert!(!again);
        let j = s.claim("w", 4, 100, 5).await.unwrap().unwrap();
        assert_eq!(j.id, "a");
        assert!(s.claim("w", 4, 100, 5).await.unwrap().is_none());
        let (r, now) = s.cancel("a", 5).await.unwrap();
        assert_eq!((r.state, now), (JobState::Running, false));
        assert!(s
            .complete("a", &j.lease.unwrap(), &[1], "{}", 0, 6)
            .await
            .unwrap()
            .is_some());
        let j = s.get("a").await.unwrap().unwrap();
        assert_eq!(j.state, JobState::Cancelled);
        assert!(j.proof.is_none());
        assert!(matches!(s.cancel("zz", 7).await, Err(Error::NotFound(_))));
        // A job whose worker died after a cancellation was asked is not
        // proved again.
        s.insert(&job("c", Priority::Normal, None), 8)
            .await
            .unwrap();
        s.claim("dead", 9, 10, 5).await.unwrap().unwrap();
        s.cancel("c", 10).await.unwrap();
        assert!(s.claim("w", 30, 100, 5).await.unwrap().is_none());
        assert_eq!(
            s.get("c").await.unwrap().unwrap().state,
            JobState::Cancelled
        );
    }

    #[tokio::test]
    async fn requeue_after_a_crash_and_failures() {
        let (s, d) = store().await;
        s.insert(&job("a", Priority::Normal, None), 1)
            .await
            .unwrap();
        s.insert(&job("b", Priority::Normal, None), 2)
            .await
            .unwrap();
        s.claim("dead", 2, 1_000_000_000, 5).await.unwrap().unwrap();
        s.claim("dead", 2, 1_000_000_000, 5).await.unwrap().unwrap();
        s.cancel("b", 3).await.unwrap();
        drop(s);
        let url = format!("sqlite://{}", d.path().join("jobs.db").display());
        let s = JobStore::open(&url).await.unwrap();
        assert_eq!(s.requeue_running(4).await.unwrap().len(), 2);
        let b = s.get("b").await.unwrap().unwrap();
        assert_eq!((b.state, b.finished_us), (JobState::Cancelled, Some(4)));
        let j = s.claim("new", 3, 100, 5).await.unwrap().unwrap();
        assert_eq!((j.id.as_str(), j.attempts), ("a", 2));
        assert!(s
            .fail("a", &j.lease.unwrap(), "bad witness", 4)
            .await
            .unwrap()
            .is_some());
        let j = s.get("a").await.unwrap().unwrap();
        assert_eq!(j.state, JobState::Failed);
        assert_eq!(j.error.as_deref(), Some("bad witness"));
        let mut counts = s.counts().await.unwrap();
        counts.sort_by_key(|c| c.1.as_str());
        assert_eq!(
            counts,
            vec![
                (Priority::Normal, JobState::Cancelled, false, 1),
                (Priority::Normal, JobState::Failed, false, 1)
            ]
        );
    }

    /// Claims ahead are counted apart from proofs running, until they
    /// begin.
    #[tokio::test]
    async fn claims_ahead_are_counted_by_class() {
        let (s, _d) = store().await;
        s.insert(&job("a", Priority::High, None), 1).await.unwrap();
        s.insert(&job("b", Priority::High, None), 2).await.unwrap();
        s.insert(&job("c", Priority::Low, None), 3).await.unwrap();
        // The classes' running jobs claimed ahead.
        let ahead = |s: JobStore| async move {
            let mut a: Vec<_> = s
                .counts()
                .await
                .unwrap()
                .into_iter()
                .filter(|c| c.2)
                .map(|c| (c.0, c.1, c.3))
                .collect();
            a.sort_by_key(|c| c.0);
            a
        };
        assert!(ahead(s.clone()).await.is_empty());
        s.take("w", 10, 100, false).await.unwrap().unwrap();
        let b = s.take("w", 10, 100, true).await.unwrap().unwrap();
        s.take("w", 10, 100, true).await.unwrap().unwrap();
        assert_eq!(
            ahead(s.clone()).await,
            vec![
                (Priority::Low, JobState::Running, 1),
                (Priority::High, JobState::Running, 1)
            ]
        );
        s.begin("b", b.lease.as_deref().unwrap())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            ahead(s.clone()).await,
            vec![(Priority::Low, JobState::Running, 1)]
        );
    }

    #[tokio::test]
    async fn prune_drops_old_finished_jobs_only() {
        let (s, _d) = store().await;
        for (id, t) in [("a", 1), ("b", 2), ("c", 3)] {
            s.insert(&job(id, Priority::Normal, None), t).await.unwrap();
        }
        let j = s.claim("w", 10, 100, 5).await.unwrap().unwrap();
        assert!(s
            .complete(&j.id, &j.lease.unwrap(), &[1], "{}", 0, 20)
            .await
            .unwrap()
            .is_some());
        s.cancel("b", 30).await.unwrap();
        assert_eq!(s.prune(25).await.unwrap(), 1);
        assert!(s.get("a").await.unwrap().is_none());
        assert_eq!(
            s.get("b").await.unwrap().unwrap().state,
            JobState::Cancelled
        );
        assert_eq!(s.get("c").await.unwrap().unwrap().state, JobState::Queued);
    }

    /// Six jobs for the listing tests, submitted at 1, 2, 2, 3, 4, 5 (b and
    /// c tie), circuits `c` and `d`, ending done (a), cancelled (b), failed
    /// (c) and running (d); e and f queued. Newest first: f e d c b a.
    async fn listed_jobs(s: &JobStore) {
        for (id, circuit, t) in [
            ("a", "c", 1),
            ("b", "d", 2),
            ("c", "c", 2),
            ("d", "d", 3),
            ("e", "c", 4),
            ("f", "d", 5),
        ] {
            let mut j = job(id, Priority::Normal, None);
            j.circuit_id = circuit.into();
            s.insert(&j, t).await.unwrap();
        }
        let a = s.claim("w", 10, 100, 5).await.unwrap().unwrap();
        assert!(s
            .complete("a", a.lease.as_deref().unwrap(), &[7; 192], "{}", 0, 11)
            .await
            .unwrap()
            .is_some());
        s.cancel("b", 12).await.unwrap();
        let c = s.claim("w", 13, 100, 5).await.unwrap().unwrap();
        assert!(s
            .fail("c", c.lease.as_deref().unwrap(), "bad witness", 14)
            .await
            .unwrap()
            .is_some());
        assert_eq!(s.claim("w", 15, 100, 5).await.unwrap().unwrap().id, "d");
    }

    fn ids(jobs: &[JobRecord]) -> Vec<&str> {
        jobs.iter().map(|j| j.id.as_str()).collect()
    }

    #[tokio::test]
    async fn list_is_newest_first_filtered_and_paged() {
        let (s, _d) = store().await;
        listed_jobs(&s).await;
        let all = s.list(&JobFilter::default(), 100).await.unwrap();
        assert_eq!(ids(&all), ["f", "e", "d", "c", "b", "a"]);
        // Every field but the proof, which a listing leaves out.
        let a = &all[5];
        assert_eq!(
            (a.state, a.circuit_id.as_str(), a.attempts, a.device),
            (JobState::Done, "c", 1, Some(0))
        );
        assert_eq!((a.submitted_us, a.finished_us), (1, Some(11)));
        assert!(a.proof.is_none());
        assert_eq!(s.get("a").await.unwrap().unwrap().proof, Some(vec![7; 192]));
        assert_eq!(all[3].error.as_deref(), Some("bad witness"));
        let by = |states: &[JobState], circuit: Option<&str>| JobFilter {
            states: states.to_vec(),
            circuit_id: circuit.map(String::from),
            after: None,
        };
        let list = |f: JobFilter, n| {
            let s = s.clone();
            async move { s.list(&f, n).await.unwrap() }
        };
        assert_eq!(
            ids(&list(by(&[JobState::Queued], None), 100).await),
            ["f", "e"]
        );
        assert_eq!(
            ids(&list(
                by(
                    &[JobState::Done, JobState::Failed, JobState::Cancelled],
                    None
                ),
                100
            )
            .await),
            ["c", "b", "a"]
        );
        assert_eq!(ids(&list(by(&[], Some("d")), 100).await), ["f", "d", "b"]);
        assert_eq!(
            ids(&list(
                by(&[JobState::Running, JobState::Cancelled], Some("d")),
                100
            )
            .await),
            ["d", "b"]
        );
        assert!(list(by(&[], Some("none")), 100).await.is_empty());
        assert_eq!(ids(&list(by(&[], None), 2).await), ["f", "e"]);
        // Pages of two from each page's last job, across the tie at 2: each
        // job once, in order, then nothing.
        let mut seen = Vec::new();
        let mut f = by(&[], None);
        loop {
            let page = list(f.clone(), 2).await;
            if page.is_empty() {
                break;
            }
            assert!(page.len() <= 2);
            seen.extend(page.iter().map(|j| j.id.clone()));
            f.after = page.last().map(JobCursor::of);
        }
        assert_eq!(seen, ["f", "e", "d", "c", "b", "a"]);
        // A cursor between the tied jobs, with a filter.
        let f = JobFilter {
            after: Some(JobCursor {
                submitted_us: 2,
                id: "c".into(),
            }),
            ..by(&[JobState::Cancelled, JobState::Done], None)
        };
        assert_eq!(ids(&list(f, 100).await), ["b", "a"]);
    }

    /// SQLite reads the list's order off the `cuzk_jobs_submitted` index
    /// (backwards) rather than sorting the table, with and without a
    /// cursor and a circuit. (A state filter takes the queue's index, state
    /// first, and sorts the rows of those states: see JobStore::list.)
    #[tokio::test]
    async fn list_reads_the_submitted_index() {
        let (s, _d) = store().await;
        listed_jobs(&s).await;
        sqlx::query("ANALYZE").execute(&s.pool).await.unwrap();
        let after = Some(JobCursor {
            submitted_us: 3,
            id: "d".into(),
        });
        for f in [
            JobFilter::default(),
            JobFilter {
                after: after.clone(),
                ..JobFilter::default()
            },
            JobFilter {
                circuit_id: Some("c".into()),
                after,
                ..JobFilter::default()
            },
        ] {
            let sql = format!("EXPLAIN QUERY PLAN {}", list_sql(&f));
            let mut q = sqlx::query_as::<_, (i64, i64, i64, String)>(&sql);
            if f.circuit_id.is_some() {
                q = q.bind("c");
            }
            if f.after.is_some() {
                q = q.bind(3i64).bind("d");
            }
            let plan: Vec<String> = q
                .bind(10i64)
                .fetch_all(&s.pool)
                .await
                .unwrap()
                .into_iter()
                .map(|r| r.3)
                .collect();
            let plan = plan.join("; ");
            assert!(plan.contains("cuzk_jobs_submitted"), "{f:?}: {plan}");
            assert!(!plan.contains("TEMP B-TREE"), "{f:?}: {plan}");
        }
    }

    #[test]
    fn page_tokens_round_trip_and_others_are_refused() {
        let c = JobCursor {
            submitted_us: 1_700_000_000_123_456,
            id: "0d6f-ab:c".into(),
        };
        let t = c.to_token();
        assert_eq!(JobCursor::from_token(&t).unwrap(), c);
        for bad in ["", "zz", "1234", &hex::encode("x:a"), &hex::encode("5:")] {
            let e = JobCursor::from_token(bad).unwrap_err();
            assert!(
                matches!(&e, Error::InvalidArgument(m) if m.contains("next_page_token")),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn passwords_are_hidden() {
        assert_eq!(redact("postgres://u:secret@h/db"), "postgres://u:***@h/db");
        assert_eq!(redact("sqlite:///x/jobs.db"), "sqlite:///x/jobs.db");
    }
}
