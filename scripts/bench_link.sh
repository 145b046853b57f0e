#!/usr/bin/env bash
# bench_link.sh - the raw DPDK frame-forwarding ceiling of memif and of a
# veth pair (af_packet), measured by emulator/port/bench_pktio.cc with 4154-byte
# frames (a 4 KiB RoCE payload's frame) as the RX rate at the receiver over
# a fixed window after 1 s of warm-up, next to rocemu RC WRITE goodput
# (1 MiB WRITEs, 4 KiB path MTU) over the same links in the same run.
# memif: two processes on lcores 0 and 1 (rocemu's shape) and one process
# on one lcore (server and client ports in it); veth: one process on one
# lcore owning both ends (a second polling lcore starves the kernel's veth
# work on 2 cores, ../shared/reference/dpdk.md 5).
# Prints one line per measurement and the ratios; with --append adds a
# dated section to docs/performance.md. Needs root (namespaces).
#
#   sudo scripts/bench_link.sh [--build DIR] [--seconds N] [--append]
set -euo pipefail
build=build
seconds=5
append=0
. "$(dirname "$0")/bench_lib.sh"
bench_options "[--build DIR] [--seconds N] [--append]" "$@"
root="$(cd "$(dirname "$0")/.." && pwd)"
exec python3 - "$root" "$build" "$seconds" "$append" <<'PY'
import json, os, subprocess, sys, time
root, build, seconds, append = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4] == "1"
sys.path.insert(0, os.path.join(root, "tests", "emulator"))
import net_rdma_test as t
pktio = os.path.join(root, build, "emulator", "rocemu-bench-pktio")
rocemud = os.path.join(root, build, "emulator", "rocemud")
pid = os.getpid()
FRAME = 4154

def eal(prefix, lcore, *vdevs):
    args = ["--no-huge", "-m", "512", "--no-pci", "--no-shconf", "-l", str(lcore),
            "--file-prefix", f"{prefix}-{pid}", "--log-level=*:error"]
    for v in vdevs:
        args += ["--vdev", v]
    return args

def ex(ns):
    return ["ip", "netns", "exec", ns] if ns else []

def pktio_args(mode):
    return [pktio, "--mode", mode, "--seconds", str(seconds), "--warmup", "1",
            "--size", str(FRAME), "--"]

def last_json(out):
    return json.loads(out.strip().splitlines()[-1])

def ceiling_loop(ns, vdev_tx, vdev_rx):
    """One process, one lcore: port 0 sends, port 1 receives (drained after
    every TX burst). The RX rate over a fixed window is the figure."""
    p = subprocess.run(ex(ns) + pktio_args("loop") + eal("bplp", 0, vdev_tx, vdev_rx),
                       capture_output=True, text=True, timeout=seconds + 30)
    return last_json(p.stdout)

def ceiling_pair(ns_rx, ns_tx, vdev_rx, vdev_tx, dst="ff:ff:ff:ff:ff:ff"):
    """Two processes on lcores 1 (RX) and 0 (TX), the shape rocemu runs in.
    TX outlasts the receiver's warm-up + window; the RX window is the figure."""
    rx = subprocess.Popen(ex(ns_rx) + pktio_args("rx") + eal("bprx", 1, vdev_rx),
                          stdout=subprocess.PIPE, text=True)
    time.sleep(1.0)
    tx_args = pktio_args("tx")
    tx_args[tx_args.index("--seconds") + 1] = str(seconds + 2.5)
    tx_args[tx_args.index("--mode"):tx_args.index("--mode")] = ["--dst", dst]
    subprocess.run(ex(ns_tx) + tx_args + eal("bptx", 0, vdev_tx),
                   capture_output=True, text=True, timeout=seconds + 40)
    out, _ = rx.communicate(timeout=seconds + 30)
    return last_json(out)

def goodput(r, link):
    a, b = t.setup(r, link)
    for d in (a, b):
        d.ok("capture", enable=False)
    size, msg, depth = 16 << 20, 1 << 20, 16
    src = a.ok("reg_mr", len=size, seed=1)
    dst = b.ok("reg_mr", len=size, seed=2)
    cq_a, cq_b = a.ok("create_cq")["cq"], b.ok("create_cq")["cq"]
    qa = a.ok("create_qp", type="RC", cq=cq_a)["qpn"]
    qb = b.ok("create_qp", type="RC", cq=cq_b)["qpn"]
    a.retry("connect", qpn=qa, remote_qpn=qb, remote_ip=b.ip, timeout=12)
    b.retry("connect", qpn=qb, remote_qpn=qa, remote_ip=a.ip, timeout=12)
    inflight = nbytes = errors = 0
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        if inflight < depth:
            p = a.ok("post_send", qpn=qa, opcode="WRITE", count=depth - inflight,
                     laddr=src["addr"], lkey=src["key"], len=msg,
                     raddr=dst["addr"], rkey=dst["key"])
            inflight += p["posted"]
        s = a.ok("poll_cq", cq=cq_a, max=4096, summary=True)
        inflight -= s["count"]; nbytes += s["bytes"]; errors += s["errors"]
        if s["count"] == 0:
            time.sleep(0.001)
    el = time.monotonic() - start
    r.stop(b); time.sleep(0.5); r.stop(a)
    return nbytes * 8 / el / 1e9, errors

results = {}
r = t.Run(rocemud, os.path.join(root, "..", "shared"), faults=False)
try:
    ns = r.netns("bench-m")
    mem = lambda role, i, sock: f"net_memif{i},role={role},socket={sock},bsize=8192"
    results["memif_pair"] = ceiling_pair(ns, ns, mem("server", 0, f"bench-{pid}"),
                                         mem("client", 0, f"bench-{pid}"))
    results["memif_loop"] = ceiling_loop(ns, mem("server", 0, f"benchl-{pid}"),
                                         mem("client", 1, f"benchl-{pid}"))
    # af_packet: both veth ends in one namespace so one process (one lcore,
    # the kernel keeps the other core for veth/softirq work, dpdk.md 5) can
    # open both; the kernel path is the same as across namespaces.
    nv = r.netns("bench-v")
    va, vb = f"ba{pid % 100000}", f"bb{pid % 100000}"
    t.sh("ip", "link", "add", va, "type", "veth", "peer", "name", vb, ns=nv)
    for d in (va, vb):
        t.sh("ip", "link", "set", d, "mtu", "9000", ns=nv)
        t.sh("ip", "link", "set", d, "up", ns=nv)
    opts = "framesz=8192,blocksz=8192"
    results["veth_loop"] = ceiling_loop(nv, f"net_af_packet0,iface={va},{opts}",
                                        f"net_af_packet1,iface={vb},{opts}")
finally:
    r.cleanup()
for link in ("memif", "veth"):
    r = t.Run(rocemud, os.path.join(root, "..", "shared"), faults=False)
    try:
        results[f"{link}_rocemu"] = goodput(r, link)
    finally:
        r.cleanup()

def payload_gbps(c):
    # Payload-equivalent rate: 4096 payload bytes per 4154-byte frame.
    return c["mpps"] * 1e6 * 4096 * 8 / 1e9

def fmt(c):
    flag = "" if c["complete"] else ", window cut short"
    return (f"{c['mpps']:.3f} Mpps = {c['gbps']:.2f} Gbit/s frames, "
            f"{payload_gbps(c):.2f} Gbit/s payload{flag}")

rows = [("memif", "2 procs, lcores 0+1", results["memif_pair"]),
        ("memif", "1 proc, 1 lcore", results["memif_loop"]),
        ("veth (af_packet)", "1 proc, 1 lcore", results["veth_loop"])]
lines = []
for name, how, c in rows:
    link = name.split()[0]
    g, errs = results[f"{link}_rocemu"]
    ceil = payload_gbps(c)
    lines.append(f"| {name} | {how}: {fmt(c)} | {g:.2f} Gbit/s (errors {errs}) | "
                 f"{(g / ceil) if ceil else float('nan'):.2f} |")
table = ("| link | raw DPDK ceiling, RX rate at the receiver (4154 B frames) | "
         "rocemu RC WRITE goodput (1 MiB, MTU 4096) | goodput / ceiling payload |\n"
         "|---|---|---|---|\n" + "\n".join(lines))
print(json.dumps(results))
print(table)
if append:
    with open(os.path.join(root, "docs", "performance.md"), "a") as f:
        f.write(f"\n### Run of {time.strftime('%Y-%m-%d %H:%M')} "
                f"(`sudo scripts/bench_link.sh --build {build} --seconds {seconds:g} --append`)\n\n"
                f"{table}\n")
PY
