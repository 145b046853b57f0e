#!/usr/bin/env python3
"""UCX (Debian's ucx-utils, unmodified) over rocemu: two programs, each with
its RNIC embedded, over one memif link in a network namespace, started
through `scripts/rocemu-run --dev-node` (UCX looks for a character device
/dev/infiniband/<dev_name> before it opens a device; rocemu-run gives it
one in a private mount namespace, without root).

- ucx_info -d lists rc_verbs and ud_verbs on rocemu_p0:1;
- UCT over rc_verbs: put_lat (RDMA WRITE), am_bw (SEND), add_lat (atomic
  fetch-and-add); over ud_verbs: am_lat (UD SEND, UCX's own reliability);
- UCP with UCX_TLS=rc_verbs,ud_verbs (wire-up over UD, data over RC):
  tag_lat, and tag_bw of 1 MiB (rendezvous: RDMA READ of registered
  memory).
Each run must end with its "Final:" row over all iterations, both programs
with status 0.
- Open MPI (Debian's, pml ucx) runs tests/ibverbs/mpi_pingpong.c with one
  rank on each of two rocemud daemons joined by memif (mpirun's MPMD form
  gives each rank its daemon's socket): every byte of 8 B - 1 MiB messages
  checked, an allreduce, and both daemons count RDMA traffic, the 1 MiB
  rendezvous as RDMA READs.

Usage: ucx_test.py ROCEMUD ROCEMU_PERF DROPIN_DIR EMBEDDED_MODULE BUILD_DIR
                   [MPI_PINGPONG]  (absent: Open MPI was not found: FAIL)
"""
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "emulator"))
import netns_util  # noqa: E402
from embedded_test import DEV, Run  # noqa: E402

RUN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                   "scripts", "rocemu-run")
FINAL = re.compile(r"^Final:\s+(\d+)\s", re.M)


def listening(ns, port, proc, timeout=20.0):
    """Until the server program listens on its TCP port."""
    deadline = time.monotonic() + timeout
    while True:
        out = subprocess.run(["ip", "netns", "exec", ns, "ss", "-Hltn",
                              f"sport = :{port}"], capture_output=True,
                             text=True).stdout
        if out.strip():
            return
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"ucx_perftest does not listen on {port}")
        time.sleep(0.05)


def mpi(r, ns, a, b, wrap, dev, program):
    daemons = []
    for side in (a, b):
        d = netns_util.start_rocemud(ns, r.rocemud, side["config"],
                                     (side["ctl"], side["verbs"]),
                                     side["name"])
        r.procs.append(d)
        daemons.append(d)
    try:
        env = r.env(a, daemon=True)
        env.update(UCX_TLS="rc_verbs,ud_verbs", UCX_NET_DEVICES=dev)
        common = ["--allow-run-as-root", "--mca", "pml", "ucx", "--mca",
                  "btl", "self", "-x", "UCX_TLS",
                  "-x", "UCX_NET_DEVICES", "-x", "LD_LIBRARY_PATH"]
        argv = wrap + ["mpirun"] + common + [
            "-np", "1", "-x", f"ROCEMU_VERBS_SOCKET={a['verbs']}", program,
            ":", "-np", "1", "-x", f"ROCEMU_VERBS_SOCKET={b['verbs']}",
            program]
        # Its own process group: a timeout kills mpirun and both ranks.
        status, text = r.finish(r.start(ns, argv, env),
                                time.monotonic() + 120)
        r.check(status == 0 and "mismatches 0, allreduce 3" in text,
                f"Open MPI (pml ucx), a rank on each daemon: status {status}, "
                f"{' / '.join(l for l in text.splitlines() if l.startswith(('size', 'mismatches')))}")
        if status != 0:
            print(text[-3000:])
        for side in (a, b):
            c = netns_util.control(side["ctl"], {"cmd": "counters"},
                                   timeout=10)["ports"]["p0"]["rnic"]
            r.check(c["rdma_sends"] > 0 and c["rx_read_requests"] > 0 and
                    c["out_of_sequence"] == 0,
                    f"daemon {side['name']}: rdma_sends {c['rdma_sends']}, "
                    f"rx_read_requests {c['rx_read_requests']}, "
                    f"out_of_sequence {c['out_of_sequence']}")
    finally:
        for d in daemons:
            d.send_signal(signal.SIGTERM)
            d.wait(timeout=15)
            r.procs.remove(d)


def main():
    rocemud, perf, dropin, module, build = (os.path.abspath(p)
                                            for p in sys.argv[1:6])
    mpi_program = os.path.abspath(sys.argv[6]) if len(sys.argv) > 6 else None
    if os.geteuid() != 0:
        print("FAIL: the net suite needs root")
        return 1
    for tool in ("ucx_perftest", "ucx_info"):
        if subprocess.run(["which", tool], capture_output=True).returncode:
            print(f"FAIL: {tool} missing (ucx-utils, scripts/packages.txt)")
            return 1
    r = Run(rocemud, perf, dropin, module)
    start = time.monotonic()
    with netns_util.failures_reported(r):
        ns = r.netns("rocemu-ucx")
        a, b = r.sides()
        wrap = [RUN, "--build", build, "--dev-node"]
        dev = f"{DEV}:1"

        info = subprocess.run(["ip", "netns", "exec", ns] + wrap +
                              ["ucx_info", "-d"], env=r.env(a),
                              capture_output=True, text=True, timeout=60)
        tls = re.findall(r"Transport: (\S+)\n#\s+Device: " + re.escape(dev),
                         info.stdout)
        r.check(info.returncode == 0 and "rc_verbs" in tls and
                "ud_verbs" in tls,
                f"ucx_info -d: status {info.returncode}, transports on {dev}: "
                f"{tls}")

        uct = ["-d", dev]
        cases = (
            ("UCT rc_verbs put_lat", {}, uct + ["-x", "rc_verbs", "-t",
                                               "put_lat", "-n", "20000"]),
            ("UCT rc_verbs am_bw", {}, uct + ["-x", "rc_verbs", "-t",
                                             "am_bw", "-n", "50000"]),
            ("UCT rc_verbs add_lat", {}, uct + ["-x", "rc_verbs", "-t",
                                               "add_lat", "-n", "10000"]),
            ("UCT ud_verbs am_lat", {}, uct + ["-x", "ud_verbs", "-t",
                                              "am_lat", "-n", "10000"]),
            ("UCP tag_lat", {"UCX_TLS": "rc_verbs,ud_verbs"},
             ["-t", "tag_lat", "-n", "20000"]),
            ("UCP tag_bw 1 MiB", {"UCX_TLS": "rc_verbs,ud_verbs"},
             ["-t", "tag_bw", "-s", "1048576", "-n", "200"]),
        )
        for name, extra, args in cases:
            iters = int(args[args.index("-n") + 1])
            r.tcp_port += 1
            port = ["-p", str(r.tcp_port)]
            envs = []
            for side in (a, b):
                e = r.env(side)
                e.update(extra, UCX_NET_DEVICES=dev)
                envs.append(e)
            srv = r.start(ns, wrap + ["ucx_perftest"] + args + port, envs[0])
            # ucx_perftest loads UCX's transports, and with them the RNIC,
            # once its peer connects: both RNICs start together, and the
            # memif client side joins its server whenever that is up.
            listening(ns, r.tcp_port, srv)
            cli = r.start(ns, wrap + ["ucx_perftest", "127.0.0.1"] + args +
                          port, envs[1])
            deadline = time.monotonic() + 120
            crc, cout = r.finish(cli, deadline)
            src, sout = r.finish(srv, deadline)
            rows = [int(n) for n in FINAL.findall(cout)]
            ok = src == 0 and crc == 0 and rows == [iters]
            r.check(ok, f"{name}: server {src}, client {crc}, final rows "
                    f"{rows} of {iters}")
            if not ok:
                netns_util.print_pair_output(sout, cout)

        # Open MPI over UCX, one rank per daemon.
        r.check(mpi_program is not None,
                "Open MPI found at build time (openmpi-bin, libopenmpi-dev "
                "in scripts/packages.txt)")
        if mpi_program is not None:
            mpi(r, ns, a, b, wrap, dev, mpi_program)
    print(f"{time.monotonic() - start:.0f} s")
    return netns_util.verdict(r.failures)


if __name__ == "__main__":
    sys.exit(main())
