#!/usr/bin/env bash
# Every test, in stages:
#  1. the Release build's full ctest suite;
#  2. embedding: install to a temporary prefix, build examples/robot_camera through
#     find_package(kestrel) and a C program through pkg-config, run them;
#  3. one clang build with AddressSanitizer + UndefinedBehaviorSanitizer (+ libFuzzer's
#     coverage): every suite that parses input, owns memory or runs the kernels, the
#     C API, alloc_failure (LeakSanitizer), then each fuzz target for a fixed number
#     of runs from a fixed seed (not for a time: the same work on a busy machine);
#  4. ThreadSanitizer: one Net, 4 threads, own and shared allocators;
#  5. the aarch64 build (NEON kernels) under qemu-aarch64;
#  6. the armv7 build (reference kernels) under qemu-arm;
#  7. the fresh Debian 12 root check (tools/fresh_root_check.sh: the demo and these
#     configures in a bare root), when what decides the packages changed (--if-changed).
#
#   tools/test.sh                    everything
#   tools/test.sh --deps-only        only install the packages (tools/deps.sh groups)
#   tools/test.sh --configure-only   ... then run every cmake configure of the stages
#                                    (release, fuzz, tsan, aarch64, armv7), no builds
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/deps.sh
KESTREL_STOP=$(kestrel_stop_flag "${1:-}")
[ -z "$KESTREL_STOP" ] || shift
# Every group the stages' builds need (the layer cases take their expected outputs from
# PyTorch and OpenCV, Debian's: testdata; the TF.js models theirs from TF.js under
# Node.js: realmodels).
kestrel_install_deps core converters tests testdata embed bench fuzz aarch64 armv7 realmodels
kestrel_stop_after deps
JOBS=$(kestrel_jobs)
stage() {
  echo "== [$(date +%T)] $*"
}

if [ "$KESTREL_STOP" = configure ]; then
  # The configure step of every stage below, with the same options (tools/fuzz.sh's for
  # build/fuzz: keep in step); tools/fresh_root_check.sh runs this in a bare root. The
  # embedding stage reuses build/release, and its consumers configure against an
  # installed build only.
  stage "configure: Release (build/release)"
  cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release >/dev/null
  stage "configure: clang ASan + UBSan + libFuzzer (build/fuzz, as tools/fuzz.sh)"
  CC=clang CXX=clang++ cmake -S . -B build/fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKESTREL_FUZZ=ON \
    -DKESTREL_SANITIZE=address,undefined -DKESTREL_BUILD_TESTS=ON -DKESTREL_BUILD_TOOLS=OFF \
    -DKESTREL_BUILD_BENCH=OFF >/dev/null
  stage "configure: ThreadSanitizer (build/tsan)"
  tools/sanitize_reliability.sh --configure-only tsan
  stage "configure: aarch64 (build/aarch64)"
  cmake -S . -B build/aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64-linux-gnu.cmake -DCMAKE_BUILD_TYPE=Release \
    -DKESTREL_BUILD_CONVERTERS=OFF -DKESTREL_BUILD_TOOLS=OFF -DKESTREL_BUILD_BENCH=OFF >/dev/null
  stage "configure: armv7 (build/armv7)"
  tools/armv7_check.sh --configure-only
  kestrel_stop_after configure
fi

stage "Release build"
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/release -j"$JOBS"
ctest --test-dir build/release -j"$JOBS" --output-on-failure

stage "Embedding: install, find_package and pkg-config consumers"
tools/embed_check.sh build/release

stage "AddressSanitizer + UndefinedBehaviorSanitizer (clang, libFuzzer) build, 20000 fuzz runs per target"
# tools/fuzz.sh configures build/fuzz, writes the seed corpora and fuzzes; the suites
# below run from the same build. onnx_models (trusted torchvision models, 3 minutes
# under ASan) runs in the Release stage only. A fixed number of runs from a fixed seed
# and a fresh corpus, not a time limit: how far it fuzzes does not depend on the
# machine's load (20000 runs: about 2.5 minutes for the four targets on 2 cores; see
# tools/fuzz.sh on which targets repeat input for input). Open-ended
# fuzzing is tools/fuzz.sh without KESTREL_FUZZ_RUNS; its findings go to
# tests/fuzz/regressions, which the fuzz_replay_* tests below replay.
KESTREL_FUZZ_RUNS=${KESTREL_FUZZ_RUNS:-20000} KESTREL_FUZZ_SEED=${KESTREL_FUZZ_SEED:-1} tools/fuzz.sh
cmake --build build/fuzz -j"$JOBS" --target kestrel_tests alloc_failure test_c_api test_embedded_model \
  fuzz_model_replay fuzz_prototxt_replay fuzz_caffemodel_replay fuzz_onnx_replay fuzz_tfjs_replay
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build/fuzz -j"$JOBS" --output-on-failure \
  -R '^(torch|layers|kernels|networks|mat|format|extractor|memory|threads|bad_input|zoo|image|cpu|precision|optimizer|caffe|caffe_import|onnx_import|onnx_conformance|c_api|embedded_model|alloc_failure|fuzz_replay_.*)$'

stage "ThreadSanitizer: one Net, 4 threads, own and shared allocators"
tools/sanitize_reliability.sh tsan

stage "aarch64 (NEON) cross build, tests under qemu-aarch64"
# The runtime and its kernel, layer and whole-network suites; the converters are host
# tools and are not cross-built.
cmake -S . -B build/aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64-linux-gnu.cmake -DCMAKE_BUILD_TYPE=Release \
  -DKESTREL_BUILD_CONVERTERS=OFF -DKESTREL_BUILD_TOOLS=OFF -DKESTREL_BUILD_BENCH=OFF >/dev/null
cmake --build build/aarch64 -j"$JOBS" --target kestrel_tests
ctest --test-dir build/aarch64 -j"$JOBS" --output-on-failure -R '^(kernels|networks|layers|torch|extractor|threads|zoo|cpu_in_order|cpu_out_of_order|cpu_fp16|cpu_fp16_off|precision)$'

stage "armv7 (32-bit ARM) cross build, tests under qemu-arm"
# Whole networks run in the x86 and aarch64 stages; here the reference kernels, layers,
# sessions, CPU control and the C API.
KESTREL_ARMV7_TESTS='^(kernels|layers|extractor|cpu|precision|c_api)$' tools/armv7_check.sh

stage "Fresh Debian 12 root: the demo and every configure from a bare root (when their inputs changed)"
# 5 to 6.5 minutes on 2 CPUs, more on a busy machine (README): with the stages above
# past the 30 minutes CI allows, so it runs only when the inputs that decide packages
# and configures differ from those of its last pass (tools/fresh_root.stamp; commit the
# stamp a pass rewrites). KESTREL_FRESH_ROOT=always or never overrides.
tools/fresh_root_check.sh --if-changed
stage "all tests passed"
