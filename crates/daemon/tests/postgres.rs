//! The job store on PostgreSQL, as several daemons share it: two stores
//! (two hosts) and many workers claim concurrently and never take one job
//! twice; a dead host's leases run out and its jobs go to the others;
//! leases run on the server's clock.
//!
//! Needs a server: `eval "$(.ci/postgres)"` starts one and sets
//! CUZK_TEST_DATABASE_URL; built with the `postgres-tests` feature, which
//! `cargo xtask test` turns on when that variable is set (CI's .ci/run
//! starts the server).

mod common;

use common::*;
use cuzk_daemon::job::{JobState, NewJob, Priority};
use cuzk_daemon::pb;
use cuzk_daemon::JobStore;
use sqlx::Connection;
use std::collections::HashSet;
use std::time::Duration;

/// A fresh database on the test server; its URL.
async fn fresh_db() -> String {
    let url = std::env::var("CUZK_TEST_DATABASE_URL")
        .expect("CUZK_TEST_DATABASE_URL: run `eval \"$(.ci/postgres)\"` first");
    let name = format!("cuzk_test_{}", uuid::Uuid::new_v4().simple());
    let mut c = sqlx::PgConnection::connect(&url).await.unwrap();
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&mut c)
        .await
        .unwrap();
    let base = url.rsplit_once('/').unwrap().0;
    format!("{base}/{name}")
}

fn job(i: usize, p: Priority) -> NewJob {
    NewJob {
        id: format!("job-{i:03}"),
        circuit_id: "c".into(),
        priority: p,
        idempotency_key: Some(format!("key-{i}")),
        payload_path: format!("/payloads/{i}"),
        payload_owned: true,
        payload_bytes: 1000,
        payload_digest: None,
    }
}

/// Leases run on the server's clock: both hosts read one clock, close to
/// this machine's (the server runs here), and it runs forward.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_use_the_servers_clock() {
    let url = fresh_db().await;
    let (a, b) = (
        JobStore::open(&url).await.unwrap(),
        JobStore::open(&url).await.unwrap(),
    );
    let t0 = a.now_us().await.unwrap();
    let host = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as i64;
    assert!((t0 - host).abs() < 5_000_000, "{t0} vs {host}");
    tokio::time::sleep(Duration::from_millis(20)).await;
    let t1 = b.now_us().await.unwrap();
    assert!(t1 > t0, "{t0} then {t1}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hosts_never_take_one_job_twice() {
    let url = fresh_db().await;
    let hosts = [
        JobStore::open(&url).await.unwrap(),
        JobStore::open(&url).await.unwrap(),
    ];
    for i in 0..60 {
        let p = Priority::ALL[i % 4];
        let (id, dup) = hosts[i % 2].insert(&job(i, p), i as i64).await.unwrap();
        assert_eq!((id, dup), (format!("job-{i:03}"), false));
    }
    // The same key from the other host is the same job.
    let (id, dup) = hosts[1].insert(&job(0, Priority::Low), 100).await.unwrap();
    assert_eq!((id.as_str(), dup), ("job-000", true));
    assert_eq!(hosts[0].depth().await.unwrap(), (60, 60_000));

    // 8 workers on each host claim and complete until the queue is empty.
    let mut tasks = Vec::new();
    for w in 0..16 {
        let s = hosts[w % 2].clone();
        tasks.push(tokio::spawn(async move {
            let owner = format!("host{}-w{w}", w % 2);
            let mut mine = Vec::new();
            while let Some(j) = s.claim(&owner, 1_000, 60_000_000, 5).await.unwrap() {
                let lease = j.lease.clone().unwrap();
                assert!(s
                    .complete(&j.id, &lease, &[1, 2, 3], "{}", w as i64, 2_000)
                    .await
                    .unwrap()
                    .is_some());
                mine.push((j.priority, j.id));
            }
            mine
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    assert_eq!(all.len(), 60, "every job claimed once");
    let ids: HashSet<_> = all.iter().map(|(_, id)| id.clone()).collect();
    assert_eq!(ids.len(), 60, "no job claimed twice");
    let counts = hosts[1].counts().await.unwrap();
    let done: u64 = counts
        .iter()
        .filter(|c| c.1 == JobState::Done)
        .map(|c| c.3)
        .sum();
    assert_eq!(done, 60);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_hosts_jobs_return_to_the_queue() {
    let url = fresh_db().await;
    let (a, b) = (
        JobStore::open(&url).await.unwrap(),
        JobStore::open(&url).await.unwrap(),
    );
    a.insert(&job(1, Priority::High), 1).await.unwrap();
    a.insert(&job(2, Priority::Critical), 2).await.unwrap();
    // Host a takes the critical job, then dies (its lease ends at 110).
    let ja = a.claim("a", 10, 100, 5).await.unwrap().unwrap();
    assert_eq!(ja.id, "job-002");
    let j1 = b.claim("b", 20, 100, 5).await.unwrap().unwrap();
    assert_eq!(j1.id, "job-001");
    assert!(b.claim("b", 50, 100, 5).await.unwrap().is_none());
    let jb = b.claim("b", 111, 100, 5).await.unwrap().unwrap();
    assert_eq!((jb.id.as_str(), jb.attempts), ("job-002", 2));
    // A late result of the dead host is refused; b's is kept.
    let (la, lb) = (ja.lease.unwrap(), jb.lease.unwrap());
    assert!(a
        .complete("job-002", &la, &[9], "{}", 0, 120)
        .await
        .unwrap()
        .is_none());
    assert!(b
        .complete("job-002", &lb, &[7], "{}", 1, 130)
        .await
        .unwrap()
        .is_some());
    let j = a.get("job-002").await.unwrap().unwrap();
    assert_eq!(
        (j.state, j.proof.as_deref()),
        (JobState::Done, Some(&[7u8][..]))
    );
    assert_eq!(
        a.cancel("job-001", 140).await.unwrap().0.state,
        JobState::Running
    );
    let l1 = j1.lease.unwrap();
    assert!(b
        .fail("job-001", &l1, "bad witness", 150)
        .await
        .unwrap()
        .is_some());
    assert_eq!(
        b.get("job-001").await.unwrap().unwrap().state,
        JobState::Failed
    );
    // Given back (a daemon's fault) or unclaimed with a cancellation asked:
    // cancelled, with the time it finished, so retention prunes it.
    a.insert(&job(3, Priority::Normal), 160).await.unwrap();
    a.insert(&job(4, Priority::Normal), 161).await.unwrap();
    let j3 = a.claim("a", 170, 100, 5).await.unwrap().unwrap();
    let j4 = a.claim("a", 171, 100, 5).await.unwrap().unwrap();
    b.cancel("job-003", 172).await.unwrap();
    b.cancel("job-004", 172).await.unwrap();
    assert!(a
        .release("job-003", &j3.lease.unwrap(), "GPU fault", 180)
        .await
        .unwrap()
        .is_some());
    assert!(a
        .unclaim("job-004", &j4.lease.unwrap(), 181)
        .await
        .unwrap()
        .is_some());
    for (id, at) in [("job-003", 180), ("job-004", 181)] {
        let j = b.get(id).await.unwrap().unwrap();
        assert_eq!((j.state, j.finished_us), (JobState::Cancelled, Some(at)));
    }
    assert_eq!(b.prune(200).await.unwrap(), 4);
}

/// Two `cuzk-daemon` processes on one PostgreSQL store and one payload
/// directory, one of them killed with SIGKILL while it proves: the other
/// takes its jobs when their leases run out, and every job is done once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_daemons_one_killed_every_job_done_once() {
    let url = fresh_db().await;
    let tmp = tempfile::tempdir().unwrap();
    let payloads = tmp.path().join("payloads");
    let (pa, pb_) = (free_port(), free_port());
    let flags = |name: &'static str| {
        vec![
            "--database-url".to_string(),
            url.clone(),
            "--payload-dir".into(),
            payloads.display().to_string(),
            "--lease-secs".into(),
            "3".into(),
            "--gpu-workers-per-device".into(),
            "1".into(),
            "--worker-name".into(),
            name.into(),
        ]
    };
    let fa = flags("host-a");
    let fb = flags("host-b");
    let mut a = Daemon::start(
        pa,
        &tmp.path().join("a"),
        &fa.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let _b = Daemon::start(
        pb_,
        &tmp.path().join("b"),
        &fb.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let (mut ca, mut cb) = (connect(pa).await, connect(pb_).await);
    let mut jobs = Vec::new();
    for i in 0..12u8 {
        let w = witness(ONE, i);
        let c = if i % 2 == 0 { &mut ca } else { &mut cb };
        jobs.push((
            submit(c, ONE, &w, &format!("k{i}"), pb::Priority::Normal).await,
            w,
        ));
    }
    // Kill host a once it holds a job.
    for _ in 0..600 {
        let s = ca
            .get_status(pb::GetStatusRequest {})
            .await
            .unwrap()
            .into_inner();
        if s.devices[0].busy_workers > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    a.kill();
    let mut by = std::collections::HashMap::new();
    for (id, w) in &jobs {
        let r = await_done(&mut cb, id).await;
        assert!(verifies(ONE, &r.proof, w), "job {id}");
        *by.entry(r.worker.clone()).or_insert(0) += 1;
    }
    assert!(by.get("host-b").copied().unwrap_or(0) > 0, "{by:?}");
    let s = cb
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!((s.done, s.failed), (12, 0), "every job done once");
    assert_eq!(
        s.queues
            .iter()
            .map(|q| q.queued + q.running + q.claimed_ahead)
            .sum::<u64>(),
        0
    );
}

/// ListJobs's query on PostgreSQL: newest first with ties by id, state and
/// circuit filters, a proof left out, and pages from a cursor that cover
/// every job once (the SQLite store's unit test, on the server).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listing_is_newest_first_filtered_and_paged() {
    use cuzk_daemon::store::{JobCursor, JobFilter};
    let url = fresh_db().await;
    let s = JobStore::open(&url).await.unwrap();
    // Submitted at 1, 2, 2, 3, 4, 5: job-001 and job-002 tie.
    for (i, t) in [(0, 1), (1, 2), (2, 2), (3, 3), (4, 4), (5, 5)] {
        let mut j = job(i, Priority::Normal);
        j.circuit_id = if i % 2 == 0 { "c" } else { "d" }.into();
        s.insert(&j, t).await.unwrap();
    }
    let a = s.claim("w", 10, 100, 5).await.unwrap().unwrap();
    assert!(s
        .complete(&a.id, a.lease.as_deref().unwrap(), &[7; 192], "{}", 0, 11)
        .await
        .unwrap()
        .is_some());
    s.cancel("job-001", 12).await.unwrap();
    let ids = |v: Vec<cuzk_daemon::JobRecord>| v.into_iter().map(|j| j.id).collect::<Vec<_>>();
    let all = s.list(&JobFilter::default(), 100).await.unwrap();
    assert!(all.iter().all(|j| j.proof.is_none()));
    assert_eq!(all[5].state, JobState::Done);
    assert_eq!(
        ids(all),
        ["job-005", "job-004", "job-003", "job-002", "job-001", "job-000"]
    );
    let f = JobFilter {
        states: vec![JobState::Done, JobState::Cancelled],
        ..JobFilter::default()
    };
    assert_eq!(ids(s.list(&f, 100).await.unwrap()), ["job-001", "job-000"]);
    let f = JobFilter {
        states: vec![JobState::Queued],
        circuit_id: Some("d".into()),
        ..JobFilter::default()
    };
    assert_eq!(ids(s.list(&f, 100).await.unwrap()), ["job-005", "job-003"]);
    let mut seen = Vec::new();
    let mut f = JobFilter::default();
    loop {
        let page = s.list(&f, 2).await.unwrap();
        if page.is_empty() {
            break;
        }
        f.after = page.last().map(JobCursor::of);
        seen.extend(ids(page));
    }
    assert_eq!(
        seen,
        ["job-005", "job-004", "job-003", "job-002", "job-001", "job-000"]
    );
}
