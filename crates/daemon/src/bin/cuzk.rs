//! `cuzk`: the command-line client of cuzk-daemon (submit, await, prove,
//! cancel, job, jobs, status, preload, evict) and local tools for the bundled
//! circuits (keygen, witness, verify). `--token-file` passes the bearer
//! token of a daemon started with `--auth-token-file`; `--addr
//! https://HOST:PORT` talks to a daemon serving TLS (`--tls-cert-file`),
//! trusting `--tls-ca-file`'s CA or the system's.

use anyhow::{bail, Context, Result};
use ark_serialize::CanonicalDeserialize;
use clap::{Parser, Subcommand};
use cuzk_daemon::auth::SendToken;
use cuzk_daemon::pb::{self, prover_client::ProverClient};
use cuzk_daemon::tls::error_chain;
use cuzk_daemon::{circuits, Assignment, AuthToken, Priority};
use cuzk_prover::circuits::Sha256Chain;
use std::path::{Path, PathBuf};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

/// `println!` for the CLI's output: a reader that closes the pipe early
/// (`cuzk status | head -1`) ends the process quietly (exit 0), as it does
/// other command-line tools, where `println!` would panic. SIGPIPE stays
/// ignored (Rust's default): a daemon that closes the connection is then an
/// error the CLI explains, not a silent death by signal.
macro_rules! say {
    ($($arg:tt)*) => {
        print_line(format_args!($($arg)*))
    };
}

/// Writes one line to stdout for [`say!`]: exits 0 on a closed pipe, 1
/// with a message on any other write error.
fn print_line(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.write_all(b"\n")) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("cuzk: writing the output: {e}");
        std::process::exit(1);
    }
}

/// A client of the daemon, sending the token of --token-file if given.
type Client = ProverClient<InterceptedService<Channel, SendToken>>;

#[derive(Parser, Debug)]
#[command(version, about = "cuzk-daemon's client and circuit tools")]
struct Cli {
    #[command(flatten)]
    conn: Connection,
    #[command(subcommand)]
    cmd: Cmd,
}

/// How to reach the daemon: its address, its token, the TLS settings.
/// The local commands (keygen, witness, witness-porep, verify) take none.
#[derive(clap::Args, Debug, Clone)]
#[command(
    next_help_heading = "Connection (commands that call the daemon; keygen, witness, witness-porep and verify ignore these)"
)]
struct Connection {
    /// The daemon's address: http://HOST:PORT, https://HOST:PORT for a
    /// daemon serving TLS (its --tls-cert-file), or unix:PATH for a Unix
    /// socket.
    #[arg(long, global = true, default_value = "http://127.0.0.1:9820")]
    addr: String,
    /// A file holding the daemon's bearer token (the daemon's
    /// --auth-token-file), sent with every request.
    #[arg(long, global = true, value_name = "PATH")]
    token_file: Option<PathBuf>,
    /// With https://: trust the CA certificates in this PEM file (a
    /// private CA that signed the daemon's certificate) instead of the
    /// system's.
    #[arg(long, global = true, value_name = "PATH")]
    tls_ca_file: Option<PathBuf>,
    /// With https://: the name the daemon's certificate must carry, when
    /// it is not --addr's host (e.g. dialing an IP address).
    #[arg(long, global = true, value_name = "NAME")]
    tls_domain: Option<String>,
    /// With https://: this client's certificate (PEM), for a daemon that
    /// requires client certificates (its --tls-client-ca-file); needs
    /// --tls-key-file.
    #[arg(long, global = true, value_name = "PATH")]
    tls_cert_file: Option<PathBuf>,
    /// The private key (PEM) of --tls-cert-file's certificate.
    #[arg(long, global = true, value_name = "PATH")]
    tls_key_file: Option<PathBuf>,
}

impl Connection {
    /// Whether any TLS option is given.
    fn any_tls_option(&self) -> bool {
        self.tls_ca_file.is_some()
            || self.tls_domain.is_some()
            || self.tls_cert_file.is_some()
            || self.tls_key_file.is_some()
    }

    /// Whether --addr is https:// (the scheme is case-insensitive).
    fn is_https(&self) -> bool {
        self.addr
            .get(..8)
            .is_some_and(|s| s.eq_ignore_ascii_case("https://"))
    }
}

#[derive(clap::Args, Debug)]
struct SubmitArgs {
    /// Circuit id (a directory under the daemon's key directories).
    #[arg(long)]
    circuit: String,
    /// Assignment file (cuzk's assignment encoding; `cuzk witness` writes one).
    #[arg(long)]
    assignment: PathBuf,
    /// low, normal, high or critical.
    #[arg(long, default_value = "normal")]
    priority: Priority,
    /// Idempotency key: a resubmission with it and the same assignment
    /// returns the first job; another assignment under it is refused. It
    /// lasts as long as the job (the daemon's retain_finished_secs after
    /// the job ends, 7 days by default).
    #[arg(long, default_value = "")]
    key: String,
    /// Pass the file's path (the daemon reads it) instead of its bytes:
    /// its absolute path with links resolved on this host, which the
    /// daemon's host must see too; with --assignment-dir, the daemon takes
    /// only paths under those directories.
    #[arg(long)]
    by_path: bool,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Queue a proof; prints the job id.
    Submit(SubmitArgs),
    /// Wait for a job to end; writes its proof with --out. Exits 0 when
    /// the proof is done, 1 when the job failed or was cancelled, 3 when
    /// --timeout-ms passed first (the job goes on).
    Await {
        /// The job's id, as `submit` printed it.
        job: String,
        /// Wait at most this long, milliseconds; without it, until the job
        /// ends however long its queue.
        #[arg(long)]
        timeout_ms: Option<u64>,
        /// Where to write the proof (ark-serialize, compressed).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Submit and wait, as `submit` then `await`.
    Prove {
        #[command(flatten)]
        submit: SubmitArgs,
        /// Wait at most this long, milliseconds; without it, until the job
        /// ends. On timeout it exits 3 and the job goes on.
        #[arg(long)]
        timeout_ms: Option<u64>,
        /// Where to write the proof (ark-serialize, compressed).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Cancel a job.
    Cancel {
        /// The job's id, as `submit` printed it.
        job: String,
    },
    /// One job's status now, without waiting: state, class, circuit,
    /// attempts, worker and device, times, and the queue wait and stage
    /// timings once done, or the error once failed. Exits 0 whatever the
    /// state (1 for an unknown job).
    Job {
        /// The job's id, as `submit` printed it.
        job: String,
        /// Print one JSON object instead (times in microseconds since the
        /// Unix epoch, 0 for not yet; stage timings in milliseconds;
        /// `device` null until done, then -1 for the CPU path).
        #[arg(long)]
        json: bool,
    },
    /// The jobs in the daemon's job store (every daemon sharing it),
    /// newest submission first: id, circuit, state, class, attempts, age,
    /// prover time.
    Jobs {
        /// Only jobs in these states, comma-separated: queued, running,
        /// done, failed, cancelled. Default: every state.
        #[arg(long, value_delimiter = ',', value_name = "STATE,...")]
        state: Vec<StateArg>,
        /// Only jobs of this circuit id.
        #[arg(long)]
        circuit: Option<String>,
        /// Most jobs to show (fetched a page of up to 1000 at a time); a
        /// note on stderr says when more match.
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
        limit: u32,
        /// Print a JSON array instead, one object a job as `job --json`
        /// prints it (without proof_bytes).
        #[arg(long)]
        json: bool,
    },
    /// The daemon's devices, keys and queues.
    Status {
        /// Print the response as JSON (for scripts: the gRPC fields by
        /// name, classes by name).
        #[arg(long, conflicts_with = "raw")]
        json: bool,
        /// Print the response as Rust debug output (for debugging the
        /// daemon; its form is not stable: scripts take --json).
        #[arg(long)]
        raw: bool,
    },
    /// Load a circuit's key now.
    Preload { circuit: String },
    /// Drop a loaded key.
    Evict { circuit: String },
    /// Write a circuit directory (key, verifying key, R1CS) for a SHA-256
    /// chain of --rounds compressions, by ark-groth16's setup (local).
    Keygen {
        /// The key directory: the circuit's files go to KEY_DIR/ID/.
        #[arg(long)]
        key_dir: PathBuf,
        /// Circuit id (a directory name: no slashes); default
        /// sha256-chain-ROUNDS or porep-2^LOG.
        #[arg(long)]
        id: Option<String>,
        /// SHA-256 compressions in the chain (at least 1).
        #[arg(
            long,
            default_value_t = 1,
            value_parser = at_least_one
        )]
        rounds: usize,
        /// Instead of the SHA-256 chain: a PoRep-shaped circuit of this
        /// log2 domain (1 to 32, as far as host memory allows: the seed
        /// workload's 2^27 has a key of about 47 GiB) with a random-point
        /// key (for benchmarks: its proofs do not verify).
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=32))]
        porep_log_domain: Option<u32>,
        /// Structure seed of the PoRep-shaped circuit.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Write over a circuit directory that already holds a key (a
        /// daemon that has it loaded goes on with the old key until `cuzk
        /// evict ID`).
        #[arg(long)]
        force: bool,
    },
    /// Write the assignment of a PoRep-shaped circuit (local): the
    /// partition `--partition` of the circuit `keygen --porep-log-domain`
    /// wrote with the same log domain and seed.
    WitnessPorep {
        /// The circuit's log2 domain, as given to `keygen
        /// --porep-log-domain` (1 to 32).
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=32))]
        log_domain: u32,
        /// The circuit's structure seed, as given to `keygen --seed`.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Which partition: partitions differ in their witness values.
        #[arg(long, default_value_t = 0)]
        partition: u64,
        /// Where to write the assignment (cuzk's assignment file format).
        #[arg(long)]
        out: PathBuf,
    },
    /// Write the assignment of a SHA-256 chain (local).
    Witness {
        /// SHA-256 compressions in the chain, as given to `keygen --rounds`.
        #[arg(
            long,
            default_value_t = 1,
            value_parser = at_least_one
        )]
        rounds: usize,
        /// The 32-byte preimage, hex.
        #[arg(long)]
        preimage: String,
        /// Where to write the assignment (cuzk's assignment file format).
        #[arg(long)]
        out: PathBuf,
    },
    /// Verify a proof with a circuit directory's vk.bin (local).
    Verify {
        /// The circuit directory.
        #[arg(long)]
        circuit_dir: PathBuf,
        #[arg(long)]
        proof: PathBuf,
        #[arg(long)]
        assignment: PathBuf,
    },
}

/// A job state as `cuzk jobs --state` takes it.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum StateArg {
    Queued,
    Running,
    Done,
    Failed,
    Cancelled,
}

impl From<StateArg> for pb::JobState {
    fn from(s: StateArg) -> Self {
        match s {
            StateArg::Queued => pb::JobState::Queued,
            StateArg::Running => pb::JobState::Running,
            StateArg::Done => pb::JobState::Done,
            StateArg::Failed => pb::JobState::Failed,
            StateArg::Cancelled => pb::JobState::Cancelled,
        }
    }
}

/// A client of the daemon at `conn.addr`: `http://HOST:PORT`,
/// `https://HOST:PORT` over TLS (trusting `--tls-ca-file`'s CA, else the
/// system's), or `unix:PATH` for a daemon listening on a Unix socket; with
/// `--token-file`, sending its token.
async fn client(conn: &Connection) -> Result<Client> {
    let addr = conn.addr.as_str();
    let token = conn
        .token_file
        .as_deref()
        .map(AuthToken::from_file)
        .transpose()?;
    let context = || format!("connecting to cuzk-daemon at {addr} (is it running?)");
    let identity = match (&conn.tls_cert_file, &conn.tls_key_file) {
        (Some(c), Some(k)) => Some((c.as_path(), k.as_path())),
        (None, None) => None,
        _ => bail!(
            "give both --tls-cert-file PATH and --tls-key-file PATH (this client's certificate \
             and its key, for a daemon that requires client certificates), or neither"
        ),
    };
    if conn.any_tls_option() && !conn.is_https() {
        bail!(
            "--tls-ca-file, --tls-domain, --tls-cert-file and --tls-key-file are for TLS, and \
             --addr {addr} is not https://: give --addr https://HOST:PORT for a daemon serving \
             TLS, or drop them"
        );
    }
    if !addr.starts_with("unix:") && !addr.contains("://") {
        bail!("--addr {addr}: give http://{addr} (https:// for a daemon serving TLS) or unix:PATH");
    }
    let channel = match addr.strip_prefix("unix:") {
        Some(path) => {
            let path = path.to_string();
            // The URI is a placeholder: the connector dials the socket.
            tonic::transport::Endpoint::try_from("http://localhost")?
                .connect_with_connector(tower::service_fn(move |_: tonic::transport::Uri| {
                    let path = path.clone();
                    async move {
                        Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(
                            tokio::net::UnixStream::connect(path).await?,
                        ))
                    }
                }))
                .await
                .with_context(context)?
        }
        None if conn.is_https() => {
            let tls = cuzk_daemon::tls::client_config(
                conn.tls_ca_file.as_deref(),
                conn.tls_domain.as_deref(),
                identity,
            )?;
            // What the daemon's certificate is checked against, for the
            // error of a refused handshake.
            let signer = match &conn.tls_ca_file {
                Some(p) => format!("the CA in {}", p.display()),
                None => "a CA the system trusts (for a private CA give --tls-ca-file PATH)".into(),
            };
            let name = match &conn.tls_domain {
                Some(d) => d.clone(),
                None => "--addr's host (for another name give --tls-domain NAME)".into(),
            };
            let client_cert = if identity.is_some() {
                ""
            } else {
                "; a daemon with --tls-client-ca-file also needs --tls-cert-file and \
                 --tls-key-file"
            };
            tonic::transport::Endpoint::from_shared(addr.to_string())?
                .tls_config(tls)
                .map_err(|e| {
                    // Without --tls-ca-file: the system has no CA
                    // certificates tonic can read.
                    let fix = match &conn.tls_ca_file {
                        Some(_) => "",
                        None => {
                            ". Without --tls-ca-file the system's CA certificates are trusted: \
                             give --tls-ca-file PATH, the CA (PEM) that signed the daemon's \
                             certificate"
                        }
                    };
                    anyhow::anyhow!("TLS for {addr}: {}{fix}", error_chain(&e))
                })?
                .connect()
                .await
                .map_err(|e| {
                    anyhow::anyhow!(
                        "connecting to cuzk-daemon at {addr} over TLS: {}. Is it running, with \
                         --tls-cert-file? Its certificate must be signed by {signer} and name \
                         {name}{client_cert}",
                        error_chain(&e)
                    )
                })?
        }
        None => tonic::transport::Endpoint::from_shared(addr.to_string())?
            .connect()
            .await
            .with_context(context)?,
    };
    let c = ProverClient::with_interceptor(channel, SendToken::new(token.as_ref()));
    Ok(c.max_decoding_message_size(1 << 30)
        .max_encoding_message_size(1 << 30))
}

/// Files above this go by stream, below inline.
const INLINE_MAX: u64 = 32 << 20;

async fn submit(c: &mut Client, a: &SubmitArgs) -> Result<String> {
    let prio = pb::Priority::from(a.priority) as i32;
    let meta = std::fs::metadata(&a.assignment)
        .with_context(|| format!("reading {}", a.assignment.display()))?;
    if !meta.is_file() {
        bail!(
            "{} is not a file: give an assignment file (`cuzk witness` writes one)",
            a.assignment.display()
        );
    }
    let len = meta.len();
    let r = if a.by_path {
        // Sent as resolved here: the daemon's host must see the file at
        // this same absolute path.
        let path = std::fs::canonicalize(&a.assignment)
            .with_context(|| format!("resolving {}", a.assignment.display()))?;
        let Some(path) = path.to_str() else {
            bail!(
                "{} is not UTF-8, and a path crosses to the daemon as UTF-8 text: rename the \
                 file, or send its bytes (without --by-path)",
                path.display()
            );
        };
        c.submit_proof(pb::SubmitProofRequest {
            circuit_id: a.circuit.clone(),
            priority: prio,
            idempotency_key: a.key.clone(),
            assignment: Some(pb::submit_proof_request::Assignment::Path(path.into())),
        })
        .await?
    } else if len <= INLINE_MAX {
        let bytes = std::fs::read(&a.assignment)
            .with_context(|| format!("reading {}", a.assignment.display()))?;
        let inline = c
            .submit_proof(pb::SubmitProofRequest {
                circuit_id: a.circuit.clone(),
                priority: prio,
                idempotency_key: a.key.clone(),
                assignment: Some(pb::submit_proof_request::Assignment::Inline(bytes)),
            })
            .await;
        match inline {
            Ok(r) => r,
            // A daemon whose max_inline_bytes is below this file: no job
            // was made, and a stream takes any size.
            Err(s) if inline_refused(&s) => submit_stream(c, a, prio, len).await?,
            Err(s) => return Err(s.into()),
        }
    } else {
        submit_stream(c, a, prio, len).await?
    };
    let r = r.into_inner();
    if r.duplicate {
        eprintln!("idempotency key already used: job {}", r.job_id);
    }
    Ok(r.job_id)
}

/// Checks, before a proof is made or awaited, that `--out` names a file in
/// an existing directory.
fn check_out(out: Option<&Path>) -> Result<()> {
    let Some(out) = out else { return Ok(()) };
    if out.as_os_str().to_string_lossy().ends_with('/') || out.is_dir() {
        bail!("--out {}: give a file name, not a directory", out.display());
    }
    let dir = match out.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        bail!(
            "--out: {} is not a directory: give a path in an existing directory",
            dir.display()
        );
    }
    Ok(())
}

/// A count of 1 or more (clap's parser of `--rounds`).
fn at_least_one(v: &str) -> std::result::Result<usize, String> {
    match v.parse::<usize>() {
        Ok(0) => Err("give at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("{e}: give a whole number, at least 1")),
    }
}

/// Whether the daemon refused an inline assignment for its size (above
/// its max_inline_bytes, or its gRPC message limit).
fn inline_refused(s: &tonic::Status) -> bool {
    s.code() == tonic::Code::OutOfRange
        || (s.code() == tonic::Code::InvalidArgument && s.message().contains("max_inline_bytes"))
}

/// Submits `a`'s assignment (`len` bytes) as a stream: a header, then the
/// file in chunks.
async fn submit_stream(
    c: &mut Client,
    a: &SubmitArgs,
    prio: i32,
    len: u64,
) -> Result<tonic::Response<pb::SubmitProofResponse>> {
    let header = pb::SubmitProofChunk {
        part: Some(pb::submit_proof_chunk::Part::Header(
            pb::SubmitProofHeader {
                circuit_id: a.circuit.clone(),
                priority: prio,
                idempotency_key: a.key.clone(),
                assignment_bytes: len,
            },
        )),
    };
    let chunks = async_stream(a.assignment.clone(), header)?;
    Ok(c.submit_proof_stream(chunks).await?)
}

/// The header, then the file in chunks of 4 MiB.
fn async_stream(
    path: PathBuf,
    header: pb::SubmitProofChunk,
) -> Result<impl tokio_stream::Stream<Item = pb::SubmitProofChunk>> {
    use std::io::Read;
    let mut f =
        std::fs::File::open(&path).with_context(|| format!("opening {}", path.display()))?;
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    std::thread::spawn(move || {
        if tx.blocking_send(header).is_err() {
            return;
        }
        let mut buf = vec![0u8; 4 << 20];
        loop {
            match f.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    let c = pb::SubmitProofChunk {
                        part: Some(pb::submit_proof_chunk::Part::Data(buf[..n].to_vec())),
                    };
                    if tx.blocking_send(c).is_err() {
                        return;
                    }
                }
            }
        }
    });
    Ok(tokio_stream::wrappers::ReceiverStream::new(rx))
}

fn report(r: &pb::ProofResult, out: Option<&PathBuf>) -> Result<()> {
    let state = pb::JobState::try_from(r.state).unwrap_or(pb::JobState::Unspecified);
    match state {
        pb::JobState::Done => {
            let t = r.timings.unwrap_or_default();
            say!(
                "job {}: done on {} (device {}), prover {:.1} ms, queue wait {:.1} ms",
                r.job_id,
                r.worker,
                r.device,
                t.total_ms,
                t.queue_wait_ms
            );
            if let Some(o) = out {
                std::fs::write(o, &r.proof).with_context(|| format!("writing {}", o.display()))?;
                say!("proof: {} ({} bytes)", o.display(), r.proof.len());
            }
            Ok(())
        }
        pb::JobState::Failed => bail!("job {} failed: {}", r.job_id, r.error),
        pb::JobState::Cancelled => bail!("job {} was cancelled: no proof", r.job_id),
        other => bail!("job {}: {}", r.job_id, state_words(other)),
    }
}

/// A job's state in words.
fn state_words(s: pb::JobState) -> &'static str {
    match s {
        pb::JobState::Queued => "queued",
        pb::JobState::Running => "running",
        pb::JobState::Done => "done",
        pb::JobState::Failed => "failed",
        pb::JobState::Cancelled => "cancelled",
        pb::JobState::Unspecified => "in an unknown state",
    }
}

/// The exit status of `await` and `prove` when their --timeout-ms passed
/// with the job still queued or running.
const EXIT_STILL_PENDING: i32 = 3;

/// Waits for `job` to end and reports it (see [`report`]): without
/// `timeout_ms`, however long that takes (each AwaitProof call lasts up to
/// the daemon's await_timeout_ms, and is made again while the job is
/// queued or running); with it, at most that long, then the process exits
/// with [`EXIT_STILL_PENDING`] saying how to wait again.
async fn await_and_report(
    c: &mut Client,
    job: String,
    timeout_ms: Option<u64>,
    out: Option<&PathBuf>,
) -> Result<()> {
    let start = std::time::Instant::now();
    loop {
        let left = match timeout_ms {
            // At least 1 ms: 0 would ask for the daemon's default.
            Some(t) => (t.saturating_sub(start.elapsed().as_millis() as u64)).max(1),
            None => 0,
        };
        let r = c
            .await_proof(pb::AwaitProofRequest {
                job_id: job.clone(),
                timeout_ms: left,
            })
            .await?
            .into_inner();
        let state = pb::JobState::try_from(r.state).unwrap_or(pb::JobState::Unspecified);
        if !matches!(state, pb::JobState::Queued | pb::JobState::Running) {
            return report(&r, out);
        }
        if let Some(t) = timeout_ms {
            if start.elapsed().as_millis() as u64 >= t {
                eprintln!(
                    "job {job}: still {} after {t} ms; it goes on: `cuzk await {job}` waits \
                     again",
                    state_words(state)
                );
                std::process::exit(EXIT_STILL_PENDING);
            }
        }
    }
}

/// A class's name as the CLI takes it (`low`, `normal`, `high`,
/// `critical`); `unspecified` for 0, the raw number for a value outside
/// the enum (a newer daemon).
fn priority_name(p: i32) -> String {
    enum_word(
        pb::Priority::try_from(p).ok().map(|p| p.as_str_name()),
        "PRIORITY_",
        p,
    )
}

/// A job state's name as `--state` takes it (`queued`, ..., `cancelled`);
/// `unspecified` for 0, the raw number for a value outside the enum.
fn state_name(s: i32) -> String {
    enum_word(
        pb::JobState::try_from(s).ok().map(|s| s.as_str_name()),
        "JOB_STATE_",
        s,
    )
}

/// A proto enum value's name without its `prefix`, in lower case
/// (`PRIORITY_HIGH`: `high`); `raw` itself when the value is not in the
/// enum (`name` is `None`).
fn enum_word(name: Option<&str>, prefix: &str, raw: i32) -> String {
    name.map_or_else(
        || raw.to_string(),
        |n| n.trim_start_matches(prefix).to_lowercase(),
    )
}

/// Jobs matching `states` (empty: all) and `circuit` (empty: all), newest
/// first, following ListJobs's pages until `limit` jobs; and whether more
/// match beyond them.
async fn list_jobs(
    c: &mut Client,
    states: &[StateArg],
    circuit: String,
    limit: u32,
) -> Result<(Vec<pb::ProofResult>, bool)> {
    let states: Vec<i32> = states
        .iter()
        .map(|&s| pb::JobState::from(s) as i32)
        .collect();
    let mut jobs = Vec::new();
    let mut page_token = String::new();
    loop {
        let want = (limit as usize).saturating_sub(jobs.len()).min(1000) as u32;
        let r = c
            .list_jobs(pb::ListJobsRequest {
                states: states.clone(),
                circuit_id: circuit.clone(),
                limit: want,
                page_token,
            })
            .await?
            .into_inner();
        jobs.extend(r.jobs);
        if r.next_page_token.is_empty() {
            return Ok((jobs, false));
        }
        if jobs.len() >= limit as usize {
            jobs.truncate(limit as usize);
            return Ok((jobs, true));
        }
        page_token = r.next_page_token;
    }
}

/// A job as JSON for `job --json` and `jobs --json`: the ProofResult's
/// fields by their proto names, state and priority by name, `timings`
/// null until done, without the proof.
fn job_json(r: &pb::ProofResult) -> serde_json::Value {
    let timings = r.timings.map(|t| {
        serde_json::json!({
            "eval_ms": t.eval_ms,
            "h_ntt_ms": t.h_ntt_ms,
            "msm_a_ms": t.msm_a_ms,
            "msm_b_g2_ms": t.msm_b_g2_ms,
            "msm_b_g1_ms": t.msm_b_g1_ms,
            "msm_h_ms": t.msm_h_ms,
            "msm_l_ms": t.msm_l_ms,
            "assembly_ms": t.assembly_ms,
            "total_ms": t.total_ms,
            "load_ms": t.load_ms,
            "queue_wait_ms": t.queue_wait_ms,
        })
    });
    serde_json::json!({
        "job_id": r.job_id,
        "state": state_name(r.state),
        "priority": priority_name(r.priority),
        "circuit_id": r.circuit_id,
        "attempts": r.attempts,
        "worker": r.worker,
        // -1 is the CPU path once done; before, no device yet.
        "device": (r.state == pb::JobState::Done as i32).then_some(r.device),
        "submitted_unix_us": r.submitted_unix_us,
        "started_unix_us": r.started_unix_us,
        "finished_unix_us": r.finished_unix_us,
        "error": r.error,
        "timings": timings,
    })
}

/// Microseconds since the Unix epoch now.
fn now_unix_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

/// How long ago `us` (microseconds since the Unix epoch) was, in its two
/// largest units: `42s`, `5m 12s`, `3h 04m`, `2d 07h`; `-` for 0 (not yet).
fn age(us: i64, now_us: i64) -> String {
    if us == 0 {
        return "-".into();
    }
    let s = (now_us - us).max(0) / 1_000_000;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m {:02}s", s / 60, s % 60),
        3600..86400 => format!("{}h {:02}m", s / 3600, s % 3600 / 60),
        _ => format!("{}d {:02}h", s / 86400, s % 86400 / 3600),
    }
}

/// `us` (microseconds since the Unix epoch) as UTC,
/// `YYYY-MM-DD HH:MM:SS.mmmZ`; the number itself where it is past
/// chrono's range.
fn utc(us: i64) -> String {
    chrono::DateTime::from_timestamp_micros(us).map_or_else(
        || format!("{us} µs since the Unix epoch"),
        |t| t.format("%Y-%m-%d %H:%M:%S%.3fZ").to_string(),
    )
}

/// `cuzk job`'s report: one field a line.
fn job_details(r: &pb::ProofResult) {
    let now = now_unix_us();
    let when = |us: i64| {
        if us == 0 {
            "-".to_string()
        } else {
            format!("{} ({} ago)", utc(us), age(us, now))
        }
    };
    say!("job:       {}", r.job_id);
    say!("state:     {}", state_name(r.state));
    say!("priority:  {}", priority_name(r.priority));
    say!("circuit:   {}", r.circuit_id);
    say!("attempts:  {}", r.attempts);
    let done = r.state == pb::JobState::Done as i32;
    // The worker that took it last; the device is set once it is done.
    say!(
        "worker:    {}",
        if r.worker.is_empty() { "-" } else { &r.worker }
    );
    match r.device {
        _ if !done => say!("device:    -"),
        -1 => say!("device:    CPU path"),
        d => say!("device:    GPU {d}"),
    }
    say!("submitted: {}", when(r.submitted_unix_us));
    say!("started:   {}", when(r.started_unix_us));
    say!("finished:  {}", when(r.finished_unix_us));
    if let Some(t) = r.timings.filter(|_| done) {
        say!("queue:     {:.1} ms waiting for a worker", t.queue_wait_ms);
        say!(
            "prover:    {:.1} ms: load {:.1}, eval {:.1}, H/NTT {:.1}, MSM A {:.1}, B(G2) {:.1}, \
             B(G1) {:.1}, H {:.1}, L {:.1}, assembly {:.1}",
            t.total_ms,
            t.load_ms,
            t.eval_ms,
            t.h_ntt_ms,
            t.msm_a_ms,
            t.msm_b_g2_ms,
            t.msm_b_g1_ms,
            t.msm_h_ms,
            t.msm_l_ms,
            t.assembly_ms
        );
        say!(
            "proof:     {} bytes (`cuzk await {} --out FILE` writes it)",
            r.proof.len(),
            r.job_id
        );
    }
    if r.state == pb::JobState::Failed as i32 {
        say!("error:     {}", r.error);
    } else if !r.error.is_empty() {
        // The error of an attempt a daemon gave back (a GPU fault): the
        // job was queued again.
        say!("retried after: {}", r.error);
    }
}

/// `cuzk jobs`'s table.
fn jobs_table(jobs: &[pb::ProofResult]) {
    let now = now_unix_us();
    let mut t = comfy_table::Table::new();
    t.set_header([
        "job",
        "circuit",
        "state",
        "priority",
        "attempts",
        "submitted (ago)",
        "proof ms",
    ]);
    for r in jobs {
        let proof_ms = match r.timings {
            Some(t) if r.state == pb::JobState::Done as i32 => format!("{:.1}", t.total_ms),
            _ => "-".into(),
        };
        t.add_row([
            r.job_id.clone(),
            r.circuit_id.clone(),
            state_name(r.state),
            priority_name(r.priority),
            r.attempts.to_string(),
            age(r.submitted_unix_us, now),
            proof_ms,
        ]);
    }
    if !jobs.is_empty() {
        say!("{t}");
    }
    say!("{} jobs", jobs.len());
}

/// `cuzk status --json`: the GetStatus response's fields by their proto
/// names, classes by name.
fn status_json(s: &pb::GetStatusResponse) -> serde_json::Value {
    let devices: Vec<_> = s
        .devices
        .iter()
        .map(|d| {
            serde_json::json!({
                "ordinal": d.ordinal,
                "name": d.name,
                "workers": d.workers,
                "busy_workers": d.busy_workers,
                "proofs_done": d.proofs_done,
                "memory_total_bytes": d.memory_total_bytes,
                "memory_available_bytes": d.memory_available_bytes,
                "busy_fraction": d.busy_fraction,
            })
        })
        .collect();
    let keys: Vec<_> = s
        .keys
        .iter()
        .map(|k| {
            serde_json::json!({
                "circuit_id": k.circuit_id,
                "host_bytes": k.host_bytes,
                "in_use": k.in_use,
                "num_constraints": k.num_constraints,
                "load_ms": k.load_ms,
            })
        })
        .collect();
    let queues: Vec<_> = s
        .queues
        .iter()
        .map(|q| {
            serde_json::json!({
                "priority": priority_name(q.priority),
                "queued": q.queued,
                "running": q.running,
                "claimed_ahead": q.claimed_ahead,
            })
        })
        .collect();
    serde_json::json!({
        "version": s.version,
        "worker": s.worker,
        "uptime_s": s.uptime_s,
        "store": s.store,
        "devices": devices,
        "keys": keys,
        "key_host_bytes": s.key_host_bytes,
        "key_host_budget_bytes": s.key_host_budget_bytes,
        "queues": queues,
        "done": s.done,
        "failed": s.failed,
        "cancelled": s.cancelled,
        "circuits": s.circuits,
    })
}

fn status_table(s: &pb::GetStatusResponse) {
    say!(
        "cuzk-daemon {} ({}), up {:.0} s, store {}",
        s.version,
        s.worker,
        s.uptime_s,
        s.store
    );
    let mut t = comfy_table::Table::new();
    t.set_header([
        "device",
        "name",
        "workers",
        "busy",
        "proofs",
        "busy %",
        "budget available / card (GiB)",
    ]);
    for d in &s.devices {
        t.add_row([
            d.ordinal.to_string(),
            d.name.clone(),
            d.workers.to_string(),
            d.busy_workers.to_string(),
            d.proofs_done.to_string(),
            format!("{:.1}", 100.0 * d.busy_fraction),
            if d.memory_total_bytes == 0 {
                // The CPU lane has no device memory.
                "n/a".to_string()
            } else {
                format!(
                    "{:.2} / {:.2}",
                    d.memory_available_bytes as f64 / (1u64 << 30) as f64,
                    d.memory_total_bytes as f64 / (1u64 << 30) as f64
                )
            },
        ]);
    }
    say!("{t}");
    let mut q = comfy_table::Table::new();
    // Claimed ahead: taken by a worker to prove after its current job.
    q.set_header(["class", "queued", "running", "claimed ahead"]);
    for c in &s.queues {
        q.add_row([
            priority_name(c.priority),
            c.queued.to_string(),
            c.running.to_string(),
            c.claimed_ahead.to_string(),
        ]);
    }
    say!("{q}");
    say!(
        "jobs ended: {} done, {} failed, {} cancelled",
        s.done,
        s.failed,
        s.cancelled
    );
    say!(
        "keys: {} loaded, {:.2} of {:.2} GiB host budget; circuits: {}",
        s.keys.len(),
        s.key_host_bytes as f64 / (1u64 << 30) as f64,
        s.key_host_budget_bytes as f64 / (1u64 << 30) as f64,
        s.circuits.join(", ")
    );
}

/// Refuses to write circuit `id` under `key_dir` over an existing key
/// unless `force`: a daemon with the old key loaded would go on proving
/// with it, and its proofs would not verify against the new `vk.bin`.
fn refuse_overwrite(key_dir: &std::path::Path, id: &str, force: bool) -> Result<()> {
    let pk = key_dir.join(id).join("pk.bin");
    if pk.exists() && !force {
        bail!(
            "{} exists: circuit `{id}` already has a key, which a running daemon may have \
             loaded. Give --force to write a new one (then `cuzk evict {id}` on every daemon \
             that has it loaded), or another --id",
            pk.display()
        );
    }
    Ok(())
}

fn parse_preimage(h: &str) -> Result<[u8; 32]> {
    let v = hex::decode(h).context("--preimage: not hex")?;
    v.try_into()
        .map_err(|v: Vec<u8>| anyhow::anyhow!("--preimage: {} bytes, give 32", v.len()))
}

/// `e`, with a refusal for want of the right token said plainly, and a
/// plain-gRPC call that a TLS daemon could not understand.
fn explain(e: anyhow::Error, conn: &Connection) -> anyhow::Error {
    let (addr, token_file) = (conn.addr.as_str(), conn.token_file.as_deref());
    match e.downcast_ref::<tonic::Status>() {
        Some(s) if s.code() == tonic::Code::Unauthenticated => {
            let fix = match token_file {
                None => "give --token-file PATH, a file holding the daemon's token".to_string(),
                Some(p) => format!("the token in {} is not the daemon's", p.display()),
            };
            anyhow::anyhow!(
                "cuzk-daemon at {addr} refused the request (UNAUTHENTICATED): {fix}. The \
                 daemon said: {}",
                s.message()
            )
        }
        // A daemon serving TLS answers a plain HTTP/2 preface with a TLS
        // alert and closes the connection: the call fails in the client's
        // transport (a protocol error, a broken pipe or a cancelled call,
        // as the timing falls), not with a status from the daemon.
        Some(s)
            if !conn.is_https()
                && !addr.starts_with("unix:")
                && std::error::Error::source(s)
                    .is_some_and(|c| c.is::<tonic::transport::Error>()) =>
        {
            anyhow::anyhow!(
                "the connection to cuzk-daemon at {addr} broke off ({}): if the daemon serves \
                 TLS (--tls-cert-file), give --addr https://HOST:PORT (with --tls-ca-file PATH \
                 for a private CA)",
                error_chain(s)
            )
        }
        _ => e,
    }
}

/// Runs the command; an error is printed as one line of its causes
/// (`{:#}`), never with a backtrace, with exit status 1 (`await` and
/// `prove` exit 3 when their --timeout-ms passes; clap exits 2 for a bad
/// flag).
fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let conn = cli.conn.clone();
    let run = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| anyhow::anyhow!("starting the async runtime: {e}"))
        .and_then(|rt| rt.block_on(run(cli)));
    match run.map_err(|e| explain(e, &conn)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cuzk: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Runs `cli`'s subcommand.
async fn run(cli: Cli) -> Result<()> {
    match cli.cmd {
        Cmd::Submit(a) => {
            let mut c = client(&cli.conn).await?;
            say!("{}", submit(&mut c, &a).await?);
        }
        Cmd::Await {
            job,
            timeout_ms,
            out,
        } => {
            check_out(out.as_deref())?;
            let mut c = client(&cli.conn).await?;
            await_and_report(&mut c, job, timeout_ms, out.as_ref()).await?;
        }
        Cmd::Prove {
            submit: a,
            timeout_ms,
            out,
        } => {
            check_out(out.as_deref())?;
            let mut c = client(&cli.conn).await?;
            let job = submit(&mut c, &a).await?;
            await_and_report(&mut c, job, timeout_ms, out.as_ref()).await?;
        }
        Cmd::Cancel { job } => {
            let mut c = client(&cli.conn).await?;
            let r = c
                .cancel_proof(pb::CancelProofRequest { job_id: job })
                .await?
                .into_inner();
            let s = pb::JobState::try_from(r.state).unwrap_or(pb::JobState::Unspecified);
            match s {
                pb::JobState::Cancelled => say!("cancelled"),
                pb::JobState::Running => {
                    say!("cancellation requested: the running proof is discarded when it completes")
                }
                other => say!(
                    "not cancelled: the job had already ended ({})",
                    state_words(other)
                ),
            }
        }
        Cmd::Job { job, json } => {
            let mut c = client(&cli.conn).await?;
            let r = c
                .get_job(pb::GetJobRequest { job_id: job })
                .await?
                .into_inner();
            if json {
                let mut v = job_json(&r);
                v["proof_bytes"] = r.proof.len().into();
                say!("{}", serde_json::to_string_pretty(&v)?);
            } else {
                job_details(&r);
            }
        }
        Cmd::Jobs {
            state,
            circuit,
            limit,
            json,
        } => {
            let mut c = client(&cli.conn).await?;
            let (jobs, more) =
                list_jobs(&mut c, &state, circuit.unwrap_or_default(), limit).await?;
            if json {
                let v: Vec<serde_json::Value> = jobs.iter().map(job_json).collect();
                say!("{}", serde_json::to_string_pretty(&v)?);
            } else {
                jobs_table(&jobs);
            }
            if more {
                eprintln!("more jobs match than --limit {limit}: raise --limit to see them");
            }
        }
        Cmd::Status { json, raw } => {
            let mut c = client(&cli.conn).await?;
            let s = c.get_status(pb::GetStatusRequest {}).await?.into_inner();
            if json {
                say!("{}", serde_json::to_string_pretty(&status_json(&s))?);
            } else if raw {
                say!("{s:#?}");
            } else {
                status_table(&s);
            }
        }
        Cmd::Preload { circuit } => {
            let mut c = client(&cli.conn).await?;
            let r = c
                .preload_key(pb::PreloadKeyRequest {
                    circuit_id: circuit,
                })
                .await?
                .into_inner();
            if let Some(k) = r.key {
                say!(
                    "{}: {} constraints, {:.2} GiB host, loaded in {:.0} ms",
                    k.circuit_id,
                    k.num_constraints,
                    k.host_bytes as f64 / (1u64 << 30) as f64,
                    k.load_ms
                );
            }
        }
        Cmd::Evict { circuit } => {
            let mut c = client(&cli.conn).await?;
            let r = c
                .evict_key(pb::EvictKeyRequest {
                    circuit_id: circuit,
                })
                .await?
                .into_inner();
            say!("{}", if r.evicted { "evicted" } else { "not loaded" });
        }
        Cmd::Keygen {
            key_dir,
            id,
            porep_log_domain: Some(log),
            seed,
            force,
            ..
        } => {
            let id = id.unwrap_or_else(|| format!("porep-2^{log}"));
            circuits::check_id(&id)?;
            refuse_overwrite(&key_dir, &id, force)?;
            let dir = circuits::keygen_porep(&key_dir, &id, log, seed, &mut rand::rngs::OsRng)?;
            say!(
                "{}: PoRep-shaped, 2^{log} domain, random-point key (proofs do not verify)",
                dir.display()
            );
        }
        Cmd::WitnessPorep {
            log_domain,
            seed,
            partition,
            out,
        } => {
            let a = circuits::porep_witness(log_domain, seed, partition)?;
            a.write_file(&out)?;
            say!(
                "{}: {} public inputs, {} witness values",
                out.display(),
                a.public.len(),
                a.witness.len()
            );
        }
        Cmd::Keygen {
            key_dir,
            id,
            rounds,
            force,
            ..
        } => {
            let id = id.unwrap_or_else(|| format!("sha256-chain-{rounds}"));
            circuits::check_id(&id)?;
            refuse_overwrite(&key_dir, &id, force)?;
            let circuit = Sha256Chain::new([0u8; 32], rounds);
            let syn = cuzk_prover::synthesize(circuit.clone(), false)?;
            let dir = circuits::keygen(&key_dir, &id, circuit, &syn, &mut rand::rngs::OsRng)?;
            say!(
                "{}: {} constraints, {} public inputs",
                dir.display(),
                syn.matrices.num_constraints,
                syn.num_inputs - 1
            );
        }
        Cmd::Witness {
            rounds,
            preimage,
            out,
        } => {
            let circuit = Sha256Chain::new(parse_preimage(&preimage)?, rounds);
            let syn = cuzk_prover::synthesize(circuit, true)?;
            let a = Assignment::from_full(&syn.full_assignment, syn.num_inputs)?;
            a.write_file(&out)?;
            say!(
                "{}: {} public inputs, {} witness values",
                out.display(),
                a.public.len(),
                a.witness.len()
            );
        }
        Cmd::Verify {
            circuit_dir,
            proof,
            assignment,
        } => {
            let vk = circuits::read_vk(&circuit_dir)?;
            let bytes =
                std::fs::read(&proof).with_context(|| format!("reading {}", proof.display()))?;
            let p = cuzk_prover::Proof::deserialize_compressed(&bytes[..])
                .context("not a compressed Groth16 proof")?;
            let a = Assignment::read_file(&assignment)?;
            let pvk = ark_groth16::prepare_verifying_key(&vk);
            let ok = ark_groth16::Groth16::<ark_bls12_381::Bls12_381>::verify_proof(
                &pvk, &p, &a.public,
            )?;
            if !ok {
                bail!("the proof does not verify");
            }
            say!("the proof verifies");
        }
    }
    Ok(())
}
