#!/usr/bin/env python3
"""Which layers int8 keeps in fp32, chosen by the task's own metric (issue 27).

    /usr/bin/python3 bench/precision/int8_keep_search.py --build build/release --models movenet,blazeface,centernet
        [--candidates 20] [--max-keep 16] [--min-gain 0.02] [--prune-tol 0.02] [--threads 1] [--jobs 1]

For each model:
1. kestrel-quantize (KL) on the calibration images (../shared/images: a cat and five VOC
   photos) with --sensitivity, which ranks the layers by the output SQNR with that layer
   alone in int8; the --candidates worst are the layers the search may keep in fp32.
2. A candidate set is scored on the calibration images ONLY: kestrel-run --precision int8
   with --layer-precision LAYER=fp32 for each kept layer, on the model calibrated once
   with --weights fp32 (no recalibration per candidate: kestrel-quantize's scales are
   per blob from the fp32 activations, so --keep-fp32 gives the same scales for the
   layers still int8; step 5 checks that the chosen set's outputs are the same), against
   the fp32 outputs on the same images. The score (lower is better):
   - MoveNet: the mean keypoint distance from fp32 in input pixels (the issue's metric,
     from kestrel-run's decoder), plus the same distance for a soft-argmax decode of the
     raw outputs (each keypoint the softmax-weighted mean of the distance-weighted
     heatmap's cells, temperature --tau of the peak, plus their offsets): it moves
     smoothly where the argmax jumps between near-equal peaks. Both means weigh each
     keypoint by its fp32 score (--weigh score): three of the six calibration photos show
     no person (a cat each), and their keypoints (and centre) jump between weak peaks.
   - BlazeFace, CenterNet: the fp32 boxes (above the task's threshold) not found again at
     IoU >= 0.8 plus the new boxes above it (the issue's metric), plus a smooth term over
     the boxes above --low-threshold on either side: each box matched with the other
     side's boxes above half that threshold (same label, best IoU), costing
     min(1, (1 - IoU) / 0.2) + min(1, |score change| / 0.1), or 2 unmatched; averaged.
3. Greedy: add the candidate that lowers the score most (or raises it least), --max-keep
   times; keep the shortest prefix of those additions within --min-gain (relative) of the
   best prefix's score.
4. Prune: drop the kept layer whose removal costs least, while the score stays within
   --prune-tol (relative) of the greedy result.
5. kestrel-quantize --keep-fp32 THE_SET (int8 weights: the model one would ship), checked
   against the search's score on the calibration images, then evaluated like
   int8_accuracy.py on face-api's six photos, which the search never saw; the same for
   the model with nothing kept and, for comparison, with --keep-below DB (the SQNR rule).

Needs kestrel-convert, kestrel-quantize and kestrel-run in --build (copied into a temporary
folder first, so that a rebuild during the search does not mix binaries), the TF.js models
(tools/realmodels.sh) and ../shared/images.
"""
import argparse
import concurrent.futures
import json
import os
import pathlib
import re
import shutil
import sys
import tempfile
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import accuracy  # noqa: E402
from accuracy import realmodels, run, iou, cpu_name  # noqa: E402
from int8_accuracy import SHARED_IMAGES, compare_boxes, convert, quantize  # noqa: E402

# The task's score threshold and most results (kestrel/tasks.h defaults), the JSON key.
DETECTORS = {"blazeface": ("faces", 0.5, 10), "centernet": ("objects", 0.2, 100)}
LOW_THRESHOLD = {"blazeface": 0.2, "centernet": 0.1}


def meta_of(m):
    return dict(x.split("=", 1) for x in m.meta)


def sensitivity_ranking(text):
    """[(layer, dB)] worst first, from kestrel-quantize --sensitivity's report."""
    part = text.split("sensitivity: output SQNR", 1)[1].splitlines()[1:]
    rows = []
    for line in part:
        mm = re.match(r"^(\S+)\s+(-?[0-9.]+|-?inf|nan)(\s|$)", line)
        if not mm:
            break
        rows.append((mm.group(1), float(mm.group(2))))
    return rows


def movenet_soft(outs, tau, size):
    """Soft-argmax keypoints (input pixels, [17, 2] as y, x) from MoveNet's raw NHWC outputs,
    the decode of src/tasks/pose_movenet.cpp with each argmax over the keypoint cells
    replaced by softmax((v - max) / (tau * max)); the centre stays the argmax."""
    heat, center, reg, off = (outs[k][0].astype(np.float64) for k in ("heatmap", "center", "regress", "offset"))
    H, W = heat.shape[:2]
    best = int(np.argmax(center[..., 0]))
    cy, cx = divmod(best, W)
    ys, xs = np.mgrid[0:H, 0:W]
    pts = np.zeros((heat.shape[2], 2))
    for k in range(heat.shape[2]):
        ry, rx = cy + reg[cy, cx, 2 * k], cx + reg[cy, cx, 2 * k + 1]
        v = heat[..., k] / (np.sqrt((ys - ry) ** 2 + (xs - rx) ** 2) + 1.8)
        vmax = v.max()
        p = np.exp((v - vmax) / (tau * vmax if vmax > 0 else 1.0))
        p /= p.sum()
        pts[k, 0] = (p * (ys + off[..., 2 * k])).sum() * (size / H)
        pts[k, 1] = (p * (xs + off[..., 2 * k + 1])).sum() * (size / W)
    return pts


def detections(result, key, threshold, most):
    """(label, box, score) above threshold, best first, at most `most` (the decoder's NMS is
    plain greedy by score, so this is the run at that threshold)."""
    d = sorted(result[key], key=lambda r: -r["score"])
    return [(r.get("label", 0), r["box"], r["score"]) for r in d if r["score"] > threshold][:most]


def match_cost(src, dst, floor, low):
    """Summed cost of src's boxes above `low` matched one to one against dst's above `floor`."""
    used, cost, n = set(), 0.0, 0
    for label, box, score in src:
        if score <= low:
            continue
        n += 1
        best, bj = 0.0, -1
        for j, (gl, gb, gs) in enumerate(dst):
            if gl == label and j not in used and gs > floor and iou(box, gb) > best:
                best, bj = iou(box, gb), j
        if best >= 0.5:
            used.add(bj)
            cost += min(1.0, (1.0 - best) / 0.2) + min(1.0, abs(score - dst[bj][2]) / 0.1)
        else:
            cost += 2.0
    return cost, n


class Scorer:
    """Runs a model on images (kestrel-run, one process an image) and scores int8 against fp32."""

    def __init__(self, bins, m, images, work, a):
        self.bins, self.m, self.images, self.work, self.a = bins, m, images, work, a
        self.meta = meta_of(m)
        self.detector = DETECTORS.get(m.name)
        if self.detector:
            self.low = LOW_THRESHOLD[m.name] if a.low_threshold is None else a.low_threshold
        self.ref = None

    def infer(self, model, precision, keep=(), tag="x", low=True):
        """{image stem: (json result, {output: array} for MoveNet)}."""
        d = pathlib.Path(tempfile.mkdtemp(prefix=f"{tag}_", dir=self.work))
        res = {}
        for img in self.images:
            j = d / f"{img.stem}.json"
            cmd = [self.bins / "kestrel-run", model, img, "--precision", precision,
                   "--threads", self.a.threads, "--json", j]
            for layer in keep:
                cmd += ["--layer-precision", f"{layer}=fp32"]
            outs = {}
            if self.m.name == "movenet":
                for k in ("heatmap", "center", "regress", "offset"):
                    cmd += ["--output", f"{self.meta['task.' + k]}={d / (img.stem + '_' + k + '.npy')}"]
            elif self.detector and low:
                cmd += ["--threshold", self.low / 2, "--top", 1000]
            run(cmd)
            if self.m.name == "movenet":
                outs = {k: np.load(d / f"{img.stem}_{k}.npy") for k in ("heatmap", "center", "regress", "offset")}
            res[img.stem] = (json.loads(j.read_text()), outs)
        shutil.rmtree(d)
        return res

    def set_reference(self, model):
        self.ref = self.infer(model, "fp32", tag="fp32")

    def score(self, got):
        """(score, figures) of int8 results against self.ref."""
        photos = self.images
        if self.m.name == "movenet":
            want = {k: v[0] for k, v in self.ref.items()}
            have = {k: v[0] for k, v in got.items()}
            hard = accuracy.keypoint_distances(want, have, photos)
            soft, weight = [], []
            for p in photos:
                a = movenet_soft(self.ref[p.stem][1], self.a.tau, self.m.size)
                b = movenet_soft(got[p.stem][1], self.a.tau, self.m.size)
                soft += list(np.sqrt(((a - b) ** 2).sum(axis=1)))
                weight += [k[2] if self.a.weigh == "score" else 1.0 for k in want[p.stem]["poses"][0]["keypoints"]]
            hm, sm = float(np.mean(hard)), float(np.mean(soft))
            whm, wsm = float(np.average(hard, weights=weight)), float(np.average(soft, weights=weight))
            return whm + wsm, {"mean_px": hm, "max_px": float(np.max(hard)), "soft_mean_px": sm,
                               "keypoints": len(hard), "weighted_px": whm, "weighted_soft_px": wsm}
        key, thr, most = self.detector
        found = total = new = 0
        worst = 1.0
        cost = n = 0.0
        floor = self.low / 2
        for p in photos:
            w = detections(self.ref[p.stem][0], key, floor, 1000)
            g = detections(got[p.stem][0], key, floor, 1000)
            wt = [(lb, bx) for lb, bx, s in w if s > thr][:most]
            gt = [(lb, bx) for lb, bx, s in g if s > thr][:most]
            f, t, nn, wi = compare_boxes(wt, gt, 0.8)
            found, total, new, worst = found + f, total + t, new + nn, min(worst, wi)
            c1, n1 = match_cost(w, g, floor, self.low)
            c2, n2 = match_cost(g, w, floor, self.low)
            cost, n = cost + c1 + c2, n + n1 + n2
        smooth = cost / n if n else 0.0
        return (total - found) + new + smooth, {"found": found, "total": total, "new": new, "worst_iou": worst,
                                                  "smooth": smooth, "low_boxes": int(n)}

    def evaluate(self, model, keep, tag):
        return self.score(self.infer(model, "int8", keep, tag))


def describe(m, fig):
    if m == "movenet":
        return (f"{fig['mean_px']:.2f} px mean, {fig['max_px']:.1f} px max ({fig['keypoints']} keypoints; "
                f"soft-argmax {fig['soft_mean_px']:.2f} px; weighted by fp32's keypoint scores "
                f"{fig['weighted_px']:.2f} / {fig['weighted_soft_px']:.2f} px)")
    s = f"{fig['found']}/{fig['total']} found again (IoU >= 0.8"
    s += f", worst {fig['worst_iou']:.3f})" if fig["total"] else ")"
    s += f", {fig['new']} new"
    if "smooth" in fig:
        s += f"; smooth term {fig['smooth']:.3f} over {fig['low_boxes']} boxes"
    return s


def eval_photos(bins, m, model, photos, work, a, tag, ref):
    """int8_accuracy.py's figures for `model` (its own --keep-fp32) on the evaluation photos, against
    `ref`: the fp32 model's path (run here), or its results."""
    sc = Scorer(bins, m, photos, work, a)
    if isinstance(ref, pathlib.Path):  # the unquantized model (a quantized one run at fp32 has int8 weights)
        sc.ref = sc.infer(ref, "fp32", tag=f"ev_fp32_{tag}", low=False)
    else:
        sc.ref = ref
    got = sc.infer(model, "int8", tag=f"ev_{tag}", low=False)
    if m.name == "movenet":
        return sc.score(got)[1], sc.ref
    key, thr, most = sc.detector
    want = {k: v[0] for k, v in sc.ref.items()}
    have = {k: v[0] for k, v in got.items()}
    found, total, new, worst = accuracy.box_totals(want, have, photos, key, lambda w, g: compare_boxes(w, g, 0.8))
    return {"found": found, "total": total, "new": new, "worst_iou": worst}, sc.ref


def search(bins, m, paths, work, a, log):
    t0 = time.time()
    kst = work / f"{m.name}.kst"
    convert(bins, paths, m, kst)
    calib = sorted(SHARED_IMAGES.glob("*.jpg"))
    if not calib:
        sys.exit(f"no calibration photos in {SHARED_IMAGES}")
    scales = work / f"{m.name}_kl_w32.kst"
    text = quantize(bins, kst, calib, scales, "kl", ("--weights", "fp32", "--sensitivity", "--threads", a.threads))
    ranking = sensitivity_ranking(text)
    whole = re.search(r"whole network in int8: ([-0-9.]+) dB", text).group(1)
    cands = [name for name, _ in ranking[:a.candidates]]
    log(f"\n== {m.name}: {len(ranking)} int8 layers, whole network {whole} dB; candidates: the {len(cands)} worst "
        f"({ranking[0][1]:.2f} .. {ranking[len(cands) - 1][1]:.2f} dB)")
    sc = Scorer(bins, m, calib, work, a)
    sc.set_reference(kst)
    cache = {}

    def score(keep):
        k = frozenset(keep)
        if k not in cache:
            cache[k] = sc.evaluate(scales, sorted(k), "c")
        return cache[k]

    def score_many(sets):
        todo = [s for s in dict.fromkeys(frozenset(x) for x in sets) if s not in cache]
        if a.jobs > 1 and len(todo) > 1:
            with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
                for s, r in zip(todo, ex.map(lambda s: sc.evaluate(scales, sorted(s), "c"), todo)):
                    cache[s] = r
        return [score(x) for x in sets]

    base, fig = score(())
    log(f"nothing kept: score {base:.3f}; calibration images: {describe(m.name, fig)}")
    # Greedy to --max-keep (an addition that does not help is still taken: the next may), then
    # the shortest prefix within --min-gain of the best prefix.
    kept, trail = [], [base]
    while len(kept) < a.max_keep:
        rest = [c for c in cands if c not in kept]
        if not rest:
            break
        results = score_many([kept + [c] for c in rest])
        i = int(np.argmin([r[0] for r in results]))
        s, f = results[i]
        kept.append(rest[i])
        trail.append(s)
        log(f"  + {short(rest[i])}: score {s:.3f}; {describe(m.name, f)}  [{time.time() - t0:.0f} s]")
    best = min(trail)
    n = next(i for i, s in enumerate(trail) if s <= best * (1.0 + a.min_gain) + 1e-12)
    kept, cur = kept[:n], trail[n]
    log(f"  greedy: the first {n} ({cur:.3f}; the best prefix {best:.3f})")
    greedy = cur
    while kept:
        results = score_many([[k for k in kept if k != x] for x in kept])
        i = int(np.argmin([r[0] for r in results]))
        s, f = results[i]
        if s > greedy * (1.0 + a.prune_tol) + 1e-12:
            break
        log(f"  - {short(kept[i])}: score {s:.3f}; {describe(m.name, f)}")
        kept.pop(i)
        cur = s
    final_fig = score(kept)[1]
    log(f"chosen: {len(kept)} layers, score {cur:.3f} (nothing kept {base:.3f}); {len(cache)} sets scored in "
        f"{time.time() - t0:.0f} s")
    for k in kept:
        log(f"  {k}  ({dict(ranking)[k]:.2f} dB alone)")

    # The model one would ship: --keep-fp32, int8 weights; checked on the calibration images.
    shipped = work / f"{m.name}_kept.kst"
    extra = ("--threads", a.threads) + (("--keep-fp32", ",".join(kept)) if kept else ())
    quantize(bins, kst, calib, shipped, "kl", extra)
    s2, f2 = sc.evaluate(shipped, (), "shipped")
    same = abs(s2 - cur) < 1e-9
    log(f"kestrel-quantize --keep-fp32 (int8 weights) on the calibration images: score {s2:.3f} "
        f"({'the same as the search' if same else 'DIFFERS from the search: ' + str(cur)})")
    plain = work / f"{m.name}_plain.kst"
    quantize(bins, kst, calib, plain, "kl", ("--threads", a.threads))
    paths_photos = [pathlib.Path(paths["FACEAPI_DEMO"]) / f"sample{i}.jpg" for i in range(1, 7)]
    ev_plain, ref = eval_photos(bins, m, plain, paths_photos, work, a, "plain", kst)
    ev_kept, _ = eval_photos(bins, m, shipped, paths_photos, work, a, "kept", ref)
    log(f"evaluation photos (face-api's six), nothing kept: {describe(m.name, ev_plain)}")
    log(f"evaluation photos, {len(kept)} kept: {describe(m.name, ev_kept)}")
    by_sqnr = []
    for db in [x for x in a.keep_below.split(",") if x]:
        q = work / f"{m.name}_below_{db}.kst"
        text = quantize(bins, kst, calib, q, "kl", ("--threads", a.threads, "--keep-below", db))
        n_kept = len(re.findall(r"-> kept fp32", text))
        cs, cf = sc.evaluate(q, (), f"below{db}")
        ev, _ = eval_photos(bins, m, q, paths_photos, work, a, f"below{db}", ref)
        log(f"for comparison, --keep-below {db} ({n_kept} layers): calibration images score {cs:.3f}, "
            f"{describe(m.name, cf)}; evaluation photos {describe(m.name, ev)}")
        by_sqnr.append({"db": db, "kept": n_kept, "calib": cf, "calib_score": cs, "eval": ev})
    return {"by_sqnr": by_sqnr, "model": m.name, "kept": kept, "calib_base": fig, "calib_kept": final_fig, "eval_plain": ev_plain,
            "eval_kept": ev_kept, "sets": len(cache), "seconds": time.time() - t0, "same": same,
            "ranking": {k: dict(ranking)[k] for k in kept}}


def short(layer):
    return layer.replace("StatefulPartitionedCall/", "").replace("center_net_mobile_net_v2fpn_feature_extractor/", "")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build/release")
    ap.add_argument("--models", default="movenet,blazeface,centernet")
    ap.add_argument("--threads", type=int, default=1, help="kestrel-run/-quantize --threads")
    ap.add_argument("--jobs", type=int, default=1, help="candidate sets scored at once")
    ap.add_argument("--candidates", type=int, default=20, help="the layers the search may keep: the N worst by "
                    "kestrel-quantize --sensitivity")
    ap.add_argument("--max-keep", type=int, default=12, help="the greedy additions")
    ap.add_argument("--min-gain", type=float, default=0.02, help="the greedy result: the shortest prefix of the "
                    "additions within this (relative) of the best prefix's score")
    ap.add_argument("--prune-tol", type=float, default=0.02, help="a removal may raise the score by this much "
                    "(relative to the greedy result)")
    ap.add_argument("--tau", type=float, default=0.1, help="MoveNet's soft-argmax temperature (of the peak)")
    ap.add_argument("--low-threshold", type=float, help="the smooth term's score threshold (blazeface 0.2, "
                    "centernet 0.1)")
    ap.add_argument("--weigh", choices=("score", "none"), default="score", help="MoveNet: weigh each keypoint's "
                    "distances by its fp32 score (three of the six calibration photos show no person: their keypoints, and "
                    "the centre, jump between weak peaks), or not")
    ap.add_argument("--keep-below", default="25", help="for comparison, also kestrel-quantize --keep-below DB "
                    "(comma-separated list), scored the same way on both image sets")
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args()
    build = pathlib.Path(a.build).resolve()
    paths = realmodels.fetch()
    models = {m.name: m for m in realmodels.MODELS}
    results = []
    print(f"host: {cpu_name()}, {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="kestrel_keep_") as tmp:
        tmp = pathlib.Path(tmp)
        bins = tmp / "bin"
        bins.mkdir()
        for b in ("kestrel-convert", "kestrel-quantize", "kestrel-run"):
            for _ in range(60):  # a rebuild may have it missing for a moment
                if (build / b).exists():
                    break
                time.sleep(5)
            shutil.copy2(build / b, bins / b)
        for name in a.models.split(","):
            work = tmp / name
            work.mkdir()
            results.append(search(bins, models[name], paths, work, a, lambda s: print(s, flush=True)))
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
