#!/usr/bin/env python3
"""Per-layer time, GFLOP/s and share of the measured FMA peak of a model, from
kestrel-bench --profile, at each thread count, as a markdown table (issue 7's report:
MobileNet v1's 1x1 convolutions against the machine's peak).

  bench/profile/layers.py [--build build] [--model MODEL.kst | --zoo mobilenet_v1]
                          [--threads 1,2] [--loops 50] [--fuse off|on] [--out bench/profile/RESULTS.md]

Layer fusion is off by default here, so that every layer is timed on its own (with
--fuse on, a fused 1x1 -> depthwise pair is one row).

Without --model the zoo's MobileNet v1 (seeded weights, the Caffe definition's shapes)
is written and profiled.
"""
import argparse
import datetime
import json
import pathlib
import subprocess
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent


def cpu_model():
    for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def profile(build, model, threads, loops, fuse):
    with tempfile.NamedTemporaryFile(suffix=".json") as j:
        subprocess.run([str(build / "kestrel-bench"), str(model), "--threads", str(threads), "--loops", str(loops),
                        "--warmup", "5", "--profile", "--fuse", fuse, "--json", j.name], check=True,
                       capture_output=True)
        return json.loads(pathlib.Path(j.name).read_text())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--model")
    ap.add_argument("--zoo", default="mobilenet_v1")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--loops", type=int, default=50)
    ap.add_argument("--fuse", choices=["off", "on"], default="off")
    ap.add_argument("--out", default=str(HERE / "RESULTS.md"))
    a = ap.parse_args()
    build = (REPO / a.build).resolve()
    threads = [int(t) for t in a.threads.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        model = pathlib.Path(a.model) if a.model else pathlib.Path(tmp) / f"{a.zoo}.kst"
        if not a.model:
            subprocess.run([str(build / "kestrel-zoo"), a.zoo, str(model)], check=True, capture_output=True)
        runs = {t: profile(build, model, t, a.loops, a.fuse) for t in threads}
    name = a.model or f"the zoo's {a.zoo}"
    lines = [f"# Per-layer profile of {name}", "",
             f"Written by `bench/profile/layers.py` on {datetime.date.today().isoformat()}, {cpu_model()}, "
             f"ISA {runs[threads[0]]['isa']}: median of {a.loops} profiled runs per layer "
             f"(`kestrel-bench --profile --fuse {a.fuse}`). %peak is the layer's GFLOP/s over the FMA peak measured at the same "
             "thread count (" + ", ".join(f"{t} thread{'s' if t > 1 else ''}: {runs[t]['fma_peak_gflops']:.0f} "
                                          "GFLOP/s" for t in threads) + "). End-to-end medians: "
             + ", ".join(f"{runs[t]['median_ms']:.2f} ms at {t} thread{'s' if t > 1 else ''}" for t in threads) + ".",
             "", "| # | layer | kernel | MFLOP | " + " | ".join(f"{t}T ms | {t}T GFLOP/s | {t}T %peak" for t in threads)
             + " |", "|---" * (4 + 3 * len(threads)) + "|"]
    base = runs[threads[0]]["layers"]
    for i, layer in enumerate(base):
        flop = 2 * layer["multiply_adds"]
        cells = [str(layer["index"]), layer["name"][-32:], layer["kernel"], f"{flop / 1e6:.1f}" if flop else ""]
        for t in threads:
            lt = runs[t]["layers"][i]
            ms = lt["median_ms"]
            g = flop / (ms * 1e6) if flop and ms > 0 else 0
            peak = runs[t]["fma_peak_gflops"]
            cells += [f"{ms:.3f}", f"{g:.0f}" if flop else "", f"{100 * g / peak:.0f}%" if flop and peak else ""]
        lines.append("| " + " | ".join(cells) + " |")
    pathlib.Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    pathlib.Path(a.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
