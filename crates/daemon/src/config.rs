//! The daemon's configuration: a TOML file, flags over it, defaults for
//! everything (`cuzk-daemon` with no arguments serves on localhost with
//! SQLite under the data directory).
//!
//! A daemon reachable from other hosts needs a bearer token
//! (`auth_token_file`, see [`crate::auth`]), client certificates
//! (`tls_client_ca_file`), or `allow_unauthenticated` for a trusted
//! network: [`Config::validate`] refuses a non-loopback TCP address with
//! none of them. With `tls_cert_file` and `tls_key_file` the TCP
//! listener speaks TLS (see [`crate::tls`]), so that the token does not
//! travel in clear.

use crate::tls::ServerTls;
use crate::{AuthToken, Error, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Default gRPC listen address.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9820";

/// The most worker threads a GPU (or the CPU lane) that
/// [`Config::validate`] accepts: each holds a proof's host buffers and a
/// share of the GPU's memory, so far fewer than this is useful.
pub const MAX_WORKERS_PER_DEVICE: usize = 64;

/// Everything the daemon can be told. Every field has a default; a TOML
/// file sets any of them by name (unknown names are an error).
///
/// ```toml
/// listen = "127.0.0.1:9820"
/// data_dir = "/var/lib/cuzk"
/// database_url = "postgres://cuzk@db/cuzk"   # default: SQLite in data_dir
/// key_dirs = ["/var/lib/cuzk/keys"]
/// assignment_dirs = ["/srv/cuzk/witness"]     # `cuzk submit --by-path` only under these
/// devices = [0, 1]                            # default: every GPU
/// gpu_workers_per_device = 2
/// # listen = "0.0.0.0:9820" needs a token (or allow_unauthenticated = true)
/// auth_token_file = "/etc/cuzk/token"        # every gRPC call: Bearer <token>
/// # TLS on the TCP listener (clients: cuzk --addr https://HOST:9820)
/// tls_cert_file = "/etc/cuzk/tls/cert.pem"   # PEM chain, the daemon's own first
/// tls_key_file = "/etc/cuzk/tls/key.pem"     # PEM private key of that certificate
/// # tls_client_ca_file = "/etc/cuzk/tls/clients-ca.pem"  # require client certificates
/// ```
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// gRPC listen address (`host:port`), or `unix:/path/to.sock` for a
    /// Unix socket.
    pub listen: String,
    /// Prometheus metrics endpoint (`host:port`, served at `/metrics`);
    /// empty: no endpoint. It needs no token (it serves only counters and
    /// gauges of jobs, devices and keys): bind it to a private address.
    pub metrics_listen: String,
    /// A file holding the bearer token that every gRPC call must carry
    /// (`authorization: Bearer <token>`); its content with surrounding
    /// whitespace trimmed, printable ASCII. Read once at start; a missing,
    /// unreadable or empty file fails the start. `None`: no token.
    pub auth_token_file: Option<PathBuf>,
    /// Serve without a token or client certificates on a TCP address
    /// other hosts can reach (without one of the three such a daemon
    /// refuses to start): only for a trusted network. Loopback addresses
    /// and Unix sockets never need it. Default false.
    pub allow_unauthenticated: bool,
    /// The daemon's TLS certificate chain (PEM, its own certificate first);
    /// with `tls_key_file`, the TCP listener serves gRPC over TLS (clients
    /// dial `https://`). Give both or neither; not with a Unix socket.
    /// Read at start: a missing or invalid file fails the start. `None`:
    /// plain gRPC.
    pub tls_cert_file: Option<PathBuf>,
    /// The private key (PEM: PKCS#8, PKCS#1 or SEC1) of `tls_cert_file`'s
    /// certificate. Keep it readable only by the daemon's user.
    pub tls_key_file: Option<PathBuf>,
    /// CA certificates (PEM) for mutual TLS: with it, every client must
    /// present a certificate signed by one of them (`cuzk --tls-cert-file
    /// --tls-key-file`), or its connection is refused. Needs
    /// `tls_cert_file` and `tls_key_file`. `None`: no client certificates.
    pub tls_client_ca_file: Option<PathBuf>,
    /// Where the SQLite job store and the payload files live.
    pub data_dir: PathBuf,
    /// The job store: `sqlite://PATH` or `postgres://USER:PASS@HOST/DB`.
    /// Empty: `sqlite://DATA_DIR/jobs.db`.
    pub database_url: String,
    /// Where payloads (assignments) of submitted jobs are kept; with
    /// several daemons on one PostgreSQL store, a directory they all can
    /// read. Empty: `DATA_DIR/payloads`.
    pub payload_dir: PathBuf,
    /// Directories under which a submission may name its assignment by
    /// path (SubmitProof's `path`, `cuzk submit --by-path`): the path must
    /// start with one of them and resolve beneath it (links and `..`
    /// included; Linux's openat2 with RESOLVE_BENEATH), and name a regular
    /// file; any other is refused (INVALID_ARGUMENT, the same answer
    /// whether or not a file outside exists). The submission and each
    /// worker open the file that way, so a link swapped in while the job
    /// waited fails the job. Opened at start: one that does not exist fails
    /// the start. Daemons sharing a PostgreSQL store should all set the
    /// same directories: each enforces its own on the jobs it takes. Empty
    /// (the default): any absolute path the daemon's user can read, for
    /// clients trusted to read the host's files.
    pub assignment_dirs: Vec<PathBuf>,
    /// Directories of circuits: each subdirectory holding `pk.bin`,
    /// `vk.bin` and `r1cs.bin` (as `cuzk keygen` writes them) is a circuit
    /// whose id is the subdirectory's name. Empty: `DATA_DIR/keys`.
    pub key_dirs: Vec<PathBuf>,
    /// CUDA ordinals to prove on; `None`: every GPU there is, or the CPU
    /// path when there is none. `Some([])`: the CPU path (in TOML,
    /// `devices = []` or `devices = "cpu"`, as `--devices cpu`).
    #[serde(deserialize_with = "devices_from_toml")]
    pub devices: Option<Vec<i32>>,
    /// Worker threads a GPU (a CPU lane, without GPUs), sharing its memory
    /// budget: 1 to [`MAX_WORKERS_PER_DEVICE`]. Default 2.
    pub gpu_workers_per_device: usize,
    /// Host memory for loaded keys and matrices, bytes; past it the least
    /// recently used idle key is evicted. Default: half the host's memory.
    pub key_host_budget_bytes: Option<u64>,
    /// Largest inline assignment in a SubmitProof message, bytes (larger
    /// ones are streamed or passed as a path). Default 64 MiB.
    pub max_inline_bytes: u64,
    /// Most jobs queued or running; past it a submission gets
    /// RESOURCE_EXHAUSTED. Default 10,000.
    pub max_queued_jobs: u64,
    /// Most bytes of payloads queued or running. Default 256 GiB.
    pub max_queued_bytes: u64,
    /// A worker's lease on a job, seconds, renewed every third of it while
    /// it proves; a dead daemon's jobs return to the queue after it.
    /// Default 60.
    pub lease_secs: u64,
    /// AwaitProof's wait when the request gives none, milliseconds.
    /// Default 10 minutes.
    pub await_timeout_ms: u64,
    /// How long SIGTERM waits for running proofs before exiting, seconds
    /// (jobs still proving then are taken again when their lease runs out,
    /// or on SQLite at the next start; jobs claimed ahead go back to the
    /// queue at once, see `load_ahead`). Default 600.
    pub shutdown_grace_secs: u64,
    /// This daemon's name in job rows and status; default: host name and
    /// process id.
    pub worker_name: String,
    /// Also check that every point of a proving key is in the prime-order
    /// subgroup as it loads (about 50 us a G1 point and 150 a G2 point on
    /// one core: half an hour for PoRep's 47 GiB key on 16). Default false:
    /// every point is always checked to be on its curve, which catches a
    /// damaged file; the subgroup check guards against a key made to
    /// attack the prover.
    pub verify_keys: bool,
    /// Check each proof against its circuit's verifying key before it is
    /// stored (one pairing check: a few ms on a core, next to a proof's
    /// hundreds). A proof that does not verify fails its job: the
    /// assignment does not satisfy the circuit's constraints (the prover
    /// does not check them), or a fault made a wrong proof. Keys of random
    /// points (`cuzk keygen --porep-log-domain`, which marks them) are not
    /// checked. Default true.
    pub verify_proofs: bool,
    /// Times a worker may start proving a job before it is failed (a job
    /// whose proofs keep crashing daemons, or that daemons keep giving
    /// back); a claim ahead counts only when its proof starts. Default 5.
    pub max_attempts: u32,
    /// Finished jobs (done, failed, cancelled) older than this are deleted
    /// from the store, seconds; 0 keeps them. Default 7 days.
    pub retain_finished_secs: u64,
    /// Each worker claims its next job while it proves the current one,
    /// and reads that job's assignment meanwhile (one job ahead a worker,
    /// its assignment held in host memory), so that the GPU does not wait
    /// for the file between jobs. A job submitted later at a higher
    /// priority then starts after the jobs already claimed ahead. A job
    /// claimed ahead that never starts (the daemon stops, or dies) goes
    /// back to the queue without using one of its `max_attempts`. Default
    /// true.
    pub load_ahead: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: DEFAULT_LISTEN.into(),
            metrics_listen: String::new(),
            auth_token_file: None,
            allow_unauthenticated: false,
            tls_cert_file: None,
            tls_key_file: None,
            tls_client_ca_file: None,
            data_dir: PathBuf::from("cuzk-data"),
            database_url: String::new(),
            payload_dir: PathBuf::new(),
            assignment_dirs: Vec::new(),
            key_dirs: Vec::new(),
            devices: None,
            gpu_workers_per_device: cuzk_prover::DEFAULT_GPU_WORKERS_PER_DEVICE,
            key_host_budget_bytes: None,
            max_inline_bytes: 64 << 20,
            max_queued_jobs: 10_000,
            max_queued_bytes: 256 << 30,
            lease_secs: 60,
            await_timeout_ms: 600_000,
            shutdown_grace_secs: 600,
            worker_name: String::new(),
            verify_keys: false,
            verify_proofs: true,
            max_attempts: 5,
            retain_finished_secs: 7 * 24 * 3600,
            load_ahead: true,
        }
    }
}

/// `devices`: a list of CUDA ordinals, or the word `"cpu"` (no GPU).
fn devices_from_toml<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<Vec<i32>>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Devices {
        Ordinals(Vec<i32>),
        Word(String),
    }
    match Devices::deserialize(d) {
        Ok(Devices::Ordinals(v)) => Ok(Some(v)),
        Ok(Devices::Word(w)) if w.trim().eq_ignore_ascii_case("cpu") => Ok(Some(Vec::new())),
        _ => Err(serde::de::Error::custom(
            "devices: give a list of CUDA ordinals ([0, 1]), [] or \"cpu\" for the CPU path, \
             or leave it out for every GPU",
        )),
    }
}

impl Config {
    /// The configuration in the TOML file at `path`.
    ///
    /// # Errors
    /// [`Error::Io`] when it cannot be read; [`Error::InvalidArgument`]
    /// naming the key that does not parse.
    pub fn from_file(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::io(format!("reading config {}", path.display()), e))?;
        toml::from_str(&text)
            .map_err(|e| Error::InvalidArgument(format!("config {}: {e}", path.display())))
    }

    /// The job store URL (the SQLite default resolved).
    pub fn database_url(&self) -> String {
        if self.database_url.is_empty() {
            format!("sqlite://{}", self.data_dir.join("jobs.db").display())
        } else {
            self.database_url.clone()
        }
    }

    /// The payload directory (the default resolved).
    pub fn payload_dir(&self) -> PathBuf {
        if self.payload_dir.as_os_str().is_empty() {
            self.data_dir.join("payloads")
        } else {
            self.payload_dir.clone()
        }
    }

    /// The key directories (the default resolved).
    pub fn key_dirs(&self) -> Vec<PathBuf> {
        if self.key_dirs.is_empty() {
            vec![self.data_dir.join("keys")]
        } else {
            self.key_dirs.clone()
        }
    }

    /// `assignment_dirs` resolved: absolute, their symbolic links
    /// resolved, each a directory.
    ///
    /// # Errors
    /// [`Error::Io`] naming one that cannot be resolved (say, missing);
    /// [`Error::InvalidArgument`] naming one that is not a directory.
    pub fn resolved_assignment_dirs(&self) -> Result<Vec<PathBuf>> {
        crate::client_file::resolve(&self.assignment_dirs)
    }

    /// The bearer token of `auth_token_file`; `None` without one.
    ///
    /// # Errors
    /// [`Error::Io`] naming the file when it cannot be read;
    /// [`Error::InvalidArgument`] naming it when it is empty or its token
    /// is not printable ASCII.
    pub fn auth_token(&self) -> Result<Option<AuthToken>> {
        self.auth_token_file
            .as_deref()
            .map(AuthToken::from_file)
            .transpose()
    }

    /// The TLS settings of `tls_cert_file`, `tls_key_file` and
    /// `tls_client_ca_file`, read and checked; `None` without them.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when only one of `tls_cert_file` and
    /// `tls_key_file` is set (see [`Config::validate`]), or naming the file
    /// that holds no PEM certificate or key, or both when the key is not
    /// the certificate's; [`Error::Io`] naming a file that cannot be read.
    pub fn tls(&self) -> Result<Option<ServerTls>> {
        self.check_tls()?;
        match (&self.tls_cert_file, &self.tls_key_file) {
            (Some(cert), Some(key)) => {
                ServerTls::load(cert, key, self.tls_client_ca_file.as_deref()).map(Some)
            }
            _ => Ok(None),
        }
    }

    /// Whether the TCP listener is to speak TLS (`tls_cert_file` and
    /// `tls_key_file` both set).
    pub fn tls_enabled(&self) -> bool {
        self.tls_cert_file.is_some() && self.tls_key_file.is_some()
    }

    /// The TLS settings' consistency: both files or neither, a client CA
    /// only with them, and no TLS on a Unix socket. Reads no file.
    fn check_tls(&self) -> Result<()> {
        let both = "give both --tls-cert-file PATH and --tls-key-file PATH (tls_cert_file and \
                    tls_key_file in the config: the PEM certificate chain and its private key), \
                    or neither for plain gRPC";
        match (&self.tls_cert_file, &self.tls_key_file) {
            (Some(c), None) => {
                return Err(Error::InvalidArgument(format!(
                    "a TLS certificate is configured ({}) without its private key: {both}",
                    c.display()
                )))
            }
            (None, Some(k)) => {
                return Err(Error::InvalidArgument(format!(
                    "a TLS private key is configured ({}) without its certificate: {both}",
                    k.display()
                )))
            }
            _ => {}
        }
        if let Some(ca) = &self.tls_client_ca_file {
            if !self.tls_enabled() {
                return Err(Error::InvalidArgument(format!(
                    "tls_client_ca_file ({}) requires client certificates over TLS, and TLS is \
                     off: give --tls-cert-file PATH and --tls-key-file PATH too, or drop \
                     --tls-client-ca-file",
                    ca.display()
                )));
            }
        }
        if self.tls_enabled() && self.listen.trim().starts_with("unix:") {
            return Err(Error::InvalidArgument(format!(
                "TLS (--tls-cert-file, --tls-key-file) is for TCP addresses, and listen is the \
                 Unix socket {}: drop the TLS settings (a Unix socket is guarded by its file's \
                 permissions and never leaves the host), or listen on HOST:PORT",
                self.listen.trim()
            )));
        }
        Ok(())
    }

    /// Whether `listen` can be reached only from this host: a Unix socket,
    /// or a TCP address on a loopback address (127.0.0.0/8, `::1`,
    /// `localhost`). Anything else (`0.0.0.0`, a host name, an address
    /// that does not parse) counts as reachable from other hosts.
    pub fn listen_is_local(&self) -> bool {
        let listen = self.listen.trim();
        if listen.starts_with("unix:") {
            return true;
        }
        if let Ok(a) = listen.parse::<std::net::SocketAddr>() {
            return a.ip().to_canonical().is_loopback();
        }
        listen
            .rsplit_once(':')
            .is_some_and(|(host, _)| host.eq_ignore_ascii_case("localhost"))
    }

    /// The worker name (the default resolved).
    pub fn worker_name(&self) -> String {
        if self.worker_name.is_empty() {
            let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|h| h.trim().to_string())
                .unwrap_or_else(|_| "localhost".into());
            format!("{host}:{}", std::process::id())
        } else {
            self.worker_name.clone()
        }
    }

    /// Checks the form of the listen addresses (`HOST:PORT`, or
    /// `unix:PATH` for gRPC), the values that have limits, that a daemon
    /// reachable from other hosts authenticates its clients (a token, or
    /// client certificates; else `allow_unauthenticated`), and that the
    /// TLS settings fit together (the certificate and the key both or
    /// neither, none on a Unix socket). Reads no file:
    /// [`Config::auth_token`] reads the token, [`Config::tls`] the TLS
    /// files.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the setting and what to give.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: &str| Err(Error::InvalidArgument(m.into()));
        check_address("listen", &self.listen, true)?;
        if !self.metrics_listen.is_empty() {
            check_address("metrics_listen", &self.metrics_listen, false)?;
        }
        // Client certificates (mutual TLS) authenticate as a token does.
        if self.auth_token_file.is_none()
            && self.tls_client_ca_file.is_none()
            && !self.allow_unauthenticated
            && !self.listen_is_local()
        {
            return Err(Error::InvalidArgument(format!(
                "listen {} can be reached from other hosts, and no token is configured: anyone \
                 who can connect could submit, cancel and read proofs. Give --auth-token-file \
                 PATH (auth_token_file in the config: a file holding a secret token, e.g. from \
                 `openssl rand -hex 32`) or require client certificates (--tls-client-ca-file), \
                 listen on 127.0.0.1 or a Unix socket, or give --allow-unauthenticated \
                 (allow_unauthenticated = true) on a trusted network",
                self.listen
            )));
        }
        self.check_tls()?;
        if !(1..=MAX_WORKERS_PER_DEVICE).contains(&self.gpu_workers_per_device) {
            return Err(Error::InvalidArgument(format!(
                "gpu_workers_per_device is {}: give 1 to {MAX_WORKERS_PER_DEVICE} (2 overlap one \
                 proof's host work with another's GPU stage; more share the same GPU's memory)",
                self.gpu_workers_per_device
            )));
        }
        if !(3..=86_400).contains(&self.lease_secs) {
            return bad("lease_secs outside 3..=86400: a lease is renewed every third of it");
        }
        if self.max_inline_bytes > 1 << 31 {
            return bad("max_inline_bytes above 2 GiB: stream larger assignments");
        }
        if self.retain_finished_secs > 100 * 365 * 24 * 3600 {
            return bad("retain_finished_secs above 100 years: give 0 to keep finished jobs");
        }
        if self.max_attempts == 0 {
            return bad("max_attempts is 0: no job could be taken");
        }
        if self.max_queued_jobs == 0 {
            return bad("max_queued_jobs is 0: no job could be accepted");
        }
        let url = &self.database_url;
        if !url.is_empty()
            && !["sqlite:", "postgres:", "postgresql:"]
                .iter()
                .any(|s| url.starts_with(s))
        {
            // The scheme only: the rest may hold a password.
            let scheme = url.split_once(':').map_or("none", |(s, _)| s);
            return Err(Error::InvalidArgument(format!(
                "database_url of scheme `{scheme}`: give sqlite://PATH or \
                 postgres://USER@HOST/DB (or nothing: SQLite in data_dir)"
            )));
        }
        if let Some(d) = &self.devices {
            for (i, x) in d.iter().enumerate() {
                if *x < 0 {
                    return Err(Error::InvalidArgument(format!(
                        "devices: {x} is not a CUDA ordinal: give 0, 1, ... (or \"cpu\")"
                    )));
                }
                if d[..i].contains(x) {
                    return Err(Error::InvalidArgument(format!(
                        "devices: GPU {x} is listed twice: give each CUDA ordinal once"
                    )));
                }
            }
        }
        Ok(())
    }
}

impl Config {
    /// Checks that every GPU in `devices` is present (below the CUDA
    /// runtime's device count); nothing for the CPU path (`Some([])`) or
    /// the default (every GPU).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the missing GPU, or saying why no
    /// GPU is usable (a CPU-only build, no driver), with what to give.
    pub fn check_devices(&self) -> Result<()> {
        let Some(d) = self.devices.as_ref().filter(|d| !d.is_empty()) else {
            return Ok(());
        };
        let n = cuzk_field::gpu::device_count().map_err(|e| {
            Error::InvalidArgument(format!(
                "devices {d:?}: no GPU is usable ({e}); give devices = \"cpu\" (--devices cpu) \
                 for the CPU path"
            ))
        })?;
        match d
            .iter()
            .find(|&&x| usize::try_from(x).map_or(true, |x| x >= n))
        {
            Some(x) if n == 0 => Err(Error::InvalidArgument(format!(
                "devices: GPU {x} is not here: the CUDA runtime finds no GPU; give \"cpu\""
            ))),
            Some(x) => Err(Error::InvalidArgument(format!(
                "devices: GPU {x} is not here: the CUDA runtime reports {n} device(s) (0..{n}); \
                 give ordinals below {n}, or \"cpu\""
            ))),
            None => Ok(()),
        }
    }
}

/// Checks the form of a listen address: `HOST:PORT` with a port in
/// 0..=65535 (HOST an IP address, `[IPv6]`, or a name), or, where `unix`
/// allows it, `unix:PATH` with a non-empty PATH. Resolves no name.
fn check_address(what: &str, addr: &str, unix: bool) -> Result<()> {
    let addr = addr.trim();
    let form = if unix {
        "HOST:PORT (e.g. 127.0.0.1:9820) or unix:PATH"
    } else {
        "HOST:PORT (e.g. 127.0.0.1:9821)"
    };
    if let Some(path) = addr.strip_prefix("unix:") {
        if unix && !path.is_empty() {
            return Ok(());
        }
        return Err(Error::InvalidArgument(format!(
            "{what} `{addr}`: give {form}"
        )));
    }
    if addr.parse::<std::net::SocketAddr>().is_ok() {
        return Ok(());
    }
    match addr.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && !host.contains(':') => {
            port.parse::<u16>().map(|_| ()).map_err(|_| {
                Error::InvalidArgument(format!(
                    "{what} `{addr}`: the port `{port}` is not a number in 0..=65535; give {form}"
                ))
            })
        }
        _ => Err(Error::InvalidArgument(format!(
            "{what} `{addr}` is not an address: give {form}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_a_file() {
        let c = Config::default();
        assert_eq!(c.listen, DEFAULT_LISTEN);
        assert!(c.database_url().starts_with("sqlite://"));
        assert!(c.payload_dir().ends_with("payloads"));
        c.validate().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.toml");
        std::fs::write(&p, "listen = \"0.0.0.0:1\"\ndevices = [0, 1]\n").unwrap();
        let c = Config::from_file(&p).unwrap();
        assert_eq!(c.listen, "0.0.0.0:1");
        assert_eq!(c.devices, Some(vec![0, 1]));
        for (devices, want) in [
            ("[]", Some(vec![])),
            ("\"cpu\"", Some(vec![])),
            ("\"CPU\"", Some(vec![])),
        ] {
            std::fs::write(&p, format!("devices = {devices}\n")).unwrap();
            assert_eq!(Config::from_file(&p).unwrap().devices, want, "{devices}");
        }
        std::fs::write(&p, "\n").unwrap();
        assert_eq!(Config::from_file(&p).unwrap().devices, None);
        for devices in ["\"gpu\"", "[\"a\"]", "3"] {
            std::fs::write(&p, format!("devices = {devices}\n")).unwrap();
            let e = Config::from_file(&p).unwrap_err().to_string();
            assert!(e.contains("\"cpu\" for the CPU path"), "{devices}: {e}");
        }
        std::fs::write(&p, "listn = \"x\"\n").unwrap();
        let e = Config::from_file(&p).unwrap_err().to_string();
        assert!(e.contains("listn"), "{e}");
        for (devices, says) in [
            (vec![0, 0], "GPU 0 is listed twice"),
            (vec![-1], "-1 is not a CUDA ordinal"),
        ] {
            let c = Config {
                devices: Some(devices),
                ..Config::default()
            };
            let e = c.validate().unwrap_err().to_string();
            assert!(e.contains(says), "{e}");
        }
    }

    /// Worker counts outside 1..=MAX_WORKERS_PER_DEVICE and a store URL of
    /// an unknown scheme are refused, naming the setting.
    #[test]
    fn workers_and_store_url_in_range() {
        for w in [0, MAX_WORKERS_PER_DEVICE + 1, 100_000] {
            let c = Config {
                gpu_workers_per_device: w,
                ..Config::default()
            };
            let e = c.validate().unwrap_err().to_string();
            assert!(
                e.contains("gpu_workers_per_device") && e.contains("give 1 to"),
                "{e}"
            );
        }
        for w in [1, MAX_WORKERS_PER_DEVICE] {
            Config {
                gpu_workers_per_device: w,
                ..Config::default()
            }
            .validate()
            .unwrap();
        }
        let c = Config {
            database_url: "mysql://x".into(),
            ..Config::default()
        };
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("database_url of scheme `mysql`"), "{e}");
        for ok in [
            "sqlite:///tmp/j.db",
            "postgres://u@h/d",
            "postgresql://u@h/d",
        ] {
            Config {
                database_url: ok.into(),
                ..Config::default()
            }
            .validate()
            .unwrap();
        }
        // The CPU path and the default check no GPU.
        for devices in [None, Some(vec![])] {
            Config {
                devices,
                ..Config::default()
            }
            .check_devices()
            .unwrap();
        }
    }

    #[test]
    fn malformed_addresses_are_named() {
        for (listen, says) in [
            ("notanaddress", "is not an address"),
            ("127.0.0.1:99999", "the port `99999`"),
            ("host:", "the port ``"),
            ("unix:", "give HOST:PORT"),
            (":9820", "is not an address"),
        ] {
            let c = Config {
                listen: listen.into(),
                ..Config::default()
            };
            let e = c.validate().unwrap_err().to_string();
            assert!(e.contains(says) && e.contains(listen), "{listen}: {e}");
        }
        let c = Config {
            metrics_listen: "unix:/tmp/m.sock".into(),
            ..Config::default()
        };
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("metrics_listen"), "{e}");
        for ok in ["example.org:9820", "[::]:1", "0.0.0.0:0"] {
            check_address("listen", ok, true).unwrap();
        }
    }

    #[test]
    fn a_reachable_address_needs_a_token_or_the_opt_out() {
        let at = |listen: &str| Config {
            listen: listen.into(),
            ..Config::default()
        };
        for local in [
            "127.0.0.1:9820",
            "127.3.2.1:1",
            "[::1]:9820",
            "[::ffff:127.0.0.1]:9820",
            "localhost:9820",
            "LocalHost:1",
            "unix:/run/cuzk.sock",
        ] {
            assert!(at(local).listen_is_local(), "{local}");
            at(local).validate().unwrap();
        }
        for reachable in [
            "0.0.0.0:9820",
            "[::]:9820",
            "10.1.2.3:9820",
            "[2001:db8::1]:9820",
            "prover-1:9820",
            "localhost.example.com:9820",
        ] {
            let c = at(reachable);
            assert!(!c.listen_is_local(), "{reachable}");
            let e = c.validate().unwrap_err();
            assert!(matches!(e, Error::InvalidArgument(_)));
            let e = e.to_string();
            assert!(
                e.contains(reachable)
                    && e.contains("--auth-token-file")
                    && e.contains("--allow-unauthenticated"),
                "{e}"
            );
            Config {
                allow_unauthenticated: true,
                ..at(reachable)
            }
            .validate()
            .unwrap();
            // Checked by its presence; the file is read by auth_token.
            Config {
                auth_token_file: Some("/etc/cuzk/token".into()),
                ..at(reachable)
            }
            .validate()
            .unwrap();
            // Client certificates authenticate too (TLS files are read by
            // Config::tls).
            if reachable.contains(':') {
                Config {
                    tls_cert_file: Some("/etc/cuzk/cert.pem".into()),
                    tls_key_file: Some("/etc/cuzk/key.pem".into()),
                    tls_client_ca_file: Some("/etc/cuzk/clients.pem".into()),
                    ..at(reachable)
                }
                .validate()
                .unwrap();
            }
        }
    }

    #[test]
    fn the_token_file_from_toml_and_its_errors() {
        let dir = tempfile::tempdir().unwrap();
        let token = dir.path().join("token");
        std::fs::write(&token, "t0ken\n").unwrap();
        let p = dir.path().join("c.toml");
        std::fs::write(
            &p,
            format!(
                "listen = \"0.0.0.0:1\"\nauth_token_file = \"{}\"\n",
                token.display()
            ),
        )
        .unwrap();
        let c = Config::from_file(&p).unwrap();
        c.validate().unwrap();
        assert!(c.auth_token().unwrap().unwrap().matches("t0ken"));
        assert!(Config::default().auth_token().unwrap().is_none());
        let missing = Config {
            auth_token_file: Some(dir.path().join("nope")),
            ..Config::default()
        };
        let e = missing.auth_token().unwrap_err().to_string();
        assert!(e.contains("token file") && e.contains("nope"), "{e}");
        std::fs::write(&p, "allow_unauthenticated = true\n").unwrap();
        assert!(Config::from_file(&p).unwrap().allow_unauthenticated);
    }

    #[test]
    fn tls_settings_fit_together() {
        let tls = |cert: Option<&str>, key: Option<&str>| Config {
            listen: "0.0.0.0:9820".into(),
            auth_token_file: Some("/etc/cuzk/token".into()),
            tls_cert_file: cert.map(Into::into),
            tls_key_file: key.map(Into::into),
            ..Config::default()
        };
        // Both or neither; checked before any file is read.
        tls(Some("/c.pem"), Some("/k.pem")).validate().unwrap();
        tls(None, None).validate().unwrap();
        assert!(!tls(None, None).tls_enabled());
        assert!(tls(None, None).tls().unwrap().is_none());
        for (c, missing) in [
            (tls(Some("/c.pem"), None), "without its private key"),
            (tls(None, Some("/k.pem")), "without its certificate"),
        ] {
            assert!(!c.tls_enabled());
            for e in [c.validate().unwrap_err(), c.tls().unwrap_err()] {
                assert!(matches!(e, Error::InvalidArgument(_)));
                let e = e.to_string();
                assert!(
                    e.contains(missing)
                        && e.contains("--tls-cert-file")
                        && e.contains("--tls-key-file"),
                    "{e}"
                );
            }
        }
        // Not on a Unix socket.
        let c = Config {
            listen: "unix:/run/cuzk.sock".into(),
            ..tls(Some("/c.pem"), Some("/k.pem"))
        };
        let e = c.validate().unwrap_err().to_string();
        assert!(
            e.contains("unix:/run/cuzk.sock") && e.contains("HOST:PORT"),
            "{e}"
        );
        // A client CA needs the daemon's own certificate and key.
        let c = Config {
            tls_client_ca_file: Some("/ca.pem".into()),
            ..tls(None, None)
        };
        let e = c.validate().unwrap_err().to_string();
        assert!(
            e.contains("/ca.pem") && e.contains("--tls-cert-file"),
            "{e}"
        );
        Config {
            tls_client_ca_file: Some("/ca.pem".into()),
            ..tls(Some("/c.pem"), Some("/k.pem"))
        }
        .validate()
        .unwrap();

        // From TOML, read by Config::tls; a missing file is named.
        let dir = tempfile::tempdir().unwrap();
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        let (cert_p, key_p) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
        std::fs::write(&cert_p, cert.cert.pem()).unwrap();
        std::fs::write(&key_p, cert.signing_key.serialize_pem()).unwrap();
        let p = dir.path().join("c.toml");
        std::fs::write(
            &p,
            format!(
                "tls_cert_file = \"{}\"\ntls_key_file = \"{}\"\n",
                cert_p.display(),
                key_p.display()
            ),
        )
        .unwrap();
        let c = Config::from_file(&p).unwrap();
        c.validate().unwrap();
        assert!(c.tls_enabled());
        assert!(!c.tls().unwrap().unwrap().requires_client_certificates());
        let gone = dir.path().join("gone.pem");
        let e = Config {
            tls_key_file: Some(gone.clone()),
            ..c
        }
        .tls()
        .unwrap_err()
        .to_string();
        assert!(e.contains(&gone.display().to_string()), "{e}");
    }
}
