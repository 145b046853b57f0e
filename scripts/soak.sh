#!/usr/bin/env bash
# soak.sh - two rocemud daemons joined by memif under RC WRITE load for a
# bounded time; reports RSS at start (after warm-up) and end, completions
# and errors. Fails (exit 1) on any completion error, a daemon exit, or RSS
# growth above --max-growth-kib after warm-up. Needs root (namespaces).
#
#   sudo scripts/soak.sh [--minutes N] [--build DIR] [--max-growth-kib K]
set -euo pipefail
minutes=10
build=build
growth=4096
while [[ $# -gt 0 ]]; do
  case "$1" in
    --minutes) minutes="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --max-growth-kib) growth="$2"; shift 2 ;;
    *) echo "usage: $0 [--minutes N] [--build DIR] [--max-growth-kib K]" >&2; exit 2 ;;
  esac
done
root="$(cd "$(dirname "$0")/.." && pwd)"
rocemud="$root/$build/emulator/rocemud"
[[ -x "$rocemud" ]] || { echo "soak: $rocemud not built" >&2; exit 2; }
exec python3 - "$rocemud" "$minutes" "$growth" "$root" <<'PY'
import os, sys, time
rocemud, minutes, growth_kib, root = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
sys.path.insert(0, os.path.join(root, "tests", "emulator"))
import net_rdma_test as t

def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1

r = t.Run(rocemud, os.path.join(root, "..", "shared"), faults=False)
rc = 1
try:
    a, b = t.setup(r, "memif")
    # No capture for hours of traffic: switch it off at run time.
    for d in (a, b):
        d.ok("capture", enable=False)
    size, chunk, depth = 8 << 20, 64 << 10, 64
    src = a.ok("reg_mr", len=size, seed=1)
    dst = b.ok("reg_mr", len=size, seed=2)
    cq_a, cq_b = a.ok("create_cq")["cq"], b.ok("create_cq")["cq"]
    qa = a.ok("create_qp", type="RC", cq=cq_a, max_send_wr=depth * 2)["qpn"]
    qb = b.ok("create_qp", type="RC", cq=cq_b)["qpn"]
    a.retry("connect", qpn=qa, remote_qpn=qb, remote_ip=b.ip, timeout=12)
    b.retry("connect", qpn=qb, remote_qpn=qa, remote_ip=a.ip, timeout=12)
    total = minutes * 60
    warmup = min(30.0, total / 4)
    start = time.monotonic()
    completions = errors = nbytes = inflight = 0
    rss0 = None
    next_report = start + warmup
    wr = 0
    while time.monotonic() - start < total:
        if a.proc.poll() is not None or b.proc.poll() is not None:
            raise AssertionError("a daemon exited")
        if inflight < depth:
            n = depth - inflight
            off = (wr * chunk) % size
            p = a.ok("post_send", qpn=qa, opcode="WRITE", wr_id=wr, count=n,
                     laddr=src["addr"] + off, lkey=src["key"], len=chunk,
                     raddr=dst["addr"] + off, rkey=dst["key"])
            wr += p["posted"]
            inflight += p["posted"]
        s = a.ok("poll_cq", cq=cq_a, max=4096, summary=True)
        completions += s["success"]
        errors += s["errors"]
        nbytes += s["bytes"]
        inflight -= s["count"]
        if s["errors"]:
            print(f"soak: completion error {s['first_error']}", flush=True)
        now = time.monotonic()
        if now >= next_report:
            ra, rb = rss_kib(a.proc.pid), rss_kib(b.proc.pid)
            if rss0 is None:
                rss0 = (ra, rb)
                print(f"soak: after {warmup:.0f} s warm-up: RSS a={ra} KiB b={rb} KiB", flush=True)
            print(f"soak: t={now - start:6.0f} s completions={completions} errors={errors} "
                  f"GiB={nbytes / 2**30:.2f} RSS a={ra} KiB b={rb} KiB", flush=True)
            next_report = now + 30
        if s["count"] == 0:
            time.sleep(0.002)
    ra, rb = rss_kib(a.proc.pid), rss_kib(b.proc.pid)
    ca, cb = a.counters(), b.counters()
    print(f"soak: end: {total:.0f} s completions={completions} errors={errors} "
          f"GiB={nbytes / 2**30:.2f} ({nbytes * 8 / total / 1e9:.2f} Gbit/s)")
    print(f"soak: RSS start a={rss0[0]} b={rss0[1]} KiB, end a={ra} b={rb} KiB")
    print(f"soak: a tx_dropped={ca['tx_dropped']} retransmissions="
          f"{ca['rnic']['completer_retry_err']}; b rx_icrc={cb['rnic']['rx_icrc_encapsulated']}")
    grew = max(ra - rss0[0], rb - rss0[1])
    ok = errors == 0 and completions > 0 and grew <= growth_kib
    if grew > growth_kib:
        print(f"soak: FAIL: RSS grew by {grew} KiB (> {growth_kib})")
    r.stop(b)
    time.sleep(0.5)
    r.stop(a)
    ok = ok and not r.failures
    print("soak: PASS" if ok else "soak: FAIL")
    rc = 0 if ok else 1
except (AssertionError, OSError, KeyError, ValueError) as e:
    print("soak: FAIL", repr(e))
finally:
    r.cleanup()
sys.exit(rc)
PY
