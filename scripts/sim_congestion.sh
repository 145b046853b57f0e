#!/bin/sh
# Runs issue 4's congestion scenarios on the simulated network and plots them.
#   scripts/sim_congestion.sh [BUILD_DIR] [OUT_DIR] [MODE]
# BUILD_DIR (default build) must hold tests/sim/congestion_scenarios; OUT_DIR
# (default sim-congestion) gets one CSV per scenario and PNG plots (gnuplot);
# MODE is the DCQCN mode, nvidia (default) or paper.
set -eu
build=${1:-build}
out=${2:-sim-congestion}
mode=${3:-nvidia}
bin="$build/tests/sim/congestion_scenarios"
[ -x "$bin" ] || { echo "no $bin: build it first (ninja -C $build)" >&2; exit 2; }
mkdir -p "$out"
"$bin" --out="$out" --mode="$mode" | tee "$out/summary.txt"
command -v gnuplot >/dev/null || { echo "gnuplot not installed: CSV only" >&2; exit 0; }

plot_long() {  # $1 scenario, $2 flows
  cols=""
  i=0
  while [ $i -lt "$2" ]; do
    cols="$cols '$out/$1.csv' using 1:$((i + 2)) with lines title 'flow $i',"
    i=$((i + 1))
  done
  gnuplot <<GP
set datafile separator ','
set terminal pngcairo size 900,600
set output '$out/$1.png'
set multiplot layout 2,1 title '$1: $2 RC WRITE flows, 25 Gb/s bottleneck, DCQCN $mode'
set ylabel 'Gb/s (per 50 us)'
set key outside right
plot ${cols%,}
set xlabel 'time (us)'
set ylabel 'queue (KB)'
set y2label 'PFC frames (cumulative)'
set y2tics
plot '$out/$1.csv' using 1:'queue_kb' with lines title 'bottleneck queue', \
     '$out/$1.csv' using 1:'pfc_frames' axes x1y2 with steps title 'PFC frames'
unset multiplot
GP
}
plot_long long2 2
plot_long long4 4

gnuplot <<GP
set datafile separator ','
set terminal pngcairo size 900,600
set output '$out/incast.png'
set multiplot layout 2,1 title '8:1 incast, 2 MB per sender, 25 Gb/s ($mode)'
set ylabel 'queue (KB)'
set key outside right
plot '$out/incast_pfc.csv' using 1:'queue_kb' with lines title 'PFC only', \
     '$out/incast_none.csv' using 1:'queue_kb' with lines title 'neither', \
     '$out/incast_both.csv' using 1:'queue_kb' with lines title 'PFC+DCQCN'
set xlabel 'time (us)'
set ylabel 'PFC frames / drops (cumulative)'
plot '$out/incast_pfc.csv' using 1:'pfc_frames' with steps title 'PFC frames, PFC only', \
     '$out/incast_both.csv' using 1:'pfc_frames' with steps title 'PFC frames, PFC+DCQCN', \
     '$out/incast_none.csv' using 1:'drops' with steps title 'drops, neither'
unset multiplot
GP
echo "plots in $out/"
