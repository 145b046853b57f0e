#!/usr/bin/env bash
# bench_netdev.sh - what a netdev port (docs/daemon.md, "On a host's own
# NIC") costs, AF_XDP beside af_packet, in one run: the raw DPDK
# frame-forwarding ceiling of each PMD over a veth pair (rocemu-bench-pktio,
# one process, one lcore, port 0 sends and port 1 receives, the RX rate
# over a fixed window: emulator/port/bench_pktio.cc) and rocemu's RC WRITE
# goodput between two `rocemud` netdev ports on the same kind of link
# (a veth pair across two namespaces, the kernel's addresses on both ends),
# in that mode. The link MTU is 3000, so both modes carry RoCE's IB MTU
# 2048 (AF_XDP's limit, an AF_XDP buffer being one 4 KiB page): frames of
# 2106 bytes (2048 of payload). AF_XDP in native mode (veth's own XDP).
# Prints one line per measurement and a table; with --append adds a dated
# section to docs/performance.md. Needs root.
#
#   sudo scripts/bench_netdev.sh [--build DIR] [--seconds N] [--append]
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
import netns_util
import net_rdma_test as t
pktio = os.path.join(root, build, "emulator", "rocemu-bench-pktio")
rocemud = os.path.join(root, build, "emulator", "rocemud")
pid = os.getpid()
MTU, FRAME, PAYLOAD = 3000, 2106, 2048

def ceiling_loop(ns, vdev_tx, vdev_rx):
    """One process, one lcore: port 0 sends, port 1 receives (drained after
    every TX burst; a second polling lcore would starve the kernel's veth
    work on 2 cores). The RX rate over a fixed window is the figure."""
    p = subprocess.run(
        ["ip", "netns", "exec", ns, pktio, "--mode", "loop", "--seconds",
         str(seconds), "--warmup", "1", "--size", str(FRAME), "--",
         "--no-huge", "-m", "512", "--no-pci", "--no-shconf", "-l", "0",
         "--file-prefix", f"bnd-{pid}", "--log-level=*:error",
         "--vdev", vdev_tx, "--vdev", vdev_rx],
        capture_output=True, text=True, timeout=seconds + 60)
    return json.loads(p.stdout.strip().splitlines()[-1])

def goodput(r, mode):
    """Two netdev daemons on a veth pair; 16 outstanding 1 MiB WRITEs
    through the test hooks for `seconds`."""
    na, nb = r.netns("bnd-a"), r.netns("bnd-b")
    ia, ib = f"na{pid % 100000}", f"nb{pid % 100000}"
    netns_util.veth_pair(na, ia, nb, ib, mtu=MTU)
    daemons = []
    for ns, iface, ip in ((na, ia, "10.79.1.1"), (nb, ib, "10.79.1.2")):
        t.sh("ip", "addr", "add", f"{ip}/24", "dev", iface, ns=ns)
        sock = os.path.join(r.tmp, f"{iface}.sock")
        cfg = os.path.join(r.tmp, f"{iface}.yaml")
        netns_util.write_rocemud_config(
            cfg, f"bnd-{iface}",
            [{"name": "p0", "netdev": iface, "netdev_mode": mode}],
            control={"socket": sock, "test_hooks": True},
            verbs={"enabled": False})
        p = netns_util.start_rocemud(ns, rocemud, cfg, sock, iface)
        r.procs.append(p)
        daemons.append(t.Daemon(iface, sock, p, ip))
    a, b = daemons
    got = a.ok("ports")["ports"][0]["netdev"]["mode"]
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
            p = a.ok("post_send", qpn=qa, opcode="WRITE",
                     count=depth - inflight, laddr=src["addr"],
                     lkey=src["key"], len=msg, raddr=dst["addr"],
                     rkey=dst["key"])
            inflight += p["posted"]
        s = a.ok("poll_cq", cq=cq_a, max=4096, summary=True)
        inflight -= s["count"]; nbytes += s["bytes"]; errors += s["errors"]
        if s["count"] == 0:
            time.sleep(0.001)
    el = time.monotonic() - start
    for d in (b, a):
        r.stop(d)
    return nbytes * 8 / el / 1e9, errors, got

results = {}
r = t.Run(rocemud, os.path.join(root, "..", "shared"), faults=False)
try:
    nv = r.netns("bnd-v")
    va, vb = f"xa{pid % 100000}", f"xb{pid % 100000}"
    t.sh("ip", "link", "add", va, "type", "veth", "peer", "name", vb, ns=nv)
    for d in (va, vb):
        t.sh("ip", "link", "set", d, "mtu", str(MTU), ns=nv)
        t.sh("ip", "link", "set", d, "up", ns=nv)
    # af_xdp without xdp_prog: libxdp's own program sends every frame of
    # the queue to the socket.
    results["af_xdp_raw"] = ceiling_loop(nv, f"net_af_xdp0,iface={va}",
                                         f"net_af_xdp1,iface={vb}")
    opts = "framesz=4096,blocksz=4096"
    results["af_packet_raw"] = ceiling_loop(
        nv, f"net_af_packet0,iface={va},{opts}",
        f"net_af_packet1,iface={vb},{opts}")
finally:
    r.cleanup()
for mode in ("af_xdp", "af_packet"):
    r = t.Run(rocemud, os.path.join(root, "..", "shared"), faults=False)
    try:
        results[f"{mode}_rocemu"] = goodput(r, mode)
    finally:
        r.cleanup()

def payload_gbps(c):
    return c["mpps"] * 1e6 * PAYLOAD * 8 / 1e9

lines = []
for mode in ("af_xdp", "af_packet"):
    c = results[f"{mode}_raw"]
    g, errs, how = results[f"{mode}_rocemu"]
    ceil = payload_gbps(c)
    flag = "" if c["complete"] else ", window cut short"
    lines.append(
        f"| {mode} | {c['mpps']:.3f} Mpps = {c['gbps']:.2f} Gbit/s frames, "
        f"{ceil:.2f} Gbit/s payload{flag} | {g:.2f} Gbit/s (errors {errs}; "
        f"{how}) | {(g / ceil) if ceil else float('nan'):.2f} |")
table = ("| netdev mode | raw DPDK ceiling over a veth pair, RX at the "
         f"receiver ({FRAME} B frames) | rocemu RC WRITE goodput between two "
         f"netdev ports (1 MiB, IB MTU {PAYLOAD}) | goodput / ceiling "
         "payload |\n|---|---|---|---|\n" + "\n".join(lines))
print(json.dumps(results))
print(table)
if append:
    load = open("/proc/loadavg").read().split()[:3]
    with open(os.path.join(root, "docs", "performance.md"), "a") as f:
        f.write(f"\n### Run of {time.strftime('%Y-%m-%d %H:%M')} "
                f"(`sudo scripts/bench_netdev.sh --build {build} --seconds "
                f"{seconds:g} --append`; load average {' '.join(load)})\n\n"
                f"{table}\n")
PY
