#!/usr/bin/env python3
"""The paper's Table 5, Figure 2 and Figure 7 on this machine (Bi et al. 2019; see
../shared/docs/paper-notes.md): MobileNet v1 (224) and MobileNet-SSD (300), with the
model zoo's seeded weights and the Caffe definitions' layer shapes, run by kestrel-bench
under {reference, fast kernels} x {light mode off, on} x {pool off, on}, plus the static
plan; then

  Table 5   median latency, peak feature-map bytes held, system allocations per
            inference, for every configuration;
  Figure 2  time per layer type (reference and fast kernels, kestrel-bench --profile);
  Figure 7  feature-map bytes held from the system allocator after every layer of three
            inferences of a fresh Extractor, one line per memory strategy (fast kernels).

  bench/paper/table5.py [--build build] [--threads 1] [--loops 30] [--ref-loops 5]
                        [--out bench/paper]

Writes OUT/RESULTS.md, OUT/fig2_layer_types.png and OUT/fig7_memory_<model>.png.
Needs a build with kestrel-bench and kestrel-zoo, and Debian's python3-matplotlib.
"""
import argparse
import csv
import datetime
import json
import pathlib
import platform
import subprocess
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
MODELS = ["mobilenet_v1", "mobilenet_ssd"]
# (label, kernels, light, memory): the paper's eight rows, then our static plan.
CONFIGS = [
    (kernels, light, memory)
    for kernels in ("ref", "fast")
    for light, memory in (("off", "none"), ("off", "pool"), ("on", "none"), ("on", "pool"), ("on", "plan"))
]
STRATEGY_NAMES = {
    ("off", "none"): "no light mode, no pool",
    ("off", "pool"): "pool",
    ("on", "none"): "light mode",
    ("on", "pool"): "light mode + pool",
    ("on", "plan"): "static plan",
}


def cpu_model():
    for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def bench(build, model, kernels, light, memory, threads, loops, warmup, extra=()):
    with tempfile.NamedTemporaryFile(suffix=".json") as j:
        cmd = [str(build / "kestrel-bench"), str(model), "--threads", str(threads), "--loops", str(loops),
               "--warmup", str(warmup), "--kernels", kernels, "--light", light, "--memory", memory,
               "--json", j.name, *extra]
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        return json.loads(pathlib.Path(j.name).read_text())


def memory_trace(build, model, light, memory, threads):
    with tempfile.NamedTemporaryFile(suffix=".csv") as f:
        cmd = [str(build / "kestrel-bench"), str(model), "--threads", str(threads), "--loops", "1", "--warmup", "0",
               "--light", light, "--memory", memory, "--memory-trace", f.name]
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        with open(f.name) as fh:
            return list(csv.DictReader(fh))


def mib(b):
    return b / (1 << 20)


def plot_fig7(model, traces, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for name, rows in traces.items():
        ax.plot([int(r["step"]) for r in rows], [mib(int(r["held_bytes"])) for r in rows], label=name, linewidth=1.2)
    steps_per_inference = sum(1 for r in next(iter(traces.values())) if r["inference"] == "0")
    for i in (1, 2):
        ax.axvline(i * steps_per_inference, color="grey", linewidth=0.6, linestyle=":")
    ax.set_xlabel("layer step (three inferences of a fresh Extractor)")
    ax.set_ylabel("feature-map MiB held")
    ax.set_title(f"{model}: feature-map memory over three inferences (fast kernels)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_fig2(profiles, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(profiles), figsize=(5.5 * len(profiles), 4))
    for ax, (title, types) in zip(axes, profiles.items()):
        items = sorted(types.items(), key=lambda kv: kv[1])
        total = sum(v for _, v in items) or 1.0
        ax.barh([k for k, _ in items], [100 * v / total for _, v in items], color="#4a7ab5")
        ax.set_xlabel("% of inference time")
        ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def kind(layer_type, kernel):
    """The paper's Figure 2 splits the convolutions by kind; the fast kernels' names say
    which kind a layer is (the reference run borrows them, layer by layer)."""
    if layer_type != "Convolution":
        return layer_type
    if "dwconv" in kernel:
        return "3x3 depthwise convolution"
    if "conv1x1" in kernel or "gemv" in kernel:
        return "1x1 convolution"
    return "other convolution"


def by_type(profile, kernels_of):
    types = {}
    for layer in profile.get("layers", []):
        k = kind(layer["type"], kernels_of.get(layer["index"], ""))
        types[k] = types.get(k, 0.0) + layer["median_ms"]
    return types


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--loops", type=int, default=30, help="timed runs per fast-kernel configuration")
    ap.add_argument("--ref-loops", type=int, default=5, help="timed runs per reference-kernel configuration")
    ap.add_argument("--out", default=str(HERE))
    a = ap.parse_args()
    build = (REPO / a.build).resolve()
    out = pathlib.Path(a.out).resolve()
    out.mkdir(parents=True, exist_ok=True)

    results, profiles = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for model in MODELS:
            kst = pathlib.Path(tmp) / f"{model}.kst"
            subprocess.run([str(build / "kestrel-zoo"), model, str(kst)], check=True, capture_output=True)
            for kernels, light, memory in CONFIGS:
                loops = a.loops if kernels == "fast" else a.ref_loops
                r = bench(build, kst, kernels, light, memory, a.threads, loops, 1 if kernels == "ref" else 3)
                results[(model, kernels, light, memory)] = r
                print(f"{model:14s} {kernels:4s} light={light:3s} memory={memory:4s} median {r['median_ms']:8.2f} ms",
                      flush=True)
            kernels_of = {}
            for kernels in ("fast", "ref"):
                loops = a.loops if kernels == "fast" else a.ref_loops
                p = bench(build, kst, kernels, "on", "pool", a.threads, loops, 1, ["--profile"])
                if kernels == "fast":
                    kernels_of = {layer["index"]: layer["kernel"] for layer in p["layers"]}
                profiles[f"{model}, {'reference' if kernels == 'ref' else 'fast'} kernels"] = by_type(p, kernels_of)
            traces = {STRATEGY_NAMES[(l, m)]: memory_trace(build, kst, l, m, a.threads)
                      for l, m in STRATEGY_NAMES}
            plot_fig7(model, traces, out / f"fig7_memory_{model}.png")
    plot_fig2(profiles, out / "fig2_layer_types.png")

    lines = [
        "# The paper's Table 5, Figure 2 and Figure 7 on this machine",
        "",
        f"Written by `bench/paper/table5.py` on {datetime.date.today().isoformat()}, {cpu_model()}, "
        f"{a.threads} thread(s); fast kernels: median of {a.loops} runs, reference: median of {a.ref_loops} runs. "
        "Models: the zoo's MobileNet v1 (224) and MobileNet-SSD (300) with seeded weights and the Caffe "
        "definitions' layer shapes. \"held\" is the feature-map memory obtained from the system allocator "
        "(pool cache and plan arena included); allocations are system allocations per inference in steady state.",
        "",
        "## Table 5: memory strategies",
        "",
        "| kernels | light mode | memory | MobileNet ms | held MiB | allocs | MobileNet-SSD ms | held MiB | allocs |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for kernels, light, memory in CONFIGS:
        row = [("reference" if kernels == "ref" else "fast"), light, memory]
        for model in MODELS:
            r = results[(model, kernels, light, memory)]
            row += [f"{r['median_ms']:.2f}", f"{mib(r['peak_held_bytes']):.2f}",
                    f"{r['system_allocations_per_inference']:.0f}"]
        lines.append("| " + " | ".join(row) + " |")
    lines += ["", "## Figure 2: time per layer type (light mode + pool)", "",
              "![time per layer type](fig2_layer_types.png)", "",
              "| run | " + " | ".join(["layer type", "ms", "%"]) + " |", "|---|---|---|---|"]
    for title, types in profiles.items():
        total = sum(types.values()) or 1.0
        for t, ms in sorted(types.items(), key=lambda kv: -kv[1]):
            if 100 * ms / total >= 0.5:
                lines.append(f"| {title} | {t} | {ms:.3f} | {100 * ms / total:.1f} |")
    lines += ["", "## Figure 7: feature-map memory over three inferences", ""]
    for model in MODELS:
        lines.append(f"![{model}](fig7_memory_{model}.png)")
    (out / "RESULTS.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {out / 'RESULTS.md'}")


if __name__ == "__main__":
    main()
