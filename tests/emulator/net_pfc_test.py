#!/usr/bin/env python3
"""A rocemud port obeys PFC and PAUSE on the wire, priority by priority.

Two daemons over a veth pair; Debian's ib_write_bw (drop-in libibverbs)
writes from A to B on priority 3 for a few seconds. From B's side of the
link a raw socket (in B's namespace, beside B's af_packet socket) records
the kernel receive time of every RoCE frame A sends and injects MAC
Control frames into A:

  PFC prio 3, 30000 quanta at A's 100 Mb/s = 153.6 ms: A's frames stop
      at least that long, then resume by themselves;
  PFC prio 3, 65535 quanta (335.5 ms), then XON: A holds priority 3 from
      one to the other, far short of 335 ms;
  802.3x PAUSE, 30000 quanta: everything stops for 153.6 ms;
  PFC prio 4 only (enabled, not A's traffic), an unknown opcode, an empty
      class-enable vector, a PFC frame to a unicast MAC, one cut short: no
      pause taken for priority 3, and A's counters say what it saw
      (rx_prio4_pause, three malformed frames).

The probe is driven by what it sees, not by a clock: it starts once A's
traffic flows, sends each frame once A has sent RESUME frames since the
last one (so no two pauses overlap, however loaded the host), sends the
XON once A's counters show it took the XOFF, and reads A's counters after
each event. The wire bounds are one-sided where load could only stretch
them (a pause lasts *at least* its quanta); what a frame did to A's
transmitter is read from A's own accounting (rx_prio3_pause_duration
moves by exactly the quanta it obeyed, and not at all for the frames it
must ignore).

Usage: net_pfc_test.py ROCEMUD DROPIN_DIR
       net_pfc_test.py --probe IFACE A_MAC A_CTL   (run inside B's netns)
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
RESUME = 300  # A's frames seen before the first event and between events
DURATION_S = 10  # ib_write_bw -D: well past the probe's 2-3 s

# (name, frame parameters); each waits for RESUME frames after the last.
EVENTS = [
    ("pfc3", dict(opcode=0x0101, enable=0x08, quanta={3: 30000})),
    ("pfc3_long", dict(opcode=0x0101, enable=0x08, quanta={3: 65535})),
    # Sent as soon as A's counters show it took pfc3_long (no RESUME).
    ("xon3", dict(opcode=0x0101, enable=0x08, quanta={3: 0})),
    ("pause", dict(opcode=0x0001, quanta=30000)),
    ("pfc4", dict(opcode=0x0101, enable=0x10, quanta={4: 65535})),
    ("bad_opcode", dict(opcode=0x0202, enable=0x08, quanta={3: 65535})),
    ("no_class", dict(opcode=0x0101, enable=0x00, quanta={3: 65535})),
    # PFC must go to 01-80-C2-00-00-01: one to a unicast MAC is refused.
    ("foreign_da", dict(opcode=0x0101, enable=0x08, quanta={3: 65535},
                        da=bytes.fromhex("020000ee0002"))),
    # Cut after the class-enable vector: no times to obey.
    ("short", dict(opcode=0x0101, enable=0x08, quanta={3: 65535},
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


def a_counters(a_ctl):
    c = netns_util.control(a_ctl, {"cmd": "counters"}, timeout=10)["ports"]
    return {**c["p0"]["pfc"]["counters"],
            "rx_malformed": c["p0"]["rnic"].get("rx_malformed", 0)}


def probe(iface, a_mac, a_ctl):
    """Records A's RoCE frames (kernel time) and injects EVENTS as A's
    traffic and counters allow; prints JSON {"frames": [t...], "events":
    {name: t}, "counters": {name: A's counters once A resumed after it},
    "before": A's counters before the first}."""
    a = bytes.fromhex(a_mac.replace(":", ""))
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 20)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.bind((iface, 0))
    s.settimeout(0.002)
    src = bytes.fromhex("020000ee0001")
    pending = list(EVENTS)
    frames, events, counters = [], {}, {}
    before, since, last = None, 0, None
    deadline = time.monotonic() + DURATION_S
    while pending or since < RESUME:
        if time.monotonic() > deadline:
            print(json.dumps({"error": f"A's traffic stalled after {last} "
                              f"({since} frames since)", "frames": frames,
                              "events": events}))
            return
        name = pending[0][0] if pending else None
        ready = since >= RESUME
        if name == "xon3":
            ready = (a_counters(a_ctl)["rx_prio3_pause"] ==
                     counters["pfc3"]["rx_prio3_pause"] + 1)
        if pending and ready:
            if last is not None and last not in counters:
                counters[last] = a_counters(a_ctl)
            if before is None:
                before = a_counters(a_ctl)
            _, p = pending.pop(0)
            s.send(mac_control(src, **p))
            events[name] = time.time()
            last, since = name, 0
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
        t = t if t is not None else time.time()
        frames.append(t)
        # Frames still queued from before the last event do not count.
        if last is None or t > events[last]:
            since += 1
    counters[last] = a_counters(a_ctl)
    print(json.dumps({"frames": frames, "events": events,
                      "counters": counters, "before": before}))


def main():
    if sys.argv[1] == "--probe":
        probe(sys.argv[2], sys.argv[3], sys.argv[4])
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
        pr = subprocess.Popen(
            ["ip", "netns", "exec", nb, sys.executable,
             os.path.abspath(__file__), "--probe", vb, A_MAC, a["ctl"]],
            stdout=subprocess.PIPE, text=True)
        # B serves, A writes (the tools' TCP exchange is on na's loopback).
        argv = ["ib_write_bw", "-d", "rocemu_p0", "-x", "0", "-s", "4096",
                "-D", str(DURATION_S), "--report_gbits"]
        src, sout, crc, cout = r.pair(na, b, a, argv, timeout=DURATION_S + 60)
        out, _ = pr.communicate(timeout=60)
        r.check(src == 0 and crc == 0,
                f"ib_write_bw ran through it all: server {src}, client {crc}")
        if src or crc:
            netns_util.print_pair_output(sout, cout)
        res = json.loads(out)
        r.check("error" not in res, f"the probe: {res.get('error', 'done')}")
        frames, ev = sorted(res["frames"]), res["events"]
        print(f"     {len(frames)} RoCE frames from A recorded")
        if "error" in res:
            return netns_util.verdict(r.failures)
        q30k = 30000 * QUANTUM_S
        full = round(q30k * 1e6)  # microseconds, as A counts

        def delta(name, prev):
            now = res["counters"][name]
            old = res["counters"][prev] if prev else res["before"]
            return {k: now[k] - old[k] for k in now}

        order = [name for name, _ in EVENTS]

        def silent_at_least(name, at_least):
            # A silence of at least the pause, begun after the frame was
            # sent and before the next one was (A may take it late on a
            # loaded host, never early; the probe sends the next frame
            # only once A has sent RESUME frames since).
            t = ev[name]
            t_next = ev[order[order.index(name) + 1]]
            # Silence counts from the moment the frame was sent.
            gaps = [(y - max(x, t), max(x, t)) for x, y in zip(frames, frames[1:])
                    if y > t and max(x, t) <= t_next and
                    y - max(x, t) >= at_least]
            r.check(bool(gaps),
                    f"{name}: A silent {gaps[0][0] * 1e3 if gaps else 0:.1f}"
                    f" ms on the wire from "
                    f"{((gaps[0][1] if gaps else t) - t) * 1e3:+.1f} ms "
                    f"(at least {at_least * 1e3:.1f} ms, before the next "
                    "frame)")

        d = delta("pfc3", None)
        silent_at_least("pfc3", 0.95 * q30k)
        r.check(d["rx_prio3_pause"] == 1 and
                d["rx_prio3_pause_duration"] == full,
                f"pfc3: A took one XOFF and held priority 3 for its "
                f"{full} us (+{d['rx_prio3_pause']}, "
                f"+{d['rx_prio3_pause_duration']} us)")
        # XOFF for 335.5 ms, then the XON once A had taken it: A held
        # priority 3 from one to the other, far short of the quanta.
        d = {k: v + delta("xon3", "pfc3_long")[k]
             for k, v in delta("pfc3_long", "pfc3").items()}
        r.check(d["rx_prio3_pause"] == 2 and
                0 < d["rx_prio3_pause_duration"] <=
                0.8 * 65535 * QUANTUM_S * 1e6,
                f"pfc3_long + xon3: XOFF and XON taken, priority 3 held "
                f"{d['rx_prio3_pause_duration']} us (not the 335.5 ms the "
                "XOFF asked)")
        d = delta("pause", "xon3")
        silent_at_least("pause", 0.95 * q30k)
        r.check(d["rx_global_pause"] == 1 and
                d["rx_global_pause_duration"] == full,
                f"pause: A took the 802.3x PAUSE for its {full} us "
                f"(+{d['rx_global_pause']}, "
                f"+{d['rx_global_pause_duration']} us)")
        d = delta("pfc4", "pause")
        r.check(d["rx_prio4_pause"] == 1 and d["rx_prio3_pause"] == 0 and
                d["rx_prio3_pause_duration"] == 0,
                f"pfc4: counted for priority 4 (+{d['rx_prio4_pause']}), "
                "A's priority 3 traffic never held")
        prev = "pfc4"
        for name in ("bad_opcode", "no_class", "foreign_da", "short"):
            # Priority 4 may still be held by pfc4 meanwhile (nothing of
            # A's runs on it): what matters is that nothing new was taken.
            d = delta(name, prev)
            r.check(d["rx_malformed"] == (0 if name == "no_class" else 1) and
                    all(d[f"rx_prio{p}_pause"] == 0 for p in range(8)) and
                    d["rx_prio3_pause_duration"] == 0 and
                    d["rx_global_pause"] == 0 and
                    d["rx_global_pause_duration"] == 0,
                    f"{name}: ignored (rx_malformed +{d['rx_malformed']}, "
                    "no pause taken, priority 3 never held)")
            prev = name
        c = netns_util.control(a["ctl"], {"cmd": "counters"}, timeout=10)
        pfc = c["ports"]["p0"]["pfc"]["counters"]
        print(f"     A pfc {{{', '.join(f'{k}: {v}' for k, v in pfc.items() if v)}}}")
        r.check(pfc["rx_prio3_pause"] == 3 and pfc["rx_prio4_pause"] == 1 and
                pfc["rx_global_pause"] == 1,
                "A counted three PFC frames for priority 3, one for 4 and "
                "one PAUSE in all")
    return netns_util.verdict(r.failures)


if __name__ == "__main__":
    sys.exit(main())
