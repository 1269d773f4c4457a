#!/usr/bin/env bash
# The main job, until the image demo lands: build Kestrel, write MobileNet v1 (seeded
# random weights, the Caffe definition's shapes) with the model builder, and run
# kestrel-bench on it: latency, feature-map memory, allocations, peak RSS.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/deps.sh
kestrel_install_deps

BUILD=${KESTREL_BUILD_DIR:-build/release}
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DKESTREL_BUILD_TESTS=OFF -DKESTREL_BUILD_CONVERTERS=OFF >/dev/null
cmake --build "$BUILD" -j"$(kestrel_jobs)" --target kestrel-bench kestrel-zoo

mkdir -p "$BUILD/models"
"$BUILD/kestrel-zoo" mobilenet_v1 "$BUILD/models/mobilenet_v1.kst"
"$BUILD/kestrel-bench" "$BUILD/models/mobilenet_v1.kst" --threads "$(kestrel_jobs)" --warmup 2 --loops 10 "$@"
