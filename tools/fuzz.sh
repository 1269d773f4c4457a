#!/usr/bin/env bash
# libFuzzer run of every fuzz target (tests/fuzz): clang build with AddressSanitizer +
# UndefinedBehaviorSanitizer in build/fuzz, seed corpora from the project's models
# (tests/fuzz/seed_corpus.py), then each target for a bounded time:
#
#   tools/fuzz.sh [TARGET...]        # default: all four
#   KESTREL_FUZZ_SECONDS=300 tools/fuzz.sh fuzz_onnx
#   KESTREL_FUZZ_SEED=1 tools/fuzz.sh                # repeatable inputs
#
# Prints one line per target (executions, corpus files, crashes) and exits 1 if any
# target crashed, leaked, timed out or ran out of memory; the input that did is left
# in build/fuzz/fuzz_artifacts/TARGET/ and its path printed. Keep it, minimized
# (TARGET -minimize_crash=1 -runs=10000 FILE), in tests/fuzz/regressions/TARGET/ with
# the fix: the fuzz_replay_TARGET ctest replays it in every build.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/deps.sh
kestrel_install_deps clang libclang-rt-14-dev libomp-14-dev python3 python3-numpy python3-protobuf \
  libonnx-dev libonnx-testdata
JOBS=$(kestrel_jobs)
SECS=${KESTREL_FUZZ_SECONDS:-30}
# A fixed seed (tools/test.sh sets 1) makes a run repeatable up to the time limit;
# unset, libFuzzer picks one and prints it.
SEED_ARGS=()
[ -z "${KESTREL_FUZZ_SEED:-}" ] || SEED_ARGS=(-seed="$KESTREL_FUZZ_SEED")
BUILD=build/fuzz
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(fuzz_model fuzz_prototxt fuzz_caffemodel fuzz_onnx)

# -max_len per target, as seed_corpus.py's MAX_BYTES (a longer seed would be cut).
declare -A MAX_LEN=([fuzz_model]=163840 [fuzz_prototxt]=49152 [fuzz_caffemodel]=65536 [fuzz_onnx]=4096)

echo "== fuzz build (clang, ASan + UBSan, libFuzzer) in $BUILD"
CC=clang CXX=clang++ cmake -S . -B "$BUILD" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKESTREL_FUZZ=ON \
  -DKESTREL_SANITIZE=address,undefined -DKESTREL_BUILD_TESTS=ON -DKESTREL_BUILD_TOOLS=OFF \
  -DKESTREL_BUILD_BENCH=OFF >/dev/null
cmake --build "$BUILD" -j"$JOBS" --target "${TARGETS[@]}" kestrel-convert

echo "== seed corpora"
SEEDS=$BUILD/tests/fuzz/seeds
ASAN_OPTIONS=detect_leaks=0 /usr/bin/python3 tests/fuzz/seed_corpus.py --out "$SEEDS" --convert "$BUILD/kestrel-convert"

echo "== fuzzing, ${SECS}s per target"
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
failed=0
summary=()
for t in "${TARGETS[@]}"; do
  corpus=$BUILD/fuzz_corpus/$t
  artifacts=$BUILD/fuzz_artifacts/$t
  log=$BUILD/fuzz_logs/$t.log
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
  stamp=$(mktemp)
  rc=0
  # New inputs go to the first directory (kept between runs); the seeds are read only.
  "$BUILD/tests/fuzz/$t" "${SEED_ARGS[@]}" -max_total_time="$SECS" -rss_limit_mb=2048 -timeout=10 -max_len="${MAX_LEN[$t]}" \
    -print_final_stats=1 -artifact_prefix="$artifacts/" "$corpus" "$SEEDS/$t" >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  files=$(( $(find "$corpus" -type f | wc -l) + $(find "$SEEDS/$t" -type f | wc -l) ))
  # libFuzzer also leaves slow-unit-* inputs (slower than -report_slow_units, not a
  # failure): counted apart so the summary's crash count means crashes.
  mapfile -t found < <(find "$artifacts" -type f -newer "$stamp" ! -name 'slow-unit-*')
  slow=$(find "$artifacts" -type f -newer "$stamp" -name 'slow-unit-*' | wc -l)
  rm -f "$stamp"
  crashes=${#found[@]}
  line=$(printf '%-16s %10s executions in %ss, corpus %5d files, %d new crash(es), %d slow input(s)' "$t" \
    "${execs:-?}" "$SECS" "$files" "$crashes" "$slow")
  if [ "$rc" -ne 0 ]; then
    failed=1
    line+=" FAILED (exit $rc, log $log)"
    for f in "${found[@]}"; do line+=$'\n'"    input: $f"; done
    tail -40 "$log"
  fi
  summary+=("$line")
done

echo "== fuzz summary"
printf '%s\n' "${summary[@]}"
exit "$failed"
