#!/usr/bin/env python3
"""What reduced precision costs on trained networks and real photos (issue 26): each
model at fp32 (the oracle) and at Option::precision fp16, on the fast kernels (on x86:
fp16 storage, fp32 arithmetic) and on the reference kernels (the fp16 oracle: exact
binary16 arithmetic, accumulating in fp16 as the ARMv8.2 kernels will).

    /usr/bin/python3 bench/precision/accuracy.py --build build/release [--out bench/precision/RESULTS.md]
        [--no-reference]   # skip the slow fp16-arithmetic oracle (about 2 minutes for the photos)
    # The ARMv8.2 kernels themselves, under qemu (the photos only; about 6 minutes):
    /usr/bin/python3 bench/precision/accuracy.py --build build/release --no-reference --no-fashion \
        --run "qemu-aarch64 -cpu cortex-a76 AARCH64_BUILD/kestrel-run" [--out bench/precision/RESULTS_ARM.md]

Rows:
- Fashion-MNIST (models/fashion/fashion_onnx.kst), the whole test set: top-1 accuracy and
  the change from fp32 (bound: 0.1 point);
- MoveNet Lightning (192 input) on face-api's six sample photos: the mean and largest
  keypoint distance from fp32 in input pixels (bound: 1 px mean);
- BlazeFace and CenterNet on the same photos: the fp32 boxes found again (IoU >= 0.9 with a
  box of the same label) and the boxes above the score threshold that fp32 does not have
  (bound: all found, none new).

Needs kestrel-convert, kestrel-run and fashion_eval in --build, the Fashion-MNIST test set
(dataset-fashion-mnist) and the TF.js models (tools/realmodels.sh fetches them: node, npm
and the npm registry).
"""
import argparse
import json
import os
import pathlib
import platform
import re
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "tfjs"))
import realmodels  # noqa: E402

FASHION_DATA = pathlib.Path("/usr/share/datasets/fashion-mnist")
CONFIGS = [("fp32", "fast"), ("fp16", "fast"), ("fp16", "ref")]


def run(cmd):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))}\n{r.stdout}\n{r.stderr}")
    return r.stdout


def cpu_name():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def iou(a, b):
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def boxes(result, key):
    return [(d.get("label", 0), d["box"]) for d in result[key]]


def compare_boxes(want, got):
    """(fp32 boxes found again at IoU >= 0.9, fp32 boxes, boxes only `got` has, worst IoU)."""
    found, worst, used = 0, 1.0, set()
    for label, b in want:
        best, best_j = 0.0, None
        for j, (gl, gb) in enumerate(got):
            if gl == label and j not in used and iou(b, gb) > best:
                best, best_j = iou(b, gb), j
        worst = min(worst, best)
        if best >= 0.9:
            found += 1
            used.add(best_j)
    return found, len(want), len(got) - len(used), worst


def keypoint_distances(want, got, photos):
    """Each keypoint's distance between two pose results per photo, in input pixels."""
    dists = []
    for p in photos:
        w, g = want[p.stem], got[p.stem]
        s = w["preprocess"]["scale"]
        for pw, pg in zip(w["poses"], g["poses"]):
            for kw, kg in zip(pw["keypoints"], pg["keypoints"]):
                dists.append((((kw[0] - kg[0]) * s[0]) ** 2 + ((kw[1] - kg[1]) * s[1]) ** 2) ** 0.5)
    return dists


def box_totals(want, got, photos, key, compare=None):
    """found, total, new, worst IoU summed over the photos (compare: compare_boxes)."""
    compare = compare or compare_boxes
    found = total = new = 0
    worst = 1.0
    for p in photos:
        f, t, n, wi = compare(boxes(want[p.stem], key), boxes(got[p.stem], key))
        found, total, new, worst = found + f, total + t, new + n, min(worst, wi)
    return found, total, new, worst


def write_table(intro, column, rows, out):
    """Prints intro and the rows (model, `column`, result, against fp32) as Markdown, and
    writes them to out when given."""
    lines = [intro, "", f"| model | {column} | result | against fp32 |", "|---|---|---|---|"]
    lines += [f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} |" for r in rows]
    text = "\n".join(lines) + "\n"
    print(text)
    if out:
        pathlib.Path(out).write_text(text)


def build_dir(a):
    return pathlib.Path(a.build)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build/release")
    ap.add_argument("--out")
    ap.add_argument("--no-reference", action="store_true")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-fashion", action="store_true", help="only the TF.js models on the photos")
    ap.add_argument("--bf16", action="store_true", help="Option::precision bf16 instead of fp16: the fast "
                    "kernels (AVX512-BF16) and the bf16 oracle")
    ap.add_argument("--run", help="the kestrel-run command (default: --build's), e.g. a static aarch64 "
                    "kestrel-run behind qemu-aarch64 -cpu cortex-a76")
    a = ap.parse_args()
    kestrel_run = a.run.split() if a.run else [build_dir(a) / "kestrel-run"]
    build = pathlib.Path(a.build)
    configs = [(("bf16" if a.bf16 and p == "fp16" else p), k) for p, k in CONFIGS]
    configs = [c for c in configs if not (a.no_reference and c[1] == "ref")]
    rows = []

    # Fashion-MNIST.
    ev = build / "tests" / "fashion" / "fashion_eval"
    model = REPO / "models" / "fashion" / "fashion_onnx.kst"
    acc = {}
    for prec, kern in [] if a.no_fashion else configs:
        text = run([ev, model, FASHION_DATA / "t10k-images-idx3-ubyte.gz", FASHION_DATA / "t10k-labels-idx1-ubyte.gz",
                    "--precision", prec, "--threads", a.threads] + (["--reference"] if kern == "ref" else []))
        acc[(prec, kern)] = float(re.search(r"accuracy ([0-9.]+)%", text).group(1))
    for prec, kern in [] if a.no_fashion else configs:
        d = acc[(prec, kern)] - acc[("fp32", "fast")]
        rows.append(("Fashion-MNIST (10,000 test images)", f"{prec} {kern}", f"top-1 {acc[(prec, kern)]:.2f}%",
                     "-" if prec == "fp32" else f"{d:+.2f} point" + (" (ok)" if abs(d) <= 0.1 else " (over 0.1)")))

    # The TF.js models on the six photos.
    paths = realmodels.fetch()
    photos = [pathlib.Path(paths["FACEAPI_DEMO"]) / f"sample{i}.jpg" for i in range(1, 7)]
    with tempfile.TemporaryDirectory(prefix="kestrel_precision_") as tmp:
        tmp = pathlib.Path(tmp)
        for m in [x for x in realmodels.MODELS if x.name in ("movenet", "blazeface", "centernet")]:
            kst = tmp / f"{m.name}.kst"
            cmd = [build / "kestrel-convert", "tfjs", pathlib.Path(paths["HUMAN_MODELS"]) / m.file, kst]
            for meta in m.meta:
                cmd += ["--meta", meta]
            run(cmd)
            results = {}
            for prec, kern in configs:
                for p in photos:
                    out = tmp / f"{m.name}_{prec}_{kern}_{p.stem}.json"
                    run(kestrel_run + [kst, p, "--precision", prec, "--kernels", kern, "--json", out,
                         "--threads", a.threads])
                    results[(prec, kern, p.stem)] = json.loads(out.read_text())
            for prec, kern in configs[1:]:
                want = {p.stem: results[("fp32", "fast", p.stem)] for p in photos}
                got = {p.stem: results[(prec, kern, p.stem)] for p in photos}
                if m.name == "movenet":
                    dists = keypoint_distances(want, got, photos)
                    mean = sum(dists) / len(dists)
                    rows.append((f"MoveNet Lightning 192 (6 photos, {len(dists)} keypoints)", f"{prec} {kern}",
                                 f"keypoints {mean:.3f} px mean, {max(dists):.3f} px max from fp32",
                                 "ok (<= 1 px mean)" if mean <= 1.0 else "over 1 px"))
                else:
                    key = "faces" if m.name == "blazeface" else "objects"
                    found, total, new, worst = box_totals(want, got, photos, key)
                    label = "BlazeFace 256" if m.name == "blazeface" else "CenterNet MobileNetV3 512"
                    rows.append((f"{label} (6 photos, {total} boxes at fp32)", f"{prec} {kern}",
                                 f"{found}/{total} found again (IoU >= 0.9, worst {worst:.3f}), {new} new",
                                 "ok" if found == total and new == 0 else "NOT within the bound"))

    where = (f"`fast` is `{' '.join(kestrel_run)}`'s kernels" if a.run else
             "`fast` on this x86 host: fp16 storage (weights and outputs rounded to halves, fp32 arithmetic)")
    oracle = "the fp16 oracle (exact binary16 arithmetic, accumulating in fp16)"
    if a.bf16:
        where = ("`bf16 fast`: the AVX512-BF16 kernels on the 1x1 layers of >= 128 inputs and >= 32 outputs (fp32 on a CPU "
                 "without them)")
        oracle = "the bf16 oracle (kernels::conv_reference_bf16, the same layers)"
    write_table(f"Host: {cpu_name()}, {os.cpu_count()} CPUs. {where}; `ref`: {oracle}.", "precision, kernels", rows,
                a.out)


if __name__ == "__main__":
    main()
