#!/usr/bin/env python3
"""The kernel and the RNIC on one interface, each answering only its own
frames (tests/netdev/hosts.py): two hosts, `rocemud` on each one's eth0,
in each mode (af_xdp, then af_packet):

- while ib_write_bw -R runs between the hosts, the kernel answers every
  ARP request and ICMP echo to the shared address exactly once (a packet
  socket filtered to ARP and ICMP in the kernel counts the replies on the
  wire, scapy decodes them: one per request, none from the daemon),
  and the kernel of neither host sees a RoCE frame: UDP datagrams to no
  socket, UDP input errors and ICMP unreachables sent do not move;
- the daemons answered no ARP/ICMP themselves, and af_xdp hands the RNIC
  nothing but RoCE (af_packet hands it a copy of everything, counted as
  the kernel's);
- after a SIGKILL of a daemon nothing is left on the interface: a RoCE
  frame sent to that host reaches its kernel again (UdpNoPorts moves), and
  no XDP program remains.

Usage: netdev_kernel_test.py ROCEMUD DROPIN_DIR RDMACM_DIR
"""
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hosts as hostslib  # noqa: E402
from hosts import netns_util, sh  # noqa: E402

PROBES = 10

# Runs in host A's namespace: ARP requests and ICMP echo requests to B's
# address, and every answer on the wire counted by its sender's MAC.
SCAPY_PROBE = r"""
import ctypes
import socket
import struct
import sys
import threading
import time
from scapy.all import ARP, ICMP, IP, Ether, conf, sendp, get_if_hwaddr
conf.verb = 0
target, n = sys.argv[1], int(sys.argv[2])
mine = get_if_hwaddr("eth0")
# The replies are taken by a packet socket whose classic BPF filter keeps
# only ARP and ICMP in the kernel: the RoCE flood on the same link (~45 k
# frames/s) would otherwise fill the socket faster than Python takes it
# in, and replies would be lost to the overflow, not to the host.
FILTER = [(0x28, 0, 0, 12),        # ldh [12]: the EtherType
          (0x15, 3, 0, 0x0806),    # ARP: accept
          (0x15, 0, 3, 0x0800),    # not IPv4: drop
          (0x30, 0, 0, 23),        # ldb [23]: the IP protocol
          (0x15, 0, 1, 1),         # ICMP: accept, else drop
          (0x06, 0, 0, 0x40000),   # accept
          (0x06, 0, 0, 0)]         # drop
prog = ctypes.create_string_buffer(
    b"".join(struct.pack("HBBI", *i) for i in FILTER))
sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
sock.setsockopt(socket.SOL_SOCKET, 26,  # SO_ATTACH_FILTER
                struct.pack("HL", len(FILTER), ctypes.addressof(prog)))
sock.bind(("eth0", 0))
sock.settimeout(0.1)
# What came before the filter was attached.
while True:
    try:
        sock.recv(65535)
    except socket.timeout:
        break
pkts = []
stop = threading.Event()
def take():
    while not stop.is_set():
        try:
            data, addr = sock.recvfrom(65535)
        except socket.timeout:
            continue
        if addr[2] != socket.PACKET_OUTGOING:
            pkts.append(Ether(data))
sniffer = threading.Thread(target=take)
sniffer.start()
for i in range(n):
    sendp(Ether(dst="ff:ff:ff:ff:ff:ff", src=mine) /
          ARP(op=1, hwsrc=mine, pdst=target), iface="eth0")
    time.sleep(0.02)
# ICMP echo through the kernel (its ARP cache has B by now).
import subprocess
ping = subprocess.run(["ping", "-c", str(n), "-i", "0.05", "-W", "2", target],
                      capture_output=True, text=True)
# Every reply ping counted has been on the wire: wait until the sniffer has
# taken in as many (then the deadline).
replies = int(ping.stdout.split(" received")[0].split()[-1]) \
    if " received" in ping.stdout else 0
deadline = time.monotonic() + 3
while time.monotonic() < deadline and sum(
        1 for p in list(pkts) if ICMP in p and p[ICMP].type == 0) < replies:
    time.sleep(0.05)
stop.set()
sniffer.join()
arp = {}
for p in pkts:
    if ARP in p and p[ARP].op == 2 and p[ARP].psrc == target:
        arp[p[Ether].src] = arp.get(p[Ether].src, 0) + 1
echo = {}
for p in pkts:
    if IP in p and ICMP in p and p[ICMP].type == 0 and p[IP].src == target:
        echo[p[Ether].src] = echo.get(p[Ether].src, 0) + 1
dups = ping.stdout.count("DUP!")
received = [l for l in ping.stdout.splitlines() if "received" in l]
print("ARP", sorted(arp.items()))
print("ECHO", sorted(echo.items()))
print("DUPS", dups)
print("PING", received[0] if received else "?")
"""


def probe(c, a, b):
    """ARP and ICMP to B's address from A: (arp replies by MAC, echo
    replies by MAC, ping's DUP count, ping summary)."""
    # Debian's python3 has python3-scapy (scripts/packages.txt).
    p = subprocess.run(["ip", "netns", "exec", a.ns, "/usr/bin/python3", "-c",
                        SCAPY_PROBE, b.ip, str(PROBES)],
                       capture_output=True, text=True, timeout=60)
    res = {}
    for line in p.stdout.splitlines():
        key, _, val = line.partition(" ")
        res[key] = val
    if p.returncode != 0:
        print(p.stdout[-1500:], p.stderr[-1500:])
    return res


def main():
    rocemud, dropin, rdmacm = (os.path.abspath(p) for p in sys.argv[1:4])
    if os.geteuid() != 0:
        print("FAIL: the net suite needs root")
        return 1
    c = hostslib.Cluster(rocemud, dropin, rdmacm, 2, net=125)
    start = time.monotonic()
    with netns_util.failures_reported(c):
        a, b = c.build()
        for mode in ("af_xdp", "af_packet"):
            before = {h.i: hostslib.kernel_roce_counters(h.ns) for h in (a, b)}
            for h in (a, b):
                h.start(mode=mode)
                got = h.port()["netdev"]["mode"]
                c.check(got.startswith(mode), f"{mode}: h{h.i} runs {got}")
            mac_b = b.port()["mac"]
            # RoCE traffic while the kernels are asked ARP and ICMP.
            res = {}

            def probe_while_flowing(cli):
                rx0 = b.counters()["rx_nic"]
                deadline = time.monotonic() + 30
                while (cli.poll() is None and time.monotonic() < deadline and
                       b.counters()["rx_nic"] <= rx0 + 1000):
                    time.sleep(0.1)
                if cli.poll() is not None:
                    return  # refused (run again) or failed: said below
                c.check(b.counters()["rx_nic"] > rx0 + 1000,
                        f"{mode}: RoCE flowing within 30 s")
                res.update(probe(c, a, b))

            src, sout, crc, cout = c.perftest_pair(
                b, a, ["ib_write_bw", "-R", "-d", "rocemu_eth0", "-s", "4096",
                       "-D", "4"], timeout=60,
                while_running=probe_while_flowing)
            rate = hostslib.write_bw_rate(cout)
            ok = crc == 0 and src == 0 and rate
            c.check(ok, f"{mode}: ib_write_bw -R -D 4 ran beside: exit "
                    f"{src}/{crc}, {rate} MB/s")
            if not ok:
                netns_util.print_pair_output(sout, cout)
            # One MAC answers, once per request: a daemon answering too
            # would double them. ping counts duplicates itself.
            for what in ("ARP", "ECHO"):
                by_mac = eval(res.get(what, "[]"))  # noqa: S307, our print
                got = by_mac[0][1] if len(by_mac) == 1 else 0
                c.check(len(by_mac) == 1 and by_mac[0][0] == mac_b and
                        got == PROBES,
                        f"{mode}: {PROBES} {what} requests to {b.ip} answered "
                        f"once each, by the kernel: replies by MAC {by_mac}")
            c.check(res.get("DUPS") == "0" and
                    f"{PROBES} received" in res.get("PING", ""),
                    f"{mode}: ping: {res.get('PING')}, {res.get('DUPS')} DUP!")
            for h in (a, b):
                after = hostslib.kernel_roce_counters(h.ns)
                c.check(after == before[h.i],
                        f"{mode}: h{h.i}'s kernel saw no RoCE frame: "
                        f"{before[h.i]} -> {after}")
                k = h.counters()
                # B receives the WRITEs, A their acknowledgements.
                c.check(k["tx_arp_replies"] == 0 and
                        k["tx_icmp_echo_reply"] == 0 and
                        k["rx_nic"] > (1000 if h is b else 0),
                        f"{mode}: h{h.i}'s RNIC had {k['rx_nic']} RoCE "
                        f"frames and answered no ARP/ICMP")
                if mode == "af_xdp":
                    c.check(k["rx_packets"] == k["rx_nic"] and
                            k["rx_kernel"] == 0,
                            f"af_xdp: h{h.i} received only RoCE: "
                            f"{k['rx_packets']} frames, {k['rx_nic']} RoCE")
                else:
                    c.check(k["rx_kernel"] > 0,
                            f"af_packet: h{h.i} saw the kernel's frames too "
                            f"and left them ({k['rx_kernel']})")

            # Killed: nothing stays on B's interface. A RoCE frame to B
            # reaches its kernel again, which has no socket on 4791.
            b.kill(signal.SIGKILL)
            # The kernel releases the process's links as it reaps it.
            try:
                netns_util.wait_for("the XDP program gone", lambda: "prog/xdp"
                                    not in sh("ip", "link", "show", "eth0",
                                              ns=b.ns).stdout, timeout=5)
            except AssertionError:
                pass
            link = sh("ip", "link", "show", "eth0", ns=b.ns).stdout
            c.check("prog/xdp" not in link,
                    f"{mode}: no XDP program on h1's eth0 after SIGKILL")
            # A kernel before tcx (Linux 6.6) cannot tie af_packet's tc
            # filter to the process: it stays, the daemon said so when it
            # attached it, and the command it named removes it.
            if "stays if the daemon is killed" in b.log_text():
                c.check(mode == "af_packet",
                        f"{mode}: only af_packet falls back to a netlink tc "
                        f"filter")
                sh("tc", "filter", "del", "dev", "eth0", "ingress", ns=b.ns)
            nb = hostslib.kernel_roce_counters(b.ns)["UdpNoPorts"]
            send = ("import socket; s = socket.socket(socket.AF_INET, "
                    "socket.SOCK_DGRAM); [s.sendto(bytes(32), "
                    f"('{b.ip}', 4791)) for _ in range(5)]")
            sh(sys.executable, "-c", send, ns=a.ns)
            deadline = time.monotonic() + 5
            while (hostslib.kernel_roce_counters(b.ns)["UdpNoPorts"] < nb + 5
                   and time.monotonic() < deadline):
                time.sleep(0.05)
            na = hostslib.kernel_roce_counters(b.ns)["UdpNoPorts"]
            c.check(na == nb + 5,
                    f"{mode}: after SIGKILL h1's kernel gets UDP 4791 "
                    f"again (UdpNoPorts {nb} -> {na})")
            c.check(a.kill() == 0, f"{mode}: h0 exits cleanly")
        if c.failures:
            c.print_logs()
    print(f"     {time.monotonic() - start:.1f} s")
    return netns_util.verdict(c.failures)


if __name__ == "__main__":
    sys.exit(main())
