//! End to end on the CPU path: keys written by `circuits::keygen`, proofs
//! over gRPC checked by ark-groth16's verifier; real `cuzk-daemon`
//! processes for load, priorities, backpressure, and SIGKILL with a
//! restart; bearer-token authentication; TLS and mutual TLS.

mod common;

use common::*;
use cuzk_daemon::pb;
use cuzk_daemon::{service, Config, Engine};
use rand::{Rng, SeedableRng};
use std::os::unix::ffi::OsStrExt;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_call_and_bad_input_in_process() {
    let tmp = tempfile::tempdir().unwrap();
    let (port, mport) = (free_port(), free_port());
    let config = Config {
        listen: format!("127.0.0.1:{port}"),
        metrics_listen: format!("127.0.0.1:{mport}"),
        data_dir: tmp.path().join("data"),
        key_dirs: vec![keys().to_path_buf()],
        devices: Some(Vec::new()),
        gpu_workers_per_device: 2,
        max_inline_bytes: 4 << 20,
        assignment_dirs: vec![tmp.path().to_path_buf()],
        ..Config::default()
    };
    let engine = Engine::start(config.clone()).await.unwrap();
    // One daemon a data directory.
    let e = Engine::start(config.clone()).await.unwrap_err().to_string();
    assert!(
        e.contains("another cuzk-daemon uses the data directory"),
        "{e}"
    );
    // One daemon a SQLite store, whatever its data directory.
    let e = Engine::start(Config {
        data_dir: tmp.path().join("other"),
        database_url: format!("sqlite://{}", tmp.path().join("data/jobs.db").display()),
        ..config.clone()
    })
    .await
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("another cuzk-daemon uses the SQLite job store"),
        "{e}"
    );
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(service::serve(engine, async {
        let _ = stopped.await;
    }));
    let mut c = connect(port).await;
    // The address is taken: binding it again fails and names it.
    let e = service::Listeners::bind(&config)
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains(&format!("binding 127.0.0.1:{port}")), "{e}");

    // Inline, with an idempotency key: the second submission is the first job.
    let a = witness(ONE, 1);
    let first = c
        .submit_proof(inline(ONE, &a, "k1", pb::Priority::High))
        .await
        .unwrap()
        .into_inner();
    assert!(!first.duplicate);
    let again = c
        .submit_proof(inline(ONE, &a, "k1", pb::Priority::High))
        .await
        .unwrap()
        .into_inner();
    assert!(again.duplicate);
    assert_eq!(again.job_id, first.job_id);
    let r = await_done(&mut c, &first.job_id).await;
    assert!(verifies(ONE, &r.proof, &a));
    assert_eq!((r.device, r.attempts), (-1, 1));
    assert!(r.timings.unwrap().total_ms > 0.0);
    assert!(r.submitted_unix_us <= r.started_unix_us && r.started_unix_us <= r.finished_unix_us);

    // Streamed in chunks.
    let b = witness(ONE, 2);
    let bytes = b.to_bytes();
    let keyed_header = |n: usize, key: &str| pb::SubmitProofChunk {
        part: Some(pb::submit_proof_chunk::Part::Header(
            pb::SubmitProofHeader {
                circuit_id: ONE.into(),
                priority: pb::Priority::Low as i32,
                idempotency_key: key.into(),
                assignment_bytes: n as u64,
            },
        )),
    };
    let header = |n: usize| keyed_header(n, "");
    let data = |d: &[u8]| pb::SubmitProofChunk {
        part: Some(pb::submit_proof_chunk::Part::Data(d.to_vec())),
    };
    let mut msgs = vec![header(bytes.len())];
    msgs.extend(bytes.chunks(10_000).map(data));
    let streamed = c
        .submit_proof_stream(tokio_stream::iter(msgs))
        .await
        .unwrap()
        .into_inner();
    let r = await_done(&mut c, &streamed.job_id).await;
    assert!(verifies(ONE, &r.proof, &b));

    // By path, through Prove (submit and await in one call).
    let d = witness(TINY, 3);
    let path = tmp.path().join("d.asg");
    d.write_file(&path).unwrap();
    let r = c
        .prove(pb::ProveRequest {
            submit: Some(pb::SubmitProofRequest {
                circuit_id: TINY.into(),
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
    assert!(verifies(TINY, &r.proof, &d));
    assert!(
        !verifies(TINY, &r.proof, &witness(TINY, 4)),
        "a proof is for its own inputs"
    );

    // Bad inputs: clear errors, and the daemon goes on.
    let code = |r: Result<tonic::Response<pb::SubmitProofResponse>, tonic::Status>| {
        let e = r.unwrap_err();
        (e.code(), e.message().to_string())
    };
    let mut short = witness(ONE, 4);
    short.witness.pop();
    let (k, m) = code(
        c.submit_proof(inline(ONE, &short, "", pb::Priority::Normal))
            .await,
    );
    assert_eq!(k, tonic::Code::InvalidArgument, "{m}");
    assert!(m.contains("witness values"), "{m}");
    let mut unknown = inline(ONE, &a, "", pb::Priority::Normal);
    unknown.circuit_id = "nope".into();
    let (k, m) = code(c.submit_proof(unknown).await);
    assert_eq!(k, tonic::Code::NotFound, "{m}");
    let mut bad = inline(ONE, &a, "", pb::Priority::Normal);
    if let Some(pb::submit_proof_request::Assignment::Inline(b)) = &mut bad.assignment {
        b[0] = b'X';
    }
    let (k, m) = code(c.submit_proof(bad).await);
    assert_eq!(k, tonic::Code::InvalidArgument, "{m}");
    assert!(m.contains("not a cuzk assignment"), "{m}");
    let mut big = inline(ONE, &a, "", pb::Priority::Normal);
    if let Some(pb::submit_proof_request::Assignment::Inline(b)) = &mut big.assignment {
        b[24 + 32 * 5..24 + 32 * 6].fill(0xff);
    }
    let (k, m) = code(c.submit_proof(big).await);
    assert_eq!(k, tonic::Code::InvalidArgument, "{m}");
    assert!(m.contains("not below Fr's modulus"), "{m}");
    let mut huge = inline(ONE, &a, "", pb::Priority::Normal);
    huge.assignment = Some(pb::submit_proof_request::Assignment::Inline(vec![
        0;
        4 << 20
            | 1
    ]));
    let (k, m) = code(c.submit_proof(huge).await);
    assert_eq!(k, tonic::Code::InvalidArgument, "{m}");
    assert!(m.contains("max_inline_bytes"), "{m}");
    // An assignment that does not satisfy the circuit: the proof made from
    // it does not verify, and the job fails saying so.
    let mut unsat = witness(ONE, 3);
    unsat.witness[0] += cuzk_prover::Fr::from(1u64);
    let id = c
        .submit_proof(inline(ONE, &unsat, "", pb::Priority::Normal))
        .await
        .unwrap()
        .into_inner()
        .job_id;
    let r = poll(&mut c, &id, 600_000).await;
    assert_eq!(r.state, pb::JobState::Failed as i32, "{r:?}");
    assert!(r.error.contains("does not satisfy"), "{}", r.error);
    // A priority outside the enum is refused, not taken for normal.
    let mut odd = inline(ONE, &a, "", pb::Priority::Normal);
    odd.priority = 99;
    let (k, m) = code(c.submit_proof(odd).await);
    assert_eq!(k, tonic::Code::InvalidArgument, "{m}");
    assert!(m.contains("priority 99"), "{m}");
    // Evicting a circuit no key directory has: NOT_FOUND, as preloading it.
    let e = c
        .evict_key(pb::EvictKeyRequest {
            circuit_id: "no-such-circuit".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::NotFound, "{}", e.message());
    // An idempotency key is one job of one circuit.
    let (k, m) = code(
        c.submit_proof(inline(TINY, &witness(TINY, 1), "k1", pb::Priority::High))
            .await,
    );
    assert_eq!(k, tonic::Code::FailedPrecondition, "{m}");
    assert!(m.contains("belongs to job"), "{m}");
    // ... and one assignment: another under the same key is refused, not
    // answered with the first job's proof.
    let (k, m) = code(
        c.submit_proof(inline(ONE, &witness(ONE, 9), "k1", pb::Priority::High))
            .await,
    );
    assert_eq!(k, tonic::Code::FailedPrecondition, "{m}");
    assert!(m.contains("another assignment"), "{m}");
    // The first job's assignment streamed under its key is that job.
    let first_bytes = a.to_bytes();
    let mut msgs = vec![keyed_header(first_bytes.len(), "k1")];
    msgs.extend(first_bytes.chunks(7_000).map(data));
    let dup = c
        .submit_proof_stream(tokio_stream::iter(msgs))
        .await
        .unwrap()
        .into_inner();
    assert!(dup.duplicate);
    assert_eq!(dup.job_id, first.job_id);
    let long = "k".repeat(300);
    let (k, m) = code(
        c.submit_proof(inline(ONE, &a, &long, pb::Priority::Normal))
            .await,
    );
    assert_eq!(k, tonic::Code::InvalidArgument, "{m}");
    // A stream announcing another size is refused before its bytes.
    let (k, m) = code(
        c.submit_proof_stream(tokio_stream::iter(vec![header(bytes.len() - 32)]))
            .await,
    );
    assert_eq!(k, tonic::Code::InvalidArgument, "{m}");
    assert!(m.contains("takes"), "{m}");
    let mut nopath = inline(ONE, &a, "", pb::Priority::Normal);
    nopath.assignment = Some(pb::submit_proof_request::Assignment::Path(
        "/no/such".into(),
    ));
    let (k, m) = code(c.submit_proof(nopath.clone()).await);
    assert_eq!(k, tonic::Code::InvalidArgument, "{m}");
    assert!(
        m.contains("under the daemon's assignment directories"),
        "{m}"
    );
    // A file outside the assignment directories reads as a missing one.
    let outside = keys().join(ONE).join("vk.bin").display().to_string();
    nopath.assignment = Some(pb::submit_proof_request::Assignment::Path(outside.clone()));
    let (k, m2) = code(c.submit_proof(nopath).await);
    assert_eq!(k, tonic::Code::InvalidArgument, "{m2}");
    assert_eq!(m2.replace(&outside, "/no/such"), m);
    let msgs = vec![header(bytes.len()), data(&bytes[..100])];
    let (k, m) = code(c.submit_proof_stream(tokio_stream::iter(msgs)).await);
    assert_eq!(k, tonic::Code::InvalidArgument, "{m}");
    assert!(m.contains("ended after 100"), "{m}");
    let (k, _) = code(
        c.submit_proof_stream(tokio_stream::iter(vec![data(&bytes)]))
            .await,
    );
    assert_eq!(k, tonic::Code::InvalidArgument);
    let e = c
        .await_proof(pb::AwaitProofRequest {
            job_id: "no-such-job".into(),
            timeout_ms: 1,
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::NotFound);
    let e = c
        .cancel_proof(pb::CancelProofRequest {
            job_id: "no-such-job".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::NotFound);
    // No stray payload files from the refused submissions.
    let payloads = std::fs::read_dir(tmp.path().join("data/payloads"))
        .unwrap()
        .count();
    assert_eq!(payloads, 0);

    // Status and metrics.
    let s = c
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(s.circuits, vec![TINY.to_string(), ONE.to_string()]);
    assert_eq!(s.devices.len(), 1);
    assert_eq!(s.devices[0].proofs_done, 3);
    assert_eq!(s.done, 3);
    assert_eq!(s.keys.len(), 2);
    let metrics = http_get(mport, "/metrics");
    assert!(metrics.contains("cuzk_jobs{state=\"done\"} 3"), "{metrics}");
    assert!(metrics.contains("cuzk_proof_stage_seconds"), "{metrics}");

    // Evict and preload.
    let r = c
        .evict_key(pb::EvictKeyRequest {
            circuit_id: ONE.into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(r.evicted);
    let r = c
        .preload_key(pb::PreloadKeyRequest {
            circuit_id: ONE.into(),
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

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hundred_jobs_from_eight_clients_all_verify() {
    let tmp = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut d = Daemon::start(port, tmp.path(), &["--gpu-workers-per-device", "2"]);
    let mut tasks = Vec::new();
    for client in 0..8u64 {
        tasks.push(tokio::spawn(async move {
            let mut c = connect(port).await;
            let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(200 + client);
            let mut mine = Vec::new();
            for j in 0..25 {
                let a = witness(TINY, (client * 25 + j) as u8);
                let p = pb::Priority::try_from(rng.gen_range(1..=4)).unwrap();
                mine.push((submit(&mut c, TINY, &a, "", p).await, a));
            }
            for (id, a) in &mine {
                let r = await_done(&mut c, id).await;
                assert!(verifies(TINY, &r.proof, a), "job {id}");
            }
            mine.len()
        }));
    }
    let mut n = 0;
    for t in tasks {
        n += t.await.unwrap();
    }
    assert_eq!(n, 200);
    let mut c = connect(port).await;
    let s = c
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!((s.done, s.failed), (200, 0));
    assert!(d.terminate(), "SIGTERM stops the daemon cleanly");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_critical_job_behind_fifty_normal_ones_starts_next() {
    let tmp = tempfile::tempdir().unwrap();
    let port = free_port();
    let _d = Daemon::start(port, tmp.path(), &["--gpu-workers-per-device", "1"]);
    let mut c = connect(port).await;
    let a = witness(ONE, 1);
    // Witnesses first, so that the submissions come in quick succession.
    let b = witness(ONE, 2);
    let mut normal = Vec::new();
    for _ in 0..50 {
        normal.push(submit(&mut c, ONE, &b, "", pb::Priority::Normal).await);
    }
    let critical = submit(&mut c, ONE, &a, "", pb::Priority::Critical).await;
    let cr = await_done(&mut c, &critical).await;
    assert!(verifies(ONE, &cr.proof, &a));
    let mut started_before = 0;
    for id in &normal {
        let r = poll(&mut c, id, 1).await;
        let s = r.started_unix_us;
        // A normal job may have started before the critical one arrived
        // (the one worker was busy with it); none started in between.
        assert!(
            s == 0 || s < cr.submitted_unix_us || s >= cr.started_unix_us,
            "normal job {id} started at {s}, after the critical job's submission ({}) and \
             before its start ({})",
            cr.submitted_unix_us,
            cr.started_unix_us
        );
        if s != 0 && s < cr.started_unix_us {
            started_before += 1;
        }
    }
    // Not vacuous: most normal jobs were still queued when it came (the
    // order above is the point; how many ran first depends on the load).
    assert!(
        started_before <= 25,
        "{started_before} normal jobs ran before the critical one: the test needs a queue"
    );
    for id in &normal {
        c.cancel_proof(pb::CancelProofRequest { job_id: id.clone() })
            .await
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_refuses_with_resource_exhausted() {
    let tmp = tempfile::tempdir().unwrap();
    let port = free_port();
    let _d = Daemon::start(
        port,
        tmp.path(),
        &["--gpu-workers-per-device", "1", "--max-queued-jobs", "2"],
    );
    let mut c = connect(port).await;
    let a = witness(ONE, 1);
    let j1 = submit(&mut c, ONE, &a, "", pb::Priority::Normal).await;
    let j2 = submit(&mut c, ONE, &a, "", pb::Priority::Normal).await;
    let e = c
        .submit_proof(inline(ONE, &a, "", pb::Priority::Normal))
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::ResourceExhausted, "{e}");
    assert!(e.message().contains("retry later"), "{}", e.message());
    for j in [j1, j2] {
        c.cancel_proof(pb::CancelProofRequest { job_id: j })
            .await
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_and_restart_finish_every_job_once() {
    let tmp = tempfile::tempdir().unwrap();
    let port = free_port();
    let flags = ["--gpu-workers-per-device", "1"];
    let mut d = Daemon::start(port, tmp.path(), &flags);
    let mut c = connect(port).await;
    // One job proved before the kill, then four accepted and the daemon
    // killed while it works on them.
    let a0 = witness(ONE, 10);
    let j0 = submit(&mut c, ONE, &a0, "", pb::Priority::Normal).await;
    let r0 = await_done(&mut c, &j0).await;
    let mut jobs = Vec::new();
    for i in 0..4u8 {
        let a = witness(ONE, 20 + i);
        let id = submit(&mut c, ONE, &a, &format!("job-{i}"), pb::Priority::Normal).await;
        jobs.push((id, a));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    d.kill();
    // Leftovers of a cut upload and of a payload whose job never made it
    // into the store: removed at the restart.
    std::fs::write(tmp.path().join("payloads/cut.partial"), b"x").unwrap();
    std::fs::write(tmp.path().join("payloads/orphan.asg"), b"x").unwrap();

    // The data directory spelled another way: the same jobs and payloads.
    let mut d = Daemon::start(port, &tmp.path().join("."), &flags);
    let mut c = connect(port).await;
    // The proof made before the kill is still there.
    let again = await_done(&mut c, &j0).await;
    assert_eq!(again.proof, r0.proof);
    for (i, (id, a)) in jobs.iter().enumerate() {
        let r = await_done(&mut c, id).await;
        assert!(verifies(ONE, &r.proof, a), "job {i}");
        // Resubmitting with its key after the restart is the same job.
        let dup = c
            .submit_proof(inline(ONE, a, &format!("job-{i}"), pb::Priority::Normal))
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
        s.queues
            .iter()
            .map(|q| q.queued + q.running + q.claimed_ahead)
            .sum::<u64>(),
        0
    );
    // Payload files of finished jobs are removed.
    let left = std::fs::read_dir(tmp.path().join("payloads"))
        .unwrap()
        .count();
    assert_eq!(left, 0);
    assert!(d.terminate(), "SIGTERM stops the daemon cleanly");
}

/// The CLI end to end over a Unix socket: witness, prove, verify, status.
#[test]
fn cli_over_a_unix_socket() {
    let tmp = tempfile::tempdir().unwrap();
    let sock = tmp.path().join("cuzk.sock");
    let listen = format!("unix:{}", sock.display());
    let mut d = Daemon::start_on(&listen, &tmp.path().join("data"), &[]);
    for _ in 0..600 {
        if sock.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let cli = |args: &[&str]| {
        let out = std::process::Command::new(cli_exe())
            .args(["--addr", &listen])
            .args(args)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "cuzk {args:?}: {text}");
        text
    };
    let w = tmp.path().join("w.asg");
    witness(TINY, 9).write_file(&w).unwrap();
    let proof = tmp.path().join("proof.bin");
    let w_s = w.display().to_string();
    let proof_s = proof.display().to_string();
    let out = cli(&[
        "prove",
        "--circuit",
        TINY,
        "--assignment",
        &w_s,
        "--priority",
        "high",
        "--out",
        &proof_s,
    ]);
    assert!(out.contains("done"), "{out}");
    let dir = keys().join(TINY).display().to_string();
    let out = cli(&[
        "verify",
        "--circuit-dir",
        &dir,
        "--proof",
        &proof_s,
        "--assignment",
        &w_s,
    ]);
    assert!(out.contains("the proof verifies"), "{out}");
    let out = cli(&["status"]);
    assert!(out.contains("1 done"), "{out}");
    // A second daemon on the same socket is refused, and the first still
    // answers.
    let e = refused_start(&tmp.path().join("data2"), &["--listen", &listen]);
    assert!(e.contains("another process serves on this socket"), "{e}");
    assert!(!e.contains("panicked"), "{e}");
    assert!(cli(&["status"]).contains("1 done"));
    // An unknown job: `await` names it and fails.
    let (ok, out) = run_cli(&["--addr", &listen, "await", "no-such-job"]);
    assert!(!ok && out.contains("no-such-job"), "{out}");
    // A path that is not UTF-8 cannot cross as one: said, not mangled.
    let odd = tmp.path().join(std::ffi::OsStr::from_bytes(b"w\xff.asg"));
    std::fs::copy(&w, &odd).unwrap();
    let out = std::process::Command::new(cli_exe())
        .args(["--addr", &listen, "submit", "--by-path", "--circuit", TINY])
        .arg("--assignment")
        .arg(&odd)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("is not UTF-8"),
        "{err}"
    );
    // A reader that closed the pipe before the output came
    // (`cuzk status | head -0`): a quiet exit 0, no panic.
    let mut child = std::process::Command::new(cli_exe())
        .args(["--addr", &listen, "status"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && err.is_empty(),
        "{:?}: {err}",
        out.status
    );
    assert!(d.terminate());
    assert!(!sock.exists(), "the socket is removed at exit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unix_socket_path_is_taken_only_from_a_dead_daemon() {
    let tmp = tempfile::tempdir().unwrap();
    let at = |p: &std::path::Path| Config {
        listen: format!("unix:{}", p.display()),
        ..Config::default()
    };
    // A regular file is never replaced.
    let file = tmp.path().join("config.toml");
    std::fs::write(&file, "x").unwrap();
    let e = service::Listeners::bind(&at(&file))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("is not a socket"), "{e}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "x");
    // A socket some process serves on is refused.
    let live = tmp.path().join("live.sock");
    let _server = std::os::unix::net::UnixListener::bind(&live).unwrap();
    let e = service::Listeners::bind(&at(&live))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("another process serves on this socket"), "{e}");
    // A socket left by a process that died is taken over.
    let stale = tmp.path().join("stale.sock");
    drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
    assert!(stale.exists());
    service::Listeners::bind(&at(&stale)).await.unwrap();
    // A malformed address is named, not taken for a reachable one.
    let e = service::Listeners::bind(&Config {
        listen: "127.0.0.1:99999".into(),
        ..Config::default()
    })
    .await
    .unwrap_err()
    .to_string();
    assert!(e.contains("the port `99999`"), "{e}");
}

/// The code and message of a refused call, checked to be UNAUTHENTICATED.
fn unauthenticated<T: std::fmt::Debug>(r: Result<tonic::Response<T>, tonic::Status>) -> String {
    let e = r.unwrap_err();
    assert_eq!(e.code(), tonic::Code::Unauthenticated, "{e}");
    e.message().to_string()
}

/// With --auth-token-file every call needs the token: none or a wrong one
/// gets UNAUTHENTICATED, the right one proves; the CLI passes it with
/// --token-file. The metrics endpoint needs none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_guards_every_call() {
    let tmp = tempfile::tempdir().unwrap();
    let token_file = tmp.path().join("token");
    // Surrounding whitespace is not part of the token.
    std::fs::write(&token_file, "  0123456789abcdef-token\n").unwrap();
    let token_s = token_file.display().to_string();
    let (port, mport) = (free_port(), free_port());
    let metrics = format!("127.0.0.1:{mport}");
    let _d = Daemon::start(
        port,
        &tmp.path().join("data"),
        &["--auth-token-file", &token_s, "--metrics-listen", &metrics],
    );
    let a = witness(TINY, 5);

    // No token: every call refused, saying how to pass one.
    let mut none = connect(port).await;
    let m = unauthenticated(none.get_status(pb::GetStatusRequest {}).await);
    assert!(
        m.contains("requires a bearer token") && m.contains("--token-file"),
        "{m}"
    );
    unauthenticated(
        none.submit_proof(inline(TINY, &a, "", pb::Priority::Normal))
            .await,
    );
    let header = pb::SubmitProofChunk {
        part: Some(pb::submit_proof_chunk::Part::Header(
            pb::SubmitProofHeader {
                circuit_id: TINY.into(),
                priority: pb::Priority::Normal as i32,
                idempotency_key: String::new(),
                assignment_bytes: 1,
            },
        )),
    };
    unauthenticated(
        none.submit_proof_stream(tokio_stream::iter(vec![header]))
            .await,
    );
    // Reading jobs too: their ids, circuits and errors are the farm's.
    unauthenticated(
        none.get_job(pb::GetJobRequest {
            job_id: "any".into(),
        })
        .await,
    );
    unauthenticated(none.list_jobs(pb::ListJobsRequest::default()).await);

    // A wrong token: refused too.
    let wrong = cuzk_daemon::AuthToken::new("0123456789abcdef-tokeN").unwrap();
    let mut bad = connect_with(port, Some(&wrong)).await;
    let m = unauthenticated(bad.get_status(pb::GetStatusRequest {}).await);
    assert!(m.contains("does not match") && m.contains("token"), "{m}");
    unauthenticated(
        bad.submit_proof(inline(TINY, &a, "", pb::Priority::Normal))
            .await,
    );

    // The right token: a proof.
    let right = cuzk_daemon::AuthToken::from_file(&token_file).unwrap();
    let mut c = connect_with(port, Some(&right)).await;
    let job = submit(&mut c, TINY, &a, "", pb::Priority::Normal).await;
    let r = await_done(&mut c, &job).await;
    assert!(verifies(TINY, &r.proof, &a));
    let s = c
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(s.done, 1, "refused submissions made no job");

    // The metrics endpoint needs no token.
    let text = http_get(mport, "/metrics");
    assert!(text.contains("cuzk_jobs{state=\"done\"} 1"), "{text}");

    // The CLI: with --token-file it works, without or with another token
    // it fails saying so.
    let addr = format!("http://127.0.0.1:{port}");
    let cli = |args: &[&str]| {
        let out = std::process::Command::new(cli_exe())
            .args(["--addr", &addr])
            .args(args)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.success(), text)
    };
    let (ok, out) = cli(&["--token-file", &token_s, "status"]);
    assert!(ok && out.contains("1 done"), "{out}");
    let (ok, out) = cli(&["status"]);
    assert!(!ok, "{out}");
    assert!(
        out.contains("UNAUTHENTICATED") && out.contains("give --token-file PATH"),
        "{out}"
    );
    let other = tmp.path().join("other-token");
    std::fs::write(&other, "another-token").unwrap();
    let other_s = other.display().to_string();
    // The option is global: after the subcommand too.
    let (ok, out) = cli(&["status", "--token-file", &other_s]);
    assert!(!ok, "{out}");
    assert!(out.contains("is not the daemon's"), "{out}");
    let missing = tmp.path().join("no-such-token").display().to_string();
    let (ok, out) = cli(&["--token-file", &missing, "status"]);
    assert!(!ok && out.contains(&missing), "{out}");
}

/// The daemon refuses to start on an address other hosts can reach
/// without a token, and with a token file it cannot use; the errors say
/// what to give.
#[test]
fn the_daemon_refuses_to_start_unguarded_or_with_a_bad_token_file() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let sock = format!("unix:{}", tmp.path().join("s.sock").display());
    let refused = |extra: &[&str]| refused_start(&data, extra);
    let e = refused(&["--listen", "0.0.0.0:0"]);
    assert!(
        e.contains("0.0.0.0:0")
            && e.contains("--auth-token-file")
            && e.contains("--allow-unauthenticated"),
        "{e}"
    );
    let missing = tmp.path().join("no-such-token").display().to_string();
    let e = refused(&["--listen", &sock, "--auth-token-file", &missing]);
    assert!(e.contains(&missing), "{e}");
    let empty = tmp.path().join("empty-token");
    std::fs::write(&empty, "\n").unwrap();
    let empty_s = empty.display().to_string();
    let e = refused(&["--listen", "0.0.0.0:0", "--auth-token-file", &empty_s]);
    assert!(e.contains(&empty_s) && e.contains("is empty"), "{e}");
    // A taken port fails the start before the engine's workers start.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let e = refused(&["--listen", &addr]);
    assert!(e.contains(&format!("binding {addr}")), "{e}");
    assert!(
        !e.contains("panicked") && !e.contains("engine started"),
        "{e}"
    );
    let e = refused(&["--listen", "notanaddress"]);
    assert!(e.contains("is not an address"), "{e}");
}

/// `--print-config` prints what the file and the flags make, every setting
/// by its TOML name, as a file `--config` reads back; it checks the result
/// and starts nothing. A missing assignment directory fails the start.
#[test]
fn print_config_round_trips_and_assignment_dirs_must_exist() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let file = tmp.path().join("cuzk.toml");
    std::fs::write(
        &file,
        "max_queued_bytes = 12345\nverify_keys = true\nlease_secs = 9\n",
    )
    .unwrap();
    let print = |extra: &[&str]| {
        std::process::Command::new(daemon_exe())
            .arg("--config")
            .arg(&file)
            .args(["--data-dir", &data.display().to_string(), "--print-config"])
            .args(extra)
            .output()
            .unwrap()
    };
    let w = tmp.path().join("w");
    std::fs::create_dir(&w).unwrap();
    let w_s = w.display().to_string();
    let out = print(&[
        "--assignment-dir",
        &w_s,
        "--lease-secs",
        "30",
        "--shutdown-grace-secs",
        "45",
    ]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for line in [
        "max_queued_bytes = 12345",
        "verify_keys = true",
        "lease_secs = 30",
        "shutdown_grace_secs = 45",
        "retain_finished_secs = 604800",
        "load_ahead = true",
        "# devices (unset): every GPU",
        "payloads",
    ] {
        assert!(text.contains(line), "{line} not in\n{text}");
    }
    let printed = tmp.path().join("printed.toml");
    std::fs::write(&printed, &text).unwrap();
    let back = Config::from_file(&printed).unwrap();
    assert_eq!(back.assignment_dirs, vec![w.clone()]);
    assert_eq!(
        (
            back.max_queued_bytes,
            back.lease_secs,
            back.shutdown_grace_secs
        ),
        (12345, 30, 45)
    );
    assert_eq!(back.data_dir, data);
    assert!(!data.exists(), "--print-config started the daemon");
    // Checked as a start would: values, and the files it reads.
    let missing = tmp.path().join("no-such-dir").display().to_string();
    for (flags, named) in [
        (["--lease-secs", "1"], "lease_secs"),
        (["--assignment-dir", &missing], &missing[..]),
        (["--auth-token-file", &missing], &missing[..]),
    ] {
        let out = print(&flags);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(named),
            "{flags:?}: {err}"
        );
    }

    let sock = format!("unix:{}", tmp.path().join("s.sock").display());
    let e = refused_start(&data, &["--listen", &sock, "--assignment-dir", &missing]);
    assert!(e.contains(&missing) && e.contains("assignment_dirs"), "{e}");
}

/// The error output of a `cuzk-daemon` over `data` with `extra` flags,
/// which must exit with a failure (within a minute).
fn refused_start(data: &std::path::Path, extra: &[&str]) -> String {
    let mut child = std::process::Command::new(daemon_exe())
        .args(["--devices", "cpu", "--data-dir"])
        .arg(data)
        .args(extra)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A daemon that started after all would serve forever.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("cuzk-daemon {extra:?} started");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(!status.success(), "{err}");
    err
}

/// The `cuzk` CLI with `args`: whether it succeeded, and its output.
fn run_cli(args: &[&str]) -> (bool, String) {
    let out = std::process::Command::new(cli_exe())
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

/// A client of a TLS daemon with `tls` and `token`, tried once (the
/// daemon is up): the error of setting TLS up (no system roots), of
/// connecting or of a GetStatus call, or `None` when the call went
/// through.
async fn tls_failure(
    port: u16,
    tls: tonic::transport::ClientTlsConfig,
    token: Option<&cuzk_daemon::AuthToken>,
) -> Option<String> {
    let endpoint =
        match tonic::transport::Endpoint::from_shared(format!("https://127.0.0.1:{port}"))
            .unwrap()
            .tls_config(tls)
        {
            Ok(e) => e,
            Err(e) => return Some(cuzk_daemon::tls::error_chain(&e)),
        };
    let ch = match endpoint.connect().await {
        Ok(ch) => ch,
        Err(e) => return Some(cuzk_daemon::tls::error_chain(&e)),
    };
    let mut c = pb::prover_client::ProverClient::with_interceptor(
        ch,
        cuzk_daemon::auth::SendToken::new(token),
    );
    c.get_status(pb::GetStatusRequest {})
        .await
        .err()
        .map(|e| cuzk_daemon::tls::error_chain(&e))
}

/// A daemon serving TLS with a token, on an address other hosts can
/// reach: a client trusting its CA and sending the token proves; a plain
/// client, a client trusting another CA, and the system's roots all fail;
/// the CLI works with https://, --tls-ca-file and --token-file, and says
/// what to give when they are missing. A token without TLS on such an
/// address is served with a warning that it travels in clear.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_a_token() {
    let tmp = tempfile::tempdir().unwrap();
    let pki = Pki::write(tmp.path());
    let token_file = tmp.path().join("token");
    std::fs::write(&token_file, "tls-test-token\n").unwrap();
    let token = cuzk_daemon::AuthToken::from_file(&token_file).unwrap();
    let s = |p: &std::path::Path| p.display().to_string();
    let port = free_port();
    let data = tmp.path().join("data");
    let _d = Daemon::start_on(
        &format!("0.0.0.0:{port}"),
        &data,
        &[
            "--auth-token-file",
            &s(&token_file),
            "--tls-cert-file",
            &s(&pki.cert),
            "--tls-key-file",
            &s(&pki.key),
        ],
    );

    // Trusting the CA, with the token: a proof (the certificate checked
    // against the address's IP).
    let tls = cuzk_daemon::tls::client_config(Some(&pki.ca), None, None).unwrap();
    let mut c = connect_tls(port, tls, Some(&token)).await;
    let a = witness(TINY, 7);
    let job = submit(&mut c, TINY, &a, "", pb::Priority::Normal).await;
    let r = await_done(&mut c, &job).await;
    assert!(verifies(TINY, &r.proof, &a));
    let log = std::fs::read_to_string(data.join("daemon.log")).unwrap();
    assert!(log.contains("serving gRPC"), "{log}");
    assert!(!log.contains("travels in clear"), "{log}");

    // Plain gRPC: no answer.
    let plain = tonic::transport::Endpoint::from_shared(format!("http://127.0.0.1:{port}"))
        .unwrap()
        .connect()
        .await;
    if let Ok(ch) = plain {
        let mut p = pb::prover_client::ProverClient::with_interceptor(
            ch,
            cuzk_daemon::auth::SendToken::new(Some(&token)),
        );
        let e = p.get_status(pb::GetStatusRequest {}).await.unwrap_err();
        assert_ne!(e.code(), tonic::Code::Unauthenticated, "{e}");
    }

    // Trusting another CA, or the system's: the certificate is refused.
    let other = cuzk_daemon::tls::client_config(Some(&pki.other_ca), None, None).unwrap();
    let e = tls_failure(port, other, Some(&token))
        .await
        .expect("refused");
    assert!(e.contains("UnknownIssuer"), "{e}");
    // (A host without CA certificates fails earlier, setting TLS up.)
    let system = cuzk_daemon::tls::client_config(None, None, None).unwrap();
    let e = tls_failure(port, system, Some(&token))
        .await
        .expect("refused");
    assert!(
        e.contains("certificate") || e.contains("native certs"),
        "{e}"
    );
    // Trusting the CA but expecting another name: refused too.
    let tls =
        cuzk_daemon::tls::client_config(Some(&pki.ca), Some("prover-9.example"), None).unwrap();
    let e = tls_failure(port, tls, Some(&token)).await.expect("refused");
    assert!(e.contains("prover-9.example"), "{e}");

    // The CLI: https://, the CA and the token (the name checked is
    // --tls-domain's).
    let https = format!("https://127.0.0.1:{port}");
    let (ca, tok) = (s(&pki.ca), s(&token_file));
    let (ok, out) = run_cli(&[
        "--addr",
        &https,
        "--tls-ca-file",
        &ca,
        "--tls-domain",
        "localhost",
        "--token-file",
        &tok,
        "status",
    ]);
    assert!(ok && out.contains("1 done"), "{out}");
    // Without the token: the token's error, over TLS.
    let (ok, out) = run_cli(&["--addr", &https, "--tls-ca-file", &ca, "status"]);
    assert!(!ok && out.contains("give --token-file PATH"), "{out}");
    // Without the CA: the certificate is refused, and the error says what
    // to give.
    let (ok, out) = run_cli(&["--addr", &https, "--token-file", &tok, "status"]);
    assert!(!ok && out.contains("--tls-ca-file"), "{out}");
    // Plain gRPC to a TLS daemon: the error points at https://.
    let http = format!("http://127.0.0.1:{port}");
    let (ok, out) = run_cli(&["--addr", &http, "--token-file", &tok, "status"]);
    assert!(!ok && out.contains("https://"), "{out}");
    // TLS options with a plain address: refused before connecting.
    let (ok, out) = run_cli(&["--addr", &http, "--tls-ca-file", &ca, "status"]);
    assert!(!ok && out.contains("not https://"), "{out}");

    // A token without TLS on an address other hosts can reach: served,
    // with a warning in the log.
    let plain_port = free_port();
    let plain_data = tmp.path().join("plain");
    let _p = Daemon::start_on(
        &format!("0.0.0.0:{plain_port}"),
        &plain_data,
        &["--auth-token-file", &tok],
    );
    let mut c = connect_with(plain_port, Some(&token)).await;
    c.get_status(pb::GetStatusRequest {}).await.unwrap();
    let log = std::fs::read_to_string(plain_data.join("daemon.log")).unwrap();
    assert!(
        log.contains("travels in clear") && log.contains("--tls-cert-file"),
        "{log}"
    );
}

/// With --tls-client-ca-file every client must present a certificate that
/// CA signed: one with it is served (the CLI too), one without a
/// certificate or with another CA's is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_requires_a_client_certificate() {
    let tmp = tempfile::tempdir().unwrap();
    let pki = Pki::write(tmp.path());
    let s = |p: &std::path::Path| p.display().to_string();
    let port = free_port();
    let _d = Daemon::start(
        port,
        &tmp.path().join("data"),
        &[
            "--tls-cert-file",
            &s(&pki.cert),
            "--tls-key-file",
            &s(&pki.key),
            "--tls-client-ca-file",
            &s(&pki.ca),
        ],
    );
    let with_cert = |cert: &std::path::Path, key: &std::path::Path| {
        cuzk_daemon::tls::client_config(Some(&pki.ca), None, Some((cert, key))).unwrap()
    };
    let mut c = connect_tls(port, with_cert(&pki.client_cert, &pki.client_key), None).await;
    c.get_status(pb::GetStatusRequest {}).await.unwrap();

    let none = cuzk_daemon::tls::client_config(Some(&pki.ca), None, None).unwrap();
    assert!(
        tls_failure(port, none, None).await.is_some(),
        "no certificate"
    );
    let other = with_cert(&pki.other_client_cert, &pki.other_client_key);
    assert!(
        tls_failure(port, other, None).await.is_some(),
        "another CA's certificate"
    );

    let https = format!("https://127.0.0.1:{port}");
    let (ca, cert, key) = (s(&pki.ca), s(&pki.client_cert), s(&pki.client_key));
    let (ok, out) = run_cli(&[
        "--addr",
        &https,
        "--tls-ca-file",
        &ca,
        "--tls-cert-file",
        &cert,
        "--tls-key-file",
        &key,
        "status",
    ]);
    assert!(ok && out.contains("0 done"), "{out}");
    let (ok, out) = run_cli(&["--addr", &https, "--tls-ca-file", &ca, "status"]);
    assert!(!ok, "{out}");
    let (ok, out) = run_cli(&["--addr", &https, "--tls-cert-file", &cert, "status"]);
    assert!(!ok && out.contains("--tls-key-file"), "{out}");
}

/// Bad TLS settings fail the start, naming the setting or the file.
#[test]
fn the_daemon_refuses_to_start_with_bad_tls_settings() {
    let tmp = tempfile::tempdir().unwrap();
    let pki = Pki::write(tmp.path());
    let data = tmp.path().join("data");
    let s = |p: &std::path::Path| p.display().to_string();
    let (cert, key) = (s(&pki.cert), s(&pki.key));
    let e = refused_start(&data, &["--tls-cert-file", &cert]);
    assert!(
        e.contains("without its private key") && e.contains("--tls-key-file"),
        "{e}"
    );
    let e = refused_start(&data, &["--tls-key-file", &key]);
    assert!(
        e.contains("without its certificate") && e.contains("--tls-cert-file"),
        "{e}"
    );
    let sock = format!("unix:{}", tmp.path().join("s.sock").display());
    let e = refused_start(
        &data,
        &[
            "--listen",
            &sock,
            "--tls-cert-file",
            &cert,
            "--tls-key-file",
            &key,
        ],
    );
    assert!(e.contains(&sock) && e.contains("HOST:PORT"), "{e}");
    let missing = s(&tmp.path().join("no-such.pem"));
    let e = refused_start(
        &data,
        &["--tls-cert-file", &missing, "--tls-key-file", &key],
    );
    assert!(e.contains(&missing), "{e}");
    // The key of another certificate (the client's): both files named.
    let other_key = s(&pki.client_key);
    let e = refused_start(
        &data,
        &["--tls-cert-file", &cert, "--tls-key-file", &other_key],
    );
    assert!(e.contains(&cert) && e.contains(&other_key), "{e}");
}

#[test]
fn keygen_writes_over_a_key_only_with_force() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().display().to_string();
    let keygen = |extra: &[&str]| {
        let mut args = vec!["keygen", "--key-dir", &dir, "--porep-log-domain", "8"];
        args.extend_from_slice(extra);
        run_cli(&args)
    };
    let (ok, out) = keygen(&[]);
    assert!(ok, "{out}");
    let pk = tmp.path().join("porep-2^8/pk.bin");
    let before = std::fs::read(&pk).unwrap();
    let (ok, out) = keygen(&[]);
    assert!(
        !ok && out.contains("--force") && out.contains("already has a key"),
        "{out}"
    );
    assert_eq!(
        std::fs::read(&pk).unwrap(),
        before,
        "the key is left as it was"
    );
    let (ok, out) = keygen(&["--force"]);
    assert!(ok, "{out}");
    assert_ne!(
        std::fs::read(&pk).unwrap(),
        before,
        "a new random-point key"
    );
}

/// A job claimed ahead (loaded while another proof runs) goes back to the
/// queue, its attempt not counted, when the shutdown grace runs out with
/// that proof still running; /healthz says 503 from the stop on.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_job_claimed_ahead_goes_back_when_the_grace_runs_out() {
    let tmp = tempfile::tempdir().unwrap();
    let config = Config {
        data_dir: tmp.path().join("data"),
        key_dirs: vec![keys().to_path_buf()],
        devices: Some(Vec::new()),
        gpu_workers_per_device: 1,
        load_ahead: true,
        max_attempts: 1,
        ..Config::default()
    };
    let engine = Engine::start(config).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mport = listener.local_addr().unwrap().port();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let metrics = tokio::spawn(cuzk_daemon::metrics::serve_on(
        engine.clone(),
        listener,
        async {
            let _ = stopped.await;
        },
    ));
    let health = move || tokio::task::spawn_blocking(move || http_get(mport, "/healthz"));
    let ok = health().await.unwrap();
    assert!(
        ok.starts_with("HTTP/1.0 200") && ok.ends_with("\r\n\r\nok\n"),
        "{ok}"
    );
    // Three jobs: a worker's claim ahead is made as its proof starts, so
    // the second may come too late for the first proof's.
    let mut ids = Vec::new();
    for i in 0..3 {
        let (id, dup) = engine
            .submit(cuzk_daemon::Submit {
                circuit_id: ONE.into(),
                priority: cuzk_daemon::Priority::Normal,
                idempotency_key: None,
                payload: cuzk_daemon::Payload::Bytes(witness(ONE, i).to_bytes()),
            })
            .await
            .unwrap();
        assert!(!dup);
        ids.push(id);
    }
    // One job proves while the next is claimed ahead.
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    let (proving, ahead) = loop {
        let mut running = Vec::new();
        for id in &ids {
            let j = engine.store().get(id).await.unwrap().unwrap();
            if j.state == cuzk_daemon::JobState::Running {
                running.push(j);
            }
        }
        if let [a, b] = &running[..] {
            match (a.claimed_ahead, b.claimed_ahead) {
                (false, true) => break (a.clone(), b.clone()),
                (true, false) => break (b.clone(), a.clone()),
                _ => {}
            }
        }
        assert!(std::time::Instant::now() < deadline, "no job claimed ahead");
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    assert_eq!((proving.attempts, ahead.attempts), (1, 0));
    engine.begin_shutdown();
    let down = health().await.unwrap();
    assert!(
        down.starts_with("HTTP/1.0 503") && down.ends_with("\r\n\r\nshutting down\n"),
        "{down}"
    );
    assert_eq!(engine.shutdown(Duration::ZERO).await, 1, "a proof running");
    let _ = stop.send(());
    metrics.await.unwrap().unwrap();
    let url = format!("sqlite://{}", tmp.path().join("data/jobs.db").display());
    let store = cuzk_daemon::JobStore::open(&url).await.unwrap();
    let cut = store.get(&proving.id).await.unwrap().unwrap();
    assert_eq!(
        (cut.state, cut.attempts),
        (cuzk_daemon::JobState::Running, 1)
    );
    let back = store.get(&ahead.id).await.unwrap().unwrap();
    assert_eq!(
        (
            back.state,
            back.attempts,
            back.claimed_ahead,
            back.started_us
        ),
        (cuzk_daemon::JobState::Queued, 0, false, None)
    );
}

/// The log tells a job's life (accepted, ended, with its times), the
/// metrics address at the start and "stopped" last; /healthz answers ok.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_tells_a_jobs_life() {
    let tmp = tempfile::tempdir().unwrap();
    let (port, mport) = (free_port(), free_port());
    let maddr = format!("127.0.0.1:{mport}");
    let mut daemon = Daemon::start(port, tmp.path(), &["--metrics-listen", &maddr]);
    let mut c = connect(port).await;
    let a = witness(TINY, 1);
    let job = submit(&mut c, TINY, &a, "key-1", pb::Priority::High).await;
    await_done(&mut c, &job).await;
    let again = c
        .submit_proof(inline(TINY, &a, "key-1", pb::Priority::High))
        .await
        .unwrap()
        .into_inner();
    assert!(again.duplicate);
    let ok = tokio::task::spawn_blocking(move || http_get(mport, "/healthz"))
        .await
        .unwrap();
    assert!(
        ok.starts_with("HTTP/1.0 200") && ok.ends_with("ok\n"),
        "{ok}"
    );
    assert!(daemon.terminate(), "a clean stop");
    let log = std::fs::read_to_string(tmp.path().join("daemon.log")).unwrap();
    let line = |what: &str| {
        log.lines()
            .find(|l| l.contains(what))
            .unwrap_or_else(|| panic!("no `{what}` in\n{log}"))
            .to_string()
    };
    assert!(line("serving metrics").contains(&maddr), "{log}");
    let accepted: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("job accepted") && l.contains(&job))
        .collect();
    assert_eq!(accepted.len(), 2, "{log}");
    for (l, dup) in accepted.iter().zip(["duplicate=false", "duplicate=true"]) {
        assert!(
            l.contains(TINY) && l.contains("priority=\"high\"") && l.contains(dup),
            "{l}"
        );
    }
    let ended = line("job ended");
    for field in [
        job.as_str(),
        TINY,
        "state=\"done\"",
        "attempts=1",
        "queue_wait_ms=",
        "proof_ms=",
    ] {
        assert!(ended.contains(field), "{field} not in {ended}");
    }
    let last = log.lines().rev().find(|l| !l.trim().is_empty()).unwrap();
    assert!(last.contains("stopped"), "{log}");
}

/// An ordinary error of either binary is one line of its causes on
/// stderr and exit status 1, without a backtrace even when
/// RUST_BACKTRACE asks for one.
#[test]
fn errors_are_one_line_without_a_backtrace() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |exe: std::path::PathBuf, args: &[&str]| {
        let out = std::process::Command::new(exe)
            .args(args)
            .env("RUST_BACKTRACE", "1")
            .env("RUST_LIB_BACKTRACE", "1")
            .stdout(std::process::Stdio::null())
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let data = tmp.path().join("data").display().to_string();
    let (code, err) = run(daemon_exe(), &["--devices", "zero", "--data-dir", &data]);
    assert_eq!(code, Some(1), "{err}");
    assert_eq!(
        err,
        "cuzk-daemon: --devices zero: invalid digit found in string (give 0,1,... or cpu)\n"
    );
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let (code, err) = run(
        daemon_exe(),
        &["--devices", "cpu", "--data-dir", &data, "--listen", &addr],
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.starts_with(&format!("cuzk-daemon: binding {addr}: ")),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    let dead = format!("http://127.0.0.1:{}", free_port());
    let (code, err) = run(cli_exe(), &["--addr", &dead, "status"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.starts_with("cuzk: ") && err.contains(&dead), "{err}");
    assert!(!err.contains("backtrace"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// `cuzk` with `args` against the daemon at `addr`: its exit status,
/// stdout and stderr.
fn cli_at(addr: &str, args: &[&str]) -> (bool, String, String) {
    let out = std::process::Command::new(cli_exe())
        .args(["--addr", addr])
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// GetJob on queued, done, cancelled and unknown jobs; ListJobs's order,
/// filters, pages and limits; and `cuzk job` / `cuzk jobs` / `cuzk status`
/// with --json read back.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn get_job_and_list_jobs() {
    let tmp = tempfile::tempdir().unwrap();
    let port = free_port();
    let config = Config {
        listen: format!("127.0.0.1:{port}"),
        data_dir: tmp.path().join("data"),
        key_dirs: vec![keys().to_path_buf()],
        devices: Some(Vec::new()),
        // One worker, no claims ahead: jobs behind the first stay queued.
        gpu_workers_per_device: 1,
        load_ahead: false,
        ..Config::default()
    };
    let engine = Engine::start(config).await.unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(service::serve(engine, async {
        let _ = stopped.await;
    }));
    let mut c = connect(port).await;
    let get = |c: &mut Client, id: &str| {
        let mut c = c.clone();
        let id = id.to_string();
        async move { c.get_job(pb::GetJobRequest { job_id: id }).await }
    };

    // a proves first; then b (high), d (normal), c (low): c waits behind
    // two proofs at least.
    let (wa, wb) = (witness(ONE, 1), witness(ONE, 2));
    let (wc, wd) = (witness(TINY, 3), witness(TINY, 4));
    let a = submit(&mut c, ONE, &wa, "", pb::Priority::Normal).await;
    let b = submit(&mut c, ONE, &wb, "", pb::Priority::High).await;
    let cj = submit(&mut c, TINY, &wc, "", pb::Priority::Low).await;
    let d = submit(&mut c, TINY, &wd, "", pb::Priority::Normal).await;
    let r = get(&mut c, &cj).await.unwrap().into_inner();
    assert_eq!(r.state, pb::JobState::Queued as i32, "{r:?}");
    assert_eq!(r.priority, pb::Priority::Low as i32);
    assert_eq!((r.circuit_id.as_str(), r.attempts), (TINY, 0));
    assert_eq!(
        (r.device, r.started_unix_us, r.finished_unix_us),
        (-1, 0, 0)
    );
    assert!(r.submitted_unix_us > 0 && r.proof.is_empty() && r.timings.is_none());
    c.cancel_proof(pb::CancelProofRequest { job_id: cj.clone() })
        .await
        .unwrap();
    for (id, w) in [(&a, &wa), (&b, &wb), (&d, &wd)] {
        let r = await_done(&mut c, id).await;
        assert!(verifies(&r.circuit_id, &r.proof, w));
    }
    // Done: the result as AwaitProof gives it, priority included.
    let r = get(&mut c, &b).await.unwrap().into_inner();
    assert_eq!(r.state, pb::JobState::Done as i32);
    assert_eq!(
        (r.priority, r.attempts, r.device),
        (pb::Priority::High as i32, 1, -1)
    );
    assert!(verifies(ONE, &r.proof, &wb));
    assert!(r.timings.unwrap().total_ms > 0.0 && !r.worker.is_empty());
    assert_eq!(r, poll(&mut c, &b, 1).await);
    let r = get(&mut c, &cj).await.unwrap().into_inner();
    assert_eq!(r.state, pb::JobState::Cancelled as i32);
    assert_eq!((r.attempts, r.started_unix_us), (0, 0));
    assert!(r.finished_unix_us >= r.submitted_unix_us && r.proof.is_empty());
    let e = get(&mut c, "no-such-job").await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::NotFound);
    assert!(
        e.message().contains("no job no-such-job"),
        "{}",
        e.message()
    );

    // Newest submission first, ties by id descending; no proofs.
    let mut all = Vec::new();
    for id in [&a, &b, &cj, &d] {
        all.push(get(&mut c, id).await.unwrap().into_inner());
    }
    all.sort_by(|x, y| (y.submitted_unix_us, &y.job_id).cmp(&(x.submitted_unix_us, &x.job_id)));
    let expect = |f: &dyn Fn(&pb::ProofResult) -> bool| -> Vec<String> {
        all.iter()
            .filter(|r| f(r))
            .map(|r| r.job_id.clone())
            .collect()
    };
    let list = |states: &[pb::JobState], circuit: &str, limit: u32, token: &str| {
        let mut c = c.clone();
        let r = pb::ListJobsRequest {
            states: states.iter().map(|&s| s as i32).collect(),
            circuit_id: circuit.into(),
            limit,
            page_token: token.into(),
        };
        async move { c.list_jobs(r).await }
    };
    let ids = |r: &pb::ListJobsResponse| -> Vec<String> {
        r.jobs.iter().map(|j| j.job_id.clone()).collect()
    };
    let r = list(&[], "", 0, "").await.unwrap().into_inner();
    assert_eq!(ids(&r), expect(&|_| true));
    assert!(r.next_page_token.is_empty());
    for (listed, full) in r.jobs.iter().zip(&all) {
        let mut full = full.clone();
        full.proof.clear();
        assert_eq!(listed, &full, "a listed job is GetJob's but for the proof");
    }
    // Filters: states (any of), a circuit, both, an unknown circuit.
    use pb::JobState::{Cancelled, Done, Failed, Queued, Running};
    let r = list(&[Done], "", 0, "").await.unwrap().into_inner();
    assert_eq!(ids(&r), expect(&|r| r.state == Done as i32));
    assert_eq!(r.jobs.len(), 3);
    let r = list(&[Cancelled, Failed], "", 0, "")
        .await
        .unwrap()
        .into_inner();
    assert_eq!(ids(&r), [cj.as_str()]);
    assert!(list(&[Queued, Running], "", 0, "")
        .await
        .unwrap()
        .into_inner()
        .jobs
        .is_empty());
    let r = list(&[], TINY, 0, "").await.unwrap().into_inner();
    assert_eq!(ids(&r), expect(&|r| r.circuit_id == TINY));
    assert_eq!(r.jobs.len(), 2);
    let r = list(&[Done], TINY, 0, "").await.unwrap().into_inner();
    assert_eq!(ids(&r), [d.as_str()]);
    assert!(list(&[], "nope", 0, "")
        .await
        .unwrap()
        .into_inner()
        .jobs
        .is_empty());
    // Pages of one and of three follow each other to the end.
    for size in [1, 3] {
        let (mut seen, mut token, mut pages) = (Vec::new(), String::new(), 0);
        loop {
            let r = list(&[], "", size, &token).await.unwrap().into_inner();
            assert!(r.jobs.len() <= size as usize);
            seen.extend(ids(&r));
            pages += 1;
            if r.next_page_token.is_empty() {
                break;
            }
            token = r.next_page_token;
        }
        assert_eq!(seen, expect(&|_| true), "pages of {size}");
        assert_eq!(pages, 4usize.div_ceil(size as usize));
    }
    // A page token with a filter: the done jobs after the newest one.
    let first = list(&[Done], "", 1, "").await.unwrap().into_inner();
    let rest = list(&[Done], "", 0, &first.next_page_token)
        .await
        .unwrap()
        .into_inner();
    assert_eq!(ids(&rest), expect(&|r| r.state == Done as i32)[1..]);
    // Limits: 1000 is the most; above, and bad states or tokens, refused.
    assert_eq!(
        list(&[], "", 1000, "")
            .await
            .unwrap()
            .into_inner()
            .jobs
            .len(),
        4
    );
    let e = list(&[], "", 1001, "").await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
    assert!(
        e.message().contains("limit 1001: give 1 to 1000"),
        "{}",
        e.message()
    );
    let e = list(&[pb::JobState::Unspecified], "", 0, "")
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
    assert!(e.message().contains("state 0"), "{}", e.message());
    let mut odd = pb::ListJobsRequest::default();
    odd.states.push(42);
    let e = c.clone().list_jobs(odd).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
    let e = list(&[], "", 0, "not-a-token").await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
    assert!(e.message().contains("next_page_token"), "{}", e.message());

    // The CLI, its --json read back.
    let addr = format!("http://127.0.0.1:{port}");
    let json = |args: &[&str]| -> serde_json::Value {
        let (ok, out, err) = cli_at(&addr, args);
        assert!(ok, "cuzk {args:?}: {err}");
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("cuzk {args:?}: {e}: {out}"))
    };
    let v = json(&["job", &b, "--json"]);
    assert_eq!(v["job_id"], b.as_str());
    assert_eq!(
        (v["state"].as_str(), v["priority"].as_str()),
        (Some("done"), Some("high"))
    );
    assert_eq!(
        (v["circuit_id"].as_str(), v["attempts"].as_u64()),
        (Some(ONE), Some(1))
    );
    assert_eq!(
        (v["device"].as_i64(), v["proof_bytes"].as_u64()),
        (Some(-1), Some(192))
    );
    assert!(v["timings"]["total_ms"].as_f64().unwrap() > 0.0);
    assert_eq!(
        v["submitted_unix_us"].as_i64(),
        Some(
            all.iter()
                .find(|r| r.job_id == b)
                .unwrap()
                .submitted_unix_us
        )
    );
    let v = json(&["job", &cj, "--json"]);
    assert_eq!(
        (v["state"].as_str(), v["priority"].as_str()),
        (Some("cancelled"), Some("low"))
    );
    assert!(v["timings"].is_null());
    let (ok, out, _) = cli_at(&addr, &["job", &b]);
    assert!(ok);
    for line in [
        "state:     done",
        "priority:  high",
        "device:    CPU path",
        "queue:     ",
    ] {
        assert!(out.contains(line), "{line}: {out}");
    }
    let (ok, _, err) = cli_at(&addr, &["job", "no-such-job"]);
    assert!(!ok && err.contains("no job no-such-job"), "{err}");
    let listed = |v: serde_json::Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|j| j["job_id"].as_str().unwrap().to_string())
            .collect()
    };
    let v = json(&["jobs", "--json"]);
    assert_eq!(listed(v.clone()), expect(&|_| true));
    assert!(v[0].get("proof_bytes").is_none());
    let (ok, out, err) = cli_at(&addr, &["jobs", "--json", "--limit", "3"]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(listed(v), expect(&|_| true)[..3]);
    assert!(err.contains("more jobs match than --limit 3"), "{err}");
    let v = json(&[
        "jobs",
        "--json",
        "--state",
        "done,cancelled",
        "--circuit",
        TINY,
    ]);
    assert_eq!(listed(v), expect(&|r| r.circuit_id == TINY));
    let (ok, out, err) = cli_at(&addr, &["jobs", "--state", "running"]);
    assert!(ok && err.is_empty() && out.contains("0 jobs"), "{out}{err}");
    let (ok, out, _) = cli_at(&addr, &["jobs"]);
    assert!(ok && out.contains("4 jobs"), "{out}");
    for r in &all {
        assert!(out.contains(&r.job_id), "{out}");
    }
    let (ok, _, err) = cli_at(&addr, &["jobs", "--state", "finished"]);
    assert!(!ok && err.contains("finished"), "{err}");
    let v = json(&["status", "--json"]);
    assert_eq!(
        (v["done"].as_u64(), v["cancelled"].as_u64()),
        (Some(3), Some(1))
    );
    assert_eq!(v["circuits"], serde_json::json!([TINY, ONE]));
    assert_eq!(v["devices"][0]["proofs_done"].as_u64(), Some(3));
    let (ok, out, _) = cli_at(&addr, &["status", "--raw"]);
    assert!(ok && out.contains("GetStatusResponse"), "{out}");

    let _ = stop.send(());
    server.await.unwrap().unwrap();
}
