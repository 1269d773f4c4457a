#!/usr/bin/env python3
"""Guest instructions per inference of aarch64 code under qemu-user: a number that does
not move from run to run, to judge NEON changes by (timings under qemu mean little).

Runs an aarch64 program under `qemu-aarch64 -L /usr/aarch64-linux-gnu -cpu MODEL` with
the counting plugin bench/arm/qemu_insn_count.c (built here with the host's gcc), once
for L loops and once for L+3, and prints (count(L+3) - count(L)) / 3: what one more
inference costs, with start-up, loading and exit cancelled out. The per-function
counts are taken the same way.

  # Kestrel: an aarch64 kestrel-bench (tools/kestrel_bench.cpp), 1 thread
  insn_count.py MODEL.kst [--bench build/armcount/kestrel-bench] [--cpu cortex-a72,cortex-a53]
                [--loops 1] [--warmup 1] [--layers] [--top 15] [--json OUT.json]
                [--bench-args '--blocked off']
  # Any aarch64 command whose loop count is the {loops} in it, e.g. ncnn's benchncnn:
  insn_count.py --command 'benchncnn {loops} 1 0 -1 0 param=mobilenet.param shape=[224,224,3]'
                --cwd DIR [--ncnn-param mobilenet.param --layers] [--cpu ...] [--loops 1]
  # Two --layers --json results side by side (MobileNet v1: same layers, same order):
  insn_count.py --join kestrel.json ncnn.json --cpu cortex-a72
  # The check that the plugin counts right (the arm_insn_count ctest):
  insn_count.py --selftest

--layers (Kestrel) runs kestrel-bench --insn-marks once more: kestrel_insn_mark() is
called before each inference and after every layer, and the plugin records the count
between marks; each layer's figure is the median over the inferences after the first.
The observer that makes the marks adds a few hundred instructions per layer, so the
layers' sum is a little above the per-inference count. For ncnn (--ncnn-param with
--layers) the marks are the entries of Net::create_extractor,
NetPrivate::do_forward_layer and Extractor::~Extractor, mapped to the param file's
layers in the order ncnn's forward_layer recursion runs them: each layer's figure runs
from its own do_forward_layer to the next one (the last to ~Extractor, with the
output's unpacking).

The host process runs under `setarch -R` (no address randomization) when it can: guest
addresses then repeat from run to run, and so do the counts of code whose path depends
on an address's alignment (memcpy heads and tails, allocators). OMP_NUM_THREADS=1 and
OMP_WAIT_POLICY=passive are set: an idle OpenMP worker (ncnn starts one team on every
host core at start-up) sleeps instead of spinning, so no second guest thread runs beside
the counted one (the plugin's counters are shared by all guest threads, not atomic).

Needs: Debian's qemu-user (7.2), gcc, gcc-aarch64-linux-gnu, binutils (c++filt).
"""
import argparse
import json
import os
import pathlib
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
PLUGIN_SRC = HERE / "qemu_insn_count.c"
CHECK_SRC = HERE / "insn_count_check.c"
SYSROOT = os.environ.get("KESTREL_AARCH64_SYSROOT", "/usr/aarch64-linux-gnu")
QEMU = os.environ.get("QEMU_AARCH64", "qemu-aarch64")
HOST_CC = os.environ.get("CC", "gcc")
CROSS_CC = os.environ.get("AARCH64_CC", "aarch64-linux-gnu-gcc")
EXTRA = 3  # the second run has this many more loops

# ncnn's per-layer marks (mangled, as in the symbol table). Complete and base object
# destructors (D1/D2) are often one function under two names: either may be the one
# qemu reports, so both are marks.
NCNN_INFERENCE = "_ZNK4ncnn3Net16create_extractorEv"
NCNN_LAYER = "_ZNK4ncnn10NetPrivate16do_forward_layerEPKNS_5LayerERSt6vectorINS_3MatESaIS5_EERKNS_6OptionE"
NCNN_DONE = ("_ZN4ncnn9ExtractorD1Ev", "_ZN4ncnn9ExtractorD2Ev")


class Run:
    """One qemu run's report from the plugin."""

    def __init__(self, text, stdout):
        self.total, self.fmas, self.vcpus = 0, 0, 0
        self.marks = []  # (instructions, multiply-add instructions since the previous mark, mark symbol)
        self.symbols = {}  # name -> (instructions, multiply-add instructions)
        self.stdout = stdout
        for line in text.splitlines():
            f = line.split(" ")
            if f[0] == "total":
                self.total, self.fmas = int(f[1]), int(f[2])
            elif f[0] == "vcpus":
                self.vcpus = int(f[1])
            elif f[0] == "mark":
                self.marks.append((int(f[2]), int(f[3]), " ".join(f[5:])))
            elif f[0] == "symbol":
                self.symbols[" ".join(f[3:])] = (int(f[1]), int(f[2]))


def build_plugin(build_dir):
    """The plugin, compiled when missing or older than its source."""
    so = build_dir / "libqemu_insn_count.so"
    if not so.exists() or so.stat().st_mtime < PLUGIN_SRC.stat().st_mtime:
        build_dir.mkdir(parents=True, exist_ok=True)
        subprocess.run([HOST_CC, "-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(so),
                        str(PLUGIN_SRC)], check=True)
    return so


def no_aslr_prefix():
    """`setarch ARCH -R` where the kernel lets us turn address randomization off."""
    setarch = shutil.which("setarch")
    if not setarch:
        return []
    cmd = [setarch, os.uname().machine, "-R"]
    ok = subprocess.run(cmd + ["true"], capture_output=True).returncode == 0
    return cmd if ok else []


NO_ASLR = None
WARNED = set()


def count(argv, cpu, plugin, marks=(), cwd=None, top=1000000):
    """Runs argv under qemu with the plugin; the plugin's report."""
    global NO_ASLR
    if NO_ASLR is None:
        NO_ASLR = no_aslr_prefix()
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "counts.txt"
        opts = [str(plugin), f"out={out}", f"top={top}"] + [f"mark={m}" for m in marks]
        cmd = NO_ASLR + [QEMU, "-L", SYSROOT, "-cpu", cpu, "-plugin", ",".join(opts), "-d", "plugin"] + argv
        # Idle OpenMP workers sleep at once instead of spinning: ncnn's start-up runs one
        # parallel region on every host core (set_cpu_powersave), and a worker spinning
        # beside the counted thread would race its counters.
        env = dict(os.environ, OMP_NUM_THREADS="1", OMP_WAIT_POLICY="passive")
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
        if p.returncode != 0 or not out.exists():
            sys.exit(f"insn_count: {shlex.join(argv)} failed under qemu (status {p.returncode}):\n"
                     f"{p.stdout[-2000:]}{p.stderr[-2000:]}")
        run = Run(out.read_text(), p.stdout + p.stderr)
    if run.vcpus > 1 and argv[0] not in WARNED:
        WARNED.add(argv[0])
        print(f"note: {argv[0]} started {run.vcpus} guest threads: counts made while two run at once can lose "
              "a few increments (the plugin's counters are not atomic across vCPUs)", file=sys.stderr)
    return run


def per_inference(make_argv, loops, cpu, plugin, cwd=None):
    """(instructions per inference, multiply-adds instructions per inference,
    {symbol: (instructions, multiply-add instructions) per inference}, the two totals)."""
    a = count(make_argv(loops), cpu, plugin, cwd=cwd)
    b = count(make_argv(loops + EXTRA), cpu, plugin, cwd=cwd)
    syms = {}
    for name in set(a.symbols) | set(b.symbols):
        (ia, fa), (ib, fb) = a.symbols.get(name, (0, 0)), b.symbols.get(name, (0, 0))
        if ib != ia:
            syms[name] = ((ib - ia) / EXTRA, (fb - fa) / EXTRA)
    return (b.total - a.total) / EXTRA, (b.fmas - a.fmas) / EXTRA, syms, (a.total, b.total)


def demangle(names):
    names = list(names)
    tool = shutil.which("c++filt") or shutil.which("aarch64-linux-gnu-c++filt")
    if not tool or not names:
        return {n: n for n in names}
    out = subprocess.run([tool], input="\n".join(names), capture_output=True, text=True).stdout.splitlines()
    return dict(zip(names, out)) if len(out) == len(names) else {n: n for n in names}


# Namespaces that every Kestrel and ncnn kernel name repeats.
NOISE = ("kestrel::kernels::arm::", "kestrel::kernels::", "(anonymous namespace)::", "kestrel::fb::", "kestrel::")


def short(name, width=160):
    for n in NOISE:
        name = name.replace(n, "")
    name = name.replace("|", "\\|")
    return name if len(name) <= width else name[:width - 3] + "..."


def print_top(syms, per_inf, top):
    order = sorted(syms.items(), key=lambda kv: -kv[1][0])[:top]
    names = demangle(n for n, _ in order)
    print(f"\ntop functions (per inference, (L+{EXTRA} - L) / {EXTRA}; FMA: fmla/fmls/fmadd... instructions)\n")
    print("| function | instructions | % | FMA instructions |")
    print("|---|---|---|---|")
    for n, (v, f) in order:
        print(f"| `{short(names[n])}` | {v:,.0f} | {100 * v / per_inf:.1f} | {f:,.0f} |")
    return [{"symbol": n, "name": names[n], "instructions": v, "fmas": f} for n, (v, f) in order]


def median_by_position(segments_per_inference):
    return [statistics.median(col) for col in zip(*segments_per_inference)]


def fmt_m(v):
    return f"{v / 1e6:.2f} M"


# ---- Kestrel ----

def kestrel_layers(args, cpu, plugin, per_inf):
    loops, warmup = max(args.layer_loops, 1), 1
    argv = [str(args.bench), str(args.model), "--threads", "1", "--loops", str(loops), "--warmup", str(warmup),
            "--insn-marks"] + shlex.split(args.bench_args)
    run = count(argv, cpu, plugin, marks=["kestrel_insn_mark"], top=0)
    layers = []
    for line in run.stdout.splitlines():
        if line.startswith("insn-mark-layer\t"):
            _, k, index, typ, kernel, macs, name = line.split("\t", 6)
            layers.append({"index": int(index), "name": name, "type": typ, "kernel": kernel, "macs": float(macs)})
    per = 1 + len(layers)
    inferences = loops + warmup
    if len(run.marks) != inferences * per:
        sys.exit(f"insn_count: {len(run.marks)} marks, expected {inferences} x {per}")
    segs = [[s for s, _, _ in run.marks[i * per:(i + 1) * per]] for i in range(1, inferences)]
    fsegs = [[f for _, f, _ in run.marks[i * per:(i + 1) * per]] for i in range(1, inferences)]
    med, fmed = median_by_position(segs), median_by_position(fsegs)
    spread = max(max(col) - min(col) for col in zip(*segs)) if len(segs) > 1 else 0
    print(f"\nper layer ({cpu}; median of {len(segs)} inferences after the first; largest spread between "
          f"inferences {spread:,.0f} instructions; FMA: multiply-add instructions, 0.25 per MAC at 4 lanes)\n")
    print("| # | layer | type | kernel | MACs | instructions | % | instructions / MAC | FMA / MAC | other / MAC |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    total, ftotal = sum(med), sum(fmed)

    def per_mac(v, macs):
        return f"{v / macs:.3f}" if macs else ""

    for k, L in enumerate(layers):
        v, f = med[k + 1], fmed[k + 1]
        L["instructions"], L["fmas"] = v, f
        print(f"| {L['index']} | {L['name']} | {L['type']} | {L['kernel']} | {L['macs'] / 1e6:.1f} M | {v:,.0f} | "
              f"{100 * v / total:.1f} | {per_mac(v, L['macs'])} | {per_mac(f, L['macs'])} | "
              f"{per_mac(v - f, L['macs'])} |")
    print(f"| | (between the last layer and the next inference's first) | | | | {med[0]:,.0f} | "
          f"{100 * med[0] / total:.1f} | | | |")
    macs = sum(L["macs"] for L in layers)
    print(f"| | **sum** | | | {macs / 1e6:.1f} M | {total:,.0f} | 100 | {per_mac(total, macs)} | "
          f"{per_mac(ftotal, macs)} | {per_mac(total - ftotal, macs)} |")
    print(f"\nsum of the marked inference {fmt_m(total)} vs {fmt_m(per_inf)} per inference unmarked "
          f"(the observer's own cost: {fmt_m(total - per_inf)})")
    return {"layers": layers, "between": med[0], "marked_sum": total, "marked_fmas": ftotal}


# ---- ncnn ----

def ncnn_param_layers(path):
    """[(type, name, bottoms, tops)] of an ncnn .param file (text format)."""
    lines = pathlib.Path(path).read_text().split("\n")
    if lines[0].strip() != "7767517":
        sys.exit(f"insn_count: {path} is not an ncnn text param file")
    n_layers = int(lines[1].split()[0])
    layers = []
    for line in lines[2:2 + n_layers]:
        f = line.split()
        nb, nt = int(f[2]), int(f[3])
        layers.append((f[0], f[1], f[4:4 + nb], f[4 + nb:4 + nb + nt]))
    return layers


def ncnn_forward_order(layers):
    """The layers in the order ncnn's forward_layer recursion runs them for benchncnn,
    which extracts every blob that no layer consumes (Net::output_names), in order."""
    producer, consumed = {}, set()
    for i, (_, _, bottoms, tops) in enumerate(layers):
        consumed.update(bottoms)
        for t in tops:
            producer[t] = i
    done, order = set(), []

    def forward(i):
        typ, _, bottoms, tops = layers[i]
        if typ == "Input":
            done.update(tops)
            return
        for b in bottoms:
            if b not in done:
                forward(producer[b])
        order.append(i)
        done.update(tops)

    for i, (typ, _, _, tops) in enumerate(layers):
        for t in tops:
            if t not in consumed and t not in done:
                forward(producer[t])
    return order


def ncnn_layers(args, argv, cpu, plugin):
    layers = ncnn_param_layers(args.ncnn_param)
    order = ncnn_forward_order(layers)
    run = count(argv, cpu, plugin, marks=[NCNN_INFERENCE, NCNN_LAYER, *NCNN_DONE], cwd=args.cwd, top=0)
    # Per inference: create_extractor, one do_forward_layer per layer, ~Extractor. Other
    # Extractors (none in benchncnn's loops) would break the pattern: checked.
    inferences, i, marks = [], 0, run.marks
    while i < len(marks):
        if marks[i][2] != NCNN_INFERENCE:
            i += 1
            continue
        seq = marks[i:i + len(order) + 2]
        kinds = [m for _, _, m in seq]
        if kinds[1:-1] != [NCNN_LAYER] * len(order) or kinds[-1] not in NCNN_DONE:
            sys.exit(f"insn_count: marks of inference {len(inferences)} do not follow {args.ncnn_param}")
        # Segments: create_extractor -> first layer (input), each layer to the next mark.
        inferences.append([(s, f) for s, f, _ in marks[i + 1:i + len(order) + 2]])
        i += len(order) + 2
    if len(inferences) < 2:
        sys.exit("insn_count: fewer than 2 inferences marked")
    med = median_by_position([[s for s, _ in inf] for inf in inferences[1:]])
    fmed = median_by_position([[f for _, f in inf] for inf in inferences[1:]])
    spread = max(max(col) - min(col) for col in zip(*[[s for s, _ in inf] for inf in inferences[1:]]))
    total, ftotal = sum(med[1:]), sum(fmed[1:])
    print(f"\nper layer ({cpu}; median of {len(inferences) - 1} inferences after the first; largest spread "
          f"between inferences {spread:,.0f} instructions; FMA: multiply-add instructions)\n")
    print("| # | layer | type | instructions | % | FMA instructions |")
    print("|---|---|---|---|---|---|")
    out = []
    for k, li in enumerate(order):
        typ, name, _, _ = layers[li]
        v, f = med[k + 1], fmed[k + 1]
        out.append({"index": li, "name": name, "type": typ, "instructions": v, "fmas": f})
        print(f"| {li} | {name} | {typ} | {v:,.0f} | {100 * v / total:.1f} | {f:,.0f} |")
    print(f"| | (input, before the first layer) | | {med[0]:,.0f} | | |")
    print(f"| | **sum of layers** | | {total:,.0f} | 100 | {ftotal:,.0f} |")
    return {"layers": out, "input": med[0], "marked_sum": total, "marked_fmas": ftotal}


# ---- side by side ----

def join(args):
    """Kestrel's and ncnn's per-layer figures (two --json files of --layers runs) side by
    side, layer by layer in run order: for networks whose two definitions run the same
    layers in the same order (MobileNet v1: ncnn fuses the ReLUs into its convolutions as
    Kestrel does), else refused."""
    kj, nj = (json.loads(pathlib.Path(p).read_text()) for p in args.join)
    cpu = args.cpu.split(",")[0]
    k = next((r for r in kj if r["cpu"] == cpu and "layers" in r), None)
    n = next((r for r in nj if r["cpu"] == cpu and "layers" in r), None)
    if not k or not n:
        sys.exit(f"insn_count: no per-layer figures for {cpu} in both files")
    if len(k["layers"]) != len(n["layers"]):
        sys.exit(f"insn_count: {len(k['layers'])} Kestrel layers, {len(n['layers'])} ncnn layers: no one-to-one match")
    print(f"per layer, {cpu}: Kestrel ({k['command']}) and ncnn ({n['command']})\n")
    print("| layer | MACs | Kestrel | ncnn | Kestrel / ncnn | Kestrel FMA / MAC | ncnn FMA / MAC | "
          "Kestrel other / MAC | ncnn other / MAC |")
    print("|---|---|---|---|---|---|---|---|---|")

    def per_mac(v, macs):
        return f"{v / macs:.3f}" if macs else ""

    for a, b in zip(k["layers"], n["layers"]):
        m = a["macs"]
        print(f"| {a['name']} ({a['type']}; ncnn {b['type']}) | {m / 1e6:.1f} M | {a['instructions']:,.0f} | "
              f"{b['instructions']:,.0f} | {a['instructions'] / b['instructions']:.2f} | {per_mac(a['fmas'], m)} | "
              f"{per_mac(b['fmas'], m)} | {per_mac(a['instructions'] - a['fmas'], m)} | "
              f"{per_mac(b['instructions'] - b['fmas'], m)} |")
    ks, ns = k["marked_sum"], n["marked_sum"]
    print(f"| **sum of layers** | {sum(a['macs'] for a in k['layers']) / 1e6:.1f} M | {ks:,.0f} | {ns:,.0f} | "
          f"{ks / ns:.2f} | | | | |")
    print(f"| per inference (L+3 - L) | | {k['per_inference']:,.0f} | {n['per_inference']:,.0f} | "
          f"{k['per_inference'] / n['per_inference']:.2f} | | | | |")


# ---- the self-test ----

def selftest(args):
    build = pathlib.Path(args.build_dir)
    plugin = build_plugin(build)
    prog = build / "insn_count_check"
    if not prog.exists() or prog.stat().st_mtime < CHECK_SRC.stat().st_mtime:
        subprocess.run([CROSS_CC, "-O2", "-static", "-Wall", "-Wextra", "-Werror", "-o", str(prog), str(CHECK_SRC)],
                       check=True)
    n = 1000  # n and 2n have as many digits: strtol's cost is the same
    runs = {k: count([str(prog), str(k)], "cortex-a72", plugin, marks=["insn_count_mark"]) for k in (n, 2 * n)}
    again = count([str(prog), str(n)], "cortex-a72", plugin, marks=["insn_count_mark"])
    a, b = runs[n], runs[2 * n]
    failures = []

    def check(ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            failures.append(what)

    # spin(n) then spin(2n): 4 instructions a turn, one of them an FMLA, 3n turns in all.
    check(b.total - a.total == 4 * 3 * n, f"total({2 * n}) - total({n}) = {b.total - a.total}, expected {12 * n}")
    check(b.fmas - a.fmas == 3 * n, f"FMA instructions: {b.fmas} - {a.fmas} = {b.fmas - a.fmas}, expected {3 * n}")
    check(a.total == again.total, f"the same run twice: {a.total} and {again.total}")
    check(a.vcpus == 1 and b.vcpus == 1, f"one vCPU ({a.vcpus}, {b.vcpus})")
    check(len(a.marks) == 3 and len(b.marks) == 3, f"3 marks each ({len(a.marks)}, {len(b.marks)})")
    if len(a.marks) == 3 and len(b.marks) == 3:
        # Between marks 0 and 1: spin(n), exactly 4n, plus a few instructions of call and
        # return that do not depend on n.
        for k, turns in ((1, n), (2, 2 * n)):
            d = b.marks[k][0] - a.marks[k][0]
            check(d == 4 * turns, f"mark {k}: {b.marks[k][0]} - {a.marks[k][0]} = {d}, expected {4 * turns}")
            c = a.marks[k][0] - 4 * turns
            check(0 <= c <= 16, f"mark {k}: {a.marks[k][0]} = 4 x {turns} turns + {c} (call and return: 0 to 16)")
            check(a.marks[k][1] == turns, f"mark {k}: {a.marks[k][1]} FMA instructions, expected {turns}")
    sa, sb = a.symbols.get("spin", (0, 0)), b.symbols.get("spin", (0, 0))
    check(sb[0] - sa[0] == 12 * n, f"symbol spin: {sb[0]} - {sa[0]} = {sb[0] - sa[0]}, expected {12 * n}")
    check(sa[1] == 3 * n, f"symbol spin: {sa[1]} FMA instructions, expected {3 * n}")
    if failures:
        sys.exit(f"arm_insn_count: {len(failures)} checks failed")
    print("arm_insn_count: the plugin counts exactly")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", nargs="?", help="a .kst model for kestrel-bench")
    ap.add_argument("--bench", default=str(REPO / "build" / "armcount" / "kestrel-bench"),
                    help="the aarch64 kestrel-bench (a static one names libc and libgomp's functions too)")
    ap.add_argument("--bench-args", default="", help="more kestrel-bench options, e.g. '--blocked off'")
    ap.add_argument("--command", help="an aarch64 command line with {loops} where its loop count goes")
    ap.add_argument("--cwd", help="the directory --command runs in")
    ap.add_argument("--ncnn-param", help="with --command (benchncnn) and --layers: the param file it runs")
    ap.add_argument("--cpu", default="cortex-a72,cortex-a53", help="qemu -cpu models, comma-separated")
    ap.add_argument("--loops", type=int, default=1, help="L: the runs have L and L+3 loops")
    ap.add_argument("--warmup", type=int, default=1, help="kestrel-bench's warm-up inferences in both runs")
    ap.add_argument("--layers", action="store_true", help="per-layer counts from marks")
    ap.add_argument("--layer-loops", type=int, default=3, help="--layers: inferences after the first")
    ap.add_argument("--top", type=int, default=15, help="functions listed")
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--build-dir", default=str(REPO / "build" / "insn_count"), help="where the plugin is built")
    ap.add_argument("--selftest", action="store_true", help="check the plugin on a loop of known length")
    ap.add_argument("--join", nargs=2, metavar=("KESTREL.json", "NCNN.json"),
                    help="print two --layers --json results side by side (the first --cpu)")
    args = ap.parse_args()
    if args.selftest:
        return selftest(args)
    if args.join:
        return join(args)
    if bool(args.model) == bool(args.command):
        ap.error("give a MODEL.kst or --command")
    plugin = build_plugin(pathlib.Path(args.build_dir))
    if args.command:
        if "{loops}" not in args.command:
            ap.error("--command needs {loops} where the loop count goes")
        label = args.command
        make_argv = lambda loops: shlex.split(args.command.replace("{loops}", str(loops)))
    else:
        label = args.model
        make_argv = lambda loops: [str(args.bench), str(args.model), "--threads", "1", "--loops", str(loops),
                                   "--warmup", str(args.warmup)] + shlex.split(args.bench_args)
    results = []
    for cpu in args.cpu.split(","):
        per_inf, fma_inf, syms, totals = per_inference(make_argv, args.loops, cpu, plugin, cwd=args.cwd)
        print(f"## {label} ({cpu}, 1 thread)\n")
        print(f"per inference: {per_inf:,.0f} instructions ({fmt_m(per_inf)}; runs of {args.loops} and "
              f"{args.loops + EXTRA} loops: {totals[0]:,} and {totals[1]:,}), of which {fma_inf:,.0f} "
              f"multiply-add instructions ({fmt_m(fma_inf)})")
        r = {"cpu": cpu, "command": label, "per_inference": per_inf, "fmas_per_inference": fma_inf, "totals": totals,
             "top": print_top(syms, per_inf, args.top)}
        if args.layers and args.command:
            if not args.ncnn_param:
                ap.error("--layers with --command needs --ncnn-param (the marks are ncnn's)")
            r.update(ncnn_layers(args, make_argv(args.loops), cpu, plugin))
        elif args.layers:
            r.update(kestrel_layers(args, cpu, plugin, per_inf))
        results.append(r)
        print()
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
