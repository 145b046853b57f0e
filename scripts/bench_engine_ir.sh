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
# Per message = instructions of the benchmark function minus its set up
# (the pair, and the two wires' 32 zeroed 9 KiB buffers each, which one
# iteration does not amortise), over the messages completed (post, requester, responder, completer,
# ACKs and CQ polls of both RNICs). Then the codec's build + parse of one
# frame (BM_Codec*, per call), and the engines over the codec's ceiling
# (data frame + ACKs per message x ACK frame) in instructions: issue 37's
# "engines <= 1.5x the codec" in a figure the load does not move.
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
setup = ir(r"BenchPair\(") + ir(r"Wire::Wire\(\)")
per = (ir(r"Engine\(benchmark::State") - setup) / messages
acks = bench.get("acks_per_msg", 0.0)
print("%-24s %8.0f instructions per message (%d messages, %.3f ACKs each)" % (
    name, per, messages, acks))
open(js + ".row", "w").write("%s %.1f %.4f\n" % (name, per, acks))
PY
done
# The codec's instructions per frame, counted the same way: build + parse
# of one frame, per call (callgrind's call counts), so the estimation runs
# Google Benchmark makes before the measured one do not matter.
for b in BM_CodecWrite64B BM_CodecSend64B BM_CodecAck; do
  valgrind --tool=callgrind --callgrind-out-file="$out.$b.cg" \
    "$build/tests/sim/matrix_bench" --benchmark_filter="^$b\$" \
    --benchmark_min_time=0.05 >/dev/null 2>&1
  callgrind_annotate --auto=yes --show-percs=no "$out.$b.cg" \
    "$PWD/tests/sim/matrix_bench.cc" >"$out.$b.txt" 2>/dev/null
done
/usr/bin/python3 - "$out" <<'PY'
import re, sys
out = sys.argv[1]
def per_frame(b):
    total = 0.0
    for fn in ("BuildRoceFrame", "ParseFrame"):
        for line in open(f"{out}.{b}.txt"):
            m = re.match(r"\s*([\d,]+)\s+=> .*\b%s\(.*\((\d[\d,]*)x\)\s*$" % fn, line)
            if m:
                total += int(m.group(1).replace(",", "")) / int(m.group(2).replace(",", ""))
                break
        else:
            sys.exit(f"{b}: no call of {fn} in the callgrind output")
    return total
codec = {op: per_frame(f"BM_Codec{op}") for op in ("Write64B", "Send64B", "Ack")}
print()
print("codec (build + parse) per frame: WRITE 64 B %.0f, SEND 64 B %.0f, ACK %.0f instructions"
      % (codec["Write64B"], codec["Send64B"], codec["Ack"]))
for name, op in (("BM_EngineWrite64B", "Write64B"), ("BM_EngineSend64B", "Send64B"),
                 ("BM_EngineWrite64B16Qp", "Write64B")):
    _, per, acks = open(f"{out}.{name}.json.row").read().split()
    ceil = codec[op] + float(acks) * codec["Ack"]
    print("%-24s engines / codec = %.0f / %.0f = %.2fx in instructions"
          % (name, float(per), ceil, float(per) / ceil))
PY
