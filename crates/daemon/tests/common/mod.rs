//! Helpers of the daemon's integration tests: circuit directories made
//! once per test binary, witnesses, the verifier, daemon processes, a
//! test PKI for TLS.
#![allow(dead_code, unreachable_pub)]

use ark_serialize::CanonicalDeserialize;
use cuzk_daemon::auth::SendToken;
use cuzk_daemon::pb::{self, prover_client::ProverClient};
use cuzk_daemon::{circuits, Assignment, AuthToken};
use cuzk_prover::circuits::Sha256Chain;
use rand::SeedableRng;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

/// A SHA-256 chain of no compression (tiny: for many jobs).
pub const TINY: &str = "sha256-0";
/// A SHA-256 chain of one compression (about 41,000 constraints).
pub const ONE: &str = "sha256-1";

/// A client of a test daemon, sending a bearer token or none.
pub type Client = ProverClient<
    tonic::service::interceptor::InterceptedService<tonic::transport::Channel, SendToken>,
>;

/// The key directory holding TINY and ONE, made once (ark-groth16 setup).
pub fn keys() -> &'static Path {
    static KEYS: OnceLock<tempfile::TempDir> = OnceLock::new();
    KEYS.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        for (id, rounds) in [(TINY, 0), (ONE, 1)] {
            let c = Sha256Chain::new([0; 32], rounds);
            let syn = cuzk_prover::synthesize(c.clone(), false).unwrap();
            let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(26 + rounds as u64);
            circuits::keygen(dir.path(), id, c, &syn, &mut rng).unwrap();
        }
        dir
    })
    .path()
}

/// The assignment of circuit `id` (TINY or ONE) from `preimage`.
pub fn witness(id: &str, preimage: u8) -> Assignment {
    let rounds = if id == TINY { 0 } else { 1 };
    let syn = cuzk_prover::synthesize(Sha256Chain::new([preimage; 32], rounds), true).unwrap();
    Assignment::from_full(&syn.full_assignment, syn.num_inputs).unwrap()
}

/// Whether `proof` verifies for circuit `id` and `a`'s public inputs.
pub fn verifies(id: &str, proof: &[u8], a: &Assignment) -> bool {
    let vk = circuits::read_vk(&keys().join(id)).unwrap();
    let p = cuzk_prover::Proof::deserialize_compressed(proof).unwrap();
    let pvk = ark_groth16::prepare_verifying_key(&vk);
    ark_groth16::Groth16::<ark_bls12_381::Bls12_381>::verify_proof(&pvk, &p, &a.public).unwrap()
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A client of the daemon on `port` (waiting for it), sending no token.
pub async fn connect(port: u16) -> Client {
    connect_with(port, None).await
}

/// A client of the daemon on `port` (waiting for it), sending `token`.
pub async fn connect_with(port: u16, token: Option<&AuthToken>) -> Client {
    let addr = format!("http://127.0.0.1:{port}");
    let endpoint = tonic::transport::Endpoint::from_shared(addr).unwrap();
    connect_endpoint(endpoint, token).await
}

/// A client of the daemon serving TLS on `port` (waiting for it) at
/// `https://127.0.0.1:PORT`, with the TLS settings `tls`, sending `token`.
pub async fn connect_tls(
    port: u16,
    tls: tonic::transport::ClientTlsConfig,
    token: Option<&AuthToken>,
) -> Client {
    let addr = format!("https://127.0.0.1:{port}");
    let endpoint = tonic::transport::Endpoint::from_shared(addr)
        .unwrap()
        .tls_config(tls)
        .unwrap();
    connect_endpoint(endpoint, token).await
}

/// A client of the daemon at `endpoint`, retried for a minute while it
/// starts, sending `token`.
pub async fn connect_endpoint(
    endpoint: tonic::transport::Endpoint,
    token: Option<&AuthToken>,
) -> Client {
    let mut last = None;
    for _ in 0..600 {
        match endpoint.connect().await {
            Ok(ch) => return ProverClient::with_interceptor(ch, SendToken::new(token)),
            Err(e) => last = Some(cuzk_daemon::tls::error_chain(&e)),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no daemon at {}: {last:?}", endpoint.uri());
}

/// PEM files of a test PKI, made with rcgen: a CA; a server certificate
/// it signed for `localhost` and 127.0.0.1, and its key; a client
/// certificate it signed, and its key; and another CA with a client
/// certificate of its own.
pub struct Pki {
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
    pub other_ca: PathBuf,
    pub other_client_cert: PathBuf,
    pub other_client_key: PathBuf,
}

impl Pki {
    /// Makes the PKI and writes its files into `dir`.
    pub fn write(dir: &Path) -> Pki {
        use rcgen::ExtendedKeyUsagePurpose::{ClientAuth, ServerAuth};
        let file = |name: &str, pem: &str| {
            let p = dir.join(name);
            std::fs::write(&p, pem).unwrap();
            p
        };
        let (ca, issuer) = test_ca("cuzk test CA");
        let (other_ca, other_issuer) = test_ca("another test CA");
        let (cert, key) = signed(&issuer, &["localhost", "127.0.0.1"], ServerAuth);
        let (client_cert, client_key) = signed(&issuer, &["client-1"], ClientAuth);
        let (other_cert, other_key) = signed(&other_issuer, &["client-2"], ClientAuth);
        Pki {
            ca: file("ca.pem", &ca),
            cert: file("cert.pem", &cert),
            key: file("key.pem", &key),
            client_cert: file("client.pem", &client_cert),
            client_key: file("client-key.pem", &client_key),
            other_ca: file("other-ca.pem", &other_ca),
            other_client_cert: file("other-client.pem", &other_cert),
            other_client_key: file("other-client-key.pem", &other_key),
        }
    }
}

/// A self-signed CA named `name`: its certificate (PEM) and its issuer.
fn test_ca(name: &str) -> (String, rcgen::Issuer<'static, rcgen::KeyPair>) {
    use rcgen::KeyUsagePurpose::{CrlSign, DigitalSignature, KeyCertSign};
    let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    p.distinguished_name.push(rcgen::DnType::CommonName, name);
    p.key_usages = vec![KeyCertSign, CrlSign, DigitalSignature];
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = p.self_signed(&key).unwrap();
    (cert.pem(), rcgen::Issuer::new(p, key))
}

/// A certificate for `names` (DNS names or IP addresses) that `issuer`
/// signed, for `usage`, and its key: PEM.
fn signed(
    issuer: &rcgen::Issuer<'static, rcgen::KeyPair>,
    names: &[&str],
    usage: rcgen::ExtendedKeyUsagePurpose,
) -> (String, String) {
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let mut p = rcgen::CertificateParams::new(names.clone()).unwrap();
    p.distinguished_name
        .push(rcgen::DnType::CommonName, names[0].as_str());
    p.extended_key_usages = vec![usage];
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = p.signed_by(&key, issuer).unwrap();
    (cert.pem(), key.serialize_pem())
}

pub fn inline(id: &str, a: &Assignment, key: &str, prio: pb::Priority) -> pb::SubmitProofRequest {
    pb::SubmitProofRequest {
        circuit_id: id.into(),
        priority: prio as i32,
        idempotency_key: key.into(),
        assignment: Some(pb::submit_proof_request::Assignment::Inline(a.to_bytes())),
    }
}

pub async fn submit(
    c: &mut Client,
    id: &str,
    a: &Assignment,
    key: &str,
    p: pb::Priority,
) -> String {
    c.submit_proof(inline(id, a, key, p))
        .await
        .unwrap()
        .into_inner()
        .job_id
}

/// The job as it is now (waiting at most `ms`).
pub async fn poll(c: &mut Client, job: &str, ms: u64) -> pb::ProofResult {
    c.await_proof(pb::AwaitProofRequest {
        job_id: job.into(),
        timeout_ms: ms.max(1),
    })
    .await
    .unwrap()
    .into_inner()
}

/// The job once done (fails the test on any other end).
pub async fn await_done(c: &mut Client, job: &str) -> pb::ProofResult {
    let r = poll(c, job, 600_000).await;
    assert_eq!(r.state, pb::JobState::Done as i32, "job {job}: {}", r.error);
    r
}

/// An executable of this crate: cargo's build of it (`built`), or, in a
/// bundle made by `cargo xtask bundle` (tests/ beside bin/), the bundle's.
fn exe(built: &str, name: &str) -> PathBuf {
    let built = PathBuf::from(built);
    if built.exists() {
        return built;
    }
    let me = std::env::current_exe().expect("the test's own path");
    me.parent()
        .and_then(|tests| tests.parent())
        .map(|bundle| bundle.join("bin").join(name))
        .filter(|p| p.exists())
        .unwrap_or(built)
}

/// The `cuzk-daemon` executable.
pub fn daemon_exe() -> PathBuf {
    exe(env!("CARGO_BIN_EXE_cuzk-daemon"), "cuzk-daemon")
}

/// The `cuzk` executable.
pub fn cli_exe() -> PathBuf {
    exe(env!("CARGO_BIN_EXE_cuzk"), "cuzk")
}

/// A `cuzk-daemon` process on the CPU path on `port` over `data`, with
/// the test keys and `extra` flags; killed when dropped.
pub struct Daemon(pub std::process::Child);

impl Daemon {
    /// Its log goes to `data`/daemon.log.
    pub fn start(port: u16, data: &Path, extra: &[&str]) -> Daemon {
        Self::start_on(&format!("127.0.0.1:{port}"), data, extra)
    }

    /// As [`Daemon::start`], listening on `listen` (`host:port` or
    /// `unix:PATH`). Its log (stdout) and errors (stderr) go to
    /// `data`/daemon.log.
    pub fn start_on(listen: &str, data: &Path, extra: &[&str]) -> Daemon {
        std::fs::create_dir_all(data).unwrap();
        let log = std::fs::File::create(data.join("daemon.log")).unwrap();
        let child = std::process::Command::new(daemon_exe())
            .args(["--listen", listen, "--devices", "cpu"])
            .arg("--data-dir")
            .arg(data)
            .arg("--key-dir")
            .arg(keys())
            .args(extra)
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        Daemon(child)
    }

    /// SIGKILL, and wait for it.
    pub fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }

    /// SIGTERM; true when it then exits cleanly.
    pub fn terminate(&mut self) -> bool {
        let pid = self.0.id().to_string();
        std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap();
        self.0.wait().unwrap().success()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.kill();
    }
}
