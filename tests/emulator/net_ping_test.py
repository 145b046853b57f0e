#!/usr/bin/env python3
"""rocemud on a TAP port inside a network namespace this test creates.

Checks: IPv4 and IPv6 ping to the daemon's addresses, ARP/ND both ways (the
kernel learns the daemon's MAC, the daemon resolves the kernel's), counters
on the control socket, run-time capture switching, SIGHUP and a clean
SIGTERM shutdown. Bounded in time; always removes the namespace.
With --faults the daemon runs with receive-side fault injection (drop,
corrupt, duplicate, reorder, delay; fixed seed): pings still get through,
and every fault kind shows in the counters.
Usage: net_ping_test.py ROCEMUD [--faults]
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import netns_util
from netns_util import control, sh, wait_for

DAEMON_MAC = "02:00:00:77:00:02"
FAULTS = {"drop": 0.1, "corrupt": 0.1, "duplicate": 0.1, "reorder": 0.1,
          "delay": 0.1, "delay_us": 3000, "seed": 11}


def run(ns, *cmd, check=True, timeout=15):
    return sh(*cmd, ns=ns, check=check, timeout=timeout)


def faults_scenario(ns, iface, sock, check, failures):
    run(ns, "ip", "addr", "add", "10.77.0.1/24", "dev", iface)
    run(ns, "ip", "link", "set", iface, "up")
    p = run(ns, "ping", "-c", "40", "-i", "0.02", "-W", "1", "10.77.0.2",
            check=False, timeout=30)
    replies = p.stdout.count("bytes from")
    check(replies > 0, f"pings get through the faults ({replies} replies)")
    summary = [l for l in p.stdout.splitlines() if "transmitted" in l]
    check(bool(summary) and ("duplicates" in summary[0] or
                             " 0% packet loss" not in summary[0]),
          f"ping sees the faults: {summary}")
    c = control(sock, {"cmd": "counters"})["ports"]["tap0"]
    for kind in ("dropped", "corrupted", "duplicated", "reordered",
                 "delayed"):
        check(c[f"rx_fault_{kind}"] > 0,
              f"rx_fault_{kind} = {c[f'rx_fault_{kind}']}")
    # Every corrupted frame fails a checksum (IP or ICMP) or its ARP form.
    check(c["rx_bad_checksum"] + c["rx_malformed"] + c["rx_not_for_us"] +
          c["rx_unhandled"] >= 1, "corrupted frames are counted as drops")
    check(c["tx_fault_dropped"] == 0, "tx faults off (rx only by default)")
    return 1 if failures else 0


def main():
    rocemud = os.path.abspath(sys.argv[1])
    faults = "--faults" in sys.argv[2:]
    if os.geteuid() != 0:
        print("FAIL: the net suite needs root (network namespaces, TAP)")
        return 1
    pid = os.getpid()
    ns = f"rocemu-nt-{pid}"
    iface = f"rnt{pid % 100000}"
    tmp = tempfile.mkdtemp(prefix="rocemu-net-")
    sock = os.path.join(tmp, "ctl.sock")
    cfg = os.path.join(tmp, "rocemu.yaml")
    netns_util.write_rocemud_config(
        cfg, f"rocemu-nt-{pid}",
        [netns_util.port("tap0", f"net_tap0,iface={iface}", DAEMON_MAC,
                         ["10.77.0.2/24", "fd77::2/64"],
                         **({"faults": FAULTS} if faults else {}))],
        capture={"enabled": False, "rx_path": f"{tmp}/{{port}}-rx.pcap",
                 "tx_path": f"{tmp}/{{port}}-tx.pcap"},
        control={"socket": sock, "socket_mode": "0600",
                 "prometheus_port": 9464},
        verbs={"socket": f"{tmp}/verbs.sock"},
        logging={"level": "info", "file": f"{tmp}/rocemud.log"})
    daemon = None
    failures = []

    def check(cond, msg):
        print(("ok   " if cond else "FAIL ") + msg)
        if not cond:
            failures.append(msg)

    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        run(ns, "ip", "link", "set", "lo", "up")
        daemon = netns_util.start_rocemud(ns, rocemud, cfg, sock, "rocemud")
        check(oct(os.stat(sock).st_mode & 0o777) == "0o600",
              "control socket has the configured mode 0600")
        if faults:
            return faults_scenario(ns, iface, sock, check, failures)
        run(ns, "ip", "addr", "add", "10.77.0.1/24", "dev", iface)
        run(ns, "ip", "-6", "addr", "add", "fd77::1/64", "dev", iface,
            "nodad")
        run(ns, "ip", "link", "set", iface, "up")
        kernel_mac = run(ns, "cat", f"/sys/class/net/{iface}/address"
                         ).stdout.strip()
        check(kernel_mac != DAEMON_MAC, "kernel and daemon MACs differ")

        # The daemon resolves the kernel before the kernel has said anything
        # to it at IP level.
        for ip in ("10.77.0.1", "fd77::1"):
            got = wait_for(f"daemon resolving {ip}", lambda: control(
                sock, {"cmd": "resolve", "port": "tap0", "ip": ip}
            ).get("mac"), timeout=8)
            check(got == kernel_mac, f"daemon resolved {ip} to {got}")

        # Forget what the kernel learned from the daemon's requests, so the
        # pings make it ask (ARP and neighbour solicitation).
        run(ns, "ip", "neigh", "flush", "dev", iface)
        control(sock, {"cmd": "capture", "enable": True})
        p4 = run(ns, "ping", "-c", "3", "-i", "0.2", "-W", "2", "10.77.0.2",
                 check=False)
        check(p4.returncode == 0, "ping 10.77.0.2")
        p6 = run(ns, "ping", "-6", "-c", "3", "-i", "0.2", "-W", "2",
                 "fd77::2", check=False)
        check(p6.returncode == 0, "ping -6 fd77::2")
        neigh = run(ns, "ip", "neigh", "show", "dev", iface).stdout
        for ip in ("10.77.0.2", "fd77::2"):
            line = [l for l in neigh.splitlines() if l.startswith(ip + " ")]
            check(bool(line) and DAEMON_MAC in line[0],
                  f"kernel learned {ip} lladdr {DAEMON_MAC}: {line}")

        reply = control(sock, {"cmd": "capture", "enable": False})
        check(reply.get("ok") is True and reply.get("capture") is False,
              f"capture switched off at run time: {reply}")
        c = control(sock, {"cmd": "counters"})["ports"]["tap0"]
        check(c["tx_icmp_echo_reply"] >= 3 and c["rx_icmp_echo"] >= 3,
              f"ICMP counters {c['rx_icmp_echo']}/{c['tx_icmp_echo_reply']}")
        check(c["tx_icmpv6_echo_reply"] >= 3,
              f"ICMPv6 echo replies {c['tx_icmpv6_echo_reply']}")
        check(c["tx_arp_requests"] >= 1 and c["rx_arp_replies"] >= 1,
              "daemon sent ARP requests and got replies")
        check(c["tx_nd_solicits"] >= 1 and c["rx_nd_adverts"] >= 1,
              "daemon sent neighbour solicitations and got adverts")
        check(c["rx_arp_requests"] >= 1 and c["tx_arp_replies"] >= 1,
              "daemon answered the kernel's ARP request")
        check(c["rx_nd_solicits"] >= 1 and c["tx_nd_adverts"] >= 1,
              "daemon answered the kernel's neighbour solicitation")
        check(c["tx_packets"] >= c["tx_icmp_echo_reply"] +
              c["tx_icmpv6_echo_reply"], "tx_packets counts the replies")
        check(c["rx_bad_checksum"] == 0 and c["rx_malformed"] == 0,
              "no malformed or bad-checksum frames from the kernel")
        # Prometheus text on the namespace's loopback only.
        scrape = run(ns, sys.executable, "-c",
                     "import urllib.request;print(urllib.request.urlopen("
                     "'http://127.0.0.1:9464/metrics',timeout=5).read()"
                     ".decode())", check=False)
        check('rocemu_port_tx_icmp_echo_reply{port="tap0"} ' in scrape.stdout,
              "prometheus metrics served on 127.0.0.1")
        bad = control(sock, {"cmd": "nonsense"})
        check("error" in bad, "unknown commands get an error")
        rx_pcap = os.path.join(tmp, "tap0-rx.pcap")
        check(os.path.exists(rx_pcap) and os.path.getsize(rx_pcap) > 24 + 98 * 3,
              "rx capture holds the pings")
        with open(rx_pcap, "rb") as f:
            magic = f.read(4)
        check(magic == b"\x0a\x0d\x0d\x0a",
              "capture uses pcapng (capture.format's default)")

        tshark = shutil.which("tshark")
        check(tshark is not None, "tshark is installed")
        for name in ("tap0-rx.pcap", "tap0-tx.pcap"):
            path = os.path.join(tmp, name)
            # One line per frame: its number, then the severities of its
            # expert items (warning = 0x00600000, error = 0x00800000).
            lines = subprocess.run(
                [tshark, "-r", path, "-n", "-o", "ip.check_checksum:TRUE",
                 "-T", "fields", "-E", "separator=;", "-e", "frame.number",
                 "-e", "_ws.expert.severity"], capture_output=True,
                text=True, timeout=60).stdout.splitlines()
            frames = [l for l in lines if l.strip()]
            warn = [l for l in frames
                    if any(int(v, 0) >= 0x00600000
                           for v in l.split(";")[1].split(",") if v)]
            check(len(frames) >= 6 and not warn,
                  f"tshark reads {name}: {len(frames)} frames, "
                  f"warnings: {warn or 'none'}")
        daemon.send_signal(signal.SIGHUP)
        logfile = os.path.join(tmp, "rocemud.log")
        netns_util.wait_for("SIGHUP handled",
                            lambda: "reopened" in open(logfile).read(),
                            timeout=10)
        rc = netns_util.stop_rocemud(daemon, timeout=10)
        daemon = None
        check(rc == 0, f"SIGTERM: clean exit status {rc}")
        check(not os.path.exists(sock), "control socket removed on exit")
        log = open(os.path.join(tmp, "rocemud.log")).read()
        check("reopened" in log, "SIGHUP reopened logs and captures")
        check("stopped" in log, "shutdown logged")
    except (AssertionError, subprocess.SubprocessError, OSError,
            KeyError, ValueError) as e:
        failures.append(repr(e))
        print("FAIL", repr(e))
    finally:
        netns_util.cleanup([daemon] if daemon is not None else [], [ns], tmp)
    print(f"{'FAILED' if failures else 'PASSED'}: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
