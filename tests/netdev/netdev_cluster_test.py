#!/usr/bin/env python3
"""A cluster of hosts as a user's VMs would be (tests/netdev/hosts.py): N
network namespaces, the kernel's address on each one's eth0, all on one
bridge, and on each its own `rocemud --netdev eth0`. Debian's unmodified
rping and perftest over the drop-in libraries, between hosts:

- every daemon came up on AF_XDP, its GID 0 the kernel's address;
- all-to-all rping: each host a persistent rping server, each host's client
  to every other host (N x (N - 1) connections, each -C 4 validated);
- ib_write_bw -R around the ring (host i to host i + 1), each reporting;
- the kernel of every host saw none of it (UDP to no socket, UDP input
  errors, ICMP unreachables sent: unchanged) and no daemon answered ARP or
  ICMP (the kernels did);
- a clean stop leaves no XDP program on any interface.

Usage: netdev_cluster_test.py ROCEMUD DROPIN_DIR RDMACM_DIR [--hosts=N]
"""
import os
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hosts as hostslib  # noqa: E402
from hosts import netns_util, sh  # noqa: E402


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    n = 8
    for a in sys.argv[1:]:
        if a.startswith("--hosts="):
            n = int(a.split("=", 1)[1])
    rocemud, dropin, rdmacm = (os.path.abspath(p) for p in args[:3])
    if os.geteuid() != 0:
        print("FAIL: the net suite needs root")
        return 1
    c = hostslib.Cluster(rocemud, dropin, rdmacm, n)
    start = time.monotonic()
    with netns_util.failures_reported(c):
        hosts = c.build()
        before = {h.i: hostslib.kernel_roce_counters(h.ns) for h in hosts}
        c.start_all()
        for h in hosts:
            p = h.port()
            gids = p["attr"]["gids"]
            c.check(p["attr"]["state"] == "IBV_PORT_ACTIVE" and gids and
                    gids[0]["ip"] == h.ip and
                    p["netdev"]["mode"].startswith("af_xdp"),
                    f"h{h.i}: rocemu_eth0 ACTIVE on AF_XDP, GID 0 {h.ip} "
                    f"({p['netdev']['mode']}, GID 0 "
                    f"{gids[0]['ip'] if gids else None})")

        # All to all: a persistent rping server per host, then each host's
        # clients to every other host at once.
        # The rping servers' port; perftest_pair takes the ones above it.
        port = c.cm_port
        count = 4
        servers = [h.tool(["rping", "-s", "-P", "-a", h.ip, "-p", str(port),
                           "-S", "64", "-V"], timeout=600) for h in hosts]
        for h in hosts:
            c.check(h.wait_listener(port), f"h{h.i}: rping server listens")
        pairs_ok = 0
        for a in hosts:
            procs = [(b, a.tool(["rping", "-c", "-a", b.ip, "-p", str(port),
                                 "-C", str(count), "-S", "64", "-V", "-v"],
                                timeout=120)) for b in hosts if b is not a]
            for b, p in procs:
                out, _ = p.communicate()
                got = hostslib.rping_pings(out, count)
                ok = p.returncode == 0 and got == count
                pairs_ok += ok
                if not ok:
                    c.check(False, f"rping h{a.i} -> h{b.i}: exit "
                            f"{p.returncode}, {got}/{count} pings")
                    print(out[-1500:])
        c.check(pairs_ok == n * (n - 1),
                f"all-to-all rping: {pairs_ok}/{n * (n - 1)} host pairs, "
                f"{count} validated pings each")
        for s in servers:
            os.killpg(s.pid, signal.SIGTERM)
            s.communicate()

        # ib_write_bw -R from each host to the next.
        for a in hosts:
            b = hosts[(a.i + 1) % n]
            src, sout, crc, cout = c.perftest_pair(
                b, a, ["ib_write_bw", "-R", "-d", "rocemu_eth0", "-s", "65536",
                       "-n", "100"], timeout=120)
            rate = hostslib.write_bw_rate(cout)
            ok = crc == 0 and src == 0 and rate
            c.check(ok, f"ib_write_bw -R h{a.i} -> h{b.i}: exit "
                    f"{src}/{crc}, {rate} MB/s")
            if not ok:
                netns_util.print_pair_output(sout, cout)

        # The kernels saw none of the RoCE traffic, and answered everything
        # else themselves.
        for h in hosts:
            after = hostslib.kernel_roce_counters(h.ns)
            c.check(after == before[h.i],
                    f"h{h.i}: the kernel saw no RoCE frame: {after}")
            k = h.counters()
            c.check(k["rx_nic"] > 0 and k["tx_arp_replies"] == 0 and
                    k["tx_icmp_echo_reply"] == 0 and k["tx_nd_adverts"] == 0,
                    f"h{h.i}: the RNIC received {k['rx_nic']} RoCE frames "
                    f"and answered no ARP/ND/ICMP")

        for h in hosts:
            c.check(h.kill() == 0, f"h{h.i}: clean exit on SIGTERM")
            link = sh("ip", "link", "show", "eth0", ns=h.ns).stdout
            c.check("prog/xdp" not in link,
                    f"h{h.i}: no XDP program left on eth0")
        if c.failures:
            c.print_logs()
    print(f"     {time.monotonic() - start:.1f} s")
    return netns_util.verdict(c.failures)


if __name__ == "__main__":
    sys.exit(main())
