#!/usr/bin/env python3
"""rocemud with its verbs socket, driven through rocemu-ctl and a library
client (verbs_attach_client), on a TAP port inside a namespace this test
creates.

Checks:
  - the verbs socket exists with the configured mode; rocemu-ctl devices,
    ports, qps, mrs, clients, counters, pfc, dcqcn, capture on/off work with
    and without --json and show the device name, the port's MAC, GIDs and
    MTUs, PFC/DCQCN settings and counters that move after a ping;
  - a library client attaches (open device, query port, PD, MR, CQ, RC QP
    to INIT): the daemon's clients/qps/mrs views show it and its objects
    under its pid; after it exits without cleaning up, they are gone;
  - a daemon whose verbs.allowed_uids excludes the caller refuses it;
  - SIGTERM removes both sockets.
Bounded in time; always removes the namespace and stops the daemons.
Usage: net_verbs_ctl_test.py ROCEMUD ROCEMU_CTL ATTACH_CLIENT
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import netns_util
from netns_util import control, sh, wait_for

DAEMON_MAC = "02:00:00:77:00:12"


class Ctl:
    def __init__(self, binary, sock):
        self.binary, self.sock = binary, sock

    def run(self, *args, check_rc=0):
        p = subprocess.run([self.binary, "--socket", self.sock, *args],
                           capture_output=True, text=True, timeout=15)
        if check_rc is not None and p.returncode != check_rc:
            raise AssertionError(f"rocemu-ctl {' '.join(args)}: rc "
                                 f"{p.returncode}: {p.stderr}")
        return p

    def text(self, *args):
        return self.run(*args).stdout

    def json(self, *args):
        return json.loads(self.run("--json", *args).stdout)


def main():
    rocemud, ctl_bin, client_bin = (os.path.abspath(a) for a in sys.argv[1:4])
    if os.geteuid() != 0:
        print("FAIL: the net suite needs root (network namespaces, TAP)")
        return 1
    pid = os.getpid()
    ns = f"rocemu-vc-{pid}"
    iface = f"rvc{pid % 100000}"
    tmp = tempfile.mkdtemp(prefix="rocemu-vctl-")
    sock = os.path.join(tmp, "ctl.sock")
    vsock = os.path.join(tmp, "run", "verbs.sock")  # directory made by rocemud
    cfg = os.path.join(tmp, "rocemu.yaml")
    netns_util.write_rocemud_config(
        cfg, f"rocemu-vc-{pid}",
        [netns_util.port("tap0", f"net_tap0,iface={iface}", DAEMON_MAC,
                         ["10.77.0.2/24", "fd77::2/64"])],
        capture={"rx_path": f"{tmp}/{{port}}-rx.pcap",
                 "tx_path": f"{tmp}/{{port}}-tx.pcap"},
        control={"socket": sock},
        verbs={"socket": vsock, "socket_mode": "0660", "post_budget": 32},
        logging={"level": "info", "file": f"{tmp}/rocemud.log"})
    failures = []
    procs = []

    def check(cond, msg):
        print(("ok   " if cond else "FAIL ") + msg)
        if not cond:
            failures.append(msg)

    def start(config, sockets, netns=None):
        d = netns_util.start_rocemud(netns, rocemud, config, sockets,
                                     "rocemud", "daemon sockets")
        procs.append(d)
        return d

    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        sh("ip", "link", "set", "lo", "up", ns=ns)
        daemon = start(cfg, [sock, vsock], ns)
        check(oct(os.stat(vsock).st_mode & 0o777) == "0o660",
              "verbs socket has the configured mode 0660")
        check(oct(os.stat(os.path.dirname(vsock)).st_mode & 0o777) == "0o755",
              "verbs socket directory created 0755")
        ctl = Ctl(ctl_bin, sock)

        # --- devices -----------------------------------------------------
        text = ctl.text("devices")
        check("hca_id:\trocemu_tap0" in text, "devices: hca_id rocemu_tap0")
        check("PORT_ACTIVE (4)" in text and "Ethernet" in text,
              "devices: port 1 PORT_ACTIVE, link_layer Ethernet")
        check("active_mtu:\t\t1024 (3)" in text,
              "devices: active_mtu 1024 (3) on a 1500-byte link")
        check("0000:0000:0000:0000:0000:ffff:0a4d:0002, RoCE v2 (10.77.0.2)"
              in text and "(fd77::2)" in text,
              "devices: GIDs of 10.77.0.2 and fd77::2, RoCE v2")
        check(vsock in text, "devices: names the verbs socket")
        dev = ctl.json("devices")["devices"]
        check(len(dev) == 1 and dev[0]["device"] == "rocemu_tap0" and
              dev[0]["verbs_socket"] == vsock and dev[0]["clients"] == 0,
              f"devices --json: {dev[0]['device']} {dev[0]['verbs_socket']}")
        # ibv_devinfo's node GUID of a RoCE device: the MAC's EUI-64.
        check(dev[0]["attr"]["node_guid"] == "0000:00ff:fe77:0012",
              f"node_guid from the MAC: {dev[0]['attr']['node_guid']}")

        # --- ports -------------------------------------------------------
        text = ctl.text("ports")
        check(DAEMON_MAC in text and "10.77.0.2/24" in text and
              "PORT_ACTIVE" in text, "ports: MAC, address, state")
        port = ctl.json("ports")["ports"][0]
        gid_ips = [g["ip"] for g in port["attr"]["gids"]]
        check(port["mac"] == DAEMON_MAC and port["link_mtu"] == 1500 and
              port["attr"]["active_mtu"] == 1024,
              f"ports --json: mac {port['mac']}, link_mtu {port['link_mtu']},"
              f" active_mtu {port['attr']['active_mtu']}")
        check(gid_ips[:2] == ["10.77.0.2", "fd77::2"] and
              any(ip.startswith("fe80::") for ip in gid_ips),
              f"ports --json: GID table {gid_ips}")
        check([k["pkey"] for k in port["attr"]["pkeys"]] == ["0xffff"],
              "ports --json: P_Key table [0xffff]")

        # --- counters move after a ping ----------------------------------
        before = ctl.json("counters")["ports"]["tap0"]
        sh("ip", "addr", "add", "10.77.0.1/24", "dev", iface, ns=ns)
        sh("ip", "link", "set", iface, "up", ns=ns)
        p = sh("ping", "-c", "3", "-i", "0.2", "-W", "2", "10.77.0.2", ns=ns,
               check=False)
        check(p.returncode == 0, "ping 10.77.0.2")
        after = ctl.json("counters")["ports"]["tap0"]
        check(after["rx_icmp_echo"] >= before["rx_icmp_echo"] + 3 and
              after["tx_packets"] > before["tx_packets"],
              f"counters --json: rx_icmp_echo {before['rx_icmp_echo']} -> "
              f"{after['rx_icmp_echo']}")
        check(after["pfc"]["counters"]["rx_prio3_pause"] == 0 and
              "np_cnp_sent" in after["dcqcn"]["counters"] and
              "rp_cnp_handled" in after["rnic"] and
              after["verbs"]["socket"] == vsock,
              "counters --json: pfc, dcqcn, rnic and verbs sections")
        text = ctl.text("counters")
        check("link rocemu_tap0/1" in text and "rx_prio3_pause 0" in text and
              "np_ecn_marked_roce_packets" in text and
              f"rx_icmp_echo {after['rx_icmp_echo']}" in text,
              "counters: rdma-statistic style name/value lines")

        # --- pfc / dcqcn --------------------------------------------------
        pfc = ctl.json("pfc")["ports"][0]["pfc"]
        check(pfc["enabled"] == [3] and pfc["paused"] == [],
              f"pfc --json: enabled {pfc['enabled']}, paused {pfc['paused']}")
        rows = [l.split() for l in ctl.text("pfc").splitlines()]
        check(["tap0", "3", "on", "no", "0", "0", "0"] in rows and
              ["tap0", "4", "off", "no", "0", "0", "0"] in rows,
              "pfc: one row per priority")
        d = ctl.json("dcqcn")["ports"][0]["dcqcn"]
        check(d["rp_ai_rate"] == 5 and d["rp_hai_rate"] == 50 and
              d["np_cnp_prio"] == 6 and d["qps"] == [],
              "dcqcn --json: mlx5 defaults, no QPs yet")
        check("rp_ai_rate 5" in ctl.text("dcqcn"), "dcqcn: parameters")

        # --- a library client attaches -----------------------------------
        client = subprocess.Popen([client_bin, vsock], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        procs.append(client)
        line = client.stdout.readline()
        if not line:
            raise AssertionError("client: " + client.stderr.read())
        got = json.loads(line)
        check(got["device"] == "rocemu_tap0" and got["port_state"] == 4 and
              got["active_mtu"] == 3 and got["mac"] == DAEMON_MAC and
              got["gid"] == "00000000000000000000ffff0a4d0002",
              f"client: device {got['device']}, port attributes {got}")
        check(got["qp_state"] == 1, "client: QP queried back in INIT")
        cpid, qpn, lkey = got["pid"], got["qpn"], got["lkey"]

        sessions = ctl.json("clients")["ports"][0]["verbs"]
        cl = [c for c in sessions["clients"] if c["pid"] == cpid]
        check(len(cl) == 1, f"clients --json: client pid {cpid} listed")
        if cl:
            c = cl[0]
            check(c["uid"] == os.getuid() and len(c["pds"]) == 1 and
                  len(c["cqs"]) == 1 and
                  [q["qpn"] for q in c["qps"]] == [qpn] and
                  c["qps"][0]["state"] == "INIT" and
                  [(m["key"], m["length"]) for m in c["mrs"]] ==
                  [(lkey, 65536)],
                  f"clients --json: its PD, CQ, QP {qpn} (INIT), MR {lkey}")
        rows = [l.split() for l in ctl.text("clients").splitlines()]
        check(any(r[0] == "rocemu_tap0" and str(cpid) in r and
                  f"({qpn})" in r for r in rows), "clients: table row")
        qps = ctl.json("qps")["ports"][0]["qps"]
        mine = [q for q in qps if q["qpn"] == qpn]
        check(len(mine) == 1 and mine[0]["owner"] == "application" and
              mine[0]["pid"] == cpid and mine[0]["type"] == "RC" and
              mine[0]["state"] == "INIT" and "rate_limiter" in mine[0],
              f"qps --json: QP {qpn} RC INIT owned by pid {cpid}")
        rows = [l.split() for l in ctl.text("qps").splitlines()]
        check(any(r[:2] == ["rocemu_tap0", "tap0"] and r[2] == str(qpn) and
                  "INIT" in r and str(cpid) in r for r in rows),
              "qps: table row (rdma resource show qp)")
        check(f"0x{lkey:x}" in ctl.text("mrs") and
              ctl.json("mrs")["ports"][0]["verbs"]["clients"][0]["mrs"][0]
              ["key"] == lkey, "mrs: the client's MR, text and JSON")
        check(ctl.json("dcqcn")["ports"][0]["dcqcn"]["qps"][0]["qpn"] == qpn,
              "dcqcn --json: the QP's reaction point")

        # --- it exits without releasing anything -------------------------
        client.stdin.write("exit\n")
        client.stdin.flush()
        check(client.wait(timeout=10) == 0, "client exited")
        wait_for("the client's resources freed", lambda: not ctl.json(
            "clients")["ports"][0]["verbs"]["clients"], timeout=5)
        qps = ctl.json("qps")["ports"][0]["qps"]
        check(all(q["qpn"] != qpn for q in qps), "qps: its QP is gone")
        vc = ctl.json("counters")["ports"]["tap0"]["verbs"].get(
            "counters", {})
        check(vc.get("clients_accepted", 0) >= 1 and
              vc.get("clients_closed", 0) >= 1,
              f"verbs counters: accepted {vc.get('clients_accepted')}, "
              f"closed {vc.get('clients_closed')}")
        check(not ctl.text("mrs").strip().splitlines()[1:],
              "mrs: empty after the client left")

        # --- capture, errors ---------------------------------------------
        check(ctl.text("capture", "on").strip() == "capture: on" and
              ctl.json("capture", "off") == {"ok": True, "capture": False},
              "capture on / --json capture off")
        check(os.path.exists(os.path.join(tmp, "tap0-rx.pcap")),
              "capture on opened the pcap files")
        bad = Ctl(ctl_bin, os.path.join(tmp, "nope.sock")).run(
            "devices", check_rc=None)
        check(bad.returncode == 1 and "cannot connect" in bad.stderr,
              "no daemon: exit 1 with a message")
        check(ctl.run("frobnicate", check_rc=None).returncode == 2,
              "unknown command: exit 2")

        # --- a daemon that does not allow this uid ------------------------
        sock2 = os.path.join(tmp, "ctl2.sock")
        vsock2 = os.path.join(tmp, "verbs2.sock")
        cfg2 = os.path.join(tmp, "rocemu2.yaml")
        denied_uid = 4242 if os.getuid() != 4242 else 4243
        netns_util.write_rocemud_config(
            cfg2, f"rocemu-vc2-{pid}", [netns_util.port("n0", "net_null0")],
            control={"socket": sock2},
            verbs={"socket": vsock2, "allowed_uids": [denied_uid]},
            logging={"file": f"{tmp}/rocemud2.log"})
        d2 = start(cfg2, [sock2, vsock2])
        refused = subprocess.run([client_bin, vsock2], input="exit\n",
                                 capture_output=True, text=True, timeout=15)
        check(refused.returncode == 1 and
              "rocemu_open_device" in refused.stderr,
              f"uid not in allowed_uids: refused ({refused.stderr.strip()})")
        c2 = control(sock2, {"cmd": "counters"})["ports"]["n0"]["verbs"]
        check(c2.get("counters", {}).get("clients_refused", 0) >= 1,
              "refusal counted (clients_refused)")
        check(netns_util.stop_rocemud(d2, timeout=10) == 0,
              "second daemon: clean exit")

        rc = netns_util.stop_rocemud(daemon, timeout=10)
        check(rc == 0, f"SIGTERM: clean exit status {rc}")
        check(not os.path.exists(sock) and not os.path.exists(vsock),
              "control and verbs sockets removed on exit")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=10)
        subprocess.run(["ip", "netns", "del", ns], check=False)
        if failures:
            log = os.path.join(tmp, "rocemud.log")
            if os.path.exists(log):
                print("--- rocemud.log (tail)")
                print("".join(open(log).readlines()[-30:]))
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{'FAILED' if failures else 'PASSED'}: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
