#!/usr/bin/env bash
# capture_rping.sh - records a rocemu<->rocemu rping connection for the
# replay case captures/replay/rocemu_rping: two rocemud over memif (A
# 10.122.2.1 serves, B 10.122.2.2 connects), Debian's unmodified rping over
# the drop-in librdmacm/libibverbs, `rping -C 2 -S 64 -V`: the CM handshake
# (REQ/REP/RTU), two rounds of SEND / RDMA READ / SEND / RDMA WRITE / SEND,
# and the disconnect (DREQ/DREP). Daemon A's own capture (rx and tx, merged
# by time with mergecap) is what its port saw and sent.
#
#   sudo scripts/capture_rping.sh [--build DIR] OUT.pcap
set -euo pipefail
build=build
[[ "${1:-}" == "--build" ]] && { build="$2"; shift 2; }
[[ $# -eq 1 ]] || { echo "usage: $0 [--build DIR] OUT.pcap" >&2; exit 2; }
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$(realpath -m "$1")"
exec python3 - "$root" "$build" "$out" <<'PY'
import os, subprocess, sys
root, build, out = sys.argv[1:4]
sys.path.insert(0, os.path.join(root, "tests", "rdmacm"))
import rdmacm_tools_test as t

B = os.path.join(root, build)
r = t.CmRun(os.path.join(B, "emulator", "rocemud"),
            os.path.join(B, "verbs", "ibverbs"), os.path.join(B, "verbs", "rdmacm"))
r.extra_config["a"] = lambda d: {"capture": {
    "enabled": True, "rx_path": f"{d}/rx.pcap", "tx_path": f"{d}/tx.pcap",
    "rotate_mb": 0}}
with t.netns_util.failures_reported(r):
    ns, a, b = t.stock.setup(r, "memif")
    (crc, cout), (src, sout) = r.pair_cm(
        ns, a, b,
        ["rping", "-s", "-a", t.A_IP, "-p", "7174", "-C", "2", "-S", "64",
         "-V"],
        ["rping", "-c", "-a", t.A_IP, "-p", "7174", "-C", "2", "-S", "64",
         "-V", "-v"], listen=7174)
    if src != 0 or crc != 0:
        sys.exit(f"rping failed: server {src}, client {crc}\n{sout}\n{cout}")
    # The capture files are complete once the daemon stops.
    d = os.path.dirname(a["ctl"])
    t.netns_util.stop_rocemud(a["proc"])
    subprocess.run(["mergecap", "-F", "nsecpcap", "-w", out, os.path.join(d, "rx.pcap"),
                    os.path.join(d, "tx.pcap")], check=True)
    print(f"wrote {out}")
PY
