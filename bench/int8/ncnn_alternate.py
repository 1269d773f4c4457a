#!/usr/bin/env python3
"""Kestrel beside ncnn on x86, alternating (bench/int8/NCNN.md; issue 28's 2-core
MobileNet-SSD target with --precision fp32).

Usage: ncnn_alternate.py NCNN_BENCHMARK_DIR KESTREL_BENCH [MODEL_DIR] [--precision int8|fp32]
                         [--nets mobilenet,resnet18,mobilenet_ssd] [--rounds 4] [--threads 1,2]
  NCNN_BENCHMARK_DIR  ncnn's build-x86/benchmark with benchmark/models/*.param copied in
  MODEL_DIR           bench/int8/paired.py's --work (default /tmp/kestrel-int8-bench);
                      mobilenet_ssd (fp32) is written there by kestrel-zoo beside KESTREL_BENCH

Each round runs, per network and thread count, `benchncnn 30 T 0 -1 0 param=NAME[_int8].param
shape=[S,S,3]` (its average) and `kestrel-bench MODEL --threads T --loops 100` (its median)
back to back; the table gives each round's ms and the ratio of the medians.
"""
import argparse
import pathlib
import re
import statistics
import subprocess

ap = argparse.ArgumentParser()
ap.add_argument("ncnn")
ap.add_argument("kestrel_bench")
ap.add_argument("models", nargs="?", default="/tmp/kestrel-int8-bench")
ap.add_argument("--precision", default="int8", choices=["int8", "fp32"])
ap.add_argument("--nets", default="mobilenet,resnet18")
ap.add_argument("--rounds", type=int, default=4)
ap.add_argument("--threads", default="1,2")
a = ap.parse_args()
W = pathlib.Path(a.models)
suffix = "_int8" if a.precision == "int8" else ""
KST = {"mobilenet": W / f"mnv1{suffix}.kst", "resnet18": W / f"resnet18{suffix}.kst",
       "mobilenet_ssd": W / "mobilenet_ssd.kst"}
SIZE = {"mobilenet": 224, "resnet18": 224, "mobilenet_ssd": 300}
nets = a.nets.split(",")
if "mobilenet_ssd" in nets and not KST["mobilenet_ssd"].exists():
    zoo = pathlib.Path(a.kestrel_bench).parent / "kestrel-zoo"
    subprocess.run([str(zoo), "mobilenet_ssd", str(KST["mobilenet_ssd"])], check=True, capture_output=True)
res = {}
for r in range(a.rounds):
    for net in nets:
        for t in [int(x) for x in a.threads.split(",")]:
            o = subprocess.run(["./benchncnn", "30", str(t), "0", "-1", "0", f"param={net}{suffix}.param",
                                f"shape=[{SIZE[net]},{SIZE[net]},3]"], cwd=a.ncnn, capture_output=True, text=True)
            n = float(re.search(r"avg =\s*([0-9.]+)", o.stdout + o.stderr).group(1))
            o = subprocess.run([a.kestrel_bench, str(KST[net]), "--precision", a.precision, "--threads", str(t),
                                "--loops", "100"], capture_output=True, text=True).stdout
            k = float(re.search(r"latency ms\s+min [0-9.]+\s+median ([0-9.]+)", o).group(1))
            res.setdefault((net, t), ([], []))
            res[(net, t)][0].append(k)
            res[(net, t)][1].append(n)
            print(net, t, r, k, n, flush=True)
print(f"| network | threads | Kestrel {a.precision} ms | ncnn {a.precision} ms | Kestrel / ncnn |")
print("|---|---|---|---|---|")
for (net, t), (k, n) in res.items():
    print(f'| {net} | {t} | {" ".join("%.2f" % x for x in k)} | {" ".join("%.2f" % x for x in n)} | '
          f"{statistics.median(k) / statistics.median(n):.2f} |")
