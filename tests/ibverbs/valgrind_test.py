#!/usr/bin/env python3
"""Debian's ibv_rc_pingpong (server and client, one rocemud) under valgrind
memcheck with the drop-in libibverbs: no invalid access, no use of
uninitialised memory, nothing definitely lost, in either process.

Usage: valgrind_test.py ROCEMUD DROPIN_DIR
"""
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, "..", "emulator"))
import netns_util  # noqa: E402
from solo_daemon import SoloDaemon  # noqa: E402

VALGRIND = ["valgrind", "--error-exitcode=99", "--leak-check=full",
            "--errors-for-leak-kinds=definite", "--track-origins=yes"]


def main():
    rocemud, dropin = (os.path.abspath(p) for p in sys.argv[1:3])
    failures = []
    d = SoloDaemon(rocemud, prefix="rocemu-valgrind-")
    try:
        env = d.env(dropin)
        port = str(19000 + os.getpid() % 1000)
        args = ["ibv_rc_pingpong", "-g", "0", "-n", "100", "-s", "4096",
                "-p", port]
        srv = subprocess.Popen(VALGRIND + args, env=env,
                               stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
        # ibv_rc_pingpong's client connects once; valgrind starts slowly.
        netns_util.wait_tcp_listener(srv, int(port), timeout=120)
        cli = subprocess.run(VALGRIND + args + ["127.0.0.1"], env=env,
                             capture_output=True, text=True, timeout=300)
        try:
            sout, _ = srv.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            srv.kill()
            sout, _ = srv.communicate()
        for name, rc, out in (("server", srv.returncode, sout),
                              ("client", cli.returncode,
                               cli.stdout + cli.stderr)):
            ok = rc == 0 and "iters in" in out and \
                "ERROR SUMMARY: 0 errors" in out
            print(("ok   " if ok else "FAIL ") +
                  f"{name}: exit {rc}, valgrind clean")
            if not ok:
                failures.append(name)
                print(out[-4000:])
    finally:
        d.cleanup(keep=bool(failures))
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
