#!/usr/bin/env python3
"""The task API's answers against TensorFlow.js, for tests/tfjs/compare_tfjs.py: on
one input tensor both engines got,
  - MoveNet: Kestrel's keypoints (kestrel-run's pose task on Kestrel's outputs) against
    the graph's own post-processing run in TF.js (its Identity output): within 0.5 px on
    the 192x192 input, and the same scores within 1e-4;
  - CenterNet: Kestrel's detections (no NMS, score > 0.05) against the graph's own
    tower_0/detections: the same classes, boxes within 1 px (512x512 input);
  - BlazeFace: Kestrel's faces against the same decoding (kestrel-run --decode) applied
    to TF.js's raw outputs: the same count, IoU >= 0.99 face for face.
Each check returns (ok, summary, worst difference).
"""
import json
import os
import pathlib
import subprocess

import numpy as np

MOVENET_PX, CENTERNET_PX, FACE_IOU = 0.5, 1.0, 0.99
SCORE_FLOOR, SCORE_MARGIN = 0.05, 0.01  # CenterNet: compared above the floor, matched above floor + margin


def run(cmd, **kw):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))}\n{r.stdout}\n{r.stderr}")
    return r.stdout


def kestrel_task(kst, args, out_json):
    run([os.environ["KESTREL_RUN"], kst, *args, "--json", out_json])
    return json.loads(pathlib.Path(out_json).read_text())


def iou(a, b):
    iw = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    ih = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = iw * ih
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def check_movenet(model, kst, ref, x_path, out_dir, tag):
    ident = np.load(ref["Identity"])[0, 0]  # [17, (y, x, score)]
    got = kestrel_task(kst, ["--input", f"{model.input_name}={x_path}"], out_dir / f"task_k_{tag}.json")
    kps = np.array(got["poses"][0]["keypoints"])  # [17, (x, y, score)] in input pixels
    dx = np.abs(kps[:, 0] - ident[:, 1] * model.size).max()
    dy = np.abs(kps[:, 1] - ident[:, 0] * model.size).max()
    ds = np.abs(kps[:, 2] - ident[:, 2]).max()
    ok = max(dx, dy) <= MOVENET_PX and ds <= 1e-4
    return ok, f"17 keypoints, max |dx| {dx:.3g} px, |dy| {dy:.3g} px, |dscore| {ds:.2g}", float(max(dx, dy))


def check_centernet(model, kst, ref, x_path, out_dir, tag):
    det = np.load(ref["tower_0/detections"])[0]
    got = kestrel_task(kst, ["--input", f"{model.input_name}={x_path}", "--threshold", str(SCORE_FLOOR), "--iou", "2",
                             "--top", "100"], out_dir / f"task_k_{tag}.json")
    mine = [(o["label"], o["score"], o["box"]) for o in got["objects"]]
    theirs = [(int(d[5]), float(d[4]), [float(v) for v in d[:4]]) for d in det if d[4] > SCORE_FLOOR]
    worst, problems = 0.0, []
    # Each side's detections clear of the floor must be on the other side: same class,
    # the box within 1 px.
    for a, b, name in ((theirs, mine, "TF.js"), (mine, theirs, "Kestrel")):
        for label, score, box in a:
            if score <= SCORE_FLOOR + SCORE_MARGIN:
                continue
            cands = [max(abs(p - q) for p, q in zip(box, bb)) for lb, _, bb in b if lb == label]
            d = min(cands) if cands else float("inf")
            worst = max(worst, d)
            if d > CENTERNET_PX:
                problems.append(f"{name} class {label} score {score:.3f} box {np.round(box, 1).tolist()} unmatched")
    ok = not problems
    text = f"{len(theirs)} TF.js / {len(mine)} Kestrel detections > {SCORE_FLOOR}, max box difference {worst:.3g} px"
    return ok, text + ("" if ok else ": " + "; ".join(problems[:3])), worst


def check_blazeface(model, kst, ref, x_path, out_dir, tag):
    raw = {n: ref[n] for n in ("Identity", "Identity_1", "Identity_2", "Identity_3")}
    theirs = kestrel_task(kst, [a for n, f in raw.items() for a in ("--decode", f"{n}={f}")], out_dir / f"task_t_{tag}.json")
    mine = kestrel_task(kst, ["--input", f"{model.input_name}={x_path}"], out_dir / f"task_k_{tag}.json")
    a, b = theirs["faces"], mine["faces"]
    ious = [iou(f["box"], g["box"]) for f, g in zip(a, b)]
    ok = len(a) == len(b) and all(v >= FACE_IOU for v in ious)
    low = min(ious) if ious else 1.0
    return ok, f"{len(b)} faces (TF.js outputs decoded: {len(a)}), lowest IoU {low:.4f}", low


CHECKS = {"movenet": check_movenet, "centernet": check_centernet, "blazeface": check_blazeface}
# The graph outputs each check reads from TF.js besides the cut tensors.
TFJS_OUTPUTS = {"movenet": ["Identity"], "centernet": ["tower_0/detections"], "blazeface": []}
