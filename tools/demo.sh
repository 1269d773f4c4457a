#!/usr/bin/env bash
# The main job: build Kestrel, then
#  1. classify a Fashion-MNIST test image with the trained model shipped in
#     models/fashion (its preprocessing and labels come from the model's metadata);
#  2. run three real trained networks from the npm registry (@vladmandic/human@3.3.6,
#     TensorFlow.js graph models, converted by kestrel-convert tfjs) on a photo of
#     people (@vladmandic/face-api@1.7.15's demo/sample1.jpg): CenterNet finds the
#     objects, MoveNet the 17 keypoints of each person CenterNet found, BlazeFace the
#     faces. kestrel-people prints keypoints, boxes and latency and draws them.
#
#   tools/demo.sh [IMAGE...]      (Fashion-MNIST images; default models/fashion/samples/00000_ankle_boot.png)
#   tools/demo.sh --deps-only     only install the packages it needs (tools/deps.sh)
#   tools/demo.sh --configure-only    ... and configure the build, then stop
# KESTREL_DEMO_PHOTO=FILE runs step 2 on another photo. Outputs (the converted models,
# people.jpg and people.json) go to build/demo/demo/ ($KESTREL_BUILD_DIR/demo); the npm
# packages to ~/.cache/kestrel (tools/realmodels.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/deps.sh
KESTREL_STOP=$(kestrel_stop_flag "${1:-}")
[ -z "$KESTREL_STOP" ] || shift
# The runtime, kestrel-run, kestrel-people and kestrel-convert (its TF.js front end),
# Python for the model table (tests/tfjs/realmodels.py), Node.js and npm to fetch the
# models; no tests, no benchmarks.
kestrel_install_deps core converters demo realmodels
kestrel_stop_after deps

BUILD=${KESTREL_BUILD_DIR:-build/demo}
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DKESTREL_BUILD_TESTS=OFF -DKESTREL_BUILD_BENCH=OFF >/dev/null
kestrel_stop_after configure
cmake --build "$BUILD" -j"$(kestrel_jobs)" --target kestrel-run kestrel-convert kestrel-people

echo "== Fashion-MNIST classifier (models/fashion/fashion_onnx.kst, trained, 90.99% test accuracy)"
if [ $# -eq 0 ]; then set -- models/fashion/samples/00000_ankle_boot.png; fi
"$BUILD/kestrel-run" models/fashion/fashion_onnx.kst "$@" --top 3

echo "== Real trained networks (TensorFlow.js graph models from npm)"
OUT=$BUILD/demo
mkdir -p "$OUT"
eval "$(tools/realmodels.sh --print)"
for name in centernet movenet blazeface; do
  mapfile -t args < <(/usr/bin/python3 tests/tfjs/realmodels.py convert-args "$name")
  "$BUILD/kestrel-convert" tfjs "$HUMAN_MODELS/${args[0]}" "$OUT/$name.kst" "${args[@]:1}" | head -1
done
PHOTO=${KESTREL_DEMO_PHOTO:-$FACEAPI_DEMO/sample1.jpg}
"$BUILD/kestrel-people" "$PHOTO" --objects "$OUT/centernet.kst" --pose "$OUT/movenet.kst" --faces "$OUT/blazeface.kst" \
  --draw "$OUT/people.jpg" --json "$OUT/people.json"
echo "== outputs in $OUT/: centernet.kst, movenet.kst, blazeface.kst (the converted models), people.jpg (objects,"
echo "   skeletons and faces drawn on the photo), people.json (the same as JSON)"
