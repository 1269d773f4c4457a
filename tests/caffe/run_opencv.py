#!/usr/bin/env python3
"""Expected outputs of Caffe networks from OpenCV DNN, for the "caffe" test suite
(tests/test_caffe_opencv.cpp), which converts the same networks with Kestrel's
Caffe converter and compares.

Networks: every tests/caffe/*.prototxt, plus the real MobileNet v1 and MobileNet-SSD
deploy definitions from ../shared/models/caffe (skipped, with a message, when that
directory is absent). For each, a seeded random caffemodel (tools/
caffe_random_weights.py) and a seeded random input; OpenCV (reference backend, no
layer fusion) gives the network outputs and the blobs inside it.

  OUT_DIR/manifest.txt      per network:
                              net <name> <source>      (source: project | shared)
                              input <blob> <file>      (float32 .npy, no batch dim)
                              output <blob> <file> <kind>
                              blob <blob> <file>       (an intermediate blob)
                              end
  OUT_DIR/<name>/net.prototxt, net.caffemodel, *.npy

Outputs of kind "tensor" are OpenCV's blob without the batch dimension; kind
"detections" (DetectionOutput) are rows [label, score, xmin, ymin, xmax, ymax] (OpenCV's
image-id column and its zero-score padding rows dropped), in OpenCV's order.
Intermediate blobs are those written by exactly one layer (not modified in place
later), produced by a single-top layer; their value is the producing layer's output.

Not covered here, because OpenCV 4.6 cannot serve as the reference (left to the
converter's own unit tests): the Bias layer (no such OpenCV layer), ShuffleChannel
(its Caffe schema has no shuffle_channel_param), Interp/Upsample/Clip/Swish/ReLU6 and
the depthwise convolution types of forks, InnerProduct transpose and LRN's k (both
ignored), dilated Deconvolution (sized as undilated), Normalize over the whole blob
with a per-channel scale and partial Permute orders (both rejected), DetectionOutput
with CORNER_SIZE coding, variance_encoded_in_target or no background class.

Usage: run_opencv.py OUT_DIR [--seed N] [--only NAME[,NAME]] [--shared DIR]
                             [--proto caffe.proto]
"""
import argparse
import os
import pathlib
import shutil
import sys
import time
import zlib

import cv2
import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO / "tools"))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree

import caffe_random_weights as crw  # noqa: E402

REAL_NETS = ["mobilenet_deploy.prototxt", "mobilenet_ssd_deploy.prototxt"]


def f32(x):
    return np.ascontiguousarray(np.asarray(x, dtype=np.float32))


def strip_batch(a, what):
    if a.ndim < 2 or a.shape[0] != 1:
        raise RuntimeError(f"{what}: OpenCV blob of shape {a.shape} has no batch of 1")
    return a.reshape(a.shape[1:])


def detections(a):
    """OpenCV's [1, 1, N, 7] rows (image, label, score, box) -> [K, 6] without padding."""
    rows = a.reshape(-1, 7)
    rows = rows[(rows[:, 0] >= 0) & (rows[:, 2] > 0)]
    return rows[:, 1:].reshape(-1, 6)


def plan(net):
    """Network outputs (blobs still available after the last layer, Caffe's rule) and
    intermediate blobs worth comparing, with the OpenCV layer that produces each."""
    writers = {}
    for layer in net.layers:
        for t in layer.tops:
            writers.setdefault(t, []).append(layer)
    inputs = [n for n, _ in net.inputs] + [t for l in net.layers if l.type == "Input" for t in l.tops]
    available = []
    for layer in net.layers:
        # Silence (OpenCV's identity) leaves its bottoms available: they are outputs.
        if layer.type in ("Input", "Silence"):
            continue
        for b in layer.bottoms:
            if b in available:
                available.remove(b)
        for t in layer.tops:
            if t in available:
                available.remove(t)
            available.append(t)
    outputs = [(b, writers[b][-1]) for b in available if b not in inputs]
    output_names = {b for b, _ in outputs}
    blobs = []
    for layer in net.layers:
        if layer.type in ("Input", "DetectionOutput") or len(layer.tops) != 1:
            continue
        t = layer.tops[0]
        if t in output_names or t in inputs or t in layer.bottoms or len(writers[t]) != 1:
            continue
        blobs.append((t, layer))
    return inputs, outputs, blobs


def run_net(pb2, src, out_dir, name, origin, seed, lines):
    t0 = time.time()
    d = out_dir / name
    d.mkdir()
    net = crw.read_net(src, pb2)
    model, input_shapes = crw.random_caffemodel(net, seed)
    _, per_layer = crw.infer_shapes(net)
    top_shape = {}
    for layer, (_, tops) in zip(net.layers, per_layer):
        for t, s in zip(layer.tops, tops):
            top_shape[(layer.name, t)] = list(s)
    shutil.copy(src, d / "net.prototxt")
    (d / "net.caffemodel").write_bytes(model.SerializeToString())
    inputs, outputs, blobs = plan(net)

    cv = cv2.dnn.readNetFromCaffe(str(d / "net.prototxt"), str(d / "net.caffemodel"))
    cv.setPreferableBackend(cv2.dnn.DNN_BACKEND_OPENCV)
    cv.setPreferableTarget(cv2.dnn.DNN_TARGET_CPU)
    cv.enableFusion(False)
    rng = np.random.default_rng([seed, zlib.crc32(name.encode()), 1])
    lines.append(f"net {name} {origin}")
    for i, blob in enumerate(inputs):
        x = f32(rng.uniform(-1.0, 1.0, input_shapes[blob]))
        cv.setInput(x, blob)
        np.save(d / f"in{i}.npy", strip_batch(x, blob))
        lines.append(f"input {blob} in{i}.npy")

    wanted = [l.name for _, l in outputs] + [l.name for _, l in blobs]
    results = cv.forward(wanted)
    for (blob, layer), r in zip(outputs + blobs, results):
        # The writer's shape inference sized the weights: it must agree with OpenCV.
        want = top_shape[(layer.name, blob)]
        if layer.type != "DetectionOutput" and list(r.shape) != want:
            raise RuntimeError(f"layer '{layer.name}': OpenCV's output shape {list(r.shape)} "
                               f"differs from Caffe's rules {want}")
    for i, (blob, layer) in enumerate(outputs):
        r = results[i]
        if layer.type == "DetectionOutput":
            y, kind = detections(r), "detections"
        else:
            y, kind = strip_batch(r, blob), "tensor"
        np.save(d / f"out{i}.npy", f32(y))
        lines.append(f"output {blob} out{i}.npy {kind}")
    for k, (blob, layer) in enumerate(blobs):
        np.save(d / f"blob{k}.npy", f32(strip_batch(results[len(outputs) + k], blob)))
        lines.append(f"blob {blob} blob{k}.npy")
    lines.append("end")
    summary = ", ".join(
        f"{b} {list(np.load(d / f'out{i}.npy').shape)}" for i, (b, _) in enumerate(outputs))
    print(f"{name}: {len(net.layers)} layers, {len(inputs)} inputs, outputs {summary}, "
          f"{len(blobs)} intermediate blobs ({time.time() - t0:.2f} s)", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=20261122)
    ap.add_argument("--only", default="")
    ap.add_argument("--shared", default=os.environ.get("KESTREL_SHARED_DIR", str(REPO.parent / "shared")))
    ap.add_argument("--proto", default=None)
    args = ap.parse_args()
    cv2.setNumThreads(1)
    try:
        pb2 = crw.load_caffe_pb2(args.proto)
    except crw.CaffeError as e:
        print(f"run_opencv: {e}", file=sys.stderr)
        return 1
    nets = [(p, "project") for p in sorted(HERE.glob("*.prototxt"))]
    shared = pathlib.Path(args.shared) / "models" / "caffe"
    if shared.is_dir():
        for n in REAL_NETS:
            if (shared / n).exists():
                nets.append((shared / n, "shared"))
            else:
                print(f"{shared / n} is absent: skipping it", file=sys.stderr)
    else:
        print(f"{shared} is absent: skipping the real networks (MobileNet v1, MobileNet-SSD)", file=sys.stderr)
    if args.only:
        wanted = set(args.only.split(","))
        nets = [(p, o) for p, o in nets if p.stem in wanted]
    out = pathlib.Path(args.out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    lines = []
    t0 = time.time()
    for path, origin in nets:
        try:
            run_net(pb2, path, out, path.stem, origin, args.seed, lines)
        except (crw.CaffeError, cv2.error, RuntimeError) as e:
            print(f"{path}: {e}", file=sys.stderr)
            return 1
    (out / "manifest.txt").write_text("\n".join(lines) + "\n")
    print(f"wrote {len(nets)} networks to {out} in {time.time() - t0:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
