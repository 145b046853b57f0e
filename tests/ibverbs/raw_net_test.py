#!/usr/bin/env python3
"""Raw packet QPs between two rocemud daemons over memif, while RDMA runs:
a pyverbs raw QP on daemon A sends Ethernet frames (a local experimental
ether type) to daemon B's MAC, where a flow rule (ETH spec: destination
MAC, ether type) steers them whole into another raw QP, each one checked
byte for byte; meanwhile Debian's ibv_rc_pingpong runs between the same
daemons and must complete (the RNIC's own traffic is unaffected). Frames
of another ether type, which no rule names, keep the stack's drop reason
(stack_dropped), which the steered ones do not get. Then
perftest's raw_ethernet_bw (500 frames), plain and with IPv4/UDP headers.

Usage: raw_net_test.py ROCEMUD DROPIN_DIR
"""
import os
import re
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "emulator"))
import netns_util  # noqa: E402
import stock_tools_test  # noqa: E402

ENDPOINT = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "raw_endpoint.py")
DEV = stock_tools_test.DEV
MAC_A, MAC_B = "02:00:00:7a:02:01", "02:00:00:7a:02:02"  # setup()'s
IP_A, IP_B = "10.122.2.1", "10.122.2.2"
ETHERTYPE = "0x88b5"  # IEEE 802 local experimental
COUNT = 200
# Debian's interpreter: python3-pyverbs is installed for it.
PYTHON = "/usr/bin/python3"


def port_drops(d):
    c = netns_util.control(d["ctl"], {"cmd": "counters"}, timeout=10)
    return c["ports"]["p0"].get("drops", {})


def stack_dropped(d):
    return port_drops(d).get("stack_dropped", 0)


def raw_qps(d):
    """Daemon D's RAW_PACKET QPs, by QPN: their counters and the receives
    the RNIC holds for them."""
    c = netns_util.control(d["ctl"], {"cmd": "counters"}, timeout=10)
    return {n: q for n, q in c["ports"]["p0"]["rnic"]["qps"].items()
            if q["type"] == "RAW_PACKET"}


def raw_ethernet_bw(r, ns, a, b, extra):
    """perftest's raw_ethernet_bw between the daemons. Its two sides
    exchange nothing (no TCP): the client starts once the server's flow
    rule is in place and its 500 receives are in daemon B's RNIC; 500
    frames then all find one (raw Ethernet has no flow control: more
    could outrun the server's reposting, and be dropped as out_of_buffer,
    as on any NIC). The server prints its result header before it posts
    them: the header alone is not enough (a client started on it alone
    lost frames under load, and the server gave up after two minutes)."""
    # Line-buffered, so that its header shows when it is printed.
    base = ["stdbuf", "-oL", "raw_ethernet_bw", "-d", DEV, "-n", "500"] + extra
    srv = r.tool(ns, b, base + ["--server", "-B", MAC_B, "-E", MAC_A], 120)
    lines, ready = [], threading.Event()

    def pump():
        for line in srv.stdout:
            lines.append(line)
            if line.lstrip().startswith("#bytes"):
                ready.set()
        ready.set()  # it exited

    t = threading.Thread(target=pump)
    t.start()
    ready.wait(120)
    try:
        netns_util.wait_for(
            "the server's 500 receives in daemon B",
            lambda: srv.poll() is not None or any(
                q["rq_outstanding"] >= 500 for q in raw_qps(b).values()),
            timeout=60)
    except AssertionError as e:
        r.check(False, str(e))
    cli = r.tool(ns, a, base + ["--client", "-B", MAC_A, "-E", MAC_B], 120)
    (crc, cout), = netns_util.collect((cli,), 120)
    try:
        src = srv.wait(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(srv.pid, 9)
        src = None
    t.join()
    sout = "".join(lines)
    row = re.compile(r"^\s*1518\s+500\s", re.M)
    ok = crc == 0 and src == 0 and row.search(sout) and row.search(cout)
    r.check(ok, f"raw_ethernet_bw {' '.join(extra)}: server {src}, "
            f"client {crc} (500 frames of 1518 bytes each side)")
    if not ok:
        # First, so that a shortened log keeps it: where frames went.
        for name, d in (("A", a), ("B", b)):
            print(f"daemon {name} RAW_PACKET QPs: {raw_qps(d)}")
        print(f"daemon B drops: {port_drops(b)}")
        netns_util.print_pair_output(sout, cout)


def main():
    rocemud, dropin = (os.path.abspath(p) for p in sys.argv[1:3])
    if os.geteuid() != 0:
        print("FAIL: the net suite needs root")
        return 1
    r = stock_tools_test.Run(rocemud, dropin)
    with netns_util.failures_reported(r):
        ns, a, b = stock_tools_test.setup(r, "memif")
        recv = r.tool(ns, b, [PYTHON, ENDPOINT, "recv", DEV, MAC_B,
                              ETHERTYPE, str(COUNT)], 120)
        line = recv.stdout.readline()
        r.check(line.strip() == "ready", f"raw receiver ready ({line!r})")
        rdma = {}

        def pingpong():
            rdma["result"] = r.pair(ns, a, b, [
                "ibv_rc_pingpong", "-g", "0", "-n", "2000", "-s", "4096"],
                timeout=120)

        t = threading.Thread(target=pingpong)
        t.start()
        # Frames no rule names first: B's stack drops them as before.
        dropped_before = stack_dropped(b)
        other = subprocess.run(
            ["ip", "netns", "exec", ns, PYTHON, ENDPOINT, "send", DEV,
             MAC_B, MAC_A, "0x88b6", "20"], env=r.env(a),
            capture_output=True, text=True, timeout=120)
        r.check(other.returncode == 0, f"unsteered sends: {other.stderr}")
        send = subprocess.run(
            ["ip", "netns", "exec", ns, PYTHON, ENDPOINT, "send", DEV,
             MAC_B, MAC_A, ETHERTYPE, str(COUNT)], env=r.env(a),
            capture_output=True, text=True, timeout=120)
        r.check(send.returncode == 0 and f"sent {COUNT}" in send.stdout,
                f"raw sender: {send.stdout} {send.stderr}")
        (rc, out), = netns_util.collect((recv,), 120)
        r.check(rc == 0 and f"got {COUNT}" in out,
                f"raw receiver: {COUNT} frames steered, each intact "
                f"(exit {rc}: {out[-500:]})")
        t.join()
        src, sout, crc, cout = rdma["result"]
        ok = src == 0 and crc == 0 and \
            re.search(r"\d+ iters in", cout) is not None
        r.check(ok, f"ibv_rc_pingpong alongside: server {src}, client {crc}")
        if not ok:
            netns_util.print_pair_output(sout, cout)
        # The unsteered frames kept the stack's drop reason; the steered
        # ones did not get it.
        dropped = stack_dropped(b) - dropped_before
        r.check(20 <= dropped < 20 + COUNT,
                f"B: the 20 unsteered frames dropped by its stack, the "
                f"{COUNT} steered ones not (stack_dropped +{dropped})")
        # perftest's raw Ethernet bandwidth test, plain and with IPv4/UDP
        # headers (its server's flow rule names the addresses and ports).
        for extra in ([], ["-j", IP_A, "-J", IP_B, "-k", "6000", "-K",
                           "5000"]):
            raw_ethernet_bw(r, ns, a, b, extra)
    return netns_util.verdict(r.failures)


if __name__ == "__main__":
    sys.exit(main())
