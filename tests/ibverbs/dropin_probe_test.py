#!/usr/bin/env python3
"""ibv_probe (an ordinary program built against Debian's libibverbs) over
the drop-in library and one rocemud: completion-channel and async fds
(a signal ends a blocked wait with EINTR, as qperf's timers need),
several threads posting to one QP, refusals, parent domains, fork (a
child's copy of registered memory), discovery with no daemon (an
empty list and one stderr line naming the socket tried), and the daemon
killed under the running program (DEVICE_FATAL, the posted receive
flushed and its armed CQ fired, errors instead of hangs, releases that
free everything; daemon_restart_test.py goes further).

Usage: dropin_probe_test.py ROCEMUD DROPIN_DIR IBV_PROBE
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from solo_daemon import SoloDaemon  # noqa: E402

failures = []


def check(cond, msg):
    print(("ok   " if cond else "FAIL ") + msg, flush=True)
    if not cond:
        failures.append(msg)


def run_probe(probe, env, scenario, timeout=180):
    r = subprocess.run([probe, scenario], env=env, capture_output=True,
                       text=True, timeout=timeout)
    for line in r.stdout.splitlines():
        if line.startswith("FAIL"):
            print(f"  {scenario}: {line}")
    return r


def main():
    rocemud, dropin, probe = (os.path.abspath(p) for p in sys.argv[1:4])
    d = SoloDaemon(rocemud, prefix="rocemu-probe-")
    try:
        env = d.env(dropin)
        for scenario in ("channel", "threads", "refuse", "fork", "marshall",
                         "parent", "memory", "clock"):
            r = run_probe(probe, env, scenario)
            n_ok = r.stdout.count("\nok   ") + r.stdout.startswith("ok   ")
            check(r.returncode == 0,
                  f"probe {scenario}: exit {r.returncode}, {n_ok} checks")

        # No daemon behind the socket: an empty list, one clear line.
        missing = os.path.join(d.tmp, "no-such.sock")
        r = run_probe(probe, d.env(dropin, ROCEMU_VERBS_SOCKET=missing),
                      "nodaemon")
        check(r.returncode == 0, f"probe nodaemon: exit {r.returncode}")
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        check(len(lines) == 1 and missing in lines[0],
              f"one stderr line naming the socket tried: {lines}")

        # The daemon dies under the program: SIGKILL once it holds objects.
        p = subprocess.Popen([probe, "fatal"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True)
        seen = []
        for line in p.stdout:
            seen.append(line)
            if line.strip() == "ready":
                break
        check(seen and seen[-1].strip() == "ready",
              "probe fatal set up its objects")
        d.kill()
        try:
            rest = p.stdout.read()
            rc = p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            rest, rc = "(hung)", -1
        for line in rest.splitlines():
            if line.startswith("FAIL"):
                print(f"  fatal: {line}")
        check(rc == 0 and "IBV_EVENT_DEVICE_FATAL" in rest,
              f"probe fatal: DEVICE_FATAL, errors, releases (exit {rc})")
    finally:
        d.cleanup(keep=bool(failures))
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
