#!/usr/bin/env bash
# netdev_cluster.sh - the netdev cluster test (tests/netdev/
# netdev_cluster_test.py) with more hosts than the default suite's 8: N
# network namespaces on one bridge, each with the kernel's address on eth0
# and its own `rocemud --netdev eth0`; all-to-all rping (N x (N - 1)
# connections), ib_write_bw -R around the ring, and no host's kernel seeing
# a RoCE frame. Each daemon takes ~60 MB and a share of the CPU while idle
# (it looks at its AF_XDP ring every 50 us to 0.8 ms): on 2 cores, 16
# hosts take about 3 minutes. Needs root.
#
#   sudo scripts/netdev_cluster.sh [--hosts N] [--build DIR]   (default 16)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
hosts=16
build=$root/build
while (($#)); do
  case "$1" in
    --hosts) hosts=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    *) echo "usage: $0 [--hosts N] [--build DIR]" >&2; exit 2 ;;
  esac
done
exec python3 "$root/tests/netdev/netdev_cluster_test.py" \
  "$build/emulator/rocemud" "$build/verbs/ibverbs" "$build/verbs/rdmacm" \
  --hosts="$hosts"
