"""Hosts as a user's VMs are, for the netdev tests: each a network
namespace whose interface eth0 (one end of a veth) carries the kernel's
address, the other ends in one bridge (a namespace of its own, the
"switch"), and on each host its own `rocemud --netdev eth0`, as the user
would run it. Unmodified RDMA programs run in a host's namespace over the
drop-in libraries, finding that host's daemon by its run directory, as
`rocemu-run --dir` does.

Everything is named after the test's pid (tests run in parallel) and
removed at cleanup."""
import os
import re
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "emulator"))
import netns_util  # noqa: E402
from netns_util import sh  # noqa: E402


def snmp(ns):
    """/proc/net/snmp of namespace `ns` as {"Udp": {"NoPorts": n, ...}}."""
    out = sh("cat", "/proc/net/snmp", ns=ns).stdout.splitlines()
    table = {}
    for names, values in zip(out[0::2], out[1::2]):
        proto = names.split(":")[0]
        table[proto] = dict(zip(names.split()[1:],
                                (int(v) for v in values.split()[1:])))
    return table


def kernel_roce_counters(ns):
    """What a RoCE frame reaching the kernel's UDP layer would move: UDP
    datagrams to no socket, UDP input errors, and ICMP destination
    unreachables sent."""
    s = snmp(ns)
    return {"UdpNoPorts": s["Udp"]["NoPorts"],
            "UdpInErrors": s["Udp"]["InErrors"],
            "IcmpOutDestUnreachs": s["Icmp"]["OutDestUnreachs"]}


class Host:
    def __init__(self, cluster, i, ns, ip):
        self.cluster, self.i, self.ns, self.ip = cluster, i, ns, ip
        self.dir = os.path.join(cluster.tmp, f"h{i}")
        os.makedirs(self.dir, exist_ok=True)
        os.chmod(self.dir, 0o755)
        self.ctl = os.path.join(self.dir, "rocemud-eth0.sock")
        self.verbs = os.path.join(self.dir, "verbs-eth0.sock")
        self.log = os.path.join(self.dir, "rocemud.log")
        self.proc = None

    def start(self, extra=(), wait=True, mode=None):
        """rocemud --netdev eth0 in the host's namespace (with `mode`, a
        config file naming netdev_mode instead). Returns the process."""
        if mode is None:
            argv = [self.cluster.rocemud, "--netdev", "eth0", "--run-dir",
                    self.dir]
        else:
            cfg = os.path.join(self.dir, "rocemud.yaml")
            netns_util.write_rocemud_config(
                cfg, f"rocemu-nd-{self.cluster.pid}-{self.i}",
                [{"netdev": "eth0", "netdev_mode": mode}],
                control={"socket": self.ctl}, verbs={"socket": self.verbs})
            argv = [self.cluster.rocemud, "--config", cfg]
        # A killed daemon leaves its sockets: the new one's are waited for.
        for path in (self.ctl, self.verbs):
            if os.path.exists(path):
                os.unlink(path)
        with open(self.log, "a") as log:
            self.proc = subprocess.Popen(
                ["ip", "netns", "exec", self.ns] + argv + list(extra),
                stdout=log, stderr=subprocess.STDOUT)
        self.cluster.procs.append(self.proc)
        if wait:
            self.wait_ready()
        return self.proc

    def wait_ready(self, timeout=30):
        deadline = time.monotonic() + timeout
        while not (os.path.exists(self.ctl) and os.path.exists(self.verbs)):
            if self.proc.poll() is not None:
                raise AssertionError(f"h{self.i}: rocemud exited "
                                     f"({self.proc.returncode}):\n"
                                     f"{self.log_text()[-2000:]}")
            if time.monotonic() > deadline:
                raise AssertionError(f"h{self.i}: no sockets:\n"
                                     f"{self.log_text()[-2000:]}")
            time.sleep(0.05)

    def log_text(self):
        with open(self.log, errors="replace") as f:
            return f.read()

    def control(self, cmd, **fields):
        return netns_util.control(self.ctl, dict(cmd=cmd, **fields),
                                  timeout=10)

    def port(self):
        return self.control("ports")["ports"][0]

    def counters(self):
        return self.control("counters")["ports"]["eth0"]

    def env(self):
        e = dict(os.environ)
        e["LD_LIBRARY_PATH"] = f"{self.cluster.rdmacm}:{self.cluster.dropin}"
        e["ROCEMU_VERBS_DIR"] = self.dir
        e.pop("ROCEMU_VERBS_SOCKET", None)
        return e

    def tool(self, argv, timeout=120):
        """An unmodified program in the host's namespace over the
        drop-ins; a Popen (text output, its own process group)."""
        p = subprocess.Popen(["timeout", "-k", "5", str(timeout), "ip",
                              "netns", "exec", self.ns] + argv,
                             env=self.env(), stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True,
                             start_new_session=True)
        return p

    def run(self, argv, timeout=120):
        p = self.tool(argv, timeout)
        out, _ = p.communicate()
        return p.returncode, out

    def wait_listener(self, port, timeout=30):
        """Whether this host's CM lists a listener on TCP-space `port`."""
        return netns_util.cm_listener(self.ctl, port, timeout) is not None

    def kill(self, sig=signal.SIGTERM, timeout=15):
        self.proc.send_signal(sig)
        return self.proc.wait(timeout=timeout)


class Cluster(netns_util.NetRun):
    """N hosts on one bridge; host i (0-based) is 10.<net>.0.(i + 1)."""

    def __init__(self, rocemud, dropin, rdmacm, n, net=124, mtu=1500):
        super().__init__("rocemu-netdev-", world_readable=True)
        self.rocemud, self.dropin, self.rdmacm = rocemud, dropin, rdmacm
        self.n, self.net, self.mtu = n, net, mtu
        self.hosts = []
        self.switch = None
        self.cm_port = 7000 + self.pid % 1000

    def build(self):
        self.switch = self.netns("rocemu-sw")
        sh("ip", "link", "add", "br0", "type", "bridge", "stp_state", "0",
           "forward_delay", "0", ns=self.switch)
        sh("ip", "link", "set", "br0", "up", ns=self.switch)
        for i in range(self.n):
            ns = self.netns(f"rocemu-h{i}")
            self.add_link(ns, i)
            ip = f"10.{self.net}.0.{i + 1}"
            sh("ip", "addr", "add", f"{ip}/24", "dev", "eth0", ns=ns)
            self.hosts.append(Host(self, i, ns, ip))
        return self.hosts

    def add_link(self, ns, i, name="eth0"):
        """eth0 in `ns`, its peer p<i> in the switch's bridge."""
        peer = f"p{i}"
        sh("ip", "link", "add", name, "netns", ns, "mtu", str(self.mtu),
           "type", "veth", "peer", "name", peer, "netns", self.switch,
           "mtu", str(self.mtu))
        sh("ip", "link", "set", peer, "master", "br0", "up", ns=self.switch)
        sh("ip", "link", "set", name, "up", ns=ns)

    def start_all(self, mode=None):
        for h in self.hosts:
            h.start(wait=False, mode=mode)
        for h in self.hosts:
            h.wait_ready()

    def perftest_pair(self, server, client, argv, timeout=120,
                      while_running=None):
        """`argv` (a perftest program with -R) served on host `server` and
        run from host `client` against it, each run on a port of its own;
        `while_running(client Popen)` is called once the client started.
        perftest -R's refused client (netns_util.collect_pair) runs again.
        Returns (server rc, server output, client rc, client output)."""
        def start():
            self.cm_port += 1
            full = argv + ["-p", str(self.cm_port)]
            srv = server.tool(full, timeout)
            self.check(server.wait_listener(self.cm_port),
                       f"h{server.i}: {argv[0]} listens on {self.cm_port}")
            cli = client.tool(full + [server.ip], timeout)
            if while_running is not None:
                while_running(cli)
            return srv, cli
        return netns_util.collect_pair(start, timeout)

    def print_logs(self, tail=1500):
        for h in self.hosts:
            print(f"--- h{h.i} rocemud log ---")
            print(h.log_text()[-tail:])


def rping_pings(out, n):
    """How many of rping's n pings came back validated (-V -v prints each)."""
    seen = {int(x) for x in re.findall(r"rdma-ping-(\d+):", out)}
    return len(seen & set(range(n)))


def write_bw_rate(out):
    """ib_write_bw's BW average (the 4th column of its result row), or
    None."""
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 5 and f[0].isdigit() and f[1].isdigit():
            try:
                return float(f[3])
            except ValueError:
                pass
    return None
