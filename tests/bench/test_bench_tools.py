#!/usr/bin/env python3
"""The measuring instruments work and report what they claim (never how fast):
kestrel-bench's --profile / --json / --memory-trace / --shape on the zoo's MobileNet v1,
and one kestrel-microbench case through Google Benchmark's JSON output.

  KESTREL_BENCH=... KESTREL_ZOO=... [KESTREL_MICROBENCH=...] test_bench_tools.py
"""
import csv
import json
import os
import subprocess
import sys
import tempfile

FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what)


def main():
    bench, zoo, micro = os.environ["KESTREL_BENCH"], os.environ["KESTREL_ZOO"], os.environ.get("KESTREL_MICROBENCH")
    with tempfile.TemporaryDirectory() as tmp:
        kst = os.path.join(tmp, "mobilenet_v1.kst")
        subprocess.run([zoo, "mobilenet_v1", kst], check=True, capture_output=True)
        js, trace = os.path.join(tmp, "r.json"), os.path.join(tmp, "trace.csv")
        # --fuse off: one profiled layer per model layer (fusion is checked below).
        out = subprocess.run([bench, kst, "--threads", "2", "--loops", "3", "--warmup", "1", "--shape", "data=3,96,96",
                              "--profile", "--json", js, "--memory-trace", trace, "--fuse", "off"],
                             capture_output=True, text=True)
        check(out.returncode == 0, f"kestrel-bench failed: {out.stderr}")
        r = json.load(open(js))
        for key in ("min_ms", "median_ms", "max_ms", "peak_held_bytes", "peak_in_use_bytes",
                    "system_allocations_per_inference", "peak_rss_kib", "fma_peak_gflops", "layers"):
            check(key in r, f"--json lacks {key}")
        check(r["min_ms"] <= r["median_ms"] <= r["max_ms"], "min <= median <= max")
        layers = r["layers"]
        check(len(layers) == 30, f"30 layers profiled, got {len(layers)}")
        # --shape: the stem is a 3x3 stride-2 convolution, 3 -> 32 channels, on 96x96.
        check(layers[0]["multiply_adds"] == 48 * 48 * 32 * 3 * 9, f"stem multiply-adds {layers[0]['multiply_adds']}")
        check(all(l["multiply_adds"] > 0 for l in layers if l["type"] == "Convolution"), "every conv counts its MACs")
        check(all(l["multiply_adds"] == 0 for l in layers if l["type"] in ("Softmax", "Pooling")), "no MACs elsewhere")
        check(all(l["kernel"] for l in layers), "every layer names its kernel or 'reference'")
        check("Convolution" in out.stdout and "%peak" in out.stdout and "per layer type" in out.stdout,
              "--profile prints the per-layer and per-type tables")
        rows = list(csv.DictReader(open(trace)))
        check({r["inference"] for r in rows} == {"0", "1", "2"}, "--memory-trace holds three inferences")
        check(len(rows) == 3 * 30, f"one trace row per layer and inference, got {len(rows)}")
        check(all(int(r["held_bytes"]) >= int(r["in_use_bytes"]) for r in rows), "held >= in use")
        # Fusion on (the default): fewer, fused layers, the same multiply-adds in all.
        # (--blocked off: a blocked pair is not fused, and MobileNet's maps are blocked from 56x56 down)
        fused = subprocess.run([bench, kst, "--loops", "1", "--warmup", "0", "--shape", "data=3,96,96", "--profile",
                                "--blocked", "off", "--json", js], capture_output=True, text=True)
        check(fused.returncode == 0, f"kestrel-bench with fusion failed: {fused.stderr}")
        fl = json.load(open(js))["layers"]
        check(len(fl) < 30 and any("+" in l["kernel"] for l in fl), f"fusion: {len(fl)} layers, none fused")
        check(sum(l["multiply_adds"] for l in fl) == sum(l["multiply_adds"] for l in layers),
              "fused layers count the multiply-adds of both")
        # Reference kernels: nothing named but the reference.
        ref = subprocess.run([bench, kst, "--loops", "1", "--warmup", "0", "--kernels", "ref", "--shape",
                              "data=1,3,32,32", "--profile", "--json", js], capture_output=True, text=True)
        check(ref.returncode == 0, f"kestrel-bench --kernels ref failed: {ref.stderr}")
        check(all(l["kernel"] == "reference" for l in json.load(open(js))["layers"]), "--kernels ref runs references")
        for bad in (["--shape", "data=3,x,9"], ["--shape", "nope=3,96,96"], ["--loops"], ["--light", "maybe"]):
            b = subprocess.run([bench, kst] + bad, capture_output=True, text=True)
            check(b.returncode != 0 and b.stderr.strip(), f"kestrel-bench {' '.join(bad)} is refused with a message")
        if micro:
            m = subprocess.run([micro, "--benchmark_filter=^fc/1024-1000/opt/threads:1", "--benchmark_min_time=0.01",
                                "--benchmark_format=json"], capture_output=True, text=True)
            check(m.returncode == 0, f"kestrel-microbench failed: {m.stderr}")
            runs = json.loads(m.stdout)["benchmarks"]
            check(len(runs) == 1 and runs[0]["name"].startswith("fc/1024-1000/opt/threads:1"), "one fc benchmark")
            check(runs and runs[0].get("GFLOP/s", 0) > 0 and "%peak" in runs[0], "GFLOP/s and %peak counters")
    print("bench tools:", "FAILED" if FAILURES else "ok")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
