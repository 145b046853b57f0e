#!/usr/bin/env bash
# soak.sh - two rocemud daemons joined by memif, each injecting faults into
# what it receives (loss, reorder, duplication, corruption), and Debian's
# stock RDMA programs (ibv_rc_pingpong -c, ib_{write,read,send,atomic}_bw,
# ib_send_lat, rping -V) over the drop-in libraries in a loop for a bounded
# time (scripts/soak.py says what is checked). Reports every program's runs,
# both daemons' RSS sampled every 30 s after the warm-up, the fault,
# recovery and error counters. Fails (exit 1) on any failed run, a daemon
# exit, a completion in error, a client or QP left behind, or RSS growth
# above --max-growth-kib. Needs root (namespaces).
#
#   sudo scripts/soak.sh [--minutes N] [--build DIR] [--max-growth-kib K]
#                        [--drop P] [--reorder P] [--duplicate P]
#                        [--corrupt P] [--no-faults]
# Defaults: 10 minutes, faults 0.01 0.01 0.01 0.001. --build: relative to
# the checkout, or absolute (a copy of the tree's emulator/rocemud,
# verbs/ibverbs and verbs/rdmacm keeps a long soak apart from rebuilds).
set -euo pipefail
minutes=10
build=build
growth=4096
drop=0.01 reorder=0.01 duplicate=0.01 corrupt=0.001
usage="usage: $0 [--minutes N] [--build DIR] [--max-growth-kib K] [--drop P] [--reorder P] [--duplicate P] [--corrupt P] [--no-faults]"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --minutes) minutes="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --max-growth-kib) growth="$2"; shift 2 ;;
    --drop) drop="$2"; shift 2 ;;
    --reorder) reorder="$2"; shift 2 ;;
    --duplicate) duplicate="$2"; shift 2 ;;
    --corrupt) corrupt="$2"; shift 2 ;;
    --no-faults) drop=0 reorder=0 duplicate=0 corrupt=0; shift ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
root="$(cd "$(dirname "$0")/.." && pwd)"
[[ $build == /* ]] && b="$build" || b="$root/$build"
for f in emulator/rocemud verbs/ibverbs/libibverbs.so.1 verbs/rdmacm/librdmacm.so.1; do
  [[ -e "$b/$f" ]] || { echo "soak: $b/$f not built" >&2; exit 2; }
done
exec python3 "$root/scripts/soak.py" "$b/emulator/rocemud" "$b/verbs/ibverbs" \
  "$b/verbs/rdmacm" "$minutes" "$growth" "$drop" "$reorder" "$duplicate" \
  "$corrupt"
