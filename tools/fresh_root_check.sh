#!/usr/bin/env bash
# Fresh Debian 12 root check: do the README's commands work on a bare machine with
# nothing installed but what they install themselves (tools/deps.sh)?
#
# Makes a minimal Debian 12 root (mmdebstrap --variant=minbase bookworm, cached as a
# tarball), copies in this checkout's tracked and untracked-not-ignored files (so
# uncommitted work is checked too) and ../shared if present, and runs inside it, as
# root, in a private mount and PID namespace (every mount and process goes with it):
#
#   demo deps        tools/demo.sh --deps-only        (apt-get update + install, no sudo)
#   demo configure   tools/demo.sh --configure-only
#   demo             tools/demo.sh                    (builds kestrel-run + kestrel-convert, runs)
#   test deps        tools/test.sh --deps-only
#   test configure   tools/test.sh --configure-only   (every cmake configure of the test
#                                                      command: release, fuzz, tsan, aarch64,
#                                                      armv7; no builds)
#
# Exits 1 naming the step that failed, with the end of its log; the full logs are in
# build/fresh_root/. Needs root (mount, chroot, unshare), network to deb.debian.org,
# about 3 GB in $TMPDIR (default /tmp; it checks for 5) and 0.8 GB in the cache.
#
#   tools/fresh_root_check.sh                  run the check
#   tools/fresh_root_check.sh --if-changed     the test command's stage: run only if the
#                                              inputs below differ from those recorded in
#                                              tools/fresh_root.stamp (every pass records
#                                              them there: commit it with the change);
#                                              KESTREL_FRESH_ROOT=always|never overrides
#   tools/fresh_root_check.sh --inputs-hash    print the inputs' hash
#   tools/fresh_root_check.sh --refresh        make the root tarball anew first
#
# Cache (KESTREL_CACHE_DIR, default ${XDG_CACHE_HOME:-$HOME/.cache}/kestrel; made when
# absent, so a clean machine runs cold): the minbase tarball, remade after 30 days, and
# the downloaded .debs (bind-mounted as the root's /var/cache/apt/archives; apt still
# fetches fresh package lists and checks every .deb against them, so a cached .deb
# changes the time, not the outcome). KESTREL_FRESH_ROOT_KEEP=1 keeps the root.
#
# Inputs (--if-changed): the package lists and the scripts that install and configure
# (tools/deps.sh, tools/demo.sh, this script, tools/caffe_random_weights.py, cmake/*),
# the lines of every CMakeLists.txt that look for or add something (find_*,
# enable_language, option, add_subdirectory, project), the install and cmake lines of
# tools/*.sh, and the set of <...> headers the C/C++ sources include. A change that
# needs a new package without touching any of these is caught by the next run.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
SELF="$REPO/tools/fresh_root_check.sh"
STAMP="$REPO/tools/fresh_root.stamp"
CACHE=${KESTREL_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/kestrel}
LOGDIR="$REPO/build/fresh_root"
SUITE=bookworm
# The root: Debian 12 main with its updates and security archives, as a fresh install.
SOURCES=("deb http://deb.debian.org/debian $SUITE main"
  "deb http://deb.debian.org/debian $SUITE-updates main"
  "deb http://deb.debian.org/debian-security $SUITE-security main")
# v1: the recipe (variant, suite, sources); change it when they change.
TARBALL="$CACHE/debian12-minbase-$(dpkg --print-architecture)-v1.tar"
TARBALL_MAX_DAYS=30
# Free space the root needs in $TMPDIR (it grew to 3.0 GB on 2026-11-26).
NEED_GB=5

# The steps run in the root: name | command (from the checkout's copy, /kestrel/main).
STEPS=("demo deps|tools/demo.sh --deps-only"
  "demo configure|tools/demo.sh --configure-only"
  "demo|tools/demo.sh"
  "test deps|tools/test.sh --deps-only"
  "test configure|tools/test.sh --configure-only")
# Steps whose output is also printed as it comes (the rest go to their logs only).
SHOW_STEP="demo"

die() {
  echo "fresh_root_check: $*" >&2
  exit 1
}

# The files the check copies: tracked and untracked-not-ignored, those that exist.
checkout_files() {
  git -C "$REPO" ls-files -co --exclude-standard -z | while IFS= read -r -d '' f; do
    if [ -e "$REPO/$f" ] || [ -L "$REPO/$f" ]; then printf '%s\0' "$f"; fi
  done
}

inputs_hash() {
  local files=() f
  mapfile -d '' files < <(checkout_files | LC_ALL=C sort -z)
  (
    cd "$REPO"
    for f in "${files[@]}"; do
      case "$f" in
        tools/fresh_root.stamp) ;;
        tools/deps.sh | tools/demo.sh | tools/fresh_root_check.sh | tools/caffe_random_weights.py | cmake/*)
          echo "== $f"; cat "$f" ;;
        CMakeLists.txt | */CMakeLists.txt)
          echo "== $f"
          grep -E 'find_(package|program|path|library)|pkg_check_modules|enable_language|option\(|add_subdirectory|project\(|cmake_minimum_required' "$f" || true ;;
        tools/*.sh)
          echo "== $f"
          grep -E 'kestrel_install_deps|kestrel_stop|cmake -S|-D[A-Z_]+=|C(XX)?=' "$f" || true ;;
      esac
    done
    echo "== includes"
    for f in "${files[@]}"; do
      case "$f" in *.c | *.cc | *.cpp | *.h | *.hpp) grep -hE '^[[:space:]]*#[[:space:]]*include[[:space:]]*<' "$f" || true ;; esac
    done | sed -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*</</; s/>.*/>/' | LC_ALL=C sort -u
  ) | sha256sum | cut -d' ' -f1
}

# ---------------------------------------------------------------------------------
# Inside the private namespaces (run through unshare by the host part below).
inside() {
  local root=$1
  mount -t proc proc "$root/proc"
  mount --rbind /dev "$root/dev"
  mount -t sysfs sysfs "$root/sys"
  mount --bind "$CACHE/apt-archives" "$root/var/cache/apt/archives"
  local i=0 step name cmd start rc log show summary=()
  for step in "${STEPS[@]}"; do
    i=$((i + 1))
    name=${step%%|*}
    cmd=${step#*|}
    log="$LOGDIR/$i-${name// /-}.log"
    echo "== [$(date +%T)] fresh root: $name ($cmd)"
    start=$SECONDS
    rc=0
    # A clean environment: what a root shell on a new machine has.
    show=0
    [ "$name" != "$SHOW_STEP" ] || show=1
    chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
      PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      ${NETWORK_CA:+NODE_EXTRA_CA_CERTS=$NETWORK_CA} \
      /bin/bash -c "cd /kestrel/main && $cmd" </dev/null 2>&1 |
      while IFS= read -r line; do
        printf '[%4d s] %s\n' $((SECONDS - start)) "$line"
        [ "$show" -eq 0 ] || printf '%s\n' "$line" >&3
      done 3>&1 >"$log" || rc=$?
    if [ "$rc" -ne 0 ]; then
      [ "$name" = "$SHOW_STEP" ] || tail -n 60 "$log"
      echo "fresh_root_check: FAILED at step '$name' ($cmd, exit $rc) in a fresh Debian 12 root;" \
        "full log $log" >&2
      exit 1
    fi
    summary+=("$(printf '%-15s %5d s' "$name" $((SECONDS - start)))")
  done
  # Drop the .debs that the archive no longer has (the cache keeps current ones only).
  chroot "$root" apt-get -qq autoclean >/dev/null 2>&1 || true
  printf '%s\n' "${summary[@]}" >"$LOGDIR/steps.txt"
}

if [ "${1:-}" = --inside ]; then
  inside "$2"
  exit 0
fi

# ---------------------------------------------------------------------------------
# Host part.
MODE=run
case "${1:-}" in
  "") ;;
  --if-changed) MODE=if-changed ;;
  --inputs-hash) inputs_hash; exit 0 ;;
  --refresh) MODE=refresh ;;
  *) echo "usage: $0 [--if-changed|--inputs-hash|--refresh]" >&2; exit 2 ;;
esac

HASH=$(inputs_hash)
if [ "$MODE" = if-changed ]; then
  recorded=$(sed -n 's/^inputs //p' "$STAMP" 2>/dev/null || true)
  case "${KESTREL_FRESH_ROOT:-}" in
    never) echo "fresh_root_check: skipped (KESTREL_FRESH_ROOT=never)"; exit 0 ;;
    always) ;;
    "")
      if [ "$HASH" = "$recorded" ]; then
        echo "fresh_root_check: skipped, inputs unchanged since the last pass ($(sed -n 's/^passed //p' "$STAMP"))"
        echo "  (tools/fresh_root.stamp; KESTREL_FRESH_ROOT=always tools/test.sh runs it anyway)"
        exit 0
      fi
      echo "fresh_root_check: inputs ${HASH:0:12} differ from the last pass's (${recorded:-none}): running" ;;
    *) die "KESTREL_FRESH_ROOT must be always or never" ;;
  esac
fi

[ "$(id -u)" -eq 0 ] || die "needs root (mount, chroot, unshare); KESTREL_FRESH_ROOT=never tools/test.sh skips it"
# shellcheck source=tools/deps.sh
source "$REPO/tools/deps.sh"
command -v mmdebstrap >/dev/null || kestrel_install_deps freshroot
for t in unshare setpriv chroot mount tar git; do command -v "$t" >/dev/null || die "$t not found"; done

t0=$SECONDS
mkdir -p "$CACHE/apt-archives/partial" "$LOGDIR"
rm -f "$LOGDIR"/*.log "$LOGDIR/steps.txt"
# One check at a time per cache (apt locks the archives directory).
exec 9>"$CACHE/fresh_root.lock"
flock 9

tarball_note="cached"
if [ "$MODE" = refresh ] || [ ! -f "$TARBALL" ] ||
  [ -n "$(find "$TARBALL" -mtime +"$TARBALL_MAX_DAYS" 2>/dev/null)" ]; then
  echo "== [$(date +%T)] making the minbase root: mmdebstrap --variant=minbase $SUITE"
  s=$SECONDS
  rm -f "$TARBALL.tmp.tar"
  mmdebstrap --quiet --variant=minbase --aptopt='Acquire::Retries "3"' "$SUITE" "$TARBALL.tmp.tar" "${SOURCES[@]}" ||
    die "mmdebstrap failed"
  mv "$TARBALL.tmp.tar" "$TARBALL"
  tarball_note="made in $((SECONDS - s)) s"
fi

TMP=${TMPDIR:-/tmp}
# Roots that a killed check left behind (its process gone, no mount left) go first.
for d in "$TMP"/kestrel-fresh-root.*; do
  [ -d "$d" ] || continue
  pid=$(cat "$d/pid" 2>/dev/null || echo 0)
  if { [ "$pid" -eq 0 ] || ! kill -0 "$pid" 2>/dev/null; } && ! grep -q " $d/" /proc/self/mountinfo; then
    echo "fresh_root_check: removing $d, left by an earlier check"
    rm -rf "$d"
  fi
done
avail_gb=$(df --output=avail -BG "$TMP" | tail -1 | tr -dc 0-9)
[ "$avail_gb" -ge "$NEED_GB" ] || die "$TMP has ${avail_gb} GB free; the root needs about $NEED_GB GB"
WORK=$(mktemp -d "$TMP/kestrel-fresh-root.XXXXXX")
echo $$ >"$WORK/pid"
ROOT="$WORK/root"
UNSHARE_PID=""
# unshare ignores SIGINT and SIGTERM while it waits; the namespace's first process
# (PID 1 there) takes SIGKILL, and the kernel then kills every process in it.
stop_inside() {
  [ -n "$UNSHARE_PID" ] || return 0
  local child
  child=$(pgrep -P "$UNSHARE_PID" || true)
  [ -z "$child" ] || kill -KILL "$child" 2>/dev/null || true
  wait "$UNSHARE_PID" 2>/dev/null || true
  UNSHARE_PID=""
}
cleanup() {
  local rc=$?
  stop_inside
  # The mounts live in the unshare'd namespace and are gone with it; never delete
  # through one that is somehow left.
  if grep -q " $WORK/" /proc/self/mountinfo; then
    umount -R "$ROOT"/{proc,dev,sys,var/cache/apt/archives} 2>/dev/null || true
  fi
  if grep -q " $WORK/" /proc/self/mountinfo; then
    echo "fresh_root_check: mounts left under $WORK; not removing it" >&2
  elif [ -n "${KESTREL_FRESH_ROOT_KEEP:-}" ]; then
    echo "fresh_root_check: root kept in $ROOT"
  else
    local s=$SECONDS
    rm -rf "$WORK"
    echo "fresh_root_check: root removed in $((SECONDS - s)) s"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "== [$(date +%T)] unpacking the root ($tarball_note) and copying the checkout"
mkdir -p "$ROOT"
tar -C "$ROOT" -xf "$TARBALL"
[ -z "$(find "$ROOT/var/lib/apt/lists" -mindepth 1 -maxdepth 1 ! -name lock ! -name partial)" ] ||
  die "the root has apt lists: not a fresh root"
mkdir -p "$ROOT/kestrel/main"
checkout_files | tar -C "$REPO" --null -T - -cf - | tar -C "$ROOT/kestrel/main" -xf -
SHARED=${KESTREL_SHARED:-$REPO/../shared}
if [ -d "$SHARED" ]; then
  mkdir -p "$ROOT/kestrel/shared"
  tar -C "$SHARED" -cf - . | tar -C "$ROOT/kestrel/shared" -xf -
fi
cp -L /etc/resolv.conf "$ROOT/etc/resolv.conf"
# The network's own certificate authorities (a host behind a TLS-inspecting proxy trusts
# one through /usr/local/share/ca-certificates): part of the machine's network, like
# resolv.conf, not of what the project installs. Without them npm, which the demo needs,
# cannot reach its registry from the root. A new machine on an open network has none.
NETWORK_CA=""
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  cat /usr/local/share/ca-certificates/*.crt >"$ROOT/etc/kestrel-network-ca.pem"
  NETWORK_CA=/etc/kestrel-network-ca.pem
fi
export NETWORK_CA
# A throwaway root: dpkg need not fsync each file it unpacks (Docker's Debian images
# did the same). It changes how long the installs take, not what they install.
echo force-unsafe-io >"$ROOT/etc/dpkg/dpkg.cfg.d/kestrel-fresh-root"
# apt downloads as _apt: the cached archives' partial/ must be its (the root's uid).
apt_uid=$(awk -F: '$1 == "_apt" { print $3 }' "$ROOT/etc/passwd")
chown "${apt_uid:-0}:0" "$CACHE/apt-archives/partial"
chmod 700 "$CACHE/apt-archives/partial"
debs_before=$(find "$CACHE/apt-archives" -maxdepth 1 -name '*.deb' | wc -l)
prep=$((SECONDS - t0))

export CACHE LOGDIR
# In the background, so that a signal reaches the traps above at once (wait returns);
# unshare dies with this script even if it is SIGKILLed (setpriv --pdeathsig), and the
# namespace with unshare (--kill-child).
setpriv --pdeathsig KILL -- unshare --mount --propagation private --pid --fork --kill-child -- \
  bash "$SELF" --inside "$ROOT" &
UNSHARE_PID=$!
rc=0
wait "$UNSHARE_PID" || rc=$?
UNSHARE_PID=""
[ "$rc" -eq 0 ] || exit "$rc"

debs_after=$(find "$CACHE/apt-archives" -maxdepth 1 -name '*.deb' | wc -l)
echo "== fresh root check passed in $((SECONDS - t0)) s (root tarball $tarball_note; preparing $prep s;" \
  "$debs_before .debs cached before, $debs_after after)"
sed 's/^/   /' "$LOGDIR/steps.txt"
{
  echo "# tools/fresh_root_check.sh: the inputs of the last passing check (--if-changed skips"
  echo "# the check while they are the same; commit this file with the change)."
  echo "inputs $HASH"
  echo "passed $(date -u +%F), $((SECONDS - t0)) s"
} >"$STAMP"
echo "fresh_root_check: inputs recorded in tools/fresh_root.stamp"
