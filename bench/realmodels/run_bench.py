#!/usr/bin/env python3
"""Kestrel against TensorFlow.js 4.22.0's wasm backend (XNNPACK, SIMD build) on real
trained TF.js graph models (tests/tfjs/realmodels.py: MoveNet Lightning, BlazeFace,
CenterNet), side by side in one run, at each thread count.

Both engines get the same face-api photo (sample1.jpg, resized as the model's own
pre-processing does) and compute the same tensors: TF.js is asked for exactly the
outputs kestrel-convert cut the graph at (the post-processing after them is not timed in
either engine). Each round runs, per model and thread count, kestrel-bench and
tools/tfjs/tfjs_run.js bench back to back (order alternating between rounds), LOOPS timed
runs after WARMUP each; the table shows the median of the rounds' medians and the
smallest min. Then kestrel-bench --profile once per model at 1 thread: time per layer
type and the slowest layers. Exits 0 whatever the speeds.

  /usr/bin/python3 bench/realmodels/run_bench.py [--build DIR] [--out DIR] [--threads 1,2]
      [--loops 30] [--warmup 5] [--rounds 3] [--models movenet,blazeface,centernet]
      [--markdown bench/realmodels/RESULTS.md] [--json bench/realmodels/results.json]

Needs: a Release build with kestrel-convert and kestrel-bench; node and npm
(tools/realmodels.sh fetches the models and TF.js); python3-numpy, -opencv and
-flatbuffers (tools/deps.sh groups realmodels and testdata). RESULTS.md keeps the text
above its MARKER line and rewrites everything below it.
"""
import argparse
import datetime
import json
import pathlib
import re
import shlex
import statistics
import subprocess
import sys

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO / "tests" / "tfjs"))
import realmodels  # noqa: E402

ENGINES = ("kestrel", "tfjs")
MARKER = "<!-- Everything below is written by bench/realmodels/run_bench.py; the text above is kept. -->"
HEADER = """# Kestrel against TensorFlow.js (wasm) on real trained models

Latency of one inference of three trained TF.js graph models from @vladmandic/human 3.3.6,
Kestrel (`kestrel-bench` on the `kestrel-convert tfjs` model) against TF.js 4.22.0's wasm
backend (XNNPACK, SIMD build; in Node, threads > 1 through tools/tfjs/tfjs_run.js's
workaround). Both engines get the same photo and compute the same tensors (the outputs
where kestrel-convert cuts the graph before post-processing). Kestrel times input copy
plus extract of every output; TF.js times `model.execute` plus `dataSync` of every output.
Timings on a shared 2-CPU virtual machine move by 10-20% from one minute to the next:
compare within one run, and read the per-round medians before trusting a small gap. At 2
threads a busy neighbour process stalls both engines' thread barriers, Kestrel's (libgomp,
spinning by default) most: a round can take 100 times longer; the median of the rounds
keeps such a round out of the table only when it is the only one.
"""


def run(cmd, **kw):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise RuntimeError(f"{shlex.join(map(str, cmd))} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r.stdout


def kst_metadata(path):
    """The .kst's metadata (Model.metadata, field 7 of the root table in src/format/kestrel.fbs)."""
    import flatbuffers
    from flatbuffers.table import Table
    buf = bytearray(pathlib.Path(path).read_bytes())
    model = Table(buf, flatbuffers.encode.Get(flatbuffers.packer.uoffset, buf, 0))
    field = model.Offset(4 + 2 * 7)
    meta = {}
    for i in range(model.VectorLen(field) if field else 0):
        kv = Table(buf, model.Indirect(model.Vector(field) + 4 * i))
        value = kv.Offset(6)
        meta[kv.String(kv.Pos + kv.Offset(4)).decode()] = kv.String(kv.Pos + value).decode() if value else ""
    return meta


def prepare(model, paths, convert, out, photo):
    """Converts the model; writes its input for TF.js (NHWC) and for Kestrel ([C,H,W], with the
    integer input's pre-processing applied where kestrel-convert folded it into mean/norm)."""
    src = pathlib.Path(paths["HUMAN_MODELS"]) / model.file
    kst = out / f"{model.name}.kst"
    cmd = [convert, "tfjs", src, kst]
    for m in model.meta:
        cmd += ["--meta", m]
    outputs = re.findall(r"^  output:  (\S+) ", run(cmd), re.M)
    x = realmodels.model_input(model, photo)
    np.save(out / f"{model.name}_nhwc.npy", x)
    chw = x[0].transpose(2, 0, 1)
    meta = kst_metadata(kst)
    if meta.get("folded_preprocess") == model.input_name:
        mean = np.array(meta["mean"].split(","), np.float32).reshape(-1, 1, 1)
        chw = (chw - mean) * np.array(meta["norm"].split(","), np.float32).reshape(-1, 1, 1)
    np.save(out / f"{model.name}_chw.npy", np.ascontiguousarray(chw, np.float32))
    dtype = meta.get(f"tf_input.{model.input_name}", "?").split()[-1]  # "NAME:0 1,H,W,C nhwc int32"
    return {"src": src, "kst": kst, "outputs": outputs,
            "input": f"{model.size}x{model.size}x{model.channels} {dtype}"}


def time_kestrel(bench, model, prep, threads, args, out):
    j = out / "kestrel_bench.json"
    run([bench, prep["kst"], "--threads", threads, "--loops", args.loops, "--warmup", args.warmup,
         "--input", f"{model.input_name}={out / (model.name + '_chw.npy')}", "--json", j])
    r = json.loads(j.read_text())
    return {"median_ms": r["median_ms"], "min_ms": r["min_ms"], "isa": r["isa"]}


def time_tfjs(paths, model, prep, threads, args, out):
    cmd = ["node", paths["TFJS_RUN"], "bench", prep["src"], "--backend", "wasm", "--threads", threads,
           "--loops", args.loops, "--warmup", args.warmup,
           "--input", f"{model.input_name}={out / (model.name + '_nhwc.npy')}"]
    for o in prep["outputs"]:
        cmd += ["--output", o]
    r = json.loads(run(cmd, env=realmodels.node_env(paths)).strip().splitlines()[-1])
    return {"median_ms": r["median_ms"], "min_ms": r["min_ms"], "simd": r["simd"], "threads_used": r["threads"]}


def profile(bench, model, prep, args, out):
    j = out / "kestrel_profile.json"
    text = run([bench, prep["kst"], "--threads", 1, "--loops", args.loops, "--warmup", args.warmup,
                "--input", f"{model.input_name}={out / (model.name + '_chw.npy')}", "--profile", "--json", j])
    r = json.loads(j.read_text())
    slowest = sorted(r["layers"], key=lambda layer: -layer["median_ms"])[:8]
    return {"by_type": text[text.index("per layer type"):].rstrip(), "slowest": slowest,
            "total_ms": sum(layer["median_ms"] for layer in r["layers"]), "fma_peak_gflops": r["fma_peak_gflops"]}


def short(name):
    """A layer name by the last three scopes of each fused part (TF.js names nest deeply)."""
    return "+".join("/".join(part.split("/")[-3:]) for part in name.split("+"))


def load_average():
    return " ".join(pathlib.Path("/proc/loadavg").read_text().split()[:3])


def source_commit(build):
    """The commit of the sources the build was configured from (CMakeCache's source dir)."""
    cache = (build / "CMakeCache.txt").read_text()
    src = re.search(r"^CMAKE_HOME_DIRECTORY:INTERNAL=(.*)$", cache, re.M).group(1)
    commit = subprocess.run(["git", "-C", src, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    if commit.returncode != 0:
        return f"? ({src} is not a git checkout)"
    dirty = subprocess.run(["git", "-C", src, "diff", "--quiet", "HEAD"]).returncode != 0
    return f"{commit.stdout.strip()} ({src}{', with uncommitted changes' if dirty else ''})"


def host_info(paths, build, load_start):
    lscpu = run(["lscpu"])
    cpu = re.search(r"^Model name:\s*(.+)$", lscpu, re.M)
    wasm_pkg = pathlib.Path(paths["TFJS_NODE_MODULES"]) / "@tensorflow/tfjs-backend-wasm/package.json"
    built = datetime.datetime.fromtimestamp((build / "kestrel-bench").stat().st_mtime)
    return {"cpu": cpu.group(1).strip() if cpu else "?", "nproc": int(run(["nproc"])),
            "date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
            "commit": source_commit(build), "kestrel_bench": str(build / "kestrel-bench"),
            "kestrel_built": built.astimezone().strftime("%Y-%m-%d %H:%M %Z"),
            "load_start": load_start, "load_end": load_average(),
            "node": run(["node", "--version"]).strip(), "tfjs": json.loads(wasm_pkg.read_text())["version"]}


def markdown(args, host, preps, summary, rounds, profiles):
    threads_used = sorted({(t, r["threads_used"]) for (_, t), rr in rounds.items() for r in rr["tfjs"]})
    simd = sorted({r["simd"] for rr in rounds.values() for r in rr["tfjs"]})
    isa = sorted({r["isa"] for rr in rounds.values() for r in rr["kestrel"]})
    lines = [
        f"Run finished {host['date']} on {host['cpu']} (nproc {host['nproc']}; load average {host['load_start']} "
        f"at the start, {host['load_end']} at the end). Kestrel built from commit {host['commit']}: "
        f"`{host['kestrel_bench']}` (built {host['kestrel_built']}), fast kernels, ISA {', '.join(isa)}. "
        f"TF.js {host['tfjs']} wasm in Node {host['node']}: "
        f"SIMD {'yes' if simd == [True] else 'no' if simd == [False] else simd}; XNNPACK threads actually used "
        f"(asked -> used): {', '.join(f'{t} -> {u}' for t, u in threads_used)}. "
        f"{args.rounds} rounds of {args.loops} timed runs after {args.warmup} warm-up runs, one process per "
        "engine, setting and round, the engines back to back in alternating order; each cell is the median of "
        "the rounds' medians (the smallest min) in ms.",
        "", "Command: `" + shlex.join([sys.executable] + sys.argv) + "`", "",
        "| model | input | threads | Kestrel median (min) ms | TF.js wasm median (min) ms "
        "| speed-up (TF.js / Kestrel) |",
        "|---|---|---|---|---|---|",
    ]
    for (name, t), s in summary.items():
        k, w = s["kestrel"], s["tfjs"]
        lines.append(f"| {name} | {preps[name]['input']} | {t} | {k['median_ms']:.2f} ({k['min_ms']:.2f}) | "
                     f"{w['median_ms']:.2f} ({w['min_ms']:.2f}) | {w['median_ms'] / k['median_ms']:.2f} |")
    lines += ["", "Each round's median (ms), in round order:", "",
              "| model | threads | Kestrel | TF.js wasm |", "|---|---|---|---|"]
    for (name, t), rr in rounds.items():
        lines.append(f"| {name} | {t} | " + " | ".join(", ".join(f"{r['median_ms']:.2f}" for r in rr[e])
                                                       for e in ENGINES) + " |")
    lines += ["", "Outputs timed (TF.js is given the same names): "
              + "; ".join(f"{n}: {', '.join(p['outputs'])}" for n, p in preps.items()) + ".", "",
              "## Where Kestrel's time goes (1 thread, `kestrel-bench --profile`)", "",
              f"Medians of {args.loops} profiled runs per layer after {args.warmup} warm-up runs; a layer's time runs "
              "from the previous layer's end to its own, so the sums exceed the unprofiled latency a little. Layer "
              "names keep the last three scopes of each fused part (results.json has them whole)."]
    for name, p in profiles.items():
        lines += ["", f"### {name} (sum of layer medians {p['total_ms']:.2f} ms)", "", "```", p["by_type"], "```", "",
                  "| # | layer | type | kernel | ms | % time | MFLOP | GFLOP/s | % FMA peak |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for layer in p["slowest"]:
            ms, mflop = layer["median_ms"], 2e-6 * layer["multiply_adds"]
            gflops = mflop / ms if mflop else 0
            lines.append(f"| {layer['index']} | `{short(layer['name'])}` | {layer['type']} | {layer['kernel']} | "
                         f"{ms:.3f} | {100 * ms / p['total_ms']:.1f} | " + (f"{mflop:.1f} | {gflops:.1f} | "
                         f"{100 * gflops / p['fma_peak_gflops']:.1f} |" if mflop else "– | – | – |"))
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=str(REPO / "build" / "release"))
    ap.add_argument("--out", default=str(REPO / "build" / "realmodels_bench"))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--loops", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--models", default="movenet,blazeface,centernet")
    ap.add_argument("--markdown", default=str(HERE / "RESULTS.md"))
    ap.add_argument("--json", default=str(HERE / "results.json"))
    args = ap.parse_args()
    build, out = pathlib.Path(args.build), pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    convert, bench = build / "kestrel-convert", build / "kestrel-bench"
    threads = [int(t) for t in args.threads.split(",")]
    known = {m.name: m for m in realmodels.MODELS}
    models = [known[n] for n in args.models.split(",")]

    load_start = load_average()
    paths = realmodels.fetch()
    photo = realmodels.photos(paths)[0][1]
    preps = {m.name: prepare(m, paths, convert, out, photo) for m in models}
    rounds = {(m.name, t): {e: [] for e in ENGINES} for m in models for t in threads}
    for r in range(args.rounds):
        for m in models:
            for t in threads:
                for e in (ENGINES if r % 2 == 0 else ENGINES[::-1]):
                    res = (time_kestrel(bench, m, preps[m.name], t, args, out) if e == "kestrel"
                           else time_tfjs(paths, m, preps[m.name], t, args, out))
                    rounds[(m.name, t)][e].append(res)
                    print(f"round {r + 1}/{args.rounds}  {m.name:10s} threads {t}  {e:8s} median "
                          f"{res['median_ms']:8.2f} ms  min {res['min_ms']:8.2f} ms", flush=True)
    summary = {key: {e: {"median_ms": statistics.median(r["median_ms"] for r in rr[e]),
                         "min_ms": min(r["min_ms"] for r in rr[e])} for e in ENGINES}
               for key, rr in rounds.items()}
    profiles = {m.name: profile(bench, m, preps[m.name], args, out) for m in models}

    host = host_info(paths, build, load_start)
    text = markdown(args, host, preps, summary, rounds, profiles)
    print("\n" + text)
    md = pathlib.Path(args.markdown)
    old = md.read_text() if md.exists() else ""
    header = old[:old.index(MARKER)] if MARKER in old else HEADER + "\n"
    md.write_text(header + MARKER + "\n\n" + text)
    result = {"host": host, "command": [sys.executable] + sys.argv, "loops": args.loops, "warmup": args.warmup,
              "rounds": args.rounds,
              "models": {n: {"input": p["input"], "outputs": p["outputs"]} for n, p in preps.items()},
              "results": [{"model": n, "threads": t, **{e: {**summary[(n, t)][e], "rounds": rr[e]} for e in ENGINES},
                           "speedup": summary[(n, t)]["tfjs"]["median_ms"] / summary[(n, t)]["kestrel"]["median_ms"]}
                          for (n, t), rr in rounds.items()],
              "profile": {n: {"total_ms": p["total_ms"], "fma_peak_gflops": p["fma_peak_gflops"],
                              "by_type": p["by_type"], "slowest": p["slowest"]} for n, p in profiles.items()}}
    pathlib.Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
