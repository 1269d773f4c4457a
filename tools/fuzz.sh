#!/usr/bin/env bash
# libFuzzer run of every fuzz target (tests/fuzz): clang build with AddressSanitizer +
# UndefinedBehaviorSanitizer in build/fuzz, seed corpora from the project's models
# (tests/fuzz/seed_corpus.py), then each target, in one of two modes:
#
#   KESTREL_FUZZ_RUNS=N tools/fuzz.sh     # the test command's mode: N executions per
#                                         # target from the seeds alone, seed 1 (or
#                                         # KESTREL_FUZZ_SEED), address randomization
#                                         # off: how far it goes does not depend on how
#                                         # busy the machine is
#   tools/fuzz.sh [TARGET...]             # open-ended: 30 s per target (all four by
#   KESTREL_FUZZ_SECONDS=600 tools/fuzz.sh fuzz_model   # default), a random seed
#                                         # unless KESTREL_FUZZ_SEED is set, and the
#                                         # corpus kept between runs in build/fuzz
#
# Prints one line per target (executions, corpus files, crashes) and exits 1 if any
# target crashed, leaked, timed out or ran out of memory; the input that did is left
# in build/fuzz/fuzz_artifacts/TARGET/ and its path printed. Keep it, minimized
# (TARGET -minimize_crash=1 -runs=10000 FILE; a timeout as it is), in
# tests/fuzz/regressions/TARGET/ with the fix: the fuzz_replay_TARGET ctest replays it,
# with the seed corpus, in every build.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/deps.sh
# tools/deps.sh's groups for the build configured below (tests and converters on) and
# the seed corpora.
kestrel_install_deps core converters tests fuzz
JOBS=$(kestrel_jobs)
RUNS=${KESTREL_FUZZ_RUNS:-}
SECS=${KESTREL_FUZZ_SECONDS:-30}
if [ -n "$RUNS" ]; then
  # Bounded by executions, not time, from a fresh corpus: what is fuzzed depends only
  # on the commit. The per-input timeout only catches a hang (every input of the test
  # command's 20000 runs takes under a second under ASan); slow inputs are the
  # open-ended mode's findings.
  SEED_ARGS=(-seed="${KESTREL_FUZZ_SEED:-1}")
  LIMIT_ARGS=(-runs="$RUNS" -timeout=300)
  LIMIT_TEXT="$RUNS runs"
  # Address-space randomization changes which paths the same input takes, and so the
  # coverage libFuzzer steers by. With it off (setarch -R), fuzz_model and
  # fuzz_prototxt repeat a run input for input (same coverage, features and corpus
  # after 20000 runs, measured twice); fuzz_caffemodel and fuzz_onnx still drift after
  # a few thousand runs (each input alone gives the same coverage every time: some
  # state carried from one input to the next, not found yet).
  if setarch -R true 2>/dev/null; then
    RUN_PREFIX=(setarch -R)
  else
    RUN_PREFIX=()
    echo "fuzz.sh: setarch -R is not permitted here: address randomization stays on, runs may differ" >&2
  fi
else
  # Unset, libFuzzer picks a seed and prints it.
  SEED_ARGS=()
  [ -z "${KESTREL_FUZZ_SEED:-}" ] || SEED_ARGS=(-seed="$KESTREL_FUZZ_SEED")
  LIMIT_ARGS=(-max_total_time="$SECS" -timeout=10)
  LIMIT_TEXT="${SECS}s"
  RUN_PREFIX=()
fi
BUILD=build/fuzz
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(fuzz_model fuzz_prototxt fuzz_caffemodel fuzz_onnx fuzz_tfjs)

# -max_len per target, as seed_corpus.py's MAX_BYTES (a longer seed would be cut).
declare -A MAX_LEN=([fuzz_model]=163840 [fuzz_prototxt]=49152 [fuzz_caffemodel]=65536 [fuzz_onnx]=4096
  [fuzz_tfjs]=49152)

echo "== fuzz build (clang, ASan + UBSan, libFuzzer) in $BUILD"
CC=clang CXX=clang++ cmake -S . -B "$BUILD" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKESTREL_FUZZ=ON \
  -DKESTREL_SANITIZE=address,undefined -DKESTREL_BUILD_TESTS=ON -DKESTREL_BUILD_TOOLS=OFF \
  -DKESTREL_BUILD_BENCH=OFF >/dev/null
cmake --build "$BUILD" -j"$JOBS" --target "${TARGETS[@]}" kestrel-convert

echo "== seed corpora"
SEEDS=$BUILD/tests/fuzz/seeds
ASAN_OPTIONS=detect_leaks=0 /usr/bin/python3 tests/fuzz/seed_corpus.py --out "$SEEDS" --convert "$BUILD/kestrel-convert"

echo "== fuzzing, $LIMIT_TEXT per target"
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
failed=0
summary=()
for t in "${TARGETS[@]}"; do
  corpus=$BUILD/fuzz_corpus/$t
  if [ -n "$RUNS" ]; then
    corpus=$BUILD/fuzz_corpus_runs/$t
    rm -rf "$corpus"
  fi
  artifacts=$BUILD/fuzz_artifacts/$t
  log=$BUILD/fuzz_logs/$t.log
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
  # The kept crash and timeout inputs seed the run too (read only, as the seeds).
  KEPT=()
  [ ! -d "tests/fuzz/regressions/$t" ] || KEPT=("tests/fuzz/regressions/$t")
  stamp=$(mktemp)
  rc=0
  # New inputs go to the first directory (kept between runs); the seeds are read only.
  "${RUN_PREFIX[@]}" "$BUILD/tests/fuzz/$t" "${SEED_ARGS[@]}" "${LIMIT_ARGS[@]}" -rss_limit_mb=2048 -max_len="${MAX_LEN[$t]}" \
    -print_final_stats=1 -artifact_prefix="$artifacts/" "$corpus" "$SEEDS/$t" "${KEPT[@]}" >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  files=$(( $(find "$corpus" "$SEEDS/$t" "${KEPT[@]}" -type f | wc -l) ))
  # libFuzzer also leaves slow-unit-* inputs (slower than -report_slow_units, not a
  # failure): counted apart so the summary's crash count means crashes.
  mapfile -t found < <(find "$artifacts" -type f -newer "$stamp" ! -name 'slow-unit-*')
  slow=$(find "$artifacts" -type f -newer "$stamp" -name 'slow-unit-*' | wc -l)
  rm -f "$stamp"
  crashes=${#found[@]}
  line=$(printf '%-16s %10s executions (%s), corpus %5d files, %d new crash(es), %d slow input(s)' "$t" \
    "${execs:-?}" "$LIMIT_TEXT" "$files" "$crashes" "$slow")
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
