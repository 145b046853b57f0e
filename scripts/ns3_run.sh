#!/bin/sh
# Runs one fabric scenario in ns-3 (build/ns3/rocemu-ns3) and plots it.
#   scripts/ns3_run.sh OUT_DIR [rocemu-ns3 flags...]
# e.g. scripts/ns3_run.sh /tmp/ft --topology="fattree k=4 rate=100G" \
#        --cdf=websearch --load=0.3 --duration=2ms --dcqcn=hpcc
# OUT_DIR gets the tool's outputs (summary, flows.csv, slowdown CSVs; with
# --sample, series.csv) and, when gnuplot is installed, slowdown.png (FCT
# slowdown p50/p95/p99 by flow-size percentile) and series.png. The build
# tree is $BUILD (default build). docs/ns3.md explains every flag.
set -eu
[ $# -ge 1 ] || { echo "usage: $0 OUT_DIR [rocemu-ns3 flags...]" >&2; exit 2; }
out=$1
shift
bin="${BUILD:-build}/ns3/rocemu-ns3"
[ -x "$bin" ] || { echo "no $bin: build it (ninja -C ${BUILD:-build} ns3/rocemu-ns3)" >&2; exit 2; }
mkdir -p "$out"
"$bin" --out="$out" "$@"
command -v gnuplot >/dev/null || { echo "gnuplot not installed: CSV only" >&2; exit 0; }

if [ "$(wc -l < "$out/slowdown_by_percentile.csv")" -gt 1 ]; then
  gnuplot <<GP
set datafile separator ','
set terminal pngcairo size 900,560
set output '$out/slowdown.png'
set title "FCT slowdown by flow size (bins of equal flow count)"
set logscale xy
set xlabel 'flow size (bytes, largest in bin)'
set ylabel 'FCT slowdown'
set key top left
set grid
plot '$out/slowdown_by_percentile.csv' using 2:4 with linespoints title 'p50', \
     '' using 2:5 with linespoints title 'p95', \
     '' using 2:6 with linespoints title 'p99'
GP
fi

if [ -f "$out/series.csv" ]; then
  cols=$(head -1 "$out/series.csv" | tr ',' '\n' | grep -c '_kb$' || true)
  flows=$(head -1 "$out/series.csv" | tr ',' '\n' | grep -c '_gbps$' || true)
  gnuplot <<GP
set datafile separator ','
set terminal pngcairo size 900,700
set output '$out/series.png'
set multiplot layout 2,1
set key outside right
set ylabel 'queue (KB)'
plot for [i=2:$((cols + 1))] '$out/series.csv' using 1:i with lines title columnhead(i)
set xlabel 'time (us)'
set ylabel 'Gb/s'
if ($flows > 0) plot for [i=$((cols + 2)):$((cols + 1 + flows))] '$out/series.csv' using 1:i with lines title columnhead(i)
unset multiplot
GP
fi
echo "outputs in $out/"
