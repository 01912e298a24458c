#!/usr/bin/env bash
# One phase of a GPU session, from a bundle made by `cargo xtask bundle`
# (bundled as ./run-session), with its logs copied to $OUT (the device
# tool's output folder; default ./session-out). A device call lasts at
# most 10 minutes and a machine stays warm only seconds between calls, so
# the long work runs in a process of its own (setsid) that later calls
# wait on: the bench (bench-start) or a queue of phases (queue-start).
#
#   ./run-session tests          CUZK_REQUIRE_GPU=1 ./run-tests (LIMIT + 10
#                                s cap); TESTS_FIRST="ntt prover": those
#                                executables first
#   ./run-session bench          ./run-bench --full (or $BENCH_ARGS) in the
#                                foreground (LIMIT cap)
#   ./run-session bench-start    the same in the background, then waits as
#                                bench-wait does
#   ./run-session bench-wait     waits up to WAIT seconds (default 560) for
#                                it; copies report.json/.md (or the partial
#                                report) and the log tail to $OUT
#   ./run-session daemon         ./run-daemon-check (DAEMON_K=24, 30 jobs
#                                timed, 10 killed)
#   ./run-session porep27        10 PoRep-shaped 2^POREP_K (27) partitions,
#                                2 workers, under a 16 GiB budget
#                                (bin/prove; device memory back at its
#                                figure before the batch afterwards);
#                                WITNESS_PASS=1: with --witness-pass
#   ./run-session sha20          the same for 10 partitions of the
#                                2^SHA_K (20) SHA-256 chain, every proof
#                                verified
#   ./run-session queue-start    the phases in $PHASES (default: tests
#                                bench sha20 porep27 daemon) one after
#                                another in a process of its own, each
#                                capped at LIMIT seconds (default 1800
#                                there), then waits as queue-wait does;
#                                refused while a queue or bench runs
#   ./run-session queue-wait     waits up to WAIT seconds (default 560);
#                                copies status.txt, report.json/.md (or the
#                                partial report) and logs.tar.gz (every
#                                phase's log, the bench's plots) to $OUT
# LIMIT: each phase's time cap in seconds (default 560; 1800 in a queue).
# Exit status: the phase's (bench-wait, queue-wait: 0 when everything
# finished and passed, 3 while it still runs, 4 when there is nothing to
# wait for: no queue started on this machine, or it died).
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/session-out}
WORK=${WORK:-/tmp/cuzk-session}
mkdir -p "$OUT" "$WORK"
nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv \
    > "$OUT/gpu.csv" 2>&1

# The bench's progress lines (every step with its start time, and the
# indented notes under them), without its tables, into $1/bench-progress.log:
# the tail alone loses the early steps that time a layer.
progress() {
    [ -e "$WORK/bench.log" ] &&
        grep -v -E '^(│|├|└|┌|╞|╘|╭|╰)' "$WORK/bench.log" > "$1/bench-progress.log"
}

wait_bench() {
    local limit=${WAIT:-560} t=0
    while [ -e "$WORK/bench.pid" ] && kill -0 "$(cat "$WORK/bench.pid")" 2>/dev/null; do
        [ "$t" -ge "$limit" ] && break
        sleep 5; t=$((t + 5))
    done
    for f in report.json report.md report.partial.json; do
        [ -e "$WORK/report/$f" ] && cp "$WORK/report/$f" "$OUT/"
    done
    tail -n 200 "$WORK/bench.log" > "$OUT/bench-tail.log" 2>/dev/null
    progress "$OUT"
    if kill -0 "$(cat "$WORK/bench.pid" 2>/dev/null || echo 0)" 2>/dev/null; then
        echo "run-session: the bench still runs (call bench-wait again)"
        return 3
    fi
    local rc
    rc=$(cat "$WORK/bench.rc" 2>/dev/null || echo "?")
    echo "run-session: the bench finished with status $rc"
    [ "$rc" = 0 ]
}

# Whether the process whose pid is in file $1 runs.
alive() { [ -e "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# The queue's progress: one line a phase started and ended, then `done`.
wait_queue() {
    local limit=${WAIT:-560} t=0 q="$WORK/queue"
    if [ ! -e "$q/pid" ]; then
        echo "run-session: no queue was started on this machine (a fresh one?): call queue-start"
        return 4
    fi
    while ! grep -q '^done' "$q/status.txt" 2>/dev/null && alive "$q/pid"; do
        [ "$t" -ge "$limit" ] && break
        sleep 5; t=$((t + 5))
    done
    cp "$q/status.txt" "$OUT/" 2>/dev/null
    for f in report.json report.md report.partial.json; do
        [ -e "$WORK/report/$f" ] && cp "$WORK/report/$f" "$OUT/"
    done
    [ -e "$WORK/bench.log" ] && tail -n 300 "$WORK/bench.log" > "$q/out/bench-tail.log"
    progress "$q/out"
    mkdir -p "$q/out/plots" && cp "$WORK"/report/*.svg "$q/out/plots/" 2>/dev/null
    tar -C "$q" -czf "$OUT/logs.tar.gz" out 2>/dev/null
    cat "$q/status.txt" 2>/dev/null
    if grep -q '^done' "$q/status.txt" 2>/dev/null; then
        ! grep -q ' failed ' "$q/status.txt"
        return
    fi
    if alive "$q/pid"; then
        echo "run-session: the queue still runs (call queue-wait again)"
        return 3
    fi
    echo "run-session: the queue's process ended before its last phase (killed?)"
    return 4
}

QUEUE_LIMIT=${LIMIT:-1800}
LIMIT=${LIMIT:-560}

case "${1:-}" in
    queue-start)
        if alive "$WORK/queue/pid" || alive "$WORK/bench.pid"; then
            echo "run-session: a queue or a bench already runs here: call queue-wait or bench-wait"
            exit 4
        fi
        rm -rf "$WORK/queue" "$WORK/report" "$WORK/bench.log" && mkdir -p "$WORK/queue/out"
        export WORK LIMIT_Q="$QUEUE_LIMIT" PHASES="${PHASES:-tests bench sha20 porep27 daemon}"
        # shellcheck disable=SC2016
        setsid bash -c '
            for p in $PHASES; do
                echo "$p started $(date -u +%H:%M:%S)" >> "$WORK/queue/status.txt"
                if OUT="$WORK/queue/out" LIMIT=${LIMIT_Q} ./run-session "$p" \
                        > "$WORK/queue/out/$p.out" 2>&1; then r=passed; else r="failed ($?)"; fi
                echo "$p ended $(date -u +%H:%M:%S): $r " >> "$WORK/queue/status.txt"
            done
            echo done >> "$WORK/queue/status.txt"' \
            < /dev/null > /dev/null 2>&1 &
        echo $! > "$WORK/queue/pid"
        sleep 2
        wait_queue
        ;;
    queue-wait)
        wait_queue
        ;;
    bench)
        rm -rf "$WORK/report"
        timeout "$LIMIT" ./run-bench ${BENCH_ARGS:---full} --out "$WORK/report" > "$WORK/bench.log" 2>&1
        rc=$?
        tail -n 40 "$WORK/bench.log"
        exit $rc
        ;;
    tests)
        # TESTS_FIRST (if set) passes through to ./run-tests.
        CUZK_REQUIRE_GPU=1 timeout "$((LIMIT + 10))" ./run-tests --test-threads 2 > "$OUT/tests.log" 2>&1
        rc=$?
        grep -E "^test result|FAILED|panicked|passed, .* failed" "$OUT/tests.log" | tail -40
        exit $rc
        ;;
    bench-start)
        if alive "$WORK/queue/pid" || alive "$WORK/bench.pid"; then
            echo "run-session: a queue or a bench already runs here: call queue-wait or bench-wait"
            exit 4
        fi
        rm -rf "$WORK/report" "$WORK/bench.rc"
        setsid bash -c "./run-bench ${BENCH_ARGS:---full} --out '$WORK/report' \
            > '$WORK/bench.log' 2>&1; echo \$? > '$WORK/bench.rc'" < /dev/null > /dev/null 2>&1 &
        echo $! > "$WORK/bench.pid"
        sleep 2
        wait_bench
        ;;
    bench-wait)
        wait_bench
        ;;
    daemon)
        K=${DAEMON_K:-24} JOBS=${JOBS:-10} OUT="$OUT/daemon" timeout "$LIMIT" ./run-daemon-check
        ;;
    porep27 | sha20)
        # 10 partitions, 2 workers, under a 16 GiB budget, by bin/prove.
        pass=()
        if [ "$1" = porep27 ]; then
            circuit=porep k=${POREP_K:-27}
            [ -n "${WITNESS_PASS:-}" ] && pass=(--witness-pass)
        else
            circuit=sha256 k=${SHA_K:-20}
        fi
        CUZK_DEVICE_MEMORY_LIMIT=16GiB timeout "$LIMIT" ./bin/prove --circuit "$circuit" \
            --log-constraints "$k" --batch --proofs 10 --workers 2 \
            "${pass[@]}" --keys-dir "$WORK/keys" > "$OUT/$1.log" 2>&1
        rc=$?
        tail -n 30 "$OUT/$1.log"
        exit $rc
        ;;
    *)
        awk 'NR > 1 && /^#/ { print; next } NR > 1 { exit }' "$0"
        exit 2
        ;;
esac
