#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora from the project's own models.

  seed_corpus.py --out DIR [--convert KESTREL_CONVERT]

DIR/<target>/ for each target in tests/fuzz:
  fuzz_prototxt    tests/caffe/*.prototxt as they are, and each once more with its
                   seeded random weights written into the text (layer blobs), so
                   that mutations get past the layers that need weights
  fuzz_caffemodel  one byte picking the prototxt (fuzz_caffemodel.cpp's list) and a
                   seeded random caffemodel for it (tools/caffe_random_weights.py)
  fuzz_onnx        the node tests of ONNX's conformance suite (Debian's
                   libonnx-testdata), the small ones
  fuzz_tfjs        tests/tfjs/graphs.py's graphs: model.json, a NUL byte, the shard
  fuzz_model       models/*/*.kst that are small, and with --convert, .kst files
                   converted from the corpora above

Seeds are kept small (large ones slow every mutation); anything missing (numpy,
protoc, libonnx-testdata) is reported and skipped, never an error.
"""
import argparse
import concurrent.futures
import hashlib
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
CAFFE_DIR = ROOT / "tests" / "caffe"
ONNX_TESTDATA = pathlib.Path("/usr/share/libonnx-testdata/data/node")

# The same order as kNets in fuzz_caffemodel.cpp: the first byte of a seed indexes it.
CAFFEMODEL_NETS = [
    "activations", "batchnorm_fold", "batchnorm_standalone", "concat_slice_split",
    "conv_variants", "crop", "deconv", "eltwise",
    "flatten_axis", "innerproduct_dropout", "lrn", "normalize",
    "pooling", "power", "reshape_permute_softmax", "scale_two_bottoms",
    "ssd_mini", "ssd_unshared", "ssd_variants", "v1_layers",
]

# Bytes per seed, per target (tools/fuzz.sh passes the same as -max_len).
MAX_BYTES = {"fuzz_prototxt": 48 << 10, "fuzz_caffemodel": 64 << 10, "fuzz_onnx": 4 << 10, "fuzz_model": 160 << 10,
             "fuzz_tfjs": 48 << 10}


class Corpus:
    def __init__(self, out, target):
        self.target = target
        self.dir = out / target
        shutil.rmtree(self.dir, ignore_errors=True)
        self.dir.mkdir(parents=True)
        self.seen = set()
        self.skipped = 0

    def add(self, name, data):
        digest = hashlib.sha1(data).hexdigest()
        if len(data) > MAX_BYTES[self.target] or digest in self.seen:
            self.skipped += 1
            return False
        self.seen.add(digest)
        (self.dir / name).write_bytes(data)
        return True

    def report(self):
        n = len(self.seen)
        print(f"seed_corpus: {self.target}: {n} seeds ({self.skipped} too large or duplicate) in {self.dir}")


def caffe_weights():
    """caffe_random_weights' module and caffe_pb2, or None with the reason."""
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import caffe_random_weights as crw
        return crw, crw.load_caffe_pb2()
    except Exception as e:  # numpy, protobuf or protoc missing
        print(f"seed_corpus: no random caffemodels ({e})")
        return None, None


def with_blobs_in_text(crw, pb2, net, model):
    """The prototxt with the caffemodel's blobs in it, values rounded so the text
    stays short (they only have to be floats, not good weights)."""
    from google.protobuf import text_format
    msg = pb2.NetParameter()
    msg.CopyFrom(net.msg)
    layers = msg.layers if net.v1 else msg.layer
    blobs = {m.name: m.blobs for m in (model.layers if net.v1 else model.layer)}
    for layer in layers:
        for b in blobs.get(layer.name, []):
            nb = layer.blobs.add()
            nb.CopyFrom(b)
            nb.ClearField("data")
            nb.data.extend(round(v, 1) for v in b.data)
    return text_format.MessageToString(msg, float_format=".2g", use_short_repeated_primitives=True).encode()


def convert_all(tool, jobs, model):
    """Runs kestrel-convert for each (args, out.kst), a process per CPU (a sanitizer
    build of it takes a fraction of a second each), and adds what it wrote."""
    def one(job):
        args, out_kst = job
        r = subprocess.run([tool, *args, str(out_kst), "--meta", "task=fuzz"], capture_output=True)
        return out_kst if r.returncode == 0 and out_kst.exists() else None
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for kst in pool.map(one, jobs):
            if kst is not None:
                model.add(kst.name, kst.read_bytes())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, type=pathlib.Path)
    ap.add_argument("--convert", help="kestrel-convert, to write .kst seeds for fuzz_model")
    args = ap.parse_args()
    out = args.out
    prototxt = Corpus(out, "fuzz_prototxt")
    caffemodel = Corpus(out, "fuzz_caffemodel")
    onnx = Corpus(out, "fuzz_onnx")
    model = Corpus(out, "fuzz_model")
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="kestrel_seeds_"))
    try:
        for p in sorted(CAFFE_DIR.glob("*.prototxt")):
            prototxt.add(p.name, p.read_bytes())
        jobs = []  # kestrel-convert runs for fuzz_model's seeds
        crw, pb2 = caffe_weights()
        if crw is not None:
            for i, name in enumerate(CAFFEMODEL_NETS):
                path = CAFFE_DIR / f"{name}.prototxt"
                try:
                    net = crw.read_net(str(path), pb2)
                    weights, _ = crw.random_caffemodel(net, seed=1)
                except Exception as e:  # a test network random_caffemodel cannot size
                    print(f"seed_corpus: {name}: no caffemodel ({e})")
                    continue
                data = weights.SerializeToString()
                caffemodel.add(f"{name}.bin", bytes([i]) + data)
                prototxt.add(f"{name}_weights.prototxt", with_blobs_in_text(crw, pb2, net, weights))
                cm = tmp / f"{name}.caffemodel"
                cm.write_bytes(data)
                jobs.append((["caffe", str(path), str(cm)], tmp / f"caffe_{name}.kst"))
        if ONNX_TESTDATA.is_dir():
            for p in sorted(ONNX_TESTDATA.glob("*/model.onnx")):
                if onnx.add(f"{p.parent.name}.onnx", p.read_bytes()):
                    jobs.append((["onnx", str(p)], tmp / f"onnx_{p.parent.name}.kst"))
        else:
            print(f"seed_corpus: {ONNX_TESTDATA} not found (Debian: libonnx-testdata), no ONNX seeds")
        tfjs = Corpus(out, "fuzz_tfjs")
        try:
            sys.path.insert(0, str(ROOT / "tests" / "tfjs"))
            import graphs
            for name in graphs.CASES:
                text, shard, _, _ = graphs.build(name)
                if tfjs.add(f"{name}.tfjs", text.encode() + b"\0" + shard):
                    d = tmp / f"tfjs_{name}"
                    d.mkdir()
                    (d / "model.json").write_text(text)
                    (d / "w.bin").write_bytes(shard)
                    jobs.append((["tfjs", str(d / "model.json")], tmp / f"tfjs_{name}.kst"))
        except ImportError as e:
            print(f"seed_corpus: no TF.js seeds ({e})")
        if args.convert:
            convert_all(args.convert, jobs, model)
        for p in sorted((ROOT / "models").glob("*/*.kst")):
            model.add(p.name, p.read_bytes())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for c in (prototxt, caffemodel, onnx, tfjs, model):
        c.report()
    return 0


if __name__ == "__main__":
    sys.exit(main())
