#!/usr/bin/env bash
# Runs the whole-model tests (tests/models.rs, tests/runtime.rs) under valgrind memcheck and fails
# on any memory error or definite leak. Installs valgrind with apt-get if it is missing.
#
#   bash scripts/memcheck.sh                        # both test files, debug build
#   bash scripts/memcheck.sh --release              # the same in release (what ships)
#   bash scripts/memcheck.sh -- --skip two_threads  # arguments after -- go to every test binary
#
# valgrind runs threads one at a time and ~30x slower: the threaded tests of tests/runtime.rs
# (two_threads_…, caller_owned_…) take the longest.
# Uses $CARGO_TARGET_DIR when set. Prints one summary line per test binary and a total.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v valgrind >/dev/null; then
    echo "== installing valgrind"
    if [ "$(id -u)" = 0 ]; then apt-get install -y valgrind; else sudo apt-get install -y valgrind; fi
fi

profile=()
if [ "${1:-}" = "--release" ]; then profile=(--release); shift; fi
[ "${1:-}" = "--" ] && shift
test_args=("$@")

echo "== building the test binaries"
binaries=$(cargo test --locked "${profile[@]}" -p sramfit --test models --test runtime --no-run \
    --message-format=json 2>/dev/null |
    python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["test"]:
        print(m["executable"])')

status=0
for bin in $binaries; do
    name=$(basename "$bin")
    log=$(mktemp)
    echo "== valgrind $name"
    # One test thread: valgrind serialises threads anyway, and the log stays readable. Leaks:
    # only definite ones are errors (the test harness keeps some allocations alive at exit).
    if valgrind --tool=memcheck --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
        --show-leak-kinds=definite --log-file="$log" "$bin" --test-threads=1 -q "${test_args[@]}"; then
        :
    else
        status=1
    fi
    grep -E "ERROR SUMMARY|definitely lost" "$log" | sed "s/^==[0-9]*== /  $name: /"
    [ "$status" = 0 ] || { echo "  full log: $log"; continue; }
    rm -f "$log"
done
[ "$status" = 0 ] && echo "memcheck: no errors" || echo "memcheck: ERRORS (see the logs above)"
exit "$status"
