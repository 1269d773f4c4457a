#!/usr/bin/env python3
"""Writes every layer test case (cases_*.py modules beside this file) to OUT_DIR:

  OUT_DIR/manifest.txt            one line per case: "<dir> <layer> <n_in> <n_out> <tag>"
  OUT_DIR/<dir>/model.kst         the one-layer model (inputs in0.., outputs out0..)
  OUT_DIR/<dir>/in<i>.npy, out<i>.npy

Usage: gen_cases.py OUT_DIR [--only MODULE[,MODULE]] [--seed N]
"""
import argparse
import importlib
import os
import pathlib
import shutil
import sys

import numpy as np
import torch

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from kcase import Case, f32, single_layer_model  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--only", default="")
    ap.add_argument("--seed", type=int, default=20261121)
    args = ap.parse_args()
    torch.set_num_threads(1)
    modules = sorted(p.stem for p in HERE.glob("cases_*.py"))
    if args.only:
        wanted = set(args.only.split(","))
        modules = [m for m in modules if m in wanted or m[len("cases_"):] in wanted]
    out = pathlib.Path(args.out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    lines = []
    for index, name in enumerate(modules):
        mod = importlib.import_module(name)
        rng = np.random.default_rng([args.seed, index])
        torch.manual_seed(args.seed + index)
        cases = mod.generate(rng)
        for k, case in enumerate(cases):
            assert isinstance(case, Case), f"{name}: generate() must return Case objects"
            d = f"{case.layer}_{name[len('cases_'):]}_{k:03d}"
            (out / d).mkdir()
            (out / d / "model.kst").write_bytes(single_layer_model(case))
            for i, x in enumerate(case.inputs):
                np.save(out / d / f"in{i}.npy", f32(x))
            for i, y in enumerate(case.outputs):
                np.save(out / d / f"out{i}.npy", f32(y))
            tag = (case.tag or "-").replace(" ", "_").replace("\n", "_")
            lines.append(f"{d} {case.layer} {len(case.inputs)} {len(case.outputs)} {tag}")
        print(f"{name}: {len(cases)} cases", file=sys.stderr)
    (out / "manifest.txt").write_text("\n".join(lines) + "\n")
    print(f"wrote {len(lines)} cases to {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
