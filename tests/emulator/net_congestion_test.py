#!/usr/bin/env python3
"""Live congestion signalling between two rocemud daemons over memif, with
Debian's unmodified ib_write_bw on the drop-in libibverbs.so.1 as the
traffic: daemon A (the receiver) puts a congestion point in front of its
RNIC (ports[].congestion_point: a 1 Gb/s queue), daemon B writes into it.

  ecn: RED marks CE on the queue -> A's notification point sends CNPs ->
       B's DCQCN reaction point handles them and cuts its rate; counted on
       every hop, and the transfer completes.
  pfc: ECN off, PFC on: A's queue crosses XOFF -> A sends PFC frames for
       priority 3 -> B's RNIC holds priority 3 for their quanta; A never
       tail-drops, B never retransmits, and the pause shows in both
       daemons' mlx5-named counters.

Both daemons tag everything with VLAN 100: every RoCE frame each sent is
checked for its class's PCP/DSCP/ECN (data and ACKs 3/26/ECT(0), CNPs
6/48/Not-ECT), and A's capture (ACKs, CNPs, PFC frames) passes the
shared oracles (check_pcap.py --strict, tshark_check.sh).

Usage: net_congestion_test.py ROCEMUD DROPIN_DIR SHARED_DIR
"""
import os
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "ibverbs"))
import netns_util  # noqa: E402
from stock_tools_test import Run, perftest_rows  # noqa: E402

def congestion_point(buf, pfc):
    """The receiver's port: a 1 Gb/s bottleneck of `buf` bytes on VLAN 100."""
    return {"link_speed_mbps": 1000, "vlan_id": 100,
            "congestion_point": {"enabled": True, "rate_mbps": 1000,
                                 "buffer_bytes": buf, "pfc": pfc}}


def counters(d):
    c = netns_util.control(d["ctl"], {"cmd": "counters"}, timeout=10)
    return c["ports"]["p0"]


def find_counter(obj, name):
    """The first value named `name` anywhere in a JSON object."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == name:
                return v
            f = find_counter(v, name)
            if f is not None:
                return f
    elif isinstance(obj, list):
        for v in obj:
            f = find_counter(v, name)
            if f is not None:
                return f
    return None


def start_pair(r, ns, case, receiver_port, receiver_extra=None,
               sender_extra=None):
    a, b = f"a{case}", f"b{case}"
    r.port_config[a] = receiver_port
    r.port_config[b] = {"link_speed_mbps": 1000, "vlan_id": 100}
    # A's frames whole (the oracles check ACKs, CNPs and PFC frames to the
    # ICRC); B's 100 MB of WRITEs by their headers.
    r.extra_config[a] = lambda d: {**(receiver_extra or {}),
                                   **capture(d, 65535)}
    r.extra_config[b] = lambda d: {**(sender_extra or {}), **capture(d, 128)}
    sock = f"rocemu-cong-{case}-{r.pid}"
    # The memif ring is the cable: 256 slots of one 4 KiB frame each hold
    # 1 MiB in flight, which the receiver's headroom above XOFF must absorb
    # (both daemons share 2 cores: the receiver may not run for
    # milliseconds while the sender fills the ring).
    link = f"socket={sock},bsize=8192,rsize=8"
    da = r.daemon(ns, a, f"net_memif0,role=server,{link}",
                  "02:00:00:7c:01:01", "10.124.1.1")
    db = r.daemon(ns, b, f"net_memif0,role=client,{link}",
                  "02:00:00:7c:01:02", "10.124.1.2")
    return da, db


def capture(d, snaplen):
    # Classic pcap: roce_frames() below reads its records.
    return {"capture": {"enabled": True, "rx_path": f"{d}/rx.pcap",
                        "tx_path": f"{d}/tx.pcap", "snaplen": snaplen,
                        "format": "pcap"}}


def roce_frames(path):
    """(pcp, vid, dscp, ecn, opcode) of every RoCEv2 frame in a pcap; None
    for the tag of an untagged one."""
    with open(path, "rb") as f:
        data = f.read()
    off, out = 24, []
    while off + 16 <= len(data):
        caplen = struct.unpack_from("<I", data, off + 8)[0]
        fr = data[off + 16:off + 16 + caplen]
        off += 16 + caplen
        tag, l3 = None, 14
        etype = struct.unpack_from("!H", fr, 12)[0]
        if etype == 0x8100:
            tci = struct.unpack_from("!H", fr, 14)[0]
            tag = (tci >> 13, tci & 0xFFF)
            etype = struct.unpack_from("!H", fr, 16)[0]
            l3 = 18
        if etype != 0x0800 or len(fr) < l3 + 29 or fr[l3 + 9] != 17:
            continue
        if struct.unpack_from("!H", fr, l3 + 22)[0] != 4791:
            continue
        tos = fr[l3 + 1]
        out.append((tag, tos >> 2, tos & 3, fr[l3 + 28]))
    return out


def check_marking(r, d, who):
    """Every RoCE frame `d` sent: VLAN 100, PCP/DSCP of its class."""
    # Closing the capture flushes it.
    netns_util.control(d["ctl"], {"cmd": "capture", "enable": False},
                       timeout=10)
    frames = roce_frames(os.path.join(r.tmp, d["name"], "tx.pcap"))
    wrong = {}
    classes = {}
    for tag, dscp, ecn, opcode in frames:
        if opcode == 0x81:  # CNP: DSCP 48, priority 6, Not-ECT
            want = ((6, 100), 48, 0)
            kind = "cnp"
        elif opcode == 0x64:  # UD SEND only: a CM MAD on QP1, PCP 0
            want = ((0, 100), 0, 0)
            kind = "mad"
        else:  # data and ACKs: DSCP 26, priority 3, ECT(0)
            want = ((3, 100), 26, 2)
            kind = "roce"
        classes[kind] = classes.get(kind, 0) + 1
        if (tag, dscp, ecn) != want:
            wrong[(kind, tag, dscp, ecn)] = wrong.get(
                (kind, tag, dscp, ecn), 0) + 1
    r.check(frames and not wrong,
            f"{who}: {len(frames)} RoCE frames {classes}, all tagged VLAN "
            f"100 with their class's PCP/DSCP/ECN" +
            (f"; wrong: {wrong}" if wrong else ""))
    return classes


def oracles(r, shared, d, who):
    path = os.path.join(r.tmp, d["name"], "tx.pcap")
    for argv in ([sys.executable,
                  os.path.join(shared, "oracle", "check_pcap.py"),
                  "--strict", "--no-streams", path],
                 ["bash", os.path.join(shared, "oracle", "tshark_check.sh"),
                  "--quiet", path]):
        p = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        last = (p.stdout.strip().splitlines() or ["(no output)"])[-1]
        r.check(p.returncode == 0,
                f"{who}: {os.path.basename(argv[1])}: {last}")


def write_bw(r, ns, a, b):
    """ib_write_bw from B into A: 64 KiB x 1500 (98 MB, ~0.8 s at 1 Gb/s)."""
    argv = ["ib_write_bw", "-d", "rocemu_p0", "-x", "0", "-s", "65536",
            "-n", "1500", "--report_gbits"]
    src, sout, crc, cout = r.pair(ns, a, b, argv, timeout=120)
    rows = perftest_rows(cout)
    ok = src == 0 and crc == 0 and 65536 in rows
    r.check(ok, f"ib_write_bw through the congestion point: server {src}, "
            f"client {crc}" + (f", {rows[65536][2]} Gb/s" if ok else ""))
    if not ok:
        netns_util.print_pair_output(sout, cout)
    return rows.get(65536)


def main():
    rocemud, dropin, shared = (os.path.abspath(p) for p in sys.argv[1:4])
    if os.geteuid() != 0:
        print("FAIL: the net suite needs root")
        return 1
    r = Run(rocemud, dropin)
    with netns_util.failures_reported(r):
        ns = r.netns("rocemu-cg")

        # --- ECN -> CNP -> DCQCN ---
        a, b = start_pair(r, ns, 1, congestion_point(1 << 20, False))
        row = write_bw(r, ns, a, b)
        ca, cb = counters(a), counters(b)
        cp = ca["congestion_point"]
        print(f"     A congestion point {cp}")
        print(f"     A np: marked {ca['rnic'].get('np_ecn_marked_roce_packets')}"
              f", cnp_sent {ca['rnic'].get('np_cnp_sent')}; B rp: handled "
              f"{cb['rnic'].get('rp_cnp_handled')}")
        r.check(cp["enqueued"] >= 24000 and cp["depth_bytes"] == 0 and
                cp["dequeued"] == cp["enqueued"],
                "the receiver's congestion point carried every RoCE frame "
                "(1500 x 16 packets at least) and is empty after")
        r.check(cp["ecn_marked"] > 0, f"RED marked {cp['ecn_marked']} "
                "frames CE on the 1 Gb/s queue")
        r.check(ca["rnic"].get("np_ecn_marked_roce_packets", 0) >=
                cp["ecn_marked"] - cp["tail_drops"],
                "A's RNIC saw every CE mark that was not dropped "
                "(np_ecn_marked_roce_packets)")
        r.check(ca["rnic"].get("np_cnp_sent", 0) > 0,
                f"A's notification point sent CNPs "
                f"({ca['rnic'].get('np_cnp_sent', 0)})")
        ka = check_marking(r, a, "A (ACKs, CNPs)")
        kb = check_marking(r, b, "B (WRITEs)")
        oracles(r, shared, a, "A's ACKs and CNPs")
        r.check(ka.get("cnp", 0) == ca["rnic"].get("np_cnp_sent", -1),
                "every CNP A counted is on its capture")
        r.check(kb.get("roce", 0) >= 24000, "B's WRITEs are all on its capture")
        r.check(cb["rnic"].get("rp_cnp_handled", 0) > 0 and
                cb["rnic"].get("rp_cnp_handled", 0) <=
                ca["rnic"].get("np_cnp_sent", 0),
                f"B's reaction point handled them "
                f"(rp_cnp_handled {cb['rnic'].get('rp_cnp_handled', 0)})")
        if row is not None:
            r.check(row[2] <= 1.0 * 1.1, f"goodput {row[2]} Gb/s is bounded "
                    "by the 1 Gb/s bottleneck")
        for d in (a, b):
            netns_util.stop_rocemud(d["proc"])

        # --- PFC: lossless through the bottleneck ---
        a, b = start_pair(r, ns, 2, congestion_point(3 << 20, True),
                          receiver_extra={"ecn": {"enabled": False}})
        row = write_bw(r, ns, a, b)
        ca, cb = counters(a), counters(b)
        cp = ca["congestion_point"]
        print(f"     A congestion point {cp}")
        r.check(cp["tx_prio3_pause"] > 0,
                f"A sent PFC for priority 3 ({cp['tx_prio3_pause']} frames)")
        r.check(cp["tail_drops"] == 0, "A's queue never overflowed "
                f"(max depth {cp['max_depth_bytes']} B)")
        r.check(cp["ecn_marked"] == 0, "ECN off: nothing marked")
        check_marking(r, b, "B (WRITEs)")
        check_marking(r, a, "A (ACKs)")
        oracles(r, shared, a, "A's ACKs and PFC frames")
        print(f"     B pfc {cb['pfc']}")
        rx = find_counter(cb["pfc"], "rx_prio3_pause")
        r.check(rx > 0 and rx <= cp["tx_prio3_pause"],
                f"B obeyed: rx_prio3_pause {rx}")
        bad = {k: v for k, v in cb["rnic"].items()
               if k in ("local_ack_timeout_err", "rcvd_seq_err",
                        "packet_seq_err", "retry_exceeded_err") and v}
        bad.update({k: v for k, v in ca["rnic"].items()
                    if k in ("out_of_sequence", "duplicate_request") and v})
        r.check(not bad, f"no retransmission anywhere {bad}")
        if row is not None:
            r.check(row[2] <= 1.0 * 1.1, f"goodput {row[2]} Gb/s is bounded "
                    "by the 1 Gb/s bottleneck")
    return netns_util.verdict(r.failures)


if __name__ == "__main__":
    sys.exit(main())
