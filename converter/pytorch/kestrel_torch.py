#!/usr/bin/env python3
"""PyTorch -> Kestrel (.kst), through ONNX.

The model is exported with torch.onnx.export (opset 13 by default, constant folding,
input named "data", outputs named "output" or "output0", "output1", ...), then
`kestrel-convert onnx` converts the ONNX file; the temporary files are removed
whatever happens, and kestrel-convert leaves no output file behind on an error.

Command line, for TorchScript files (torch.jit.save / torch.jit.trace(...).save):

  kestrel_torch.py MODEL.pt --shape 1,3,224,224 -o OUT.kst [--meta KEY=VALUE ...]
                   [--opset N] [--kestrel-convert PATH] [--keep-onnx FILE.onnx]

From Python, for a live nn.Module:

  import kestrel_torch
  kestrel_torch.convert(model, torch.rand(1, 3, 224, 224), "model.kst", meta={"name": "x"})

The model runs in eval mode for the export (its training flag is restored after);
the example input fixes every shape (batch 1: Kestrel runs one image at a time).

kestrel-convert is found, in this order: the --kestrel-convert / kestrel_convert=
argument, $KESTREL_CONVERT, PATH, then the build directories of this checkout
(build/, build/*/, build-*/). Exit codes: 0 converted, 1 export or conversion failed
(message on stderr), 2 usage error.
"""
import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import warnings

import torch

REPO = pathlib.Path(__file__).resolve().parent.parent.parent
DEFAULT_OPSET = 13


class KestrelTorchError(Exception):
    """Export or conversion failed; the message says which step and why."""


def find_kestrel_convert(path=None):
    """The kestrel-convert binary: `path`, $KESTREL_CONVERT, PATH, or this checkout's
    build directories. Raises KestrelTorchError when none is found."""
    if path:
        p = pathlib.Path(path)
        if not (p.is_file() and os.access(p, os.X_OK)):
            raise KestrelTorchError(f"kestrel-convert: {path} is not an executable file")
        return str(p)
    env = os.environ.get("KESTREL_CONVERT")
    if env:
        if not (os.path.isfile(env) and os.access(env, os.X_OK)):
            raise KestrelTorchError(f"$KESTREL_CONVERT={env} is not an executable file")
        return env
    found = shutil.which("kestrel-convert")
    if found:
        return found
    candidates = [REPO / "build" / "kestrel-convert"]
    candidates += sorted((REPO / "build").glob("*/kestrel-convert"))
    candidates += sorted(REPO.glob("build-*/kestrel-convert"))
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    raise KestrelTorchError("kestrel-convert not found: pass --kestrel-convert PATH (kestrel_convert=...), "
                            "set $KESTREL_CONVERT, put it on PATH, or build it (cmake --build build)")


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _count_outputs(y):
    if isinstance(y, torch.Tensor):
        return 1
    if isinstance(y, (tuple, list)):
        return sum(_count_outputs(v) for v in y)
    if isinstance(y, dict):
        return sum(_count_outputs(v) for v in y.values())
    raise KestrelTorchError(f"the model returns a {type(y).__name__}; Kestrel needs tensors "
                            "(or tuples/lists of them)")


def export_onnx(module, example_input, onnx_path, opset=DEFAULT_OPSET):
    """torch.onnx.export with Kestrel's conventions; returns (input names, output names)."""
    inputs = _as_tuple(example_input)
    for i, x in enumerate(inputs):
        if not isinstance(x, torch.Tensor):
            raise KestrelTorchError(f"example input {i} is a {type(x).__name__}, not a tensor")
        if x.dim() < 1 or x.shape[0] != 1:
            raise KestrelTorchError(f"example input {i} has shape {list(x.shape)}: the batch must be 1")
    input_names = ["data"] if len(inputs) == 1 else [f"data{i}" for i in range(len(inputs))]
    was_training = module.training
    module.eval()
    try:
        with torch.no_grad():
            n_out = _count_outputs(module(*inputs))
        output_names = ["output"] if n_out == 1 else [f"output{i}" for i in range(n_out)]
        try:
            with warnings.catch_warnings():
                # Harmless for ScriptModules (torch 1.13 says it for every one).
                warnings.filterwarnings("ignore", message="no signature found")
                torch.onnx.export(module, inputs, str(onnx_path), opset_version=opset, do_constant_folding=True,
                                  input_names=input_names, output_names=output_names)
        except Exception as e:  # torch raises many types here
            raise KestrelTorchError(f"torch.onnx.export (opset {opset}) failed: {type(e).__name__}: {e}") from e
    finally:
        module.train(was_training)
    return input_names, output_names


def convert_onnx_file(onnx_path, out_path, meta=None, kestrel_convert=None):
    """kestrel-convert onnx ONNX OUT [--meta k=v ...]; returns its report (stdout)."""
    exe = find_kestrel_convert(kestrel_convert)
    cmd = [exe, "onnx", str(onnx_path), str(out_path)]
    for k, v in (meta or {}).items():
        if not k or "=" in str(k):
            raise KestrelTorchError(f"metadata key {k!r}: must be non-empty without '='")
        cmd += ["--meta", f"{k}={v}"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        detail = (r.stderr.strip() or r.stdout.strip() or f"exit status {r.returncode}")
        raise KestrelTorchError(f"kestrel-convert onnx failed (exit {r.returncode}): {detail}")
    return r.stdout


def convert(module, example_input, path, meta=None, opset=DEFAULT_OPSET, kestrel_convert=None, keep_onnx=None):
    """Converts a live nn.Module (or a ScriptModule) to a Kestrel model at `path`.

    example_input: a tensor with batch 1 (or a tuple of them) fixing every shape.
    meta: {key: value} stored in the model's metadata. keep_onnx: also keep the
    intermediate ONNX file there. Returns kestrel-convert's report. Raises
    KestrelTorchError, naming the failed step, when the export or the conversion fails
    (no output file is left behind then)."""
    if not isinstance(module, torch.nn.Module):
        raise KestrelTorchError(f"expected a torch.nn.Module, got {type(module).__name__}")
    tmp = tempfile.mkdtemp(prefix="kestrel_torch_")
    try:
        onnx_path = pathlib.Path(tmp) / "model.onnx"
        export_onnx(module, example_input, onnx_path, opset)
        if keep_onnx:
            shutil.copy(onnx_path, keep_onnx)
        return convert_onnx_file(onnx_path, path, meta, kestrel_convert)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _parse_shape(text):
    try:
        dims = [int(d) for d in text.split(",")]
    except ValueError:
        dims = []
    if not dims or any(d <= 0 for d in dims):
        raise argparse.ArgumentTypeError(f"expected positive integers like 1,3,224,224, got '{text}'")
    return dims


def _parse_meta(text):
    key, eq, value = text.partition("=")
    if not key or not eq:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got '{text}'")
    return key, value


def main(argv=None):
    ap = argparse.ArgumentParser(description="Convert a TorchScript model to Kestrel (.kst) through ONNX.")
    ap.add_argument("model", help="TorchScript file (torch.jit.save)")
    ap.add_argument("--shape", type=_parse_shape, action="append", required=True, metavar="1,C,H,W",
                    help="input shape, batch 1 (repeat for several inputs, in order)")
    ap.add_argument("-o", "--output", required=True, metavar="OUT.kst")
    ap.add_argument("--meta", type=_parse_meta, action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--opset", type=int, default=DEFAULT_OPSET)
    ap.add_argument("--kestrel-convert", default=None, metavar="PATH")
    ap.add_argument("--keep-onnx", default=None, metavar="FILE.onnx", help="also keep the exported ONNX file")
    args = ap.parse_args(argv)
    try:
        try:
            module = torch.jit.load(args.model, map_location="cpu")
        except Exception as e:  # RuntimeError, ValueError, ...
            raise KestrelTorchError(f"{args.model}: not a TorchScript file torch.jit.load can read: {e}") from e
        gen = torch.Generator().manual_seed(0)
        inputs = tuple(torch.rand(s, generator=gen) for s in args.shape)
        report = convert(module, inputs[0] if len(inputs) == 1 else inputs, args.output, dict(args.meta),
                         args.opset, args.kestrel_convert, args.keep_onnx)
    except KestrelTorchError as e:
        print(f"kestrel_torch: error: {e}", file=sys.stderr)
        return 1
    sys.stdout.write(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
