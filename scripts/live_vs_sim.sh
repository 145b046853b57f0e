#!/bin/sh
# The live incast beside the simulator's run of the same scenario (issue
# 13): N sender daemons -> one receiver daemon's 1 Gb/s congestion point
# (tests/emulator/net_incast_test.py, sampled by `rocemu-ctl watch` every
# 50 ms), then tests/sim/congestion_scenarios --scenario=liveN (same links,
# MTU, RED, DCQCN parameters, message size and WRITEs in flight, sampled
# every 50 ms of virtual time), plotted side by side on the same scales.
#   sudo scripts/live_vs_sim.sh [BUILD_DIR] [OUT_DIR] [N]
# N is 2 (default) or 3; OUT_DIR (default live-vs-sim) gets the CSVs and
# live_vs_sim<N>.png.
set -eu
build=${1:-build}
out=${2:-live-vs-sim}
n=${3:-2}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out/watch"
python3 "$root/tests/emulator/net_incast_test.py" "$build/emulator/rocemud" \
  "$build/verbs/ibverbs" "$n" --watch "$out/watch" | tee "$out/live.txt"
# The live flows run 8 s (net_incast_test.py's SECONDS).
"$build/tests/sim/congestion_scenarios" --out="$out" --scenario="live$n" \
  --live_ms=8000 | tee "$out/sim.txt"
senders=""
i=0
while [ $i -lt "$n" ]; do senders="$senders $out/watch/s$i.csv"; i=$((i + 1)); done
# shellcheck disable=SC2086
"$root/scripts/plot_watch.sh" --sim "$out/live$n.csv" "$out/live_vs_sim$n.png" \
  "$out/watch/r.csv" $senders
