#!/usr/bin/env bash
# The daemon's checks on a GPU machine (issue 26), from a bundle made by
# `cargo xtask bundle` (bundled as ./run-daemon-check):
#   1. the prover's own batch figure: bin/prove, a batch of RATE_JOBS
#      PoRep-shaped partitions of 2^K with WORKERS workers;
#   2. cuzk-daemon with WORKERS workers a GPU, fed the same number of jobs of
#      the same shape by the CLI (submitted by path, then awaited): jobs/s,
#      and the ratio to (1). Both follow warm-ups (the prover's: one proof
#      a worker; the daemon's: two jobs a worker, the one it proves and the
#      one it loads ahead). The daemon's counts from the first submission
#      to the last proof, so the first job's load (read and decode of its
#      assignment) is in it; RATE_JOBS (default 30) makes both figures
#      nearer steady state. The jobs cycle over JOBS witness files;
#   3. SIGKILL mid-batch and a restart: every accepted job completes (each
#      awaited proof is written);
#   4. SIGTERM: the daemon exits and the GPU's memory in use returns to its
#      baseline (nvidia-smi, MiB; within 64 MiB).
# Settings (environment): K (log2 domain, default 24), JOBS (10: witness
# files, and the jobs of the SIGKILL check), RATE_JOBS (30), WORKERS
# (2), DEVICES (0; `cpu` for a machine without a GPU), OUT (a folder for the
# logs, default ./daemon-check), PORT (9820). Exits non-zero when a check
# fails; the last line says which.
set -uo pipefail
cd "$(dirname "$0")"
K=${K:-24}
JOBS=${JOBS:-10}
RATE_JOBS=${RATE_JOBS:-30}
WORKERS=${WORKERS:-2}
DEVICES=${DEVICES:-0}
OUT=${OUT:-$PWD/daemon-check}
PORT=${PORT:-9820}
BIN=${BIN:-./bin}
ADDR="http://127.0.0.1:$PORT"
[ "$JOBS" -ge 1 ] && [ "$RATE_JOBS" -ge 1 ] || { echo "daemon-check: JOBS and RATE_JOBS must be at least 1" >&2; exit 2; }
mkdir -p "$OUT"
DATA=$(mktemp -d)
trap '[ -n "${DAEMON:-}" ] && kill -9 "$DAEMON" 2>/dev/null; rm -rf "$DATA"' EXIT
FAILED=
fail() { echo "daemon-check: FAILED: $*" | tee -a "$OUT/summary.txt"; exit 1; }
say() { echo "daemon-check: $*" | tee -a "$OUT/summary.txt"; }
now() { date +%s.%N; }
gpu_mib() {
    if [ "$DEVICES" = cpu ]; then echo 0; return; fi
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i "${DEVICES%%,*}"
}
: > "$OUT/summary.txt"
say "K=$K JOBS=$JOBS RATE_JOBS=$RATE_JOBS WORKERS=$WORKERS DEVICES=$DEVICES"

# Circuit, key and witnesses.
"$BIN/cuzk" keygen --key-dir "$DATA/keys" --porep-log-domain "$K" > "$OUT/keygen.log" 2>&1 \
    || fail "keygen (see keygen.log)"
CIRCUIT="porep-2^$K"
for i in $(seq 0 $((JOBS - 1))); do
    "$BIN/cuzk" witness-porep --log-domain "$K" --partition "$i" --out "$DATA/w$i.asg" \
        >> "$OUT/witness.log" 2>&1 || fail "witness-porep $i (see witness.log)"
done

# 1. The prover's own batch figure.
if [ "$DEVICES" = cpu ]; then cpu_flag=--cpu; else cpu_flag=; fi
"$BIN/prove" --circuit porep --log-constraints "$K" --batch --proofs "$RATE_JOBS" \
    --workers "$WORKERS" $cpu_flag > "$OUT/prove.log" 2>&1 || fail "bin/prove (see prove.log)"
PROVER_RATE=$(grep -o '[0-9.]* proofs/s' "$OUT/prove.log" | tail -1 | cut -d' ' -f1)
say "prover batch: ${PROVER_RATE:-?} proofs/s ($(grep '^batch:' "$OUT/prove.log"))"

BASELINE=$(gpu_mib)
start_daemon() {
    "$BIN/cuzk-daemon" --data-dir "$DATA/d" --key-dir "$DATA/keys" --listen "127.0.0.1:$PORT" \
        --devices "$DEVICES" --gpu-workers-per-device "$WORKERS" >> "$OUT/daemon.log" 2>&1 &
    DAEMON=$!
    for _ in $(seq 1 600); do
        "$BIN/cuzk" --addr "$ADDR" status > /dev/null 2>&1 && return 0
        kill -0 "$DAEMON" 2>/dev/null || fail "the daemon exited at start (see daemon.log)"
        sleep 0.2
    done
    fail "the daemon did not answer within 120 s"
}
submit() { # job number -> job id (the witness files in turn)
    "$BIN/cuzk" --addr "$ADDR" submit --circuit "$CIRCUIT" --assignment "$DATA/w$(($1 % JOBS)).asg" \
        --by-path
}

# 2. Throughput through the daemon.
start_daemon
"$BIN/cuzk" --addr "$ADDR" preload "$CIRCUIT" >> "$OUT/client.log" 2>&1 || fail "preload"
# Warm-up jobs, two a worker at once (first-use costs: tables, each
# worker's pinned buffers for the job it proves and the one it loads
# ahead), as the prover's batch warms up one proof a worker.
warm=()
for i in $(seq 0 $((2 * WORKERS - 1))); do warm+=("$(submit "$i")") || fail "submit (warm-up)"; done
for w in "${warm[@]}"; do
    "$BIN/cuzk" --addr "$ADDR" await "$w" --out "$DATA/warm.bin" >> "$OUT/client.log" 2>&1 \
        || fail "await (warm-up)"
done
t0=$(now)
ids=()
for i in $(seq 0 $((RATE_JOBS - 1))); do ids+=("$(submit "$i")") || fail "submit $i"; done
for id in "${ids[@]}"; do
    "$BIN/cuzk" --addr "$ADDR" await "$id" --out "$DATA/p-$id.bin" >> "$OUT/client.log" 2>&1 \
        || fail "await $id"
done
t1=$(now)
DAEMON_RATE=$(awk -v n="$RATE_JOBS" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", n / (b - a) }')
say "daemon: $RATE_JOBS jobs in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }') s: $DAEMON_RATE jobs/s"
if [ -n "${PROVER_RATE:-}" ]; then
    RATIO=$(awk -v d="$DAEMON_RATE" -v p="$PROVER_RATE" 'BEGIN { printf "%.3f", d / p }')
    say "daemon / prover throughput: $RATIO (at least 0.95 asked)"
    if awk -v r="$RATIO" 'BEGIN { exit !(r < 0.95) }'; then
        FAILED="throughput below 0.95 of the prover's"
        say "FAILED: $FAILED (the other checks go on)"
    fi
fi
"$BIN/cuzk" --addr "$ADDR" status > "$OUT/status-after-batch.txt" 2>&1

# 3. SIGKILL mid-batch, restart, every accepted job completes.
ids=()
for i in $(seq "$JOBS" $((2 * JOBS - 1))); do ids+=("$(submit "$i")") || fail "submit $i"; done
sleep "${KILL_AFTER:-5}"
kill -9 "$DAEMON"; wait "$DAEMON" 2>/dev/null
say "SIGKILL after ${KILL_AFTER:-5} s with ${#ids[@]} jobs accepted"
start_daemon
for id in "${ids[@]}"; do
    "$BIN/cuzk" --addr "$ADDR" await "$id" --out "$DATA/k-$id.bin" >> "$OUT/client.log" 2>&1 \
        || fail "await $id after the restart"
    [ -s "$DATA/k-$id.bin" ] || fail "job $id: no proof after the restart"
done
say "restart: all ${#ids[@]} jobs accepted before SIGKILL completed"

# 4. SIGTERM: exit, and device memory back to its baseline.
kill -TERM "$DAEMON"
for _ in $(seq 1 600); do kill -0 "$DAEMON" 2>/dev/null || break; sleep 0.2; done
kill -0 "$DAEMON" 2>/dev/null && fail "the daemon did not exit within 120 s of SIGTERM"
wait "$DAEMON"; code=$?
AFTER=$(gpu_mib)
say "SIGTERM: exit status $code; GPU memory in use $BASELINE MiB before, $AFTER MiB after"
[ $((AFTER - BASELINE)) -le 64 ] || fail "device memory did not return to its baseline"
[ -z "$FAILED" ] || fail "$FAILED"
say "all checks passed"
