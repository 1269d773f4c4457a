#!/usr/bin/env bash
# Every test, in stages:
#  1. the Release build's full ctest suite;
#  2. embedding: install to a temporary prefix, build examples/robot_camera through
#     find_package(kestrel) and a C program through pkg-config, run them;
#  3. one clang build with AddressSanitizer + UndefinedBehaviorSanitizer (+ libFuzzer's
#     coverage): every suite that parses input, owns memory or runs the kernels, the
#     C API, alloc_failure (LeakSanitizer), then each fuzz target for a bounded time;
#  4. ThreadSanitizer: one Net, 4 threads, own and shared allocators;
#  5. the aarch64 build (NEON kernels) under qemu-aarch64;
#  6. the armv7 build (reference kernels) under qemu-arm.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/deps.sh
# The layer cases take their expected outputs from PyTorch and OpenCV (Debian's).
kestrel_install_deps python3 python3-torch python3-opencv python3-numpy python3-flatbuffers python3-protobuf python3-torchvision python3-onnx libonnx-dev libonnx-testdata \
  dataset-fashion-mnist zlib1g-dev pkg-config \
  clang libclang-rt-14-dev libomp-14-dev \
  g++-aarch64-linux-gnu g++-arm-linux-gnueabihf qemu-user llvm
JOBS=$(kestrel_jobs)
stage() {
  echo "== [$(date +%T)] $*"
}

stage "Release build"
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/release -j"$JOBS"
ctest --test-dir build/release -j"$JOBS" --output-on-failure

stage "Embedding: install, find_package and pkg-config consumers"
tools/embed_check.sh build/release

stage "AddressSanitizer + UndefinedBehaviorSanitizer (clang, libFuzzer) build, 30 s per fuzz target"
# tools/fuzz.sh configures build/fuzz, writes the seed corpora and fuzzes; the suites
# below run from the same build. onnx_models (trusted torchvision models, 3 minutes
# under ASan) runs in the Release stage only.
KESTREL_FUZZ_SECONDS=${KESTREL_FUZZ_SECONDS:-30} KESTREL_FUZZ_SEED=${KESTREL_FUZZ_SEED:-1} tools/fuzz.sh
cmake --build build/fuzz -j"$JOBS" --target kestrel_tests alloc_failure test_c_api test_embedded_model \
  fuzz_model_replay fuzz_prototxt_replay fuzz_caffemodel_replay fuzz_onnx_replay
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build/fuzz -j"$JOBS" --output-on-failure \
  -R '^(torch|layers|kernels|networks|mat|format|extractor|memory|threads|bad_input|zoo|image|cpu|optimizer|caffe|caffe_import|onnx_import|onnx_conformance|c_api|embedded_model|alloc_failure|fuzz_replay_.*)$'

stage "ThreadSanitizer: one Net, 4 threads, own and shared allocators"
tools/sanitize_reliability.sh tsan

stage "aarch64 (NEON) cross build, tests under qemu-aarch64"
# The runtime and its kernel, layer and whole-network suites; the converters are host
# tools and are not cross-built.
cmake -S . -B build/aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64-linux-gnu.cmake -DCMAKE_BUILD_TYPE=Release \
  -DKESTREL_BUILD_CONVERTERS=OFF -DKESTREL_BUILD_TOOLS=OFF -DKESTREL_BUILD_BENCH=OFF >/dev/null
cmake --build build/aarch64 -j"$JOBS" --target kestrel_tests
ctest --test-dir build/aarch64 -j"$JOBS" --output-on-failure -R '^(kernels|networks|layers|torch|extractor|threads|zoo)$'

stage "armv7 (32-bit ARM) cross build, tests under qemu-arm"
# Whole networks run in the x86 and aarch64 stages; here the reference kernels, layers,
# sessions, CPU control and the C API.
KESTREL_ARMV7_TESTS='^(kernels|layers|extractor|cpu|c_api)$' tools/armv7_check.sh
stage "all tests passed"
