#!/usr/bin/env python3
"""ibv_xrc_share (an ordinary program built against Debian's libibverbs)
over the drop-in library and one rocemud: two processes share an XRC
domain opened by file, one opens the other's TGT QP and sends into its XRC
SRQ (see ibv_xrc_share.c). Then the daemon's counters must show the one
receive it made.

Usage: xrc_share_test.py ROCEMUD DROPIN_DIR IBV_XRC_SHARE
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from solo_daemon import SoloDaemon  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "emulator"))
import netns_util  # noqa: E402


def main():
    rocemud, dropin, prog = (os.path.abspath(p) for p in sys.argv[1:4])
    d = SoloDaemon(rocemud, prefix="rocemu-xrc-")
    failed = False
    try:
        with tempfile.TemporaryDirectory() as tmp:
            files = [os.path.join(tmp, n) for n in ("domain", "other")]
            r = subprocess.run([prog] + files, env=d.env(dropin),
                               capture_output=True, text=True, timeout=100)
        print(r.stdout, end="")
        print(r.stderr, end="", file=sys.stderr)
        failed = r.returncode != 0
        print(("FAIL " if failed else "ok   ") +
              f"ibv_xrc_share exit {r.returncode}")
        c = netns_util.control(d.ctl, {"cmd": "counters"}, timeout=10)
        rnic = c["ports"][d.name]["rnic"]
        # The one SEND, received through the TGT QP into the XRC SRQ.
        ok = rnic.get("rdma_recvs") == 1
        failed |= not ok
        print(("ok   " if ok else "FAIL ") +
              f"rdma_recvs {rnic.get('rdma_recvs')}")
    finally:
        d.cleanup(keep=failed)
    print("FAILED" if failed else "PASS")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
