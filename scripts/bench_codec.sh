#!/usr/bin/env bash
# Builds and runs the codec benchmark (tests/bench/codec_bench.cc) and prints
# its figures with the ratios against memcpy and zlib's crc32 measured in the
# same run, and the issue's targets; then the sender's copy-then-ICRC
# against the copy and CRC in one walk (issue 37), in ns per frame. Rates
# use CPU time (one core).
# usage: scripts/bench_codec.sh [BUILD_DIR]        (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
. scripts/bench_lib.sh
bench_prepare bench_codec "$build" tests/bench/codec_bench
bench_out
bench_json "$out" "$build/tests/bench/codec_bench" --benchmark_repetitions=5 \
  --benchmark_report_aggregates_only=true --benchmark_min_time=0.2
/usr/bin/python3 - "$out" <<'PY'
import json, sys
rows, send = {}, {}
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    if b.get("aggregate_name") != "median":
        continue
    name, *args = b["run_name"].split("/")
    if name.startswith("BM_Send"):  # BM_Send.../payload:N/cold:C
        a = dict(x.split(":") for x in args)
        send[(name[3:], int(a["payload"]), a["cold"] == "1")] = b
    else:
        rows[(name[3:], int(args[0]))] = b
def gbs(n, s): return rows[(n, s)]["bytes_per_second"] / 1e9
def mpps(n, s): return rows[(n, s)]["items_per_second"] / 1e6
names = ["ParseVerify", "ParseNoIcrc", "BuildIcrc", "VerifyIcrc", "Memcpy",
         "ZlibCrc32", "IsalCrc32"]
print("median of 5, GB/s = 1e9 bytes/s of whole frames; Mpps = 1e6 frames/s")
print("%-12s" % "payload" + "".join("%20s" % n for n in names))
for s in (64, 1024, 4096):
    print("%-12s" % ("%d B" % s) + "".join(
        "%9.2f GB/s %5.1fM" % (gbs(n, s), mpps(n, s)) for n in names))
print()
print("ratios          ParseVerify/memcpy  VerifyIcrc/zlib  ParseVerify/zlib"
      "  BuildIcrc/zlib  VerifyIcrc/isal")
for s in (64, 1024, 4096):
    print("  %4d B        %12.3f %16.2f %17.2f %15.2f %16.2f" % (
        s, gbs("ParseVerify", s) / gbs("Memcpy", s),
        gbs("VerifyIcrc", s) / gbs("ZlibCrc32", s),
        gbs("ParseVerify", s) / gbs("ZlibCrc32", s),
        gbs("BuildIcrc", s) / gbs("ZlibCrc32", s),
        gbs("VerifyIcrc", s) / gbs("IsalCrc32", s)))
print()
print("sender, WRITE ONLY frame: copy then ICRC vs one walk (icrc_copy.h), "
      "ns per frame")
print("%-10s %-10s %14s %14s %8s" % ("payload", "source", "copy+ICRC",
                                    "one walk", "ratio"))
for s in (64, 1024, 4096):
    for cold in (False, True):
        a = send[("SendCopyThenIcrc", s, cold)]
        b = send[("SendCopyFusedIcrc", s, cold)]
        ns = lambda r: 1e9 / r["items_per_second"]
        print("%-10s %-10s %14.1f %14.1f %8.3f" % (
            "%d B" % s, "cold" if cold else "in cache", ns(a), ns(b),
            ns(b) / ns(a)))
print()
def target(what, got, want, unit):
    print("target %-44s %8.2f %-5s (>= %g) %s" % (
        what, got, unit, want, "MET" if got >= want else
        "MISSED by %.0f%%" % (100 * (1 - got / want))))
target("ICRC+verify, 4 KiB payload (VerifyIcrc)", gbs("VerifyIcrc", 4096), 20, "GB/s")
target("parse+verify, 4 KiB payload (ParseVerify)", gbs("ParseVerify", 4096), 20, "GB/s")
target("ICRC+verify 4 KiB vs zlib crc32", gbs("VerifyIcrc", 4096) / gbs("ZlibCrc32", 4096), 5, "x")
target("parse+verify, 64 B payload", mpps("ParseVerify", 64), 20, "Mpps")
PY
