#!/usr/bin/env python3
"""Classification networks exported from PyTorch to ONNX, with PyTorch's outputs, for
the "onnx_models" test suite (tests/test_onnx_models.cpp), which converts each ONNX
file with Kestrel's ONNX front end, runs it and compares.

Models: torchvision's mobilenet_v2, mobilenet_v3_small, mobilenet_v3_large, resnet18,
squeezenet1_1, shufflenet_v2_x1_0, mnasnet1_0, efficientnet_b0 and googlenet, built
with weights=None (nothing is downloaded) and seeded random weights; every BatchNorm
gets random statistics (running_mean ~ N(0, 0.1), running_var ~ U[0.5, 1.5]) and a
random affine part (weight ~ U[0.5, 1.5], bias ~ N(0, 0.1)), so that folding it into
the convolution is really exercised. Eval mode, seeded 1x3x224x224 input.

Plus mobilenet_v1: a PyTorch twin of ../shared/models/caffe/mobilenet_deploy.prototxt
(conv-BN-Scale-ReLU blocks, the same layer shapes, global average pooling, a 1x1
convolution as classifier, softmax) whose weights are copied from a seeded random
caffemodel written by tools/caffe_random_weights.py (read back with the Python code
protoc generates from converter/caffe/caffe.proto), so that the suite can check that
the ONNX and the Caffe paths agree on equal weights. Skipped, with a message, when
../shared is absent.

  OUT_DIR/manifest.txt   one line per model:
                           model <name> <onnx output name>
                           caffe <name>     (mobilenet_v1: net.prototxt/net.caffemodel too)
                           skipped <name> <why>
  OUT_DIR/<name>/model.onnx   (opset 13, constant folding, input "data", output "output")
                 input.npy    (float32 [3,224,224], no batch)
                 output.npy   (float32 PyTorch eval output, no batch)

Usage: make_models.py OUT_DIR [--seed N] [--only NAME[,NAME]] [--opset N] [--shared DIR]
"""
import argparse
import os
import pathlib
import shutil
import sys
import time
import warnings
import zlib

import numpy as np
import torch
import torch.nn as nn
import torchvision

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO / "tools"))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree

TORCHVISION_MODELS = [
    "mobilenet_v2", "mobilenet_v3_small", "mobilenet_v3_large", "resnet18", "squeezenet1_1",
    "shufflenet_v2_x1_0", "mnasnet1_0", "efficientnet_b0", "googlenet",
]
# Constructor arguments beyond weights=None.
EXTRA_ARGS = {
    "googlenet": {"aux_logits": False, "init_weights": False},
}


def name_seed(seed, name):
    return [int(seed), zlib.crc32(name.encode())]


def randomize_batchnorm(model, gen):
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            c = m.num_features
            with torch.no_grad():
                m.running_mean.copy_(torch.randn(c, generator=gen) * 0.1)
                m.running_var.copy_(torch.rand(c, generator=gen) + 0.5)
                if m.affine:
                    m.weight.copy_(torch.rand(c, generator=gen) + 0.5)
                    m.bias.copy_(torch.randn(c, generator=gen) * 0.1)


def export(model, x, path, opset):
    """ONNX export as kestrel_torch.convert() does it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, x, str(path), opset_version=opset, do_constant_folding=True,
                          input_names=["data"], output_names=["output"])


def save_case(d, model, x, opset):
    with torch.no_grad():
        y = model(x)
    export(model, x, d / "model.onnx", opset)
    np.save(d / "input.npy", np.ascontiguousarray(x[0].numpy(), dtype=np.float32))
    np.save(d / "output.npy", np.ascontiguousarray(y[0].numpy(), dtype=np.float32))
    return y


def torchvision_model(name, seed):
    torch.manual_seed(name_seed(seed, name)[1] ^ seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = getattr(torchvision.models, name)(weights=None, **EXTRA_ARGS.get(name, {}))
    gen = torch.Generator().manual_seed(seed + 1)
    randomize_batchnorm(model, gen)
    return model.eval()


# --------------------------------------------------------------------------------------
# MobileNet v1, the twin of mobilenet_deploy.prototxt

# (in, out, stride) of the depthwise-separable blocks conv2_1 .. conv6.
MOBILENET_V1_BLOCKS = [(32, 64, 1), (64, 128, 2), (128, 128, 1), (128, 256, 2), (256, 256, 1),
                       (256, 512, 2)] + [(512, 512, 1)] * 5 + [(512, 1024, 2), (1024, 1024, 1)]


def conv_bn_relu(cin, cout, k, stride, groups):
    return nn.Sequential(
        nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
        nn.BatchNorm2d(cout, eps=1e-5),
        nn.ReLU(inplace=True))


class MobileNetV1(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        layers = [conv_bn_relu(3, 32, 3, 2, 1)]
        for cin, cout, s in MOBILENET_V1_BLOCKS:
            layers.append(conv_bn_relu(cin, cin, 3, s, cin))  # depthwise
            layers.append(conv_bn_relu(cin, cout, 1, 1, 1))   # pointwise
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc7 = nn.Conv2d(1024, num_classes, 1, bias=True)

    def forward(self, x):
        # [1, 1000, 1, 1] like Caffe's "prob".
        return torch.softmax(self.fc7(self.pool(self.features(x))), dim=1)


def blob_array(b):
    shape = list(b.shape.dim) if len(b.shape.dim) else [d for d in (b.num, b.channels, b.height, b.width)]
    return np.asarray(b.data, dtype=np.float32).reshape(shape)


def load_caffe_weights(model, caffemodel_path, pb2):
    """Copies the caffemodel's Convolution/BatchNorm/Scale blobs, in layer order, into
    the twin's Conv2d/BatchNorm2d modules; every shape must match."""
    net = pb2.NetParameter()
    net.ParseFromString(pathlib.Path(caffemodel_path).read_bytes())
    layers = [(l.name, l.type, [blob_array(b) for b in l.blobs]) for l in net.layer]
    convs = [l for l in layers if l[1] == "Convolution"]
    bns = [l for l in layers if l[1] == "BatchNorm"]
    scales = [l for l in layers if l[1] == "Scale"]
    tconvs = [m for m in model.modules() if isinstance(m, nn.Conv2d)]
    tbns = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    if (len(convs), len(bns), len(scales)) != (len(tconvs), len(tbns), len(tbns)):
        raise RuntimeError(f"caffemodel has {len(convs)} convolutions, {len(bns)} BatchNorm, {len(scales)} Scale; "
                           f"the twin has {len(tconvs)} and {len(tbns)}")

    def put(param, arr, what):
        if tuple(param.shape) != arr.shape:
            raise RuntimeError(f"{what}: caffemodel shape {arr.shape}, twin {tuple(param.shape)}")
        param.copy_(torch.from_numpy(arr))

    with torch.no_grad():
        for (name, _, blobs), conv in zip(convs, tconvs):
            put(conv.weight, blobs[0], name)
            if conv.bias is not None:
                put(conv.bias, blobs[1], name + " bias")
            elif len(blobs) > 1:
                raise RuntimeError(f"{name}: has a bias, the twin has none")
        for (name, _, blobs), (sname, _, sblobs), bn in zip(bns, scales, tbns):
            f = float(blobs[2].reshape(-1)[0])
            f = 0.0 if f == 0 else 1.0 / f  # Caffe's moving-average factor
            put(bn.running_mean, blobs[0] * f, name + " mean")
            put(bn.running_var, blobs[1] * f, name + " variance")
            put(bn.weight, sblobs[0], sname)
            put(bn.bias, sblobs[1], sname + " bias")


def mobilenet_v1_case(out, seed, opset, shared, lines):
    src = pathlib.Path(shared) / "models" / "caffe" / "mobilenet_deploy.prototxt"
    if not src.exists():
        print(f"{src} is absent: skipping mobilenet_v1 (the ONNX vs Caffe check)", file=sys.stderr)
        lines.append(f"skipped mobilenet_v1 {src} is absent: the ONNX vs Caffe check did not run")
        return
    import caffe_random_weights as crw
    d = out / "mobilenet_v1"
    d.mkdir()
    pb2 = crw.load_caffe_pb2()
    net = crw.read_net(str(src), pb2)
    model_msg, _ = crw.random_caffemodel(net, seed)
    shutil.copy(src, d / "net.prototxt")
    (d / "net.caffemodel").write_bytes(model_msg.SerializeToString())
    model = MobileNetV1().eval()
    load_caffe_weights(model, d / "net.caffemodel", pb2)
    torch.manual_seed(name_seed(seed, "mobilenet_v1")[1] ^ seed)
    x = torch.rand(1, 3, 224, 224) * 2 - 1
    save_case(d, model, x, opset)
    lines.append("model mobilenet_v1 output")
    lines.append("caffe mobilenet_v1 prob")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=20261122)
    ap.add_argument("--only", default="")
    ap.add_argument("--opset", type=int, default=13)
    ap.add_argument("--shared", default=os.environ.get("KESTREL_SHARED_DIR", str(REPO.parent / "shared")))
    args = ap.parse_args()
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    wanted = set(args.only.split(",")) if args.only else None
    out = pathlib.Path(args.out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    lines = []
    t_all = time.time()
    for name in TORCHVISION_MODELS:
        if wanted and name not in wanted:
            continue
        t0 = time.time()
        model = torchvision_model(name, args.seed)
        torch.manual_seed(name_seed(args.seed, name)[1] ^ (args.seed + 2))
        x = torch.rand(1, 3, 224, 224) * 2 - 1
        d = out / name
        d.mkdir()
        y = save_case(d, model, x, args.opset)
        lines.append(f"model {name} output")
        print(f"{name}: output {list(y.shape)}, max |y| {y.abs().max().item():.3g} ({time.time() - t0:.2f} s)",
              file=sys.stderr)
    if not wanted or "mobilenet_v1" in wanted:
        t0 = time.time()
        try:
            mobilenet_v1_case(out, args.seed, args.opset, args.shared, lines)
        except Exception as e:  # noqa: BLE001 - report which step failed and stop
            print(f"mobilenet_v1: {type(e).__name__}: {e}", file=sys.stderr)
            return 1
        print(f"mobilenet_v1: ({time.time() - t0:.2f} s)", file=sys.stderr)
    (out / "manifest.txt").write_text("\n".join(lines) + "\n")
    print(f"wrote {len(lines)} manifest lines to {out} in {time.time() - t_all:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
