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
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from solo_daemon import netns_util, run_program_test  # noqa: E402


def no_client_left(d):
    verbs = netns_util.control(d.ctl, {"cmd": "clients"},
                               timeout=10)["ports"][0]["verbs"]
    left = verbs["clients"]
    n = verbs["counters"]
    ok = (left == [] and n["clients_accepted"] >= 1 and
          n["clients_closed"] == n["clients_accepted"])
    print(("ok   " if ok else "FAIL ") +
          f"the daemon holds no client afterwards: {left}, "
          f"{n['clients_accepted']} accepted, {n['clients_closed']} closed")
    return ok


if __name__ == "__main__":
    sys.exit(run_program_test("rocemu-import-", "\nok: 0 failure(s)",
                              no_client_left))
