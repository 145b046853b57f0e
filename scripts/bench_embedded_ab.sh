#!/usr/bin/env bash
# bench_embedded_ab.sh - two builds' embedded pairs, run in alternation.
#
# The embedded pair (docs/embedded.md: two rocemu-perf processes, each its
# RNIC in-process, over one memif link in a network namespace) moves by
# +-30 % between runs of the same binaries on these 2-core VMs, with the
# host. A change is therefore judged on rounds that run the old and the new
# build back to back, in alternating order, many times: per round the
# chosen cases (default 64 B write_lat, 20000 iterations, and 64 B write_bw
# on 16 QPs, 100000 WRITEs each; send_lat, 20000 iterations, on request),
# malloc'd buffers, each build's own rocemu-perf and embedded module.
# Prints every run, then each build's median, range and the rounds the
# new build won. Needs root (namespaces).
#
#   sudo scripts/bench_embedded_ab.sh --old DIR --new DIR [--rounds N]
#        [--memif-extra ,rsize=8] [--cases write_lat,write_bw16,send_lat]
# DIR: a build directory (e.g. a clone's build/ at the old commit). The
# memif devargs default to rsize=8 (256 slots), as the example configs.
set -euo pipefail
old=""
new=""
rounds=8
extra=",rsize=8"
cases="write_lat,write_bw16"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --old) old="$(cd "$2" && pwd)"; shift 2 ;;
    --new) new="$(cd "$2" && pwd)"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --memif-extra) extra="$2"; shift 2 ;;
    --cases) cases="$2"; shift 2 ;;
    *) echo "usage: $0 --old DIR --new DIR [--rounds N] [--memif-extra S]" \
            "[--cases C,...]" >&2
       exit 2 ;;
  esac
done
if [[ -z "$old" || -z "$new" ]]; then
  echo "usage: $0 --old DIR --new DIR [--rounds N] [--memif-extra S]" >&2
  exit 2
fi
root="$(cd "$(dirname "$0")/.." && pwd)"
exec python3 - "$root" "$old" "$new" "$rounds" "$extra" "$cases" <<'PY'
import os, statistics, subprocess, sys
root, old, new, rounds, extra, cases = sys.argv[1:7]
sys.path.insert(0, os.path.join(root, "tests", "emulator"))
sys.path.insert(0, os.path.join(root, "scripts"))
import bench_pair
import net_perf_test as t

builds = {"old": old, "new": new}
perfs = {k: os.path.join(v, "verbs", "tools", "rocemu-perf")
         for k, v in builds.items()}
# Each build's own module: the library's built-in path is absolute, so a
# copied build directory would load the original's.
modules = {k: os.path.join(v, "emulator", "librocemu_embedded.so")
           for k, v in builds.items()}
for p in list(perfs.values()) + list(modules.values()):
    if not os.path.exists(p):
        sys.exit(f"missing {p}")
rocemud = os.path.join(new, "emulator", "rocemud")
print("load:", subprocess.run(["uptime"], capture_output=True,
                              text=True).stdout.strip(), flush=True)
# name: (rocemu-perf test, arguments, result key, unit, higher is better)
CASES = {
    "write_lat": ("write_lat", ["-s", "64", "-n", "20000"], "p50_us",
                  "us", False),
    "send_lat": ("send_lat", ["-s", "64", "-n", "20000"], "p50_us", "us",
                 False),
    "write_bw16": ("write_bw", ["-s", "64", "-q", "16", "-n",
                                str(16 * 100000)], "msg_rate_mpps",
                   "Mmsg/s", True),
}
chosen = cases.split(",")
for c in chosen:
    if c not in CASES:
        sys.exit(f"unknown case {c}: one of {', '.join(CASES)}")
results = {c: {"old": [], "new": []} for c in chosen}
r = t.Run(rocemud, perfs["new"])
try:
    ns = r.netns("bench-ab")
    for i in range(int(rounds)):
        order = ("old", "new") if i % 2 == 0 else ("new", "old")
        for side in order:
            line = []
            for c in chosen:
                test, args, key, unit, _ = CASES[c]
                res, err = bench_pair.embedded_run(
                    r, ns, perfs[side], test, args + ["--memory=malloc"],
                    extra, module=modules[side])
                results[c][side].append(res[key] if res else None)
                line.append(f"{c} {res[key] if res else err} {unit}")
            print(f"round {i + 1} {side}: " + ", ".join(line), flush=True)
finally:
    r.cleanup()


def summary(name, d, unit, higher_better):
    ok = {k: [x for x in v if x is not None] for k, v in d.items()}
    pairs = [(o, n) for o, n in zip(d["old"], d["new"])
             if o is not None and n is not None]
    won = sum(1 for o, n in pairs if (n > o if higher_better else n < o))
    parts = []
    for k in ("old", "new"):
        v = ok[k]
        parts.append(f"{k} median {statistics.median(v):.3g} {unit} "
                     f"({min(v):.3g}-{max(v):.3g}, {len(v)} runs)"
                     if v else f"{k}: no run")
    print(f"{name}: " + "; ".join(parts) +
          f"; new better in {won} of {len(pairs)} rounds")


for c in chosen:
    _, _, _, unit, higher = CASES[c]
    summary(f"{c} 64 B", results[c], unit, higher)
PY
