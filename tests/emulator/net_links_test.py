#!/usr/bin/env python3
"""rocemud over the other kernel-free and kernel links, in namespaces this
test creates:
  veth:  af_packet on a veth pair to a kernel peer in a second namespace,
         IPv4/IPv6 ping including 4 KiB frames (kernel MTU 9000).
  memif: two daemons joined by memif resolve each other (ARP and ND); when
         one goes, the other's port goes DOWN (link_downed counts it) and is
         ACTIVE again when it comes back. Both sleep as soon as a pass finds
         nothing (idle_spin_us 0), and a frame from the peer must wake them
         through memif's receive interrupt (idle_wakeups_rx), on the first
         connection and again after the peer came back.
Bounded in time; always cleans up.  Usage: net_links_test.py ROCEMUD veth|memif
"""
import os
import sys

import netns_util
from netns_util import control, sh, wait_for


class Run(netns_util.NetRun):
    def __init__(self, rocemud):
        super().__init__("rocemu-links-")
        self.rocemud = rocemud
        self.daemons = self.procs


    def start(self, ns, name, port, eal=None):
        sock = os.path.join(self.tmp, f"{name}.sock")
        cfg = os.path.join(self.tmp, f"{name}.yaml")
        netns_util.write_rocemud_config(
            cfg, f"rocemu-{name}-{self.pid}", [port], eal=eal,
            control={"socket": sock}, verbs={"socket": f"{sock}.verbs"},
            logging={"file": f"{self.tmp}/{name}.log"})
        d = netns_util.start_rocemud(ns, self.rocemud, cfg, sock, name)
        self.daemons.append(d)
        return d, sock

    def stop(self, d, name):
        rc = netns_util.stop_rocemud(d, timeout=10)
        self.daemons.remove(d)
        self.check(rc == 0, f"{name}: clean exit on SIGTERM (status {rc})")


def veth(r):
    nd, nk = r.netns("rocemu-vd"), r.netns("rocemu-vk")
    vd, vk = f"vd{r.pid % 100000}", f"vk{r.pid % 100000}"
    sh("ip", "link", "add", vd, "netns", nd, "type", "veth", "peer", "name",
       vk, "netns", nk)
    for ns, dev in ((nd, vd), (nk, vk)):
        sh("ip", "link", "set", dev, "mtu", "9000", ns=ns)
        sh("ip", "link", "set", dev, "up", ns=ns)
    sh("ip", "addr", "add", "10.77.1.1/24", "dev", vk, ns=nk)
    sh("ip", "-6", "addr", "add", "fd77:1::1/64", "dev", vk, "nodad", ns=nk)
    d, sock = r.start(nd, "veth", netns_util.port(
        "veth0", f"net_af_packet0,iface={vd},framesz=8192,blocksz=8192",
        "02:00:00:77:01:02", ["10.77.1.2/24", "fd77:1::2/64"], 4200))
    for args, what in ((["10.77.1.2"], "ping"),
                       (["-6", "fd77:1::2"], "ping -6"),
                       (["-s", "4000", "-M", "do", "10.77.1.2"],
                        "ping with 4 KiB frames"),
                       (["-6", "-s", "4000", "-M", "do", "fd77:1::2"],
                        "ping -6 with 4 KiB frames")):
        p = sh("ping", "-c", "3", "-i", "0.2", "-W", "2", *args, ns=nk,
               check=False)
        r.check(p.returncode == 0, what)
    neigh = sh("ip", "neigh", "show", "dev", vk, ns=nk).stdout
    r.check("02:00:00:77:01:02" in neigh, "kernel learned the daemon's MAC")
    c = control(sock, {"cmd": "counters"})["ports"]["veth0"]
    r.check(c["tx_icmp_echo_reply"] >= 6 and c["tx_icmpv6_echo_reply"] >= 6,
            "echo replies counted")
    r.check(c["tx_dropped"] == 0 and c["reply_too_big"] == 0,
            "no frame too big for the port")
    r.stop(d, "veth")


def resolve(sock, ip, who=""):
    """The MAC the daemon at `sock` resolves `ip` to (it asks until then)."""
    return wait_for(f"{who}resolving {ip}", lambda: control(
        sock, {"cmd": "resolve", "port": "m0", "ip": ip}).get("mac"),
        timeout=15)


def rx_wakeups(sock):
    return control(sock, {"cmd": "counters"})["idle_wakeups_rx"]


def resolve_wakes(r, sock_ask, asker, sock_peer, peer, ips, mac):
    """`asker` resolves `ips`; its requests must wake `peer`, asleep."""
    before = rx_wakeups(sock_peer)
    for ip in ips:
        got = resolve(sock_ask, ip, f"{asker} ")
        r.check(got == mac, f"{asker} resolved {ip} to {got}")
    woke = rx_wakeups(sock_peer) - before
    r.check(woke >= 1, f"{asker}'s requests woke {peer} {woke} times over "
            "the new connection")


def memif(r):
    ns = r.netns("rocemu-mm")
    # Asleep whenever idle: a frame arriving then is taken only after the
    # loop wakes, by the receive interrupt or else by its timer.
    sleepy = {"idle_spin_us": 0}
    name = f"rocemu-memif-{r.pid}"
    port_a = netns_util.port(
        "m0", f"net_memif0,role=server,socket={name},bsize=8192",
        "02:00:00:77:02:01", ["10.77.2.1/24", "fd77:2::1/64"], 4200)
    a, sock_a = r.start(ns, "memif-a", port_a, sleepy)
    port_b = netns_util.port(
        "m0", f"net_memif0,role=client,socket={name},bsize=8192",
        "02:00:00:77:02:02", ["10.77.2.2/24", "fd77:2::2/64"], 4200)
    b, sock_b = r.start(ns, "memif-b", port_b, sleepy)
    for sock, ip, mac in ((sock_a, "10.77.2.2", "02:00:00:77:02:02"),
                          (sock_b, "10.77.2.1", "02:00:00:77:02:01"),
                          (sock_a, "fd77:2::2", "02:00:00:77:02:02"),
                          (sock_b, "fd77:2::1", "02:00:00:77:02:01")):
        got = resolve(sock, ip)
        r.check(got == mac, f"{ip} resolved over memif to {got}")
    ca = control(sock_a, {"cmd": "counters"})["ports"]["m0"]
    cb = control(sock_b, {"cmd": "counters"})["ports"]["m0"]
    # A asked first; B learned A from A's requests (it was their target),
    # so B's own lookups are answered from its cache.
    r.check(ca["tx_arp_requests"] >= 1 and cb["tx_arp_replies"] >= 1,
            "A's ARP request answered by B")
    r.check(ca["tx_nd_solicits"] >= 1 and cb["tx_nd_adverts"] >= 1,
            "A's neighbour solicitation answered by B")
    r.check(ca["tx_packets"] == cb["rx_packets"] and
            cb["tx_packets"] == ca["rx_packets"],
            "memif delivered every frame each way")
    # B, idle and so asleep, received A's requests. (A's wakeups are not
    # counted: its replies may come back before it is asleep again.)
    wb = rx_wakeups(sock_b)
    r.check(wb >= 1, f"A's requests woke B, asleep, {wb} times")

    def link(sock):
        state = control(sock, {"cmd": "ports"})["ports"][0]["attr"]["state"]
        c = control(sock, {"cmd": "counters"})["ports"]["m0"]["rnic"]
        return state, c["link_downed"]

    def a_link_leaves(state):
        # A's (state, link_downed) once its state is no longer `state`.
        return wait_for(f"A's port leaving {state}",
                        lambda: (s := link(sock_a))[0] != state and s)
    r.check(link(sock_a) == ("IBV_PORT_ACTIVE", 0), "A's port ACTIVE")
    # B goes: A's link drops, its port is DOWN and the drop counted once;
    # B back, A's port is ACTIVE again (the daemon looks every ms).
    r.stop(b, "memif-b")
    got = a_link_leaves("IBV_PORT_ACTIVE")
    r.check(got == ("IBV_PORT_DOWN", 1), f"A's link down: {got}")
    b, sock_b = r.start(ns, "memif-b", port_b, sleepy)
    got = a_link_leaves("IBV_PORT_DOWN")
    r.check(got == ("IBV_PORT_ACTIVE", 1), f"A's link up again: {got}")
    r.check(link(sock_b) == ("IBV_PORT_ACTIVE", 0), "B's port ACTIVE")
    # The new connection has new rings and eventfds: B (new, its cache
    # empty) asks A, and A, asleep, is woken by the requests.
    resolve_wakes(r, sock_b, "B", sock_a, "A", ("10.77.2.1", "fd77:2::1"),
                  "02:00:00:77:02:01")
    # The same for the client's side: A (the server) goes and comes back
    # while B stays, B's port rejoins, then A asks B.
    r.stop(a, "memif-a")
    wait_for("B's link down", lambda: link(sock_b)[0] != "IBV_PORT_ACTIVE",
             timeout=15)
    a, sock_a = r.start(ns, "memif-a", port_a, sleepy)
    wait_for("B's link up again",
             lambda: link(sock_b)[0] == "IBV_PORT_ACTIVE", timeout=15)
    resolve_wakes(r, sock_a, "A", sock_b, "B", ("10.77.2.2", "fd77:2::2"),
                  "02:00:00:77:02:02")
    # The server stops first and the client at once, while the client's
    # interrupt thread handles the disconnect (emulator/port/intr_thread.h:
    # the client's own stop waits for it), then the same the other way.
    r.stop(a, "memif-a")
    r.stop(b, "memif-b")
    a, sock_a = r.start(ns, "memif-a", port_a)
    b, sock_b = r.start(ns, "memif-b", port_b)
    wait_for("the pair's link up again",
             lambda: link(sock_a)[0] == "IBV_PORT_ACTIVE" and
             link(sock_b)[0] == "IBV_PORT_ACTIVE", timeout=15)
    r.stop(b, "memif-b")
    r.stop(a, "memif-a")


def main():
    rocemud, scenario = os.path.abspath(sys.argv[1]), sys.argv[2]
    if os.geteuid() != 0:
        print("FAIL: the net suite needs root")
        return 1
    r = Run(rocemud)
    with netns_util.failures_reported(r):
        {"veth": veth, "memif": memif}[scenario](r)
    return netns_util.verdict(r.failures)


if __name__ == "__main__":
    sys.exit(main())
