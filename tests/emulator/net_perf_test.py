#!/usr/bin/env python3
"""rocemu-perf between two rocemud daemons (one per side), each serving the
verbs library on its own socket, over memif or a veth pair (the same links
net_rdma_test.py builds). Every test runs with --verify (every byte of every
message, every atomic result checked by the tool) at a one-packet and a
multi-packet size: write_bw, read_bw, send_bw, atomic_bw (fetch-and-add and
compare-and-swap), write_lat, read_lat, send_lat, atomic_lat (both ops),
a 3-QP run, and runs on plain malloc'd memory (--memory=malloc).
Asserts exit codes, the --json lines of both sides (iterations completed ==
asked, bytes; the reported time within the harness's own clock), what the
responder RNIC counted during each run (requests, payload bytes), and that
the daemons' error counters stayed at zero. Over memif, then: a receiving
daemon stalled mid-transfer (the sender waits, drops nothing, completes),
a burst fault injected and contained, and a daemon stopped under traffic
while its peer carries on. The two rocemu-perf processes talk
TCP over the loopback of a namespace this test creates; RoCE goes through
the daemons. Bounded in time; always cleans up.
Usage: net_perf_test.py ROCEMUD ROCEMU_PERF veth|memif
"""
import json
import os
import signal
import subprocess
import sys
import threading
import time

import netns_util
from netns_util import control

SIZES = (64, 64 * 1024)
BW_ITERS = 200
LAT_ITERS = 100
RUN_TIMEOUT = 40

# Counters that must not move on a clean link (mlx5/rxe names). Flushes at
# teardown and frames for QPs already destroyed are not errors.
RNIC_ERRORS = (
    "retry_exceeded_err", "retry_rnr_exceeded_err", "req_cqe_error",
    "resp_cqe_error", "req_remote_access_errors",
    "req_remote_invalid_request", "resp_local_length_error",
    "resp_remote_access_errors", "rx_icrc_encapsulated", "rx_malformed",
    "rx_bad_opcode", "bad_pkey_cntr", "mr_access_faults")
# RC recovery: an ACK timeout when a daemon is descheduled longer than the
# QP's timeout on a loaded 2-core host, or a frame the kernel's af_packet
# ring dropped, is recovered by retransmission (--verify still checks every
# byte). They depend on scheduling, so they are reported, not asserted.
RNIC_RECOVERY = ("local_ack_timeout_err", "out_of_sequence",
                 "packet_seq_err", "implied_nak_seq_err",
                 "duplicate_request")
PORT_ERRORS = ("rx_errors", "tx_errors", "rx_bad_checksum")
SESSION_ERRORS = ("lkey_violations", "bad_wqes", "ring_corruptions",
                  "bad_requests")


def sh(*cmd, ns=None, check=True, timeout=30):
    return netns_util.sh(*cmd, ns=ns, check=check, timeout=timeout)


class Daemon:
    def __init__(self, name, sock, verbs_sock, proc):
        self.name, self.sock, self.verbs_sock, self.proc = (
            name, sock, verbs_sock, proc)

    def counters(self):
        r = control(self.sock, {"cmd": "counters"}, timeout=10)
        if "error" in r:
            raise AssertionError(f"{self.name}: counters: {r['error']}")
        return r


class Run(netns_util.NetRun):
    def __init__(self, rocemud, perf):
        super().__init__("rocemu-perf-")
        self.rocemud, self.perf = rocemud, perf
        self.port = 18515


    def start(self, ns, name, devargs, mac, ip, eal=None):
        sock = os.path.join(self.tmp, f"{name}.sock")
        verbs_sock = os.path.join(self.tmp, f"{name}-verbs.sock")
        cfg = os.path.join(self.tmp, f"{name}.yaml")
        netns_util.write_rocemud_config(
            cfg, f"rocemu-perf-{name}-{self.pid}",
            [netns_util.port("p0", devargs, mac, f"{ip}/24", 4200)],
            eal=eal, control={"socket": sock, "test_hooks": True},
            verbs={"socket": verbs_sock},
            logging={"file": f"{self.tmp}/{name}.log"})
        p = subprocess.Popen(["ip", "netns", "exec", ns, self.rocemud,
                              "--config", cfg], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT)
        self.procs.append(p)
        deadline = time.monotonic() + 10
        while not (os.path.exists(sock) and os.path.exists(verbs_sock)):
            if p.poll() is not None:
                raise AssertionError(
                    f"{name} exited: {p.stdout.read().decode()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"{name}: no control/verbs socket")
            time.sleep(0.05)
        return Daemon(name, sock, verbs_sock, p)

    def stop(self, d):
        d.proc.send_signal(signal.SIGTERM)
        rc = d.proc.wait(timeout=15)
        self.procs.remove(d.proc)
        self.check(rc == 0, f"{d.name}: clean exit on SIGTERM (status {rc})")

    def run_perf(self, ns, a, b, test, args):
        """Server on daemon A, client on daemon B; returns both sides'
        exit codes and JSON lines."""
        self.port += 1
        # --yield: two daemons and two tools share the 2 cores.
        common = [test, "-p", str(self.port), "--json", "--verify", "--yield",
                  "--timeout", "20"] + args
        srv = subprocess.Popen(
            ["ip", "netns", "exec", ns, self.perf, *common, "-d",
             a.verbs_sock], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True)
        self.procs.append(srv)
        try:
            cli = subprocess.run(
                ["ip", "netns", "exec", ns, self.perf, *common, "-d",
                 b.verbs_sock, "127.0.0.1"], capture_output=True, text=True,
                timeout=RUN_TIMEOUT)
            sout, serr = srv.communicate(timeout=RUN_TIMEOUT)
        finally:
            if srv.poll() is None:
                srv.kill()
                srv.wait()
            self.procs.remove(srv)
        return (cli.returncode, cli.stdout, cli.stderr, srv.returncode, sout,
                serr)


def json_lines(out):
    return [json.loads(l) for l in out.splitlines() if l.startswith("{")]


def run_case(r, ns, a, b, test, size, extra=()):
    lat = test.endswith("_lat")
    iters = LAT_ITERS if lat else BW_ITERS
    args = ["-n", str(iters)] + list(extra)
    if not test.startswith("atomic"):
        args += ["-s", str(size)]
    label = f"{test} {size} B {' '.join(extra)}".strip()
    before = rnic_counters(a, b)
    t0 = time.monotonic()
    crc, cout, cerr, src, sout, serr = r.run_perf(ns, a, b, test, args)
    el = time.monotonic() - t0
    r.check(crc == 0 and src == 0,
            f"{label}: exit codes client {crc} server {src} ({el:.1f} s)"
            + (f"\n     client: {cerr.strip()}\n     server: {serr.strip()}"
               if crc or src else ""))
    cl, sl = json_lines(cout), json_lines(sout)
    r.check(len(cl) == 1 and len(sl) == 1,
            f"{label}: one JSON line per side ({len(cl)}, {len(sl)})")
    if len(cl) != 1 or len(sl) != 1:
        return
    c, s = cl[0], sl[0]
    print("     " + json.dumps(c), flush=True)
    r.check(c["test"] == test and c["bytes"] == size and
            c["iterations"] == iters and c["iterations_asked"] == iters,
            f"{label}: client completed {c['iterations']} of {iters} "
            f"x {c['bytes']} B")
    r.check(c["verify"] and c["verified"] and c["peer_iterations"] == iters,
            f"{label}: verified, peer confirms {c['peer_iterations']}")
    r.check(s["role"] == "server" and s["test"] == test and
            s["bytes"] == size and s["iterations"] == iters,
            f"{label}: server counted {s['iterations']} of {iters}")
    # The figures against facts the tool did not compute: the harness's
    # own clock (a run cannot take longer by the tool's clock than the
    # whole process did by ours) and the daemons' counters (what the RNICs
    # did on the wire during the run).
    if lat:
        spent = c["t_avg_us"] * c["iterations"] / 1e6
        r.check(0 < c["t_min_us"] and 0 < spent <= el,
                f"{label}: {c['iterations']} round trips of {c['t_avg_us']} "
                f"us on average = {spent:.3f} s, within the {el:.3f} s the "
                "harness measured")
    else:
        r.check(0 < c["seconds"] <= el and c["bw_avg_gbps"] > 0,
                f"{label}: {c['seconds']:.4f} s by the tool, within the "
                f"{el:.3f} s the harness measured")
    check_rnic_work(r, a, b, before, test, lat, iters, size)


def rnic_counters(a, b):
    return {d.name: d.counters()["ports"]["p0"]["rnic"] for d in (a, b)}


def check_rnic_work(r, a, b, before, test, lat, iters, size):
    """What the responder RNIC counted during one run, at least what the
    run asked of it (retransmissions and the tool's own exchanges may add).
    The server is on A, the client on B; a latency test's ping-pong makes
    both sides responders of WRITE and SEND."""
    after = rnic_counters(a, b)
    delta = {n: {k: v - before[n].get(k, 0) for k, v in after[n].items()
                 if isinstance(v, int)} for n in after}
    verb = test.split("_")[0]
    want = []  # (daemon, counter, at least)
    sides = (a, b) if lat and verb in ("write", "send") else (a,)
    for d in sides:
        if verb == "write":
            want += [(d, "rx_write_requests", iters),
                     (d, "rcvd_bytes", iters * size)]
        elif verb == "send":
            want += [(d, "rcvd_bytes", iters * size)]
    if verb == "read":
        want += [(a, "rx_read_requests", iters), (a, "sent_bytes", iters * size)]
    elif verb == "atomic":
        want += [(a, "rx_atomic_requests", iters)]
    for d, k, least in want:
        got = delta[d.name].get(k, 0)
        r.check(got >= least, f"{test} {size} B: {d.name}'s RNIC counted "
                f"{k} +{got} during the run (at least {least})")


def check_frame_accounting(r, a, b, link):
    """Every frame one port sent is a frame the other port received or a
    drop the receiver counted (issue 14: no silent loss). Read once the
    links are quiet and the once-a-second device statistics (rx_missed,
    rx_nombuf, rx_errors) have caught up. memif has no loss of its own (a
    full ring holds the sender back), so there the equation is exact and no
    PSN gap may appear. Over a veth (IPv6 off: the kernel sends nothing of
    its own) a frame can still be dropped by the receiving af_packet ring
    in the kernel, which DPDK does not report: there nothing may appear
    from nowhere, and the gap is printed."""
    def ports():
        return [d.counters()["ports"]["p0"] for d in (a, b)]
    prev = ports()
    deadline = time.monotonic() + 15
    while True:
        time.sleep(1.3)
        cur = ports()
        keys = ("tx_packets", "rx_packets", "rx_missed", "rx_nombuf")
        if all(p[k] == q[k] for p, q in zip(prev, cur) for k in keys):
            break
        prev = cur
        if time.monotonic() > deadline:
            r.check(False, "ports went quiet for the frame count")
            return
    for (x, px), (y, py) in (((a, cur[0]), (b, cur[1])),
                             ((b, cur[1]), (a, cur[0]))):
        counted = py["rx_missed"] + py["rx_nombuf"] + py.get("rx_errors", 0)
        gap = px["tx_packets"] - py["rx_packets"] - counted
        line = (f"{x.name} -> {y.name}: {px['tx_packets']} frames sent = "
                f"{py['rx_packets']} received + {counted} counted drops"
                f" (uncounted: {gap}"
                f"{'' if link == 'memif' else ', the kernel ring'})")
        if link == "memif":
            r.check(gap == 0, line)
        else:
            r.check(gap >= 0, line)
    if link == "memif":
        for d in (a, b):
            rnic = d.counters()["ports"]["p0"]["rnic"]
            r.check(rnic.get("out_of_sequence", 0) == 0 and
                    rnic.get("packet_seq_err", 0) == 0,
                    f"{d.name}: no PSN gap on a lossless link "
                    f"(out_of_sequence {rnic.get('out_of_sequence', 0)}, "
                    f"local_ack_timeout_err "
                    f"{rnic.get('local_ack_timeout_err', 0)})")


def check_counters(r, a, b, written, runs):
    for d in (a, b):
        c = d.counters()
        port = c["ports"]["p0"]
        rnic = port["rnic"]
        bad = {k: rnic[k] for k in RNIC_ERRORS if rnic.get(k, 0) != 0}
        recovered = {k: rnic[k] for k in RNIC_RECOVERY if rnic.get(k, 0)}
        if recovered:
            drops = {k: port.get(k, 0) for k in ("tx_dropped", "tx_nombuf",
                                                  "rx_missed", "rx_nombuf")}
            print(f"     {d.name}: RC recovery seen (not an error): "
                  f"{recovered}; port drops {drops}")
        bad.update({k: port[k] for k in PORT_ERRORS if port.get(k, 0) != 0})
        verbs = port.get("verbs") or c.get("verbs") or {}
        sess = verbs.get("counters", verbs)
        bad.update({k: sess[k] for k in SESSION_ERRORS
                    if sess.get(k, 0) != 0})
        r.check(rnic["sent_pkts"] > 0 and rnic["rcvd_pkts"] > 0,
                f"{d.name}: RoCE packets sent {rnic['sent_pkts']} "
                f"received {rnic['rcvd_pkts']}")
        # B sent A at least every WRITE/SEND payload byte of the run
        # (headers come on top).
        if d is a:
            r.check(port["rx_bytes"] >= written,
                    f"{d.name}: port received {port['rx_bytes']} bytes "
                    f"(>= {written} B of WRITE/SEND payload sent to it)")
            # Device counters are cumulative: the tools' QPs are gone.
            r.check(rnic["rcvd_bytes"] >= written,
                    f"{d.name}: RNIC received {rnic['rcvd_bytes']} payload "
                    f"bytes after its QPs were destroyed (>= {written})")
        r.check(sess.get("clients_accepted", 0) >= runs,
                f"{d.name}: verbs session served "
                f"{sess.get('clients_accepted')} clients")
        # eal.idle_yield (default): passes that moved nothing gave the core
        # away instead of spinning on it (the runs have gaps between tools).
        r.check(0 < c["idle_yields"] < c["loops"],
                f"{d.name}: {c['idle_yields']} of {c['loops']} loop passes "
                "yielded the core")
        r.check(not bad, f"{d.name}: no error counters moved {bad or ''}")


def backpressure(r, ns, a, b):
    """memif: the receiving daemon stalls (SIGSTOP) mid-transfer. The
    sender's memif ring fills, its RNIC waits for room (tx_backpressure)
    and nothing is dropped (tx_dropped); once the receiver runs again the
    transfer completes, every byte verified."""
    result = {}
    flow = threading.Thread(target=lambda: result.setdefault(
        "r", r.run_perf(ns, a, b, "write_bw", ["-n", "8000", "-s", "65536"])))
    before = b.counters()["ports"]["p0"]
    flow.start()
    held = None
    try:
        netns_util.wait_for(
            "the transfer in flight",
            lambda: b.counters()["ports"]["p0"]["tx_packets"] >
            before["tx_packets"] + 1000 or not flow.is_alive(), timeout=30)
        a.proc.send_signal(signal.SIGSTOP)
        held = netns_util.wait_for(
            "B's RNIC held back by the full ring",
            lambda: (c := b.counters()["ports"]["p0"])["tx_backpressure"] >
            before["tx_backpressure"] + 100 and c, timeout=10)
    except AssertionError:
        pass
    finally:
        a.proc.send_signal(signal.SIGCONT)
    flow.join(2 * RUN_TIMEOUT)
    r.check(held is not None and held["tx_dropped"] == before["tx_dropped"],
            "receiver stalled: the sender waited "
            f"({before['tx_backpressure']} -> "
            f"{held and held['tx_backpressure']} tx_backpressure) and "
            f"dropped nothing (tx_dropped {before['tx_dropped']} -> "
            f"{held and held['tx_dropped']})")
    crc, cout, _, src, _, _ = result.get("r", (None, "", "", None, "", ""))
    c = json_lines(cout)
    r.check(crc == 0 and src == 0 and len(c) == 1 and c[0]["verified"] and
            c[0]["iterations"] == 8000,
            f"the stalled transfer completed, verified (client {crc}, "
            f"server {src})")


def stop_under_traffic(r, ns, a, b):
    """memif: DPDK 22.11's net_memif tears a departed peer's connection
    down under the survivor's queue bursts; rocemud contains the fault
    (emulator/port/memif_guard.h). First the containment on demand: B's
    next burst faults, B counts it and a verified transfer follows. Then
    A is stopped mid-transfer, and B, still bursting, is stopped after it:
    both exit cleanly."""
    r.check("ok" in control(b.sock, {"cmd": "memif_fault"}),
            "B: a memif burst fault injected")
    run_case(r, ns, a, b, "write_bw", 65536)
    try:
        faults = netns_util.wait_for(
            "B's memif_faults", lambda: b.counters()["ports"]["p0"]
            ["memif_faults"], timeout=10)
    except AssertionError:
        faults = 0
    r.check(faults == 1, f"B contained the injected fault and carried on "
            f"(memif_faults {faults})")
    r.port += 1
    common = ["write_bw", "-p", str(r.port), "-n", "100000000", "-s",
              "4096", "--yield", "--timeout", "20"]
    tools = [subprocess.Popen(["ip", "netns", "exec", ns, r.perf, *common,
                               "-d", d.verbs_sock] + extra,
                              stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
             for d, extra in ((a, []), (b, ["127.0.0.1"]))]
    r.procs.extend(tools)
    rx0 = a.counters()["ports"]["p0"]["rx_packets"]
    netns_util.wait_for(
        "a transfer in flight", lambda: a.counters()["ports"]["p0"]
        ["rx_packets"] > rx0 + 2000, timeout=20)
    r.stop(a)
    r.check(b.proc.poll() is None, "B outlived its peer's departure "
            "mid-transfer")
    r.stop(b)
    for t in tools:
        try:
            t.wait(timeout=30)
        except subprocess.TimeoutExpired:
            t.kill()
            t.wait()
        r.procs.remove(t)


def setup(r, link, eal_a=None, eal_b=None):
    if link == "veth":
        na, nb = r.netns("rocemu-pa"), r.netns("rocemu-pb")
        va, vb = f"pa{r.pid % 100000}", f"pb{r.pid % 100000}"
        netns_util.veth_pair(na, va, nb, vb, quiet=True)
        opts = "framesz=8192,blocksz=8192"
        a = r.start(na, "a", f"net_af_packet0,iface={va},{opts}",
                    "02:00:00:79:01:01", "10.79.1.1", eal_a)
        b = r.start(nb, "b", f"net_af_packet0,iface={vb},{opts}",
                    "02:00:00:79:01:02", "10.79.1.2", eal_b)
        # The tools only need a loopback for their TCP exchange; the verbs
        # sockets are files, reachable from any namespace.
        return na, a, b
    ns = r.netns("rocemu-pm")
    sock = f"rocemu-perf-{r.pid}"
    a = r.start(ns, "a", f"net_memif0,role=server,socket={sock},bsize=8192",
                "02:00:00:79:02:01", "10.79.2.1", eal_a)
    b = r.start(ns, "b", f"net_memif0,role=client,socket={sock},bsize=8192",
                "02:00:00:79:02:02", "10.79.2.2", eal_b)
    return ns, a, b


def main():
    rocemud, perf, link = (os.path.abspath(sys.argv[1]),
                           os.path.abspath(sys.argv[2]), sys.argv[3])
    if os.geteuid() != 0:
        print("FAIL: the net suite needs root")
        return 1
    r = Run(rocemud, perf)
    start = time.monotonic()
    try:
        ns, a, b = setup(r, link)
        for test in ("write_bw", "read_bw", "send_bw", "write_lat",
                     "read_lat", "send_lat"):
            for size in SIZES:
                run_case(r, ns, a, b, test, size)
        for test in ("atomic_bw", "atomic_lat"):
            run_case(r, ns, a, b, test, 8)
            run_case(r, ns, a, b, test, 8, ("-A", "CMP_AND_SWAP"))
        # Several QPs, work spread round-robin, one multi-packet size.
        run_case(r, ns, a, b, "write_bw", 16 * 1024, ("-q", "3", "-t", "8"))
        # Plain malloc'd memory on both sides (the daemons reach it with
        # process_vm_readv/writev), one-packet and multi-packet.
        malloc = ("--memory=malloc",)
        run_case(r, ns, a, b, "write_bw", 64 * 1024, malloc)
        run_case(r, ns, a, b, "read_bw", 64, malloc)
        run_case(r, ns, a, b, "send_lat", 64 * 1024, malloc)
        run_case(r, ns, a, b, "atomic_bw", 8, malloc + ("-A", "CMP_AND_SWAP"))
        # WRITE and SEND payload the client side put into A: bandwidth
        # tests, the pings of the latency tests, the multi-QP run, malloc.
        written = (2 * BW_ITERS * sum(SIZES) + 2 * LAT_ITERS * sum(SIZES) +
                   BW_ITERS * 16 * 1024 + BW_ITERS * 64 * 1024 +
                   LAT_ITERS * 64 * 1024)
        check_frame_accounting(r, a, b, link)
        check_counters(r, a, b, written, runs=21)
        if link == "memif":
            backpressure(r, ns, a, b)
            stop_under_traffic(r, ns, a, b)
        else:
            r.stop(b)
            r.stop(a)
    except (AssertionError, subprocess.SubprocessError, OSError, KeyError,
            ValueError) as e:
        r.failures.append(repr(e))
        print("FAIL", repr(e))
    finally:
        r.cleanup()
    print(f"{'FAILED' if r.failures else 'PASSED'}: "
          f"{len(r.failures)} failure(s) in {time.monotonic() - start:.1f} s")
    return 1 if r.failures else 0


if __name__ == "__main__":
    sys.exit(main())
