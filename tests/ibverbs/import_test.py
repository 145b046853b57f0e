#!/usr/bin/env python3
"""ibv_import (an ordinary program built against Debian's libibverbs) over
the drop-in library and one rocemud: a context imported from a dup of its
cmd_fd, PDs, MRs and DMs imported by handle, RDMA WRITEs on the imported
objects, destruction through either handle, the refusals. Afterwards the
daemon must hold nothing of the program (its one session, shared by both
contexts, closed when the last of them closed).

Usage: import_test.py ROCEMUD DROPIN_DIR IBV_IMPORT
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from solo_daemon import SoloDaemon  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "emulator"))
import netns_util  # noqa: E402


def main():
    rocemud, dropin, prog = (os.path.abspath(p) for p in sys.argv[1:4])
    d = SoloDaemon(rocemud, prefix="rocemu-import-")
    failed = False
    try:
        r = subprocess.run([prog], env=d.env(dropin), capture_output=True,
                           text=True, timeout=120)
        print(r.stdout, end="")
        print(r.stderr, end="", file=sys.stderr)
        failed = r.returncode != 0 or "\nok: 0 failure(s)" not in r.stdout
        print(("FAIL " if failed else "ok   ") +
              f"ibv_import exit {r.returncode}")
        verbs = netns_util.control(d.ctl, {"cmd": "clients"},
                                   timeout=10)["ports"][0]["verbs"]
        left = verbs["clients"]
        n = verbs["counters"]
        ok = (left == [] and n["clients_accepted"] >= 1 and
              n["clients_closed"] == n["clients_accepted"])
        print(("ok   " if ok else "FAIL ") +
              f"the daemon holds no client afterwards: {left}, "
              f"{n['clients_accepted']} accepted, {n['clients_closed']} "
              "closed")
        failed |= not ok
    finally:
        rc = d.stop()
        d.cleanup()
    print(("ok   " if rc == 0 else "FAIL ") +
          f"rocemud stops cleanly (exit {rc})")
    return 1 if failed or rc != 0 else 0


if __name__ == "__main__":
    sys.exit(main())
