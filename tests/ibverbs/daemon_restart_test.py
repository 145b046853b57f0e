#!/usr/bin/env python3
"""The daemon SIGKILLed under load with programs attached, then restarted
(one rocemud on a net_ring port: servers and clients on its loopback).

1. daemon_death (ours, on Debian's libibverbs): work requests outstanding
   when the daemon dies come back flushed, in order, after what completed;
   a blocked ibv_get_cq_event and a busy ibv_poll_cq wake;
   IBV_EVENT_DEVICE_FATAL; releases succeed; after the restart the device
   is listed and opened again and moves data.
2. Debian's ib_write_bw (-D 60) with the daemon SIGKILLed, and ib_send_bw
   with it stopped (SIGTERM, a restart: it must exit 0) mid-run: every
   program sees its outstanding work come back flushed (perftest's
   "Failed status 5", IBV_WC_WR_FLUSH_ERR) and exits with an error, none
   hangs; on the restarted daemon the same program opens the device again
   and completes a run.
3. Debian's rping: the kernel's rdma_cm answer to a removed device,
   RDMA_CM_EVENT_DEVICE_REMOVAL, ends both sides; after the restart rping
   -V connects and pings again.
After each kill the daemon is restarted on the same socket (its stale
socket replaced) and the next step runs on it.

Traffic is known to run by the daemon's session counters, not by time.

Usage: daemon_restart_test.py ROCEMUD DROPIN_DIR RDMACM_DIR DAEMON_DEATH
"""
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "emulator"))
import netns_util  # noqa: E402
import stock_tools_test as stock  # noqa: E402
from solo_daemon import SoloDaemon  # noqa: E402

failures = []
HANG = 60  # seconds: only to tell a hang from an exit


def check(cond, msg):
    print(("ok   " if cond else "FAIL ") + msg, flush=True)
    if not cond:
        failures.append(msg)


def session_counter(d, name):
    c = netns_util.control(d.ctl, {"cmd": "counters"}, timeout=10)
    return c["ports"][d.name]["verbs"]["counters"][name]


def wait_traffic(d, wqes, timeout=60):
    """True once the daemon took `wqes` more send WQEs from its clients."""
    base = session_counter(d, "sq_wqes")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if session_counter(d, "sq_wqes") - base >= wqes:
            return True
        time.sleep(0.05)
    return False


def wait_listener(d, port, timeout=30):
    return netns_util.cm_listener(d.ctl, port, timeout) is not None


def finish(procs):
    """(returncode, output) of each; one that outlives HANG is killed and
    has returncode None."""
    return netns_util.collect(procs, HANG)


def spawn(argv, env):
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def our_program(d, env, prog):
    p = subprocess.Popen([prog], env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)
    out = []

    def until(word):
        for line in p.stdout:
            out.append(line)
            if line.strip() == word:
                return True
        return False

    ready = until("ready")
    check(ready, "daemon_death posted its work requests")
    d.kill()
    released = ready and until("released")
    check(released, "daemon_death: woke, checked the flushes, released")
    if released:
        d.start()
        p.stdin.write("restarted\n")
        p.stdin.flush()
    rc, rest = finish([p])[0]
    out.append(rest)
    text = "".join(out)
    for line in text.splitlines():
        if line.startswith("FAIL"):
            print("  daemon_death: " + line)
    check(rc == 0 and "IBV_EVENT_DEVICE_FATAL" in text and
          "the WRITE's and the SEND's bytes arrived" in text,
          f"daemon_death: flushed, fatal event, traffic after the restart "
          f"(exit {rc})")
    if d.proc.poll() is not None:
        d.start()


# What perftest prints for the first completion in error it polls: its
# status (5: IBV_WC_WR_FLUSH_ERR), then its posted and completed counts.
PERFTEST_FAILED_WC = re.compile(r"Failed status (\d+):")


def perftest_killed(d, env, tool, port, stop=False):
    """`tool` mid-run when the daemon dies (SIGKILL) or, with `stop`,
    stops cleanly (SIGTERM) as a restart does."""
    how = "stopped" if stop else "killed"
    argv = [tool, "-d", d.device, "-x", "0", "-s", "4096", "-D", "60",
            "-p", str(port)]
    srv = spawn(argv, env)
    netns_util.wait_tcp_listener(srv, port)
    cli = spawn(argv + ["127.0.0.1"], env)
    running = wait_traffic(d, 2000)
    check(running, f"{tool}: traffic runs before the daemon is {how}")
    if stop:
        rc = d.stop()
        check(rc == 0, f"rocemud stops cleanly under {tool} (exit {rc})")
    else:
        d.kill()
    (crc, cout), (src, sout) = finish([cli, srv])
    for who, rc, out in (("client", crc, cout), ("server", src, sout)):
        tail = " | ".join(out.strip().splitlines()[-3:])
        check(rc is not None and rc != 0,
              f"{tool} {who} exits with an error, no hang (exit {rc}): "
              f"{tail}")
    # The client posts the data: its work outstanding at the kill must
    # come back flushed, not vanish (the library flushes what the dead
    # daemon left, docs/verbs.md "Faults").
    m = PERFTEST_FAILED_WC.search(cout)
    check(m is not None and m.group(1) == "5",
          f"{tool} client: its outstanding work came back flushed "
          f"(IBV_WC_WR_FLUSH_ERR; perftest: "
          f"{m.group(0) if m else 'no failed completion'})")
    d.start()


def perftest_runs(d, env, tool, port):
    """The restarted daemon: `tool` opens the device again and completes
    a run with a measurement."""
    argv = [tool, "-d", d.device, "-x", "0", "-s", "4096", "-n", "500",
            "-p", str(port)]
    srv = spawn(argv, env)
    netns_util.wait_tcp_listener(srv, port)
    cli = spawn(argv + ["127.0.0.1"], env)
    (crc, cout), (src, sout) = finish([cli, srv])
    tail = " | ".join(cout.strip().splitlines()[-2:])
    check(crc == 0 and src == 0 and bool(stock.perftest_rows(cout)),
          f"{tool} after the restart: device opened, run completed "
          f"(exit {src}/{crc}): {tail}")


def rping_killed(d, env, port):
    ip = d.addresses[0].split("/")[0]
    argv = ["-a", ip, "-p", str(port), "-C", "1000000", "-S", "64"]
    # A listener alone: its rdma_cm event channel must deliver
    # RDMA_CM_EVENT_DEVICE_REMOVAL, on which rping exits.
    srv = spawn(["rping", "-s"] + argv, env)
    check(wait_listener(d, port), "rping server listens")
    d.kill()
    rc, out = finish([srv])[0]
    check(rc is not None and rc != 0 and "device removal" in out,
          f"rping listener: DEVICE_REMOVAL, exits (exit {rc}): "
          f"{' | '.join(out.strip().splitlines()[-2:])}")
    d.start()
    # Pinging: the CQ thread (flushed completions, then a poll error) or
    # the CM thread (DEVICE_REMOVAL) ends each side, whichever is first.
    srv = spawn(["rping", "-s"] + argv, env)
    check(wait_listener(d, port), "rping server listens again")
    cli = spawn(["rping", "-c"] + argv, env)
    check(wait_traffic(d, 1000), "rping: pings run before the kill")
    d.kill()
    for who, (rc, out) in zip(("client", "server"), finish([cli, srv])):
        tail = " | ".join(out.strip().splitlines()[-3:])
        check(rc is not None and rc != 0 and
              ("device removal" in out or "poll error" in out),
              f"rping {who} exits with an error, no hang (exit {rc}): {tail}")
    d.start()
    # The restarted daemon: rping connects and verifies its pings again.
    argv = ["-a", ip, "-p", str(port + 1), "-C", "50", "-S", "64", "-V"]
    srv = spawn(["rping", "-s"] + argv, env)
    check(wait_listener(d, port + 1), "rping server listens after restart")
    cli = spawn(["rping", "-c"] + argv, env)
    outs = finish([cli, srv])
    check(all(rc == 0 for rc, _ in outs),
          f"rping -V after the restart: both sides exit 0 "
          f"({[rc for rc, _ in outs]})")


def main():
    rocemud, dropin, rdmacm, prog = (os.path.abspath(p)
                                     for p in sys.argv[1:5])
    d = SoloDaemon(rocemud, prefix="rocemu-restart-")
    port = 20000 + os.getpid() % 20000
    try:
        env = d.env(rdmacm + ":" + dropin)
        our_program(d, env, prog)
        perftest_killed(d, env, "ib_write_bw", port)
        perftest_runs(d, env, "ib_write_bw", port + 1)
        perftest_killed(d, env, "ib_send_bw", port + 2, stop=True)
        perftest_runs(d, env, "ib_send_bw", port + 3)
        rping_killed(d, env, port + 4)
        # The restarted daemon serves a stock program from scratch.
        r = subprocess.run(["ibv_devinfo", "-d", d.device], env=env,
                           capture_output=True, text=True, timeout=HANG)
        check(r.returncode == 0 and "PORT_ACTIVE" in r.stdout,
              f"ibv_devinfo on the restarted daemon (exit {r.returncode})")
    finally:
        d.cleanup(keep=bool(failures))
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
