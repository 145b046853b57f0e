#!/usr/bin/env python3
"""virtio as VMs have it: two rocemud daemons joined by DPDK's vhost-user
backend and virtio frontend (daemon A `net_vhost0`, the switch side of a
VM's virtio-net; daemon B `virtio_user0`, the guest side), MTU 4200 (4 KiB
RoCE). Debian's unmodified programs over the drop-ins:

- ibv_devinfo on both: an active port, RoCE v2 GIDs, active MTU 4096;
- rping -C 200 -V (rdma_cm), both directions;
- ib_write_bw -R at 64 KiB, both directions, a result row each;
- the daemons' links show the frames went through the virtio rings and
  nothing was dropped (tx_dropped, rx_missed 0).

Usage: virtio_test.py ROCEMUD DROPIN_DIR RDMACM_DIR
"""
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "emulator"))
sys.path.insert(0, os.path.join(HERE, "..", "ibverbs"))
import netns_util  # noqa: E402
import rdmacm_tools_test as cm  # noqa: E402

A_IP, B_IP = "10.122.3.1", "10.122.3.2"


def main():
    rocemud, dropin, rdmacm = (os.path.abspath(p) for p in sys.argv[1:4])
    if os.geteuid() != 0:
        print("FAIL: the net suite needs root")
        return 1
    r = cm.CmRun(rocemud, dropin, rdmacm)
    start = time.monotonic()
    with netns_util.failures_reported(r):
        ns = r.netns("rocemu-vio")
        sock = os.path.join(r.tmp, "vhost.sock")
        # The vhost-user backend listens on the socket; the virtio
        # frontend connects to it (as qemu's vhost-user netdev does).
        a = r.daemon(ns, "a", f"net_vhost0,iface={sock},queues=1",
                     "02:00:00:7a:03:01", A_IP)
        b = r.daemon(ns, "b", f"virtio_user0,path={sock},queues=1",
                     "02:00:00:7a:03:02", B_IP)
        for d in (a, b):
            out = subprocess.run(["ibv_devinfo", "-v"], env=r.env(d),
                                 capture_output=True, text=True, timeout=60)
            r.check(out.returncode == 0 and "PORT_ACTIVE" in out.stdout and
                    "RoCE v2" in out.stdout and
                    re.search(r"active_mtu:\s+4096", out.stdout) is not None,
                    f"{d['name']}: ibv_devinfo -v: active, RoCE v2, MTU 4096")

        for srv, cli, what in ((a, b, "virtio -> vhost"),
                               (b, a, "vhost -> virtio")):
            n = 200
            (crc, cout), (src, sout) = r.pair_cm(
                ns, srv, cli,
                ["rping", "-s", "-a", srv["ip"], "-p", "{port}", "-C",
                 str(n), "-S", "1024", "-V"],
                ["rping", "-c", "-a", srv["ip"], "-p", "{port}", "-C",
                 str(n), "-S", "1024", "-V", "-v"])
            seen = {int(x) for x in re.findall(r"rdma-ping-(\d+):", cout)}
            ok = src == 0 and crc == 0 and len(seen & set(range(n))) == n
            r.check(ok, f"rping {what}: server {src}, client {crc}, "
                    f"{len(seen & set(range(n)))}/{n} pings")
            if not ok:
                netns_util.print_pair_output(sout, cout)
            bw = ["ib_write_bw", "-R", "-s", "65536", "-n", "500",
                  "--report_gbits", "-p", "{port}"]
            (crc, cout), (src, sout) = r.pair_cm(
                ns, srv, cli, bw, bw + [srv["ip"]])
            rows = [line for line in cout.splitlines()
                    if line.split()[:1] == ["65536"]]
            ok = src == 0 and crc == 0 and len(rows) == 1
            r.check(ok, f"ib_write_bw -R {what}: server {src}, client "
                    f"{crc}: {rows[0].split() if rows else None}")
            if not ok:
                netns_util.print_pair_output(sout, cout)

        for d in (a, b):
            c = netns_util.control(d["ctl"], {"cmd": "counters"},
                                   timeout=10)["ports"]["p0"]
            r.check(c["rx_nic"] > 1000 and c["tx_dropped"] == 0 and
                    c["rx_missed"] == 0,
                    f"{d['name']}: {c['rx_nic']} RoCE frames through the "
                    f"virtio rings, tx_dropped {c['tx_dropped']}, rx_missed "
                    f"{c['rx_missed']}")
        for d in (b, a):  # the frontend first: a vhost peer's exit is fine
            r.check(netns_util.stop_rocemud(d["proc"]) == 0,
                    f"{d['name']}: clean exit on SIGTERM")
    print(f"     {time.monotonic() - start:.1f} s")
    return netns_util.verdict(r.failures)


if __name__ == "__main__":
    sys.exit(main())
