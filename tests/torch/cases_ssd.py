"""PriorBox and DetectionOutput against OpenCV DNN, which implements Caffe-SSD's layers.

Each case writes a small Caffe prototxt with the layer under test fed by Input
blobs, runs it with cv2.dnn and converts the result to Kestrel's layout:
PriorBox [1,2,N*4] -> [2,N*4]; DetectionOutput [1,1,K,7] (image, label, score, box)
-> [K,6] (label, score, box), without OpenCV's zero padding rows.
"""
import os
import tempfile

import cv2

from kcase import Case, f32, np
from kestrel.fb.CodeType import CodeType
from kestrel.fb.DetectionOutputParam import DetectionOutputParamT
from kestrel.fb.PriorBoxParam import PriorBoxParamT


def run_opencv(prototxt, inputs, output):
    with tempfile.NamedTemporaryFile("w", suffix=".prototxt", delete=False) as f:
        f.write(prototxt)
        path = f.name
    try:
        net = cv2.dnn.readNetFromCaffe(path)
        for name, value in inputs.items():
            net.setInput(value, name)
        return net.forward(output)
    finally:
        os.unlink(path)


def input_decl(name, shape):
    dims = " ".join(f"dim: {d}" for d in shape)
    return f'input: "{name}"\ninput_shape {{ {dims} }}\n'


def priorbox_case(rng, fh, fw, ih, iw, min_size, max_size, ratios, flip, clip, variances, step, offset):
    feat = rng.standard_normal((1, 2, fh, fw)).astype(np.float32)
    img = rng.standard_normal((1, 3, ih, iw)).astype(np.float32)
    fields = [f"min_size: {min_size}"]
    if max_size:
        fields.append(f"max_size: {max_size}")
    fields += [f"aspect_ratio: {r}" for r in ratios]
    fields += [f"flip: {'true' if flip else 'false'}", f"clip: {'true' if clip else 'false'}"]
    fields += [f"variance: {v}" for v in variances]
    if step:
        fields.append(f"step: {step}")
    fields.append(f"offset: {offset}")
    proto = (input_decl("feat", feat.shape) + input_decl("data", img.shape) +
             'layer { name: "pb" type: "PriorBox" bottom: "feat" bottom: "data" top: "pb" '
             f'prior_box_param {{ {" ".join(fields)} }} }}\n')
    y = run_opencv(proto, {"feat": feat, "data": img}, "pb")
    p = PriorBoxParamT()
    p.minSizes = [float(min_size)]
    p.maxSizes = [float(max_size)] if max_size else []
    p.aspectRatios = [float(r) for r in ratios]
    p.flip, p.clip, p.variances, p.offset = flip, clip, [float(v) for v in variances], offset
    p.stepW = p.stepH = float(step)
    tag = f"feat{fh}x{fw} img{ih}x{iw} min{min_size} max{max_size} ar{ratios} flip{flip} clip{clip} step{step}"
    return Case("PriorBox", p, [feat[0], img[0]], [f32(y[0])], [], tag)


def priorbox_cases(rng):
    specs = [
        (19, 19, 300, 300, 60, 0, [2.0], True, False, [0.1, 0.1, 0.2, 0.2], 0, 0.5),
        (10, 10, 300, 300, 105, 150, [2.0, 3.0], True, False, [0.1, 0.1, 0.2, 0.2], 0, 0.5),
        (1, 1, 300, 300, 285, 300, [2.0, 3.0], True, False, [0.1, 0.1, 0.2, 0.2], 0, 0.5),
        (3, 5, 64, 96, 20, 40, [2.0], False, True, [0.1], 0, 0.5),
        (4, 4, 32, 32, 12, 0, [], True, True, [0.1, 0.1, 0.2, 0.2], 8, 0.5),
        (7, 6, 50, 40, 9, 21, [1.5, 3.0], True, True, [0.2], 0, 0.0),
        (2, 3, 17, 23, 30, 0, [2.0, 0.5], True, False, [0.1, 0.1, 0.2, 0.2], 0, 0.5),
        (5, 5, 100, 100, 45, 70, [3.0], True, True, [0.1, 0.1, 0.2, 0.2], 16, 0.25),
        (38, 38, 300, 300, 30, 60, [2.0], True, False, [0.1, 0.1, 0.2, 0.2], 8, 0.5),
        (6, 9, 120, 90, 33, 0, [2.0, 3.0, 4.0], False, False, [0.1, 0.1, 0.2, 0.2], 0, 0.5),
    ]
    return [priorbox_case(rng, *s) for s in specs]


def random_priors(rng, n):
    cx, cy = rng.uniform(0.1, 0.9, n), rng.uniform(0.1, 0.9, n)
    w, h = rng.uniform(0.05, 0.4, n), rng.uniform(0.05, 0.4, n)
    boxes = np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], axis=1)
    var = np.tile(np.array([0.1, 0.1, 0.2, 0.2]), (n, 1))
    return np.stack([boxes.reshape(-1), var.reshape(-1)]).astype(np.float32)


def opencv_detections(loc, conf, priors, p):
    """OpenCV's DetectionOutput for Kestrel's inputs and parameters, as [K,6]."""
    n = loc.size // 4
    nms_fields = f"nms_threshold: {p.nmsThreshold}" + (f" top_k: {p.topK}" if p.topK > 0 else "")
    # The priors go in as 4-D: cv2 would read a 3-D array as an image with channels.
    proto = (input_decl("loc", (1, n * 4)) + input_decl("conf", (1, conf.size)) +
             input_decl("prior", (1, 2, n * 4, 1)) +
             'layer { name: "det" type: "DetectionOutput" bottom: "loc" bottom: "conf" bottom: "prior" '
             f'top: "det" detection_output_param {{ num_classes: {p.numClasses} share_location: true '
             f'background_label_id: {p.backgroundLabelId} nms_param {{ {nms_fields} }} code_type: CENTER_SIZE '
             f'keep_top_k: {p.keepTopK} confidence_threshold: {p.confidenceThreshold} }} }}\n')
    y = run_opencv(proto, {"loc": loc[None], "conf": conf[None], "prior": priors[None, :, :, None]}, "det")
    rows = y.reshape(-1, 7)
    # OpenCV 4.6 pads the output to keep_top_k rows of zeros; real detections score
    # above the confidence threshold, so a zero score marks padding.
    rows = rows[rows[:, 2] > 0]
    return rows[:, 1:].astype(np.float32).reshape(-1, 6)


def detection_case(rng, n, classes, conf_thr, nms, top_k, keep_top_k, background=0, sharp=3.0,
                   priors=None, conf=None, loc=None, tag=""):
    if loc is None:
        loc = (rng.standard_normal(n * 4) * 0.5).astype(np.float32)
    if priors is None:
        priors = random_priors(rng, n)
    if conf is None:
        logits = rng.standard_normal((n, classes)) * sharp
        conf = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    conf = conf.astype(np.float32).reshape(-1)
    p = DetectionOutputParamT()
    p.numClasses, p.shareLocation, p.backgroundLabelId = classes, True, background
    p.nmsThreshold, p.topK, p.keepTopK, p.confidenceThreshold = nms, top_k, keep_top_k, conf_thr
    p.codeType = CodeType.CenterSize
    tag = tag or f"priors{n} classes{classes} thr{conf_thr} nms{nms} top{top_k} keep{keep_top_k} bg{background}"
    out = opencv_detections(loc, conf, priors, p)
    return Case("DetectionOutput", p, [loc, conf, priors], [out], [], tag)


def detection_cases(rng):
    cases = [
        detection_case(rng, 50, 4, 0.3, 0.45, 100, 100),
        detection_case(rng, 200, 5, 0.2, 0.45, 20, 30, tag="more candidates than top_k"),
        detection_case(rng, 120, 3, 0.1, 0.3, 400, 10, tag="keep_top_k cuts across classes"),
        detection_case(rng, 80, 6, 0.5, 0.7, 50, 50),
        detection_case(rng, 30, 4, 0.99, 0.45, 100, 100, sharp=0.5, tag="empty: nothing over the threshold"),
        detection_case(rng, 1, 2, 0.1, 0.45, 100, 100, tag="one prior"),
        detection_case(rng, 60, 4, 0.25, 0.45, 100, 100, background=2, tag="background is class 2"),
        detection_case(rng, 300, 21, 0.25, 0.45, 100, 100, tag="VOC-sized"),
    ]
    # Ties: equal scores on boxes that do not overlap, so any tie order gives one set.
    n, classes = 16, 3
    grid = [(x / 4, y / 4) for x in range(4) for y in range(4)]
    boxes = np.array([[gx + 0.02, gy + 0.02, gx + 0.2, gy + 0.2] for gx, gy in grid])
    var = np.tile(np.array([0.1, 0.1, 0.2, 0.2]), (n, 1))
    priors = np.stack([boxes.reshape(-1), var.reshape(-1)]).astype(np.float32)
    conf = np.zeros((n, classes))
    conf[:, 0] = 0.2
    conf[:, 1] = 0.6
    conf[:, 2] = 0.2
    conf[::2, 1], conf[::2, 2] = 0.4, 0.4
    cases.append(detection_case(rng, n, classes, 0.3, 0.45, 100, 100, priors=priors, conf=conf, tag="tied scores"))
    # Identical boxes with tied scores: NMS keeps exactly one per class.
    boxes2 = np.tile(np.array([[0.3, 0.3, 0.6, 0.6]]), (6, 1))
    priors2 = np.stack([boxes2.reshape(-1), np.tile([0.1, 0.1, 0.2, 0.2], 6)]).astype(np.float32)
    conf2 = np.tile(np.array([[0.1, 0.9]]), (6, 1))
    # No offsets: the six boxes decode to the same box.
    cases.append(detection_case(rng, 6, 2, 0.5, 0.45, 100, 100, priors=priors2, conf=conf2,
                                loc=np.zeros(24, np.float32), tag="identical tied boxes"))
    return cases


def generate(rng):
    return priorbox_cases(rng) + detection_cases(rng)
