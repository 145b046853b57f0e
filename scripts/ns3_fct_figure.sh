#!/bin/sh
# The fat-tree FCT-slowdown figure of docs/ns3.md: DCQCN (hpcc preset) on
# the HPCC paper's setting (320 hosts at 100 Gb/s, 1 us links, web search
# flow sizes, 30 % and 50 % load, MTU 1 KB, RED 400 KB / 1600 KB / 0.2 per
# 100 Gb/s, 32 MB switch buffers with dynamic PFC thresholds), as a k=8
# fat-tree with 10 hosts per edge switch and 250 Gb/s switch links (1:1).
#   scripts/ns3_fct_figure.sh [BUILD_DIR] [OUT_DIR] [DURATION] [--plot-only]
# DURATION (default 5ms) is how long flows keep arriving; the runs go on
# until every flow has finished. Each load takes ~5-10 CPU minutes here.
# OUT_DIR/load30, OUT_DIR/load50 get the tool's outputs and
# OUT_DIR/fct_websearch.png the figure.
set -eu
build=${1:-build}
out=${2:-ns3-fct}
duration=${3:-5ms}
plot_only=${4:-}
bin="$build/ns3/rocemu-ns3"
if [ "$plot_only" != "--plot-only" ]; then
  [ -x "$bin" ] || { echo "no $bin" >&2; exit 2; }
  for load in 30 50; do
    mkdir -p "$out/load$load"
    "$bin" --topology="fattree k=8 hosts_per_edge=10 rate=100G fabric_rate=250G delay=1us" \
      --cdf=websearch --load=0.$load --duration="$duration" --deadline=500ms \
      --dcqcn=hpcc --kmin=400K --kmax=1600K --pmax=0.2 --red_reference_rate=100G \
      --pfc_dynamic_shift=3 --buffer=32MB --mtu=1024 --message=64K --outstanding=8 \
      --bins=20 --out="$out/load$load" | tee "$out/load$load/stdout.txt"
  done
fi
command -v gnuplot >/dev/null || { echo "gnuplot not installed" >&2; exit 0; }
gnuplot <<GP
set datafile separator ','
set terminal pngcairo size 1100,460 font ',10'
set output '$out/fct_websearch.png'
set multiplot layout 1,2 title "rocemu RNICs in ns-3: DCQCN, web search, 320-host fat-tree (100 Gb/s hosts, 1 us links)"
set logscale x
set xrange [40:4e7]
set yrange [0.8:20]
set logscale y
set grid
set xlabel 'flow size (bytes, largest in each 5 % of flows)'
set ylabel 'FCT slowdown'
set key top left
do for [load in "30 50"] {
  set title load.' % load'
  f = '$out/load'.load.'/slowdown_by_percentile.csv'
  plot f using 2:4 with linespoints pt 7 ps 0.6 title 'median', \
       f using 2:5 with linespoints pt 5 ps 0.6 title '95th percentile', \
       f using 2:6 with linespoints pt 9 ps 0.6 title '99th percentile'
}
unset multiplot
GP
echo "figure: $out/fct_websearch.png"
