#!/usr/bin/env python3
"""Thread scaling of MobileNet v1 (224) and MobileNet-SSD (300): kestrel-bench at 1, 2,
4, 8 and 16 threads (fast kernels, light mode + pool), each with --profile, so that the
table says which layers stop scaling. Runs wherever kestrel-bench and kestrel-zoo run;
the 16-core figures in bench/README.md come from the lent x86 machine, with binaries
built here (`-DKESTREL_STATIC_TOOLS=ON`) and carried there.

  bench/scaling/scaling.py [--bin build] [--threads 1,2,4,8,16] [--loops 50]
                           [--json OUT.json] [--markdown OUT.md]
  bench/scaling/scaling.py --from-json OUT.json [MORE.json ...] --markdown OUT.md   # format saved runs
"""
import argparse
import datetime
import json
import os
import pathlib
import platform
import subprocess
import tempfile

MODELS = ["mobilenet_v1", "mobilenet_ssd"]


def cpu_info():
    model, logical = "unknown CPU", os.cpu_count()
    for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    except OSError:
        lscpu = ""
    return {"model": model, "logical_cpus": logical, "affinity_cpus": len(os.sched_getaffinity(0)), "lscpu": lscpu,
            "machine": platform.machine()}


def run(a):
    binp = pathlib.Path(a.bin).resolve()
    out = {"date": datetime.date.today().isoformat(), "cpu": cpu_info(), "runs": []}
    with tempfile.TemporaryDirectory() as tmp:
        for model in MODELS:
            kst = pathlib.Path(tmp) / f"{model}.kst"
            subprocess.run([str(binp / "kestrel-zoo"), model, str(kst)], check=True, capture_output=True)
            for t in [int(x) for x in a.threads.split(",")]:
                js = pathlib.Path(tmp) / "r.json"
                subprocess.run([str(binp / "kestrel-bench"), str(kst), "--threads", str(t), "--loops", str(a.loops),
                                "--warmup", "5", "--profile", "--json", str(js)], check=True, capture_output=True)
                r = json.loads(js.read_text())
                r["model"] = model
                out["runs"].append(r)
                print(f"{model:14s} threads {t:2d}: median {r['median_ms']:7.2f} ms  min {r['min_ms']:7.2f} ms",
                      flush=True)
    return out


def combine(datas):
    """Several runs of one machine as one: per (model, threads) the run whose median is
    the median of the runs' medians (its per-layer profile too), with the smallest min."""
    if len(datas) == 1:
        return datas[0]
    out = dict(datas[0], runs=[], rounds=len(datas))
    for r0 in datas[0]["runs"]:
        same = sorted((r for d in datas for r in d["runs"]
                       if r["model"] == r0["model"] and r["threads"] == r0["threads"]), key=lambda r: r["median_ms"])
        pick = dict(same[len(same) // 2])
        pick["min_ms"] = min(r["min_ms"] for r in same)
        out["runs"].append(pick)
    return out


def markdown(data):
    cpu = data["cpu"]
    rounds = data.get("rounds", 1)
    lines = [f"Measured {data['date']} on {cpu['model']} ({cpu['affinity_cpus']} CPUs available), fast kernels, "
             "light mode + pool, median (min) ms of the timed runs after 5 warm-up runs"
             + (f"; {rounds} rounds, the round with the median median shown, the smallest min of all." if rounds > 1
                else "."), ""]
    for model in MODELS:
        runs = [r for r in data["runs"] if r["model"] == model]
        if not runs:
            continue
        base = runs[0]["median_ms"] * runs[0]["threads"]
        lines += [f"### {model}", "",
                  "| threads | median ms | min ms | speed-up | efficiency | FMA peak GFLOP/s | conv GFLOP/s | "
                  "1x1 conv ms | depthwise ms | fused 1x1+dw ms | other ms |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in runs:
            conv_ms = sum(l["median_ms"] for l in r.get("layers", []) if l["multiply_adds"] > 0)
            conv_flop = sum(2 * l["multiply_adds"] for l in r.get("layers", []))
            def kind(l):
                k = l.get("kernel", "")
                return "fused" if "+" in k else "pw" if "conv1x1" in k else "dw" if "dwconv" in k else "other"
            by = {c: sum(l["median_ms"] for l in r.get("layers", []) if kind(l) == c) for c in ("pw", "dw", "fused", "other")}
            pw, dw, fused, other = by["pw"], by["dw"], by["fused"], by["other"]
            speedup = base / r["median_ms"]
            lines.append(f"| {r['threads']} | {r['median_ms']:.2f} | {r['min_ms']:.2f} | {speedup:.2f} | "
                         f"{100 * speedup / r['threads']:.0f}% | {r.get('fma_peak_gflops', 0):.0f} | "
                         f"{conv_flop / (conv_ms * 1e6) if conv_ms else 0:.0f} | {pw:.2f} | {dw:.2f} | {fused:.2f} | "
                         f"{other:.2f} |")
        lines.append("")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="build")
    ap.add_argument("--threads", default="1,2,4,8,16")
    ap.add_argument("--loops", type=int, default=50)
    ap.add_argument("--json")
    ap.add_argument("--from-json", nargs="+", help="format saved runs; several are combined: per model and "
                    "thread count the run with the median median, the smallest min of all")
    ap.add_argument("--markdown")
    a = ap.parse_args()
    data = combine([json.loads(pathlib.Path(f).read_text()) for f in a.from_json]) if a.from_json else run(a)
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(data, indent=1))
    md = markdown(data)
    if a.markdown:
        pathlib.Path(a.markdown).write_text(md)
    print(md)


if __name__ == "__main__":
    main()
