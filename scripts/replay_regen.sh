#!/bin/sh
# Regenerates the replay cases' golden outputs (and the synthetic rc_lossy
# input) with the current build. Inspect the diff before committing it:
#   tshark -r captures/replay/CASE/golden.pcap
#   python3 ../shared/oracle/check_pcap.py captures/replay/CASE/golden.pcap
#   BUILD/emulator/tools/rocemu-decode captures/replay/CASE/golden.pcap
# Usage: scripts/replay_regen.sh [BUILD_DIR] [CASE...]   (default: build)
set -eu
cd "$(dirname "$0")/.."
build=${1:-build}
[ $# -gt 0 ] && shift
replay="$build/emulator/replay/rocemu-replay"
gen="$build/emulator/replay/replay-make-lossy"
ninja -C "$build" emulator/replay/rocemu-replay emulator/replay/replay-make-lossy >/dev/null
cases=${*:-$(ls captures/replay)}
for c in $cases; do
  dir="captures/replay/$c"
  [ -f "$dir/case.yaml" ] || continue
  if [ "$c" = rc_lossy ]; then
    "$gen" --out "$dir/input.pcap"
  fi
  "$replay" --case "$dir/case.yaml" --out "$dir/golden.pcap" \
    --summary "$dir/golden.json" >/dev/null
  echo "$c: $(grep -c . "$dir/golden.json") summary lines, golden.pcap $(wc -c <"$dir/golden.pcap") bytes"
done
