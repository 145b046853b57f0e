#!/usr/bin/env python3
"""A rocemud port obeys PFC and PAUSE on the wire, priority by priority.

Two daemons over a veth pair; Debian's ib_write_bw (drop-in libibverbs)
writes from A to B on priority 3 for a few seconds. From B's side of the
link a raw socket (in B's namespace, beside B's af_packet socket) records
the kernel receive time of every RoCE frame A sends and injects MAC
Control frames into A:

  PFC prio 3, 30000 quanta at A's 100 Mb/s = 153.6 ms: A's frames stop
      within a few ms and stay stopped at least that long, then resume by
      themselves;
  PFC prio 3, 65535 quanta (335.5 ms), XON 50 ms later: the gap ends long
      before 335 ms;
  802.3x PAUSE, 30000 quanta: everything stops for 153.6 ms;
  PFC prio 4 only (enabled, not A's traffic), an unknown opcode, an empty
      class-enable vector, a PFC frame to a unicast MAC, one cut short: no
      gap, and A's counters say what it saw (rx_prio4_pause, three
      malformed frames).

The bounds are one-sided where the machine's load could only stretch
them: a pause must last *at least* its quanta; the generous upper bounds
only prove that it ended without help.

Usage: net_pfc_test.py ROCEMUD DROPIN_DIR
       net_pfc_test.py --probe IFACE A_MAC SECONDS   (run inside B's netns)
"""
import json
import os
import socket
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "ibverbs"))
import netns_util  # noqa: E402

A_MAC = "02:00:00:7d:01:01"
B_MAC = "02:00:00:7d:01:02"
PFC_DA = bytes.fromhex("0180c2000001")
LINK_MBPS = 100
QUANTUM_S = 512 / (LINK_MBPS * 1e6)
SO_TIMESTAMPNS = 35
T0 = 2.5  # s after the probe starts: traffic is flowing by then

# (seconds after T0, name, frame parameters)
EVENTS = [
    (0.0, "pfc3", dict(opcode=0x0101, enable=0x08, quanta={3: 30000})),
    (1.0, "pfc3_long", dict(opcode=0x0101, enable=0x08, quanta={3: 65535})),
    (1.05, "xon3", dict(opcode=0x0101, enable=0x08, quanta={3: 0})),
    (2.0, "pause", dict(opcode=0x0001, quanta=30000)),
    (3.0, "pfc4", dict(opcode=0x0101, enable=0x10, quanta={4: 65535})),
    (3.5, "bad_opcode", dict(opcode=0x0202, enable=0x08, quanta={3: 65535})),
    (4.0, "no_class", dict(opcode=0x0101, enable=0x00, quanta={3: 65535})),
    # PFC must go to 01-80-C2-00-00-01: one to a unicast MAC is refused.
    (4.3, "foreign_da", dict(opcode=0x0101, enable=0x08, quanta={3: 65535},
                             da=bytes.fromhex("020000ee0002"))),
    # Cut after the class-enable vector: no times to obey.
    (4.6, "short", dict(opcode=0x0101, enable=0x08, quanta={3: 65535},
                        length=18)),
]


def mac_control(src, opcode, enable=0, quanta=0, da=PFC_DA, length=60):
    if opcode == 0x0001:
        body = struct.pack("!HH", opcode, quanta)
    else:
        q = [quanta.get(p, 0) for p in range(8)]
        body = struct.pack("!HH8H", opcode, enable, *q)
    frame = da + src + b"\x88\x08" + body
    return (frame + bytes(max(0, 60 - len(frame))))[:length]


def probe(iface, a_mac, seconds):
    """Records A's RoCE frames (kernel time) and injects EVENTS; prints
    JSON {"frames": [t...], "events": {name: t}}."""
    a = bytes.fromhex(a_mac.replace(":", ""))
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 20)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.bind((iface, 0))
    s.settimeout(0.002)
    src = bytes.fromhex("020000ee0001")
    start = time.time()
    pending = sorted(EVENTS)
    frames, events = [], {}
    while time.time() - start < seconds:
        now = time.time()
        while pending and now >= start + T0 + pending[0][0]:
            _, name, p = pending.pop(0)
            s.send(mac_control(src, **p))
            events[name] = time.time()
        try:
            data, anc, _, _ = s.recvmsg(128, socket.CMSG_SPACE(16))
        except socket.timeout:
            continue
        if len(data) < 38 or data[6:12] != a or data[12:14] != b"\x08\x00":
            continue
        if data[23] != 17 or struct.unpack("!H", data[36:38])[0] != 4791:
            continue
        t = None
        for level, kind, blob in anc:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                sec, nsec = struct.unpack("qq", blob[:16])
                t = sec + nsec * 1e-9
        frames.append(t if t is not None else time.time())
    print(json.dumps({"frames": frames, "events": events}))


def longest_gap(frames, t_from, t_to):
    """(gap, start) of the longest silence among frames in [t_from, t_to]."""
    inside = [t for t in frames if t_from <= t <= t_to]
    best, at = 0.0, None
    for x, y in zip(inside, inside[1:]):
        if y - x > best:
            best, at = y - x, x
    return best, at


def main():
    if sys.argv[1] == "--probe":
        probe(sys.argv[2], sys.argv[3], float(sys.argv[4]))
        return 0
    from stock_tools_test import Run
    rocemud, dropin = (os.path.abspath(p) for p in sys.argv[1:3])
    if os.geteuid() != 0:
        print("FAIL: the net suite needs root")
        return 1
    r = Run(rocemud, dropin)
    with netns_util.failures_reported(r):
        na, nb = r.netns("rocemu-pa"), r.netns("rocemu-pb")
        va, vb = f"pa{r.pid % 100000}", f"pb{r.pid % 100000}"
        netns_util.veth_pair(na, va, nb, vb)
        opts = "framesz=8192,blocksz=8192"
        r.port_config["a"] = {"link_speed_mbps": LINK_MBPS}
        r.extra_config["a"] = {"pfc": {"priorities": [3, 4]}}
        a = r.daemon(na, "a", f"net_af_packet0,iface={va},{opts}", A_MAC,
                     "10.125.1.1")
        b = r.daemon(nb, "b", f"net_af_packet0,iface={vb},{opts}", B_MAC,
                     "10.125.1.2")
        seconds = T0 + 5.0
        pr = subprocess.Popen(
            ["ip", "netns", "exec", nb, sys.executable,
             os.path.abspath(__file__), "--probe", vb, A_MAC, str(seconds)],
            stdout=subprocess.PIPE, text=True)
        # B serves, A writes (the tools' TCP exchange is on na's loopback).
        argv = ["ib_write_bw", "-d", "rocemu_p0", "-x", "0", "-s", "4096",
                "-D", str(int(seconds) + 1), "--report_gbits"]
        src, sout, crc, cout = r.pair(na, b, a, argv, timeout=60)
        out, _ = pr.communicate(timeout=60)
        r.check(src == 0 and crc == 0,
                f"ib_write_bw ran through it all: server {src}, client {crc}")
        if src or crc:
            netns_util.print_pair_output(sout, cout)
        res = json.loads(out)
        frames, ev = sorted(res["frames"]), res["events"]
        print(f"     {len(frames)} RoCE frames from A recorded")
        r.check(len(frames) > 1000, "A's traffic was seen on the wire")
        q30k = 30000 * QUANTUM_S

        def paused(name, at_least, at_most):
            t = ev[name]
            gap, start = longest_gap(frames, t - 0.05, t + 1.0)
            lag = (start - t) if start is not None else None
            r.check(start is not None and lag < 0.1 and
                    at_least <= gap <= at_most,
                    f"{name}: A silent {gap * 1e3:.1f} ms from "
                    f"{(lag or 0) * 1e3:+.1f} ms (want "
                    f"{at_least * 1e3:.0f}..{at_most * 1e3:.0f} ms)")

        def not_paused(name):
            t = ev[name]
            gap, _ = longest_gap(frames, t - 0.01, t + 0.4)
            r.check(gap < 0.1, f"{name}: A kept sending (longest silence "
                    f"{gap * 1e3:.1f} ms)")

        paused("pfc3", 0.95 * q30k, q30k + 0.3)
        # XON 50 ms after the XOFF by the probe's clock; A may act on
        # either late, so only the end is bounded: far before 335 ms.
        paused("pfc3_long", 0.0, 0.3)
        paused("pause", 0.95 * q30k, q30k + 0.3)
        for name in ("pfc4", "bad_opcode", "no_class", "foreign_da", "short"):
            not_paused(name)
        c = netns_util.control(a["ctl"], {"cmd": "counters"}, timeout=10)
        pfc = c["ports"]["p0"]["pfc"]["counters"]
        rnic = c["ports"]["p0"]["rnic"]
        print(f"     A pfc {{{', '.join(f'{k}: {v}' for k, v in pfc.items() if v)}}}")
        r.check(pfc["rx_prio3_pause"] == 3,
                "A counted the three PFC frames for priority 3 "
                f"(rx_prio3_pause {pfc['rx_prio3_pause']})")
        r.check(pfc["rx_prio4_pause"] == 1, "and the one for priority 4")
        r.check(pfc["rx_global_pause"] == 1, "and the PAUSE "
                f"(rx_global_pause {pfc['rx_global_pause']})")
        # The first pause ran its 153.6 ms; the second held from A taking
        # the XOFF to A taking the XON (sent 50 ms apart; either may be
        # read late), far short of its 335.5 ms; the PAUSE counts apart.
        full = round(q30k * 1e6)
        got = pfc["rx_prio3_pause_duration"]
        r.check(full < got <= full + 0.8 * 65535 * QUANTUM_S * 1e6,
                f"rx_prio3_pause_duration {got} us = 153.6 ms + the time "
                "from XOFF to XON (not the 335.5 ms the XOFF asked)")
        r.check(pfc["rx_global_pause_duration"] == full,
                f"rx_global_pause_duration {pfc['rx_global_pause_duration']}"
                f" us = the PAUSE's 30000 quanta at {LINK_MBPS} Mb/s")
        r.check(rnic.get("rx_malformed", 0) == 3,
                f"the unknown opcode, the foreign DA and the short frame "
                f"were counted (rx_malformed {rnic.get('rx_malformed', 0)})")
    return netns_util.verdict(r.failures)


if __name__ == "__main__":
    sys.exit(main())
