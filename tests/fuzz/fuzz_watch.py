#!/usr/bin/env python3
"""Runs one fuzz command (run_fuzzer.sh) and records its coverage curve.

Copies the command's output to LOG, and each libFuzzer status line
("#N NEW|REDUCE|pulse|INITED|DONE ... cov: C ft: F corp: K/S ...") to CURVE
as "seconds executions edges features corpus" (seconds since the start).
With --plateau S, asks the fuzzer to stop (SIGUSR1: libFuzzer then exits
as if its time were up, printing its final statistics) once its edge count
has not grown for S seconds. Prints "last_new_edge_s stopped_on_plateau"
on stdout at the end and exits with the command's status.

usage: fuzz_watch.py [--plateau S] LOG CURVE FUZZER_NAME -- COMMAND...
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import threading
import time

STATUS = re.compile(
    r"^#(\d+)\s+(\w+)\s+cov: (\d+) ft: (\d+) corp: (\d+)/")
FINAL = re.compile(r"^stat::number_of_executed_units: *(\d+)")


def session_pids(sid, name):
    """The processes of session `sid` whose command is `name`."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[3]) == sid and comm == name[:15]:
            pids.append(int(entry))
    return pids


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plateau", type=float, default=0)
    ap.add_argument("log")
    ap.add_argument("curve")
    ap.add_argument("name")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    start = time.monotonic()
    state = {"cov": -1, "last_new": 0.0, "stopped": False}
    lock = threading.Lock()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    # A new session is a new scheduler autogroup, and a nice value only
    # weighs within its autogroup: `nice -n 15 scripts/fuzz.sh` left each
    # fuzzer an equal share against every other session (builds, daemons).
    # The group takes the niceness the campaign was started with.
    try:
        with open(f"/proc/{proc.pid}/autogroup", "w") as f:
            f.write(str(os.nice(0)))
    except OSError:
        pass  # no autogroups (CONFIG_SCHED_AUTOGROUP off): nice applies

    def read():
        with open(a.log, "wb") as log, open(a.curve, "w") as curve:
            curve.write("seconds executions edges features corpus\n")
            row = None
            for raw in proc.stdout:
                log.write(raw)
                log.flush()
                line = raw.decode("utf-8", "replace")
                t = time.monotonic() - start
                done = FINAL.match(line)
                if done and row:
                    # libFuzzer's own count at the end closes the curve.
                    row[:2] = [t, int(done.group(1))]
                    curve.write("{:.1f} {} {} {} {}\n".format(*row))
                    curve.flush()
                m = STATUS.match(line)
                if not m:
                    continue
                execs, cov, ft, corp = (int(m.group(i)) for i in (1, 3, 4, 5))
                row = [t, execs, cov, ft, corp]
                curve.write(f"{t:.1f} {execs} {cov} {ft} {corp}\n")
                curve.flush()
                with lock:
                    if cov > state["cov"]:
                        state["cov"] = cov
                        state["last_new"] = t

    reader = threading.Thread(target=read)
    reader.start()
    while proc.poll() is None:
        time.sleep(1)
        if a.plateau <= 0 or state["stopped"]:
            continue
        with lock:
            quiet = time.monotonic() - start - state["last_new"]
            ready = state["cov"] >= 0
        if ready and quiet >= a.plateau:
            for pid in session_pids(proc.pid, a.name):
                try:
                    os.kill(pid, signal.SIGUSR1)
                    state["stopped"] = True
                except ProcessLookupError:
                    pass
    reader.join()
    print(f"{state['last_new']:.0f} {int(state['stopped'])}")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
