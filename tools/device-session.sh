#!/usr/bin/env bash
# One phase of a GPU session, from a bundle made by `cargo xtask bundle`
# (bundled as ./run-session). Each phase fits one device call of at most
# 10 minutes and copies its logs to $OUT (the device tool's output folder;
# default ./session-out). A machine stays warm only seconds between calls,
# so the long bench runs in a process of its own (setsid) that later calls
# wait on.
#
#   ./run-session tests          CUZK_REQUIRE_GPU=1 ./run-tests (9.5 min cap)
#   ./run-session bench-start    ./run-bench --full (or $BENCH_ARGS) in the
#                                background, then
#                                waits as bench-wait does
#   ./run-session bench-wait     waits up to WAIT seconds (default 560) for
#                                it; copies report.json/.md (or the partial
#                                report) and the log tail to $OUT
#   ./run-session daemon         ./run-daemon-check (K=24, 10 jobs)
#   ./run-session porep27        10 PoRep-shaped 2^27 partitions, 2 workers,
#                                under a 16 GiB budget (bin/prove; device
#                                memory back at its baseline afterwards)
#   ./run-session sha20          the same for 10 partitions of the 2^20
#                                SHA-256 chain, every proof verified
# Exit status: the phase's (bench-wait: 0 when the bench finished and
# passed, 3 while it still runs).
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/session-out}
WORK=${WORK:-/tmp/cuzk-session}
mkdir -p "$OUT" "$WORK"
nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv \
    > "$OUT/gpu.csv" 2>&1

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
    if kill -0 "$(cat "$WORK/bench.pid" 2>/dev/null || echo 0)" 2>/dev/null; then
        echo "run-session: the bench still runs (call bench-wait again)"
        return 3
    fi
    local rc
    rc=$(cat "$WORK/bench.rc" 2>/dev/null || echo "?")
    echo "run-session: the bench finished with status $rc"
    [ "$rc" = 0 ]
}

case "${1:-}" in
    tests)
        CUZK_REQUIRE_GPU=1 timeout 570 ./run-tests --test-threads 2 > "$OUT/tests.log" 2>&1
        rc=$?
        grep -E "^test result|FAILED|panicked|passed, .* failed" "$OUT/tests.log" | tail -40
        exit $rc
        ;;
    bench-start)
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
        K=${K:-24} JOBS=${JOBS:-10} OUT="$OUT/daemon" timeout 560 ./run-daemon-check
        ;;
    porep27)
        CUZK_DEVICE_MEMORY_LIMIT=16GiB timeout 560 ./bin/prove --circuit porep \
            --log-constraints "${K:-27}" --batch --proofs 10 --workers 2 > "$OUT/porep27.log" 2>&1
        rc=$?
        tail -n 30 "$OUT/porep27.log"
        exit $rc
        ;;
    sha20)
        CUZK_DEVICE_MEMORY_LIMIT=16GiB timeout 560 ./bin/prove --circuit sha256 \
            --log-constraints "${K:-20}" --batch --proofs 10 --workers 2 > "$OUT/sha20.log" 2>&1
        rc=$?
        tail -n 30 "$OUT/sha20.log"
        exit $rc
        ;;
    *)
        sed -n '2,23p' "$0"
        exit 2
        ;;
esac
