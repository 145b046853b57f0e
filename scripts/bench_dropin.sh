#!/usr/bin/env bash
# bench_dropin.sh - what the drop-in libibverbs costs: Debian's perftest
# (ib_write_lat, ib_send_lat, ib_write_bw) over the drop-in next to
# rocemu-perf (rocemu's own C API) for the same operation, same daemons,
# same run. Two rocemud over memif (lcores 0 and 1, idle_sleep_us 50), the
# server on daemon A and the client on daemon B, 64-byte messages,
# malloc'd buffers on both (as perftest allocates them), every WRITE of
# the rate test signaled on both (perftest -Q 1). Each round runs the two
# tools back to back, in alternating order; the table gives the medians
# over rounds and the drop-in's cost read per round (its ratio to the C API
# in the same round: latency p50, lower is better; rate, higher is better),
# so that load drifting between rounds cancels.
#
#   sudo scripts/bench_dropin.sh [--build DIR] [--rounds N] [--iters N] [--append]
set -euo pipefail
build=build rounds=5 iters=5000 append=0
. "$(dirname "$0")/bench_lib.sh"
bench_options "[--build DIR] [--rounds N] [--iters N] [--append]" "$@"
root="$(cd "$(dirname "$0")/.." && pwd)"
exec python3 - "$root" "$build" "$rounds" "$iters" "$append" "$*" <<'PY'
import json, os, re, statistics, subprocess, sys, time
root, build = sys.argv[1], sys.argv[2]
rounds, iters, append = int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1"
sys.path.insert(0, os.path.join(root, "tests", "ibverbs"))
sys.path.insert(0, os.path.join(root, "tests", "emulator"))
import stock_tools_test as st

rocemud = os.path.join(root, build, "emulator", "rocemud")
perf = os.path.join(root, build, "verbs", "tools", "rocemu-perf")
dropin = os.path.join(root, build, "verbs", "ibverbs")
r = st.Run(rocemud, dropin)
CASES = [  # (label, rocemu-perf test, perftest tool, metric)
    ("WRITE latency 64 B, p50 us", "write_lat", "ib_write_lat", "lat"),
    ("SEND latency 64 B, p50 us", "send_lat", "ib_send_lat", "lat"),
    ("WRITE 64 B, Mmsg/s", "write_bw", "ib_write_bw", "rate"),
]


def count(test):
    # A rate needs a run long enough to be a rate (5000 64 B WRITEs are
    # ~20 ms here): 20 times the latency tests' count.
    return iters * 20 if test.endswith("_bw") else iters


def rocemu_perf(ns, a, b, test):
    r.port += 1
    args = [test, "-s", "64", "-n", str(count(test)), "--json",
            "--memory=malloc",
            "-p", str(r.port)]
    srv = subprocess.Popen(["ip", "netns", "exec", ns, perf] + args +
                           ["-d", a["verbs"]], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    time.sleep(0.3)
    cli = subprocess.run(["ip", "netns", "exec", ns, perf] + args +
                         ["-d", b["verbs"], "127.0.0.1"], capture_output=True,
                         text=True, timeout=300)
    srv.communicate(timeout=60)
    res = [json.loads(l) for l in cli.stdout.splitlines() if l.startswith("{")]
    if not res:
        raise RuntimeError(cli.stdout + cli.stderr)
    j = res[-1]
    return j["p50_us"] if test.endswith("_lat") else j["msg_rate_mpps"]


def perftest(ns, a, b, tool):
    argv = [tool, "-d", st.DEV, "-x", "0", "-s", "64", "-n", str(count(tool))]
    if tool.endswith("_bw"):
        # The same work as rocemu-perf's: every WRITE signaled (perftest
        # signals one in 100 by default, a different pipeline, not a
        # different library).
        argv += ["-Q", "1"]
    src, sout, crc, cout = r.pair(ns, a, b, argv)
    rows = st.perftest_rows(cout)
    if crc != 0 or 64 not in rows:
        raise RuntimeError(cout[-1500:])
    row = rows[64]
    # lat: #bytes #iters t_min t_max t_typical ...; bw: ... MsgRate last
    return row[3] if tool.endswith("_lat") else row[-1]


out = {c[0]: {"rocemu-perf": [], "drop-in": []} for c in CASES}
with st.netns_util.failures_reported(r):
    ns, a, b = st.setup(r, "memif")
    for k in range(rounds):
        for label, test, tool, _ in CASES:
            # Which tool goes first alternates, so that neither always
            # meets the state the other leaves (a warm cache, a busy peer).
            runs = [("rocemu-perf", lambda: rocemu_perf(ns, a, b, test)),
                    ("drop-in", lambda: perftest(ns, a, b, tool))]
            for name, run in (runs if k % 2 == 0 else runs[::-1]):
                out[label][name].append(run())
if r.failures:
    sys.exit("bench failed: " + "; ".join(r.failures))
load = open("/proc/loadavg").read().split()[:3]
lines = [f"| operation | rocemu-perf (C API) | perftest over the drop-in | "
         f"cost, median of paired rounds | cost, middle half of rounds |",
         "|---|---|---|---|---|"]
for label, _, _, metric in CASES:
    ps, ds = out[label]["rocemu-perf"], out[label]["drop-in"]
    p, d = statistics.median(ps), statistics.median(ds)
    # The two tools of one round ran back to back under the same load, so
    # the drop-in's cost is read per round (its ratio to the C API in that
    # round) and summarised over rounds: load drifts between rounds then
    # cancel instead of landing on whichever tool they hit.
    costs = sorted((dk / pk - 1) if metric == "lat" else (1 - dk / pk)
                   for pk, dk in zip(ps, ds) if pk)
    q = len(costs) // 4
    mid = costs[q:len(costs) - q] or costs
    lines.append(f"| {label} | {p:.3f} | {d:.3f} | "
                 f"{statistics.median(costs) * 100:+.0f} % | "
                 f"{mid[0] * 100:+.0f} .. {mid[-1] * 100:+.0f} % |")
table = "\n".join(lines)
print(table)
print(f"rounds {rounds}, {iters} messages per latency run, {iters * 20} per "
      f"rate run; load average {' '.join(load)}")
if append:
    with open(os.path.join(root, "docs", "performance.md"), "a") as f:
        f.write(f"\n### The drop-in libibverbs vs rocemu-perf ({time.strftime('%Y-%m-%d')})\n\n"
                f"`sudo scripts/bench_dropin.sh --rounds {rounds} --iters {iters}` "
                f"(load average {' '.join(load)}):\n\n{table}\n")
PY
