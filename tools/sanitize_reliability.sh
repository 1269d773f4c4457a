#!/usr/bin/env bash
# The reliability tests (tests/reliability) under sanitizers, each in its own minimal
# build (the runtime library, the model builder and one test; no tools, benchmarks or
# converters):
#  - build/tsan, ThreadSanitizer: tsan_threads (one Net, 4 threads x 50 inferences,
#    own and shared locked allocators). Its Extractors use one OpenMP thread, so
#    libgomp (not TSan-instrumented) starts no team whose handoffs TSan could not see.
#  - build/oom, LeakSanitizer: alloc_failure (every allocation of a MobileNet-SSD load
#    plus two inferences failed in turn; its own live-block count is the exact check,
#    LSan the second opinion at exit).
#
#   tools/sanitize_reliability.sh [--deps-only|--configure-only] [tsan|lsan|all]     (default all)
#
# tools/test.sh runs the tsan part (its AddressSanitizer build, which includes
# LeakSanitizer, runs alloc_failure). KESTREL_JOBS overrides the parallel build jobs.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/deps.sh
KESTREL_STOP=$(kestrel_stop_flag "${1:-}")
[ -z "$KESTREL_STOP" ] || shift
start=$(date +%s)
JOBS=${KESTREL_JOBS:-$(nproc 2>/dev/null || echo 2)}
minimal=(-DCMAKE_BUILD_TYPE=Release -DKESTREL_BUILD_BENCH=OFF -DKESTREL_BUILD_TOOLS=OFF -DKESTREL_BUILD_CONVERTERS=OFF)

WHAT=${1:-all}
case "$WHAT" in tsan | lsan | all) ;; *) echo "usage: $0 [--deps-only|--configure-only] [tsan|lsan|all]" >&2; exit 2 ;; esac
# Tests on (doctest, python3); g++'s own TSan and LSan run-times come with it.
kestrel_install_deps core tests
kestrel_stop_after deps

if [ "$WHAT" != lsan ]; then
echo "== ThreadSanitizer: tsan_threads (build/tsan)"
cmake -S . -B build/tsan "${minimal[@]}" -DKESTREL_SANITIZE=thread >/dev/null
if [ "$KESTREL_STOP" != configure ]; then
cmake --build build/tsan -j"$JOBS" --target tsan_threads
TSAN_OPTIONS="halt_on_error=1 abort_on_error=1 second_deadlock_stack=1" \
  build/tsan/tests/reliability/tsan_threads
fi
fi

if [ "$WHAT" != tsan ]; then
echo "== LeakSanitizer: alloc_failure (build/oom)"
cmake -S . -B build/oom "${minimal[@]}" -DKESTREL_SANITIZE=leak >/dev/null
if [ "$KESTREL_STOP" != configure ]; then
cmake --build build/oom -j"$JOBS" --target alloc_failure
LSAN_OPTIONS="exitcode=23" build/oom/tests/reliability/alloc_failure
fi
fi

kestrel_stop_after configure
echo "== sanitize_reliability.sh: passed in $(( $(date +%s) - start )) s"
