#!/usr/bin/env bash
# bench_link.sh - the raw DPDK frame-forwarding ceiling of memif and of a
# veth pair (af_packet), measured by emulator/bench_pktio.cc with 4154-byte
# frames (a 4 KiB RoCE payload's frame), next to rocemu RC WRITE goodput
# (1 MiB WRITEs, 4 KiB path MTU) over the same links in the same run.
# Prints one line per measurement and the ratios; with --append adds a
# dated section to docs/performance.md. Needs root (namespaces).
#
#   sudo scripts/bench_link.sh [--build DIR] [--seconds N] [--append]
set -euo pipefail
build=build
seconds=5
append=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    --append) append=1; shift ;;
    *) echo "usage: $0 [--build DIR] [--seconds N] [--append]" >&2; exit 2 ;;
  esac
done
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

def eal(prefix, vdev):
    return ["--no-huge", "-m", "512", "--no-pci", "--no-shconf", "-l", "0",
            "--file-prefix", f"{prefix}-{pid}", "--log-level=*:error",
            "--vdev", vdev]

def ceiling(ns_rx, ns_tx, vdev_rx, vdev_tx):
    ex = lambda ns: ["ip", "netns", "exec", ns] if ns else []
    rx = subprocess.Popen(ex(ns_rx) + [pktio, "--mode", "rx", "--seconds", str(seconds),
                          "--size", str(FRAME), "--"] + eal("bprx", vdev_rx),
                          stdout=subprocess.PIPE, text=True)
    time.sleep(1.0)
    tx = subprocess.run(ex(ns_tx) + [pktio, "--mode", "tx", "--seconds", str(seconds),
                        "--size", str(FRAME), "--"] + eal("bptx", vdev_tx),
                        capture_output=True, text=True, timeout=seconds + 30)
    out, _ = rx.communicate(timeout=seconds + 30)
    return json.loads(out.strip().splitlines()[-1])

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
    results["memif_ceiling"] = ceiling(ns, ns, f"net_memif0,role=server,socket=bench-{pid},bsize=8192",
                                       f"net_memif0,role=client,socket=bench-{pid},bsize=8192")
    na, nb = r.netns("bench-a"), r.netns("bench-b")
    va, vb = f"ba{pid % 100000}", f"bb{pid % 100000}"
    t.sh("ip", "link", "add", va, "netns", na, "type", "veth", "peer", "name", vb, "netns", nb)
    for n, d in ((na, va), (nb, vb)):
        t.sh("ip", "link", "set", d, "mtu", "9000", ns=n)
        t.sh("ip", "link", "set", d, "up", ns=n)
    opts = "framesz=8192,blocksz=8192"
    results["veth_ceiling"] = ceiling(nb, na, f"net_af_packet0,iface={vb},{opts}",
                                      f"net_af_packet0,iface={va},{opts}")
finally:
    r.cleanup()
for link in ("memif", "veth"):
    r = t.Run(rocemud, os.path.join(root, "..", "shared"), faults=False)
    try:
        results[f"{link}_rocemu"] = goodput(r, link)
    finally:
        r.cleanup()

lines = []
for link in ("memif", "veth"):
    c = results[f"{link}_ceiling"]
    # Payload-equivalent ceiling: 4096 payload bytes per 4154-byte frame.
    ceil_payload = c["mpps"] * 1e6 * 4096 * 8 / 1e9
    g, errs = results[f"{link}_rocemu"]
    lines.append(f"| {link} | {c['mpps']:.3f} Mpps, {c['gbps']:.2f} Gbit/s frames "
                 f"({ceil_payload:.2f} Gbit/s payload) | {g:.2f} Gbit/s "
                 f"(errors {errs}) | "
                 f"{(g / ceil_payload) if ceil_payload else float('nan'):.2f} |")
table = ("| link | raw DPDK ceiling (4154 B frames) | rocemu RC WRITE goodput "
         "(1 MiB, MTU 4096) | ratio |\n|---|---|---|---|\n" + "\n".join(lines))
print(table)
if append:
    with open(os.path.join(root, "docs", "performance.md"), "a") as f:
        f.write(f"\n### Run of {time.strftime('%Y-%m-%d %H:%M')} "
                f"(`sudo scripts/bench_link.sh --build {build} --seconds {seconds:g} --append`)\n\n"
                f"{table}\n")
PY
