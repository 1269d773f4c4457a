#!/usr/bin/env bash
# shellcheck disable=SC2034  # the groups below are read by name (kestrel_deps_packages)
# The Debian 12 packages Kestrel builds, tests and runs with, one group per build
# option or task; each list lives here only. Sourced by the scripts in tools/, which
# install the groups that the options they configure need:
#
#   source tools/deps.sh
#   kestrel_install_deps core converters demo      # installs whatever is missing
#   kestrel_deps_packages core tests               # prints the packages, one a line
#
#   tools/demo.sh              core converters demo realmodels
#   tools/test.sh              core converters tests testdata embed bench fuzz aarch64 armv7 realmodels
#   tools/fuzz.sh              core converters tests fuzz
#   tools/embed_check.sh       core converters tests embed
#   tools/armv7_check.sh       core tests armv7
#   tools/sanitize_reliability.sh  core tests
#   tools/fresh_root_check.sh  freshroot (on the host; the root installs through the above)
#
# What each option asks for at configure time is in CMakeLists.txt (find_package,
# find_program, find_path); tools/fresh_root_check.sh checks in a bare Debian 12 root
# that these lists are enough for the demo and for every configure of the test command.
set -euo pipefail

# The runtime library and kestrel-run/-zoo/-bench (KESTREL_BUILD_TOOLS): the C++
# compiler (with libgomp for find_package(OpenMP)), flatc and the flatbuffers headers
# (find_program/find_path), and stb (image.cpp includes it; not looked for at configure).
KESTREL_DEPS_core=(g++ cmake make flatbuffers-compiler libflatbuffers-dev libstb-dev)
# KESTREL_BUILD_CONVERTERS (kestrel-convert): find_package(Protobuf), protoc for
# caffe.proto, and libonnx-dev's /usr/include/onnx/onnx.proto for the ONNX front end.
KESTREL_DEPS_converters=(libprotobuf-dev protobuf-compiler libonnx-dev)
# tools/demo.sh: Python reads the model table (tests/tfjs/realmodels.py, which imports
# numpy); the models come through the realmodels group.
KESTREL_DEPS_demo=(python3 python3-numpy)
# KESTREL_BUILD_TESTS: doctest (find_path) and Debian's interpreter /usr/bin/python3
# (find_program), which configure requires; enough to build every suite.
KESTREL_DEPS_tests=(doctest-dev python3)
# What the x86 suites compare with or read when they run: PyTorch, torchvision,
# OpenCV and ONNX give the expected outputs (the layer cases are written through
# flatc's Python code), ONNX's conformance models, the Fashion-MNIST test set, and
# zlib for fashion_eval (without it that test is not built).
KESTREL_DEPS_testdata=(python3-torch python3-torchvision python3-opencv python3-numpy python3-flatbuffers
  python3-protobuf python3-onnx libonnx-testdata dataset-fashion-mnist zlib1g-dev)
# tools/embed_check.sh: the C program built through pkg-config.
KESTREL_DEPS_embed=(pkg-config)
# KESTREL_BUILD_BENCH (kestrel-microbench): find_package(benchmark).
KESTREL_DEPS_bench=(libbenchmark-dev)
# tools/fuzz.sh: clang with its sanitizer and libFuzzer run-times and its OpenMP
# (KESTREL_FUZZ=ON, KESTREL_SANITIZE=address,undefined), and what
# tests/fuzz/seed_corpus.py reads (numpy, protobuf, ONNX's node tests).
KESTREL_DEPS_fuzz=(clang libclang-rt-14-dev libomp-14-dev python3-numpy python3-protobuf libonnx-testdata)
# cmake/toolchain-aarch64-linux-gnu.cmake and the tests under qemu-aarch64; llvm's
# llvm-mca for bench/arm/mca.py (the arm_mca test of the x86 build, which also needs
# the aarch64 compiler; skipped without them).
KESTREL_DEPS_aarch64=(g++-aarch64-linux-gnu qemu-user llvm)
# cmake/toolchain-armv7-linux-gnueabihf.cmake and tools/armv7_check.sh (qemu-arm, file).
KESTREL_DEPS_armv7=(g++-arm-linux-gnueabihf qemu-user file)
# Real trained models and their reference (tools/realmodels.sh: npm pack / npm ci of
# the TF.js packages; node runs TF.js): Node.js and npm. A Node.js from elsewhere
# (NodeSource's nodejs bundles npm and conflicts with Debian's npm) counts: a package
# whose command is already on PATH is not installed (KESTREL_DEPS_COMMAND).
KESTREL_DEPS_realmodels=(nodejs npm)
# tools/fresh_root_check.sh, on the host: mmdebstrap makes the bare Debian 12 root.
KESTREL_DEPS_freshroot=(mmdebstrap)

# Packages that a command on PATH stands for.
declare -A KESTREL_DEPS_COMMAND=([nodejs]=node [npm]=npm)

KESTREL_DEPS_GROUPS=(core converters demo tests testdata embed bench fuzz aarch64 armv7 realmodels freshroot)

# kestrel_deps_packages GROUP...: the groups' packages, one a line, each once.
kestrel_deps_packages() {
  local g
  local -A seen=()
  for g in "$@"; do
    if ! declare -p "KESTREL_DEPS_$g" >/dev/null 2>&1; then
      echo "tools/deps.sh: unknown package group '$g' (groups: ${KESTREL_DEPS_GROUPS[*]})" >&2
      return 2
    fi
    local ref="KESTREL_DEPS_${g}[@]" p
    for p in "${!ref}"; do
      [ -n "${seen[$p]:-}" ] || { seen[$p]=1; echo "$p"; }
    done
  done
}

# kestrel_install_deps GROUP...: installs the groups' packages that are missing
# (apt-get update first, then apt-get install; sudo when not root).
kestrel_install_deps() {
  local pkgs missing=() p
  pkgs=$(kestrel_deps_packages "$@") || return
  for p in $pkgs; do
    if [ -n "${KESTREL_DEPS_COMMAND[$p]:-}" ] && command -v "${KESTREL_DEPS_COMMAND[$p]}" >/dev/null; then continue; fi
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "== installing ($*): ${missing[*]}"
    local sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    "${sudo[@]}" apt-get -o Acquire::Retries=3 update -qq
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o Acquire::Retries=3 install -y -qq \
      --no-install-recommends "${missing[@]}"
  fi
}

# A script's optional first argument: --deps-only (install its packages, then stop) or
# --configure-only (install, run every cmake configure it would, then stop).
#   KESTREL_STOP=$(kestrel_stop_flag "${1:-}"); [ -z "$KESTREL_STOP" ] || shift
#   kestrel_install_deps ...; kestrel_stop_after deps
#   cmake -S . -B ...;        kestrel_stop_after configure
kestrel_stop_flag() {
  case "${1:-}" in
    --deps-only) echo deps ;;
    --configure-only) echo configure ;;
    *) echo "" ;;
  esac
}
kestrel_stop_after() {
  if [ "${KESTREL_STOP:-}" = "$1" ]; then
    echo "== $(basename "$0"): --$1-only, stopping here"
    exit 0
  fi
}

kestrel_jobs() { nproc 2>/dev/null || echo 2; }
