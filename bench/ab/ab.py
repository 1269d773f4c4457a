#!/usr/bin/env python3
"""Paired A/B of two kestrel-bench binaries on one model: ROUNDS rounds, each running A
then B (B then A on odd rounds) with --profile, so that the machine's slow spells fall
on both alike; prints the median over rounds of each binary's latency median and of
every layer's median, with B - A, and the layers whose difference exceeds --show.
Why: on the shared hosts these benchmarks run on, a binary's latency drifts by 10-20%
within minutes, more than most kernel changes move it; single runs decide nothing.

  bench/ab/ab.py A_BENCH B_BENCH MODEL.kst [--threads 1] [--rounds 8] [--loops 20]
                 [--warmup 3] [--fuse on|off] [--show 0.005] [--a-flags "..."] [--b-flags "..."]

A_BENCH / B_BENCH: two kestrel-bench builds (copy one aside before rebuilding), or one
build twice with different --a-flags / --b-flags (say "--blocked off" against "").
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile


def run(bench, flags, args, out):
    cmd = [bench, args.model, "--threads", str(args.threads), "--loops", str(args.loops), "--warmup",
           str(args.warmup), "--fuse", args.fuse, "--profile", "--json", out] + shlex.split(flags)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--loops", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--fuse", choices=["on", "off"], default="on")
    ap.add_argument("--show", type=float, default=0.005, help="list layers whose medians differ by more ms")
    ap.add_argument("--a-flags", default="", help="extra kestrel-bench flags for A")
    ap.add_argument("--b-flags", default="", help="extra kestrel-bench flags for B")
    args = ap.parse_args()
    lat = {"a": [], "b": []}
    layers = {"a": {}, "b": {}}
    names = {}
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        for r in range(args.rounds):
            for side in ("a", "b") if r % 2 == 0 else ("b", "a"):
                d = run(getattr(args, side), getattr(args, side + "_flags"), args, out)
                lat[side].append(d["median_ms"])
                for l in d["layers"]:
                    layers[side].setdefault(l["index"], []).append(l["median_ms"])
                    names[l["index"]] = (l["name"], l.get("kernel") or "")
    a, b = statistics.median(lat["a"]), statistics.median(lat["b"])
    print(f"{args.model}  threads {args.threads}  rounds {args.rounds}  fuse {args.fuse}")
    print(f"latency median of round medians: A {a:.3f} ms  B {b:.3f} ms  B-A {b - a:+.3f} ms ({(b / a - 1) * 100:+.1f}%)")
    sa = sum(statistics.median(v) for v in layers["a"].values())
    sb = sum(statistics.median(v) for v in layers["b"].values())
    print(f"sum of layer medians:            A {sa:.3f} ms  B {sb:.3f} ms  B-A {sb - sa:+.3f} ms")
    if set(layers["a"]) != set(layers["b"]):
        print("(the two binaries ran different layer lists: compare latencies only)")
        return
    for i in sorted(layers["a"]):
        ma, mb = statistics.median(layers["a"][i]), statistics.median(layers["b"][i])
        if abs(mb - ma) > args.show:
            print(f"  {i:4d} {names[i][0][-28:]:28s} {names[i][1][:34]:34s} A {ma:.3f}  B {mb:.3f}  {mb - ma:+.3f}")


if __name__ == "__main__":
    sys.exit(main())
