#!/usr/bin/env python3
"""Thread scaling of MobileNet v1 (224) and MobileNet-SSD (300): kestrel-bench at 1, 2,
4, 8 and 16 threads (fast kernels, light mode + pool), each with --profile, so that the
table says which layers stop scaling. Runs wherever kestrel-bench and kestrel-zoo run;
the 16-core figures in bench/README.md come from the lent x86 machine, with binaries
built here (`-DKESTREL_STATIC_TOOLS=ON`) and carried there.

  bench/scaling/scaling.py [--bin build] [--threads 1,2,4,8,16] [--loops 50] [--models a,b]
                           [--model NAME=FILE.kst ...] [--json OUT.json] [--markdown OUT.md]
  bench/scaling/scaling.py --from-json OUT.json [MORE.json ...] --markdown OUT.md   # format saved runs
  bench/scaling/scaling.py --from-json OUT.json --per-layer NAME   # each layer's ms and speed-up

--model adds a converted model (ResNet-18, MobileNet v2) beside the zoo's two; --per-layer
prints, for one model, every layer's median ms at each thread count, its speed-up at the
most threads, and the time it loses there against a perfect split of its 1-thread time
(where threads wait, largest first in the summary).
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
    extra = dict(m.split("=", 1) for m in a.model)
    wanted = a.models.split(",") if a.models else MODELS + list(extra)
    with tempfile.TemporaryDirectory() as tmp:
        for model in wanted:
            if model in extra:
                kst = pathlib.Path(extra[model]).resolve()
            else:
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
    for model in dict.fromkeys(r["model"] for r in data["runs"]):
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


def per_layer(data, model):
    """Each layer's median ms per thread count, its speed-up at the most threads and the
    ms it loses there against its 1-thread time split perfectly."""
    runs = sorted((r for r in data["runs"] if r["model"] == model), key=lambda r: r["threads"])
    if not runs:
        raise SystemExit(f"no runs of {model}")
    ts = [r["threads"] for r in runs]
    top = runs[-1]
    lines = [f"### {model}: per layer, median ms ({data['cpu']['model']})", "",
             "| # | layer | kernel | " + " | ".join(f"{t} thr" for t in ts) + f" | speed-up at {ts[-1]} | "
             f"lost at {ts[-1]} ms |", "|---" * (5 + len(ts)) + "|"]
    lost_total = 0.0
    rows = []
    for i, l in enumerate(runs[0]["layers"]):
        ms = [r["layers"][i]["median_ms"] if i < len(r["layers"]) else float("nan") for r in runs]
        lost = ms[-1] - ms[0] * ts[0] / ts[-1]
        lost_total += lost
        rows.append((lost, l["name"]))
        lines.append(f"| {i} | {l['name'][-40:]} | {top['layers'][i].get('kernel', '')} | "
                     + " | ".join(f"{x:.3f}" for x in ms) + f" | {ms[0] / ms[-1] if ms[-1] else 0:.2f} | {lost:.3f} |")
    sums = [sum(l["median_ms"] for l in r["layers"]) for r in runs]
    lines.append("| | sum of layers | | " + " | ".join(f"{x:.2f}" for x in sums) +
                 f" | {sums[0] / sums[-1]:.2f} | {lost_total:.2f} |")
    lines += ["", f"Largest losses at {ts[-1]} threads: " +
              ", ".join(f"{n[-30:]} {x:.3f} ms" for x, n in sorted(rows, reverse=True)[:8]), ""]
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
    ap.add_argument("--models", help="comma-separated subset (zoo names or --model names)")
    ap.add_argument("--model", action="append", default=[], help="NAME=FILE.kst, a converted model to add")
    ap.add_argument("--per-layer", help="print this model's per-layer table instead")
    a = ap.parse_args()
    data = combine([json.loads(pathlib.Path(f).read_text()) for f in a.from_json]) if a.from_json else run(a)
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(data, indent=1))
    md = per_layer(data, a.per_layer) if a.per_layer else markdown(data)
    if a.markdown:
        pathlib.Path(a.markdown).write_text(md)
    print(md)


if __name__ == "__main__":
    main()
