"""The raw DPDK ceilings of a memif link, for the bench_*.sh scripts.

emulator/port/bench_pktio.cc's two processes in a network namespace, as
scripts/bench_link.sh runs them: the receiver (memif server) on lcore 1,
the sender (memif client) on lcore 0. Both processes run without
hugepages; each gets its own EAL file prefix.
"""
import json
import os
import subprocess
import time


def eal(prefix, lcore, vdev):
    """EAL arguments of one benchmark process on `lcore` with `vdev`."""
    return ["--no-huge", "-m", "512", "--no-pci", "--no-shconf", "-l",
            str(lcore), "--file-prefix", f"{prefix}-{os.getpid()}",
            "--log-level=*:error", "--vdev", vdev]


def _memif(sock, role):
    return f"net_memif0,role={role},socket={sock},bsize=8192"


def _ex(ns):
    return ["ip", "netns", "exec", ns]


def rate_once(pktio, ns, frame, tag, seconds, work=()):
    """Frames of `frame` bytes the receiver counts per second over
    `seconds` (after a 1 s warm-up): bench_pktio's JSON, or
    {"mpps": 0.0, "complete": False} if the receiver reported nothing.
    `work` is more bench_pktio flags for both sides (e.g. --work rnic)."""
    sock = f"bmemif-{tag}-{os.getpid()}"
    args = lambda mode, s: [pktio, "--mode", mode, "--seconds", str(s),
                            "--warmup", "1", "--size", str(frame),
                            *work]
    rx = subprocess.Popen(_ex(ns) + args("rx", seconds) + ["--"] +
                          eal("bmrx", 1, _memif(sock, "server")),
                          stdout=subprocess.PIPE, text=True)
    time.sleep(1.0)
    tx = args("tx", seconds + 2.5)
    subprocess.run(_ex(ns) + tx[:1] + ["--dst", "ff:ff:ff:ff:ff:ff"] +
                   tx[1:] + ["--"] + eal("bmtx", 0, _memif(sock, "client")),
                   capture_output=True, text=True, timeout=seconds + 40)
    out, _ = rx.communicate(timeout=seconds + 30)
    lines = out.strip().splitlines()
    if not lines:  # the receiver failed (memif not up in time)
        return {"mpps": 0.0, "complete": False}
    return json.loads(lines[-1])


def rate(pktio, ns, frame, tag, seconds, tries=3, work=()):
    """The best of `tries` rate_once runs, with every run's Mpps in
    "runs". A ceiling is the best the link does: on these 2-vCPU VMs the
    same pair of processes reads anywhere from 0.6 to 8.7 Mpps of 4154 B
    frames from one run to the next (2026-11-28, all frame sizes alike),
    so one run can understate it several times over. With --work rnic,
    "icrc_errors" and "malformed" are the sums over all runs (any is a
    failed benchmark). A run without a complete window (the receiver saw
    no frame before memif was up, or the sender stopped early) is not a
    try: up to `tries` more are made in its place."""
    return _best_of(lambda i: rate_once(pktio, ns, frame, f"{tag}{i}",
                                        seconds, work), tries)


def _best_of(run, tries):
    """The best of `tries` runs with a complete window (`run(i)` makes the
    i-th), making up to as many more in place of incomplete ones; every
    run's Mpps in "runs", ICRC errors and malformed frames summed."""
    best, runs = {"mpps": 0.0, "complete": False}, []
    icrc_errors = malformed = 0
    counted = 0
    for i in range(2 * tries):
        if counted == tries:
            break
        c = run(i)
        runs.append(round(c["mpps"], 4))
        icrc_errors += c.get("icrc_errors", 0)
        malformed += c.get("malformed", 0)
        if not c.get("complete", True):
            continue
        counted += 1
        if c["mpps"] > best["mpps"]:
            best = c
    return dict(best, runs=runs, icrc_errors=icrc_errors,
                malformed=malformed)


def loop_rate(pktio, ns, frame, tag, seconds, tries=3, work=()):
    """The same frames with both ends in one process on lcore 0 (bench_pktio
    --mode loop: a memif server port sends, a client port of the same
    socket receives, drained after every TX burst): with --work rnic, the
    necessary work of a sender and of a receiver on one core, as
    bench_perf.sh runs both daemons on lcore 0. The best of `tries` runs
    with a complete window, like rate()."""
    def once(i):
        sock = f"bmloop-{tag}{i}-{os.getpid()}"
        args = [pktio, "--mode", "loop", "--seconds", str(seconds),
                "--warmup", "1", "--size", str(frame), *work, "--",
                "--no-huge", "-m", "512", "--no-pci", "--no-shconf", "-l", "0",
                "--file-prefix", f"bmloop-{os.getpid()}",
                "--log-level=*:error",
                "--vdev", f"net_memif0,role=server,socket={sock},bsize=8192",
                "--vdev", f"net_memif1,role=client,socket={sock},bsize=8192"]
        p = subprocess.run(_ex(ns) + args, capture_output=True, text=True,
                           timeout=seconds + 40)
        lines = p.stdout.strip().splitlines()
        return json.loads(lines[-1]) if lines else {"mpps": 0.0,
                                                     "complete": False}
    return _best_of(once, tries)


def ping_pong(pktio, ns, frame, iterations=20000, one_core=False,
              apps=False, app_cpu=1):
    """One-way latency of `frame`-byte frames bounced between two
    processes (pong on lcore 1, ping on lcore 0): bench_pktio's JSON
    (p50_us, p99_us ...), or None. With `one_core` both run on lcore 0 and
    yield after every empty poll (bench_pktio --yield_idle), as two
    daemons on one lcore hand it to each other. With `apps` as well, each
    end has an application process on lcore 1 that hands over through
    shared memory (bench_pktio --apps; `app_cpu` -1: where the scheduler
    puts them): rocemu-perf and two daemons' placement with none of the
    RNIC's work."""
    sock = f"bmemif-ping{'1' if one_core else ''}{'a' if apps else ''}-" \
        f"{os.getpid()}"
    extra = ["--yield_idle"] if one_core else []
    if apps:
        extra += ["--apps", "--app_cpu", str(app_cpu)]
    pong = subprocess.Popen(_ex(ns) + [pktio, "--mode", "pong", "--size",
                                       str(frame), *extra, "--"] +
                            eal("bmpong", 0 if one_core else 1,
                                _memif(sock, "server")),
                            stdout=subprocess.PIPE, text=True)
    time.sleep(1.0)
    ping = subprocess.run(_ex(ns) + [pktio, "--mode", "ping", "--size",
                                     str(frame), "--iterations",
                                     str(iterations), *extra, "--"] +
                          eal("bmping", 0, _memif(sock, "client")),
                          capture_output=True, text=True, timeout=120)
    pong.communicate(timeout=30)
    lines = ping.stdout.strip().splitlines()
    return json.loads(lines[-1]) if lines else None
