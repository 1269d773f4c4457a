#!/usr/bin/env python3
"""What int8 costs on trained networks and real photos (issue 27): each model calibrated
by kestrel-quantize on images it is not evaluated on, then run at Option::precision int8
against fp32 on the same inputs.

    /usr/bin/python3 bench/precision/int8_accuracy.py --build build/release [--methods kl,minmax,percentile]
        [--out bench/precision/RESULTS_INT8.md]

- Fashion-MNIST (models/fashion/fashion_onnx.kst): calibrated on the first --fashion-calib
  training images (PNG files written here), evaluated on the whole test set: top-1 and the
  change from fp32 (bound: 0.5 point).
- MoveNet, BlazeFace and CenterNet (the TF.js models): calibrated on ../shared/images
  (a cat and five VOC photos), evaluated on face-api's six sample photos: keypoints'
  mean distance from fp32 in input pixels (bound: 2 px), and the fp32 boxes found again
  at IoU >= 0.8 with none new above the score threshold.

Needs kestrel-convert, kestrel-quantize, kestrel-run and fashion_eval in --build,
dataset-fashion-mnist, the TF.js models (tools/realmodels.sh) and ../shared/images.
"""
import argparse
import gzip
import json
import os
import pathlib
import re
import sys
import tempfile

import cv2
import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import accuracy  # noqa: E402
from accuracy import REPO, FASHION_DATA, realmodels, run, iou, cpu_name  # noqa: E402

SHARED_IMAGES = REPO.parent / "shared" / "images"


def compare_boxes(want, got, thresh):
    """As accuracy.compare_boxes, at IoU >= thresh."""
    found, worst, used = 0, 1.0, set()
    for lw, bw in want:
        best, bi = 0.0, -1
        for i, (lg, bg) in enumerate(got):
            if lg == lw and i not in used and iou(bw, bg) > best:
                best, bi = iou(bw, bg), i
        worst = min(worst, best)
        if best >= thresh:
            found += 1
            used.add(bi)
    return found, len(want), len(got) - len(used), worst


def fashion_calibration(d, n):
    raw = gzip.open(FASHION_DATA / "train-images-idx3-ubyte.gz").read()
    imgs = np.frombuffer(raw, np.uint8, offset=16).reshape(-1, 28, 28)[:n]
    paths = []
    for i, im in enumerate(imgs):
        p = d / f"fashion_train_{i:05d}.png"
        cv2.imwrite(str(p), im)
        paths.append(p)
    return paths


def quantize(build, model, images, out, method, extra=()):
    return run([build / "kestrel-quantize", model, *images, "-o", out, "--method", method, *extra])


def convert(build, paths, m, kst):
    """The TF.js model m (realmodels.MODELS) converted by kestrel-convert into kst, with its metadata."""
    cmd = [build / "kestrel-convert", "tfjs", pathlib.Path(paths["HUMAN_MODELS"]) / m.file, kst]
    for meta in m.meta:
        cmd += ["--meta", meta]
    return run(cmd)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build/release")
    ap.add_argument("--out")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--methods", default="kl,minmax,percentile")
    ap.add_argument("--fashion-calib", type=int, default=1000)
    ap.add_argument("--models", default="fashion,movenet,blazeface,centernet")
    ap.add_argument("--keep-below", default="", help="also each method with kestrel-quantize --keep-below DB "
                    "(comma-separated list of DB)")
    ap.add_argument("--equalize", action="store_true", help="also each method with kestrel-quantize --equalize")
    ap.add_argument("--variant", action="append", default=[],
                    help="also each method with these kestrel-quantize options (quoted, repeatable), e.g. "
                    "'--keep-below 25 --no-bias-correction'")
    a = ap.parse_args()
    build = pathlib.Path(a.build)
    methods = a.methods.split(",")
    wanted = a.models.split(",")
    calib_photos = sorted(SHARED_IMAGES.glob("*.jpg"))
    if not calib_photos:
        sys.exit(f"no calibration photos in {SHARED_IMAGES}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="kestrel_int8_") as tmp:
        tmp = pathlib.Path(tmp)
        if "fashion" in wanted:
            ev = build / "tests" / "fashion" / "fashion_eval"
            model = REPO / "models" / "fashion" / "fashion_onnx.kst"
            data = [FASHION_DATA / "t10k-images-idx3-ubyte.gz", FASHION_DATA / "t10k-labels-idx1-ubyte.gz"]

            def top1(kst, prec):
                text = run([ev, kst, *data, "--precision", prec, "--threads", a.threads])
                return float(re.search(r"accuracy ([0-9.]+)%", text).group(1))

            base = top1(model, "fp32")
            rows.append(("Fashion-MNIST (10,000 test images)", "fp32", f"top-1 {base:.2f}%", "-"))
            calib = fashion_calibration(tmp, a.fashion_calib)
            for m in methods:
                q = tmp / f"fashion_{m}.kst"
                quantize(build, model, calib, q, m)
                acc = top1(q, "int8")
                dlt = acc - base
                rows.append((f"Fashion-MNIST (10,000 test images; calibrated on {len(calib)} training images)",
                             f"int8 {m}", f"top-1 {acc:.2f}%",
                             f"{dlt:+.2f} point" + (" (ok)" if abs(dlt) <= 0.5 else " (over 0.5)")))

        paths = realmodels.fetch()
        photos = [pathlib.Path(paths["FACEAPI_DEMO"]) / f"sample{i}.jpg" for i in range(1, 7)]
        for m in [x for x in realmodels.MODELS if x.name in ("movenet", "blazeface", "centernet") and x.name in wanted]:
            kst = tmp / f"{m.name}.kst"
            convert(build, paths, m, kst)

            def infer(model, prec, tag):
                res = {}
                for p in photos:
                    out = tmp / f"{m.name}_{tag}_{p.stem}.json"
                    run([build / "kestrel-run", model, p, "--precision", prec, "--json", out, "--threads", a.threads])
                    res[p.stem] = json.loads(out.read_text())
                return res

            want = infer(kst, "fp32", "fp32")
            variants = [(meth, ()) for meth in methods]
            variants += [(meth, ("--keep-below", db)) for db in a.keep_below.split(",") if db for meth in methods]
            if a.equalize:
                variants += [(meth, ("--equalize",)) for meth in methods]
            variants += [(meth, tuple(v.split())) for v in a.variant for meth in methods]
            for meth, extra in variants:
                tag = meth
                if "--keep-below" in extra:
                    tag += f", layers under {extra[extra.index('--keep-below') + 1]} dB kept fp32"
                if extra[:1] == ("--equalize",):
                    tag += ", depthwise inputs equalized"
                if "--no-bias-correction" in extra:
                    tag += ", biases not corrected"
                vid = "_".join(x.strip("-") for x in extra)
                q = tmp / f"{m.name}_{meth}_{vid}.kst"
                text = quantize(build, kst, calib_photos, q, meth, extra)
                kept = re.search(r"with (\d+) layers kept in fp32: ([-0-9.]+) dB", text)
                if kept:
                    tag += f" ({kept.group(1)} layers; {kept.group(2)} dB)"
                adds = re.search(r"with the (\d+) residual adds in fp32 too: ([-0-9.]+) dB  -> kept fp32", text)
                if adds:
                    tag += f", and the {adds.group(1)} residual adds ({adds.group(2)} dB)"
                bc = re.search(r"whole network in int8: ([-0-9.]+) dB, bias-corrected ([-0-9.]+) dB", text)
                if bc:
                    tag += f", biases corrected ({bc.group(1)} -> {bc.group(2)} dB)"
                got = infer(q, "int8", f"{meth}{vid}")
                meth = tag
                if m.name == "movenet":
                    dists = accuracy.keypoint_distances(want, got, photos)
                    mean = sum(dists) / len(dists)
                    # The keypoints fp32 sees (score >= 0.3), apart: the others' heatmaps are flat
                    # noise whose argmax any change moves (fp16 moves one by 42 px).
                    scores = [k[2] for p in photos for pose in want[p.stem]["poses"] for k in pose["keypoints"]]
                    seen = [d for d, sc in zip(dists, scores) if sc >= 0.3]
                    rows.append((f"MoveNet Lightning 192 (6 photos, {len(dists)} keypoints)", f"int8 {meth}",
                                 f"keypoints {mean:.3f} px mean, {max(dists):.3f} px max from fp32; the {len(seen)} "
                                 f"scoring 0.3 or more: {sum(seen) / max(1, len(seen)):.3f} px mean, "
                                 f"{max(seen, default=0):.3f} max",
                                 "ok (<= 2 px mean)" if mean <= 2.0 else "over 2 px"))
                else:
                    key = "faces" if m.name == "blazeface" else "objects"
                    found, total, new, worst = accuracy.box_totals(want, got, photos, key,
                                                                   lambda w, g: compare_boxes(w, g, 0.8))
                    label = "BlazeFace 256" if m.name == "blazeface" else "CenterNet MobileNetV3 512"
                    rows.append((f"{label} (6 photos, {total} boxes at fp32)", f"int8 {meth}",
                                 f"{found}/{total} found again (IoU >= 0.8, worst {worst:.3f}), {new} new",
                                 "ok" if found == total and new == 0 else "NOT within the bound"))

    accuracy.write_table(f"Host: {cpu_name()}, {os.cpu_count()} CPUs. int8: kestrel-quantize's scales (method as "
                         "named), the int8 oracle (kernels::conv_reference_i8) on every Convolution whose input has a "
                         "scale.", "precision", rows, a.out)


if __name__ == "__main__":
    main()
