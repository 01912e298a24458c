//! The gRPC layer: each call of `proto/cuzk/v1/prover.proto` mapped onto
//! the [`Engine`], and the server that listens on TCP (plain or TLS) or a
//! Unix socket.

use crate::engine::{Payload, Submit};
use crate::job::{JobRecord, JobState, Priority};
use crate::store::{JobCursor, JobFilter};
use crate::{pb, Engine, Error, Timings};
use std::sync::Arc;
use std::time::Duration;
use tonic::{Request, Response, Status, Streaming};

/// The Prover service over an engine.
#[derive(Clone, Debug)]
pub struct ProverService {
    engine: Arc<Engine>,
}

impl ProverService {
    /// The service of `engine`.
    pub fn new(engine: Arc<Engine>) -> Self {
        ProverService { engine }
    }

    fn timeout(&self, ms: u64) -> Duration {
        Duration::from_millis(if ms == 0 {
            self.engine.config().await_timeout_ms
        } else {
            ms
        })
    }

    async fn submit(&self, r: pb::SubmitProofRequest) -> Result<(String, bool), Status> {
        let payload = match r.assignment {
            Some(pb::submit_proof_request::Assignment::Inline(b)) => Payload::Bytes(b),
            Some(pb::submit_proof_request::Assignment::Path(p)) => Payload::Path(p.into()),
            None => {
                return Err(Status::invalid_argument(
                    "no assignment: set inline (bytes) or path",
                ))
            }
        };
        Ok(self
            .engine
            .submit(Submit {
                circuit_id: r.circuit_id,
                priority: priority(r.priority)?,
                idempotency_key: Some(r.idempotency_key),
                payload,
            })
            .await?)
    }
}

/// A request's priority: PRIORITY_UNSPECIFIED (0) is normal, a value
/// outside the enum an error rather than a silent default.
fn priority(p: i32) -> Result<Priority, Status> {
    match pb::Priority::try_from(p) {
        Ok(pb::Priority::Unspecified) => Ok(Priority::Normal),
        Ok(v) => Ok(v.into()),
        Err(_) => Err(Status::invalid_argument(format!(
            "priority {p}: give 1 (low), 2 (normal), 3 (high) or 4 (critical); 0 is normal"
        ))),
    }
}

/// A ListJobs state filter's value: the JobState enum's states, never
/// JOB_STATE_UNSPECIFIED (which matches no job: a client that sent it
/// meant something else).
fn state(s: i32) -> Result<JobState, Status> {
    match pb::JobState::try_from(s) {
        Ok(pb::JobState::Queued) => Ok(JobState::Queued),
        Ok(pb::JobState::Running) => Ok(JobState::Running),
        Ok(pb::JobState::Done) => Ok(JobState::Done),
        Ok(pb::JobState::Failed) => Ok(JobState::Failed),
        Ok(pb::JobState::Cancelled) => Ok(JobState::Cancelled),
        Ok(pb::JobState::Unspecified) | Err(_) => Err(Status::invalid_argument(format!(
            "state {s}: give 1 (queued), 2 (running), 3 (done), 4 (failed) or 5 (cancelled), \
             or no state for every job"
        ))),
    }
}

/// A job row as a ProofResult (the proof included when the row has it).
pub fn result(j: &JobRecord) -> pb::ProofResult {
    let timings: Option<Timings> = j
        .timings
        .as_deref()
        .and_then(|t| serde_json::from_str(t).ok());
    pb::ProofResult {
        job_id: j.id.clone(),
        state: pb::JobState::from(j.state) as i32,
        proof: j.proof.clone().unwrap_or_default(),
        timings: timings.map(Into::into),
        device: j.device.unwrap_or(-1) as i32,
        error: j.error.clone().unwrap_or_default(),
        circuit_id: j.circuit_id.clone(),
        worker: j.worker.clone().unwrap_or_default(),
        submitted_unix_us: j.submitted_us,
        started_unix_us: j.started_us.unwrap_or(0),
        finished_unix_us: j.finished_us.unwrap_or(0),
        attempts: j.attempts as u32,
        priority: pb::Priority::from(j.priority) as i32,
    }
}

#[tonic::async_trait]
impl pb::prover_server::Prover for ProverService {
    async fn submit_proof(
        &self,
        req: Request<pb::SubmitProofRequest>,
    ) -> Result<Response<pb::SubmitProofResponse>, Status> {
        let (job_id, duplicate) = self.submit(req.into_inner()).await?;
        Ok(Response::new(pb::SubmitProofResponse { job_id, duplicate }))
    }

    async fn submit_proof_stream(
        &self,
        req: Request<Streaming<pb::SubmitProofChunk>>,
    ) -> Result<Response<pb::SubmitProofResponse>, Status> {
        use tokio::io::AsyncWriteExt;
        let mut s = req.into_inner();
        let header = match s.message().await? {
            Some(pb::SubmitProofChunk {
                part: Some(pb::submit_proof_chunk::Part::Header(h)),
            }) => h,
            _ => {
                return Err(Status::invalid_argument(
                    "the first message of SubmitProofStream must be the header",
                ))
            }
        };
        self.engine
            .check_stream(&header.circuit_id, header.assignment_bytes)?;
        let prio = priority(header.priority)?;
        let dir = self.engine.payload_dir();
        let tmp = dir.join(format!("{}.partial", uuid::Uuid::new_v4()));
        let io =
            |e: std::io::Error| Status::from(Error::io(format!("writing {}", tmp.display()), e));
        let mut f = tokio::fs::File::create(&tmp).await.map_err(io)?;
        let mut got = 0u64;
        // The digest matters only to an idempotency key.
        let mut hasher = (!header.idempotency_key.is_empty()).then(blake3::Hasher::new);
        let body = async {
            while let Some(chunk) = s.message().await? {
                match chunk.part {
                    Some(pb::submit_proof_chunk::Part::Data(d)) => {
                        got += d.len() as u64;
                        if got > header.assignment_bytes {
                            return Err(Status::invalid_argument(format!(
                                "more than the {} assignment bytes the header announced",
                                header.assignment_bytes
                            )));
                        }
                        if let Some(h) = hasher.as_mut() {
                            h.update(&d);
                        }
                        f.write_all(&d).await.map_err(io)?;
                    }
                    _ => {
                        return Err(Status::invalid_argument(
                            "a second header in SubmitProofStream",
                        ))
                    }
                }
            }
            if got != header.assignment_bytes {
                return Err(Status::invalid_argument(format!(
                    "the stream ended after {got} of the {} assignment bytes the header \
                     announced",
                    header.assignment_bytes
                )));
            }
            f.sync_all().await.map_err(io)?;
            Ok(())
        }
        .await;
        if let Err(e) = body {
            let _ = tokio::fs::remove_file(&tmp).await;
            return Err(e);
        }
        let r = self
            .engine
            .submit(Submit {
                circuit_id: header.circuit_id,
                priority: prio,
                idempotency_key: Some(header.idempotency_key),
                payload: Payload::Owned(tmp.clone(), hasher.map(|h| h.finalize())),
            })
            .await;
        if r.is_err() {
            let _ = tokio::fs::remove_file(&tmp).await;
        }
        let (job_id, duplicate) = r?;
        Ok(Response::new(pb::SubmitProofResponse { job_id, duplicate }))
    }

    async fn await_proof(
        &self,
        req: Request<pb::AwaitProofRequest>,
    ) -> Result<Response<pb::ProofResult>, Status> {
        let r = req.into_inner();
        let j = self
            .engine
            .wait(&r.job_id, self.timeout(r.timeout_ms))
            .await?;
        Ok(Response::new(result(&j)))
    }

    async fn prove(
        &self,
        req: Request<pb::ProveRequest>,
    ) -> Result<Response<pb::ProofResult>, Status> {
        let r = req.into_inner();
        let submit = r
            .submit
            .ok_or_else(|| Status::invalid_argument("Prove without its submit request"))?;
        let (id, _) = self.submit(submit).await?;
        let j = self.engine.wait(&id, self.timeout(r.timeout_ms)).await?;
        Ok(Response::new(result(&j)))
    }

    async fn get_job(
        &self,
        req: Request<pb::GetJobRequest>,
    ) -> Result<Response<pb::ProofResult>, Status> {
        let j = self.engine.job(&req.into_inner().job_id).await?;
        Ok(Response::new(result(&j)))
    }

    async fn list_jobs(
        &self,
        req: Request<pb::ListJobsRequest>,
    ) -> Result<Response<pb::ListJobsResponse>, Status> {
        let r = req.into_inner();
        let filter = JobFilter {
            states: r
                .states
                .iter()
                .map(|&s| state(s))
                .collect::<Result<_, _>>()?,
            circuit_id: Some(r.circuit_id).filter(|c| !c.is_empty()),
            after: if r.page_token.is_empty() {
                None
            } else {
                Some(JobCursor::from_token(&r.page_token)?)
            },
        };
        let (jobs, next) = self.engine.list_jobs(&filter, r.limit).await?;
        Ok(Response::new(pb::ListJobsResponse {
            // The store leaves the proofs out: `proof` stays empty.
            jobs: jobs.iter().map(result).collect(),
            next_page_token: next.map(|c| c.to_token()).unwrap_or_default(),
        }))
    }

    async fn cancel_proof(
        &self,
        req: Request<pb::CancelProofRequest>,
    ) -> Result<Response<pb::CancelProofResponse>, Status> {
        let s = self.engine.cancel(&req.into_inner().job_id).await?;
        Ok(Response::new(pb::CancelProofResponse {
            state: pb::JobState::from(s) as i32,
        }))
    }

    async fn get_status(
        &self,
        _: Request<pb::GetStatusRequest>,
    ) -> Result<Response<pb::GetStatusResponse>, Status> {
        Ok(Response::new(self.engine.status().await?))
    }

    async fn preload_key(
        &self,
        req: Request<pb::PreloadKeyRequest>,
    ) -> Result<Response<pb::PreloadKeyResponse>, Status> {
        let key = self.engine.preload(&req.into_inner().circuit_id).await?;
        Ok(Response::new(pb::PreloadKeyResponse { key: Some(key) }))
    }

    async fn evict_key(
        &self,
        req: Request<pb::EvictKeyRequest>,
    ) -> Result<Response<pb::EvictKeyResponse>, Status> {
        let evicted = self.engine.evict(&req.into_inner().circuit_id).await?;
        Ok(Response::new(pb::EvictKeyResponse { evicted }))
    }
}

/// The daemon's sockets, bound before its engine starts
/// ([`Listeners::bind`]), so that a taken address fails the start before
/// any job is claimed: the gRPC listener (TCP, or a Unix socket that this
/// daemon removes when it stops) and, with `metrics_listen`, the metrics
/// endpoint's.
#[derive(Debug)]
pub struct Listeners {
    grpc: Grpc,
    metrics: Option<tokio::net::TcpListener>,
}

#[derive(Debug)]
enum Grpc {
    Tcp(tokio::net::TcpListener),
    /// The socket's path and its inode, to remove it at the end only while
    /// it is still this daemon's.
    Unix(tokio::net::UnixListener, std::path::PathBuf, u64),
}

impl Listeners {
    /// Binds `config.listen` and `config.metrics_listen` (if set). A Unix
    /// socket path where a socket nobody answers on is left (a daemon that
    /// was killed) is taken over; one where a server answers, or any other
    /// kind of file, is refused.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a malformed address;
    /// [`Error::FailedPrecondition`] when another process serves on the
    /// Unix socket's path or the path is not a socket; [`Error::Io`] naming
    /// the address when it cannot be bound (in use, no permission).
    pub async fn bind(config: &crate::Config) -> crate::Result<Self> {
        config.validate()?;
        let listen = config.listen.trim();
        let grpc = if let Some(path) = listen.strip_prefix("unix:") {
            let path = std::path::PathBuf::from(path);
            take_stale_socket(&path)?;
            let uds = tokio::net::UnixListener::bind(&path)
                .map_err(|e| Error::io(format!("binding unix socket {}", path.display()), e))?;
            let ino = socket_inode(&path).unwrap_or(0);
            Grpc::Unix(uds, path, ino)
        } else {
            Grpc::Tcp(
                tokio::net::TcpListener::bind(listen)
                    .await
                    .map_err(|e| Error::io(format!("binding {listen}"), e))?,
            )
        };
        let metrics = if config.metrics_listen.is_empty() {
            None
        } else {
            let addr = config.metrics_listen.trim();
            Some(
                tokio::net::TcpListener::bind(addr)
                    .await
                    .map_err(|e| Error::io(format!("binding the metrics endpoint {addr}"), e))?,
            )
        };
        Ok(Listeners { grpc, metrics })
    }
}

fn socket_inode(path: &std::path::Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path).ok().map(|m| m.ino())
}

/// Makes way for a Unix socket at `path`: nothing there, or a socket no
/// server answers on (removed). Refuses a live socket and any other file.
fn take_stale_socket(path: &std::path::Path) -> crate::Result<()> {
    use std::os::unix::fs::FileTypeExt;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    if !meta.file_type().is_socket() {
        return Err(Error::FailedPrecondition(format!(
            "listen unix:{}: the path exists and is not a socket; give a path that does not \
             exist (the daemon creates the socket)",
            path.display()
        )));
    }
    if std::os::unix::net::UnixStream::connect(path).is_ok() {
        return Err(Error::FailedPrecondition(format!(
            "listen unix:{}: another process serves on this socket (a cuzk-daemon already \
             running?); stop it or give another path",
            path.display()
        )));
    }
    std::fs::remove_file(path)
        .map_err(|e| Error::io(format!("removing the stale socket {}", path.display()), e))
}

/// Serves the Prover service (and, with `metrics_listen`, the metrics)
/// on the engine's `listen` address until `stop` resolves, then shuts the
/// engine down: [`Listeners::bind`] then [`serve_bound`]. A daemon binds
/// its listeners before [`Engine::start`] instead, so that a taken address
/// fails before any job is claimed.
///
/// # Errors
/// Those of [`Listeners::bind`] and [`serve_bound`].
pub async fn serve(
    engine: Arc<Engine>,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> crate::Result<()> {
    let listeners = Listeners::bind(engine.config()).await?;
    serve_bound(engine, listeners, stop).await
}

/// Serves the Prover service on `listeners` (bound from the engine's
/// configuration) until `stop` resolves, then shuts the engine down
/// (running proofs get `shutdown_grace_secs`) and removes its Unix socket.
/// With the engine's [`Engine::auth_token`], every Prover call without it
/// gets UNAUTHENTICATED ([`crate::auth::RequireToken`]); the metrics
/// endpoint needs none. With the engine's [`Engine::tls`], the TCP listener
/// serves gRPC over TLS (requiring client certificates with
/// `tls_client_ca_file`); a token on an address other hosts can reach
/// without TLS is served, with a warning that it travels in clear.
///
/// # Errors
/// [`Error::InvalidArgument`] when the TLS settings cannot be used;
/// [`Error::Internal`] when the server fails; [`Error::Unavailable`] when
/// proofs were still running as the shutdown grace passed (the daemon
/// stopped all the same).
pub async fn serve_bound(
    engine: Arc<Engine>,
    listeners: Listeners,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> crate::Result<()> {
    let (tx, rx) = tokio::sync::watch::channel(false);
    let e = engine.clone();
    tokio::spawn(async move {
        stop.await;
        // Stop taking jobs and release AwaitProof calls before the server
        // waits for its calls to end.
        e.begin_shutdown();
        let _ = tx.send(true);
    });
    let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };
    // The metrics endpoint serves until the engine has stopped, so that
    // its /healthz answers 503 through the shutdown.
    let (metrics_tx, metrics_rx) = tokio::sync::watch::channel(false);
    let metrics = listeners.metrics.map(|listener| {
        match listener.local_addr() {
            Ok(addr) => tracing::info!(%addr, "serving metrics at /metrics and health at /healthz"),
            Err(e) => tracing::warn!("the metrics endpoint's address: {e}"),
        }
        let e = engine.clone();
        let stop = stopped(metrics_rx);
        tokio::spawn(async move { crate::metrics::serve_on(e, listener, stop).await })
    });
    // A message holds an inline assignment (up to max_inline_bytes) or a
    // stream's chunk (the cuzk client's are 4 MiB), whatever
    // max_inline_bytes is, and 1 MiB for the rest of the message.
    let max = (engine.config().max_inline_bytes as usize).max(8 << 20) + (1 << 20);
    let svc = pb::prover_server::ProverServer::new(ProverService::new(engine.clone()))
        .max_decoding_message_size(max)
        .max_encoding_message_size(max);
    let svc = tonic::service::interceptor::InterceptedService::new(
        svc,
        crate::auth::RequireToken::new(engine.auth_token().cloned()),
    );
    let listen = engine.config().listen.clone();
    let is_unix = matches!(listeners.grpc, Grpc::Unix(..));
    let mut server = tonic::transport::Server::builder();
    // Config::validate refuses TLS with a Unix socket; TCP only here.
    let tls = engine.tls().filter(|_| !is_unix);
    if let Some(t) = tls {
        server = server.tls_config(t.server_config()).map_err(|e| {
            Error::InvalidArgument(format!("the TLS settings: {}", crate::tls::error_chain(&e)))
        })?;
    }
    let client_certs = tls.is_some_and(|t| t.requires_client_certificates());
    let router = server.add_service(svc);
    let reachable = !engine.config().listen_is_local();
    if engine.auth_token().is_none() && reachable && !client_certs {
        tracing::warn!(
            addr = %listen,
            "serving gRPC without a token on an address other hosts can reach \
             (allow_unauthenticated): anyone who can connect can submit and cancel jobs"
        );
    }
    if engine.auth_token().is_some() && reachable && tls.is_none() {
        tracing::warn!(
            addr = %listen,
            "the bearer token travels in clear: this address can be reached from other hosts \
             and gRPC is served without TLS, so anyone on the path can read the token. Give \
             --tls-cert-file PATH and --tls-key-file PATH (tls_cert_file, tls_key_file)"
        );
    }
    let (served, unix) = match listeners.grpc {
        Grpc::Unix(uds, path, ino) => {
            tracing::info!(
                socket = %path.display(),
                token = engine.auth_token().is_some(),
                "serving gRPC"
            );
            let served = router
                .serve_with_incoming_shutdown(
                    tokio_stream::wrappers::UnixListenerStream::new(uds),
                    stopped(rx.clone()),
                )
                .await;
            (served, Some((path, ino)))
        }
        Grpc::Tcp(l) => {
            tracing::info!(
                addr = %listen,
                token = engine.auth_token().is_some(),
                tls = tls.is_some(),
                client_certificates = client_certs,
                "serving gRPC"
            );
            let served = router
                .serve_with_incoming_shutdown(
                    tokio_stream::wrappers::TcpListenerStream::new(l),
                    stopped(rx.clone()),
                )
                .await;
            (served, None)
        }
    };
    // The socket file, unless another process has replaced it since.
    if let Some((path, ino)) = unix {
        if socket_inode(&path) == Some(ino) {
            let _ = std::fs::remove_file(&path);
        }
    }
    if let Err(e) = served {
        engine.begin_shutdown();
        let _ = metrics_tx.send(true);
        return Err(Error::Internal(format!("gRPC server: {e}")));
    }
    let grace = engine.config().shutdown_grace_secs;
    tracing::info!(
        grace_secs = grace,
        "stopping: waiting for running proofs (shutdown_grace_secs)"
    );
    let running = engine.shutdown(Duration::from_secs(grace)).await;
    let _ = metrics_tx.send(true);
    if let Some(m) = metrics {
        match m.await {
            Ok(Err(e)) => tracing::warn!("the metrics endpoint: {e}"),
            Err(e) => tracing::warn!("the metrics endpoint's task: {e}"),
            Ok(Ok(())) => {}
        }
    }
    tracing::info!(proofs_cut_short = running, "stopped");
    if running > 0 {
        return Err(Error::Unavailable(format!(
            "stopped with {running} proofs still running after the shutdown grace of {grace} s \
             (shutdown_grace_secs): their jobs return to the queue"
        )));
    }
    Ok(())
}
