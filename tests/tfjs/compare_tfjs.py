#!/usr/bin/env python3
"""Kestrel against TensorFlow.js on real trained models, on the six face-api photos and
seeded random inputs (both engines get the same NHWC .npy; kestrel-run reads and writes
tensors in TF's layout and names). TF.js 4.22.0's pure-JS cpu backend is the reference
(tools/tfjs/tfjs_run.js, one model load per model for all inputs).

1. Every tensor where the imported part of each graph is cut, with Kestrel's fast
   kernels at 1 and 2 threads and its reference kernels: max|kestrel - tfjs| / max|tfjs|
   <= 1e-4.
2. On the photos, the task API's answers against the graph's own post-processing
   (tests/tfjs/task_checks.py): MoveNet keypoints within 0.5 px, CenterNet detections
   within 1 px with the same classes, BlazeFace faces at IoU >= 0.99.

Prints per model the ops its graph holds, the conversion time, the largest error per cut
tensor and the task agreement per photo; --json writes them; exit 1 on any failure.

  KESTREL_CONVERT=... KESTREL_RUN=... tests/tfjs/compare_tfjs.py --out DIR [--models a,b] [--random N]
"""
import argparse
import collections
import hashlib
import json
import os
import pathlib
import re
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import realmodels  # noqa: E402
import task_checks  # noqa: E402

TOL = 1e-4
CONFIGS = [("fast", 1), ("fast", 2), ("ref", 1)]


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))}\n{r.stdout}\n{r.stderr}")
    return r.stdout


def convert(model, paths, out_dir):
    kst = out_dir / f"{model.name}.kst"
    cmd = [os.environ["KESTREL_CONVERT"], "tfjs", str(pathlib.Path(paths["HUMAN_MODELS"]) / model.file), str(kst)]
    for m in model.meta:
        cmd += ["--meta", m]
    t0 = time.perf_counter()
    text = run(cmd)
    seconds = time.perf_counter() - t0
    outputs = re.findall(r"^  output:  (\S+) ", text, re.M)
    return kst, seconds, outputs


def graph_ops(paths, model):
    j = json.loads((pathlib.Path(paths["HUMAN_MODELS"]) / model.file).read_text())
    return dict(collections.Counter(n["op"] for n in j["modelTopology"]["node"]))


def tfjs_outputs(model, paths, inputs, outputs, out_dir):
    """TF.js's values of `outputs` for every (tag, input .npy): tag -> {name: file}.
    Cached by model, names and input bytes (a re-run with the same inputs skips TF.js)."""
    h = hashlib.sha256((model.file + "|".join(outputs)).encode())
    for _, x_path in inputs:
        h.update(pathlib.Path(x_path).read_bytes())
    key = h.hexdigest()[:16]
    cache = out_dir / "tfjs_cache"
    cache.mkdir(exist_ok=True)
    files = {tag: {o: cache / f"{model.name}_{key}_{tag}_{i}.npy" for i, o in enumerate(outputs)} for tag, _ in inputs}
    if not all(f.exists() for per in files.values() for f in per.values()):
        cmd = ["node", paths["TFJS_RUN"], "run", str(pathlib.Path(paths["HUMAN_MODELS"]) / model.file),
               "--input", f"{model.input_name}={out_dir / model.name}_{{}}.npy", "--backend", "cpu",
               "--batch", ",".join(tag for tag, _ in inputs)]
        for i, o in enumerate(outputs):
            cmd += ["--output", f"{o}={cache / model.name}_{key}_{{}}_{i}.npy"]
        run(cmd, env=realmodels.node_env(paths))
    return files


def kestrel_outputs(model, kst, x_path, outputs, kernels, threads, out_dir):
    cmd = [os.environ["KESTREL_RUN"], str(kst), "--input", f"{model.input_name}={x_path}", "--kernels", kernels,
           "--threads", str(threads)]
    files = {o: out_dir / f"k_{model.name}_{i}.npy" for i, o in enumerate(outputs)}
    for o, f in files.items():
        cmd += ["--output", f"{o}={f}"]
    run(cmd)
    return {o: np.load(f) for o, f in files.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", default=",".join(m.name for m in realmodels.MODELS))
    ap.add_argument("--random", type=int, default=2, help="seeded random inputs per model")
    ap.add_argument("--json")
    args = ap.parse_args()
    out_dir = pathlib.Path(args.out)
    cache = out_dir / "tfjs_cache"
    cache.mkdir(parents=True, exist_ok=True)
    paths = realmodels.fetch()
    photos = realmodels.photos(paths)
    report, failures = [], []
    for model in realmodels.MODELS:
        if model.name not in args.models.split(","):
            continue
        kst, seconds, outputs = convert(model, paths, out_dir)
        inputs = [(name, realmodels.model_input(model, rgb)) for name, rgb in photos]
        inputs += [(f"random{s}", realmodels.random_input(model, s)) for s in range(args.random)]
        for name, x in inputs:
            np.save(out_dir / f"{model.name}_{name}.npy", x)
        paths_in = [(name, out_dir / f"{model.name}_{name}.npy") for name, _ in inputs]
        extra = task_checks.TFJS_OUTPUTS.get(model.name, [])
        refs = tfjs_outputs(model, paths, paths_in, outputs + extra, out_dir)
        worst = {o: 0.0 for o in outputs}
        for name, x_path in paths_in:
            for kernels, threads in CONFIGS:
                got = kestrel_outputs(model, kst, x_path, outputs, kernels, threads, out_dir)
                for o in outputs:
                    t, k = np.load(refs[name][o]), got[o]
                    if t.shape != k.shape:
                        failures.append(f"{model.name} {o}: shape {k.shape} vs TF.js {t.shape}")
                        continue
                    err = float(np.abs(k.astype(np.float64) - t).max() / max(np.abs(t).max(), 1e-30))
                    worst[o] = max(worst[o], err)
                    if not err <= TOL:
                        failures.append(f"{model.name} {o} on {name} ({kernels}, {threads} thread(s)): "
                                        f"relative error {err:.3g} > {TOL}")
        entry = {"model": model.name, "file": model.file, "ops": graph_ops(paths, model),
                 "convert_seconds": round(seconds, 3), "inputs": len(inputs), "max_rel_error": worst, "task": []}
        print(f"== {model.name} ({model.file}): converted in {seconds:.2f} s; {len(inputs)} inputs x "
              f"{len(CONFIGS)} kernel configurations")
        print("   ops: " + ", ".join(f"{op} {n}" for op, n in sorted(entry["ops"].items())))
        for o, e in worst.items():
            print(f"   {e:9.2e}  {o}")
        check = task_checks.CHECKS.get(model.name)
        for name, x_path in paths_in if check else []:
            if not name.startswith("sample"):
                continue
            ok, text, w = check(model, kst, refs[name], x_path, out_dir, f"{model.name}_{name}")
            print(f"   task {'ok  ' if ok else 'FAIL'} {name}: {text}")
            entry["task"].append({"photo": name, "ok": bool(ok), "summary": text, "worst": float(w)})
            if not ok:
                failures.append(f"{model.name} task on {name}: {text}")
        report.append(entry)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
