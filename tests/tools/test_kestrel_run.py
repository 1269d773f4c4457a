#!/usr/bin/env python3
"""kestrel-run end to end on kestrel-zoo models (seeded random weights, no labels):
classification and detection on a synthetic PNG and on ../shared/images/cat.jpg (when
the shared folder exists), the preprocessed input against OpenCV's cv2.resize, .npy
tensors in and out, a detector that finds nothing (0 rows), and the bad-input messages
and exit codes (never a crash). Needs $KESTREL_RUN and $KESTREL_ZOO; $KESTREL_CONVERT
(the 0-row detector) and $KESTREL_SHARED_DIR are optional."""
import os
import pathlib
import re
import subprocess
import sys
import tempfile

import cv2
import numpy as np

RUN = os.environ["KESTREL_RUN"]
ZOO = os.environ["KESTREL_ZOO"]
CONVERT = os.environ.get("KESTREL_CONVERT")
SHARED = pathlib.Path(os.environ.get("KESTREL_SHARED_DIR", "/nonexistent"))

# MobileNet v1 zoo metadata (src/builder/model_zoo.cpp); no channel_order: BGR as Caffe.
MEAN = np.array([103.94, 116.78, 123.68], np.float32)
NORM = np.float32(0.017)

results = []


def run(*args):
    r = subprocess.run([RUN, *map(str, args)], capture_output=True, text=True, timeout=300)
    return r


def check(name, ok, r=None):
    detail = "" if r is None else f"rc={r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    results.append((name, bool(ok), detail))


def top_lines(stdout):
    return [line for line in stdout.splitlines() if re.match(r"^  \d+(\s.*)?\s\d+\.\d{6}$", line)]


def fails(name, r, code, *needles):
    ok = r.returncode == code and all(n in r.stderr for n in needles) and "Traceback" not in r.stderr
    check(f"{name}: exit {code}, message names {needles}", ok, r)


def empty_detections(d, png):
    """A detector that finds nothing: MobileNet-SSD's head in miniature (tests/caffe/
    ssd_mini.prototxt) with a confidence threshold no softmax score exceeds, converted
    without task metadata. Its output is 0 rows of 6."""
    if not CONVERT:
        print("skipped: 0-row outputs (no KESTREL_CONVERT: converters not built)")
        return
    here = pathlib.Path(__file__).resolve().parent
    proto = d / "ssd_none.prototxt"
    text = (here.parent / "caffe" / "ssd_mini.prototxt").read_text()
    proto.write_text(re.sub(r"confidence_threshold: [0-9.]+", "confidence_threshold: 1.0", text))
    weights, model = d / "ssd_none.caffemodel", d / "ssd_none.kst"
    subprocess.run([sys.executable, str(here.parent.parent / "tools" / "caffe_random_weights.py"), str(proto),
                    str(weights), "--seed", "3"], check=True, capture_output=True)
    subprocess.run([CONVERT, "caffe", str(proto), str(weights), str(model)], check=True, capture_output=True)
    x, out = d / "ssd_in.npy", d / "det.npy"
    np.save(x, np.random.default_rng(3).uniform(-1, 1, (3, 32, 32)).astype(np.float32))
    r = run(model, "--input", f"data={x}", "--output", f"detection_out={out}", "--output",
            f"detection_corner={d / 'corner.npy'}")
    ok = r.returncode == 0 and out.exists()
    shape = np.load(out).shape if ok else None
    check(f"0 detections: --output writes a .npy of shape (0, 6) (got {shape})", ok and shape == (0, 6), r)
    check("0 detections: a model ending in DetectionOutput is a detector without task metadata",
          "0 detections with score >= 0.5 (of 0 rows)" in r.stdout and not top_lines(r.stdout), r)
    drawn = d / "none.png"
    r = run(model, png, "--draw", drawn, "--size", "32x32")
    back = cv2.imread(str(drawn)) if drawn.exists() else None
    check("0 detections on an image: reported, and --draw writes the image untouched",
          r.returncode == 0 and "0 detections" in r.stdout and back is not None
          and np.array_equal(back, cv2.imread(str(png))), r)
    r = run(model, png, "--size", "32x32", "--task", "classify")
    check("--task classify on 0 rows: says the output holds no values, prints no classes",
          r.returncode == 0 and "holds no values (shape [0,6])" in r.stdout and not top_lines(r.stdout), r)


def main():
    with tempfile.TemporaryDirectory() as d:
        d = pathlib.Path(d)
        v1, ssd = d / "v1.kst", d / "ssd.kst"
        for net, path in (("mobilenet_v1", v1), ("mobilenet_ssd", ssd)):
            subprocess.run([ZOO, net, str(path)], check=True, capture_output=True)

        rng = np.random.default_rng(7)
        yy, xx = np.mgrid[0:240, 0:320]
        img = np.stack([xx * 255 // 319, yy * 255 // 239, (xx + yy) % 256], axis=-1).astype(np.uint8)
        img = np.clip(img.astype(int) + rng.integers(-20, 21, img.shape), 0, 255).astype(np.uint8)
        png = d / "scene.png"
        cv2.imwrite(str(png), img)  # stored BGR as OpenCV holds it
        gray = d / "gray.png"
        cv2.imwrite(str(gray), cv2.cvtColor(img, cv2.COLOR_BGR2GRAY))
        text = d / "notes.jpg"
        text.write_text("not an image\n")
        labels = d / "labels.txt"
        labels.write_text("".join(f"class_{i}\n" for i in range(1000)))

        # Plain run: metadata defaults, indices without labels, latency.
        r = run(v1, png)
        check("classify with defaults: top 5 indices and the latency",
              r.returncode == 0 and len(top_lines(r.stdout)) == 5 and "latency" in r.stdout
              and "data 224x224 bgr" in r.stdout, r)
        r = run(v1, png, png, "--top", "3", "--threads", "2", "--labels", labels)
        check("two images, --top 3, --labels: labels printed",
              r.returncode == 0 and len(top_lines(r.stdout)) == 6 and r.stdout.count("class_") == 6, r)

        # --output: the network output, and the preprocessed input against cv2.resize.
        prob, data = d / "prob.npy", d / "data.npy"
        r = run(v1, png, "--output", f"prob={prob}", "--output", f"data={data}")
        ok = r.returncode == 0 and prob.exists() and data.exists()
        check("--output writes .npy files", ok, r)
        if ok:
            p = np.load(prob)
            lines = top_lines(r.stdout)
            check("prob.npy: shape (1000, 1, 1), sums to 1, its argmax is the printed top 1",
                  p.shape == (1000, 1, 1) and abs(float(p.sum()) - 1) < 1e-3
                  and lines and int(lines[0].split()[0]) == int(p.argmax()), r)
            x = np.load(data)
            want = (cv2.resize(img, (224, 224), interpolation=cv2.INTER_LINEAR).astype(np.float32) - MEAN) * NORM
            err = float(np.abs(x - want.transpose(2, 0, 1)).max()) if x.shape == (3, 224, 224) else 1e9
            check(f"preprocessed input equals cv2.resize INTER_LINEAR, BGR, mean/norm (max err {err:.4g})",
                  err <= 1.0 * NORM + 1e-4, r)
            # The same tensor fed raw gives the same answer.
            prob2 = d / "prob2.npy"
            r = run(v1, "--input", f"data={data}", "--output", f"prob={prob2}")
            check("--input data=FILE.npy reproduces the image run's output",
                  r.returncode == 0 and prob2.exists() and np.array_equal(np.load(prob2), p), r)

        # Another input size and explicit preprocessing, against cv2 again.
        r = run(v1, png, "--size", "200x150", "--order", "rgb", "--mean", "1,2,3", "--norm", "0.5",
                "--output", f"data={data}")
        ok = r.returncode == 0 and data.exists()
        if ok:
            x = np.load(data)
            rgb = cv2.cvtColor(cv2.resize(img, (200, 150), interpolation=cv2.INTER_LINEAR), cv2.COLOR_BGR2RGB)
            want = ((rgb.astype(np.float32) - np.array([1, 2, 3], np.float32)) * 0.5).transpose(2, 0, 1)
            ok = x.shape == (3, 150, 200) and float(np.abs(x - want).max()) <= 0.5 + 1e-4
        check("--size 200x150 --order rgb --mean --norm match cv2", ok, r)

        # Detection: boxes in pixels, drawn into a JPEG of the image's size.
        out = d / "boxes.jpg"
        r = run(ssd, png, "--threshold", "0.01", "--draw", out)
        drawn = cv2.imread(str(out)) if out.exists() else None
        check("detect with --draw writes a JPEG of the image's size",
              r.returncode == 0 and "detection" in r.stdout and drawn is not None and drawn.shape == img.shape, r)
        boxes = [line.split() for line in r.stdout.splitlines() if " box " in line]
        check("detected boxes lie inside the image",
              all(0 <= int(b[-4]) <= int(b[-2]) < 320 and 0 <= int(b[-3]) <= int(b[-1]) < 240 for b in boxes), r)
        r = run(v1, png, "--draw", d / "top1.png")
        check("classify with --draw writes the image", r.returncode == 0 and (d / "top1.png").exists(), r)

        cat = SHARED / "images" / "cat.jpg"
        if cat.exists():
            r = run(v1, cat, "--labels", SHARED / "labels" / "imagenet_synset.txt")
            check("cat.jpg with the ImageNet labels", r.returncode == 0 and len(top_lines(r.stdout)) == 5, r)
            print(r.stdout)
            r = run(ssd, cat, "--threshold", "0.05", "--draw", d / "cat_boxes.jpg")
            check("cat.jpg through MobileNet-SSD", r.returncode == 0 and (d / "cat_boxes.jpg").exists(), r)
            print(r.stdout)
        else:
            print(f"skipped: {cat} not found (no shared folder)")

        empty_detections(d, png)

        # Bad input: a clear message and a non-zero exit, never a signal.
        fails("missing image", run(v1, d / "nope.jpg"), 1, "nope.jpg", "no such file")
        fails("text file named .jpg", run(v1, text), 1, "notes.jpg", "not a JPEG, PNG or BMP")
        fails("directory as image", run(v1, d), 1, "directory")
        fails("grayscale image for a colour model", run(v1, gray), 1, "gray.png", "grayscale", "--order gray")
        fails("--order gray on a 3-channel model", run(v1, gray, "--order", "gray"), 1, "3 channels")
        fails("missing labels file", run(v1, png, "--labels", d / "none.txt"), 1, "labels file", "none.txt")
        fails("missing model", run(d / "none.kst", png), 1, "none.kst")
        fails("unknown flag", run(v1, png, "--frobnicate", "1"), 2, "unknown option '--frobnicate'")
        fails("bad --size", run(v1, png, "--size", "0x5"), 2, "--size")
        fails("bad --top", run(v1, png, "--top", "abc"), 2, "--top")
        fails("bad --mean", run(v1, png, "--mean", "1,x,3"), 2, "--mean")
        fails("wrong --mean count", run(v1, png, "--mean", "1,2"), 1, "mean has 2 values")
        fails("bad --order", run(v1, png, "--order", "xyz"), 2, "--order")
        fails("flag without value", run(v1, png, "--top"), 2, "--top needs a value")
        fails("no image", run(v1), 2, "no image")
        fails("--output with two images", run(v1, png, png, "--output", f"prob={prob}"), 2, "one image")
        np.save(d / "short.npy", np.zeros((3, 10, 10), np.float32))
        fails("--input of the wrong size", run(v1, "--input", f"data={d / 'short.npy'}"), 1, "holds 300 values")
        fails("--input of an unknown name", run(v1, "--input", f"nosuch={d / 'short.npy'}"), 1, "nosuch")
        fails("--input of a missing file", run(v1, "--input", f"data={d / 'gone.npy'}"), 1, "gone.npy")
        fails("--output of an unknown blob", run(v1, png, "--output", f"nosuch={d / 'x.npy'}"), 1, "nosuch")
        fails("--task detect on a classifier", run(v1, png, "--task", "detect"), 1, "rows of 6")
        fails("--draw to an unknown format", run(v1, png, "--draw", d / "x.gif"), 1, "unknown extension")
        r = run("--help")
        check("--help prints the usage and exits 0", r.returncode == 0 and "usage: kestrel-run" in r.stdout, r)

    failed = [(name, detail) for name, ok, detail in results if not ok]
    for name, detail in failed:
        print(f"FAILED: {name}\n{detail}")
    print(f"{len(results) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
