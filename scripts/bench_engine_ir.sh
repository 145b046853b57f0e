#!/usr/bin/env bash
# Instructions per message through the RNIC engines, counted by callgrind:
# the figure to compare two builds by on a machine whose timings move by
# +-40 % from run to run (docs/performance.md). Counts are exact, not
# sampled; they do not see cache misses, so a change that only moves memory
# needs bench_engine.sh (time) as well.
#   BM_EngineWrite64B       one RC QP, 64 B WRITEs, 64 in flight
#   BM_EngineSend64B        the same with SENDs (receive WQEs, their CQEs)
#   BM_EngineWrite64B16Qp   16 QPs, 64 in flight each (perftest -q 16)
#   BM_Engine*NoRecorder    the first two without the QPs' flight
#                           recorders: the difference is what recording
#                           every frame costs (issue 36)
# Per message = instructions of the benchmark function minus the pair's set
# up, over the messages completed (post, requester, responder, completer,
# ACKs and CQ polls of both RNICs).
# usage: scripts/bench_engine_ir.sh [BUILD_DIR]        (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
. scripts/bench_lib.sh
# valgrind is in scripts/packages.txt: the project's installer puts it in
# (as root or through sudo) when this machine has not run setup yet.
command -v valgrind >/dev/null || scripts/setup.sh --no-build
bench_prepare bench_engine_ir "$build" tests/sim/matrix_bench
bench_out
for b in BM_EngineWrite64B BM_EngineWrite64BNoRecorder BM_EngineSend64B \
         BM_EngineSend64BNoRecorder BM_EngineWrite64B16Qp; do
  # One iteration (4096 messages) is far above the minimum time under
  # callgrind; the JSON says how many ran.
  valgrind --tool=callgrind --callgrind-out-file="$out.$b.cg" \
    "$build/tests/sim/matrix_bench" --benchmark_filter="^$b\$" \
    --benchmark_min_time=0.01 --benchmark_out="$out.$b.json" \
    --benchmark_out_format=json >/dev/null 2>&1
  callgrind_annotate --inclusive=yes "$out.$b.cg" >"$out.$b.txt" 2>/dev/null
  /usr/bin/python3 - "$b" "$out.$b.txt" "$out.$b.json" <<'PY'
import json, re, sys
name, text, js = sys.argv[1:]
def ir(pattern):
    for line in open(text):
        if re.search(pattern, line):
            return int(line.split()[0].replace(",", ""))
    sys.exit(f"{name}: no '{pattern}' in the callgrind output")
bench = [b for b in json.load(open(js))["benchmarks"] if b["run_name"] == name][0]
messages = bench["iterations"] * 4096
per = (ir(r"Engine\(benchmark::State") - ir(r"BenchPair\(")) / messages
print("%-24s %8.0f instructions per message (%d messages)" % (name, per, messages))
PY
done
