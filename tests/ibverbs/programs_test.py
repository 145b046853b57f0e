#!/usr/bin/env python3
"""Debian programs that reach their peer over TCP at the same address they
then reach over RDMA, unmodified, between two rocemud daemons (one per
host):

- qperf 0.4.11: rc_bw, rc_lat, rc_rdma_write_bw, rc_rdma_read_lat with
  -cm1 (rdma_cm; the bandwidth tests make send-only and receive-only QPs),
  each row a real figure (a bandwidth or latency above zero), the daemons'
  counters showing the traffic. Without -cm1 qperf exchanges LIDs only,
  which RoCE has not: its RC and UC tests fail at RTR and ud_lat at
  ibv_create_ah with EINVAL, as on Linux rxe (docs/verbs.md); checked.
- libfabric 1.17's verbs provider: fi_info -p verbs lists the device for
  FI_EP_MSG, FI_EP_DGRAM and, layered, verbs;ofi_rxm FI_EP_RDM;
  fi_pingpong -e msg, -e rdm (verbs;ofi_rxm) and -e dgram (UD) with data
  checks (-c) over its default sizes. The server binds 127.0.0.1
  (rdma_bind_addr of a loopback address binds no device, as the kernel's
  rdma_cm does).
- MPI: tests/ibverbs/mpi_pingpong.c under MPICH (Debian's is built for
  ch4:ucx only: over UCX's rc_verbs/ud_verbs) and under Open MPI's
  libfabric layer (pml cm, mtl ofi over verbs;ofi_rxm), one rank per
  daemon: every byte of 8 B - 1 MiB messages checked, an allreduce.

Hosts, until rocemud has a netdev mode: one network namespace, the two
daemons joined by memif, and the kernel holding both daemons' addresses on
a veth pair inside the namespace, so that the programs' TCP (and
libfabric's interface scan, getifaddrs) finds the RDMA addresses where a
host's kernel has them.

Usage: programs_test.py ROCEMUD DROPIN_DIR RDMACM_DIR BUILD_DIR
                        [MPI_PINGPONG_OMPI] [MPI_PINGPONG_MPICH]
"""
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "emulator"))
sys.path.insert(0, HERE)
import netns_util  # noqa: E402
import stock_tools_test as stock  # noqa: E402

RUN = os.path.join(HERE, "..", "..", "scripts", "rocemu-run")
A_IP, B_IP = "10.123.1.1", "10.123.1.2"


class Hosts(stock.Run):
    def __init__(self, rocemud, dropin, rdmacm, build):
        super().__init__(rocemud, dropin)
        self.rdmacm = rdmacm
        self.build = build
        self.tcp_port = 20000 + self.pid % 10000

    def start(self, ns, d, argv, extra_env=None, wrap=()):
        env = self.env(d)
        env.update(extra_env or {})
        return subprocess.Popen(["ip", "netns", "exec", ns] + list(wrap) +
                                argv, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)

    def finish(self, procs, timeout):
        """(returncode, output) of each process; killed at the deadline."""
        outs = []
        deadline = time.monotonic() + timeout
        for p in procs:
            try:
                out, _ = p.communicate(timeout=max(1, deadline -
                                                   time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, 9)
                out, _ = p.communicate()
                out += "\n(timed out)"
            outs.append((p.returncode, out))
        return outs


def listening(port, proc, what):
    """Whether the server `proc` came to listen on TCP `port`."""
    try:
        netns_util.wait_tcp_listener(proc, int(port), timeout=30)
        return True
    except AssertionError as e:
        print(f"     {what}: {e}")
        return False


def setup(r):
    ns = r.netns("rocemu-progs")
    sock = f"rocemu-progs-{r.pid}"
    # The kernel's side of both hosts: their addresses on a veth pair
    # (local to the namespace: TCP between them stays in the kernel).
    ka, kb = f"pa{r.pid % 100000}", f"pb{r.pid % 100000}"
    netns_util.sh("ip", "link", "add", ka, "type", "veth", "peer", "name",
                  kb, ns=ns)
    for dev, ip in ((ka, A_IP), (kb, B_IP)):
        netns_util.sh("ip", "addr", "add", f"{ip}/24", "dev", dev, ns=ns)
        netns_util.sh("ip", "link", "set", dev, "up", ns=ns)
    a = r.daemon(ns, "a", f"net_memif0,role=server,socket={sock},bsize=8192",
                 "02:00:00:7b:01:01", A_IP)
    b = r.daemon(ns, "b", f"net_memif0,role=client,socket={sock},bsize=8192",
                 "02:00:00:7b:01:02", B_IP)
    # The link is up once each daemon has the other's MAC (ARP over memif).
    for d, ip in ((a, B_IP), (b, A_IP)):
        netns_util.wait_for(
            f"daemon {d['name']} to resolve {ip}",
            lambda d=d, ip=ip: netns_util.control(
                d["ctl"], {"cmd": "resolve", "port": "p0", "ip": ip},
                timeout=10).get("mac"), timeout=20)
    return ns, a, b


def counters(d):
    return netns_util.control(d["ctl"], {"cmd": "counters"},
                              timeout=10)["ports"]["p0"]["rnic"]


def delta(before, after, key):
    return after.get(key, 0) - before.get(key, 0)


# fi_pingpong's sizes when none is given (UD: those within the MTU).
FI_SIZES = ["64", "256", "1k", "4k", "64k", "1m"]
QPERF_ROW = re.compile(r"^\s+(bw|latency)\s+=\s+([\d.]+)\s+(\S+)", re.M)


def qperf(r, ns, a, b):
    port = str(r.tcp_port)
    r.tcp_port += 1
    srv = r.start(ns, a, ["qperf", "-lp", port])
    if not r.check(listening(port, srv, "qperf"), "qperf server up"):
        return
    # With rdma_cm: each test one second; the rows must be real figures.
    tests = ["rc_bw", "rc_lat", "rc_rdma_write_bw", "rc_rdma_read_lat"]
    before = [counters(d) for d in (a, b)]
    [(crc, cout)] = r.finish([r.start(ns, b, ["qperf", "-lp", port, A_IP,
                                              "-cm1", "-t", "1"] + tests)],
                             120)
    after = [counters(d) for d in (a, b)]
    results = {}
    for block in re.split(r"^(?=\w+:\s*$)", cout, flags=re.M):
        head = block.split(":", 1)[0].strip()
        m = QPERF_ROW.search(block)
        if head in tests and m:
            results[head] = (float(m.group(2)), m.group(3))
    for t in tests:
        v = results.get(t)
        r.check(crc == 0 and v is not None and v[0] > 0,
                f"qperf -cm1 {t}: {v[0] if v else 'no'} "
                f"{v[1] if v else 'row'}")
    if crc != 0 or len(results) != len(tests):
        print(cout[-2000:])
    # The client (B) sent SENDs and WRITEs, and read from A.
    r.check(delta(before[1], after[1], "rdma_sends") > 1000 and
            delta(before[0], after[0], "rdma_recvs") > 1000 and
            delta(before[0], after[0], "rx_read_requests") > 100 and
            delta(before[0], after[0], "rx_write_requests") > 1000,
            "qperf's traffic in the daemons' counters: B rdma_sends "
            f"{delta(before[1], after[1], 'rdma_sends')}, A rdma_recvs "
            f"{delta(before[0], after[0], 'rdma_recvs')}, rx_write_requests "
            f"{delta(before[0], after[0], 'rx_write_requests')}, "
            f"rx_read_requests {delta(before[0], after[0], 'rx_read_requests')}")
    # Without rdma_cm: LID-addressed paths, refused as RoCE refuses them.
    for t, says in (("rc_lat", "failed to modify QP to RTR: Invalid argument"),
                    ("uc_bw", "failed to modify QP to RTR: Invalid argument"),
                    ("ud_lat",
                     "failed to create address handle: Invalid argument")):
        [(crc, cout)] = r.finish([r.start(ns, b, ["qperf", "-lp", port, A_IP,
                                                  "-t", "1", t])], 60)
        r.check(crc != 0 and says in cout,
                f"qperf {t} without -cm1 (no GID on the wire): refused at "
                f"the same step as on RoCE hardware and rxe ('{says}')")
        if says not in cout:
            print(cout[-1000:])
    [(qrc, _)] = r.finish([r.start(ns, b, ["qperf", "-lp", port, A_IP,
                                           "quit"])], 30)
    [(src, sout)] = r.finish([srv], 30)
    r.check(qrc == 0 and src == 0, f"qperf server quits ({src})")


def libfabric(r, ns, a, b):
    out = subprocess.run(["ip", "netns", "exec", ns, "fi_info", "-p",
                          "verbs"], env=r.env(a), capture_output=True,
                         text=True, timeout=60)
    domains = re.findall(r"domain: (\S+)\n.*\n\s+type: (FI_EP_\w+)",
                         out.stdout)
    r.check(out.returncode == 0 and (stock.DEV, "FI_EP_MSG") in domains and
            (f"{stock.DEV}-dgram", "FI_EP_DGRAM") in domains,
            f"fi_info -p verbs: {domains}")
    out = subprocess.run(["ip", "netns", "exec", ns, "fi_info", "-p",
                          "verbs;ofi_rxm", "-t", "FI_EP_RDM"], env=r.env(a),
                         capture_output=True, text=True, timeout=60)
    r.check(out.returncode == 0 and f"domain: {stock.DEV}" in out.stdout,
            "fi_info -p 'verbs;ofi_rxm' -t FI_EP_RDM lists "
            f"{stock.DEV}")
    for prov, ep, want in (("verbs", "msg", FI_SIZES),
                           ("verbs;ofi_rxm", "rdm", FI_SIZES),
                           ("verbs", "dgram", FI_SIZES[:4])):
        port = str(r.tcp_port)
        r.tcp_port += 1
        argv = ["fi_pingpong", "-p", prov, "-e", ep, "-I", "100", "-c"]
        srv = r.start(ns, a, argv + ["-B", port])
        if not listening(port, srv, "fi_pingpong"):
            [(src, sout)] = r.finish([srv], 10)
            r.check(False, f"fi_pingpong -p {prov} -e {ep}: the server "
                    f"did not start ({src})")
            print(sout[-2000:])
            continue
        before = counters(b)
        (crc, cout), (src, sout) = r.finish(
            [r.start(ns, b, argv + ["-P", port, A_IP]), srv], 120)
        # A row per size of its default set: bytes, #sent, #ack, total,
        # time, MB/sec, usec/xfer, Mxfers/sec.
        rows = re.findall(r"^(\d+[kmg]?)\s+100\s+=100\s+\S+\s+\S+\s+"
                          r"([\d.]+)\s+([\d.]+)", cout, re.M)
        sizes = [s for s, _, _ in rows]
        sent = delta(before, counters(b), "rdma_sends")
        ok = crc == 0 and src == 0 and sizes == want and \
            all(float(bw) > 0 and float(us) > 0 for _, bw, us in rows) and \
            sent >= 100 * len(want)
        r.check(ok, f"fi_pingpong -p '{prov}' -e {ep} -c: server {src}, "
                f"client {crc}, sizes checked {sizes}, {sent} SENDs from B")
        if not ok:
            netns_util.print_pair_output(sout, cout)


def mpi(r, ns, a, b, what, argv_of, program, extra_env):
    """mpi_pingpong with a rank on each daemon; the launcher's argv from
    argv_of(program, socket_a, socket_b)."""
    before = [counters(d) for d in (a, b)]
    wrap = [RUN, "--build", r.build, "--dev-node"]
    [(status, text)] = r.finish([r.start(ns, a, argv_of(program, a["verbs"],
                                                        b["verbs"]),
                                         extra_env, wrap)], 180)
    after = [counters(d) for d in (a, b)]
    sends = [delta(x, y, "rdma_sends") for x, y in zip(before, after)]
    ok = status == 0 and "mismatches 0, allreduce 3" in text and \
        all(n > 1000 for n in sends)
    r.check(ok, f"{what}: status {status}, "
            f"{' / '.join(l for l in text.splitlines() if l.startswith(('size', 'mismatches')))}"
            f", SENDs per daemon {sends}")
    if not ok:
        print(text[-3000:])


def main():
    rocemud, dropin, rdmacm, build = (os.path.abspath(p)
                                      for p in sys.argv[1:5])
    ompi = os.path.abspath(sys.argv[5]) if len(sys.argv) > 5 else None
    mpich = os.path.abspath(sys.argv[6]) if len(sys.argv) > 6 else None
    if os.geteuid() != 0:
        print("FAIL: the net suite needs root")
        return 1
    for tool in ("qperf", "fi_info", "fi_pingpong", "mpiexec.hydra",
                 "mpirun.openmpi"):
        if subprocess.run(["which", tool], capture_output=True).returncode:
            print(f"FAIL: {tool} missing (scripts/packages.txt)")
            return 1
    r = Hosts(rocemud, dropin, rdmacm, build)
    start = time.monotonic()
    with netns_util.failures_reported(r):
        ns, a, b = setup(r)
        t0 = time.monotonic()
        qperf(r, ns, a, b)
        print(f"     qperf: {time.monotonic() - t0:.0f} s")
        t0 = time.monotonic()
        libfabric(r, ns, a, b)
        print(f"     libfabric: {time.monotonic() - t0:.0f} s")
        r.check(mpich is not None and ompi is not None,
                "MPICH and Open MPI found at build time (mpich, "
                "libmpich-dev, openmpi-bin, libopenmpi-dev)")
        ucx = {"UCX_TLS": "rc_verbs,ud_verbs",
               "UCX_NET_DEVICES": f"{stock.DEV}:1"}
        if mpich is not None:
            t0 = time.monotonic()
            mpi(r, ns, a, b, "MPICH (ch4:ucx) over UCX rc_verbs",
                lambda prog, sa, sb: [
                    "mpiexec.hydra", "-genv", "UCX_TLS", ucx["UCX_TLS"],
                    "-genv", "UCX_NET_DEVICES", ucx["UCX_NET_DEVICES"],
                    "-n", "1", "-env", "ROCEMU_VERBS_SOCKET", sa, prog, ":",
                    "-n", "1", "-env", "ROCEMU_VERBS_SOCKET", sb, prog],
                mpich, ucx)
            print(f"     MPICH: {time.monotonic() - t0:.0f} s")
        if ompi is not None:
            t0 = time.monotonic()
            mpi(r, ns, a, b, "Open MPI over libfabric (mtl ofi, verbs;ofi_rxm)",
                lambda prog, sa, sb: [
                    "mpirun.openmpi", "--allow-run-as-root", "--mca", "pml",
                    "cm", "--mca", "mtl", "ofi", "--mca",
                    "mtl_ofi_provider_include", "verbs;ofi_rxm", "--mca",
                    "btl", "self", "-x", "LD_LIBRARY_PATH",
                    "-np", "1", "-x", f"ROCEMU_VERBS_SOCKET={sa}", prog, ":",
                    "-np", "1", "-x", f"ROCEMU_VERBS_SOCKET={sb}", prog],
                ompi, {})
            print(f"     Open MPI over libfabric: {time.monotonic() - t0:.0f} s")
    print(f"{time.monotonic() - start:.0f} s")
    return netns_util.verdict(r.failures)


if __name__ == "__main__":
    sys.exit(main())
