#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The newcomer path on a truly fresh machine: `scripts/demo`, the README's first command, run as
# root in a new minimal Debian 12 (debootstrap --variant=minbase bookworm, with the updates and
# security suites an installed Debian 12 has), from a fresh clone of this repository's HEAD, with
# an empty environment and nothing installed: the packages' download and installation included.
# The host's /proc, /sys (BTF, the BPF file system, tracefs) and /dev are bind-mounted in a
# private mount namespace (gone when it ends). Prints the wall time, CPU time (/usr/bin/time),
# the load before and after, and the phases (apt update, apt install, configure, build, trace +
# explain) from `bash -x` lines time-stamped as they come. docs/performance.md, "Build time".
#
# usage: sudo bench/demo_fresh.sh [WORKDIR]   (default /tmp/gw-demo-fresh; needs debootstrap)
#   REUSE=1: keep WORKDIR/root's installed packages and rebuild only (a fresh build-demo/)
#   MIRROR=http://deb.debian.org/debian
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-/tmp/gw-demo-fresh}
base=$work/bookworm-base
root=$work/root
mirror=${MIRROR:-http://deb.debian.org/debian}
[ "$(id -u)" -eq 0 ] || { echo "demo_fresh: run as root (debootstrap, chroot, mount)" >&2; exit 2; }
mkdir -p "$work"
if [ ! -e "$base/.complete" ]; then
  rm -rf "$base"
  debootstrap --variant=minbase bookworm "$base" "$mirror" >"$work/debootstrap.log" 2>&1
  cat >"$base/etc/apt/sources.list" <<SRC
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb ${mirror%/debian}/debian-security bookworm-security main
SRC
  touch "$base/.complete"
fi
if [ -z "${REUSE:-}" ]; then
  rm -rf "$root"
  cp -a "$base" "$root"
  rm -f "$root/.complete"
  git clone -q "$src" "$root/root/gpuwhy"
else
  rm -rf "$root/root/gpuwhy/build-demo" "$root/root/gpuwhy/gpuwhy-demo.db"
fi
log=$work/demo.log
echo "load before: $(uptime)"
unshare --mount --propagation private bash -c '
  r=$1 log=$2
  mount --rbind /proc "$r/proc"; mount --rbind /sys "$r/sys"; mount --rbind /dev "$r/dev"
  /usr/bin/time -f "cpu: user %U s, sys %S s, wall %e s" -o "$r.time" \
    chroot "$r" /usr/bin/env -i HOME=/root TERM=xterm LANG=C.UTF-8 SHELLOPTS=xtrace \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    /bin/bash -c "cd /root/gpuwhy && scripts/demo" 2>&1 \
    | while IFS= read -r l; do printf "%s %s\n" "$EPOCHREALTIME" "$l"; done >"$log"
  exit "${PIPESTATUS[0]}"
' _ "$root" "$log" && rc=0 || rc=$?
echo "load after:  $(uptime)"
echo "scripts/demo exit status $rc; $(cat "$root.time")"
awk '
  NR == 1 { start = $1 }
  /\+ apt-get update/ { u = $1 }
  /\+ apt-get install/ { i = $1 }
  /\+ cmake -S/ { c = $1 }
  /\+ cmake --build/ { b = $1 }
  /\+ built=/ { d = $1 }
  { end = $1 }
  END {
    if (u) printf "apt update %.1f s, apt install %.1f s\n", i - u, c - i
    printf "configure %.1f s, build %.1f s, trace + explain %.1f s, total %.1f s\n",
           b - c, d - b, end - d, end - start
  }' "$log"
grep -E '^[0-9.]+ #[0-9]+ ' "$log" | head -2 | cut -d' ' -f2- || true
echo "log: $log"
