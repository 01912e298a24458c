//! `cuzk-supraseal REQUEST RESPONSE [REPS]`: proves the request's job
//! through supraseal-c2 0.1.2 (once, waiting for its parameter load, then
//! `reps` timed proofs, or REPS when given) and writes the timings and
//! proofs to RESPONSE (see `cuzk_supraseal_peer::request`). Bench-only;
//! cuzk-bench runs it as a process of its own. Exits 1 with a message on
//! stderr on failure, 2 on bad arguments.

use cuzk_supraseal_peer::request::{Request, Response};
use cuzk_supraseal_peer::{Job, Supraseal};
use std::path::PathBuf;
use std::time::Instant;

fn run(req: PathBuf, resp: PathBuf, reps: Option<u32>) -> Result<(), String> {
    let mut q = Request::read(&req)?;
    q.reps = reps.unwrap_or(q.reps);
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
    let usage = || -> ! {
        eprintln!("usage: cuzk-supraseal REQUEST RESPONSE [REPS]");
        std::process::exit(2)
    };
    let mut args = std::env::args_os().skip(1);
    let (Some(req), Some(resp)) = (args.next(), args.next()) else {
        usage()
    };
    let reps = args.next().map(|r| {
        r.to_str()
            .and_then(|r| r.parse().ok())
            .unwrap_or_else(|| usage())
    });
    if args.next().is_some() {
        usage()
    }
    if let Err(e) = run(req.into(), resp.into(), reps) {
        eprintln!("cuzk-supraseal: {e}");
        std::process::exit(1);
    }
}
