#!/usr/bin/env python3
"""A live incast: N sender daemons -> one receiver daemon through a Linux
bridge (veth + af_packet), each sender running Debian's ib_write_bw (drop-in
libibverbs) for a fixed time into its own ib_write_bw server on the
receiver. The receiver's congestion point (1 Gb/s, RED from the `ecn`
section) is the shared bottleneck: CE marks -> the receiver's notification
point sends CNPs -> every sender's DCQCN handles them. Checked: all flows
finish, the marks and CNPs are counted on every hop (all but the last few,
which the timed end of the flows can leave to destroyed QPs), and the
bottleneck is shared fairly: each
flow's goodput within 25 % of the fair share (total / N), Jain's index
printed.

With --pfc the congestion point also sends PFC (XOFF/XON for priority 3 at
the `pfc` section's thresholds) and the senders must obey it: a Linux bridge
never forwards MAC Control frames (01:80:c2:00:00:01 is link-local), so the
links meet in a switch made of tc instead (u32 + mirred: everything a
sender sends goes to the receiver; the receiver's unicast goes to the
sender owning the destination MAC, its multicast -- ARP, PFC -- to every
sender). Checked in addition: PFC frames sent and obeyed by every sender,
no tail drop, and no retransmission anywhere (lossless).

Usage: net_incast_test.py ROCEMUD DROPIN_DIR [N] [--pfc] [--watch DIR]
  --watch DIR: `rocemu-ctl watch` on every daemon during the run, into
  DIR/r.csv (receiver) and DIR/s<i>.csv; scripts/plot_watch.sh plots them.
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "ibverbs"))
import netns_util  # noqa: E402
from netns_util import sh  # noqa: E402
from stock_tools_test import Run, perftest_rows  # noqa: E402

SECONDS = 8
RETRANSMISSIONS = ("local_ack_timeout_err", "rcvd_seq_err", "packet_seq_err",
                   "retry_exceeded_err", "completer_retry_err",
                   "out_of_sequence", "duplicate_request", "implied_nak_seq_err")


def mac(i):
    return f"02:00:00:7e:01:{i + 1:02x}"


def tc_switch(ns, hub, ports):
    """Joins the switch-side veth ends: `hub` (the receiver's) and `ports`
    ({dev: mac} of the senders') by tc rules, as an L2 switch that, unlike
    a bridge, forwards MAC Control frames."""
    for dev in [hub] + list(ports):
        sh("tc", "qdisc", "add", "dev", dev, "ingress", ns=ns)
    for dev in ports:
        sh("tc", "filter", "add", "dev", dev, "ingress", "protocol", "all",
           "u32", "match", "u32", "0", "0", "action", "mirred", "egress",
           "redirect", "dev", hub, ns=ns)
    # At ingress u32 offsets count from the network header: the destination
    # MAC is at -14.
    for dev, m in ports.items():
        b = bytes(int(x, 16) for x in m.split(":"))
        sh("tc", "filter", "add", "dev", hub, "ingress", "protocol", "all",
           "prio", "1", "u32",
           "match", "u16", hex(int.from_bytes(b[:2], "big")), "0xffff",
           "at", "-14",
           "match", "u32", hex(int.from_bytes(b[2:], "big")), "0xffffffff",
           "at", "-12",
           "action", "mirred", "egress", "redirect", "dev", dev, ns=ns)
    # Multicast to every sender: copies to all but the last, which takes
    # the frame itself (no gact here to drop it after the copies).
    devs = list(ports)
    actions = []
    for dev in devs[:-1]:
        actions += ["action", "mirred", "egress", "mirror", "dev", dev, "pipe"]
    actions += ["action", "mirred", "egress", "redirect", "dev", devs[-1]]
    sh("tc", "filter", "add", "dev", hub, "ingress", "protocol", "all",
       "prio", "2", "u32", "match", "u8", "0x01", "0x01", "at", "-14",
       *actions, ns=ns)


def main():
    rocemud, dropin = (os.path.abspath(p) for p in sys.argv[1:3])
    rest = sys.argv[3:]
    watch = None
    if "--watch" in rest:
        watch = os.path.abspath(rest[rest.index("--watch") + 1])
        del rest[rest.index("--watch"):rest.index("--watch") + 2]
        os.makedirs(watch, exist_ok=True)
    pfc = "--pfc" in rest
    if pfc:
        rest.remove("--pfc")
    n = int(rest[0]) if rest else 2
    ctl = os.path.join(os.path.dirname(rocemud), "tools", "rocemu-ctl")
    if os.geteuid() != 0:
        print("FAIL: the net suite needs root")
        return 1
    r = Run(rocemud, dropin)
    with netns_util.failures_reported(r):
        ns = r.netns("rocemu-inc")
        if not pfc:
            sh("ip", "link", "add", "br0", "type", "bridge", ns=ns)
            sh("ip", "link", "set", "br0", "up", ns=ns)
        names = ["r"] + [f"s{i}" for i in range(n)]
        ds = {}
        for i, name in enumerate(names):
            sh("ip", "link", "add", f"v{name}", "type", "veth", "peer",
               "name", f"p{name}", ns=ns)
            for dev in (f"v{name}", f"p{name}"):
                sh("ip", "link", "set", dev, "mtu", "9000", ns=ns)
                sh("ip", "link", "set", dev, "up", ns=ns)
            if not pfc:
                sh("ip", "link", "set", f"p{name}", "master", "br0", ns=ns)
            r.port_config[name] = {"link_speed_mbps": 1000}
            if name == "r":
                # With PFC the buffer above XOFF (the `pfc` section's
                # default, 96 KiB) must hold what the senders send before
                # their daemons see the pause: on two shared cores, up to
                # milliseconds of every sender's line rate.
                r.port_config[name]["congestion_point"] = {
                    "enabled": True, "rate_mbps": 1000,
                    "buffer_bytes": 8 << 20 if pfc else 4 << 20, "pfc": pfc}
            devargs = f"net_af_packet0,iface=v{name},framesz=8192,blocksz=8192"
            if pfc and name == "r":
                # The receiver's kernel ring is the link's buffer in front
                # of the congestion point: frames that overflow it are lost
                # where no counter sees them (PFC watches the queue behind
                # it). Sized to hold every sender's whole RC window (-t
                # below), it cannot overflow however late the daemon runs.
                devargs += ",framecnt=4096"
            ds[name] = r.daemon(ns, name, devargs, mac(i),
                                f"10.126.1.{i + 1}")
        if pfc:
            tc_switch(ns, "pr", {f"ps{i}": mac(i + 1) for i in range(n)})
        watchers = []
        if watch:
            for name, d in ds.items():
                with open(os.path.join(watch, f"{name}.csv"), "w") as f:
                    watchers.append(subprocess.Popen(
                        [ctl, "--socket", d["ctl"], "--interval_ms", "50",
                         "watch"], stdout=f))
        flows = []
        for i in range(n):
            r.port += 1
            port = ["-p", str(r.port)]
            argv = ["ib_write_bw", "-d", "rocemu_p0", "-x", "0", "-s",
                    "65536", "-D", str(SECONDS), "--report_gbits"]
            if pfc:
                # A lossless fabric's transport timer must outlast its
                # pauses, as on any PFC network: here the receiver's daemon
                # shares two cores with N senders and 2N perftests and may
                # not drain for tens of ms, so perftest's default 67 ms
                # (-u 14) expires on frames waiting in the paused queue,
                # not lost. 1 s (-u 18) leaves only real loss to retransmit.
                # 32 WRITEs of 64 KiB in flight per sender: 512 frames.
                argv += ["-u", "18", "-t", "32"]
            srv = r.tool(ns, ds["r"], argv + port, 60)
            netns_util.wait_tcp_listener(srv, r.port)
            cli = r.tool(ns, ds[f"s{i}"], argv + port + ["127.0.0.1"], 60)
            flows.append((srv, cli))
        goodput = []
        for i, (srv, cli) in enumerate(flows):
            try:
                out, _ = cli.communicate(timeout=SECONDS + 60)
                srv.communicate(timeout=30)
            except Exception as e:  # noqa: BLE001 - reported, then cleaned
                out = f"(timed out: {e})"
            row = perftest_rows(out).get(65536)
            r.check(cli.returncode == 0 and row is not None,
                    f"flow {i}: ib_write_bw -D {SECONDS} finished"
                    + (f", {row[2]} Gb/s" if row else ""))
            if row is None:
                print(out[-1200:])
            else:
                goodput.append(row[2])
        for w in watchers:
            w.terminate()
            w.wait(timeout=10)
        c = netns_util.control(ds["r"]["ctl"], {"cmd": "counters"},
                               timeout=10)["ports"]["p0"]
        cp, rnic = c["congestion_point"], c["rnic"]
        print(f"     receiver congestion point {cp}")
        print("     receiver port " + ", ".join(
            f"{k} {c[k]}" for k in ("rx_packets", "tx_packets", "rx_missed",
                                    "tx_dropped")))
        r.check(cp["ecn_marked"] > 0, f"CE marks on the shared queue "
                f"({cp['ecn_marked']} of {cp['dequeued']})")
        # -D ends the flows on a timer: the last marked frames may find
        # their QP destroyed already (not an NP's business), nothing more.
        seen = rnic.get("np_ecn_marked_roce_packets", 0)
        r.check(0.99 * cp["ecn_marked"] <= seen <= cp["ecn_marked"] and
                rnic.get("np_cnp_sent", 0) > 0,
                f"the receiver's NP saw {seen} of them and sent "
                f"{rnic.get('np_cnp_sent', 0)} CNPs")
        handled = stray = 0
        retransmitted = {k: v for k, v in rnic.items()
                         if k in RETRANSMISSIONS and v}
        if pfc:
            r.check(cp["tx_prio3_pause"] > 0 and cp["tail_drops"] == 0,
                    f"the receiver sent {cp['tx_prio3_pause']} PFC frames "
                    f"for priority 3 and dropped nothing (max depth "
                    f"{cp['max_depth_bytes']} B)")
        for i in range(n):
            port = netns_util.control(ds[f"s{i}"]["ctl"], {"cmd": "counters"},
                                      timeout=10)["ports"]["p0"]
            s = port["rnic"]
            h = s.get("rp_cnp_handled", 0)
            handled += h
            stray += s.get("rx_unknown_qp", 0) + s.get("rx_wrong_state", 0)
            r.check(h > 0, f"sender {i}'s DCQCN handled {h} CNPs")
            retransmitted.update({f"s{i}.{k}": v for k, v in s.items()
                                  if k in RETRANSMISSIONS and v})
            print(f"     sender {i} port " + ", ".join(
                f"{k} {port[k]}" for k in ("tx_packets", "rx_packets",
                                           "rx_missed", "tx_dropped")))
            if pfc:
                paused = port["pfc"]["counters"].get("rx_prio3_pause", 0)
                r.check(0 < paused <= cp["tx_prio3_pause"],
                        f"sender {i} obeyed {paused} of them")
        if pfc:
            r.check(not retransmitted,
                    f"lossless: no retransmission anywhere {retransmitted}")
            if retransmitted:
                print(f"     receiver rnic {rnic}")
        sent = rnic.get("np_cnp_sent", 0)
        # -D ends a flow while its last frames still wait in the queue:
        # the CNPs their marks cause find the sender's QP destroyed, and
        # the sender counts them with everything else addressed to a QP it
        # no longer has.
        r.check(handled <= sent and sent - handled <= stray,
                f"the senders handled {handled} of the {sent} CNPs; the "
                f"other {sent - handled} are within the {stray} frames they "
                "received for QPs already gone")
        if len(goodput) == n:
            total = sum(goodput)
            fair = total / n
            jain = total ** 2 / (n * sum(g * g for g in goodput))
            print(f"     goodput {goodput} Gb/s, total {total:.2f} of 1 Gb/s,"
                  f" Jain's index {jain:.3f}")
            r.check(all(abs(g - fair) <= 0.25 * fair for g in goodput),
                    f"every flow within 25 % of the fair share {fair:.3f}")
            r.check(total <= 1.1, "the bottleneck bounds the sum")
    return netns_util.verdict(r.failures)


if __name__ == "__main__":
    sys.exit(main())
