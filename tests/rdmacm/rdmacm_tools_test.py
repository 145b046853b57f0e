#!/usr/bin/env python3
"""Debian's unmodified rdma_cm programs (rdmacm-utils, perftest -R) between
two rocemud daemons over memif, each side loading rocemu's drop-in
librdmacm.so.1 and libibverbs.so.1: rping (RC, the library driving the QP,
and -q where rping drives it itself with rdma_init_qp_attr/rdma_establish),
ucmatose with several connections, udaddy (UD through SIDR), mckey (UD
multicast: one receiver across the link, one on the sender's daemon), a
connection
to a port nobody listens on (REJECTED, reason 8), a server bound to
127.0.0.1 (a loopback address binds as the wildcard, as in the kernel's
rdma_cm) and a client to 127.0.0.1 (no route: ENODEV, as on rxe),
rdma_server/rdma_client
and rdma_xserver/rdma_xclient over RC (16 bytes inline on a QP that asked
for none) and over XRC (-c x: an INI QP to a TGT QP and XRC SRQ that
librdmacm makes in its own XRC domain, the SRQ number in the REP), and
ib_{write,send,read}_bw -R, and rstream over stream rsockets (default, blocking, rpoll-driven and
non-blocking, data verified, messages larger than the receive buffer; and a
peer killed mid-stream) and riostream over riomap/riowrite. Each tool's own checks decide, then both daemons'
CM counters must show the handshakes and nothing lost or malformed.

While rping's server listens, rocemu-ctl cm must show its listener (state,
service ID, pid). Servers are started, then clients once the daemon's CM
lists the server's listener.

rsocket_probe (a C program on Debian's librdmacm) checks the rsocket calls
rstream does not make: a non-blocking connect, SHUT_WR half-close and EOF,
MSG_PEEK, rselect on a listener, names, SOCK_DGRAM refused.

xrc_mismatch_probe (the same, on <rdma/rdma_cma.h>) connects an XRC INI QP
to an RC id and an RC QP to an XRC_RECV id: both REJECTED with status 9.

cm_channel_probe (likewise) waits for 90 events, each before it comes, and
checks that the event channel's fd is not readable after any of them.

Usage: rdmacm_tools_test.py ROCEMUD DROPIN_DIR RDMACM_DIR ROCEMU_CTL
                            RSOCKET_PROBE XRC_MISMATCH_PROBE CM_CHANNEL_PROBE
"""
import os
import re
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "emulator"))
sys.path.insert(0, os.path.join(HERE, "..", "ibverbs"))
import netns_util  # noqa: E402
import stock_tools_test as stock  # noqa: E402

A_IP, B_IP = "10.122.2.1", "10.122.2.2"


class CmRun(stock.Run):
    def __init__(self, rocemud, dropin, rdmacm):
        super().__init__(rocemud, dropin)
        self.rdmacm = rdmacm
        self.port = 7000 + self.pid % 1000

    def env(self, daemon):
        e = super().env(daemon)
        e["LD_LIBRARY_PATH"] = self.rdmacm + ":" + self.dropin
        return e

    def pair_cm(self, ns, a, b, server, client, timeout=120, listen=None,
                on_listen=None):
        """`server` on daemon A, then `client` on daemon B (argv lists with
        {port} filled in) once A's CM lists a listener on port `listen`
        (default: the test's port); both (returncode, output)."""
        def start():
            self.port += 1

            def fill(v):
                return [x.format(port=self.port) for x in v]
            srv = self.tool(ns, a, fill(server), timeout)
            entry = wait_listener(a, listen or self.port)
            if on_listen is not None:
                on_listen(srv, entry)
            return srv, self.tool(ns, b, fill(client), timeout)
        src, sout, crc, cout = netns_util.collect_pair(start, timeout)
        return (crc, cout), (src, sout)

    def collect(self, procs, timeout):
        return netns_util.collect(procs, timeout)


def cm_ids(d):
    c = netns_util.control(d["ctl"], {"cmd": "cm"}, timeout=10)
    return c["ports"][0]["cm_ids"]


def wait_listener(d, port, timeout=20):
    """A's CM id listening on `port` (any port space), or None."""
    return netns_util.cm_listener(d["ctl"], port, timeout)


def wait_group(d, gid, members, timeout=20):
    """Whether the daemon's multicast group `gid` reaches exactly `members`
    attached QPs (0: the group is gone) within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        c = netns_util.control(d["ctl"], {"cmd": "qps"}, timeout=10)
        n = sum(len(g["qpns"]) for g in c["ports"][0]["multicast_groups"]
                if g["gid"] == gid)
        if n == members:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def by_type(d):
    """The daemon's verbs requests so far, by type, and their total."""
    v = netns_util.control(d["ctl"], {"cmd": "clients"},
                           timeout=10)["ports"][0]["verbs"]
    return v["requests_by_type"], v["counters"]["requests"]


def cm_counters(d):
    c = netns_util.control(d["ctl"], {"cmd": "counters"}, timeout=10)
    return c["ports"]["p0"]["rnic"]


def main():
    rocemud, dropin, rdmacm, ctl, probe, xrc_probe, channel_probe = (
        os.path.abspath(p) for p in sys.argv[1:8])
    if os.geteuid() != 0:
        print("FAIL: the net suite needs root")
        return 1
    r = CmRun(rocemud, dropin, rdmacm)
    start = time.monotonic()
    with netns_util.failures_reported(r):
        ns, a, b = stock.setup(r, "memif")

        def show_listener(srv, entry):
            # What operators see while a server waits.
            want = f"0x{0x0106:012x}{r.port:04x}"
            r.check(entry is not None and entry["state"] == "LISTEN" and
                    entry["service_id"] == want and entry["pid"] == srv.pid
                    and entry["bound"] == A_IP,
                    f"rping server's listener in the daemon's CM: {entry}")
            out = subprocess.run([ctl, "--socket", a["ctl"], "cm"],
                                 capture_output=True, text=True, timeout=10)
            r.check(out.returncode == 0 and re.search(
                rf"rocemu_p0\s+\d+\s+LISTEN\s+listen\s+{want}\s", out.stdout)
                    is not None, "rocemu-ctl cm lists it:\n" + out.stdout)

        # rping: pings of 64 bytes, validated (-V) and printed (-v).
        for extra, n, what in (([], 1000, "rping"), (["-q"], 50, "rping -q")):
            (crc, cout), (src, sout) = r.pair_cm(
                ns, a, b,
                ["rping", "-s", "-a", A_IP, "-p", "{port}", "-C", str(n),
                 "-S", "64", "-V"] + extra,
                ["rping", "-c", "-a", A_IP, "-p", "{port}", "-C", str(n),
                 "-S", "64", "-v", "-V"] + extra,
                on_listen=show_listener if not extra else None)
            # stdout and stderr share the pipe: count distinct ping numbers.
            seen = {int(x) for x in re.findall(r"rdma-ping-(\d+):", cout)}
            pings = len(seen & set(range(n)))
            ok = src == 0 and crc == 0 and pings == n
            r.check(ok, f"{what} -C {n}: server {src}, client {crc}, "
                    f"{pings}/{n} pings echoed and validated")
            if not ok:
                netns_util.print_pair_output(sout, cout)

        # A port nobody listens on: the peer's CM rejects (reason 8).
        r.port += 1
        p = r.tool(ns, b, ["rping", "-c", "-a", A_IP, "-p", str(r.port),
                           "-C", "1"], 60)
        [(crc, cout)] = r.collect([p], 60)
        ok = crc != 0 and re.search(r"RDMA_CM_EVENT_REJECTED, error 8", cout)
        r.check(bool(ok), f"rping to a closed port: REJECTED with reason 8 "
                f"(exit {crc})")
        if not ok:
            print(cout[-1500:])

        # A loopback address binds as the wildcard does (the kernel's
        # rdma_cm: cma_any_addr): rping's server bound to 127.0.0.1 on A
        # takes B's connection to A's address. A client resolving
        # 127.0.0.1 gets its device but no route (RoCE has none to a
        # loopback address), as on rxe.
        (crc, cout), (src, sout) = r.pair_cm(
            ns, a, b,
            ["rping", "-s", "-a", "127.0.0.1", "-p", "{port}", "-C", "10",
             "-S", "64", "-V"],
            ["rping", "-c", "-a", A_IP, "-p", "{port}", "-C", "10", "-S",
             "64", "-v", "-V"])
        seen = {int(x) for x in re.findall(r"rdma-ping-(\d+):", cout)}
        ok = src == 0 and crc == 0 and len(seen & set(range(10))) == 10
        r.check(ok, f"rping server bound to 127.0.0.1, client to {A_IP}: "
                f"server {src}, client {crc}, {len(seen)}/10 pings")
        if not ok:
            netns_util.print_pair_output(sout, cout)
        p = r.tool(ns, b, ["rping", "-c", "-a", "127.0.0.1", "-p",
                           str(r.port), "-C", "1"], 30)
        [(crc, cout)] = r.collect([p], 30)
        says = "rdma_resolve_route: No such device"
        r.check(crc != 0 and says in cout,
                f"rping -c -a 127.0.0.1: '{says}' (exit {crc})")
        if says not in cout:
            print(cout[-1000:])

        def both_finish(what, server, client, server_says, client_says,
                        **kw):
            (crc, cout), (src, sout) = r.pair_cm(ns, a, b, server, client,
                                                 **kw)
            ok = src == 0 and crc == 0 and server_says in sout and \
                client_says in cout
            r.check(ok, f"{what}: server {src}, client {crc}")
            if not ok:
                netns_util.print_pair_output(sout, cout)

        # ucmatose: 4 RC connections, 20 messages each way on each.
        both_finish(
            "ucmatose -c 4 -C 20",
            ["ucmatose", "-b", A_IP, "-p", "{port}", "-c", "4", "-C", "20"],
            ["ucmatose", "-s", A_IP, "-p", "{port}", "-c", "4", "-C", "20"],
            "test complete", "test complete")
        # The same with an ACK timeout set on every id (and a TOS on the
        # client's): rdma_accept then moves the QP with cm_modify_qp, which
        # carries them, before its cm_accept, where it otherwise folds the
        # move into the cm_accept (kCmAcceptToRts).
        a0 = by_type(a)[0]
        both_finish(
            "ucmatose -c 4 -C 20 -a 18 (-t 32)",
            ["ucmatose", "-b", A_IP, "-p", "{port}", "-c", "4", "-C", "20",
             "-a", "18"],
            ["ucmatose", "-s", A_IP, "-p", "{port}", "-c", "4", "-C", "20",
             "-a", "18", "-t", "32"],
            "test complete", "test complete")
        a1 = by_type(a)[0]
        moves = {k: a1.get(k, 0) - a0.get(k, 0)
                 for k in ("cm_modify_qp", "cm_accept")}
        r.check(moves == {"cm_modify_qp": 4, "cm_accept": 4},
                f"an id with an ACK timeout: its QP moved by cm_modify_qp "
                f"before the cm_accept ({moves})")
        # udaddy: UD, the service resolved by SIDR; 2 ids, 10 messages.
        both_finish(
            "udaddy -c 2 -C 10",
            ["udaddy", "-b", A_IP, "-c", "2", "-C", "10"],
            ["udaddy", "-s", A_IP, "-c", "2", "-C", "10"],
            "test complete", "test complete", listen=7174)
        # mckey: UD multicast. Receivers join 239.1.2.3 on A (the sender's
        # frames cross the link) and on B (the sender's own daemon loops
        # them back); once both QPs are attached, B's sender joins and sends
        # 20 messages to the group's QPN 0xFFFFFF.
        group, msgs = "239.1.2.3", 20
        rx = [r.tool(ns, d, ["mckey", "-m", group, "-b", ip, "-C",
                             str(msgs)], 60)
              for d, ip in ((a, A_IP), (b, B_IP))]
        members = wait_group(a, group, 1) and wait_group(b, group, 1)
        r.check(members, f"both receivers' QPs attached to {group} "
                "(rocemu-ctl qps: multicast_groups)")
        before = [cm_counters(d).get("multicast_rcv_packets", 0)
                  for d in (a, b)]
        tx = r.tool(ns, b, ["mckey", "-m", group, "-b", B_IP, "-s", "-C",
                            str(msgs)], 60)
        outs = r.collect([tx] + rx, 60)
        got = [cm_counters(d).get("multicast_rcv_packets", 0) - n
               for d, n in zip((a, b), before)]
        ok = all(rc == 0 and "test complete" in out for rc, out in outs) \
            and got == [msgs, msgs]
        r.check(ok, f"mckey -C {msgs}: sender and both receivers "
                f"{[rc for rc, _ in outs]}, group frames received by A/B "
                f"{got}")
        if not ok:
            for rc, out in outs:
                print(f"     exit {rc}: {out[-600:]}")
            # Where UD frames can go: every drop is counted somewhere.
            for d in (a, b):
                port = netns_util.control(d["ctl"], {"cmd": "counters"},
                                          timeout=10)["ports"]["p0"]
                flat = dict(port.get("rnic", {}))
                flat.update({k: v for k, v in port.items()
                             if not isinstance(v, dict)})
                print(f"     {d['name']} nonzero drops/misses: " + str(
                    {k: v for k, v in flat.items() if v and any(
                        w in k for w in ("drop", "miss", "full", "nombuf",
                                         "mcast", "rnr", "out_of"))}))
        r.check(wait_group(a, group, 0) and wait_group(b, group, 0),
                f"{group} has no member left once the programs exit")
        # Each daemon told the link (IGMPv3) that it joined and left.
        reports = [netns_util.control(d["ctl"], {"cmd": "counters"},
                                      timeout=10)["ports"]["p0"]
                   .get("tx_igmp_reports", 0) for d in (a, b)]
        r.check(all(n >= 2 for n in reports),
                f"IGMPv3 reports (join, leave) sent by A/B: {reports}")

        # The synchronous endpoint API (rdma_create_ep, rdma_get_request,
        # rdma_reg_msgs, rdma_post_send/recv, rdma_get_*_comp).
        both_finish(
            "rdma_server / rdma_client",
            ["rdma_server", "-s", A_IP, "-p", "{port}"],
            ["rdma_client", "-s", A_IP, "-p", "{port}"],
            "rdma_server: end", "rdma_client: end")
        # rdma_xserver / rdma_xclient over RC: the client's QP asks for no
        # inline data and posts its 16 bytes with IBV_SEND_INLINE, which
        # the send slot's grant covers (as on rxe and mlx5).
        both_finish(
            "rdma_xserver / rdma_xclient -c r (16 bytes inline)",
            ["rdma_xserver", "-c", "r", "-p", "{port}"],
            ["rdma_xclient", "-s", A_IP, "-c", "r", "-p", "{port}"],
            "rdma_xserver: end 0", "rdma_xclient: end 0")
        # The same over XRC (-c x, port space RDMA_PS_IB): the server's
        # librdmacm opens an XRC domain and makes a TGT QP for the request
        # and an XRC SRQ (with its CQ) whose number goes back in the REP's
        # private data; the client connects an INI QP (REQ transport XRC)
        # and sends its 16 bytes to that SRQ.
        def ps_ib_listener(srv, entry):
            want = f"0x{0x013F:012x}{r.port:04x}"
            r.check(entry is not None and entry["service_id"] == want,
                    f"rdma_xserver -c x listens on RDMA_PS_IB: {entry}")
        both_finish(
            "rdma_xserver / rdma_xclient -c x (XRC)",
            ["rdma_xserver", "-c", "x", "-p", "{port}"],
            ["rdma_xclient", "-s", A_IP, "-c", "x", "-p", "{port}"],
            "rdma_xserver: end 0", "rdma_xclient: end 0",
            on_listen=ps_ib_listener)
        # Transports the listening id does not take: the daemon's CM
        # rejects them (9, invalid transport service type), and the server
        # is handed no request.
        r.port += 2
        rej_before = cm_counters(a).get("cm_rej_sent", 0)
        srv = r.tool(ns, a, [xrc_probe, "server", str(r.port)], 60)
        listening = wait_listener(a, r.port) is not None and \
            wait_listener(a, r.port + 1) is not None
        r.check(listening, "xrc_mismatch_probe's RC and XRC_RECV listeners")
        [(crc, cout)] = r.collect(
            [r.tool(ns, b, [xrc_probe, "client", A_IP, str(r.port)], 60)], 60)
        os.killpg(srv.pid, 9)
        sout = srv.communicate()[0] or ""
        rejs = cm_counters(a).get("cm_rej_sent", 0) - rej_before
        ok = crc == 0 and "xrc_mismatch_probe client: ok" in cout and \
            "server: listening" in sout and "FAIL" not in sout and rejs == 2
        handed = "a request" if "FAIL" in sout else "no request"
        r.check(ok, f"xrc_mismatch_probe: client {crc}, A sent {rejs} REJ, "
                f"the server handed {handed}")
        if not ok:
            netns_util.print_pair_output(sout, cout)
        r.port += 1
        # channel->fd says exactly what waits: 30 connects to a port nobody
        # listens on, each event waited for before it comes; the fd must
        # not read readable after any of them.
        r.port += 1
        [(rc, out)] = r.collect([r.tool(ns, b, [channel_probe, A_IP,
                                                str(r.port), "30"], 60)], 60)
        r.check(rc == 0 and "ok" in out.split(),
                f"cm_channel_probe: exit {rc}: {out.strip()[-300:]}")

        # A connection storm: cmtime opens 50 connections at once, then
        # closes them (its server runs until stopped). Per connection each
        # side makes only the control requests that cannot be folded: the
        # QP comes back from create_qp in INIT (no modify_qp), the active
        # side's RTR and RTS come in one cm_modify_qp (no attribute query
        # and modify per step), the passive side's in its cm_accept, and
        # the active side's ERR in its cm_disconnect. The passive side's
        # one modify_qp is its own rdma_disconnect's ERR after the DREQ.
        per_conn = {
            "a": {"create_qp", "modify_qp", "cm_accept", "destroy_qp",
                  "cm_destroy"},
            "b": {"create_qp", "cm_resolve", "cm_connect", "cm_modify_qp",
                  "cm_disconnect", "destroy_qp", "cm_destroy"},
        }

        before = [by_type(d) for d in (a, b)]
        r.port += 1
        srv = r.tool(ns, a, ["cmtime", "-b", A_IP, "-p", str(r.port), "-c",
                             "50"], 60)
        wait_listener(a, r.port)
        cli = r.tool(ns, b, ["cmtime", "-s", A_IP, "-p", str(r.port), "-c",
                             "50"], 60)
        [(crc, cout)] = r.collect([cli], 60)
        # The server tears its side down on its own thread after the
        # client has gone: stopped only once it has (or at a deadline, and
        # the counts below tell).
        deadline = time.monotonic() + 20
        while (by_type(a)[0].get("cm_destroy", 0) -
               before[0][0].get("cm_destroy", 0) < 50 and
               time.monotonic() < deadline):
            time.sleep(0.05)
        os.killpg(srv.pid, 9)
        srv.communicate()
        steps = re.findall(r"^(connect|disconnect)\s*:\s+[\d.]+", cout, re.M)
        ok = crc == 0 and steps == ["connect", "disconnect"]
        r.check(ok, f"cmtime -c 50: client {crc}, connect and disconnect "
                "steps timed")
        if not ok:
            print(cout[-1500:])
        for name, d, (types0, total0) in (("a", a, before[0]),
                                          ("b", b, before[1])):
            types1, total1 = by_type(d)
            delta = {k: v - types0.get(k, 0) for k, v in types1.items()
                     if v != types0.get(k, 0)}
            # Besides: each process's start-up and end (hello, the PD, the
            # device and port, the GID table in one batch, two CQs).
            many = {k for k, v in delta.items() if v > 2}
            r.check(many == per_conn[name] and
                    all(delta[k] == 50 for k in per_conn[name]),
                    f"daemon {name}: per connection one each of "
                    f"{sorted(per_conn[name])} and nothing else "
                    f"({(total1 - total0) / 50:.1f} requests per connection: "
                    f"{delta})")

        # A storm into a server that cannot read its events: cmtime's
        # server is stopped (SIGSTOP, as Ctrl-Z does) while 400 REQs arrive,
        # more CONNECT_REQUEST events than its event ring holds. The daemon
        # keeps the rest in order until the ring has room, as the kernel's
        # rdma_cm queues them, and the continued server (its blocked
        # rdma_get_cm_event carries on after SIGCONT) accepts all 400.
        storm = 400
        v0 = netns_util.control(a["ctl"], {"cmd": "clients"},
                                timeout=10)["ports"][0]["verbs"]["counters"]
        c0 = cm_counters(a)
        r.port += 1
        srv = r.tool(ns, a, ["cmtime", "-b", A_IP, "-p", str(r.port), "-c",
                             str(storm)], 60)
        wait_listener(a, r.port)
        os.killpg(srv.pid, signal.SIGSTOP)
        cli = r.tool(ns, b, ["cmtime", "-s", A_IP, "-p", str(r.port), "-c",
                             str(storm)], 60)
        deadline = time.monotonic() + 20
        while (cm_counters(a).get("cm_req_rcvd", 0) - c0.get("cm_req_rcvd", 0)
               < storm and time.monotonic() < deadline):
            time.sleep(0.02)
        time.sleep(0.1)  # the events of the last REQs reach the session
        v1 = netns_util.control(a["ctl"], {"cmd": "clients"},
                                timeout=10)["ports"][0]["verbs"]["counters"]
        os.killpg(srv.pid, signal.SIGCONT)
        [(crc, cout)] = r.collect([cli], 60)
        c1 = cm_counters(a)
        os.killpg(srv.pid, 9)
        sout = srv.communicate()[0] or ""
        deferred = (v1.get("cm_events_deferred", 0) -
                    v0.get("cm_events_deferred", 0))
        dropped = (v1.get("cm_events_dropped", 0) -
                   v0.get("cm_events_dropped", 0))
        rtus = c1.get("cm_rtu_rcvd", 0) - c0.get("cm_rtu_rcvd", 0)
        rejs = c1.get("cm_rej_sent", 0) - c0.get("cm_rej_sent", 0)
        steps = re.findall(r"^(connect|disconnect)\s*:\s+[\d.]+", cout, re.M)
        ok = (crc == 0 and steps == ["connect", "disconnect"] and
              deferred > 0 and dropped == 0 and rtus == storm and rejs == 0)
        r.check(ok, f"cmtime -c {storm} into a stopped server: client {crc}, "
                f"{deferred} events waited for room, {dropped} dropped, "
                f"{rtus} RTUs and {rejs} REJs at the server")
        if not ok:
            netns_util.print_pair_output(sout, cout)

        # perftest with its connection made by rdma_cm (-R).
        for tool, size in (("ib_write_bw", "65536"), ("ib_send_bw", "4096"),
                           ("ib_read_bw", "4096"), ("ib_send_lat", "64")):
            argv = [tool, "-d", stock.DEV, "-R", "-s", size, "-n", "200",
                    "-p", "{port}"]
            if tool.endswith("_bw"):
                argv.append("--report_gbits")
            (crc, cout), (src, sout) = r.pair_cm(ns, a, b, argv,
                                                 argv + [A_IP], timeout=180)
            rows = stock.perftest_rows(cout)
            ok = src == 0 and crc == 0 and int(size) in rows
            r.check(ok, f"{tool} -R -s {size}: server {src}, client {crc}")
            if not ok:
                netns_util.print_pair_output(sout, cout)

        # rsockets: Debian's rstream, both sides on the drop-in's stream
        # rsockets. -T v makes each receiver check every byte (rstream
        # exits non-zero on a mismatch); -B 16384 gives 32 KiB receive
        # buffers, so messages span many buffer halves handed back by SGL
        # updates. Default mode is non-blocking (MSG_DONTWAIT, O_NONBLOCK).
        rstream_cases = (
            ("default, 97 KiB messages, 32 KiB buffers, 2 iterations",
             ["-S", "100000", "-C", "50", "-I", "2", "-B", "16384"]),
            ("blocking, no inline data, 292 KiB messages, 32 KiB buffers",
             ["-S", "300000", "-C", "10", "-B", "16384", "-i", "0", "-T",
              "b"]),
            ("blocking, 2.9 MiB messages, default 1 MiB buffers",
             ["-S", "3000000", "-C", "4", "-T", "b"]),
            ("rpoll-driven, 195 KiB messages, 32 KiB buffers",
             ["-S", "200000", "-C", "20", "-B", "16384", "-T", "a"]),
            ("rpoll-driven, 2000 messages of 100 bytes (credit updates)",
             ["-S", "100", "-C", "2000", "-T", "a"]),
            ("non-blocking, 1000 messages of 4 KiB",
             ["-S", "4096", "-C", "1000", "-T", "n"]))
        # riostream: the same over riomap/riowrite, each side writing
        # straight into the buffer the other mapped (its last byte is the
        # marker the receiver spins on; -T v checks the rest).
        riostream_cases = (
            ("default, 97 KiB writes", ["-S", "100000", "-C", "50"]),
            ("blocking, 976 KiB writes", ["-S", "1000000", "-C", "10",
                                          "-T", "b"]),
            ("rpoll-driven, 64 KiB writes", ["-S", "65536", "-C", "100",
                                             "-T", "a"]))
        rstream_start = time.monotonic()
        for tool, cases in (("rstream", rstream_cases),
                            ("riostream", riostream_cases)):
            for what, opts in cases:
                opts = opts + ["-T", "v"]
                (crc, cout), (src, sout) = r.pair_cm(
                    ns, a, b, [tool, "-b", A_IP, "-p", "{port}"] + opts,
                    [tool, "-s", A_IP, "-p", "{port}"] + opts, timeout=60)
                # The result row: name, size, transfers, iterations,
                # total ...
                rows = [re.search(
                    r"^custom\s+\S+\s+\S+\s+\S+\s+\S+\s+[\d.]+s", o, re.M)
                        for o in (sout, cout)]
                ok = src == 0 and crc == 0 and all(rows) and \
                    "verification failed" not in sout + cout
                r.check(ok, f"{tool} {what} ({' '.join(opts)}): server "
                        f"{src}, client {crc}, data verified both ways")
                if not ok:
                    netns_util.print_pair_output(sout, cout)
        # A blocking rconnect to a port nobody listens on: the CM's
        # REJ becomes ECONNREFUSED.
        r.port += 1
        p = r.tool(ns, b, ["rstream", "-s", A_IP, "-p", str(r.port), "-T",
                           "b"], 30)
        [(crc, cout)] = r.collect([p], 30)
        refused = "rconnect: Connection refused" in cout
        r.check(crc != 0 and refused, f"rstream to a closed port: exit {crc}"
                f", {'' if refused else 'no '}\"rconnect: Connection "
                "refused\"")
        if not refused:
            print(cout[-800:])
        (crc, cout), (src, sout) = r.pair_cm(
            ns, a, b, [probe, "server", A_IP, "{port}"],
            [probe, "client", A_IP, "{port}"], timeout=60)
        ok = src == 0 and crc == 0 and \
            "rsocket_probe server: ok" in sout and \
            "rsocket_probe client: ok" in cout
        r.check(ok, f"rsocket_probe: server {src}, client {crc} "
                f"({sout.count('ok  ') + cout.count('ok  ')} checks passed)")
        if not ok:
            netns_util.print_pair_output(sout, cout)
        rstream_secs = time.monotonic() - rstream_start

        # Every connection is gone: no id left in either CM but in TimeWait
        # (whose exit is a few seconds away), and no listener. A DREQ the
        # last tool's exit sent may still await its DREP: a few seconds.
        def leftovers():
            return [e for d in (a, b) for e in cm_ids(d)
                    if e["state"] not in ("TIMEWAIT", "IDLE") or
                    e["listener"]]
        deadline = time.monotonic() + 10
        left = leftovers()
        while left and time.monotonic() < deadline:
            time.sleep(0.1)
            left = leftovers()
        r.check(not left, f"no CM id left behind: {left[:3]}")

        # Both CMs saw the handshakes, and nothing went wrong under them.
        ca, cb = cm_counters(a), cm_counters(b)
        # rping x3, ucmatose, rdma_client, rdma_xclient (RC, XRC), cmtime,
        # perftest, rstream, riostream, rsocket_probe
        conns = 3 + 4 + 1 + 2 + 50 + 4 + len(rstream_cases) + 3 + 1
        r.check(cb.get("cm_req_sent", 0) >= conns + 1 and
                ca.get("cm_rep_sent", 0) >= conns and
                cb.get("cm_rtu_sent", 0) >= conns,
                f"CM handshakes: B sent {cb.get('cm_req_sent')} REQ / "
                f"{cb.get('cm_rtu_sent')} RTU, A sent "
                f"{ca.get('cm_rep_sent')} REP (>= {conns})")
        r.check(ca.get("cm_rej_sent", 0) >= 1,
                f"A rejected the closed port ({ca.get('cm_rej_sent')} REJ)")
        r.check(cb.get("cm_sidr_req_sent", 0) >= 2 and
                ca.get("cm_sidr_rep_sent", 0) >= 2,
                f"SIDR: {cb.get('cm_sidr_req_sent')} requests, "
                f"{ca.get('cm_sidr_rep_sent')} replies")
        for d, c in (("a", ca), ("b", cb)):
            bad = {k: c.get(k) for k in (
                "mad_rx_drop_malformed", "mad_rx_drop_bad_version",
                "mad_tx_drop", "cm_event_drop", "cm_rx_wrong_state",
                "cm_timeouts", "retry_exceeded_err", "rx_malformed",
                "mr_access_faults")
                if c.get(k)}
            r.check(not bad, f"{d}: no CM or RNIC error counters {bad}")

        # A peer that dies mid-stream: the survivor's rsocket calls fail
        # with an error (rstream exits non-zero) instead of hanging. The
        # client is killed while the server waits in rrecv.
        kill_start = time.monotonic()
        r.port += 1
        opts = ["-p", str(r.port), "-S", "1000", "-C", "100000000", "-T",
                "b"]
        srv = r.tool(ns, a, ["rstream", "-b", A_IP] + opts, 60)
        wait_listener(a, r.port)
        cli = r.tool(ns, b, ["rstream", "-s", A_IP] + opts, 60)
        time.sleep(1)
        os.killpg(cli.pid, 9)
        cli.communicate()
        t0 = time.monotonic()
        [(src, sout)] = r.collect([srv], 20)
        ok = src not in (0, None) and "(timed out)" not in sout and \
            "Connection reset by peer" in sout
        r.check(ok, f"rstream server after its client was killed: exit {src} "
                f"after {time.monotonic() - t0:.1f} s")
        if not ok:
            print(sout[-1000:])
        rstream_secs += time.monotonic() - kill_start
        print(f"rstream/riostream cases: {rstream_secs:.1f} s")
    print(f"rdmacm tools: {time.monotonic() - start:.0f} s")
    return netns_util.verdict(r.failures)


if __name__ == "__main__":
    sys.exit(main())
