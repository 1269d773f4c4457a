#!/usr/bin/env bash
# Installs the Debian 12 packages Kestrel builds and tests with, if any is missing.
# Sourced by tools/demo.sh and tools/test.sh.
set -euo pipefail

KESTREL_PACKAGES=(g++ cmake make flatbuffers-compiler libflatbuffers-dev doctest-dev libbenchmark-dev libstb-dev
  libprotobuf-dev protobuf-compiler)

kestrel_install_deps() {
  local missing=()
  for p in "${KESTREL_PACKAGES[@]}" "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "== installing: ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
}

kestrel_jobs() { nproc 2>/dev/null || echo 2; }
