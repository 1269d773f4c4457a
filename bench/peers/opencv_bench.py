#!/usr/bin/env python3
"""OpenCV DNN (Debian's python3-opencv) latency of one model, as kestrel-bench measures
Kestrel's: the wall time of setInput + forward per inference after warm-up runs.

  opencv_bench.py (--onnx MODEL.onnx | --caffe NET.prototxt NET.caffemodel) INPUT.npy THREADS LOOPS WARMUP

Prints one JSON line: {"engine": "opencv", "threads", "min_ms", "median_ms", "max_ms"}.
"""
import json
import sys
import time

import cv2
import numpy as np


def main(argv):
    if argv[0] == "--onnx":
        net = cv2.dnn.readNetFromONNX(argv[1])
        rest = argv[2:]
    else:
        net = cv2.dnn.readNetFromCaffe(argv[1], argv[2])
        rest = argv[3:]
    path, threads, loops, warmup = rest[0], int(rest[1]), int(rest[2]), int(rest[3])
    cv2.setNumThreads(threads)
    net.setPreferableBackend(cv2.dnn.DNN_BACKEND_OPENCV)
    net.setPreferableTarget(cv2.dnn.DNN_TARGET_CPU)
    x = np.load(path).astype(np.float32)[None]
    for _ in range(warmup):
        net.setInput(x)
        net.forward()
    ms = []
    for _ in range(loops):
        t0 = time.perf_counter()
        net.setInput(x)
        net.forward()
        ms.append((time.perf_counter() - t0) * 1e3)
    ms.sort()
    print(json.dumps({"engine": "opencv", "version": cv2.__version__, "threads": threads, "min_ms": ms[0],
                      "median_ms": ms[len(ms) // 2], "max_ms": ms[-1]}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
