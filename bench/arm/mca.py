#!/usr/bin/env python3
"""ARM speed without ARM hardware: llvm-mca on the NEON kernels' inner loops.

Each bench/arm/loops/*.cpp defines `extern "C" mca_<name>` functions that call a
microkernel from src/arm/ (the inline headers the library itself compiles). This script
cross-compiles every file with Debian's aarch64-linux-gnu-g++ -O3 -ffp-contract=off (the
library's Release flags: no fused multiply-adds the source does not ask for) to assembly, cuts from each mca_ function its innermost loop with the most FMA
lanes (the loop the kernel spends its time in, exactly as compiled), and runs Debian's
llvm-mca on it for each core model. It reports cycles per iteration, multiply-adds (FMA
lanes) per cycle and the percentage of that core's FMA peak. The peak is llvm-mca's own
figure for a block of independent FMLAs on the same model, so the percentage measures
the kernel against the model it is simulated on. (LLVM 14 has no Cortex-A76 model of
its own: -mcpu=cortex-a76 schedules with the A57/A72 model, so that column repeats the
A72 one; a real A76 has two FMLA pipes.)

  bench/arm/mca.py [--cpus cortex-a53,cortex-a72,cortex-a76] [--markdown OUT.md]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LOOPS = os.path.join(ROOT, "bench", "arm", "loops")
CXX = os.environ.get("AARCH64_CXX", "aarch64-linux-gnu-g++")
MCA = os.environ.get("LLVM_MCA", "llvm-mca")
ITERATIONS = 400
# Enough independent accumulators to cover any model's FMLA latency x throughput.
PEAK_ACCUMULATORS = 24
# What each kernel family must reach on which models (the targets).
TARGETS = {"conv1x1": (85.0, ("cortex-a72", "cortex-a76")), "dwconv3x3": (50.0, ("cortex-a72", "cortex-a76"))}

LANES = {"8h": 8, "4h": 4, "4s": 4, "2s": 2, "s": 1}
FMA_RE = re.compile(r"^\s*(fmla|fmls)\s+v\d+\.(8h|4h|4s|2s)", re.I)
# Loop files named f16_*.cpp hold fp16-arithmetic kernels (ARMv8.2 FEAT_FP16): compiled
# for it, and measured against an FMLA .8h peak.
F16_PREFIX = "f16_"
NO_FP16 = ("cortex-a53", "cortex-a72")  # ARMv8.0 cores: no fp16 arithmetic
SCALAR_FMA_RE = re.compile(r"^\s*(fmadd|fmsub|fnmadd|fnmsub)\s+s\d+", re.I)
# Loop files named *_dot.cpp hold int8 dot-product kernels (ARMv8.2 dotprod): compiled
# for it, measured on the cores that have it, and against an SDOT peak. One SDOT is 16
# multiply-adds (4 lanes of 4 int8 products), counted as 16 "FMAs" in the table.
DOT_SUFFIX = "_dot"
NO_DOT = ("cortex-a53", "cortex-a72")  # ARMv8.0 cores: no dotprod
SDOT_RE = re.compile(r"^\s*[su]dot\s+v\d+\.4s", re.I)
SDOT_MACS = 16
# The int8 kernels without dotprod: SMULL / SMLAL(2) into 8 int16 lanes, 8 multiply-adds
# each, measured against the FMLA .4s peak (so above 100% where they beat fp32's rate).
SMULL_RE = re.compile(r"^\s*(smull|smlal)2?\s+v\d+\.8h", re.I)
SMULL_MACS = 8


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def mca(asm_path, cpu, f16=False, dot=False):
    """{region name: total cycles / iterations} from llvm-mca's summary per region."""
    out = run([MCA, "-mtriple=aarch64-linux-gnu", f"-mcpu={cpu}", f"-iterations={ITERATIONS}"] +
              (["-mattr=+fullfp16"] if f16 else []) + (["-mattr=+dotprod"] if dot else []) + [asm_path])
    regions = {}
    name = "peak"
    for line in out.splitlines():
        m = re.match(r"\[\d+\] Code Region - (\S+)", line)
        if m:
            name = m.group(1)
        m = re.match(r"Total Cycles:\s+(\d+)", line)
        if m:
            regions[name] = int(m.group(1)) / ITERATIONS
    return regions


def lanes_of(lines):
    n = 0
    for line in lines:
        m = FMA_RE.match(line)
        if m:
            n += LANES[m.group(2).lower()]
        elif SCALAR_FMA_RE.match(line):
            n += 1
        elif SDOT_RE.match(line):
            n += SDOT_MACS
        elif SMULL_RE.match(line):
            n += SMULL_MACS
    return n


# Labels: GCC's (.L12) and inline assembly's local ones (1:, branched to as 1b).
BRANCH_RE = re.compile(r"^\s*(b\.?\w*|cbnz|cbz|tbnz|tbz)\s+.*?(\.L\w+|\d+b)\s*$")
LABEL_RE = re.compile(r"^\s*(\.L\w+|\d+):")


LOAD_RE = re.compile(r"^\s*(ld[1-4]r?|ldr|ldp|ldur|ldnp)\s", re.I)
STORE_RE = re.compile(r"^\s*(st[1-4]|str|stp|stur|stnp)\s", re.I)


def mix_of(lines):
    """(loads, stores, FMLA instructions) in one iteration."""
    return (sum(1 for l in lines if LOAD_RE.match(l)), sum(1 for l in lines if STORE_RE.match(l)),
            sum(1 for l in lines if FMA_RE.match(l)))


# MobileNet v1 (224) layers: 1x1 as (in_c, out_c, side), 3x3 depthwise as (channels,
# input side, stride).
MOBILENET_1X1 = [(32, 64, 112), (64, 128, 56), (128, 128, 56), (128, 256, 28), (256, 256, 28), (256, 512, 14),
                 (512, 512, 14), (512, 1024, 7), (1024, 1024, 7)]
MOBILENET_DW = [(32, 112, 1), (64, 112, 2), (128, 56, 1), (128, 56, 2), (256, 28, 1), (256, 28, 2), (512, 14, 1),
                (512, 14, 2), (1024, 7, 1)]


def layer_mix(loops):
    """Per-layer instruction mix of MobileNet v1's 1x1 and depthwise layers, modelled
    from the hot loops as compiled: iterations x the loop's loads, stores and FMLAs,
    plus the 1x1 kernel's input packing (one vector load and store per 4 values) and
    output stores. Tiles at the edges are counted as full steps."""
    rows = []
    if "conv1x1_8x8" in loops:
        ld, st, fm = loops["conv1x1_8x8"]
        for cin, cout, side in MOBILENET_1X1:
            pixels = side * side
            macs = cin * cout * pixels
            iters = macs / 256  # 4 input channels x 8 outputs x 8 pixels per iteration
            loads = iters * ld + pixels * cin / 4
            stores = iters * st + pixels * cin / 4 + pixels * cout / 4
            rows.append((f"conv1x1 {side}x{side}x{cin}->{cout}", macs, loads / macs, stores / macs, iters * fm / macs))
    for c, side, stride in MOBILENET_DW:
        key = f"dwconv3x3_s{stride}_2x8"
        if key not in loops:
            continue
        ld, st, fm = loops[key]
        out = (side + stride - 1) // stride
        macs = c * out * out * 9
        iters = c * -(-out // 2) * -(-out // 8)  # 2 rows x 8 pixels per step
        rows.append((f"dwconv3x3 s{stride} {side}x{side}x{c}", macs, iters * ld / macs, iters * st / macs,
                     iters * fm / macs))
    return rows


def innermost_loops(body):
    """(start, end) line ranges of loops (a label and a later branch back to it) that
    contain no other loop."""
    labels = {}
    loops = []
    for i, line in enumerate(body):
        m = LABEL_RE.match(line)
        if m:
            labels[m.group(1)] = i
        m = BRANCH_RE.match(line)
        if m:
            # A local label's backward reference is its latest definition so far.
            target = m.group(2)[:-1] if m.group(2)[-1] == "b" and m.group(2)[0].isdigit() else m.group(2)
            if target in labels:
                loops.append((labels[target], i))
    return [(a, b) for (a, b) in loops if not any(a <= c and d <= b and (c, d) != (a, b) for (c, d) in loops)]


SET_RE = re.compile(r"^\s*\.set\s+(\w+)\s*,\s*(.+?)\s*$")
COND_RE = re.compile(r"^\s*\.(if|elseif|else|endif)\b\s*(.*?)\s*$")


def assembled(lines):
    """The lines GNU as keeps of inline assembly that chooses its variant with .set
    symbols and .if/.elseif/.else/.endif (the pack4 depthwise walk). A condition on
    anything else (a size check on labels) counts as false."""
    syms, out, stack = {}, [], []  # stack: [this branch taken, some branch taken]

    def value(expr):
        try:
            return int(eval(re.sub(r"[A-Za-z_.]\w*", lambda m: str(syms[m.group(0)]), expr), {"__builtins__": {}}))
        except (KeyError, SyntaxError, TypeError):
            return 0

    for line in lines:
        outer = all(t for t, _ in stack[:-1])
        m = COND_RE.match(line)
        if m:
            kind, expr = m.groups()
            if kind == "if":
                take = all(t for t, _ in stack) and bool(value(expr))
                stack.append([take, take])
            elif kind == "endif":
                stack.pop()
            else:
                take = outer and not stack[-1][1] and (kind == "else" or bool(value(expr)))
                stack[-1] = [take, stack[-1][1] or take]
            continue
        if not all(t for t, _ in stack):
            continue
        m = SET_RE.match(line)
        if m:
            syms[m.group(1)] = value(m.group(2))
            continue
        out.append(line)
    return out


CALL_RE = re.compile(r"^\s*(bl|b)\s+([A-Za-z_][\w.]*)\s*$")


def hot_loops(asm_text):
    """{region name: instruction lines of the hot inner loop of mca_<name>}: the
    innermost loop with the most FMA lanes in the function or in what it calls (GCC
    may keep a template instance out of line)."""
    # Names may carry GCC's clone suffixes (".constprop.0").
    funcs = dict(re.findall(r"^([A-Za-z_][\w.]*):\n(.*?)^\s*\.size\s+\1,", asm_text, re.S | re.M))
    regions = {}
    for fname in funcs:
        if not fname.startswith("mca_"):
            continue
        seen, todo, best = set(), [fname], None
        while todo:
            f = todo.pop()
            if f in seen or f not in funcs:
                continue
            seen.add(f)
            body = assembled(funcs[f].splitlines())
            todo += [m.group(2) for m in map(CALL_RE.match, body) if m]
            for a, b in innermost_loops(body):
                lines = [l for l in body[a:b + 1] if l.strip() and (LABEL_RE.match(l) or not l.strip().startswith((".", "#", "//")))]
                # The most FMA lanes (the shortest such loop: no spill or tail code);
                # without any (pooling), the longest loop.
                def key(ls):
                    n = lanes_of(ls)
                    return (n, -len(ls) if n else len(ls))
                if best is None or key(lines) > key(best):
                    best = lines
        if best:
            regions[fname[4:]] = best
    return regions


def peak_fmas_per_cycle(cpu, tmp, arrangement="4s"):
    """A block of independent FMLAs of this arrangement ("dot": SDOTs), in its
    multiply-adds per cycle."""
    path = os.path.join(tmp, f"peak_{arrangement}.s")
    with open(path, "w") as f:
        f.write("# LLVM-MCA-BEGIN peak\n")
        for i in range(PEAK_ACCUMULATORS):
            if arrangement == "dot":
                f.write(f"sdot v{i}.4s, v30.16b, v31.4b[0]\n")
            else:
                f.write(f"fmla v{i}.{arrangement}, v30.{arrangement}, v31.{arrangement}\n")
        f.write("# LLVM-MCA-END\n")
    cycles = mca(path, cpu, arrangement == "8h", arrangement == "dot")["peak"]
    return PEAK_ACCUMULATORS * (SDOT_MACS if arrangement == "dot" else LANES[arrangement]) / cycles


def compile_loops(tmp):
    """One .s per hot loop, marked for llvm-mca: {region: (path, FMA lanes)}."""
    out = {}
    for name in sorted(os.listdir(LOOPS)):
        if not name.endswith(".cpp"):
            continue
        asm_path = os.path.join(tmp, name[:-4] + ".s")
        if name.startswith(F16_PREFIX):
            march = "armv8.2-a+fp16"
        elif name[:-4].endswith(DOT_SUFFIX):
            march = "armv8.2-a+dotprod"
        else:
            march = "armv8-a"
        run([CXX, "-O3", "-DNDEBUG", "-std=c++17", "-ffp-contract=off", f"-march={march}", "-S", "-I", os.path.join(ROOT, "src"),
             os.path.join(LOOPS, name), "-o", asm_path])
        with open(asm_path) as f:
            for region, lines in hot_loops(f.read()).items():
                path = os.path.join(tmp, region + ".loop.s")
                with open(path, "w") as g:
                    g.write(f"# LLVM-MCA-BEGIN {region}\n" + "\n".join(lines) + "\n# LLVM-MCA-END\n")
                out[region] = (path, lanes_of(lines), mix_of(lines))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cpus", default="cortex-a53,cortex-a55,cortex-a72,cortex-a76")
    ap.add_argument("--markdown", help="also write the table to this file")
    args = ap.parse_args()
    cpus = args.cpus.split(",")
    rows, misses = [], []
    with tempfile.TemporaryDirectory() as tmp:
        peaks = {cpu: peak_fmas_per_cycle(cpu, tmp) for cpu in cpus}
        peaks_f16 = {cpu: peak_fmas_per_cycle(cpu, tmp, "8h") for cpu in cpus if cpu not in NO_FP16}
        peaks_dot = {cpu: peak_fmas_per_cycle(cpu, tmp, "dot") for cpu in cpus if cpu not in NO_DOT}
        loops = compile_loops(tmp)
        mixes = {region: mix for region, (_, _, mix) in loops.items()}
        for region, (path, n, _) in sorted(loops.items()):
            for cpu in cpus:
                # fp16 loops on cores without FEAT_FP16 (A53, A72) would not run there.
                f16 = region.startswith(F16_PREFIX)
                dot = region.endswith(DOT_SUFFIX)
                if (f16 and cpu in NO_FP16) or (dot and cpu in NO_DOT):
                    continue
                peak = (peaks_f16 if f16 else peaks_dot if dot else peaks)[cpu]
                cycles = list(mca(path, cpu, f16, dot).values())[0]
                pct = 100.0 * n / cycles / peak if cycles else 0.0
                rows.append((region, cpu, cycles, n, n / cycles if cycles else 0.0, peak, pct))
                for family, (target, models) in TARGETS.items():
                    if region.startswith(family) and cpu in models and pct < target:
                        misses.append(f"{region} on {cpu}: {pct:.1f}% < {target:.0f}%")
    lines = ["| inner loop | core model | cycles/iter | FMAs/iter | FMAs/cycle | peak FMAs/cycle | % of peak |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r[0]} | {r[1]} | {r[2]:.2f} | {r[3]} | {r[4]:.2f} | {r[5]:.2f} | {r[6]:.1f} |")
    lines.append("")
    lines.append("Targets (issue 6): conv1x1 >= 85% and dwconv3x3 >= 50% of peak on cortex-a72 and cortex-a76: " +
                 ("all met" if not misses else "missed: " + "; ".join(misses)))
    lines += ["", "MobileNet v1 per-layer aarch64 instruction mix (model: hot-loop counts x iterations, plus "
              "packing and output stores):", "",
              "| layer | multiply-adds | loads / MAC | stores / MAC | FMLAs / MAC |", "|---|---|---|---|---|"]
    for name, macs, ld, st, fm in layer_mix(mixes):
        lines.append(f"| {name} | {macs / 1e6:.1f} M | {ld:.3f} | {st:.3f} | {fm:.3f} |")
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
