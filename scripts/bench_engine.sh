#!/usr/bin/env bash
# Per-message cost of the RNIC engines next to the codec's own cost of the
# same frames, measured in the same run (issue 14's target: engine + codec
# per 64 B message <= 2x the codec's parse + build of its frames).
#   BM_Engine{Send,Write}64B  two nic::Rnic wired directly (no simulator):
#                             post, requester, responder, completer, ACKs,
#                             CQ polls, 64 signaled 64 B messages in flight
#   BM_EngineWrite64B16Qp     the same over 16 QPs, 64 in flight on each
#   BM_Engine*NoRecorder      Send/Write 64B without the QPs' flight
#                             recorders: their cost per frame (issue 36)
#   BM_Codec{Send,Write}64B   BuildRoceFrame + ParseFrame (every check) of
#   BM_CodecAck               the data frame / the ACK frame
# Ceiling per message = codec(data frame) + ACKs per message x codec(ACK).
# Also prints heap bytes per idle RC QP (BM_IdleQpBytes), the 64 K QP and
# 1 M MR scale figures (time, heap and resident bytes to create them, lookup
# cost at that size next to 16 objects and to a flat_hash_map of the same
# keys; tests/nic/mr_bench). CPU time, median of 5. For a figure that does
# not move with the host's load, scripts/bench_engine_ir.sh counts the
# instructions per message of the same engine benchmarks.
# usage: scripts/bench_engine.sh [BUILD_DIR]        (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
. scripts/bench_lib.sh
bench_prepare bench_engine "$build" tests/sim/matrix_bench tests/nic/mr_bench
bench_out
bench_json "$out" "$build/tests/sim/matrix_bench" \
  --benchmark_filter='Engine|Codec|IdleQp|QpLookup' \
  --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  --benchmark_enable_random_interleaving=true 2>/dev/null
# One-shot scale runs, each in a fresh process so that resident bytes are
# what the objects touch.
bench_json "$out.qps" "$build/tests/sim/matrix_bench" \
  --benchmark_filter='Create64KQps' 2>/dev/null
bench_json "$out.mrs" "$build/tests/nic/mr_bench" \
  --benchmark_filter='Register1MMrs' 2>/dev/null
bench_json "$out.mrl" "$build/tests/nic/mr_bench" --benchmark_filter='/16$|/1048576$' \
  --benchmark_repetitions=5 --benchmark_report_aggregates_only=true 2>/dev/null
/usr/bin/python3 - "$out" <<'PY'
import json, sys
def load(path):  # {name without BM_: the median row (or the only row)}
    return {b["run_name"][3:]: b for b in json.load(open(path))["benchmarks"]
            if b.get("aggregate_name", "median") == "median"}
med = load(sys.argv[1])
def ns_per(name, key): return med[name][key]  # inverted rate of 1e-9 x count: ns
ack = ns_per("CodecAck", "ns_per_frame")
print("%-12s %10s %16s %13s %14s %12s %8s" % (
    "message", "engine ns/msg", "codec data ns", "codec ACK ns",
    "ACKs per msg", "ceiling ns", "ratio"))
for op, qps in (("Send", ""), ("Write", ""), ("Write", "16Qp")):
    e = med["Engine%s64B%s" % (op, qps)]
    eng = e["ns_per_msg"]
    data = ns_per("Codec%s64B" % op, "ns_per_frame")
    acks = e["acks_per_msg"]
    ceil = data + acks * ack
    label = "%s 64B%s" % (op.upper(), " x16" if qps else "")
    print("%-12s %10.1f %16.1f %13.1f %14.3f %12.1f %7.2fx  (%.2f Mmsg/s per core)" % (
        label, eng, data, ack, acks, ceil, eng / ceil, e["msgs_per_s"] / 1e6))
print()
for op in ("Send", "Write"):
    on, off = med["Engine%s64B" % op], med["Engine%s64BNoRecorder" % op]
    d = on["ns_per_frame"] - off["ns_per_frame"]
    print("flight recorder, %s 64B: %.1f ns/frame with, %.1f without: "
          "%+.1f ns (%+.1f %%)" % (op.upper(), on["ns_per_frame"],
                                   off["ns_per_frame"], d,
                                   100 * d / off["ns_per_frame"]))
print()
for name, b in sorted(med.items()):
    if name.startswith("IdleQpBytes"):
        print("idle RC QP, send/recv depth %-4s heap %7.0f B  (sizeof Qp %d, SendWqe %d)" % (
            name.split("/")[1], b["heap_bytes_per_qp"], b["sizeof_qp"],
            b["sizeof_send_wqe"]))
print()
q = load(sys.argv[1] + ".qps")["Create64KQps/iterations:1"]
print("64 K RC QPs (depth 16, 1 SGE): %.1f us per create, heap %.0f B, resident %.0f B per QP"
      % (q["create_ns_per_qp"] / 1e3, q["heap_bytes_per_qp"], q["rss_bytes_per_qp"]))
print("  QP lookup by number: %.1f ns among 16, %.1f ns among 64 K"
      % (med["QpLookup/16"]["cpu_time"], med["QpLookup/65536"]["cpu_time"]))
m = load(sys.argv[1] + ".mrs")["Register1MMrs/iterations:1"]
print("1 M MRs: %.0f ns per registration, heap %.0f B, resident %.0f B per MR"
      % (m["create_ns_per_mr"], m["heap_bytes_per_mr"], m["rss_bytes_per_mr"]))
l = load(sys.argv[1] + ".mrl")
print("  CheckRemote (key, PD, bounds, access): %.1f ns among 16, %.1f ns among 1 M;"
      " flat_hash_map lookup of the same keys %.1f / %.1f ns"
      % (l["CheckRemote/16"]["cpu_time"], l["CheckRemote/1048576"]["cpu_time"],
         l["FlatHashMapLookup/16"]["cpu_time"], l["FlatHashMapLookup/1048576"]["cpu_time"]))
PY
