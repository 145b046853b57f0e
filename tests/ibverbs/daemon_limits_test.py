#!/usr/bin/env python3
"""A shared daemon's limits met by Debian's ib_write_bw (one rocemud on a
net_ring port, server and client on its loopback; verbs.limits in its
config, docs/daemon.md):

1. RLIMIT_MEMLOCK: a client under `prlimit --memlock=1 MiB` without
   CAP_IPC_LOCK (setpriv drops it from the bounding set, as a user
   without it has none) registering 8 MiB fails cleanly ("Couldn't
   allocate MR", exit 1, the daemon counts a memlock refusal); under the
   same limit, 64 KiB messages pass.
2. verbs.limits.per_uid.max_qps 3: a `-q 4` pair (eight QPs of one uid)
   has each side refused a QP (ENOMEM, perftest's "Unable to create QP")
   and exit, the daemon stays up, and a `-q 1` pair (two QPs) then runs.
Both programs of a pair are one uid: the per-uid cap counts them together.

Usage: daemon_limits_test.py ROCEMUD DROPIN_DIR
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "emulator"))
import netns_util  # noqa: E402
import stock_tools_test as stock  # noqa: E402
from daemon_restart_test import finish  # noqa: E402
from solo_daemon import SoloDaemon  # noqa: E402

failures = []
# A root without CAP_IPC_LOCK; anyone else has none to drop.
NO_IPC_LOCK = (["setpriv", "--bounding-set=-ipc_lock", "--inh-caps=-ipc_lock"]
               if os.geteuid() == 0 else [])


def check(cond, msg):
    print(("ok   " if cond else "FAIL ") + msg, flush=True)
    if not cond:
        failures.append(msg)


def counters(d):
    c = netns_util.control(d.ctl, {"cmd": "counters"}, timeout=10)
    return c["ports"][d.name]["verbs"]["counters"]


def pair(d, env, args, port, client_prefix=()):
    """ib_write_bw server, then its client (under `client_prefix`):
    ((server rc, out), (client rc, out))."""
    argv = ["ib_write_bw", "-d", d.device, "-x", "0", "-p", str(port)] + args
    srv = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    netns_util.wait_tcp_listener(srv, port)
    cli = subprocess.Popen(list(client_prefix) + argv + ["127.0.0.1"],
                           env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    (crc, cout), (src, sout) = finish([cli, srv])
    return (src, sout), (crc, cout)


def main():
    rocemud, dropin = (os.path.abspath(p) for p in sys.argv[1:3])
    d = SoloDaemon(rocemud, prefix="rocemu-limits-",
                   verbs={"limits": {"memlock": True,
                                     "per_uid": {"max_qps": 3}}})
    port = 20000 + os.getpid() % 20000
    try:
        env = d.env(dropin)
        big = ["-s", str(8 << 20), "-n", "20"]
        before = counters(d)["memlock_refusals"]
        (src, sout), (crc, cout) = pair(
            d, env, big, port,
            NO_IPC_LOCK + ["prlimit", f"--memlock={1 << 20}"])
        check(crc == 1 and "Couldn't allocate MR" in cout,
              f"client under a 1 MiB RLIMIT_MEMLOCK: a clean registration "
              f"failure (exit {crc}): {cout.strip().splitlines()[:1]}")
        check(src is not None and src != 0,
              f"its server exits too, no hang (exit {src})")
        check(counters(d)["memlock_refusals"] == before + 1,
              "the daemon counted one memlock refusal")
        (src, sout), (crc, cout) = pair(
            d, env, ["-s", str(64 << 10), "-n", "200"], port + 1,
            NO_IPC_LOCK + ["prlimit", f"--memlock={1 << 20}"])
        check(src == 0 and crc == 0 and stock.perftest_rows(cout),
              f"under the same limit, 64 KiB messages (what fits) pass "
              f"(server {src}, client {crc})")
        if src != 0 or crc != 0:
            netns_util.print_pair_output(sout, cout)

        before = counters(d)["limit_refusals"]
        (src, sout), (crc, cout) = pair(d, env, ["-q", "4", "-n", "100"],
                                        port + 2)
        # Eight QPs asked, three allowed: whichever side gets which, each
        # stops at its first refusal.
        for who, rc, out in (("server", src, sout), ("client", crc, cout)):
            check(rc == 1 and "Unable to create QP" in out,
                  f"-q 4 past max_qps 3: the {who} is refused a QP and "
                  f"exits (exit {rc})")
        check(counters(d)["limit_refusals"] == before + 2,
              "the daemon counted the two refusals")
        (src, sout), (crc, cout) = pair(d, env, ["-q", "1", "-n", "1000"],
                                        port + 3)
        check(src == 0 and crc == 0 and stock.perftest_rows(cout),
              f"then a -q 1 pair (two QPs) runs (server {src}, client {crc})")
        check(d.proc.poll() is None, "the daemon stayed up")
    finally:
        d.cleanup(keep=bool(failures))
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
