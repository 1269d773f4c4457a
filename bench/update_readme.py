#!/usr/bin/env python3
"""Splices the latest generated results (each benchmark script's RESULTS.md) into
bench/README.md between its results markers, headings one level down, so that the
README always shows what the scripts last measured.

  bench/update_readme.py
"""
import pathlib
import re

HERE = pathlib.Path(__file__).resolve().parent
BEGIN, END = "<!-- results:begin (bench/update_readme.py) -->", "<!-- results:end -->"
# (file, what it is), in the order of the README's sections.
PARTS = [
    ("peers/RESULTS.md", "Kestrel vs ONNX Runtime and OpenCV (issue 7)"),
    ("profile/RESULTS.md", "MobileNet v1 per layer against the FMA peak (issue 7)"),
    ("micro/RESULTS.md", "Tables 2, 3 and 4: per-layer microbenchmarks"),
    ("paper/RESULTS.md", "Table 5, Figure 2, Figure 7"),
    ("scaling/RESULTS.md", "Thread scaling on 16 CPUs"),
    ("arm/RESULTS.md", "ARM NEON kernels under llvm-mca"),
]


def demote(text, subdir):
    out = []
    for line in text.splitlines():
        if line.startswith("#"):
            line = "#" + line
        # Images are written next to their RESULTS.md.
        line = re.sub(r"\]\((?!http)([^)/]+\.png)\)", rf"]({subdir}/\1)", line)
        out.append(line)
    return "\n".join(out)


def main():
    readme = HERE / "README.md"
    text = readme.read_text()
    body = []
    for rel, title in PARTS:
        f = HERE / rel
        body += [f"### {title}", ""]
        if f.exists():
            body += [f"From `bench/{rel}`:", "", demote(f.read_text(), str(pathlib.Path(rel).parent)), ""]
        else:
            body += ["(not measured yet)", ""]
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    readme.write_text(text[:start] + "\n\n" + "\n".join(body) + "\n" + text[end:])
    print(f"updated {readme}")


if __name__ == "__main__":
    main()
