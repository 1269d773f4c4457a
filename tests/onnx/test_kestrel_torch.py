#!/usr/bin/env python3
"""kestrel_torch end to end: the command line on a TorchScript file, convert() on a
live nn.Module, and the error path (batch 2: exit 1, no output file). Each .kst must
load and run in kestrel-bench. Needs $KESTREL_CONVERT and $KESTREL_BENCH."""
import os
import pathlib
import subprocess
import sys
import tempfile

import torch

REPO = pathlib.Path(__file__).resolve().parent.parent.parent
TOOL = REPO / "converter" / "pytorch" / "kestrel_torch.py"
sys.path.insert(0, str(TOOL.parent))
import kestrel_torch  # noqa: E402


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 5))

    def forward(self, x):
        return torch.softmax(self.body(x), dim=1)


def runs(kst):
    r = subprocess.run([os.environ["KESTREL_BENCH"], str(kst), "--loops", "1", "--warmup", "0"],
                       capture_output=True, text=True)
    return r.returncode == 0 and "latency" in r.stdout


def main():
    torch.manual_seed(0)
    model = Tiny().eval()
    x = torch.rand(1, 3, 16, 16)
    results = []
    with tempfile.TemporaryDirectory() as d:
        d = pathlib.Path(d)
        torch.jit.trace(model, x).save(str(d / "tiny.pt"))
        cli = [sys.executable, str(TOOL), str(d / "tiny.pt"), "--kestrel-convert", os.environ["KESTREL_CONVERT"]]
        r = subprocess.run(cli + ["--shape", "1,3,16,16", "-o", str(d / "cli.kst"), "--meta", "task=classification"],
                           capture_output=True, text=True)
        results.append(("command line converts a TorchScript file",
                        r.returncode == 0 and (d / "cli.kst").exists() and runs(d / "cli.kst"), r.stderr))
        r = subprocess.run(cli + ["--shape", "2,3,16,16", "-o", str(d / "bad.kst")], capture_output=True, text=True)
        results.append(("batch 2 is refused without an output file",
                        r.returncode == 1 and not (d / "bad.kst").exists() and r.stderr.strip() != "", r.stderr))
        kestrel_torch.convert(model, x, str(d / "api.kst"), kestrel_convert=os.environ["KESTREL_CONVERT"])
        results.append(("convert() on a live nn.Module", (d / "api.kst").exists() and runs(d / "api.kst"), ""))
    failed = [(name, err) for name, ok, err in results if not ok]
    for name, err in failed:
        print(f"FAILED: {name}\n{err}")
    print(f"{len(results) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
