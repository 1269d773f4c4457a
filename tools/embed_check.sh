#!/usr/bin/env bash
# Embedding, end to end: build Kestrel (build/embed), install it into a temporary
# prefix, check that the installed headers stand alone, build examples/robot_camera
# against the installed CMake package only and run it on a few frames, build and run
# a C program through pkg-config (dynamic-style and --static flags), then run the C API
# (c_api) and compiled-in model (embedded_model) tests.
#   tools/embed_check.sh [--deps-only|--configure-only] [BUILD_DIR]
#                                        (default build/embed, configured if new; the prefix
#                                        and work folder are removed at exit)
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/deps.sh
KESTREL_STOP=$(kestrel_stop_flag "${1:-}")
[ -z "$KESTREL_STOP" ] || shift
# Its build has the tests (test_c_api, test_embedded_model) and the converters on:
# kestrel-convert writes the --emit-c-array header. embed: pkg-config.
kestrel_install_deps core converters tests embed
kestrel_stop_after deps
JOBS=$(kestrel_jobs)
BUILD=${1:-build/embed}
PREFIX=$(mktemp -d /tmp/kestrel-prefix.XXXXXX)
WORK=$(mktemp -d /tmp/kestrel-embed.XXXXXX)
trap 'rm -rf "$PREFIX" "$WORK"' EXIT
start=$(date +%s)

echo "== build ($BUILD)"
# An existing build (tools/test.sh passes build/release) keeps its configuration.
[ -f "$BUILD/CMakeCache.txt" ] || cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DKESTREL_BUILD_BENCH=OFF >/dev/null
kestrel_stop_after configure
cmake --build "$BUILD" -j"$JOBS" --target kestrel kestrel-zoo kestrel-convert test_c_api test_embedded_model

echo "== install to $PREFIX"
cmake --install "$BUILD" --prefix "$PREFIX" >/dev/null
(cd "$PREFIX" && find . -type f | sort)
# Self-contained: every installed header compiles on its own against the prefix alone,
# and nothing refers to flatbuffers or to the build tree.
for h in "$PREFIX"/include/kestrel/*.h; do
  echo "#include \"kestrel/$(basename "$h")\"" | g++ -std=c++17 -fsyntax-only -Wall -Wextra -I"$PREFIX/include" -x c++ -
done
echo '#include "kestrel/c_api.h"' | gcc -std=c99 -pedantic -fsyntax-only -Wall -Wextra -I"$PREFIX/include" -x c -
if grep -rlE 'flatbuffers|kestrel_generated|FLATBUFFERS|/work/|'"$PWD" "$PREFIX/include" "$PREFIX/lib/cmake" "$PREFIX/lib/pkgconfig"; then
  echo "embed_check: the installed package refers to flatbuffers or the build tree (files above)" >&2
  exit 1
fi
echo "installed headers are self-contained"

echo "== models and frames"
"$BUILD/kestrel-zoo" mobilenet_ssd "$WORK/mobilenet_ssd.kst"
FRAMES=(models/fashion/samples/*.png)

echo "== examples/robot_camera against the installed package"
cmake -S examples/robot_camera -B "$WORK/robot" -DCMAKE_PREFIX_PATH="$PREFIX" >/dev/null
cmake --build "$WORK/robot" -j"$JOBS"
"$WORK/robot/robot_camera" --detector "$WORK/mobilenet_ssd.kst" --classifier models/fashion/fashion_onnx.kst \
  --frames 8 --det-threads 1 --cls-threads 1 "${FRAMES[@]}"

echo "== pkg-config consumer (C99)"
export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig"
echo "pkg-config --cflags --libs kestrel: $(pkg-config --cflags --libs kestrel)"
# shellcheck disable=SC2046  # the flags must split into words
gcc -std=c99 -Wall -Wextra examples/pkg_config/classify.c $(pkg-config --cflags --libs kestrel) -o "$WORK/classify"
# shellcheck disable=SC2046
gcc -std=c99 -Wall -Wextra examples/pkg_config/classify.c $(pkg-config --static --cflags --libs kestrel) -o "$WORK/classify_static"
"$WORK/classify" models/fashion/fashion_onnx.kst models/fashion/samples/00002_trouser.png
"$WORK/classify_static" models/fashion/fashion_onnx.kst models/fashion/samples/00000_ankle_boot.png

echo "== C API and compiled-in model tests"
ctest --test-dir "$BUILD" -R '^(c_api|embedded_model)$' --output-on-failure -V |
  sed -n 's/^[0-9][0-9]*: //p; /tests passed/p' | grep -vE '^(Test command|Working Directory|Test timeout)'
echo "== embed_check passed in $(($(date +%s) - start)) s"
