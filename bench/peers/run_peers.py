#!/usr/bin/env python3
"""Kestrel against ONNX Runtime 1.30 (onnxruntime-node, CPU) and OpenCV DNN 4.6, side by
side in one run: same networks, same seeded random weights, same input, each engine at
each thread count, medians of LOOPS runs after WARMUP runs.

Networks: MobileNet v1 224 (the ONNX export of the PyTorch twin of the Caffe
definition in ../shared, which needs ../shared), MobileNet v2 224, ResNet-18 224 and
SqueezeNet 1.1 224 (torchvision, seeded weights, exported by tests/onnx/make_models.py),
and MobileNet-SSD 300 (the Caffe definition in ../shared with a seeded random
caffemodel; OpenCV only: ONNX has no Caffe-SSD layers).

  bench/peers/run_peers.py [--build build] [--out build/peers] [--threads 1,2] [--loops 30] [--warmup 5]
                           [--rounds 3] [--markdown bench/peers/RESULTS.md] [--nets mobilenet_v2,...]

Needs: a build with kestrel-convert and kestrel-bench, Debian's python3-torch,
-torchvision, -onnx, -opencv, and `npm install --ignore-scripts` in bench/peers
(onnxruntime-node@1.30.0; the CPU library ships in the package).
"""
import argparse
import datetime
import json
import os
import pathlib
import platform
import subprocess
import sys

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
PYTHON = "/usr/bin/python3"
ONNX_MODELS = ["mobilenet_v1", "mobilenet_v2", "resnet18", "squeezenet1_1"]


def run_json(cmd, **kw):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout
    return json.loads(out.strip().splitlines()[-1])


def opencv_onnx(src, dst):
    """The model as OpenCV 4.6 reads it: exported at opset 10 (Clip with attributes; it
    rejects Clip's min/max inputs) and without Identity nodes (it rejects an Identity
    on a constant), rewired to their inputs. The weights are the same seeded ones."""
    import onnx
    m = onnx.load(str(src))
    rename = {}
    keep = []
    outputs = {o.name for o in m.graph.output}
    for n in m.graph.node:
        if n.op_type == "Identity" and n.output[0] not in outputs:
            rename[n.output[0]] = rename.get(n.input[0], n.input[0])
        else:
            keep.append(n)
    for n in keep:
        for i, x in enumerate(n.input):
            if x in rename:
                n.input[i] = rename[x]
    del m.graph.node[:]
    m.graph.node.extend(keep)
    onnx.save(m, str(dst))


def cpu_model():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=str(REPO / "build"))
    ap.add_argument("--out", default=str(REPO / "build" / "peers"))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--loops", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3,
                    help="repeat the whole set this many times, engines in alternating order; report the "
                         "median of the rounds' medians and the smallest min (the machine's neighbours vary)")
    ap.add_argument("--shared", default=str(REPO.parent / "shared"))
    ap.add_argument("--markdown")
    ap.add_argument("--nets", help="only these networks (comma-separated names of the table), for more rounds "
                                   "of a close cell")
    args = ap.parse_args()
    build, out = pathlib.Path(args.build), pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    convert, bench = build / "kestrel-convert", build / "kestrel-bench"
    env = dict(os.environ, KESTREL_SHARED_DIR=args.shared)

    # name -> (kestrel .kst, input .npy, onnx path or None, opencv args)
    nets = {}
    models = out / "models"
    if not (models / "manifest.txt").exists():
        subprocess.run([PYTHON, str(REPO / "tests/onnx/make_models.py"), str(models), "--only", ",".join(ONNX_MODELS)],
                       check=True, env=env)
    cv_models = out / "models_opset10"
    if not (cv_models / "manifest.txt").exists():
        subprocess.run([PYTHON, str(REPO / "tests/onnx/make_models.py"), str(cv_models), "--only",
                        ",".join(ONNX_MODELS), "--opset", "10"], check=True, env=env)
    for name in ONNX_MODELS:
        d = models / name
        if not (d / "model.onnx").exists():
            print(f"{name}: not made (../shared absent?), skipped", file=sys.stderr)
            continue
        kst = d / "model.kst"
        subprocess.run([str(convert), "onnx", str(d / "model.onnx"), str(kst)], check=True, capture_output=True)
        cv = cv_models / name / "model_cv.onnx"
        opencv_onnx(cv_models / name / "model.onnx", cv)
        nets[name] = (kst, d / "input.npy", d / "model.onnx", ["--onnx", str(cv)])
    ssd_proto = pathlib.Path(args.shared) / "models/caffe/mobilenet_ssd_deploy.prototxt"
    if ssd_proto.exists():
        d = out / "mobilenet_ssd"
        d.mkdir(exist_ok=True)
        caffemodel, kst, npy = d / "net.caffemodel", d / "model.kst", d / "input.npy"
        subprocess.run([PYTHON, str(REPO / "tools/caffe_random_weights.py"), str(ssd_proto), str(caffemodel),
                        "--seed", "7"], check=True, capture_output=True)
        subprocess.run([str(convert), "caffe", str(ssd_proto), str(caffemodel), str(kst)], check=True,
                       capture_output=True)
        np.save(npy, np.random.default_rng(7).uniform(-1, 1, (3, 300, 300)).astype(np.float32))
        nets["mobilenet_ssd"] = (kst, npy, None, ["--caffe", str(ssd_proto), str(caffemodel)])

    def run_engine(engine, name, t, kst, npy, onnx, cv_args):
        loops, warm = str(args.loops), str(args.warmup)
        if engine == "kestrel":
            jpath = out / f"{name}.t{t}.json"
            subprocess.run([str(bench), str(kst), "--threads", str(t), "--loops", loops, "--warmup", warm, "--input",
                            f"data={npy}", "--json", str(jpath)], check=True, capture_output=True)
            return json.loads(jpath.read_text())
        if engine == "ort":
            return run_json(["node", str(HERE / "ort_bench.js"), str(onnx), str(npy), str(t), loops, warm])
        return run_json([PYTHON, str(HERE / "opencv_bench.py")] + cv_args + [str(npy), str(t), loops, warm])

    if args.nets:
        nets = {k: v for k, v in nets.items() if k in args.nets.split(",")}
    samples = {}  # (name, t) -> engine -> [result per round]
    for r in range(args.rounds):
        for name, (kst, npy, onnx, cv_args) in nets.items():
            for t in [int(x) for x in args.threads.split(",")]:
                engines = ["kestrel", "ort", "opencv"] if onnx else ["kestrel", "opencv"]
                if r % 2:
                    engines.reverse()
                for e in engines:
                    samples.setdefault((name, t), {}).setdefault(e, []).append(
                        run_engine(e, name, t, kst, npy, onnx, cv_args))
                print(f"round {r + 1}", name, t,
                      {e: round(v[-1]["median_ms"], 2) for e, v in samples[(name, t)].items()}, file=sys.stderr)
    rows = []
    for (name, t), per in samples.items():
        res = {}
        for e, runs in per.items():
            med = sorted(x["median_ms"] for x in runs)
            res[e] = {"median_ms": med[len(med) // 2], "min_ms": min(x["min_ms"] for x in runs)}
        rows.append((name, t, res))

    def cell(res, k):
        return f"{res[k]['median_ms']:.2f} ({res[k]['min_ms']:.2f})" if k in res else "–"

    def ratio(res, k):
        return f"{res['kestrel']['median_ms'] / res[k]['median_ms']:.2f}" if k in res else "–"

    lines = [f"Measured {datetime.date.today()} on {cpu_model()} ({os.cpu_count()} CPUs): {args.rounds} rounds, "
             f"each one process per engine and setting with {args.loops} timed runs after {args.warmup} warm-up "
             "runs, the engines in alternating order; the median of the rounds' medians (the smallest min).", "",
             "| network | threads | Kestrel | ONNX Runtime 1.30 | OpenCV DNN 4.6 | Kestrel / ORT | Kestrel / OpenCV |",
             "|---|---|---|---|---|---|---|"]
    for name, t, res in rows:
        lines.append(f"| {name} | {t} | {cell(res, 'kestrel')} | {cell(res, 'ort')} | {cell(res, 'opencv')} | "
                     f"{ratio(res, 'ort')} | {ratio(res, 'opencv')} |")
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if args.markdown:
        pathlib.Path(args.markdown).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
