#!/usr/bin/env bash
# bench_lcores.sh - what eal.lcores buys (docs/daemon.md, "More than one
# lcore"): two rocemud over memif, each with eal.lcores 1 and then 2 (lcores
# 0 and 0-1), Debian's ib_write_bw over the drop-in, 64 B WRITEs:
#   one pair:  one server process on A, one client on B;
#   two pairs: two such pairs at once (their processes land on different
#              shards with 2 lcores), the message rates summed.
# The ceiling, measured in the same run: raw DPDK frames over the same
# memif (emulator/port/bench_pktio.cc, RX on lcore 1, TX on lcore 0) at the
# 138 B frame a 64 B WRITE puts on the wire; each rate is also given as a
# fraction of it. The split: packets each shard of daemon B sent and
# received over the last round's run (one pair, then two; RNIC counters
# per shard). Rounds alternate the two settings; medians.
#
#   sudo scripts/bench_lcores.sh [--build DIR] [--rounds N] [--iters N] [--append]
set -euo pipefail
build=build rounds=3 iters=300000 append=0
. "$(dirname "$0")/bench_lib.sh"
bench_options "[--build DIR] [--rounds N] [--iters N] [--append]" "$@"
root="$(cd "$(dirname "$0")/.." && pwd)"
exec python3 - "$root" "$build" "$rounds" "$iters" "$append" "$*" <<'PY'
import os, statistics, sys, threading, time
root, build = sys.argv[1], sys.argv[2]
rounds, iters, append = int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1"
sys.path.insert(0, os.path.join(root, "tests", "ibverbs"))
sys.path.insert(0, os.path.join(root, "tests", "emulator"))
sys.path.insert(0, os.path.join(root, "scripts"))
import bench_memif
import netns_util
import stock_tools_test as st

rocemud = os.path.join(root, build, "emulator", "rocemud")
pktio = os.path.join(root, build, "emulator", "rocemu-bench-pktio")
dropin = os.path.join(root, build, "verbs", "ibverbs")
FRAME = 14 + 20 + 8 + 12 + 16 + 64 + 4  # a 64 B WRITE ONLY frame


def msg_rate(out):
    """perftest's MsgRate[Mpps] column of the 64 B row."""
    rows = st.perftest_rows(out)
    return rows[64][-1] if 64 in rows else None


def run_setting(lcores):
    r = st.Run(rocemud, dropin)
    if lcores > 1:
        r.extra_config = {n: {"eal": {"lcores": lcores}} for n in "ab"}
    res = {}
    try:
        ns, a, b = st.setup(r, "memif")
        argv = ["ib_write_bw", "-d", st.DEV, "-x", "0", "-s", "64", "-n",
                str(iters)]
        src, sout, crc, cout = r.pair(ns, a, b, argv, timeout=300)
        res["one"] = msg_rate(cout) if src == 0 and crc == 0 else None
        outs = [None, None]

        def go(i):
            outs[i] = r.pair(ns, a, b, argv, timeout=300)

        ts = [threading.Thread(target=go, args=(i,)) for i in range(2)]
        for t in ts:
            t.start()
            time.sleep(0.3)
        for t in ts:
            t.join()
        rates = [msg_rate(o[3]) for o in outs if o[0] == 0 and o[2] == 0]
        res["two"] = sum(rates) if len(rates) == 2 and all(rates) else None
        c = netns_util.control(b["ctl"], {"cmd": "counters"})["ports"]["p0"]
        res["split"] = [(0, c["rnic"]["sent_pkts"], c["rnic"]["rcvd_pkts"])] + \
            [(s["shard"], s["rnic"]["sent_pkts"], s["rnic"]["rcvd_pkts"])
             for s in c.get("shards", [])]
        res["ns"] = ns
        res["ceiling"] = bench_memif.rate(pktio, ns, FRAME, f"lc{lcores}", 3)["mpps"]
    finally:
        r.cleanup()
    return res


if os.geteuid() != 0:
    sys.exit("bench_lcores.sh needs root (namespaces)")
load = open("/proc/loadavg").read().split()[:3]
results = {1: [], 2: []}
for rnd in range(rounds):
    for lcores in ((1, 2) if rnd % 2 == 0 else (2, 1)):
        res = run_setting(lcores)
        results[lcores].append(res)
        print(f"round {rnd + 1}, lcores {lcores}: one pair {res['one']} Mmsg/s, "
              f"two pairs {res['two']} Mmsg/s, ceiling {res['ceiling']:.3f} "
              f"Mpps, B's shards (shard, sent, rcvd) {res['split']}",
              flush=True)


def med(lcores, key):
    v = [x[key] for x in results[lcores] if x[key]]
    return statistics.median(v) if v else float("nan")


ceil = statistics.median([x["ceiling"] for x in results[1] + results[2]
                          if x["ceiling"]] or [float("nan")])
table = ("| eal.lcores | one pair Mmsg/s | / ceiling | two pairs Mmsg/s "
         "| / ceiling | daemon B: packets sent/received per shard, whole "
         "run |\n"
         "|---|---|---|---|---|---|\n")
for lcores in (1, 2):
    split = results[lcores][-1]["split"]
    table += (f"| {lcores} | {med(lcores, 'one'):.3f} | "
              f"{med(lcores, 'one') / ceil:.3f} | {med(lcores, 'two'):.3f} | "
              f"{med(lcores, 'two') / ceil:.3f} | "
              + ", ".join(f"shard {k}: {s}/{rv}" for k, s, rv in split) + " |\n")
cmd = f"sudo scripts/bench_lcores.sh --rounds {rounds} --iters {iters}"
summary = (f"Ceiling (raw memif, {FRAME} B frames): {ceil:.3f} Mpps. "
           f"{rounds} rounds, ib_write_bw -s 64 -n {iters}; "
           f"{os.cpu_count()} cores, load {' '.join(load)} at start.\n")
print(table + "\n" + summary)
if append:
    with open(os.path.join(root, "docs", "performance.md"), "a") as f:
        f.write(f"\n## eal.lcores: one and two RNIC shards per daemon "
                f"({time.strftime('%Y-%m-%d')})\n\n    {cmd.strip()}\n\n"
                + table + "\n" + summary)
PY
