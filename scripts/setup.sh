#!/usr/bin/env bash
# Installs every Debian package rocemu needs (idempotent), then configures and
# builds the release tree in build/.
# Usage: scripts/setup.sh [--no-build] [-Doption=value ...]
#   -D...: meson options for build/ (scripts/test.sh turns off
#          sanitizer_suites there; ns3 is enabled unless given).
set -euo pipefail
cd "$(dirname "$0")/.."
no_build=0
meson_opts=()
for a in "$@"; do
  case $a in
    --no-build) no_build=1 ;;
    -D*) meson_opts+=("$a") ;;
    *) echo "setup.sh: unknown argument $a" >&2; exit 2 ;;
  esac
done

mapfile -t pkgs < <(grep -v '^\s*#' scripts/packages.txt | sed '/^\s*$/d')
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${#missing[@]} package(s): ${missing[*]}"
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  # tshark asks whether non-root users may capture; answer no, non-interactively.
  echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The rxe peer's guest image for scripts/interop.sh (kernel + initramfs,
# cached in /var/tmp/rxe-peer; a no-op once built), so that the interop
# tests spend their time limit on interoperating, not on building it.
peer=${ROCEMU_PEER_DIR:-../shared/peer}
if [[ -x $peer/build-guest.sh && $(id -u) -eq 0 ]]; then
  "$peer/build-guest.sh" >/dev/null || echo "setup: the rxe peer image did not build (interop tests will say so)" >&2
fi

# Hugepages for the daemons (docs/daemon.md, "Hugepages"): as root, and
# where the kernel lets us, reserve 2 MiB pages and mount hugetlbfs.
# Anywhere else (not root, a container's read-only /proc/sys) the daemons'
# eal.hugepages: auto runs them with --no-huge, so this never fails.
scripts/hugepages.sh reserve || true

((no_build)) && exit 0

# ns3/ (rocemu-ns3 and its tests in the sim suite) is on: libns3-dev is in
# packages.txt, so a tree without it is a broken install, not an option
# quietly off. -Dns3=disabled (or auto) on the command line still wins.
[[ " ${meson_opts[*]} " == *" -Dns3="* ]] || meson_opts+=(-Dns3=enabled)

if [[ -f build/build.ninja ]]; then
  meson setup --reconfigure build "${meson_opts[@]}" >/dev/null
else
  meson setup build "${meson_opts[@]}" >/dev/null
fi
ninja -C build
# rocemu-run: unmodified RDMA programs over rocemu (the drop-in
# libibverbs.so.1 in build/verbs/ibverbs). Linked into /usr/local/bin when
# we may; scripts/rocemu-run works from the checkout in any case.
if [[ $(id -u) -eq 0 && -d /usr/local/bin ]]; then
  ln -sf "$PWD/scripts/rocemu-run" /usr/local/bin/rocemu-run
fi
