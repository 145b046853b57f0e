#!/usr/bin/env bash
# bench_cm.sh - connection setup rate through rocemu's Communication
# Manager: Debian's cmtime (rdmacm-utils) opens N rdma_cm connections at
# once from daemon B's side to a server on daemon A (two rocemud over memif,
# both polling on lcore 0, the default, idle_sleep_us 50), then
# disconnects them, over the
# drop-in librdmacm/libibverbs. The ceiling, measured in the same run and
# the same network namespace: N TCP connections over loopback (connect,
# accept, close; the kernel's three-way handshake, no daemon in the way).
# The table gives medians over the rounds: connects/s and disconnects/s
# (N divided by cmtime's wall time for the step), the mean time one
# connection took, and the ratio to the TCP ceiling. Each round runs
# cmtime twice: left to the scheduler, and pinned to lcore 1, off the
# daemons' lcore, as docs/daemon.md advises for programs that yield
# (cmtime's client spins on sched_yield while a step runs).
#
#   sudo scripts/bench_cm.sh [--build DIR] [--rounds N] [--conns N] [--append]
set -euo pipefail
build=build rounds=5 conns=200 append=0
. "$(dirname "$0")/bench_lib.sh"
bench_options "[--build DIR] [--rounds N] [--conns N] [--append]" "$@"
root="$(cd "$(dirname "$0")/.." && pwd)"
exec python3 - "$root" "$build" "$rounds" "$conns" "$append" <<'PY'
import os, re, statistics, subprocess, sys, time
root, build = sys.argv[1], sys.argv[2]
rounds, conns, append = int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1"
sys.path.insert(0, os.path.join(root, "tests", "rdmacm"))
import rdmacm_tools_test as t

B = os.path.join(root, build)
r = t.CmRun(os.path.join(B, "emulator", "rocemud"),
            os.path.join(B, "verbs", "ibverbs"), os.path.join(B, "verbs", "rdmacm"))

# N TCP connections at once over loopback, as cmtime opens its N: the
# kernel's handshake is the ceiling for a two-process connection setup.
TCP = r'''
import selectors, socket, sys, time
n = int(sys.argv[1])
ls = socket.socket(); ls.bind(("127.0.0.1", 0)); ls.listen(4096)
addr = ls.getsockname()
t0 = time.perf_counter()
cs = []
for _ in range(n):
    c = socket.socket(); c.setblocking(False)
    c.connect_ex(addr); cs.append(c)
acc = [ls.accept()[0] for _ in range(n)]
sel = selectors.DefaultSelector()
for c in cs: sel.register(c, selectors.EVENT_WRITE)
done = 0
while done < n:
    for k, _ in sel.select():
        sel.unregister(k.fileobj); done += 1
t1 = time.perf_counter()
for s in cs + acc: s.close()
t2 = time.perf_counter()
print(f"{t1 - t0:.6f} {t2 - t1:.6f}")
'''


def cmtime(ns, a, b, pin):
    r.port += 1
    pre = ["taskset", "-c", "1"] if pin else []
    srv = r.tool(ns, a, pre + ["cmtime", "-b", t.A_IP, "-p", str(r.port),
                               "-c", str(conns)], 120)
    t.wait_listener(a, r.port)
    cli = r.tool(ns, b, pre + ["cmtime", "-s", t.A_IP, "-p", str(r.port),
                               "-c", str(conns)], 120)
    [(rc, out)] = r.collect([cli], 120)
    os.killpg(srv.pid, 9)
    srv.communicate()
    steps = {m.group(1): (float(m.group(2)), float(m.group(3)))
             for m in re.finditer(r"^(\w[\w ]*?)\s*:\s+([\d.]+)\s+[\d.]+\s+"
                                  r"[\d.]+\s+([\d.]+)", out, re.M)}
    if rc != 0 or "connect" not in steps or "disconnect" not in steps:
        sys.exit("cmtime failed:\n" + out[-2000:])
    return steps


PLACES = (("", False), ("_pinned", True))
res = {"tcp_connect": [], "tcp_close": []}
for sfx, _ in PLACES:
    for k in ("connect", "disconnect", "connect_us"):
        res[k + sfx] = []
with t.netns_util.failures_reported(r):
    ns, a, b = t.stock.setup(r, "memif")
    for k in range(rounds):
        for sfx, pin in PLACES:
            s = cmtime(ns, a, b, pin)
            res["connect" + sfx].append(conns / (s["connect"][0] / 1000))
            res["disconnect" + sfx].append(
                conns / (s["disconnect"][0] / 1000))
            res["connect_us" + sfx].append(s["connect"][1])
        out = subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-c",
                              TCP, str(conns)], capture_output=True,
                             text=True, timeout=120, check=True).stdout.split()
        res["tcp_connect"].append(conns / float(out[0]))
        res["tcp_close"].append(conns / float(out[1]))
if r.failures:
    sys.exit("bench failed: " + "; ".join(r.failures))
m = {k: statistics.median(v) for k, v in res.items()}
load = open("/proc/loadavg").read().split()[:3]
rows = [
    "| step | cmtime | rocemu (cmtime, rdma_cm) | TCP over loopback (ceiling) | ratio |",
    "|---|---|---:|---:|---:|"]
for sfx, where in (("", "scheduler's"), ("_pinned", "on lcore 1")):
    rows += [
        f"| connect, per s ({conns} at once) | {where} | "
        f"{m['connect' + sfx]:.0f} | {m['tcp_connect']:.0f} | "
        f"{m['connect' + sfx] / m['tcp_connect']:.3f} |",
        f"| disconnect, per s | {where} | {m['disconnect' + sfx]:.0f} | "
        f"{m['tcp_close']:.0f} | "
        f"{m['disconnect' + sfx] / m['tcp_close']:.3f} |",
        f"| mean time of one connect | {where} | "
        f"{m['connect_us' + sfx]:.0f} us | | |"]
table = "\n".join(rows)
print(table)
print(f"rounds {rounds}, {conns} connections each; load average {' '.join(load)}")
if append:
    with open(os.path.join(root, "docs", "performance.md"), "a") as f:
        f.write(f"\n### Connection setup rate through the CM ({time.strftime('%Y-%m-%d')})\n\n"
                f"`sudo scripts/bench_cm.sh --rounds {rounds} --conns {conns}` "
                f"(load average {' '.join(load)}):\n\n{table}\n")
PY
