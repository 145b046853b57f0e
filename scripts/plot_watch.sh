#!/bin/sh
# Plots a live congestion run sampled by `rocemu-ctl watch` (tidy CSV:
# time_s,port,qpn,metric,value), the live counterpart of
# scripts/sim_congestion.sh's plots.
#   scripts/plot_watch.sh OUT.png RECEIVER.csv SENDER.csv...
# Top: every sender QP's DCQCN rate (current_rate_mbps) and its goodput
# (slope of sent_bytes). Bottom: the receiver's congestion-point depth and
# its cumulative CE marks, CNPs sent and PFC frames sent.
# net_incast_test.py --watch DIR writes such CSVs (DIR/r.csv, DIR/s*.csv).
# --sim SIM.csv puts the simulator's run of the same scenario beside it, on
# the same scales (a congestion_scenarios CSV: per flow goodput and DCQCN
# rate, bottleneck queue; scripts/live_vs_sim.sh makes both).
set -eu
sim=""
if [ "${1:-}" = "--sim" ]; then sim=$2; shift 2; fi
[ $# -ge 2 ] || { echo "usage: $0 [--sim SIM.csv] OUT.png RECEIVER.csv SENDER.csv..." >&2; exit 2; }
out=$1
recv=$2
shift 2
command -v gnuplot >/dev/null || { echo "gnuplot not installed (gnuplot-nox)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Receiver: one row per sample with the port-wide series.
awk -F, 'NR > 1 && $3 == "" {
  v[$1, $4] = $5; t[$1] = 1
} END {
  for (s in t) print s, v[s, "cp_depth_bytes"] + 0, v[s, "cp_ecn_marked"] + 0,
      v[s, "np_cnp_sent"] + 0, v[s, "cp_tx_prio3_pause"] + 0
}' "$recv" | sort -g > "$tmp/recv.dat"

# Senders: per QP, rate and goodput (Mb/s from the sent_bytes slope).
plots=""
n=0
for f in "$@"; do
  name=$(basename "$f" .csv)
  awk -F, -v dir="$tmp" -v name="$name" 'NR > 1 && $3 != "" {
    key = $3
    if ($4 == "current_rate_mbps") rate[key, $1] = $5
    if ($4 == "sent_bytes") bytes[key, $1] = $5
    times[key, $1] = 1; qps[key] = 1; ts[$1] = 1
  } END {
    for (q in qps) {
      file = dir "/" name "_" q ".dat"
      prev_t = ""; prev_b = 0
      cmd = "sort -g > " file
      for (k in times) {
        split(k, p, SUBSEP)
        if (p[1] != q) continue
        print p[2], (rate[q, p[2]] == "" ? "NaN" : rate[q, p[2]]), bytes[q, p[2]] + 0 | cmd
      }
      close(cmd)
    }
  }' "$f"
  for d in "$tmp/${name}"_*.dat; do
    [ -s "$d" ] || continue
    # goodput: difference of cumulative bytes over difference of time
    awk 'NR > 1 && $1 > pt { printf "%s %s %.3f\n", $1, $2, ($3 - pb) * 8 / ($1 - pt) / 1e6 }
         { pt = $1; pb = $3 }' "$d" > "$d.g"
    qp=$(basename "$d" .dat)
    plots="$plots '$d.g' using 1:2 with lines title '$qp DCQCN rate', '$d.g' using 1:3 with lines dashtype 2 title '$qp goodput',"
    n=$((n + 1))
  done
done
[ "$n" -gt 0 ] || { echo "no sender QP samples in $*" >&2; exit 1; }

live_rates="${plots%,}"
live_queue="'$tmp/recv.dat' using 1:(\$2/1024) with lines title 'queue depth', \
     '$tmp/recv.dat' using 1:3 axes x1y2 with lines title 'CE marked', \
     '$tmp/recv.dat' using 1:4 axes x1y2 with lines title 'CNPs sent', \
     '$tmp/recv.dat' using 1:5 axes x1y2 with steps title 'PFC frames sent'"
if [ -z "$sim" ]; then
  gnuplot <<GP
set terminal pngcairo size 1000,700 noenhanced
set output '$out'
set multiplot layout 2,1 title 'live: $n sender QP(s) into one rocemud congestion point'
set ylabel 'Mb/s'
set key outside right
plot $live_rates
set xlabel 'time (s)'
set ylabel 'queue (KB)'
set y2label 'cumulative'
set y2tics
plot $live_queue
unset multiplot
GP
  echo "$out"
  exit 0
fi

# Beside the simulator: the same axes, rates in Mb/s, queue in KB.
flows=$(head -1 "$sim" | tr ',' '\n' | grep -c '_rp_gbps$')
sim_rates=""
i=0
while [ $i -lt "$flows" ]; do
  sim_rates="$sim_rates '$sim' using (\$1/1e6):(column('flow${i}_rp_gbps')*1000) with lines title 'flow $i DCQCN rate', '$sim' using (\$1/1e6):(column('flow${i}_gbps')*1000) with lines dashtype 2 title 'flow $i goodput',"
  i=$((i + 1))
done
qmax=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "queue_kb") c = i; next }
                $c * 1000 / 1024 > m { m = $c * 1000 / 1024 } END { print m + 0 }' "$sim")
qmax=$(awk -v m="$qmax" '$2 / 1024 > m { m = $2 / 1024 } END { printf "%d", m * 1.1 + 1 }' "$tmp/recv.dat")
gnuplot <<GP
set datafile separator whitespace
set terminal pngcairo size 1600,800 noenhanced
set output '$out'
set multiplot layout 2,2 title 'the same incast: live (left, $n sender QPs, rocemud) and simulated (right, $flows flows, tests/simnet)'
set key outside right
set ylabel 'Mb/s'
set yrange [0:1100]
set title 'live'
plot $live_rates
set title 'simulated'
set datafile separator ','
plot ${sim_rates%,}
set datafile separator whitespace
set title ''
set xlabel 'time (s)'
set ylabel 'queue (KB)'
set yrange [0:$qmax]
set y2label 'cumulative'
set y2tics
plot $live_queue
unset y2tics
unset y2label
set datafile separator ','
plot '$sim' using (\$1/1e6):(column('queue_kb')*1000/1024) with lines title 'queue depth'
unset multiplot
GP
echo "$out"
