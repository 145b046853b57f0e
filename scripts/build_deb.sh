#!/usr/bin/env bash
# build_deb.sh - a Debian package of rocemu, as an operator installs it on
# each host of a cluster (`apt install ./rocemu_*.deb`, then `systemctl
# enable --now rocemud@eth0`). What `meson install` puts under /usr
# (installed targets only are built, in a release tree of their own):
#   /usr/bin/rocemud, rocemu-ctl, rocemu-run, rocemu-perf, rocemu-pingpong,
#     rocemu-decode, rocemu-replay, rocemu-codec-demo
#   /usr/lib/<multiarch>/rocemu/  the drop-in libibverbs.so.1 and
#     librdmacm.so.1 and the embedded module, apart from the system's
#     libraries (rocemu-run puts this directory first for what it runs)
#   /usr/lib/systemd/system/rocemud.service, rocemud@.service
#   /usr/share/rocemu/ (the documented sample config and examples),
#   /usr/share/doc/rocemu/
# and /etc/rocemu/rocemu.yaml (the sample, a conffile). Depends are what
# dpkg-shlibdeps finds for every ELF file (Debian 12's DPDK 22.11, Abseil,
# libbpf, libmnl ...).
#
#   scripts/build_deb.sh [--build DIR] [--out DIR]
#     --build DIR  the meson tree (default build-deb/; an existing tree is
#                  reconfigured to prefix /usr)
#     --out DIR    where the .deb goes (default: the checkout)
# Prints the package's path.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-deb
out=$root
while (($#)); do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "usage: $0 [--build DIR] [--out DIR]" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
arch=$(dpkg --print-architecture)
paths=(--prefix=/usr --libdir="lib/$multiarch" --sysconfdir=/etc)
if [[ -f $build/build.ninja ]]; then
  meson configure "$build" "${paths[@]}" >/dev/null
else
  meson setup "$build" "${paths[@]}" --buildtype=release \
    -Dsanitizer_suites=false -Drelease_suites=false >/dev/null
fi
build=$(cd "$build" && pwd)

# Build only what gets installed (not the tests).
mapfile -t targets < <(meson introspect "$build" --targets | python3 -c '
import json, os, sys
build = sys.argv[1]
for t in json.load(sys.stdin):
    if t["installed"]:
        for f in t["filename"]:
            print(os.path.relpath(f, build))' "$build")
ninja -C "$build" "${targets[@]}" >/dev/null

stage=$(mktemp -d)
work=$(mktemp -d)
trap 'rm -rf "$stage" "$work"' EXIT
meson install -C "$build" --no-rebuild --strip --destdir "$stage" --quiet
install -D -m 0644 "$root/config/rocemu.yaml" "$stage/etc/rocemu/rocemu.yaml"

version=$(meson introspect "$build" --projectinfo |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["version"])')
# Dependencies of every ELF file. The drop-in librdmacm needs the drop-in
# libibverbs.so.1 of this package, not the system's libibverbs1 (whose
# symbols file dpkg-shlibdeps would match by its soname).
mapfile -t elfs < <(find "$stage" -type f -exec sh -c \
  'head -c 4 "$1" | grep -q "ELF"' sh {} \; -print)
mkdir "$work/debian"
printf 'Source: rocemu\n\nPackage: rocemu\nArchitecture: any\n' \
  >"$work/debian/control"
depends=$(cd "$work" && dpkg-shlibdeps -O --ignore-missing-info -xlibibverbs1 \
  -S"$stage" -l"$stage/usr/lib/$multiarch/rocemu" "${elfs[@]}" 2>/dev/null |
  sed -n 's/^shlibs:Depends=//p')
if [[ -z $depends ]]; then
  echo "build_deb.sh: dpkg-shlibdeps found no dependencies" >&2
  exit 1
fi

mkdir "$stage/DEBIAN"
cat >"$stage/DEBIAN/control" <<EOF
Package: rocemu
Version: $version-1
Architecture: $arch
Maintainer: rocemu developers <rocemu@localhost>
Section: net
Priority: optional
Installed-Size: $(du -sk --exclude=DEBIAN "$stage" | cut -f1)
Depends: $depends
Recommends: ibverbs-utils, perftest, rdmacm-utils
Description: software RoCEv2 NIC: DPDK daemon and drop-in RDMA libraries
 rocemud behaves like an RDMA NIC: RoCEv2 with RC, UC and UD, the IBTA
 reliability rules, PFC, ECN and DCQCN, on DPDK ports or on a host's own
 network interface beside the kernel (rocemud@IFACE, as Soft-RoCE's
 "rdma link add"). Unmodified RDMA programs run over it through the
 drop-in libibverbs and librdmacm that rocemu-run puts in front of the
 system's.
EOF
echo /etc/rocemu/rocemu.yaml >"$stage/DEBIAN/conffiles"
cat >"$stage/DEBIAN/postinst" <<'EOF'
#!/bin/sh
set -e
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload >/dev/null || true
fi
EOF
cat >"$stage/DEBIAN/prerm" <<'EOF'
#!/bin/sh
set -e
# Removed or upgraded: the daemons stop (their bpf_links go with them).
if [ -d /run/systemd/system ]; then
  systemctl stop 'rocemud@*.service' rocemud.service >/dev/null 2>&1 || true
fi
EOF
cat >"$stage/DEBIAN/postrm" <<'EOF'
#!/bin/sh
set -e
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload >/dev/null || true
fi
EOF
chmod 0755 "$stage/DEBIAN/postinst" "$stage/DEBIAN/prerm" "$stage/DEBIAN/postrm"
deb="$out/rocemu_${version}-1_${arch}.deb"
dpkg-deb --build --root-owner-group "$stage" "$deb" >/dev/null
echo "$deb"
