#!/usr/bin/env bash
# 32-bit ARM: cross-build the runtime and its tests for armv7-a + NEON, hard-float
# (cmake/toolchain-armv7-linux-gnueabihf.cmake, Debian's g++-arm-linux-gnueabihf),
# and run them under qemu-arm. This build uses the reference kernels: src/arm/ is
# AArch64 code (see the toolchain file).
#   tools/armv7_check.sh [--deps-only|--configure-only] [BUILD_DIR]     (default build/armv7)
# Suites: kernels, layers, networks (the reference kernels against the layer and
# whole-network expectations), extractor, cpu, c_api; networks takes about 3 minutes
# of the 3.5 under qemu (KESTREL_ARMV7_TESTS='^(kernels|layers|extractor|cpu|c_api)$'
# leaves it out). The torch suite needs Python to write its cases and the converters
# are host tools: neither is cross-built.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/deps.sh
KESTREL_STOP=$(kestrel_stop_flag "${1:-}")
[ -z "$KESTREL_STOP" ] || shift
# Tests on (doctest, python3), converters, tools and benchmarks off.
kestrel_install_deps core tests armv7
kestrel_stop_after deps
JOBS=$(kestrel_jobs)
BUILD=${1:-build/armv7}
start=$(date +%s)

echo "== armv7 cross build ($BUILD)"
cmake -S . -B "$BUILD" -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-armv7-linux-gnueabihf.cmake -DCMAKE_BUILD_TYPE=Release \
  -DKESTREL_BUILD_CONVERTERS=OFF -DKESTREL_BUILD_TOOLS=OFF -DKESTREL_BUILD_BENCH=OFF >/dev/null
kestrel_stop_after configure
cmake --build "$BUILD" -j"$JOBS" --target kestrel_tests test_c_api
file "$BUILD/tests/kestrel_tests" | sed 's/, BuildID.*//'
built=$(date +%s)

echo "== tests under qemu-arm"
ctest --test-dir "$BUILD" -j"$JOBS" --output-on-failure -R "${KESTREL_ARMV7_TESTS:-^(kernels|layers|networks|extractor|cpu|c_api)\$}"
end=$(date +%s)
echo "== armv7_check passed: build $((built - start)) s, tests $((end - built)) s"
