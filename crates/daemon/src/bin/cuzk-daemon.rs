//! `cuzk-daemon`: the proving service. With no arguments it serves on
//! 127.0.0.1:9820 with a SQLite job store and circuits under ./cuzk-data;
//! `--config FILE` reads a TOML file (see `cuzk_daemon::Config`), and
//! flags override it; `--print-config` prints the result as TOML and
//! exits. SIGTERM or Ctrl-C stop it after the running proofs (exit status
//! 1 if the shutdown grace passed first); a second one stops it at once
//! (status 130). Its log goes to stdout (`RUST_LOG` sets the filter,
//! `info` by default); an error that stops it is one line on stderr,
//! with exit status 1 (2 for a flag clap refuses).
//! On a TCP address other hosts can reach it needs `--auth-token-file`
//! (every gRPC call then carries the token), client certificates
//! (`--tls-client-ca-file`) or `--allow-unauthenticated`;
//! `--tls-cert-file` and `--tls-key-file` serve it over TLS, so that the
//! token does not travel in clear.

use clap::Parser;
use cuzk_daemon::{service, Config, Engine};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(version, about = "cuzk proving service (gRPC, durable jobs, GPUs)")]
struct Args {
    /// A TOML configuration file.
    #[arg(long)]
    config: Option<PathBuf>,
    /// gRPC listen address (host:port or unix:/path.sock).
    #[arg(long)]
    listen: Option<String>,
    /// Prometheus endpoint (host:port, served at /metrics) and health
    /// check (/healthz: 200 while serving, 503 with the reason while
    /// stopping or when the job store does not answer). It needs no token
    /// (counters only): bind it to a private address.
    #[arg(long)]
    metrics_listen: Option<String>,
    /// A file holding the bearer token every gRPC call must carry
    /// (`authorization: Bearer <token>`; surrounding whitespace trimmed).
    #[arg(long, value_name = "PATH")]
    auth_token_file: Option<PathBuf>,
    /// Serve without a token on an address other hosts can reach (a
    /// trusted network only); loopback and Unix sockets need no token.
    #[arg(long)]
    allow_unauthenticated: bool,
    /// Serve gRPC over TLS with this certificate chain (PEM, the daemon's
    /// own certificate first); needs --tls-key-file. Clients dial
    /// https://HOST:PORT. TCP only.
    #[arg(long, value_name = "PATH")]
    tls_cert_file: Option<PathBuf>,
    /// The private key (PEM) of --tls-cert-file's certificate.
    #[arg(long, value_name = "PATH")]
    tls_key_file: Option<PathBuf>,
    /// Require every client to present a certificate signed by one of
    /// these CA certificates (PEM): mutual TLS. Needs --tls-cert-file and
    /// --tls-key-file.
    #[arg(long, value_name = "PATH")]
    tls_client_ca_file: Option<PathBuf>,
    /// Data directory (SQLite store, payloads, default key directory).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Job store URL: sqlite://PATH or postgres://USER:PASS@HOST/DB.
    #[arg(long)]
    database_url: Option<String>,
    /// Directory of payload files (shared by the daemons of one
    /// PostgreSQL store).
    #[arg(long)]
    payload_dir: Option<PathBuf>,
    /// A worker's lease on a job, seconds.
    #[arg(long)]
    lease_secs: Option<u64>,
    /// Most jobs queued or running before submissions are refused.
    #[arg(long)]
    max_queued_jobs: Option<u64>,
    /// This daemon's name in job rows.
    #[arg(long)]
    worker_name: Option<String>,
    /// A directory of circuits (repeatable).
    #[arg(long = "key-dir")]
    key_dirs: Vec<PathBuf>,
    /// A directory under which clients may name assignments by path
    /// (`cuzk submit --by-path`; repeatable). Without any, any absolute
    /// path the daemon can read.
    #[arg(long = "assignment-dir", value_name = "DIR")]
    assignment_dirs: Vec<PathBuf>,
    /// CUDA ordinals, comma-separated; `cpu` for the CPU path.
    #[arg(long, allow_hyphen_values = true)]
    devices: Option<String>,
    /// Worker threads a GPU (with --devices cpu: proofs the CPU lane runs
    /// at once).
    #[arg(long)]
    gpu_workers_per_device: Option<usize>,
    /// How long SIGTERM or Ctrl-C waits for running proofs before the
    /// daemon exits, seconds (default 600); jobs still proving then are
    /// taken again later.
    #[arg(long, value_name = "SECS")]
    shutdown_grace_secs: Option<u64>,
    /// Host memory for loaded keys, bytes.
    #[arg(long)]
    key_host_budget_bytes: Option<u64>,
    /// Print the configuration these flags and --config make, every
    /// setting by its TOML name (the config-file-only ones too:
    /// max_queued_bytes, verify_keys, load_ahead, ...), check it
    /// as a start would (the token, TLS files and assignment directories
    /// too), and exit without starting. What an empty or unset setting
    /// means is said in the comment above it.
    #[arg(long)]
    print_config: bool,
}

fn config(a: Args) -> anyhow::Result<Config> {
    let mut c = match &a.config {
        Some(p) => Config::from_file(p)?,
        None => Config::default(),
    };
    if let Some(v) = a.listen {
        c.listen = v;
    }
    if let Some(v) = a.metrics_listen {
        c.metrics_listen = v;
    }
    if let Some(v) = a.auth_token_file {
        c.auth_token_file = Some(v);
    }
    if a.allow_unauthenticated {
        c.allow_unauthenticated = true;
    }
    if let Some(v) = a.tls_cert_file {
        c.tls_cert_file = Some(v);
    }
    if let Some(v) = a.tls_key_file {
        c.tls_key_file = Some(v);
    }
    if let Some(v) = a.tls_client_ca_file {
        c.tls_client_ca_file = Some(v);
    }
    if let Some(v) = a.data_dir {
        c.data_dir = v;
    }
    if let Some(v) = a.database_url {
        c.database_url = v;
    }
    if let Some(v) = a.payload_dir {
        c.payload_dir = v;
    }
    if let Some(v) = a.lease_secs {
        c.lease_secs = v;
    }
    if let Some(v) = a.shutdown_grace_secs {
        c.shutdown_grace_secs = v;
    }
    if let Some(v) = a.max_queued_jobs {
        c.max_queued_jobs = v;
    }
    if let Some(v) = a.worker_name {
        c.worker_name = v;
    }
    if !a.key_dirs.is_empty() {
        c.key_dirs = a.key_dirs;
    }
    if !a.assignment_dirs.is_empty() {
        c.assignment_dirs = a.assignment_dirs;
    }
    if let Some(v) = a.devices {
        c.devices = Some(if v.trim().eq_ignore_ascii_case("cpu") {
            Vec::new()
        } else {
            v.split(',')
                .map(|d| d.trim().parse::<i32>())
                .collect::<Result<_, _>>()
                .map_err(|e| anyhow::anyhow!("--devices {v}: {e} (give 0,1,... or cpu)"))?
        });
    }
    if let Some(v) = a.gpu_workers_per_device {
        c.gpu_workers_per_device = v;
    }
    if let Some(v) = a.key_host_budget_bytes {
        c.key_host_budget_bytes = Some(v);
    }
    Ok(c)
}

/// The comment heading `--print-config`'s output: what the settings left
/// empty or unset mean for this configuration.
fn defaults_note(c: &Config) -> String {
    let mut n = String::from(
        "# cuzk-daemon's configuration: a --config file takes these keys (see\n\
         # cuzk_daemon::Config); relative paths are from the daemon's working directory.\n",
    );
    let mut note = |key: &str, means: String| n.push_str(&format!("# {key}: {means}\n"));
    if c.database_url.is_empty() {
        note("database_url \"\"", c.database_url());
    }
    if c.payload_dir.as_os_str().is_empty() {
        note("payload_dir \"\"", c.payload_dir().display().to_string());
    }
    if c.key_dirs.is_empty() {
        let dirs: Vec<String> = c
            .key_dirs()
            .iter()
            .map(|d| d.display().to_string())
            .collect();
        note("key_dirs []", dirs.join(", "));
    }
    // The settings whose default reads the same in every configuration.
    let fixed = [
        (
            c.assignment_dirs.is_empty(),
            "assignment_dirs []",
            "any absolute path the daemon can read",
        ),
        (
            c.worker_name.is_empty(),
            "worker_name \"\"",
            "this host's name and the process id",
        ),
        (
            c.devices.is_none(),
            "devices (unset)",
            "every GPU, or the CPU path where there is none (devices = [] or \"cpu\" is the CPU path)",
        ),
        (
            c.key_host_budget_bytes.is_none(),
            "key_host_budget_bytes (unset)",
            "half the host's memory",
        ),
        (
            c.auth_token_file.is_none(),
            "auth_token_file (unset)",
            "no token",
        ),
        (
            c.tls_cert_file.is_none(),
            "tls_cert_file, tls_key_file (unset)",
            "plain gRPC",
        ),
    ];
    for (key, means) in fixed.iter().filter(|f| f.0).map(|f| (f.1, f.2)) {
        note(key, means.into());
    }
    n
}

/// Runs the daemon; an error is printed as one line of its causes
/// (`{:#}`), never with a backtrace, and exits 1.
fn main() -> std::process::ExitCode {
    let run = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| anyhow::anyhow!("starting the async runtime: {e}"))
        .and_then(|rt| rt.block_on(daemon()));
    match run {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cuzk-daemon: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// The daemon: flags, then `--print-config` or the service until a stop
/// signal.
async fn daemon() -> anyhow::Result<()> {
    use std::io::IsTerminal;
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        // Colours for a person at a terminal, plain text in a log file.
        .with_ansi(std::io::stdout().is_terminal())
        .init();
    let args = Args::parse();
    let print = args.print_config;
    let c = config(args)?;
    if print {
        use std::io::Write;
        // What a start checks before it opens the store.
        c.validate()?;
        c.check_devices()?;
        c.auth_token()?;
        c.tls()?;
        c.resolved_assignment_dirs()?;
        let text = format!("{}{}", defaults_note(&c), toml::to_string_pretty(&c)?);
        // A reader that closed early (`| head`) is not an error.
        return match std::io::stdout().write_all(text.as_bytes()) {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
            _ => Ok(()),
        };
    }
    // The addresses first: one that is taken fails the start before the
    // engine claims or requeues any job.
    let listeners = service::Listeners::bind(&c).await?;
    let engine = Engine::start(c).await?;
    service::serve_bound(engine, listeners, async {
        stop_signal().await;
        tracing::info!("stopping; a second SIGTERM or Ctrl-C exits at once");
        tokio::spawn(async {
            stop_signal().await;
            eprintln!(
                "cuzk-daemon: a second stop signal: exiting now; running jobs return to the \
                 queue (SQLite: at the next start; PostgreSQL: when their lease runs out)"
            );
            std::process::exit(130);
        });
    })
    .await?;
    Ok(())
}

/// Resolves at the next SIGTERM or Ctrl-C (SIGINT).
async fn stop_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = async {
            match term.as_mut() {
                Some(t) => { t.recv().await; }
                None => std::future::pending().await,
            }
        } => {}
    }
}
