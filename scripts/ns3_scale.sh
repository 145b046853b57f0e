#!/bin/sh
# Scale of rocemu-ns3 (docs/performance.md, "rocemu-ns3: fabric scale"):
# fat-trees of 16 to 8192 hosts at 100 Gb/s, 30 % web search load with
# DCQCN (hpcc preset), each run for a fixed virtual time; prints one
# markdown row per fabric: events per CPU second, CPU and wall seconds per
# simulated millisecond, peak memory, memory per host and per QP.
#   scripts/ns3_scale.sh [BUILD_DIR] [OUT_DIR] [SIZES]
# SIZES (default "16 128 1024 4096") picks rows: 16, 128, 1024, 4096, 8192.
# The 4096- and 8192-host rows take tens of CPU minutes and several GB.
set -eu
build=${1:-build}
out=${2:-ns3-scale}
sizes=${3:-16 128 1024 4096}
bin="$build/ns3/rocemu-ns3"
[ -x "$bin" ] || { echo "no $bin" >&2; exit 2; }
mkdir -p "$out"
common="--cdf=websearch --load=0.3 --dcqcn=hpcc --kmin=400K --kmax=1600K \
 --pmax=0.2 --red_reference_rate=100G --pfc_dynamic_shift=3 --mtu=1024 \
 --idle_connections=20000"
echo "| hosts | switches | topology | virtual time | flows started | events | events/s (CPU) | CPU s per simulated ms | wall s per simulated ms | VmHWM | per host | per idle QP | load average |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for n in $sizes; do
  case $n in
    16) topo="fattree k=4 rate=100G delay=1us"; t=2ms ;;
    128) topo="fattree k=8 rate=100G delay=1us"; t=1ms ;;
    1024) topo="fattree k=16 rate=100G delay=1us"; t=500us ;;
    4096) topo="fattree k=16 hosts_per_edge=32 rate=100G fabric_rate=400G delay=1us"; t=250us ;;
    8192) topo="fattree k=32 rate=100G delay=1us"; t=100us ;;
    *) echo "unknown size $n" >&2; exit 2 ;;
  esac
  dir="$out/h$n"
  mkdir -p "$dir"
  load=$(cut -d' ' -f1 /proc/loadavg)
  # shellcheck disable=SC2086
  "$bin" --topology="$topo" $common --duration="$t" --deadline="$t" \
    --out="$dir" > "$dir/stdout.txt"
  python3 - "$dir/summary.json" "$t" "$load" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
ms = j["virtual_ms"]
per_host = (j["rss_built_kb"] - j["rss_before_kb"]) / j["hosts"]
per_qp = (j["rss_idle_kb"] - j["rss_built_kb"]) * 1024 / max(1, j["idle_qps"])
print("| %d | %d | %s | %s | %d | %.3g | %.0f k | %.1f | %.1f | %.2f GB | %.1f KB | %.0f B | %s |" % (
    j["hosts"], j["switches"], j["topology"].split(" (")[0], sys.argv[2],
    j["flows"], j["events"], j["events"] / j["cpu_s"] / 1e3, j["cpu_s"] / ms,
    j["wall_s"] / ms, j["peak_rss_kb"] / 1e6, per_host, per_qp, sys.argv[3]))
PY
done
