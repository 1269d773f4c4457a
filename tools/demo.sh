#!/usr/bin/env bash
# The main job: build Kestrel and classify a Fashion-MNIST test image with the trained
# model shipped in models/fashion (its preprocessing and labels come from the model's
# metadata). When ../shared sits beside the checkout, a second example converts
# MobileNet-SSD from its Caffe definition (seeded random weights: the boxes mean
# nothing, the example shows the pipeline) and draws its detections on a photo.
#
#   tools/demo.sh [IMAGE...]      (default: models/fashion/samples/00000_ankle_boot.png)
#   tools/demo.sh --deps-only     only install the packages it needs (tools/deps.sh)
#   tools/demo.sh --configure-only    ... and configure the build, then stop
# Outputs (the MobileNet-SSD model, its caffemodel and ssd_boxes.jpg) go to
# build/demo/demo/ ($KESTREL_BUILD_DIR/demo).
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/deps.sh
KESTREL_STOP=$(kestrel_stop_flag "${1:-}")
[ -z "$KESTREL_STOP" ] || shift
# The runtime and kestrel-run, kestrel-convert (Caffe and ONNX front ends), and the
# random caffemodel writer of the MobileNet-SSD example; no tests, no benchmarks.
kestrel_install_deps core converters demo
kestrel_stop_after deps

BUILD=${KESTREL_BUILD_DIR:-build/demo}
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DKESTREL_BUILD_TESTS=OFF -DKESTREL_BUILD_BENCH=OFF >/dev/null
kestrel_stop_after configure
cmake --build "$BUILD" -j"$(kestrel_jobs)" --target kestrel-run kestrel-convert

echo "== Fashion-MNIST classifier (models/fashion/fashion_onnx.kst, trained, 90.99% test accuracy)"
if [ $# -eq 0 ]; then set -- models/fashion/samples/00000_ankle_boot.png; fi
"$BUILD/kestrel-run" models/fashion/fashion_onnx.kst "$@" --top 3

SHARED=${KESTREL_SHARED:-../shared}
PROTO=$SHARED/models/caffe/mobilenet_ssd_deploy.prototxt
PHOTO=$SHARED/images/voc_000456.jpg
if [ -f "$PROTO" ] && [ -f "$PHOTO" ]; then
  echo "== MobileNet-SSD from $PROTO (seeded random weights)"
  mkdir -p "$BUILD/demo"
  /usr/bin/python3 tools/caffe_random_weights.py "$PROTO" "$BUILD/demo/mobilenet_ssd.caffemodel" --seed 7
  VOC=background,aeroplane,bicycle,bird,boat,bottle,bus,car,cat,chair,cow,diningtable,dog,horse,motorbike,person,pottedplant,sheep,sofa,train,tvmonitor
  "$BUILD/kestrel-convert" caffe "$PROTO" "$BUILD/demo/mobilenet_ssd.caffemodel" "$BUILD/demo/mobilenet_ssd.kst" \
    --meta task=detect --meta input_size=300x300 --meta mean=127.5,127.5,127.5 \
    --meta norm=0.007843,0.007843,0.007843 --meta channel_order=bgr --meta labels=$VOC
  # Random weights make many confident boxes: the ten best are printed and drawn.
  "$BUILD/kestrel-run" "$BUILD/demo/mobilenet_ssd.kst" "$PHOTO" --top 10 --draw "$BUILD/demo/ssd_boxes.jpg"
  echo "boxes drawn on $BUILD/demo/ssd_boxes.jpg"
  echo "== outputs in $BUILD/demo/: mobilenet_ssd.kst (the model), mobilenet_ssd.caffemodel (its weights), ssd_boxes.jpg"
else
  echo "(no $PROTO: the MobileNet-SSD example is skipped)"
fi
