#!/usr/bin/env python3
"""ibv_atomic_write (an ordinary program built against Debian's libibverbs)
over the drop-in library and one rocemud: RDMA ATOMIC WRITE and RDMA FLUSH
(IBTA 1.5) through ibv_wr_atomic_write, ibv_post_send and ibv_wr_flush, the
device's capability bits and the refusals (keys, rights, alignment,
bounds). Then the daemon's counters must show the requests it executed.

Usage: atomic_write_test.py ROCEMUD DROPIN_DIR IBV_ATOMIC_WRITE
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from solo_daemon import netns_util, run_program_test  # noqa: E402


def executed_counted(d):
    c = netns_util.control(d.ctl, {"cmd": "counters"}, timeout=10)
    rnic = c["ports"][d.name]["rnic"]
    # Executed: two ATOMIC WRITEs and two FLUSHes; the refused ones are not
    # counted.
    ok = True
    for name, want in (("rx_atomic_write_requests", 2),
                       ("rx_flush_requests", 2)):
        good = rnic.get(name) == want
        print(("ok   " if good else "FAIL ") +
              f"{name} {rnic.get(name)}, {want} expected")
        ok &= good
    return ok


if __name__ == "__main__":
    sys.exit(run_program_test("rocemu-atomicw-", "ok: 0 failed",
                              executed_counted))
