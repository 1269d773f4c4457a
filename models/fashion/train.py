#!/usr/bin/python3
"""Trains Kestrel's Fashion-MNIST classifier and converts it to .kst twice.

A small MobileNet-style network (3x3 depthwise + 1x1 pointwise convolutions with
BatchNorm and ReLU) is trained on the CPU on Debian's dataset-fashion-mnist, then
written as

  - a Caffe deploy prototxt + caffemodel (BatchNorm + Scale, Convolution with group
    for the depthwise layers, global AVE Pooling, InnerProduct, Softmax), with the
    project's caffemodel writer (tools/caffe_random_weights.py), and
  - ONNX (torch.onnx.export, opset 13, with a final Softmax),

and both are converted with kestrel-convert into models/fashion/fashion_caffe.kst and
models/fashion/fashion_onnx.kst, with the metadata kestrel-run uses (labels, task,
mean, norm, channel_order, input_size). It also writes fashion.pt (the state_dict, for
evaluate.py), a few test-set sample PNGs and README.md.

  /usr/bin/python3 models/fashion/train.py [--convert build/kestrel-convert]
        [--epochs 4] [--work DIR] [--eval-bin PATH/fashion_eval]

Deterministic on one machine: seeded, torch.use_deterministic_algorithms(True),
2 threads. Needs python3-torch, python3-numpy, python3-onnx, python3-protobuf and
protoc (for caffe.proto), and dataset-fashion-mnist.
"""
import argparse
import gzip
import json
import os
import pathlib
import struct
import subprocess
import sys
import time
import zlib

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
# Debian's dataset-fashion-mnist; KESTREL_FASHION_MNIST_DIR overrides it.
DATA_DIR = pathlib.Path(os.environ.get("KESTREL_FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist"))
LABELS = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
          "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]

# Normalization: x01 = pixel / 255; (x01 - MEAN) / STD. The training set's own
# statistics (computed by dataset_stats(), rounded to 4 decimals and fixed here so
# that PyTorch, the .kst metadata and evaluate.py use the very same numbers).
MEAN = 0.2860
STD = 0.3530

# Network: stem 3x3 conv, then (depthwise 3x3 stride s -> pointwise 1x1 to c) blocks,
# global average pool, fully connected 10.
STEM = 16
BLOCKS = [(32, 2), (64, 1), (128, 2), (128, 1)]  # (output channels, depthwise stride)


# --------------------------------------------------------------------------------------
# Data


def read_idx(path):
    """An idx file (gzip) as a numpy uint8 array: images [N,28,28] or labels [N]."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    if magic >> 8 != 0x08:  # 0x08: unsigned byte
        raise ValueError(f"{path}: not a uint8 idx file (magic {magic:#x})")
    ndim = magic & 0xFF
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    arr = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim)
    if arr.size != int(np.prod(dims)):
        raise ValueError(f"{path}: {arr.size} bytes for dims {dims}")
    return arr.reshape(dims)


def load_split(split, data_dir=DATA_DIR):
    """('train' | 't10k') -> (uint8 images [N,28,28], int64 labels [N])."""
    images = read_idx(data_dir / f"{split}-images-idx3-ubyte.gz")
    labels = read_idx(data_dir / f"{split}-labels-idx1-ubyte.gz").astype(np.int64)
    return images, labels


def dataset_stats(images):
    x = images.astype(np.float64) / 255.0
    return float(x.mean()), float(x.std())


def preprocess(images):
    """uint8 [N,28,28] -> float32 [N,1,28,28], normalized as the network expects."""
    x = images.astype(np.float32) / 255.0
    return ((x - MEAN) / STD)[:, None, :, :].astype(np.float32)


def kestrel_meta():
    """The metadata stored in both .kst files. Kestrel applies (pixel - mean) * norm to
    0..255 pixels, which equals (pixel/255 - MEAN) / STD."""
    return {
        "labels": ",".join(LABELS),
        "task": "classify",
        "mean": f"{255.0 * MEAN:.6g}",
        "norm": f"{1.0 / (255.0 * STD):.9g}",
        "channel_order": "gray",
        "input_size": "28x28",
    }


# --------------------------------------------------------------------------------------
# Model


def build_model():
    import torch.nn as nn

    def cbr(cin, cout, k, stride, groups=1):
        return [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
                nn.BatchNorm2d(cout), nn.ReLU(inplace=True)]

    layers = cbr(1, STEM, 3, 1)
    c = STEM
    for cout, stride in BLOCKS:
        layers += cbr(c, c, 3, stride, groups=c)  # depthwise
        layers += cbr(c, cout, 1, 1)              # pointwise
        c = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, 10)]
    return nn.Sequential(*layers)


def load_trained(path=HERE / "fashion.pt"):
    import torch
    model = build_model()
    model.load_state_dict(torch.load(path, map_location="cpu"))
    model.eval()
    return model


def predict(model, x, batch=1000):
    """Softmax probabilities [N,10] (float32 numpy) of preprocessed x [N,1,28,28]."""
    import torch
    out = []
    with torch.no_grad():
        for i in range(0, len(x), batch):
            out.append(torch.softmax(model(torch.from_numpy(x[i:i + batch])), dim=1).numpy())
    return np.concatenate(out)


# --------------------------------------------------------------------------------------
# Training


def train(epochs, seed, log):
    import torch
    import torch.nn.functional as F

    torch.manual_seed(seed)
    np.random.seed(seed)
    torch.use_deterministic_algorithms(True)

    tr_img, tr_lab = load_split("train")
    te_img, te_lab = load_split("t10k")
    mean, std = dataset_stats(tr_img)
    log(f"training set: {len(tr_img)} images, pixel mean {mean:.5f} std {std:.5f} "
        f"(used: {MEAN} / {STD})")
    xtr = torch.from_numpy(preprocess(tr_img)).contiguous(memory_format=torch.channels_last)
    ytr = torch.from_numpy(tr_lab)
    xte = preprocess(te_img)

    model = build_model().to(memory_format=torch.channels_last)
    batch = 128
    steps_per_epoch = len(xtr) // batch  # the last partial batch is dropped
    total = epochs * steps_per_epoch
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=5e-5)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.2, total_steps=total, pct_start=0.2)
    gen = torch.Generator().manual_seed(seed)
    t0 = time.time()
    for epoch in range(epochs):
        model.train()
        perm = torch.randperm(len(xtr), generator=gen)
        te = time.time()
        loss_sum = 0.0
        for s in range(steps_per_epoch):
            idx = perm[s * batch:(s + 1) * batch]
            loss = F.cross_entropy(model(xtr[idx]), ytr[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            loss_sum += float(loss)
        model.eval()
        acc = float((predict(model, xte).argmax(1) == te_lab).mean())
        log(f"epoch {epoch + 1}/{epochs}: loss {loss_sum / steps_per_epoch:.4f}, "
            f"test accuracy {100 * acc:.2f}%, {time.time() - te:.0f} s")
    train_s = time.time() - t0
    model = model.to(memory_format=torch.contiguous_format).eval()
    probs = predict(model, xte)
    acc = float((probs.argmax(1) == te_lab).mean())
    return model, train_s, acc


# --------------------------------------------------------------------------------------
# Caffe


def caffe_prototxt(model):
    """Deploy prototxt text for `model` and, per Caffe layer name, the numpy blobs."""
    import torch.nn as nn
    lines = ['name: "fashion_mobilenet"', 'input: "data"',
             "input_shape { dim: 1 dim: 1 dim: 28 dim: 28 }"]
    blobs = {}
    bottom = "data"
    mods = list(model)
    i = 0
    n = 0
    while i < len(mods):
        m = mods[i]
        if isinstance(m, nn.Conv2d):
            bn, relu = mods[i + 1], mods[i + 2]
            assert isinstance(bn, nn.BatchNorm2d) and isinstance(relu, nn.ReLU)
            name = f"conv{n}" + ("/dw" if m.groups > 1 else "")
            top = name
            lines.append(
                f'layer {{ name: "{name}" type: "Convolution" bottom: "{bottom}" top: "{top}"\n'
                f'  convolution_param {{ num_output: {m.out_channels} bias_term: false '
                f'kernel_size: {m.kernel_size[0]} pad: {m.padding[0]} stride: {m.stride[0]}'
                + (f" group: {m.groups}" if m.groups > 1 else "") + " } }")
            blobs[name] = [m.weight.detach().numpy()]
            # Caffe's BatchNorm: mean and variance stored times a moving-average factor
            # (the third blob); 1 is what a converged Caffe run stores.
            factor = np.array([1.0], np.float32)
            lines.append(f'layer {{ name: "{name}/bn" type: "BatchNorm" bottom: "{top}" top: "{top}"\n'
                         f'  batch_norm_param {{ use_global_stats: true eps: {bn.eps:g} }} }}')
            blobs[f"{name}/bn"] = [bn.running_mean.numpy() * factor, bn.running_var.numpy() * factor, factor]
            lines.append(f'layer {{ name: "{name}/scale" type: "Scale" bottom: "{top}" top: "{top}"\n'
                         f'  scale_param {{ bias_term: true }} }}')
            blobs[f"{name}/scale"] = [bn.weight.detach().numpy(), bn.bias.detach().numpy()]
            lines.append(f'layer {{ name: "{name}/relu" type: "ReLU" bottom: "{top}" top: "{top}" }}')
            bottom = top
            if m.groups == 1 or m.kernel_size[0] == 1:
                n += 1
            i += 3
        elif isinstance(m, nn.AdaptiveAvgPool2d):
            lines.append(f'layer {{ name: "pool" type: "Pooling" bottom: "{bottom}" top: "pool"\n'
                         "  pooling_param { pool: AVE global_pooling: true } }")
            bottom = "pool"
            i += 1
        elif isinstance(m, nn.Flatten):
            i += 1  # InnerProduct flattens from axis 1 itself
        elif isinstance(m, nn.Linear):
            lines.append(f'layer {{ name: "fc" type: "InnerProduct" bottom: "{bottom}" top: "fc"\n'
                         f"  inner_product_param {{ num_output: {m.out_features} }} }}")
            blobs["fc"] = [m.weight.detach().numpy(), m.bias.detach().numpy()]
            bottom = "fc"
            i += 1
        else:
            raise TypeError(f"no Caffe layer for {m}")
    lines.append(f'layer {{ name: "prob" type: "Softmax" bottom: "{bottom}" top: "prob" }}')
    return "\n".join(lines) + "\n", blobs


def write_caffe(model, prototxt_path, caffemodel_path):
    sys.path.insert(0, str(ROOT / "tools"))
    import caffe_random_weights as crw

    text, blobs = caffe_prototxt(model)
    prototxt_path.write_text(text)
    pb2 = crw.load_caffe_pb2()
    net = crw.read_net(prototxt_path, pb2)
    _, per_layer = crw.infer_shapes(net)  # checks the prototxt's geometry
    out = pb2.NetParameter()
    out.name = net.msg.name
    for layer, (ins, tops) in zip(net.layers, per_layer):
        m = out.layer.add()
        m.name, m.type = layer.name, layer.type
        m.bottom.extend(layer.bottoms)
        m.top.extend(layer.tops)
        for arr in blobs.get(layer.name, []):
            m.blobs.append(crw._blob_proto(pb2, arr, legacy=False))
    unused = set(blobs) - {layer.name for layer in net.layers}
    assert not unused, unused
    caffemodel_path.write_bytes(out.SerializeToString())


# --------------------------------------------------------------------------------------
# ONNX


def write_onnx(model, path):
    import torch

    class WithSoftmax(torch.nn.Module):
        def __init__(self, net):
            super().__init__()
            self.net = net

        def forward(self, x):
            return torch.softmax(self.net(x), dim=1)

    torch.onnx.export(WithSoftmax(model).eval(), torch.zeros(1, 1, 28, 28), str(path), opset_version=13,
                      input_names=["data"], output_names=["prob"], do_constant_folding=True)
    import onnx
    onnx.checker.check_model(onnx.load(str(path)))


def convert(convert_bin, args, meta):
    cmd = [str(convert_bin)] + [str(a) for a in args]
    for k, v in meta.items():
        cmd += ["--meta", f"{k}={v}"]
    print("+ " + " ".join(f"'{c}'" if (" " in c or "," in c) else c for c in cmd), flush=True)
    subprocess.run(cmd, check=True)


# --------------------------------------------------------------------------------------
# Sample PNGs


def write_png_gray(path, img):
    """8-bit grayscale PNG from a uint8 [H,W] array (zlib + struct, no PIL)."""
    img = np.ascontiguousarray(img, dtype=np.uint8)
    h, w = img.shape
    raw = b"".join(b"\x00" + img[y].tobytes() for y in range(h))  # filter 0 per row

    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)) +
           chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))
    pathlib.Path(path).write_bytes(png)


def sample_name(index, label):
    return f"{index:05d}_{LABELS[label].lower().replace('/', '_').replace(' ', '_')}.png"


def write_samples(out_dir, count=6):
    images, labels = load_split("t10k")
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("*.png"):
        old.unlink()
    seen, names = set(), []
    for i in range(len(images)):  # the first test image of each of `count` classes
        if labels[i] in seen:
            continue
        seen.add(int(labels[i]))
        names.append(sample_name(i, int(labels[i])))
        write_png_gray(out_dir / names[-1], images[i])
        if len(seen) == count:
            break
    return names


# --------------------------------------------------------------------------------------
# README


def write_readme(path, train_s, total_s, epochs, acc, log_lines, eval_text, samples, torch_version):
    def kb(name):
        return f"{os.path.getsize(HERE / name) / 1024:.0f} KB"

    meta = kestrel_meta()
    n_params = sum(p.numel() for p in build_model().parameters())
    blocks = ", ".join(f"dw3x3/s{s} + pw1x1 -> {c}" for c, s in BLOCKS)
    sample_list = "\n".join(f"  - `samples/{n}`" for n in samples)
    log = "\n".join(log_lines)
    evaluation = eval_text.strip() or "(not run: pass --eval-bin to train.py, or run evaluate.py)"
    text = f"""# Fashion-MNIST classifier (trained)

A small MobileNet-style network trained on Fashion-MNIST (Debian's
`dataset-fashion-mnist`) with PyTorch on the CPU, converted to Kestrel twice: from
Caffe (deploy prototxt + caffemodel written by `tools/caffe_random_weights.py`'s
writer) and from ONNX (`torch.onnx.export`, opset 13). `evaluate.py` checks that
neither conversion loses accuracy on the 10,000 test images (ctest: `fashion_accuracy`).

Network ({n_params} parameters): 3x3 conv {STEM} (stride 1) + BatchNorm + ReLU, then
{blocks} (each convolution followed by BatchNorm + ReLU), global average pooling,
fully connected 10, softmax. Input `data` 1x28x28 gray, output `prob` (10 classes).

## Files

- `train.py`: trains, exports (Caffe and ONNX), converts with kestrel-convert, writes the
  samples and this README.
- `evaluate.py`: Kestrel (both .kst, fast kernels) against PyTorch on the test set.
- `fashion.pt`: the trained PyTorch state_dict ({kb("fashion.pt")}; `train.load_trained()`
  rebuilds the module), so that `evaluate.py` runs PyTorch without retraining.
- `fashion_caffe.kst` ({kb("fashion_caffe.kst")}), `fashion_onnx.kst` ({kb("fashion_onnx.kst")}):
  the two conversions.
- `samples/`: test-set images (index_label.png, 28x28 8-bit gray):
{sample_list}

## Metadata (both .kst files)

Kestrel applies `(pixel - mean) * norm` to 0..255 pixels; PyTorch was trained on
`(pixel/255 - {MEAN}) / {STD}` (the training set's mean and std, rounded):

| key | value |
|---|---|
""" + "".join(f"| `{k}` | `{v}` |\n" for k, v in meta.items()) + f"""
    build/kestrel-run models/fashion/fashion_onnx.kst models/fashion/samples/*.png

## Retraining

    cmake -S . -B build/fashion -DCMAKE_BUILD_TYPE=Release -DKESTREL_BUILD_BENCH=OFF
    cmake --build build/fashion -j2 --target kestrel-convert fashion_eval
    /usr/bin/python3 models/fashion/train.py --convert build/fashion/kestrel-convert \\
        --eval-bin build/fashion/tests/fashion/fashion_eval

Seeded (`--seed 0`) and deterministic as far as PyTorch allows
(`torch.use_deterministic_algorithms(True)`, 2 threads). `--from-pt` skips training
and redoes the export and conversion from `fashion.pt`. The prototxt, caffemodel and
ONNX file go to `build/fashion-model/` (`--work`), not into the repository.

## Last training run

{epochs} epochs, batch 128, SGD (Nesterov, momentum 0.9, weight decay 5e-5) with a
one-cycle learning rate (max 0.2), no augmentation; torch {torch_version},
`torch.set_num_threads(2)` on a 2-core machine that was shared with other jobs.
Training took **{train_s:.0f} s** wall ({total_s:.0f} s with export, conversion and
samples); test accuracy **{100 * acc:.2f}%**.

```
{log}
```

## Evaluation (evaluate.py)

```
{evaluation}
```
"""
    path.write_text(text)


# --------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--convert", default=str(ROOT / "build" / "kestrel-convert"), help="kestrel-convert binary")
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--work", default=str(ROOT / "build" / "fashion-model"),
                    help="where the prototxt, caffemodel and ONNX file go (not committed)")
    ap.add_argument("--eval-bin", default="", help="fashion_eval binary: run evaluate.py at the end")
    ap.add_argument("--from-pt", action="store_true",
                    help="skip training: export and convert the committed fashion.pt")
    args = ap.parse_args()

    if not pathlib.Path(args.convert).exists():
        ap.error(f"--convert {args.convert}: no such file (build the kestrel-convert target)")
    import torch
    torch.set_num_threads(2)
    work = pathlib.Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    log_lines = []

    def log(s):
        print(s, flush=True)
        log_lines.append(s)

    t_start = time.time()
    if args.from_pt:
        model, train_s = load_trained(), 0.0
        te_img, te_lab = load_split("t10k")
        acc = float((predict(model, preprocess(te_img)).argmax(1) == te_lab).mean())
        log(f"fashion.pt loaded (no training), test accuracy {100 * acc:.2f}%")
    else:
        model, train_s, acc = train(args.epochs, args.seed, log)
        log(f"training: {train_s:.0f} s wall ({args.epochs} epochs, torch {torch.__version__}, 2 threads), "
            f"test accuracy {100 * acc:.2f}%")
        torch.save(model.state_dict(), HERE / "fashion.pt")

    prototxt, caffemodel, onnx_path = work / "fashion.prototxt", work / "fashion.caffemodel", work / "fashion.onnx"
    write_caffe(model, prototxt, caffemodel)
    write_onnx(model, onnx_path)
    meta = kestrel_meta()
    convert(args.convert, ["caffe", prototxt, caffemodel, HERE / "fashion_caffe.kst"], meta)
    convert(args.convert, ["onnx", onnx_path, HERE / "fashion_onnx.kst"], meta)
    samples = write_samples(HERE / "samples")
    total_s = time.time() - t_start

    eval_text = ""
    if args.eval_bin:
        r = subprocess.run([sys.executable, str(HERE / "evaluate.py"), "--eval-bin", args.eval_bin],
                           capture_output=True, text=True)
        eval_text = r.stdout + r.stderr
        print(eval_text, end="")
        if r.returncode != 0:
            print(f"evaluate.py failed (exit {r.returncode})", file=sys.stderr)
    if not args.from_pt:
        write_readme(HERE / "README.md", train_s=train_s, total_s=total_s, epochs=args.epochs, acc=acc,
                     log_lines=log_lines, eval_text=eval_text, samples=samples, torch_version=torch.__version__)
    info = dict(train_seconds=round(train_s, 1), total_seconds=round(total_s, 1), epochs=args.epochs,
                test_accuracy=acc, torch=torch.__version__, log=log_lines, evaluate=eval_text,
                samples=samples, sizes={p: os.path.getsize(HERE / p) for p in
                                        ("fashion_caffe.kst", "fashion_onnx.kst", "fashion.pt")})
    (work / "train_info.json").write_text(json.dumps(info, indent=1))
    print(f"done in {total_s:.0f} s; details in {work / 'train_info.json'}")


if __name__ == "__main__":
    main()
