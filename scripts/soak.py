#!/usr/bin/env python3
"""The soak (scripts/soak.sh): two rocemud daemons joined by memif, both
injecting faults into what they receive (loss, reorder, duplication,
corruption; emulator/capture/fault_injector.h), and Debian's stock RDMA
programs over the drop-in libraries in a loop, server on one daemon and
client on the other, for a bounded time.

Each run must succeed by the program's own criteria (exit 0 on both sides,
a result row with a measurement for perftest, "iters in" for the
pingpong, whose -c checks every received buffer, rping -V checking every
ping). Both daemons' RSS is sampled every 30 s; after the warm-up it must
stay within --max-growth-kib. Every work request is accounted for, per
program: after each run (once its clients are gone) the two daemons'
session counters say how many WQEs the run's processes posted (sq_wqes +
rq_wqes + srq_wqes) and what became of each (wqes_completed,
wqes_completed_error, wqes_flushed, and wqes_discarded: still posted when
the program destroyed its QP, the receives it left behind); the sums must
match and none may have completed in error, except the last SEND of an
ibv_rc_pingpong run ended by a lost last ACK (its peer had already gone:
retry exceeded, at most one per such run; see lost_last_ack). A run that
outlives its deadline (300 s) is killed, after both daemons print every
QP's flight recorder and every client's CQs (netns_util.qp_story), and
counts as failed: a hang fails the soak. At the end the daemons' counters
must agree with a clean run: both daemons alive, every client gone, no QP
left, no completion in error (req_cqe_error, resp_cqe_error) but those of
lost-last-ACK runs, no malformed request or broken ring, and
every enabled fault kind must have happened (rx_fault_dropped,
_reordered, _duplicated, _corrupted non-zero on both daemons) and been
recovered from (retransmissions, corrupted frames caught).

Usage: soak.py ROCEMUD DROPIN_DIR RDMACM_DIR MINUTES MAX_GROWTH_KIB
               DROP REORDER DUPLICATE CORRUPT
"""
import math
import os
import signal
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "emulator"))
sys.path.insert(0, os.path.join(ROOT, "tests", "ibverbs"))
import netns_util  # noqa: E402
import stock_tools_test as stock  # noqa: E402

DEV = stock.DEV
PERF = ["-d", DEV, "-x", "0", "--report_gbits"]
# (name, argv, kind): RC only, the transport that recovers from loss.
PROGRAMS = [
    ("ibv_rc_pingpong", ["ibv_rc_pingpong", "-g", "0", "-n", "500", "-s",
                         "4096", "-m", "1024", "-c"], "pingpong"),
    ("ib_write_bw", ["ib_write_bw", "-s", "65536", "-n", "2000"] + PERF,
     "perftest"),
    ("ib_read_bw", ["ib_read_bw", "-s", "4096", "-n", "2000"] + PERF,
     "perftest"),
    ("ib_send_bw", ["ib_send_bw", "-s", "16384", "-n", "2000"] + PERF,
     "perftest"),
    ("ib_atomic_bw", ["ib_atomic_bw", "-n", "2000"] + PERF, "perftest"),
    ("ib_send_lat", ["ib_send_lat", "-d", DEV, "-x", "0", "-s", "64", "-n",
                     "2000"], "perftest"),
    ("rping", ["rping", "-V", "-C", "500", "-S", "1024"], "rping"),
]


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def counters(d):
    return netns_util.control(d["ctl"], {"cmd": "counters"},
                              timeout=10)["ports"]["p0"]


ACCOUNT = ("sq_wqes", "rq_wqes", "srq_wqes", "wqes_completed",
           "wqes_completed_error", "wqes_flushed", "wqes_discarded")


def quiet_verbs(d, timeout=60):
    """The daemon's session counters once every client it accepted has
    closed (a program's teardown reaches the daemon after it exits)."""
    deadline = time.monotonic() + timeout
    while True:
        v = netns_util.control(d["ctl"], {"cmd": "counters"},
                               timeout=10)["ports"]["p0"]["verbs"]["counters"]
        if v["clients_accepted"] == v["clients_closed"] or \
                time.monotonic() > deadline:
            return v
        time.sleep(0.05)


def measured(out):
    """perftest printed a result row whose every figure is finite and the
    bandwidth or latency positive."""
    rows = stock.perftest_rows(out)
    return bool(rows) and all(
        all(math.isfinite(x) for x in v) and v[1] > 0 for v in rows.values())


def lost_last_ack(a, b, unknown0, server, client):
    """ibv_rc_pingpong has no closing handshake: a side that has all its
    iterations exits and destroys its QP, and if the ACK of the other
    side's last SEND was lost, that SEND's retransmissions reach no QP
    (the finished side's daemon counts them in rx_unknown_qp) until its
    retry count runs out. A real RNIC does the same. True when the run
    ended exactly so: one side finished, the other failed with a retry
    error, and the finished side's daemon saw frames for an unknown QP."""
    for (done, (drc, dout)), (other, (orc, oout)) in (
            ((a, server), (b, client)), ((b, client), (a, server))):
        if drc != 0 or " iters in " not in dout or orc == 0:
            continue
        if "retry" not in oout:
            continue
        i = 0 if done is a else 1
        if counters(done)["rnic"]["rx_unknown_qp"] > unknown0[i]:
            return True
    return False


def dumps(daemons):
    """The QP dumps (recorder.dump_dir: why/ beside each daemon's files)
    written so far: a QP the RNIC moved to ERR, with its flight recorder."""
    found = set()
    for d in daemons:
        why = os.path.join(os.path.dirname(d["ctl"]), "why")
        if os.path.isdir(why):
            found |= {os.path.join(why, f) for f in os.listdir(why)
                      if f.endswith(".txt")}
    return found


def print_new_dumps(daemons, before):
    """Every QP dump a failed run left, whole: the story of a QP that
    failed and was destroyed before anyone could ask its daemon."""
    for path in sorted(dumps(daemons) - before):
        print(f"--- QP dump {path} ---")
        with open(path, errors="replace") as f:
            print(f.read().rstrip("\n"))
    print("--- end of QP dumps ---", flush=True)


def run_one(r, ns, a, b, name, argv, kind):
    """(ok, server output, client output) of one server/client run."""
    r.port += 1
    if kind == "rping":
        port = ["-p", str(r.port)]
        srv = r.tool(ns, a, argv + ["-s", "-a", a["ip"]] + port, 300)
        try:
            netns_util.wait_cm_listener(srv, a["ctl"], r.port, timeout=30)
        except AssertionError as e:
            if srv.poll() is None:
                os.killpg(srv.pid, signal.SIGKILL)
            return False, srv.communicate()[0] + f"\n({e})", ""
        cli = r.tool(ns, b, argv + ["-c", "-a", a["ip"]] + port, 300)
        (crc, cout), (src, sout) = netns_util.collect(
            (cli, srv), 300, on_hang=lambda: "\n".join(
                netns_util.qp_story(d["ctl"], f"daemon {d['name']}")
                for d in (a, b)))
    else:
        unknown0 = [counters(d)["rnic"]["rx_unknown_qp"] for d in (a, b)]
        src, sout, crc, cout = r.pair(ns, a, b, argv, timeout=300)
    ok = src == 0 and crc == 0
    if kind == "pingpong":
        ok = ok and " iters in " in cout and " iters in " in sout
        if not ok and lost_last_ack(a, b, unknown0, (src, sout), (crc, cout)):
            return "lost_last_ack", sout, cout
    elif kind == "perftest":
        ok = ok and measured(cout)
    return ok, sout, cout


def main():
    rocemud, dropin, rdmacm = (os.path.abspath(p) for p in sys.argv[1:4])
    minutes, growth_kib = float(sys.argv[4]), int(sys.argv[5])
    drop, reorder, duplicate, corrupt = (float(x) for x in sys.argv[6:10])
    if os.geteuid() != 0:
        print("soak: FAIL: needs root (network namespaces)")
        return 1
    r = stock.Run(rocemud, dropin)
    r.rdmacm = rdmacm
    faults = {"drop": drop, "reorder": reorder, "duplicate": duplicate,
              "corrupt": corrupt, "seed": 1 + os.getpid(), "rx": True}
    if any(faults[k] > 0 for k in ("drop", "reorder", "duplicate",
                                   "corrupt")):
        r.port_config = {n: {"faults": faults} for n in "ab"}
    total = minutes * 60
    warmup = min(120.0, total / 4)
    runs = {name: [0, 0, 0.0, 0.0] for name, _, _ in PROGRAMS}
    # ok, failed, seconds, longest run
    account = {name: dict.fromkeys(ACCOUNT, 0) for name, _, _ in PROGRAMS}
    samples = []
    lost_ack = {}  # runs ended by a lost last ACK (lost_last_ack)
    # error completions in those runs
    lost_errors = {name: 0 for name, _, _ in PROGRAMS}
    loads = []  # the host's 1-minute load average at each sample
    rc = 1
    with netns_util.failures_reported(r):
        ns, a, b = stock.setup(r, "memif")
        print(f"soak: {minutes:g} min, faults on both daemons' receive: "
              f"drop {drop} reorder {reorder} duplicate {duplicate} "
              f"corrupt {corrupt}", flush=True)
        start = time.monotonic()
        next_sample = start + warmup
        rss0 = None
        i = 0
        before = [quiet_verbs(d) for d in (a, b)]
        while time.monotonic() - start < total:
            name, argv, kind = PROGRAMS[i % len(PROGRAMS)]
            i += 1
            for d in (a, b):
                if d["proc"].poll() is not None:
                    raise AssertionError(f"daemon {d['name']} exited")
            t0 = time.monotonic()
            dumps0 = dumps((a, b))
            ok, sout, cout = run_one(r, ns, a, b, name, argv, kind)
            lost = ok == "lost_last_ack"
            if lost:
                # Expected with loss on: reported apart, not a failure.
                lost_ack[name] = lost_ack.get(name, 0) + 1
                print(f"soak: {name} (run {i}) ended by a lost last ACK "
                      f"(the peer's daemon counted frames for its "
                      f"destroyed QP)", flush=True)
                ok = True
            runs[name][0 if ok else 1] += 1
            took = time.monotonic() - t0
            runs[name][2] += took
            runs[name][3] = max(runs[name][3], took)
            after = [quiet_verbs(d) for d in (a, b)]
            for x, y in zip(before, after):
                for k in ACCOUNT:
                    account[name][k] += y[k] - x[k]
                if lost:
                    # The survivor's last SEND: retry exceeded, its peer
                    # gone. Its error completion is the program's, not
                    # the RNIC's fault: counted apart, at most one a run.
                    lost_errors[name] += (y["wqes_completed_error"] -
                                          x["wqes_completed_error"])
            before = after
            if not ok:
                print(f"soak: FAIL {name} (run {i})", flush=True)
                netns_util.print_pair_output(sout, cout)
                print_new_dumps((a, b), dumps0)
            now = time.monotonic()
            if now >= next_sample:
                s = (now - start, rss_kib(a["proc"].pid),
                     rss_kib(b["proc"].pid))
                samples.append(s)
                if rss0 is None:
                    rss0 = s
                loads.append(os.getloadavg()[0])
                print(f"soak: t={s[0]:5.0f} s runs={i} "
                      f"failed={sum(v[1] for v in runs.values())} "
                      f"RSS a={s[1]} KiB b={s[2]} KiB "
                      f"load={loads[-1]:.1f}", flush=True)
                next_sample = now + 30
        elapsed = time.monotonic() - start
        alive = [d["proc"].poll() is None for d in (a, b)]
        ca, cb = counters(a), counters(b)
        qps = [len(netns_util.control(d["ctl"], {"cmd": "qps"}, timeout=10)
                   ["ports"][0]["qps"]) for d in (a, b)]
        print(f"soak: {elapsed:.0f} s, {i} runs")
        for name, (good, bad, secs, longest) in runs.items():
            print(f"soak:   {name:16s} {good:6d} ok {bad:4d} failed, "
                  f"{secs / max(1, good + bad):5.1f} s per run, longest "
                  f"{longest:5.1f} s"
                  + (f" ({lost_ack[name]} of the ok ended by a lost last "
                     f"ACK)" if name in lost_ack else ""))
        print("soak: work requests per program (both daemons): posted = "
              "completed ok + completed in error + flushed + discarded "
              "(left posted at destroy)")
        for name, c in account.items():
            posted = c["sq_wqes"] + c["rq_wqes"] + c["srq_wqes"]
            print(f"soak:   {name:16s} {posted:10d} = "
                  f"{c['wqes_completed']:10d} + "
                  f"{c['wqes_completed_error']:d} + {c['wqes_flushed']:6d} + "
                  f"{c['wqes_discarded']:6d}")
        if samples:
            for k, who in ((1, "a"), (2, "b")):
                vals = [s[k] for s in samples]
                print(f"soak: RSS {who}: first {vals[0]} KiB, last "
                      f"{vals[-1]} KiB, min {min(vals)} max {max(vals)} "
                      f"({len(vals)} samples after {warmup:.0f} s warm-up)")
                print(f"soak: RSS {who} series (t s:KiB): " + " ".join(
                    f"{s[0]:.0f}:{s[k]}" for s in samples))
            print(f"soak: host load average (1 min) {min(loads):.1f} - "
                  f"{max(loads):.1f}, median "
                  f"{sorted(loads)[len(loads) // 2]:.1f} on "
                  f"{os.cpu_count()} CPUs")
        for who, c in (("a", ca), ("b", cb)):
            k, v = c["rnic"], c["verbs"]["counters"]
            print(f"soak: {who}: rx_fault dropped={c['rx_fault_dropped']} "
                  f"reordered={c['rx_fault_reordered']} "
                  f"duplicated={c['rx_fault_duplicated']} "
                  f"corrupted={c['rx_fault_corrupted']}; caught: "
                  f"rx_icrc={k['rx_icrc_encapsulated']} "
                  f"bad_checksum={c['rx_bad_checksum']} "
                  f"malformed={c['rx_malformed']}")
            print(f"soak: {who}: sent_pkts={k['sent_pkts']} "
                  f"rcvd_pkts={k['rcvd_pkts']} "
                  f"out_of_sequence={k['out_of_sequence']} "
                  f"duplicate_request={k['duplicate_request']} "
                  f"packet_seq_err={k['packet_seq_err']} "
                  f"local_ack_timeout_err={k['local_ack_timeout_err']} "
                  f"req_cqe_error={k['req_cqe_error']} "
                  f"resp_cqe_error={k['resp_cqe_error']}; "
                  f"clients {v['clients_accepted']} accepted "
                  f"{v['clients_closed']} closed, cqes={v['cqes']}")
        failed = sum(v[1] for v in runs.values())
        r.check(failed == 0 and i > 0, f"every run succeeded ({i} runs, "
                f"{failed} failed)")
        r.check(all(alive), f"both daemons alive at the end ({alive})")
        for name, c in account.items():
            posted = c["sq_wqes"] + c["rq_wqes"] + c["srq_wqes"]
            done = (c["wqes_completed"] + c["wqes_completed_error"] +
                    c["wqes_flushed"] + c["wqes_discarded"])
            r.check(posted > 0 and posted == done,
                    f"{name}: every WQE accounted for ({posted} posted, "
                    f"{done} ended)")
            r.check(c["wqes_completed_error"] == lost_errors[name] and
                    lost_errors[name] <= lost_ack.get(name, 0),
                    f"{name}: no WQE completed in error but the last SEND "
                    f"of a run ended by a lost last ACK ("
                    f"{c['wqes_completed_error']} in error, "
                    f"{lost_errors[name]} in {lost_ack.get(name, 0)} such "
                    f"runs)")
        lost_total = sum(lost_errors.values())
        errors = [c["rnic"]["req_cqe_error"] + c["rnic"]["resp_cqe_error"]
                  for c in (ca, cb)]
        r.check(sum(errors) == lost_total,
                f"the RNICs' completions in error ({errors}) are those of "
                f"runs ended by a lost last ACK ({lost_total})")
        for who, c, n in (("a", ca, qps[0]), ("b", cb, qps[1])):
            k, v = c["rnic"], c["verbs"]["counters"]
            r.check(v["clients_accepted"] == v["clients_closed"] and n == 0,
                    f"{who}: every client gone, no QP left ({n})")
            r.check(v["bad_requests"] == 0 and v["ring_corruptions"] == 0 and
                    v["bad_wqes"] == 0,
                    f"{who}: no malformed request, ring or WQE")
            if faults.get("drop", 0) > 0:
                r.check(c["rx_fault_dropped"] > 0 and
                        k["out_of_sequence"] + k["local_ack_timeout_err"] > 0,
                        f"{who}: frames were lost and recovered from")
            for kind, key in (("drop", "dropped"), ("reorder", "reordered"),
                              ("duplicate", "duplicated"),
                              ("corrupt", "corrupted")):
                if faults.get(kind, 0) > 0:
                    r.check(c[f"rx_fault_{key}"] > 0,
                            f"{who}: the injector {key} frames")
            if faults.get("corrupt", 0) > 0:
                r.check(k["rx_icrc_encapsulated"] + c["rx_bad_checksum"] > 0,
                        f"{who}: corrupted frames were caught")
        if samples:
            grew = max(samples[-1][1] - rss0[1], samples[-1][2] - rss0[2])
            r.check(grew <= growth_kib,
                    f"RSS grew by {grew} KiB after the warm-up "
                    f"(limit {growth_kib})")
        else:
            r.check(False, "no RSS sample (run longer than the warm-up)")
        print("soak: PASS" if not r.failures else "soak: FAIL", flush=True)
        rc = 0 if not r.failures else 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
