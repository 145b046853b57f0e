#!/usr/bin/env bash
# Builds and runs the memory-access benchmark (tests/bench/memory_bench.cc)
# and prints a markdown table: a message of each size moved packet by packet
# (4096-byte payloads) between a region and a frame buffer, out of the region
# (requester gather) and into it (responder scatter), for a memfd-mapped
# region of the daemon (host) and another process's memory reached with
# process_vm_readv/writev (process), as ratios to memcpy of the same pieces
# measured in the same run. Rates use CPU time of the copying thread (the
# kernel's time in process_vm_* included).
# usage: scripts/bench_memory.sh [BUILD_DIR]      (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
. scripts/bench_lib.sh
bench_prepare bench_memory "$build" tests/bench/memory_bench
bench_out
bench_json "$out" "$build/tests/bench/memory_bench" --benchmark_repetitions=3 \
  --benchmark_report_aggregates_only=true --benchmark_min_time=0.1
/usr/bin/python3 - "$out" <<'PY'
import json, sys
rows = {}
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    if b.get("aggregate_name") != "median":
        continue
    kind, direction, size = b["run_name"].split("/")
    rows[(kind, direction, int(size))] = b["bytes_per_second"] / 1e9
def size_name(s):
    return "%d MiB" % (s >> 20) if s >= 1 << 20 else (
        "%d KiB" % (s >> 10) if s >= 1024 else "%d B" % s)
print("median of 3; GB/s = 1e9 bytes/s; ratio = rate / memcpy of the same pieces")
print()
print("| message | memcpy out | host out | process out | memcpy in | host in | process in |")
print("|---:|---:|---:|---:|---:|---:|---:|")
for s in sorted({k[2] for k in rows}):
    cells = [size_name(s)]
    for d in ("out", "in"):
        m = rows[("Memcpy", d, s)]
        cells.append("%.2f GB/s" % m)
        for k in ("Host", "Process"):
            r = rows[(k, d, s)]
            cells.append("%.2f GB/s (%.2f)" % (r, r / m))
    print("| " + " | ".join(cells) + " |")
print()
# One process_vm call per packet: the 64 B rows are almost all call cost.
for d in ("out", "in"):
    print("process %-3s: %.2f us per packet at 64 B, %.2f us per 4 KiB packet" % (
        d, 64 / rows[("Process", d, 64)] / 1e3,
        4096 / rows[("Process", d, 4096)] / 1e3))
PY
