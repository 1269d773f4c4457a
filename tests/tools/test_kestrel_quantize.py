#!/usr/bin/env python3
"""kestrel-quantize end to end on a kestrel-zoo MobileNet v1 (seeded random weights, 64x64
input): a calibration on synthetic PNGs writes a model that loads and runs, whose report
lists every int8 blob with a finite positive scale and whose biases are corrected where the
network's SQNR does not fall (--no-bias-correction skips it); and each bad input gets exit 1, a
message naming it and no output file: an image that does not load, a model already
calibrated, an unknown --keep-fp32 layer, a missing model. Bad command lines exit 2.
Needs $KESTREL_QUANTIZE, $KESTREL_RUN and $KESTREL_ZOO."""
import os
import pathlib
import re
import subprocess
import sys
import tempfile

import cv2
import numpy as np

QUANTIZE = os.environ["KESTREL_QUANTIZE"]
RUN = os.environ["KESTREL_RUN"]
ZOO = os.environ["KESTREL_ZOO"]

results = []


def run(exe, *args):
    return subprocess.run([exe, *map(str, args)], capture_output=True, text=True, timeout=300)


def check(name, ok, r=None):
    detail = "" if r is None else f"rc={r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    results.append((name, bool(ok), detail))


def fails(name, r, code, out, *needles):
    ok = (r.returncode == code and all(n in r.stderr for n in needles) and "Traceback" not in r.stderr
          and not out.exists())
    check(f"{name}: exit {code}, no output, message names {needles}", ok, r)


def report_rows(stdout):
    """The report's rows: blob, max |x|, threshold, scale, method."""
    row = re.compile(r"^\S+\s+[-+0-9.e]+\s+[-+0-9.e]+\s+[-+0-9.e]+\s+(kl|minmax|percentile)$")
    return [line.split() for line in stdout.splitlines() if row.match(line)]


def main():
    with tempfile.TemporaryDirectory() as tmp:
        d = pathlib.Path(tmp)
        model = d / "v1.kst"
        r = run(ZOO, "mobilenet_v1", model, "--size", 64)
        check("kestrel-zoo writes MobileNet v1", r.returncode == 0, r)
        rng = np.random.default_rng(3)
        images = []
        for i in range(3):
            p = d / f"calib{i}.png"
            cv2.imwrite(str(p), rng.integers(0, 256, (48 + 8 * i, 80, 3), dtype=np.uint8))
            images.append(p)

        out = d / "v1_q.kst"
        r = run(QUANTIZE, model, *images, "-o", out, "--method", "minmax")
        check("a calibration writes the model", r.returncode == 0 and out.exists(), r)
        rows = report_rows(r.stdout)
        scales = [float(x[3]) for x in rows]
        check("the report lists int8 blobs, each with a finite positive scale",
              len(rows) > 10 and all(np.isfinite(s) and s > 0 for s in scales), r)
        check("the summary counts them", f"wrote {out}: {len(rows)} blob scales by minmax over 3 images" in r.stdout, r)
        m = re.search(r"whole network in int8: ([-0-9.]+) dB, bias-corrected ([-0-9.]+) dB", r.stdout)
        check("biases corrected by default, the network's output SQNR no lower", m and float(m[2]) >= float(m[1]), r)
        nobc = d / "v1_nobc.kst"
        r = run(QUANTIZE, model, *images, "-o", nobc, "--method", "minmax", "--no-bias-correction")
        check("--no-bias-correction: no correction step", r.returncode == 0 and nobc.exists() and
              "bias-corrected" not in r.stdout, r)
        r = run(RUN, out, images[0])
        check("the calibrated model runs (fp32)", r.returncode == 0, r)
        r = run(RUN, out, images[0], "--precision", "int8")
        check("the calibrated model runs (int8)", r.returncode == 0, r)
        # The int8 layers' weights stored int8 (the default) or fp32: a quarter of the
        # bytes, the same int8 answer.
        f32w = d / "v1_qf.kst"
        r = run(QUANTIZE, model, *images, "-o", f32w, "--method", "minmax", "--weights", "fp32")
        check("--weights fp32 writes the model", r.returncode == 0 and "0 layers' weights int8" in r.stdout, r)
        ratio = out.stat().st_size / f32w.stat().st_size
        check(f"int8 weights: the file at 0.3x or less of fp32 weights' ({ratio:.3f})", ratio <= 0.3, r)
        a = run(RUN, out, images[0], "--precision", "int8", "--top", 5)
        b = run(RUN, f32w, images[0], "--precision", "int8", "--top", 5)
        scores = lambda text: [l for l in text.splitlines() if not l.startswith(("image", "latency"))]
        check("int8 weights: the same int8 scores as fp32 weights", a.returncode == 0 and scores(a.stdout) ==
              scores(b.stdout) and len(scores(a.stdout)) == 5, b)
        kl = d / "v1_kl.kst"
        r = run(QUANTIZE, model, *images, "-o", kl)
        methods = {row[0]: row[4] for row in report_rows(r.stdout)}
        check("KL by default, min-max for the network input",
              methods.get("data") == "minmax" and set(methods.values()) == {"kl", "minmax"}, r)

        again = d / "again.kst"
        fails("a model already calibrated", run(QUANTIZE, out, *images, "-o", again), 1, again, "already")
        bad = d / "broken.png"
        bad.write_bytes(b"\x89PNG\r\n\x1a\n not an image")
        o = d / "o.kst"
        fails("an image that does not load", run(QUANTIZE, model, images[0], bad, "-o", o), 1, o, "broken.png")
        fails("a missing image", run(QUANTIZE, model, d / "none.jpg", "-o", o), 1, o, "none.jpg")
        fails("an unknown --keep-fp32 layer", run(QUANTIZE, model, *images, "-o", o, "--keep-fp32", "nosuch"), 1,
              o, "nosuch")
        fails("a missing model", run(QUANTIZE, d / "none.kst", *images, "-o", o), 1, o, "none.kst")
        fails("no -o", run(QUANTIZE, model, *images), 2, o, "usage")
        fails("an unknown method", run(QUANTIZE, model, *images, "-o", o, "--method", "mse"), 2, o, "--method")
        fails("an unknown --weights", run(QUANTIZE, model, *images, "-o", o, "--weights", "int4"), 2, o, "--weights")

    failed = [(n, detail) for n, ok, detail in results if not ok]
    for n, ok, _ in results:
        print(("ok   " if ok else "FAIL ") + n)
    for n, detail in failed:
        print(f"--- {n}\n{detail}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
