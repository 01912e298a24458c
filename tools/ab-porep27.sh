#!/usr/bin/env bash
# A/B of two bundles (`cargo xtask bundle`) on one GPU, in one device call:
# the second bundle's GPU tests, then the PoRep-shaped 2^K batch (10
# partitions, 2 workers, CUZK_DEVICE_MEMORY_LIMIT=16GiB, --witness-pass) of
# each bundle, then the second bundle's SHA-256 2^20 batch (every proof
# verified). Run from the repository root with the bundles carried:
#
#   BASE=.bundle/bundle.tar.xz NEW=.bundle/new.tar.xz tools/ab-porep27.sh
#
# TESTS: test executables of the new bundle (default: prover); TLIMIT,
# PLIMIT: time caps (s) of a test executable and of a batch (200 each);
# ORDER: which batches, in order (default: base new); K (27). Logs go to
# $OUT; a summary a batch (its line, busy fraction, timeline, and each
# proof's CPU stage, H stage and H MSM in ms) to standard output.
set -u
OUT=${OUT:-/tmp/ab-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/gpu.csv"
cat "$OUT/gpu.csv"
for b in base new; do mkdir -p "/tmp/ab-$b"; done
tar -xJf "${BASE:-.bundle/bundle.tar.xz}" -C /tmp/ab-base &
tar -xJf "${NEW:-.bundle/new.tar.xz}" -C /tmp/ab-new &
wait
for t in ${TESTS:-prover}; do
    s=$(date +%s)
    (cd /tmp/ab-new/bundle && CUZK_REQUIRE_GPU=1 timeout "${TLIMIT:-200}" ./tests/"$t" \
        --include-ignored --test-threads 2 > "$OUT/test-$t.log" 2>&1)
    echo "test $t rc=$? in $(($(date +%s) - s)) s: $(grep 'test result' "$OUT/test-$t.log" | tail -1)"
done
porep() { # $1: base or new
    (cd "/tmp/ab-$1/bundle" && CUZK_DEVICE_MEMORY_LIMIT=16GiB timeout "${PLIMIT:-200}" \
        ./bin/prove --circuit porep --log-constraints "${K:-27}" --batch --proofs 10 \
        --workers 2 --witness-pass > "$OUT/porep-$1.log" 2>&1)
    echo "porep-$1 rc=$?"
    grep -E "^batch:|busy|timeline|after the batch|^prover:" "$OUT/porep-$1.log" | cut -c1-600
    grep -E "proof [0-9]+: " "$OUT/porep-$1.log" |
        sed -E 's/.*(proof [0-9]+):.*eval ([0-9.]+).*NTT\) ([0-9.]+).* H ([0-9.]+) \| L.*/\1 eval \2 Hstage \3 Hmsm \4/'
}
for r in ${ORDER:-base new}; do porep "$r"; done
(cd /tmp/ab-new/bundle && CUZK_DEVICE_MEMORY_LIMIT=16GiB timeout 120 ./bin/prove --circuit sha256 \
    --log-constraints 20 --batch --proofs 10 --workers 2 > "$OUT/sha20-new.log" 2>&1)
echo "sha20-new rc=$?"
tail -n 6 "$OUT/sha20-new.log" | cut -c1-300
