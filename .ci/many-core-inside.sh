#!/usr/bin/env bash
# What .ci/many-core-smoke runs inside the emulated machine (from the repository root):
# runner all --smoke, then the two placements runner all does not take by default. The
# output folder is the first argument.
set -euo pipefail
out=$1
runner=target/release/runner
export HANDOFF_PRELOAD_LIB=$PWD/target/release/libhandoff_alloc.so
echo "inside: $(nproc) CPUs; $(cat /sys/devices/system/node/online 2>/dev/null | sed 's/^/nodes /')"
$runner all --smoke --out "$out/all"
$runner queue --pin 4,5,6 --headline --runs 1 --items 5000 --noise-seconds 0.2 --out "$out/pin-4-5-6"
$runner pipeline --cross-l3 --headline --runs 1 --items 5000 --noise-seconds 0.2 --out "$out/cross-l3"
runner/tests/fixtures/sys/dump.sh > "$out/sys.dump"
