#!/usr/bin/python3
"""Runs kestrel-microbench and writes its results as the paper's Tables 2, 3 and 4.

One row per layer shape; per thread count the reference and the fast kernel's time
(ms, "ref / opt", as the paper prints non-optimized / optimized), then the fast
kernel's GFLOP/s and share of the measured FMA peak at 1 thread, and which kernel ran.

  /usr/bin/python3 bench/micro/tables.py [--bin build/bench/kestrel-microbench]
      [--out results.md] [--filter REGEX] [--min-time S] [--save-json raw.json]
  /usr/bin/python3 bench/micro/tables.py --json raw.json     # re-format a saved run
Arguments after `--` go to the benchmark binary as they are.
"""
import argparse
import json
import platform
import re
import subprocess
import sys
import time

NAME = re.compile(r"^(?P<family>[^/]+)/(?P<shape>[^/]+)/(?P<impl>ref|opt)/threads:(?P<threads>\d+)")
THREADS = (1, 2, 4)
TABLES = [
    ("conv1x1", "Table 2: 1x1 convolution"),
    ("dwconv3x3s1", "Table 3: 3x3 depthwise convolution, stride 1"),
    ("dwconv3x3s2", "Table 4: 3x3 depthwise convolution, stride 2"),
    ("dwconv5x5s1", "5x5 depthwise convolution, stride 1 (MobileNet v3, CenterNet)"),
    ("dwconv5x5s2", "5x5 depthwise convolution, stride 2, TF SAME padding (1 before, 2 after)"),
    (None, "MobileNet v1 stem and classifier"),
]


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            info = f.read()
    except OSError:
        return platform.processor() or platform.machine()
    for key in ("model name", "Hardware", "Model"):
        m = re.search(r"^%s\s*:\s*(.+)$" % key, info, re.M)
        if m:
            return m.group(1).strip()
    return platform.machine()


def run_bench(args):
    cmd = [args.bin, "--benchmark_format=json"]
    if args.filter:
        cmd.append("--benchmark_filter=" + args.filter)
    if args.min_time:
        cmd.append("--benchmark_min_time=" + args.min_time)
    cmd += args.extra
    t0 = time.monotonic()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, check=True, universal_newlines=True)
    print("kestrel-microbench: %.0f s" % (time.monotonic() - t0), file=sys.stderr)
    return proc.stdout


def collect(data):
    """{(family, shape): {(impl, threads): run}}, medians preferred under repetitions."""
    rows = {}
    for b in data.get("benchmarks", []):
        m = NAME.match(b.get("run_name", b["name"]))
        if not m:
            continue
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        cell = rows.setdefault((m["family"], m["shape"]), {})
        key = (m["impl"], int(m["threads"]))
        if key not in cell or b.get("run_type") == "aggregate":
            cell[key] = b
    return rows


def ms(run):
    if run is None:
        return "-"
    if run.get("error_occurred"):
        return "n/a"
    scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[run.get("time_unit", "ms")]
    v = run["real_time"] * scale
    return "%.1f" % v if v >= 100 else "%.2f" % v if v >= 1 else "%.3f" % v


def counter(run, key, fmt):
    if run is None or run.get("error_occurred") or key not in run:
        return "-"
    return fmt % run[key]


def shape_cells(family, shape):
    """The leading columns: input and output channels (or the layer's own name)."""
    if family in ("conv1x1",):
        inp, out = shape.split("-")
        return [inp, out]
    if family.startswith("dwconv"):
        return [shape]
    return [family, shape]


def table(title, family, rows):
    keys = [k for k in rows if (k[0] == family if family else k[0] not in {t[0] for t in TABLES if t[0]})]
    if not keys:
        return []
    if family == "conv1x1":
        lead = ["input", "out ch"]
    elif family:
        lead = ["input"]
    else:
        lead = ["layer", "shape"]
    head = lead + ["%dT ref / opt" % t for t in THREADS] + ["opt 1T GFLOP/s", "opt 1T %peak", "kernel"]
    out = ["### " + title + " (ms)", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for fam, shape in keys:
        cell = rows[(fam, shape)]
        opt1 = cell.get(("opt", 1))
        line = shape_cells(fam, shape)
        line += ["%s / %s" % (ms(cell.get(("ref", t))), ms(cell.get(("opt", t)))) for t in THREADS]
        line += [counter(opt1, "GFLOP/s", "%.1f"), counter(opt1, "%peak", "%.1f")]
        line.append(opt1.get("label", "-") if opt1 and not opt1.get("error_occurred") else "-")
        out.append("| " + " | ".join(line) + " |")
    return out + [""]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="build/bench/kestrel-microbench", help="the kestrel-microbench binary")
    ap.add_argument("--out", help="markdown output (default: stdout)")
    ap.add_argument("--json", help="read this saved --benchmark_format=json output instead of running")
    ap.add_argument("--save-json", help="also write the raw JSON here")
    ap.add_argument("--filter", help="--benchmark_filter for the run")
    ap.add_argument("--min-time", help="--benchmark_min_time for the run (binary's default: 0.2)")
    ap.add_argument("extra", nargs="*", help="more arguments for the binary (after --)")
    args = ap.parse_args()

    if args.json:
        with open(args.json) as f:
            raw = f.read()
    else:
        raw = run_bench(args)
    if args.save_json:
        with open(args.save_json, "w") as f:
            f.write(raw)
    data = json.loads(raw)
    ctx = data.get("context", {})
    rows = collect(data)

    lines = [
        "Kestrel per-layer microbenchmarks: %s, %s (%s cores), ISA %s, FMA peak %s"
        % (
            ctx.get("date", time.strftime("%Y-%m-%d %H:%M")),
            cpu_model(),
            ctx.get("num_cpus", "?"),
            ctx.get("kestrel_isa", "?"),
            ctx.get("fma_peak", "?"),
        ),
        "",
        "Times are real time per layer in ms (reference kernel / fast kernel); %peak is the fast "
        "kernel's GFLOP/s over the measured FMA peak at the same thread count.",
        "",
    ]
    for family, title in TABLES:
        lines += table(title, family, rows)
    text = "\n".join(lines)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
