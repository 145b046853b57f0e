#!/usr/bin/env python3
"""A/B of eal.idle_spin_us through two daemons over memif (both on lcore 0,
the stock tools tests' set-up): Debian's rstream and riostream (64 B
ping-pong, us per transfer) and perftest's ib_write_lat / ib_send_lat
(typical us) and ib_write_bw 64 B (Mpps), alternating the settings, with
the median of the repetitions per setting (docs/performance.md, issue 37).

Usage: sudo scripts/bench_idle_spin.py [--build DIR] [--reps N] [SPIN_US...]
"""
import argparse
import os
import re
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for d in ("tests/emulator", "tests/ibverbs", "tests/rdmacm"):
    sys.path.insert(0, os.path.join(ROOT, d))
import netns_util  # noqa: E402
import rdmacm_tools_test as cm  # noqa: E402
import stock_tools_test as stock  # noqa: E402

STREAMS = [("rstream", "-S 64 -C 1 -I 2000"),
           ("riostream", "-S 64 -C 1 -I 2000")]
PERFTEST = ["ib_write_lat -s 64 -n 5000", "ib_send_lat -s 64 -n 5000",
            "ib_write_bw -s 64 -n 200000"]


def one_setting(b, spin):
    """{case: figure} for one pair of daemons with idle_spin_us = spin."""
    r = cm.CmRun(f"{b}/emulator/rocemud", f"{b}/verbs/ibverbs",
                 f"{b}/verbs/rdmacm")
    r.extra_config = {n: {"eal": {"idle_spin_us": spin}} for n in "ab"}
    got = {}
    with netns_util.failures_reported(r):
        ns, a, b_ = stock.setup(r, "memif")
        for tool, opts in STREAMS:
            (crc, cout), (src, _) = r.pair_cm(
                ns, a, b_, [tool, "-b", cm.A_IP, "-p", "{port}"] +
                opts.split(), [tool, "-s", cm.A_IP, "-p", "{port}"] +
                opts.split(), timeout=300)
            m = re.search(r"^custom\s.*\s([\d.]+)\s*$", cout, re.M)
            r.check(src == 0 and crc == 0 and m, f"{tool} {opts}")
            if m:
                got[tool] = float(m.group(1))
        for case in PERFTEST:
            src, _, crc, cout = r.pair(ns, a, b_, case.split(), timeout=300)
            rows = [ln.split() for ln in cout.splitlines()
                    if re.match(r"^\s*64\s+\d+\s", ln)]
            r.check(src == 0 and crc == 0 and rows, case)
            if rows:
                # lat: bytes iters min max typical ...; bw: ... MsgRate last
                got[case] = float(rows[-1][4] if "lat" in case
                                  else rows[-1][-1])
    if r.failures:
        sys.exit(f"idle_spin_us {spin}: {r.failures} failure(s)")
    return got


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default="build")
    p.add_argument("--reps", type=int, default=4)
    p.add_argument("spins", nargs="*", type=int, default=[20, 50, 100, 200])
    a = p.parse_args()
    b = a.build if os.path.isabs(a.build) else os.path.join(ROOT, a.build)
    runs = {s: [] for s in a.spins}
    for rep in range(a.reps):
        for s in a.spins:
            runs[s].append(one_setting(b, s))
            print(f"rep {rep + 1} idle_spin_us {s}: {runs[s][-1]}",
                  flush=True)
    cases = [t for t, _ in STREAMS] + PERFTEST
    print("| idle_spin_us | " + " | ".join(cases) + " |")
    print("|---:|" + "---:|" * len(cases))
    for s in a.spins:
        cells = []
        for c in cases:
            v = [g[c] for g in runs[s] if c in g]
            cells.append(f"{statistics.median(v):.3g} ({min(v):.3g}-"
                         f"{max(v):.3g})" if v else "-")
        print(f"| {s} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
