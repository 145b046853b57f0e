#!/usr/bin/env python3
"""Faults on a netdev port, each answered as a real RNIC would, with a clear
log line and no crash (tests/netdev/hosts.py: hosts on a bridge):

- a second daemon on an interface is refused, naming the first's pid;
- another program's XDP program on the interface: netdev_mode af_xdp
  refuses (naming it) and leaves it attached; auto falls back to af_packet
  and RDMA works beside it;
- a driver that refuses a native XDP program (a veth whose MTU is above a
  page): generic XDP, logged;
- the link set down and up, an address added and removed: ibv_asyncwatch
  (unmodified, over the drop-in) gets IBV_EVENT_PORT_ERR/_PORT_ACTIVE and
  IBV_EVENT_GID_CHANGE, rocemu-ctl shows the port state and GID table;
- the address a connection uses removed under it, and the MTU lowered
  under traffic: the connection's QP times out as over a pulled cable
  (rping fails) while the daemons carry on; a new connection works again;
- the interface renamed (logged, the device keeps its name, RDMA goes on)
  and deleted (port down, GIDs gone, the daemon answers and exits cleanly).

Usage: netdev_faults_test.py ROCEMUD DROPIN_DIR RDMACM_DIR OTHER_XDP_OBJ
"""
import os
import re
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hosts as hostslib  # noqa: E402
from hosts import netns_util, sh  # noqa: E402


def wait_log(host, pattern, timeout=10):
    """The first log line of `host` matching `pattern`, or None."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = re.search(pattern, host.log_text())
        if m:
            return m.group(0)
        time.sleep(0.05)
    return None


def gids(host):
    return [g["ip"] for g in host.port()["attr"]["gids"]]


def main():
    rocemud, dropin, rdmacm, other_xdp = (os.path.abspath(p)
                                          for p in sys.argv[1:5])
    if os.geteuid() != 0:
        print("FAIL: the net suite needs root")
        return 1
    c = hostslib.Cluster(rocemud, dropin, rdmacm, 3, net=126)
    start = time.monotonic()
    port = 7000 + c.pid % 1000

    def rping(a, b, ip, count, timeout=60, size=64, verbose=True):
        """rping from host a to `ip` (host b's server), `size`-byte pings
        (printed with `verbose`: nobody reads the pipe until the end, so
        not for an endless run): the server and client processes,
        started."""
        nonlocal port
        port += 1
        srv = b.tool(["rping", "-s", "-a", ip, "-p", str(port), "-C",
                      str(count), "-S", str(size), "-V"], timeout=timeout)
        if not b.wait_listener(port):
            os.killpg(srv.pid, signal.SIGKILL)
            srv.communicate()
            return None, None, 0
        cli = a.tool(["rping", "-c", "-a", ip, "-p", str(port), "-C",
                      str(count), "-S", str(size), "-V"] +
                     (["-v"] if verbose else []), timeout=timeout)
        return srv, cli, port

    def finish(srv, cli, count):
        cout, _ = cli.communicate()
        sout, _ = srv.communicate()
        return cli.returncode, srv.returncode, hostslib.rping_pings(cout,
                                                                    count)

    with netns_util.failures_reported(c):
        h0, h1, h2 = c.build()
        for h in (h0, h1):
            h.start()

        # One daemon per interface.
        other = subprocess.run(
            ["ip", "netns", "exec", h1.ns, rocemud, "--netdev", "eth0",
             "--run-dir", os.path.join(c.tmp, "second")],
            capture_output=True, text=True, timeout=30)
        c.check(other.returncode == 1 and
                f"eth0 is already a rocemu device: rocemud pid "
                f"{h1.proc.pid}" in other.stdout + other.stderr,
                f"a second daemon on h1's eth0 is refused: exit "
                f"{other.returncode}, "
                f"{(other.stdout + other.stderr).strip()[-200:]}")

        # Another program's XDP program on h2's eth0.
        sh("ip", "link", "set", "dev", "eth0", "xdpgeneric", "obj", other_xdp,
           "sec", "xdp", ns=h2.ns)
        h2.start(mode="af_xdp", wait=False)
        rc = h2.proc.wait(timeout=30)
        line = wait_log(h2, r"startup failed: .*", 1)
        c.check(rc == 1 and line is not None and
                "already has an XDP program of another" in line and
                "'other_xdp'" in line,
                f"netdev_mode af_xdp beside another XDP program: exit {rc}, "
                f"{line}")
        link = sh("ip", "link", "show", "eth0", ns=h2.ns).stdout
        c.check("name other_xdp" in link,
                "the other program stays attached")
        h2.start(mode="auto")
        line = wait_log(h2, r"no AF_XDP: .*using af_packet")
        c.check(line is not None and h2.port()["netdev"]["mode"].startswith(
            "af_packet"), f"netdev_mode auto falls back: {line}")
        srv, cli, _ = rping(h0, h2, h2.ip, 10)
        crc, src, got = finish(srv, cli, 10) if srv else (None, None, 0)
        c.check(crc == 0 and src == 0 and got == 10,
                f"rping h0 -> h2 (af_packet beside other_xdp): exit "
                f"{src}/{crc}, {got}/10 pings")
        c.check(h2.kill() == 0, "h2 exits cleanly")
        link = sh("ip", "link", "show", "eth0", ns=h2.ns).stdout
        c.check("name other_xdp" in link,
                "the other program is still attached after rocemud left")

        # A driver that refuses a native XDP program: veth takes one only
        # while its peer's MTU fits a page.
        sh("ip", "link", "set", "dev", "eth0", "xdpgeneric", "off", ns=h2.ns)
        sh("ip", "link", "set", "p2", "mtu", "9000", ns=c.switch)
        sh("ip", "link", "set", "eth0", "mtu", "9000", ns=h2.ns)
        h2.start(mode="af_xdp")
        line = wait_log(h2, r"refuses a native XDP program.*")
        mode = h2.port()["netdev"]["mode"]
        c.check(line is not None and "xdp generic" in mode,
                f"native XDP refused: {mode}; {line}")
        c.check(h2.kill() == 0, "h2 exits cleanly")

        # Port and GID events, as an application sees them.
        events_file = os.path.join(c.tmp, "asyncwatch.out")
        with open(events_file, "w") as out:
            watch = subprocess.Popen(
                ["timeout", "60", "ip", "netns", "exec", h0.ns,
                 "ibv_asyncwatch", "-d", "rocemu_eth0"], env=h0.env(),
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

        def seen():
            with open(events_file) as f:
                return re.findall(r"event_type (IBV_EVENT_\w+)", f.read())
        # Attached (it prints its async FD once the device is open) before
        # the first change.
        netns_util.wait_for("ibv_asyncwatch attached",
                            lambda: "async event FD" in open(events_file).read(),
                            timeout=30)
        sh("ip", "link", "set", "eth0", "down", ns=h0.ns)
        netns_util.wait_for("h0 DOWN", lambda: h0.port()["attr"]["state"] ==
                            "IBV_PORT_DOWN")
        sh("ip", "link", "set", "eth0", "up", ns=h0.ns)
        netns_util.wait_for("h0 ACTIVE", lambda: h0.port()["attr"]["state"] ==
                            "IBV_PORT_ACTIVE")
        extra = f"10.{c.net}.9.1"
        sh("ip", "addr", "add", f"{extra}/24", "dev", "eth0", ns=h0.ns)
        netns_util.wait_for("the new GID", lambda: extra in gids(h0))
        sh("ip", "addr", "del", f"{extra}/24", "dev", "eth0", ns=h0.ns)
        netns_util.wait_for("the GID gone", lambda: extra not in gids(h0))
        # Down, up, the address in, the address out: at least two GID
        # changes after PORT_ACTIVE.
        try:
            netns_util.wait_for(
                "the events", lambda: "IBV_EVENT_PORT_ACTIVE" in seen() and
                seen()[seen().index("IBV_EVENT_PORT_ACTIVE"):].count(
                    "IBV_EVENT_GID_CHANGE") >= 2)
        except AssertionError:
            pass  # the check below says what came
        os.killpg(watch.pid, signal.SIGTERM)
        watch.wait()
        seq = seen()
        port_events = [e for e in seq if e.startswith("IBV_EVENT_PORT")]
        c.check(port_events[:2] == ["IBV_EVENT_PORT_ERR",
                                    "IBV_EVENT_PORT_ACTIVE"] and
                seq.count("IBV_EVENT_GID_CHANGE") >= 2,
                f"ibv_asyncwatch: {seq}")

        # The address a connection uses, removed under it: h1 serves on a
        # second address of its own, h0 reaches that subnet on the link.
        sec = f"10.{c.net}.1.2"
        sh("ip", "addr", "add", f"{sec}/24", "dev", "eth0", ns=h1.ns)
        sh("ip", "route", "add", f"10.{c.net}.1.0/24", "dev", "eth0",
           ns=h0.ns)
        netns_util.wait_for("h1's second GID", lambda: sec in gids(h1))
        def broken(what, change, host, pattern, **kw):
            """An endless rping h0 -> `host` whose path `change` breaks:
            the server's RDMA READs (rping's server reads each ping from
            the client) get no answer and its QP runs out of retries, as
            over a pulled cable; the server fails, the client sees the
            disconnection. The log names the change."""
            before = sum(h.counters()["rnic"].get("retry_exceeded_err", 0)
                         for h in (h0, host))
            srv, cli, _ = rping(h0, host, kw.pop("ip"), 100000, timeout=90,
                                verbose=False, **kw)
            c.check(srv is not None, f"{what}: rping server listens")
            if srv is None:
                return
            # Connected and pinging before the path breaks (a connection
            # request after it would be refused, e.g. for its MTU).
            def pinged():
                qps = host.control("qps")["ports"][0]["qps"]
                return max([q["counters"]["rcvd_pkts"] for q in qps
                            if q["state"] == "RTS"] + [0])
            netns_util.wait_for(f"{what}: pings", lambda: pinged() > 20,
                                timeout=30)
            got = pinged()
            change()
            t0 = time.monotonic()

            def retries():
                return sum(h.counters()["rnic"].get("retry_exceeded_err", 0)
                           for h in (h0, host))
            # Whichever side was sending runs out of retries; the other
            # may wait for ever (it has nothing outstanding), as over a
            # real cable.
            failed = False
            while time.monotonic() - t0 < 60 and not failed:
                failed = retries() > before
                time.sleep(0.2)
            took = time.monotonic() - t0
            if not failed:
                for h in (h0, host):
                    print(f"h{h.i} qps:", h.control("qps"))
            for p in (srv, cli):
                if p.poll() is None:
                    os.killpg(p.pid, signal.SIGKILL)
            sout, _ = srv.communicate()
            cout, _ = cli.communicate()
            c.check(failed,
                    f"{what}: after {got} packets a QP ran out of retries "
                    f"{took:.1f} s later (retry_exceeded_err {before} -> "
                    f"{retries()})")
            if not failed:
                netns_util.print_pair_output(sout, cout)
            line = wait_log(host, pattern)
            c.check(line is not None, f"{what}: logged: {line}")

        broken("address removed under a connection",
               lambda: sh("ip", "addr", "del", f"{sec}/24", "dev", "eth0",
                          ns=h1.ns),
               h1, rf"{re.escape(sec)} is no longer eth0's: GID index \d+ "
               r"removed.*", ip=sec)

        # MTU lowered under traffic: 2000-byte pings, so that the READ
        # responses h1 gets carry 1024 bytes of payload, which no longer
        # fit its link (its veth drops them on receipt).
        broken("MTU lowered under a connection",
               lambda: sh("ip", "link", "set", "eth0", "mtu", "1000",
                          ns=h1.ns),
               h1, r"eth0's MTU is now 1000: active MTU IBV_MTU_512 for new "
               r"QPs \(QPs with a larger path MTU.*", ip=h1.ip, size=2000)
        c.check(h1.port()["attr"]["active_mtu"] == 512,
                "h1: active MTU 512 for new QPs")
        sh("ip", "link", "set", "eth0", "mtu", "1500", ns=h1.ns)
        netns_util.wait_for("h1 MTU 1024", lambda: h1.port()["attr"][
            "active_mtu"] == 1024)
        srv, cli, _ = rping(h0, h1, h1.ip, 10)
        crc, src, got = finish(srv, cli, 10) if srv else (None, None, 0)
        c.check(crc == 0 and src == 0 and got == 10,
                f"the daemons carry on: a new rping h0 -> h1: exit "
                f"{src}/{crc}, {got}/10 pings")

        # Renamed, then deleted.
        sh("ip", "link", "set", "eth0", "down", ns=h1.ns)
        sh("ip", "link", "set", "eth0", "name", "eth9", ns=h1.ns)
        sh("ip", "link", "set", "eth9", "up", ns=h1.ns)
        sh("ip", "addr", "replace", f"{h1.ip}/24", "dev", "eth9", ns=h1.ns)
        line = wait_log(h1, r"now named eth9; the device keeps its name "
                        r"rocemu_eth0")
        netns_util.wait_for("h1 ACTIVE", lambda: h1.port()["attr"]["state"] ==
                            "IBV_PORT_ACTIVE")
        srv, cli, _ = rping(h0, h1, h1.ip, 10)
        crc, src, got = finish(srv, cli, 10) if srv else (None, None, 0)
        c.check(line is not None and crc == 0 and src == 0 and got == 10,
                f"renamed to eth9: {line}; rping exit {src}/{crc}, "
                f"{got}/10 pings")
        sh("ip", "link", "del", "eth9", ns=h1.ns)
        line = wait_log(h1, r"interface eth9 \(index \d+\) was deleted.*")
        netns_util.wait_for("h1 DOWN", lambda: h1.port()["attr"]["state"] ==
                            "IBV_PORT_DOWN")
        c.check(line is not None and not gids(h1),
                f"deleted: port down, no GID left: {line}")
        c.check(h1.kill() == 0, "h1 exits cleanly after its interface went")
        c.check(h0.kill() == 0, "h0 exits cleanly")
        for h in (h0, h1, h2):
            crashed = re.search(r"Segmentation|Aborted|sanitizer|"
                                r"terminate called", h.log_text())
            c.check(crashed is None, f"h{h.i}'s log shows no crash")
        if c.failures:
            c.print_logs(4000)
    print(f"     {time.monotonic() - start:.1f} s")
    return netns_util.verdict(c.failures)


if __name__ == "__main__":
    sys.exit(main())
