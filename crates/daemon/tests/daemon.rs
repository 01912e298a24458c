//! End to end: keys written by `circuits::keygen`, the daemon on the CPU
//! path, proofs over gRPC checked by ark-groth16's verifier; and a daemon
//! killed with SIGKILL and restarted finishes every accepted job once.

use ark_serialize::CanonicalDeserialize;
use cuzk_daemon::pb::{self, prover_client::ProverClient};
use cuzk_daemon::{circuits, service, Assignment, Config, Engine};
use cuzk_prover::circuits::Sha256Chain;
use rand::SeedableRng;
use std::path::Path;
use std::time::Duration;

const ID: &str = "sha256-1";

/// A circuit directory for a one-compression SHA-256 chain.
fn keygen(dir: &Path) {
    let c = Sha256Chain::new([0; 32], 1);
    let syn = cuzk_prover::synthesize(c.clone(), false).unwrap();
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(26);
    circuits::keygen(dir, ID, c, &syn, &mut rng).unwrap();
}

/// The assignment of the chain from `preimage`.
fn witness(preimage: u8) -> Assignment {
    let syn = cuzk_prover::synthesize(Sha256Chain::new([preimage; 32], 1), true).unwrap();
    Assignment::from_full(&syn.full_assignment, syn.num_inputs).unwrap()
}

fn verifies(keys: &Path, proof: &[u8], a: &Assignment) -> bool {
    let vk = circuits::read_vk(&keys.join(ID)).unwrap();
    let p = cuzk_prover::Proof::deserialize_compressed(proof).unwrap();
    let pvk = ark_groth16::prepare_verifying_key(&vk);
    ark_groth16::Groth16::<ark_bls12_381::Bls12_381>::verify_proof(&pvk, &p, &a.public).unwrap()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn connect(addr: &str) -> ProverClient<tonic::transport::Channel> {
    for _ in 0..600 {
        if let Ok(c) = ProverClient::connect(addr.to_string()).await {
            return c;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no daemon at {addr}");
}

fn inline(a: &Assignment, key: &str, prio: pb::Priority) -> pb::SubmitProofRequest {
    pb::SubmitProofRequest {
        circuit_id: ID.into(),
        priority: prio as i32,
        idempotency_key: key.into(),
        assignment: Some(pb::submit_proof_request::Assignment::Inline(a.to_bytes())),
    }
}

async fn await_done(c: &mut ProverClient<tonic::transport::Channel>, id: &str) -> pb::ProofResult {
    let r = c
        .await_proof(pb::AwaitProofRequest {
            job_id: id.into(),
            timeout_ms: 300_000,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.state, pb::JobState::Done as i32, "job {id}: {}", r.error);
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn proofs_over_grpc_verify() {
    let tmp = tempfile::tempdir().unwrap();
    let keys = tmp.path().join("keys");
    keygen(&keys);
    let (port, mport) = (free_port(), free_port());
    let config = Config {
        listen: format!("127.0.0.1:{port}"),
        metrics_listen: format!("127.0.0.1:{mport}"),
        data_dir: tmp.path().join("data"),
        key_dirs: vec![keys.clone()],
        devices: Some(Vec::new()),
        gpu_workers_per_device: 2,
        ..Config::default()
    };
    let engine = Engine::start(config).await.unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(service::serve(engine, async {
        let _ = stopped.await;
    }));
    let mut c = connect(&format!("http://127.0.0.1:{port}")).await;

    // Inline, with an idempotency key: the second submission is the first job.
    let a = witness(1);
    let first = c
        .submit_proof(inline(&a, "k1", pb::Priority::High))
        .await
        .unwrap()
        .into_inner();
    assert!(!first.duplicate);
    let again = c
        .submit_proof(inline(&a, "k1", pb::Priority::High))
        .await
        .unwrap()
        .into_inner();
    assert!(again.duplicate);
    assert_eq!(again.job_id, first.job_id);
    let r = await_done(&mut c, &first.job_id).await;
    assert!(verifies(&keys, &r.proof, &a));
    assert_eq!(r.device, -1);
    assert!(r.timings.unwrap().total_ms > 0.0);

    // Streamed in chunks.
    let b = witness(2);
    let bytes = b.to_bytes();
    let mut msgs = vec![pb::SubmitProofChunk {
        part: Some(pb::submit_proof_chunk::Part::Header(
            pb::SubmitProofHeader {
                circuit_id: ID.into(),
                priority: pb::Priority::Low as i32,
                idempotency_key: String::new(),
                assignment_bytes: bytes.len() as u64,
            },
        )),
    }];
    for chunk in bytes.chunks(10_000) {
        msgs.push(pb::SubmitProofChunk {
            part: Some(pb::submit_proof_chunk::Part::Data(chunk.to_vec())),
        });
    }
    let streamed = c
        .submit_proof_stream(tokio_stream::iter(msgs))
        .await
        .unwrap()
        .into_inner();
    let r = await_done(&mut c, &streamed.job_id).await;
    assert!(verifies(&keys, &r.proof, &b));

    // By path, through Prove (submit and await in one call).
    let d = witness(3);
    let path = tmp.path().join("d.asg");
    d.write_file(&path).unwrap();
    let r = c
        .prove(pb::ProveRequest {
            submit: Some(pb::SubmitProofRequest {
                circuit_id: ID.into(),
                priority: pb::Priority::Critical as i32,
                idempotency_key: String::new(),
                assignment: Some(pb::submit_proof_request::Assignment::Path(
                    path.display().to_string(),
                )),
            }),
            timeout_ms: 300_000,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.state, pb::JobState::Done as i32, "{}", r.error);
    assert!(verifies(&keys, &r.proof, &d));
    assert!(
        !verifies(&keys, &r.proof, &a),
        "a proof verifies only for its own inputs"
    );

    // Bad requests: clear errors, the daemon goes on.
    let mut short = witness(4);
    short.witness.pop();
    let e = c
        .submit_proof(inline(&short, "", pb::Priority::Normal))
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e}");
    assert!(e.message().contains("witness values"), "{}", e.message());
    let mut unknown = inline(&a, "", pb::Priority::Normal);
    unknown.circuit_id = "nope".into();
    let e = c.submit_proof(unknown).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::NotFound, "{e}");
    let e = c
        .await_proof(pb::AwaitProofRequest {
            job_id: "no-such-job".into(),
            timeout_ms: 1,
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::NotFound);

    // Status and metrics.
    let s = c
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(s.circuits, vec![ID.to_string()]);
    assert_eq!(s.devices.len(), 1);
    assert_eq!(s.devices[0].proofs_done, 3);
    assert_eq!(s.done, 3);
    assert_eq!(s.keys.len(), 1);
    let metrics = http_get(mport, "/metrics");
    assert!(metrics.contains("cuzk_jobs{state=\"done\"} 3"), "{metrics}");
    assert!(metrics.contains("cuzk_proof_stage_seconds"), "{metrics}");

    // Evict and preload.
    let r = c
        .evict_key(pb::EvictKeyRequest {
            circuit_id: ID.into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(r.evicted);
    let r = c
        .preload_key(pb::PreloadKeyRequest {
            circuit_id: ID.into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(r.key.unwrap().num_constraints > 20_000);

    let _ = stop.send(());
    server.await.unwrap().unwrap();
}

fn http_get(port: u16, path: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

/// The daemon executable: cargo's build of it, or, in a bundle made by
/// `cargo xtask bundle` (tests/ beside bin/), the bundle's own.
fn daemon_exe() -> std::path::PathBuf {
    let built = std::path::PathBuf::from(env!("CARGO_BIN_EXE_cuzk-daemon"));
    if built.exists() {
        return built;
    }
    let me = std::env::current_exe().expect("the test's own path");
    me.parent()
        .and_then(|tests| tests.parent())
        .map(|bundle| bundle.join("bin/cuzk-daemon"))
        .filter(|p| p.exists())
        .unwrap_or(built)
}

/// The daemon binary on `port` over `data` and `keys`.
fn daemon(port: u16, data: &Path, keys: &Path) -> std::process::Child {
    std::process::Command::new(daemon_exe())
        .args(["--listen", &format!("127.0.0.1:{port}"), "--devices", "cpu"])
        .arg("--data-dir")
        .arg(data)
        .arg("--key-dir")
        .arg(keys)
        .args(["--gpu-workers-per-device", "1"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_and_restart_finish_every_job_once() {
    let tmp = tempfile::tempdir().unwrap();
    let keys = tmp.path().join("keys");
    keygen(&keys);
    let data = tmp.path().join("data");
    let port = free_port();
    let addr = format!("http://127.0.0.1:{port}");
    let mut d = daemon(port, &data, &keys);
    let mut c = connect(&addr).await;
    // One job proved before the kill, then four accepted and the daemon
    // killed while it works on them.
    let a0 = witness(10);
    let j0 = c
        .submit_proof(inline(&a0, "", pb::Priority::Normal))
        .await
        .unwrap()
        .into_inner()
        .job_id;
    let r0 = await_done(&mut c, &j0).await;
    let mut jobs = Vec::new();
    for i in 0..4u8 {
        let a = witness(20 + i);
        let id = c
            .submit_proof(inline(&a, &format!("job-{i}"), pb::Priority::Normal))
            .await
            .unwrap()
            .into_inner()
            .job_id;
        jobs.push((id, a));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    d.kill().unwrap(); // SIGKILL
    d.wait().unwrap();

    let mut d = daemon(port, &data, &keys);
    let mut c = connect(&addr).await;
    // The proof made before the kill is still there.
    let again = await_done(&mut c, &j0).await;
    assert_eq!(again.proof, r0.proof);
    for (i, (id, a)) in jobs.iter().enumerate() {
        let r = await_done(&mut c, id).await;
        assert!(verifies(&keys, &r.proof, a), "job {i}");
        // Resubmitting with its key after the restart is the same job.
        let dup = c
            .submit_proof(inline(a, &format!("job-{i}"), pb::Priority::Normal))
            .await
            .unwrap()
            .into_inner();
        assert!(dup.duplicate);
        assert_eq!(&dup.job_id, id);
    }
    let s = c
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(s.done, 5, "every accepted job done, once");
    assert_eq!(
        s.queues.iter().map(|q| q.queued + q.running).sum::<u64>(),
        0
    );
    // Payload files of finished jobs are removed.
    let left = std::fs::read_dir(data.join("payloads")).unwrap().count();
    assert_eq!(left, 0);
    // SIGTERM: a clean stop.
    let pid = d.id().to_string();
    std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    let status = d.wait().unwrap();
    assert!(status.success(), "{status}");
}
