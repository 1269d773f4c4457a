#!/usr/bin/env bash
# The main job: build Kestrel and classify a Fashion-MNIST test image with the trained
# model shipped in models/fashion (its preprocessing and labels come from the model's
# metadata). When ../shared sits beside the checkout, a second example converts
# MobileNet-SSD from its Caffe definition (seeded random weights: the boxes mean
# nothing, the example shows the pipeline) and draws its detections on a photo.
#
#   tools/demo.sh [IMAGE...]      (default: models/fashion/samples/00000_ankle_boot.png)
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/deps.sh
# python3-protobuf, -numpy and protoc: the random caffemodel writer for the MobileNet-SSD example.
kestrel_install_deps python3 python3-protobuf python3-numpy protobuf-compiler

BUILD=${KESTREL_BUILD_DIR:-build/demo}
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DKESTREL_BUILD_TESTS=OFF -DKESTREL_BUILD_BENCH=OFF >/dev/null
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
else
  echo "(no $PROTO: the MobileNet-SSD example is skipped)"
fi
