#!/usr/bin/env python3
"""The TF.js front end op by op: each small graph of tests/tfjs/graphs.py goes through
TF.js 4.22.0 (pure-JS cpu backend) and through kestrel-convert tfjs + kestrel-run (fast
kernels at 1 and 2 threads, reference kernels), on a seeded random NHWC input; the
outputs must match within 1e-4 of TF.js's largest magnitude. Then malformed models:
kestrel-convert must exit 1 with a message naming the problem and leave no output file.

  KESTREL_CONVERT=... KESTREL_RUN=... tests/tfjs/test_tfjs_graphs.py --out DIR [--cases a,b]
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import graphs  # noqa: E402
import realmodels  # noqa: E402

TOL = 1e-4
CONFIGS = [("fast", 1), ("fast", 2), ("ref", 1)]


def run(cmd, **kw):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)


def check_case(name, out_dir, paths, failures):
    text, shard, out, dtype = graphs.build(name)
    d = out_dir / name
    d.mkdir(parents=True, exist_ok=True)
    (d / "model.json").write_text(text)
    (d / "w.bin").write_bytes(shard)
    rng = np.random.default_rng(len(name))
    if dtype == "DT_INT32":
        x = rng.integers(0, 256, graphs.INPUT_SHAPE).astype(np.float32)
    else:
        x = rng.uniform(-1, 1, graphs.INPUT_SHAPE).astype(np.float32)
    np.save(d / "x.npy", x)
    r = run(["node", paths["TFJS_RUN"], "run", d / "model.json", "--input", f"x={d / 'x.npy'}", "--output",
             f"{out}={d / 'tfjs.npy'}"], env=realmodels.node_env(paths))
    if r.returncode != 0:
        failures.append(f"{name}: TF.js failed: {r.stderr.strip()}")
        return
    ref = np.load(d / "tfjs.npy")
    r = run([os.environ["KESTREL_CONVERT"], "tfjs", d / "model.json", d / "model.kst"])
    if r.returncode != 0:
        failures.append(f"{name}: kestrel-convert failed: {r.stderr.strip()}")
        return
    worst = 0.0
    for kernels, threads in CONFIGS:
        got_path = d / f"kestrel_{kernels}{threads}.npy"
        r = run([os.environ["KESTREL_RUN"], d / "model.kst", "--input", f"x={d / 'x.npy'}", "--output",
                 f"{out}={got_path}", "--kernels", kernels, "--threads", threads])
        if r.returncode != 0:
            failures.append(f"{name}: kestrel-run failed: {r.stderr.strip()}")
            return
        got = np.load(got_path)
        if got.shape != ref.shape:
            failures.append(f"{name}: shape {got.shape}, TF.js {ref.shape}")
            return
        err = float(np.abs(got.astype(np.float64) - ref).max() / max(np.abs(ref).max(), 1e-30))
        worst = max(worst, err)
        if not err <= TOL:
            failures.append(f"{name} ({kernels}, {threads} thread(s)): relative error {err:.3g} > {TOL}")
    print(f"   {worst:9.2e}  {name} {list(ref.shape)}")


def bad_models(out_dir):
    """(name, model.json text or None, shard bytes or None, message fragments)."""
    text, shard, _, _ = graphs.build("conv_same_s2")
    model = json.loads(text)

    def edited(fn):
        m = json.loads(text)
        fn(m)
        return json.dumps(m)

    def weight0(key, value):
        return edited(lambda m: m["weightsManifest"][0]["weights"][0].__setitem__(key, value))

    loop = edited(lambda m: m["modelTopology"]["node"].insert(1, {"name": "w", "op": "LoopCond", "input": ["x"]}))
    unknown = edited(lambda m: m["modelTopology"]["node"].append({"name": "z", "op": "Lgamma", "input": ["conv2d_2"]}))
    return [
        ("malformed JSON", text[: len(text) // 2], shard, ["not a valid TF.js model.json"]),
        ("missing shard", text, None, ["w.bin", "cannot open"]),
        ("short shard", text, shard[:-8], ["needs bytes", "shards hold"]),
        ("bytes do not add up", text, shard + b"\0" * 12, ["weights take", "shards hold"]),
        ("unknown dtype", weight0("dtype", "complex64"), shard, ["complex64", model["weightsManifest"][0]["weights"][0]["name"]]),
        ("quantization scale 0", weight0("quantization", {"dtype": "uint8", "min": 0.0, "scale": 0.0}), shard, ["scale"]),
        ("unknown op", unknown, shard, ["'z'", "Lgamma", "not supported"]),
        ("control flow", loop, shard, ["LoopCond", "control flow"]),
        ("shard path leaving the folder", weight0("name", model["weightsManifest"][0]["weights"][0]["name"])
         .replace('"w.bin"', '"../w.bin"'), shard, ["leaves the model's folder"]),
    ]


def check_bad_models(out_dir, failures):
    for name, text, shard, fragments in bad_models(out_dir):
        d = out_dir / ("bad_" + name.replace(" ", "_").replace("'", ""))
        d.mkdir(parents=True, exist_ok=True)
        (d / "model.json").write_text(text)
        if (d / "w.bin").exists():
            (d / "w.bin").unlink()
        if shard is not None:
            (d / "w.bin").write_bytes(shard)
        target = d / "out.kst"
        r = run([os.environ["KESTREL_CONVERT"], "tfjs", d / "model.json", target])
        message = r.stderr.strip()
        problems = []
        if r.returncode != 1:
            problems.append(f"exit {r.returncode}")
        problems += [f"message lacks '{f}'" for f in fragments if f not in message]
        if target.exists() or pathlib.Path(str(target) + ".tmp").exists():
            problems.append("an output file was left")
        if problems:
            failures.append(f"bad model '{name}': {', '.join(problems)}: {message}")
        else:
            print(f"   refused   {name}: {message.splitlines()[0][:150]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--cases", default=",".join(graphs.CASES))
    args = ap.parse_args()
    out_dir = pathlib.Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = realmodels.fetch()
    failures = []
    print(f"== {len(args.cases.split(','))} graphs, Kestrel vs TF.js (max relative error over "
          f"{len(CONFIGS)} kernel configurations)")
    for name in args.cases.split(","):
        check_case(name, out_dir, paths, failures)
    print("== malformed models")
    check_bad_models(out_dir, failures)
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
