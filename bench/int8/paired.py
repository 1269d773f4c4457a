#!/usr/bin/env python3
"""int8 against fp32, paired in one process (kestrel-bench --against int8), on the
networks of issue 27: MobileNet v1 (model zoo), MobileNet v2 and ResNet-18 (torchvision,
seeded weights, through ONNX), and the real TF.js MoveNet and BlazeFace. Each model is
calibrated by kestrel-quantize (KL) on ../shared/images, then timed at each thread count:
the same calibrated file at fp32 and at int8, single inferences alternating. Also the
weight bytes each precision holds. Writes bench/int8/RESULTS.md (--out).

Usage: paired.py --build build/release [--threads 1,2] [--runs 3] [--loops 100]
                 [--models mnv1,mobilenet_v2,resnet18,movenet,blazeface] [--work DIR]
"""
import argparse
import datetime
import pathlib
import platform
import re
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO / "tests" / "tfjs"))
import realmodels  # noqa: E402

PYTHON = "/usr/bin/python3"


def run(cmd, **kw):
    return subprocess.run([str(c) for c in cmd], check=True, capture_output=True, text=True, **kw).stdout


def host():
    for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def make_models(build, work, wanted):
    """name -> the fp32 .kst, built into work/."""
    out = {}
    if "mnv1" in wanted:
        out["mnv1"] = work / "mnv1.kst"
        run([build / "kestrel-zoo", "mobilenet_v1", out["mnv1"]])
    onnx = [n for n in ("mobilenet_v2", "resnet18") if n in wanted]
    if onnx:
        run([PYTHON, REPO / "tests" / "onnx" / "make_models.py", work / "onnx", "--only", ",".join(onnx)])
        for n in onnx:
            out[n] = work / f"{n}.kst"
            run([build / "kestrel-convert", "onnx", work / "onnx" / n / "model.onnx", out[n]])
    tfjs = [m for m in realmodels.MODELS if m.name in ("movenet", "blazeface") and m.name in wanted]
    if tfjs:
        paths = realmodels.fetch()
        for m in tfjs:
            out[m.name] = work / f"{m.name}.kst"
            cmd = [build / "kestrel-convert", "tfjs", pathlib.Path(paths["HUMAN_MODELS"]) / m.file, out[m.name]]
            for meta in m.meta:
                cmd += ["--meta", meta]
            run(cmd)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=str(REPO / "build" / "release"))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--loops", type=int, default=100)
    ap.add_argument("--models", default="mnv1,mobilenet_v2,resnet18,movenet,blazeface")
    ap.add_argument("--work", default="/tmp/kestrel-int8-bench")
    ap.add_argument("--out", default=str(HERE / "RESULTS.md"))
    a = ap.parse_args()
    build, work = pathlib.Path(a.build), pathlib.Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    wanted = a.models.split(",")
    images = sorted((REPO.parent / "shared" / "images").glob("*.jpg"))
    if not images:
        print("no calibration images in ../shared/images", file=sys.stderr)
        return 1
    fp32 = make_models(build, work, wanted)
    rows, held = [], []
    for name in wanted:
        q = work / f"{name}_int8.kst"
        run([build / "kestrel-quantize", fp32[name], *images, "-o", q])
        w = {}
        for p in ("fp32", "int8"):
            text = run([build / "kestrel-bench", q, "--threads", "1", "--loops", "3", "--warmup", "1", "--precision", p])
            w[p] = float(re.search(r"weights\s+([0-9.]+) MiB held", text).group(1))
        file_mib = float(re.search(r"model file: ([0-9.]+) MiB", text).group(1))
        held.append((name, w["fp32"], w["int8"], file_mib))
        for t in a.threads.split(","):
            ratios, f32, i8 = [], [], []
            for _ in range(a.runs):
                text = run([build / "kestrel-bench", q, "--threads", t, "--loops", a.loops, "--warmup", "5",
                            "--against", "int8"])
                m = re.search(r"fp32 median ([0-9.]+)\s+int8 median ([0-9.]+)\s+pairs: median int8 / fp32 ([0-9.]+)", text)
                f32.append(float(m.group(1)))
                i8.append(float(m.group(2)))
                ratios.append(float(m.group(3)))
            rows.append((name, t, f32, i8, ratios))
            print(name, t, ratios, file=sys.stderr)
    lines = [
        "# int8 against fp32 on x86 (issue 27)",
        "",
        f"Written by `bench/int8/paired.py` on {datetime.date.today()}, host \"{host()}\".",
        "Each cell: `kestrel-bench MODEL --against int8`, the same calibrated model at fp32 and",
        f"int8 in one process, {a.loops} alternating pairs of single inferences; the fp32 and",
        "int8 medians (ms) and the median of the pairs' int8 / fp32, one value per run.",
        "",
        "On this shared 2-vCPU VM the second vCPU has slow spells lasting minutes, which slow a",
        "whole 2-thread process, int8 more than fp32 (its kernels quantize, then meet at a barrier):",
        "such a run stands out among the three (ResNet-18's first 2-thread run below, when it happens).",
        "",
        "| network | threads | fp32 ms | int8 ms | int8 / fp32 |",
        "|---|---|---|---|---|",
    ]
    for name, t, f32, i8, ratios in rows:
        lines.append(f"| {name} | {t} | {' '.join(f'{x:.2f}' for x in f32)} | {' '.join(f'{x:.2f}' for x in i8)} | "
                     f"{' '.join(f'{x:.3f}' for x in ratios)} |")
    lines += ["", "Weights held after load (MiB), against the fp32 model file:", "",
              "| network | fp32 | int8 | model file | int8 / file |", "|---|---|---|---|---|"]
    for name, f, i, fm in held:
        lines.append(f"| {name} | {f:.2f} | {i:.2f} | {fm:.2f} | {i / fm:.2f} |")
    pathlib.Path(a.out).write_text("\n".join(lines) + "\n")
    print(f"wrote {a.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
