//! `cuzk-supraseal REQUEST RESPONSE`: proves the request's job through
//! supraseal-c2 0.1.2 (once, waiting for its parameter load, then `reps`
//! timed proofs) and writes the timings and proofs to RESPONSE (see
//! `cuzk_supraseal_peer::request`). Bench-only; cuzk-bench runs it as a
//! process of its own. Exits 1 with a message on stderr on failure.

use cuzk_supraseal_peer::request::{Request, Response};
use cuzk_supraseal_peer::{Job, Supraseal};
use std::path::PathBuf;
use std::time::Instant;

fn run(req: PathBuf, resp: PathBuf) -> Result<(), String> {
    let q = Request::read(&req)?;
    let job = Job {
        abc: [&q.abc[0], &q.abc[1], &q.abc[2]],
        assignment: &q.assignment,
        r: q.r,
        s: q.s,
    };
    let t = Instant::now();
    let ss = Supraseal::load(&q.params, q.density.clone(), q.h_points as usize)?;
    let mut proofs = ss.prove(&[job])?;
    let load_and_first_ms = t.elapsed().as_secs_f64() * 1e3;
    let mut times_ms = Vec::new();
    for _ in 0..q.reps {
        let t = Instant::now();
        proofs.extend(ss.prove(&[job])?);
        times_ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    Response {
        load_and_first_ms,
        times_ms,
        proofs,
    }
    .write(&resp)
}

fn main() {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let [req, resp] = <[PathBuf; 2]>::try_from(args).unwrap_or_else(|_| {
        eprintln!("usage: cuzk-supraseal REQUEST RESPONSE");
        std::process::exit(2)
    });
    if let Err(e) = run(req, resp) {
        eprintln!("cuzk-supraseal: {e}");
        std::process::exit(1);
    }
}
