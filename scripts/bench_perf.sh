#!/usr/bin/env bash
# bench_perf.sh - rocemu-perf over memif between two rocemud daemons, next to
# the raw DPDK ceiling of the same link measured in the same run.
#   ceiling: emulator/bench_pktio.cc, two processes on lcores 0 (TX) and 1
#            (RX) as scripts/bench_link.sh does, RX rate at the receiver
#            over a fixed window, at the frame size each message size puts
#            on the wire (a WRITE ONLY packet: 74 B of headers + payload;
#            multi-packet messages: 4154 B MIDDLE frames, MTU 4096);
#   rocemu:  daemon A on lcore 0, daemon B on lcore 1 (memif server and
#            client, eal.idle_sleep_us 50 so that an idle daemon lets the
#            tools run), rocemu-perf server on A's verbs socket and client on
#            B's; write_bw at 64 B .. 1 MiB, write_lat at 64 B (p50/p99),
#            write_bw with --memory=malloc next to shm when the daemon
#            accepts arbitrary memory.
# Ratio: rocemu payload rate / (ceiling frames/s x payload per frame).
# Prints a markdown table; with --append adds it, the command and the
# machine load (uptime) to docs/performance.md. Needs root (namespaces).
#
# The tools run with --yield unless --spin: on 2 cores the two daemons
# (one per lcore) and two spinning tools would otherwise take turns by
# scheduler ticks.
#
#   sudo scripts/bench_perf.sh [--build DIR] [--seconds N] [--spin] [--append]
set -euo pipefail
build=build
seconds=3
yield=1
append=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    --spin) yield=0; shift ;;
    --append) append=1; shift ;;
    *) echo "usage: $0 [--build DIR] [--seconds N] [--spin] [--append]" >&2
       exit 2 ;;
  esac
done
root="$(cd "$(dirname "$0")/.." && pwd)"
exec python3 - "$root" "$build" "$seconds" "$yield" "$append" "$*" <<'PY'
import json, os, subprocess, sys, time
root, build = sys.argv[1], sys.argv[2]
seconds, use_yield, append = float(sys.argv[3]), sys.argv[4] == "1", sys.argv[5] == "1"
sys.path.insert(0, os.path.join(root, "tests", "emulator"))
import net_perf_test as t

pktio = os.path.join(root, build, "emulator", "rocemu-bench-pktio")
rocemud = os.path.join(root, build, "emulator", "rocemud")
perf = os.path.join(root, build, "verbs", "tools", "rocemu-perf")
for f in (pktio, rocemud, perf):
    if not os.path.exists(f):
        sys.exit(f"missing {f}: build {build} first")
pid = os.getpid()
SIZES = [64, 256, 1024, 4096, 64 << 10, 1 << 20]
MTU = 4096
HDR_ONLY = 14 + 20 + 8 + 12 + 16 + 4   # Eth IPv4 UDP BTH RETH ICRC
HDR_MIDDLE = 14 + 20 + 8 + 12 + 4      # MIDDLE/LAST: no RETH


def frame_of(size):
    """(frame bytes, payload bytes per frame) of most of a message's packets."""
    if size <= MTU:
        return HDR_ONLY + size, size
    return HDR_MIDDLE + MTU, MTU


def ex(ns):
    return ["ip", "netns", "exec", ns]


def eal(prefix, lcore, vdev):
    return ["--no-huge", "-m", "512", "--no-pci", "--no-shconf", "-l",
            str(lcore), "--file-prefix", f"{prefix}-{pid}",
            "--log-level=*:error", "--vdev", vdev]


def ceiling(ns, frame, tag):
    # Under load the receiver may miss its window: one more try.
    c = ceiling_once(ns, frame, tag)
    if c["mpps"] <= 0 or not c.get("complete", True):
        c = ceiling_once(ns, frame, tag + "r")
    return c


def ceiling_once(ns, frame, tag):
    """bench_link.sh's memif pair: RX on lcore 1, TX on lcore 0."""
    sock = f"bperf-{tag}-{pid}"
    mem = lambda role: f"net_memif0,role={role},socket={sock},bsize=8192"
    args = lambda mode, s: [pktio, "--mode", mode, "--seconds", str(s),
                            "--warmup", "1", "--size", str(frame)]
    rx = subprocess.Popen(ex(ns) + args("rx", seconds) + ["--"] +
                          eal("bprx", 1, mem("server")),
                          stdout=subprocess.PIPE, text=True)
    time.sleep(1.0)
    subprocess.run(ex(ns) + args("tx", seconds + 2.5)[:1] +
                   ["--dst", "ff:ff:ff:ff:ff:ff"] + args("tx", seconds + 2.5)[1:] +
                   ["--"] + eal("bptx", 0, mem("client")),
                   capture_output=True, text=True, timeout=seconds + 40)
    out, _ = rx.communicate(timeout=seconds + 30)
    lines = out.strip().splitlines()
    if not lines:  # the receiver failed (memif not up in time)
        return {"mpps": 0.0, "complete": False}
    return json.loads(lines[-1])


def perf_run(r, ns, a, b, test, args):
    extra = ["--yield"] if use_yield else []
    r.port += 1
    common = [test, "-p", str(r.port), "--json", "--timeout", "60"] + extra + args
    srv = subprocess.Popen(ex(ns) + [perf, *common, "-d", a.verbs_sock],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
    r.procs.append(srv)
    try:
        cli = subprocess.run(ex(ns) + [perf, *common, "-d", b.verbs_sock,
                                       "127.0.0.1"],
                             capture_output=True, text=True, timeout=180)
        srv.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        return None, "timed out"
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()
        r.procs.remove(srv)
    if cli.returncode != 0:
        return None, cli.stderr.strip()
    return [json.loads(l) for l in cli.stdout.splitlines()
            if l.startswith("{")][-1], ""


def iters_for(size):
    # About a second or more of traffic per size at the rates seen here.
    return max(256, min(5000, (256 << 20) // size))


uptime_before = subprocess.run(["uptime"], capture_output=True,
                               text=True).stdout.strip()
ceil = {}
bw, lat, mem = {}, None, {}
r = t.Run(rocemud, perf)
try:
    ns = r.netns("bench-perf")
    for frame in sorted({frame_of(s)[0] for s in SIZES}):
        ceil[frame] = ceiling(ns, frame, f"c{frame}")
        print(f"ceiling {frame} B frames: {ceil[frame]['mpps']:.3f} Mpps",
              flush=True)
    # idle_sleep_us: on 2 cores the pinned daemons would otherwise spin
    # both cores away from the tools (ms per hop instead of us).
    ns2, a, b = t.setup(r, "memif", eal_a=", lcore: 0, idle_sleep_us: 50",
                        eal_b=", lcore: 1, idle_sleep_us: 50")
    for size in SIZES:
        res, err = perf_run(r, ns2, a, b, "write_bw",
                            ["-s", str(size), "-n", str(iters_for(size))])
        bw[size] = res
        print(f"write_bw {size}: {res or err}", flush=True)
    lat, err = perf_run(r, ns2, a, b, "write_lat", ["-s", "64", "-n", "1000"])
    print(f"write_lat 64: {lat or err}", flush=True)
    for memory in ("shm", "malloc"):
        res, err = perf_run(r, ns2, a, b, "write_bw",
                            ["-s", "65536", "-n", "1000",
                             f"--memory={memory}"])
        mem[memory] = res if res else err
        print(f"write_bw 64K --memory={memory}: {res or err}", flush=True)
finally:
    r.cleanup()
uptime_after = subprocess.run(["uptime"], capture_output=True,
                              text=True).stdout.strip()


def human(n):
    return f"{n >> 20} MiB" if n >= 1 << 20 else (
        f"{n >> 10} KiB" if n >= 1024 else f"{n} B")


rows = []
for size in SIZES:
    frame, per_frame = frame_of(size)
    c = ceil[frame]
    ceil_gbps = c["mpps"] * 1e6 * per_frame * 8 / 1e9
    res = bw[size]
    if res is None:
        rows.append(f"| {human(size)} | {frame} | {c['mpps']:.3f} | "
                    f"{ceil_gbps:.2f} | failed | | | |")
        continue
    rows.append(f"| {human(size)} | {frame} | {c['mpps']:.3f} | "
                f"{ceil_gbps:.2f} | {res['bw_avg_gbps']:.3f} | "
                f"{res['msg_rate_mpps']:.4f} | {res['bw_peak_gbps']:.3f} | "
                f"{res['bw_avg_gbps'] / ceil_gbps:.3f} |")
table = ("| message | wire frame (B) | ceiling Mpps | ceiling payload Gb/s | "
         "rocemu-perf write_bw avg Gb/s | Mpps | peak Gb/s | avg / ceiling |\n"
         "|---|---|---|---|---|---|---|---|\n" + "\n".join(rows))
lat_line = ("write_lat 64 B: failed" if lat is None else
            f"write_lat 64 B ({lat['iterations']} iterations, one-way = "
            f"half the round trip): p50 {lat['p50_us']:.1f} us, p99 "
            f"{lat['p99_us']:.1f} us, min {lat['t_min_us']:.1f} us, max "
            f"{lat['t_max_us']:.1f} us")
mem_lines = []
for memory in ("shm", "malloc"):
    m = mem.get(memory)
    if isinstance(m, dict):
        mem_lines.append(f"write_bw 64 KiB --memory={memory}: "
                         f"{m['bw_avg_gbps']:.3f} Gb/s avg, "
                         f"{m['msg_rate_mpps']:.4f} Mpps")
    else:
        mem_lines.append(f"write_bw 64 KiB --memory={memory}: not run ({m})")
print(table)
print(lat_line)
print("\n".join(mem_lines))
if append:
    cmd = (f"sudo scripts/bench_perf.sh --build {build} --seconds {seconds:g}"
           + ("" if use_yield else " --spin") + " --append")
    with open(os.path.join(root, "docs", "performance.md"), "a") as f:
        f.write(f"\n### Run of {time.strftime('%Y-%m-%d %H:%M')} UTC "
                f"(`{cmd}`)\n\n"
                f"Load: before `{uptime_before}`; after `{uptime_after}`.\n\n"
                f"{table}\n\n- {lat_line}\n" +
                "".join(f"- {l}\n" for l in mem_lines))
PY
