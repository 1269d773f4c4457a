#!/usr/bin/env bash
# Every test: the Release build's full ctest suite, then an AddressSanitizer +
# UndefinedBehaviorSanitizer build of the suites that take untrusted input, own memory
# or index tensors (bad_input, mat, format, memory, extractor, layers, threads, torch,
# image) and the converter suites (optimizer, caffe_import, caffe), which parse
# untrusted files;
# then the aarch64 build (NEON kernels) cross-compiled and run under qemu-aarch64.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/deps.sh
# The layer cases take their expected outputs from PyTorch and OpenCV (Debian's).
kestrel_install_deps python3 python3-torch python3-opencv python3-numpy python3-flatbuffers python3-protobuf python3-torchvision python3-onnx libonnx-dev libonnx-testdata \
  dataset-fashion-mnist zlib1g-dev \
  g++-aarch64-linux-gnu qemu-user llvm
JOBS=$(kestrel_jobs)

echo "== Release build"
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/release -j"$JOBS"
ctest --test-dir build/release -j"$JOBS" --output-on-failure

echo "== AddressSanitizer + UndefinedBehaviorSanitizer build"
cmake -S . -B build/asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKESTREL_SANITIZE=address,undefined \
  -DKESTREL_BUILD_TOOLS=OFF >/dev/null
cmake --build build/asan -j"$JOBS" --target kestrel_tests
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build/asan -j"$JOBS" --output-on-failure -R '^(bad_input|mat|format|memory|extractor|layers|kernels|networks|threads|torch|optimizer|caffe_import|caffe|image)$'

echo "== aarch64 (NEON) cross build, tests under qemu-aarch64"
# The runtime and its kernel, layer and whole-network suites; the converters are host
# tools and are not cross-built.
cmake -S . -B build/aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64-linux-gnu.cmake -DCMAKE_BUILD_TYPE=Release \
  -DKESTREL_BUILD_CONVERTERS=OFF -DKESTREL_BUILD_TOOLS=OFF -DKESTREL_BUILD_BENCH=OFF >/dev/null
cmake --build build/aarch64 -j"$JOBS" --target kestrel_tests
ctest --test-dir build/aarch64 -j"$JOBS" --output-on-failure -R '^(kernels|networks|layers|torch|extractor|threads|zoo)$'
