//! Prometheus metrics (prometheus-client), served at `/metrics` on
//! `metrics_listen`: jobs by state, jobs ended by this daemon by state,
//! queue wait, stage times, device busy fraction and memory, key host
//! memory.
//!
//! The same listener serves `/healthz` for load balancers and process
//! supervisors: 200 `ok` while the daemon serves; 503 with a one-line
//! reason while it shuts down (until its running proofs end or the
//! shutdown grace passes) or when the job store does not answer a trivial
//! query within 5 s.

use crate::engine::Timings;
use crate::job::{JobState, Priority};
use crate::{pb, Engine};
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

type Labels = Vec<(String, String)>;

/// The daemon's metrics.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    submitted: Family<Labels, Counter>,
    finished: Family<Labels, Counter>,
    queue_wait: Histogram,
    stage: Family<Labels, Histogram>,
    jobs: Family<Labels, Gauge>,
    busy: Family<Labels, Gauge<f64, AtomicU64>>,
    device_memory: Family<Labels, Gauge>,
    key_bytes: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Every metric, registered under the `cuzk` prefix.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("cuzk");
        let submitted = Family::<Labels, Counter>::default();
        let finished = Family::<Labels, Counter>::default();
        let queue_wait = Histogram::new(exponential_buckets(0.01, 2.0, 20));
        let stage = Family::<Labels, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.001, 2.0, 20))
        });
        let jobs = Family::<Labels, Gauge>::default();
        let busy = Family::<Labels, Gauge<f64, AtomicU64>>::default();
        let device_memory = Family::<Labels, Gauge>::default();
        let key_bytes = Gauge::default();
        registry.register(
            "jobs_submitted",
            "Jobs accepted, by class",
            submitted.clone(),
        );
        registry.register(
            "jobs_finished",
            "Jobs ended by this daemon, by state",
            finished.clone(),
        );
        registry.register(
            "queue_wait_seconds",
            "From submission to a worker taking the job",
            queue_wait.clone(),
        );
        registry.register(
            "proof_stage_seconds",
            "Time of each proof stage",
            stage.clone(),
        );
        registry.register(
            "jobs",
            "Jobs in the store, by state (running: proving; claimed_ahead: taken by a \
             worker to prove after its current job)",
            jobs.clone(),
        );
        registry.register(
            "device_busy_fraction",
            "Share of uptime a device had a proof running",
            busy.clone(),
        );
        registry.register(
            "device_memory_bytes",
            "Device memory: total and available in the budget",
            device_memory.clone(),
        );
        registry.register(
            "key_host_bytes",
            "Host memory held by loaded keys and matrices",
            key_bytes.clone(),
        );
        Metrics {
            registry,
            submitted,
            finished,
            queue_wait,
            stage,
            jobs,
            busy,
            device_memory,
            key_bytes,
        }
    }

    pub(crate) fn submitted(&self, p: Priority) {
        self.submitted
            .get_or_create(&vec![("priority".into(), p.name().into())])
            .inc();
    }

    pub(crate) fn finished(&self, s: JobState) {
        self.finished
            .get_or_create(&vec![("state".into(), s.as_str().into())])
            .inc();
    }

    pub(crate) fn queue_wait(&self, seconds: f64) {
        self.queue_wait.observe(seconds);
    }

    pub(crate) fn stages(&self, t: &Timings) {
        for (name, ms) in [
            ("load", t.load_ms),
            ("eval", t.eval_ms),
            ("h_ntt", t.h_ntt_ms),
            ("msm_a", t.msm_a_ms),
            ("msm_b_g2", t.msm_b_g2_ms),
            ("msm_b_g1", t.msm_b_g1_ms),
            ("msm_h", t.msm_h_ms),
            ("msm_l", t.msm_l_ms),
            ("assembly", t.assembly_ms),
            ("total", t.total_ms),
        ] {
            self.stage
                .get_or_create(&vec![("stage".into(), name.into())])
                .observe(ms / 1e3);
        }
    }

    /// Sets the gauges from a status snapshot and returns the text
    /// exposition.
    pub fn render(&self, status: &pb::GetStatusResponse) -> String {
        let set = |state: &str, n: u64| {
            self.jobs
                .get_or_create(&vec![("state".into(), state.into())])
                .set(n as i64);
        };
        set("queued", status.queues.iter().map(|q| q.queued).sum());
        set("running", status.queues.iter().map(|q| q.running).sum());
        set(
            "claimed_ahead",
            status.queues.iter().map(|q| q.claimed_ahead).sum(),
        );
        set("done", status.done);
        set("failed", status.failed);
        set("cancelled", status.cancelled);
        for d in &status.devices {
            let dev = ("device".to_string(), d.ordinal.to_string());
            self.busy
                .get_or_create(&vec![dev.clone()])
                .set(d.busy_fraction);
            for (kind, v) in [
                ("total", d.memory_total_bytes),
                ("available", d.memory_available_bytes),
            ] {
                self.device_memory
                    .get_or_create(&vec![dev.clone(), ("kind".into(), kind.into())])
                    .set(v as i64);
            }
        }
        self.key_bytes.set(status.key_host_bytes as i64);
        let mut out = String::new();
        if encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}

/// Serves `/metrics` and `/healthz` on `addr` until `stop` resolves.
///
/// # Errors
/// [`crate::Error::Io`] when `addr` cannot be bound.
pub async fn serve(
    engine: Arc<Engine>,
    addr: &str,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> crate::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| crate::Error::io(format!("binding the metrics endpoint {addr}"), e))?;
    serve_on(engine, listener, stop).await
}

/// Serves `/metrics` and `/healthz` (see the module docs) on a bound
/// `listener` until `stop` resolves.
///
/// # Errors
/// [`crate::Error::Io`] when serving fails.
pub async fn serve_on(
    engine: Arc<Engine>,
    listener: tokio::net::TcpListener,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> crate::Result<()> {
    use axum::routing::get;
    let health = engine.clone();
    let app = axum::Router::new()
        .route(
            "/healthz",
            get(move || {
                let e = health.clone();
                async move {
                    let (code, body) = match e.health().await {
                        Ok(()) => (axum::http::StatusCode::OK, "ok\n".to_string()),
                        Err(why) => (
                            axum::http::StatusCode::SERVICE_UNAVAILABLE,
                            // One line whatever the store's error says.
                            format!("{}\n", why.replace(['\r', '\n'], " ")),
                        ),
                    };
                    (
                        code,
                        [(
                            axum::http::header::CONTENT_TYPE,
                            "text/plain; charset=utf-8",
                        )],
                        body,
                    )
                }
            }),
        )
        .route(
            "/metrics",
            get(move || {
                let e = engine.clone();
                async move {
                    match e.status().await {
                        Ok(s) => (
                            axum::http::StatusCode::OK,
                            [(
                                axum::http::header::CONTENT_TYPE,
                                "application/openmetrics-text; version=1.0.0; charset=utf-8",
                            )],
                            e.metrics().render(&s),
                        ),
                        Err(err) => (
                            axum::http::StatusCode::SERVICE_UNAVAILABLE,
                            [(axum::http::header::CONTENT_TYPE, "text/plain")],
                            err.to_string(),
                        ),
                    }
                }
            }),
        );
    axum::serve(listener, app)
        .with_graceful_shutdown(stop)
        .await
        .map_err(|e| crate::Error::io("serving metrics", e))
}
