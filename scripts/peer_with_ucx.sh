#!/usr/bin/env bash
# Makes a copy of the rxe peer harness (../shared/peer) whose guest image
# also holds UCX (ucx_perftest, ucx_info and the modules UCX loads), for
# scripts/interop.sh's stock_ucx_* cases. The shared harness is not
# touched; the copy builds its image in its own directory.
#
#   scripts/peer_with_ucx.sh DIR     (root; then, as printed:)
#   ROCEMU_PEER_DIR=DIR RXE_PEER_BUILD=DIR/build scripts/interop.sh stock_ucx_put_lat_rxe_server ...
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${1:?usage: peer_with_ucx.sh DIR}
PEER=${ROCEMU_PEER_DIR:-$ROOT/../shared/peer}
command -v ucx_perftest >/dev/null || "$ROOT/scripts/setup.sh" --no-build
mkdir -p "$DIR"
cp -a "$PEER"/. "$DIR"/
# interop.sh finds the oracle beside the harness, as in ../shared.
[ -e "$DIR/../oracle" ] || ln -s "$(cd "$PEER/.." && pwd)/oracle" "$DIR/../oracle"
python3 - "$DIR/build-guest.sh" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
mark = "# glibc dlopen()s libgcc_s"
add = ("for p in /usr/bin/ucx_perftest /usr/bin/ucx_info "
       "/usr/lib/x86_64-linux-gnu/ucx/*.so.0; do\n    copy_elf \"$p\"\ndone\n")
if "ucx_perftest" not in s:
    s = s.replace(mark, add + mark, 1)
open(p, "w").write(s)
PY
RXE_PEER_BUILD="$DIR/build" "$DIR/build-guest.sh"
echo "ROCEMU_PEER_DIR=$DIR RXE_PEER_BUILD=$DIR/build scripts/interop.sh stock_ucx_put_lat_rxe_server stock_ucx_put_lat_rxe_client stock_ucx_put_bw_rxe_server stock_ucx_put_bw_rxe_client"
