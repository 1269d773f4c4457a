#!/usr/bin/env python3
"""Resident weights, peak RSS and load time of kestrel-bench builds, side by side.

    bench/memory/resident.py --bench NAME=PATH [--bench NAME=PATH ...] MODEL.kst ... \
        [--rounds 3] [--loops 10] [--threads 1] [--out bench/memory/RESULTS.md]

Each round runs every build on every model once, alternating (A B, then B A), under
/usr/bin/time -f %M (the issue's measure of peak RSS), with --loops inferences on
--threads threads. Prints a Markdown table of medians over the rounds: weights held
(Net::weight_bytes), the model file's weight bytes, RSS right after Net::load, peak
RSS, load time and median latency.
"""
import argparse
import json
import os
import pathlib
import platform
import re
import statistics
import subprocess
import tempfile


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def run_once(bench, model, loops, threads):
    with tempfile.NamedTemporaryFile(suffix=".json") as j:
        r = subprocess.run(["/usr/bin/time", "-f", "maxrss %M", bench, model, "--loops", str(loops),
                            "--threads", str(threads), "--json", j.name],
                           capture_output=True, text=True, check=True)
        d = json.load(open(j.name))
    m = re.search(r"maxrss (\d+)", r.stderr)
    return {
        "weights": d["weight_bytes"] / 2**20,
        # Older builds have no model_weight_bytes, load_ms or rss_after_load_kib.
        "model": d.get("model_weight_bytes", 0) / 2**20,
        "rss_load": d.get("rss_after_load_kib", 0) / 1024,
        "peak": int(m.group(1)) / 1024,
        "load": d.get("load_ms", 0.0),
        "median": d["median_ms"],
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="+")
    ap.add_argument("--bench", action="append", required=True, help="NAME=PATH of a kestrel-bench")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--loops", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out")
    a = ap.parse_args()
    benches = [b.split("=", 1) for b in a.bench]
    results = {}
    for r in range(a.rounds):
        order = benches if r % 2 == 0 else benches[::-1]
        for model in a.models:
            for name, path in order:
                results.setdefault((model, name), []).append(run_once(path, model, a.loops, a.threads))
    lines = [f"Host: {cpu_name()}, {os.cpu_count()} CPUs; {a.threads} thread(s), {a.loops} inferences, "
             f"median of {a.rounds} rounds (builds alternating).", "",
             "| model | build | weights held MiB | model weights MiB | held / model | RSS after load MiB "
             "| peak RSS MiB | load ms | median latency ms |",
             "|---|---|---|---|---|---|---|---|---|"]
    for model in a.models:
        for name, _ in benches:
            rs = results[(model, name)]
            med = {k: statistics.median(x[k] for x in rs) for k in rs[0]}
            ratio = f"{med['weights'] / med['model']:.3f}" if med["model"] else "-"
            lines.append(f"| {pathlib.Path(model).name} | {name} | {med['weights']:.2f} | {med['model']:.2f} | {ratio} "
                         f"| {med['rss_load']:.2f} | {med['peak']:.2f} | {med['load']:.1f} | {med['median']:.2f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        pathlib.Path(a.out).write_text(text)


if __name__ == "__main__":
    main()
