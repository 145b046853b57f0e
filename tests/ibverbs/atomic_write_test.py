#!/usr/bin/env python3
"""ibv_atomic_write (an ordinary program built against Debian's libibverbs)
over the drop-in library and one rocemud: RDMA ATOMIC WRITE and RDMA FLUSH
(IBTA 1.5) through ibv_wr_atomic_write, ibv_post_send and ibv_wr_flush, the
device's capability bits and the refusals (keys, rights, alignment,
bounds). Then the daemon's counters must show the requests it executed.

Usage: atomic_write_test.py ROCEMUD DROPIN_DIR IBV_ATOMIC_WRITE
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
    d = SoloDaemon(rocemud, prefix="rocemu-atomicw-")
    failed = False
    try:
        r = subprocess.run([prog], env=d.env(dropin), capture_output=True,
                           text=True, timeout=120)
        print(r.stdout, end="")
        print(r.stderr, end="", file=sys.stderr)
        failed = r.returncode != 0
        print(("FAIL " if failed else "ok   ") +
              f"ibv_atomic_write exit {r.returncode}")
        c = netns_util.control(d.ctl, {"cmd": "counters"}, timeout=10)
        rnic = c["ports"][d.name]["rnic"]
        # Executed: two ATOMIC WRITEs and two FLUSHes; the refused ones
        # are not counted.
        for name, want in (("rx_atomic_write_requests", 2),
                           ("rx_flush_requests", 2)):
            ok = rnic.get(name) == want
            print(("ok   " if ok else "FAIL ") +
                  f"{name} {rnic.get(name)}, {want} expected")
            failed |= not ok
    finally:
        rc = d.stop()
        d.cleanup()
    print(("ok   " if rc == 0 else "FAIL ") +
          f"rocemud stops cleanly (exit {rc})")
    return 1 if failed or rc != 0 else 0


if __name__ == "__main__":
    sys.exit(main())
