#!/usr/bin/env python3
"""Linux Soft-RoCE (rdma_rxe in a qemu guest of ../shared/peer, its own
`rdma link add rxe0 type rxe netdev eth0`) as a host among rocemu hosts,
both directions, each side running its own unmodified programs:

  bridge  the guest's tap in the bridge of the netdev cluster
          (tests/netdev/hosts.py): two hosts with `rocemud --netdev eth0`
          on the kernel's addresses, and the guest. rping both ways (rxe
          serves h0, h1 serves rxe), ib_write_bw both ways (its TCP
          exchange between the kernels that keep those same addresses).
          Neither rocemu host's kernel sees a RoCE frame.
  vhost   the guest's virtio-net backed by vhost-user on a rocemud port
          (net_vhost0: the path of a VM's virtio-net to an OVS-DPDK-style
          switch); the link has no kernel on the rocemu side, so only
          rdma_cm programs (CM over RoCEv2 MADs): rping both ways.

Every RoCEv2 frame of both implementations on the wire (the bridge, or
the daemon's capture of its vhost port) must pass ../shared/oracle's
check_pcap.py --strict. The guest runs under TCG: slow, hence the interop
suite.

Usage: netdev_rxe_test.py ROCEMUD DROPIN_DIR RDMACM_DIR SHARED_DIR
                          [bridge|vhost ...]
"""
import os
import re
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "netdev"))
import hosts as hostslib  # noqa: E402
from hosts import netns_util, sh  # noqa: E402

PEER_BUILD = os.environ.get("RXE_PEER_BUILD", "/var/tmp/rxe-peer")
GUEST_MAC = "52:54:00:12:35:09"
PINGS = 20

# The guest's job (busybox sh, /etc/rxe-env gives GIDX and MYIP): each
# step waits for the host's go.N, runs rxe's side and leaves rc.N (renamed
# into place: the host may look at the 9p share while it is written);
# servers signal ready.N once they listen.
JOB_HEAD = r"""
wait_file() { n=0; until [ -e "$1" ]; do sleep 0.05; n=$((n+1)); [ $n -gt 3600 ] && return 1; done; }
cm_listening() { rdma res show cm_id 2>/dev/null | grep -q LISTEN; }
tcp_listening() { p=$(printf "%04X" "$1"); grep -qE "^ *[0-9]+: [0-9A-F]+:$p [0-9A-F]+:0000 0A" /proc/net/tcp; }
T=""; command -v timeout >/dev/null 2>&1 && T="timeout 240"
"""


def step_server(i, cmd, ready):
    return f"""
wait_file $SHARE/go.{i}
$T {cmd} > $SHARE/out.{i} 2>&1 &
P=$!; n=0; until {ready}; do sleep 0.05; n=$((n+1)); [ $n -gt 2400 ] && break; done
touch $SHARE/ready.{i}
wait $P; echo $? > $SHARE/rc.{i}.tmp; mv $SHARE/rc.{i}.tmp $SHARE/rc.{i}
"""


def step_client(i, cmd):
    return f"""
wait_file $SHARE/go.{i}
$T {cmd} > $SHARE/out.{i} 2>&1; echo $? > $SHARE/rc.{i}.tmp
mv $SHARE/rc.{i}.tmp $SHARE/rc.{i}
"""


class Guest:
    """One boot of the rxe guest running `job`, its NIC either a tap
    (`tap` in namespace `ns`) or vhost-user (`vhost_sock`)."""

    def __init__(self, run, name, ip, job, ns, tap=None, vhost_sock=None):
        self.share = os.path.join(run.tmp, f"share-{name}")
        os.makedirs(self.share)
        with open(os.path.join(self.share, "G.sh"), "w") as f:
            f.write(JOB_HEAD + job)
        self.console = os.path.join(run.tmp, f"{name}.console.log")
        nic = f"virtio-net-pci,netdev=n0,mac={GUEST_MAC}"
        if tap is not None:
            net = ["-netdev", f"tap,id=n0,ifname={tap},script=no,"
                   "downscript=no"]
            mem = []
        else:
            # vhost-user maps the guest's memory: shared, from a memfd.
            net = ["-chardev", f"socket,id=vu0,path={vhost_sock}",
                   "-netdev", "vhost-user,id=n0,chardev=vu0"]
            mem = ["-object", "memory-backend-memfd,id=mem,size=768M,"
                   "share=on", "-numa", "node,memdev=mem"]
            # No MSI-X: Debian 12's qemu 7.2 under TCG segfaults in
            # vhost_net_start (msix_set_vector_notifiers wants KVM's
            # irqchip) when the guest's driver starts the device; INTx
            # interrupts take qemu's own notifiers.
            nic += ",vectors=0"
        argv = ["ip", "netns", "exec", ns, "qemu-system-x86_64", "-accel",
                "tcg", "-cpu", "max", "-M", "pc", "-m", "768", "-smp", "1",
                "-nodefaults", "-no-user-config", "-display", "none",
                "-no-reboot", "-kernel", f"{PEER_BUILD}/vmlinux",
                "-initrd", f"{PEER_BUILD}/initrd.img", "-append",
                f"console=ttyS0 panic=-1 loglevel=4 rxe.name=G "
                f"rxe.ip={ip}/24 rxe.share=1",
                "-serial", f"file:{self.console}"] + mem + net + [
                "-device", nic,
                "-virtfs", f"local,path={self.share},mount_tag=share,"
                "security_model=none,id=share"]
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.STDOUT,
                                     start_new_session=True)
        run.procs.append(self.proc)

    def path(self, name):
        return os.path.join(self.share, name)

    def go(self, i):
        open(self.path(f"go.{i}"), "w").close()

    def wait(self, name, timeout=300):
        deadline = time.monotonic() + timeout
        while not os.path.exists(self.path(name)):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                return False
            time.sleep(0.1)
        return True

    def rc(self, i, timeout=300):
        if not self.wait(f"rc.{i}", timeout):
            return None
        with open(self.path(f"rc.{i}")) as f:
            return int(f.read().strip() or -1)

    def out(self, i):
        try:
            with open(self.path(f"out.{i}"), errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def finish(self, timeout=120):
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def oracle(run, shared, pcap, what):
    p = subprocess.run([sys.executable,
                        os.path.join(shared, "oracle", "check_pcap.py"),
                        "--strict", pcap], capture_output=True, text=True,
                       timeout=120)
    last = (p.stdout.strip().splitlines() or ["(no output)"])[-1]
    run.check(p.returncode == 0, f"{what}: every RoCEv2 frame on the wire "
              f"passes check_pcap --strict: {last}")


def rping_ok(out, n):
    return hostslib.rping_pings(out, n) == n


def bridge_case(c, shared):
    h0, h1 = c.build()
    tap = f"tg{c.pid % 100000}"
    sh("ip", "tuntap", "add", "dev", tap, "mode", "tap", ns=c.switch)
    sh("ip", "link", "set", tap, "master", "br0", "up", ns=c.switch)
    guest_ip = f"10.{c.net}.0.9"
    before = {h.i: hostslib.kernel_roce_counters(h.ns) for h in (h0, h1)}
    c.start_all()
    pcap = os.path.join(c.tmp, "bridge.pcap")
    cap_log = pcap + ".tcpdump.log"
    # --immediate-mode: libpcap's TPACKET_V3 ring otherwise hands tcpdump a
    # block only when it fills or after its 1 s timeout, and the SIGINT
    # below, shortly after the last frame, lost the block that held the
    # end of the last ib_write_bw (check_pcap: "message ... never
    # completed").
    with open(cap_log, "w") as log:
        cap = subprocess.Popen(["ip", "netns", "exec", c.switch, "tcpdump",
                                "-i", "br0", "-s", "0", "-B", "131072",
                                "--immediate-mode", "-U", "-n", "-w", pcap,
                                "udp port 4791"],
                               stdout=log, stderr=subprocess.STDOUT)
    c.procs.append(cap)
    netns_util.wait_for("tcpdump on br0", lambda: "listening on" in
                        open(cap_log, errors="replace").read(), timeout=10)
    job = (step_server(1, f"rping -s -a $MYIP -p 7300 -C {PINGS} -S 64 -V",
                       "cm_listening") +
           step_client(2, f"rping -c -a {h1.ip} -p 7301 -C {PINGS} -S 64 "
                       "-V -v") +
           step_server(3, "ib_write_bw -d rxe0 -x $GIDX -s 4096 -n 100 "
                       "-p 18600", "tcp_listening 18600") +
           step_client(4, f"ib_write_bw -d rxe0 -x $GIDX -s 4096 -n 100 "
                       f"-p 18601 {h1.ip}"))
    g = Guest(c, "bridge", guest_ip, job, c.switch, tap=tap)
    # 1: rxe serves, rocemu host h0 pings it.
    g.go(1)
    c.check(g.wait("ready.1"), "bridge: rxe's rping server listens")
    rc, out = h0.run(["rping", "-c", "-a", guest_ip, "-p", "7300", "-C",
                      str(PINGS), "-S", "64", "-V", "-v"], timeout=240)
    grc = g.rc(1)
    c.check(rc == 0 and grc == 0 and rping_ok(out, PINGS),
            f"bridge: rping rocemu h0 -> rxe: exit {rc}/{grc}, "
            f"{hostslib.rping_pings(out, PINGS)}/{PINGS} pings")
    # 2: rocemu host h1 serves, rxe pings it.
    srv = h1.tool(["rping", "-s", "-a", h1.ip, "-p", "7301", "-C",
                   str(PINGS), "-S", "64", "-V"], timeout=240)
    c.check(h1.wait_listener(7301), "bridge: h1's rping server listens")
    g.go(2)
    grc = g.rc(2)
    sout, _ = srv.communicate()
    gout = g.out(2)
    c.check(grc == 0 and srv.returncode == 0 and rping_ok(gout, PINGS),
            f"bridge: rping rxe -> rocemu h1: exit {srv.returncode}/{grc}, "
            f"{hostslib.rping_pings(gout, PINGS)}/{PINGS} pings")
    # 3: rxe serves ib_write_bw, h0 writes to it.
    g.go(3)
    c.check(g.wait("ready.3"), "bridge: rxe's ib_write_bw listens")
    rc, out = h0.run(["ib_write_bw", "-d", "rocemu_eth0", "-x", "0", "-s",
                      "4096", "-n", "100", "-p", "18600", guest_ip],
                     timeout=240)
    grc = g.rc(3)
    c.check(rc == 0 and grc == 0 and hostslib.write_bw_rate(out),
            f"bridge: ib_write_bw rocemu h0 -> rxe: exit {rc}/{grc}, "
            f"{hostslib.write_bw_rate(out)} MB/s")
    # 4: h1 serves ib_write_bw, rxe writes to it.
    srv = h1.tool(["ib_write_bw", "-d", "rocemu_eth0", "-x", "0", "-s",
                   "4096", "-n", "100", "-p", "18601"], timeout=240)
    netns_util.wait_for("h1's ib_write_bw", lambda: ":18601 " in sh(
        "ss", "-ltnH", ns=h1.ns).stdout, timeout=30)
    g.go(4)
    grc = g.rc(4)
    sout, _ = srv.communicate()
    gout = g.out(4)
    c.check(grc == 0 and srv.returncode == 0 and
            hostslib.write_bw_rate(gout),
            f"bridge: ib_write_bw rxe -> rocemu h1: exit "
            f"{srv.returncode}/{grc}, {hostslib.write_bw_rate(gout)} MB/s")
    g.finish()
    for h in (h0, h1):
        after = hostslib.kernel_roce_counters(h.ns)
        c.check(after == before[h.i],
                f"bridge: h{h.i}'s kernel saw no RoCE frame: {after}")
    cap.send_signal(signal.SIGINT)
    cap.wait(timeout=10)
    with open(cap_log, errors="replace") as f:
        stats = f.read()
    # A frame the capture lost would fail the oracle for the wrong reason.
    c.check(re.search(r"^0 packets dropped by kernel", stats, re.M)
            is not None,
            "bridge: the capture lost no frame: " +
            " ".join(ln for ln in stats.splitlines() if "dropped" in ln))
    oracle(c, shared, pcap, "bridge")
    if c.failures:
        for i in (1, 2, 3, 4):
            print(f"--- guest step {i} ---\n{g.out(i)[-1500:]}")
        with open(g.console, errors="replace") as f:
            print("--- guest console ---\n" + f.read()[-3000:])


def vhost_case(c, shared):
    """rocemud on a vhost-user port, the guest's virtio-net its peer."""
    ns = c.netns("rocemu-vh")
    d = os.path.join(c.tmp, "vh")
    os.makedirs(d)
    os.chmod(d, 0o755)
    sock = os.path.join(d, "vhost.sock")
    ctl, verbs = os.path.join(d, "ctl.sock"), os.path.join(d, "verbs.sock")
    cfg = os.path.join(d, "rocemud.yaml")
    my_ip, guest_ip = "10.128.0.1", "10.128.0.2"
    netns_util.write_rocemud_config(
        cfg, f"rocemu-vh-{c.pid}",
        [netns_util.port("p0", f"net_vhost0,iface={sock},queues=1",
                         "02:00:00:7a:04:01", f"{my_ip}/24", 1500)],
        control={"socket": ctl}, verbs={"socket": verbs},
        logging={"file": os.path.join(d, "rocemud.log")},
        capture={"enabled": True, "rx_path": os.path.join(d, "rx.pcap"),
                 "tx_path": os.path.join(d, "tx.pcap")})
    p = netns_util.start_rocemud(ns, c.rocemud, cfg, (ctl, verbs, sock),
                                 "vhost daemon", what="sockets")
    c.procs.append(p)
    env = dict(os.environ, LD_LIBRARY_PATH=f"{c.rdmacm}:{c.dropin}",
               ROCEMU_VERBS_SOCKET=verbs)

    def tool(argv):
        return subprocess.Popen(["timeout", "240", "ip", "netns", "exec", ns]
                                + argv, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)
    job = (step_server(1, f"rping -s -a $MYIP -p 7300 -C {PINGS} -S 64 -V",
                       "cm_listening") +
           step_client(2, f"rping -c -a {my_ip} -p 7301 -C {PINGS} -S 64 "
                       "-V -v"))
    g = Guest(c, "vhost", guest_ip, job, ns, vhost_sock=sock)
    g.go(1)
    c.check(g.wait("ready.1"), "vhost: rxe's rping server listens")
    cli = tool(["rping", "-c", "-a", guest_ip, "-p", "7300", "-C",
                str(PINGS), "-S", "64", "-V", "-v"])
    out, _ = cli.communicate()
    grc = g.rc(1)
    c.check(cli.returncode == 0 and grc == 0 and rping_ok(out, PINGS),
            f"vhost: rping rocemu -> rxe: exit {cli.returncode}/{grc}, "
            f"{hostslib.rping_pings(out, PINGS)}/{PINGS} pings")
    srv = tool(["rping", "-s", "-a", my_ip, "-p", "7301", "-C", str(PINGS),
                "-S", "64", "-V"])

    def listening():
        for e in netns_util.control(ctl, {"cmd": "cm"})["ports"][0]["cm_ids"]:
            if e["listener"] and int(e["service_id"], 16) & 0xFFFF == 7301:
                return True
        return False
    netns_util.wait_for("our rping server", listening, timeout=30)
    g.go(2)
    grc = g.rc(2)
    srv.communicate()
    gout = g.out(2)
    c.check(grc == 0 and srv.returncode == 0 and rping_ok(gout, PINGS),
            f"vhost: rping rxe -> rocemu: exit {srv.returncode}/{grc}, "
            f"{hostslib.rping_pings(gout, PINGS)}/{PINGS} pings")
    g.finish()
    c.check(netns_util.stop_rocemud(p) == 0, "vhost: the daemon exits "
            "cleanly after the guest left")
    for direction in ("rx", "tx"):
        oracle(c, shared, os.path.join(d, f"{direction}.pcap"),
               f"vhost {direction}")
    if c.failures:
        for i in (1, 2):
            print(f"--- guest step {i} ---\n{g.out(i)[-1500:]}")
        with open(g.console, errors="replace") as f:
            print("--- guest console ---\n" + f.read()[-3000:])


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    rocemud, dropin, rdmacm, shared = (os.path.abspath(p) for p in args[:4])
    cases = args[4:] or ["bridge", "vhost"]
    if os.geteuid() != 0:
        print("FAIL: needs root")
        return 1
    if not os.path.exists(f"{PEER_BUILD}/vmlinux"):
        print(f"FAIL: no rxe guest image in {PEER_BUILD} "
              f"({shared}/peer/build-guest.sh builds it)")
        return 1
    c = hostslib.Cluster(rocemud, dropin, rdmacm, 2, net=127)
    start = time.monotonic()
    with netns_util.failures_reported(c):
        if "bridge" in cases:
            bridge_case(c, shared)
        if "vhost" in cases:
            vhost_case(c, shared)
        if c.failures:
            c.print_logs()
    print(f"     {time.monotonic() - start:.1f} s")
    return netns_util.verdict(c.failures)


if __name__ == "__main__":
    sys.exit(main())
