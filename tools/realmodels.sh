#!/usr/bin/env bash
# Real trained TF.js graph models and TF.js itself, for running them as a reference for
# Kestrel (tools/tfjs/tfjs_run.js). Everything goes to a cache folder outside git:
#
#   CACHE=${KESTREL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kestrel}
#   $CACHE/npm/human-3.3.6/package/models/     @vladmandic/human 3.3.6's models (MoveNet,
#                                              BlazeFace, CenterNet, FaceMesh, emotion, ...)
#   $CACHE/npm/face-api-1.7.15/package/        @vladmandic/face-api 1.7.15 (demo/ images, model/)
#   $CACHE/tfjs/node_modules/                  TF.js 4.22.0: tfjs-core, tfjs-converter and the
#                                              cpu and wasm backends (no native addon)
#
# The two model packages come through `npm pack NAME@VERSION` and are checked against the
# sha512 integrity pinned below (computed here from the tarball, and npm's own report must
# agree) before they are extracted; a marker file written after a verified extraction makes
# later runs skip them. TF.js is tools/tfjs/package.json + package-lock.json (the lock carries
# every package's integrity), installed with `npm ci --ignore-scripts` in $CACHE/tfjs/ whenever
# the lock or package.json differs from the copy stored there by the last install.
#
#   tools/realmodels.sh            fetch what is missing (progress on stderr)
#   tools/realmodels.sh --print    the same, then KEY=path lines on stdout, for eval:
#                                  eval "$(tools/realmodels.sh --print)"
#       HUMAN_MODELS FACEAPI_DIR FACEAPI_MODELS FACEAPI_DEMO TFJS_NODE_MODULES TFJS_RUN
#
# Needs node and npm (tools/deps.sh group realmodels: Debian's nodejs and npm) and the npm
# registry. Timings (2-vCPU Intel Xeon): cold (empty cache) 8-9 s, about the same with an
# empty ~/.npm; warm (nothing to fetch) 0.01 s. The cache takes about 160 MB.
set -euo pipefail

HUMAN_VERSION=3.3.6
HUMAN_INTEGRITY='sha512-Nr5mPfq1gQ+uKeXY5uM3Fj8UxvF5CEh2s6txM5wRThqaW0mF9huooOuZSrT8hhGho0hGaXLFdAwfD/2+teCv6A=='
FACEAPI_VERSION=1.7.15
FACEAPI_INTEGRITY='sha512-WDMmK3CfNLo8jylWqMoQgf4nIst3M0fzx1dnac96wv/dvMTN4DxC/Pq1DGtduDk1lktCamQ3MIDXFnvrdHTXDw=='

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${KESTREL_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/kestrel}

usage() {
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'
}

PRINT=0
for arg in "$@"; do
  case "$arg" in
    --print) PRINT=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "realmodels.sh: unknown argument '$arg' (--print, --help)" >&2; exit 2 ;;
  esac
done

log() { echo "realmodels.sh: $*" >&2; }
die() { echo "realmodels.sh: $*" >&2; exit 1; }

for tool in node npm; do
  command -v "$tool" >/dev/null 2>&1 ||
    die "'$tool' not found: install Debian's nodejs and npm (apt-get install nodejs npm; tools/deps.sh group realmodels)"
done

mkdir -p "$CACHE/npm" "$CACHE/tfjs"
# One run at a time per cache.
exec 9>"$CACHE/.realmodels.lock"
if command -v flock >/dev/null 2>&1; then flock 9; fi

# sha512 of a file as npm writes integrity: "sha512-" + base64 of the raw digest.
sha512_integrity() {
  node -e '
    const h = require("crypto").createHash("sha512");
    h.update(require("fs").readFileSync(process.argv[1]));
    process.stdout.write("sha512-" + h.digest("base64"));' "$1"
}

# fetch_package NAME VERSION INTEGRITY: $CACHE/npm/<name without scope>-<version>/package/
fetch_package() {
  local name=$1 version=$2 integrity=$3
  local short=${name##*/}
  local dir=$CACHE/npm/$short-$version
  local marker=$dir/.kestrel-verified
  if [ -f "$marker" ] && [ "$(cat "$marker")" = "$integrity" ] && [ -f "$dir/package/package.json" ]; then
    return 0
  fi
  log "fetching $name@$version"
  rm -rf "$dir"
  local tmp
  tmp=$(mktemp -d "$CACHE/npm/.fetch-$short.XXXXXX")
  # shellcheck disable=SC2064  # expand now: the trap must remove this $tmp
  trap "rm -rf '$tmp'" EXIT
  (cd "$tmp" && npm pack "$name@$version" --json --pack-destination "$tmp" --ignore-scripts \
      --no-audit --no-fund >"$tmp/pack.json") ||
    die "npm pack $name@$version failed (is the npm registry reachable?)"
  local fields filename npm_integrity
  fields=$(node -e '
    const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    const e = Array.isArray(r) ? r[0] : r;
    if (!e || !e.filename) { console.error("no filename in npm pack --json output"); process.exit(1); }
    process.stdout.write(e.filename + "\n" + (e.integrity || ""));' "$tmp/pack.json") ||
    die "$name@$version: cannot read npm pack's report ($tmp/pack.json)"
  filename=$(printf '%s\n' "$fields" | sed -n 1p)
  npm_integrity=$(printf '%s\n' "$fields" | sed -n 2p)
  local tarball=$tmp/$filename
  [ -f "$tarball" ] || die "$name@$version: npm pack reported $filename but wrote no such file"
  local actual
  actual=$(sha512_integrity "$tarball")
  if [ "$actual" != "$integrity" ]; then
    rm -f "$tarball"
    die "$name@$version: tarball sha512 does not match the pinned integrity; tarball deleted.
  pinned:   $integrity
  computed: $actual"
  fi
  if [ "$npm_integrity" != "$integrity" ]; then
    rm -f "$tarball"
    die "$name@$version: npm reports integrity '$npm_integrity', pinned is '$integrity'; tarball deleted"
  fi
  mkdir "$tmp/x"
  tar -xzf "$tarball" -C "$tmp/x" --no-same-owner --no-same-permissions
  [ -f "$tmp/x/package/package.json" ] || die "$name@$version: the tarball has no package/package.json"
  mv "$tmp/x" "$dir"
  printf '%s\n' "$integrity" >"$marker"
  rm -rf "$tmp"
  trap - EXIT
  log "$name@$version verified ($integrity) and extracted into $dir"
}

# TF.js into $CACHE/tfjs/node_modules when the lock (or package.json) changed.
install_tfjs() {
  local src=$ROOT/tools/tfjs dst=$CACHE/tfjs
  if [ ! -f "$src/package.json" ] || [ ! -f "$src/package-lock.json" ]; then
    die "tools/tfjs/package.json or package-lock.json is missing"
  fi
  if cmp -s "$src/package-lock.json" "$dst/.installed-package-lock.json" &&
     cmp -s "$src/package.json" "$dst/.installed-package.json" &&
     [ -f "$dst/node_modules/@tensorflow/tfjs-core/package.json" ]; then
    return 0
  fi
  log "installing TF.js from tools/tfjs/package-lock.json into $dst (npm ci)"
  rm -f "$dst/.installed-package-lock.json" "$dst/.installed-package.json"
  cp "$src/package.json" "$src/package-lock.json" "$dst/"
  (cd "$dst" && npm ci --ignore-scripts --no-audit --no-fund >&2) || die "npm ci in $dst failed"
  # shellcheck disable=SC2016  # JavaScript, not shell
  node -e '
    const p = process.argv[1] + "/node_modules/@tensorflow/";
    for (const m of ["tfjs-core", "tfjs-converter", "tfjs-backend-cpu", "tfjs-backend-wasm"]) {
      const v = require(p + m + "/package.json").version;
      if (v !== "4.22.0") { console.error(`${m} is ${v}, not 4.22.0`); process.exit(1); }
    }' "$dst" || die "TF.js in $dst is not the pinned 4.22.0"
  cp "$src/package-lock.json" "$dst/.installed-package-lock.json"
  cp "$src/package.json" "$dst/.installed-package.json"
}

fetch_package @vladmandic/human "$HUMAN_VERSION" "$HUMAN_INTEGRITY"
fetch_package @vladmandic/face-api "$FACEAPI_VERSION" "$FACEAPI_INTEGRITY"
install_tfjs

if [ "$PRINT" = 1 ]; then
  faceapi=$CACHE/npm/face-api-$FACEAPI_VERSION/package
  printf '%s=%q\n' \
    HUMAN_MODELS "$CACHE/npm/human-$HUMAN_VERSION/package/models" \
    FACEAPI_DIR "$faceapi" \
    FACEAPI_MODELS "$faceapi/model" \
    FACEAPI_DEMO "$faceapi/demo" \
    TFJS_NODE_MODULES "$CACHE/tfjs/node_modules" \
    TFJS_RUN "$ROOT/tools/tfjs/tfjs_run.js"
fi
