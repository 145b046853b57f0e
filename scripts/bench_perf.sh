#!/usr/bin/env bash
# bench_perf.sh - rocemu-perf over memif between two rocemud daemons, next to
# the raw DPDK ceiling of the same link measured in the same run.
#   ceiling: emulator/port/bench_pktio.cc, two processes on lcores 0 (TX) and 1
#            (RX) as scripts/bench_link.sh does, RX rate at the receiver
#            over a fixed window, the best of three runs (one run can
#            read several times low on these VMs), at the frame size each
#            message size puts on the wire (a WRITE ONLY packet: 74 B of
#            headers + payload; multi-packet messages: 4154 B MIDDLE
#            frames, MTU 4096);
#   bound:   the necessary work per frame (issue 37), the same two
#            processes and frame sizes with --work rnic: real RoCEv2 RDMA
#            WRITE ONLY (MIDDLE for the 4154 B frames) frames; the sender
#            copies each payload out of a 64 MiB malloc'd region it walks
#            and writes the ICRC (protocol/ code), the receiver checks the
#            ICRC and copies the payload into its own 64 MiB region. Best
#            of three runs like the ceiling; a frame failing the check
#            fails the script. It lies below the ceiling by construction.
#   one-core bound: the same work for both ends in one process on lcore 0
#            (bench_pktio --mode loop --work rnic: a memif server port
#            sends, a client port of the same socket receives), which is
#            what rocemu's placement gives the daemons: both share lcore
#            0 (the embedded pair's progress threads too, but there an
#            application's own empty polls also run its RNIC, on whatever
#            core it has). The issue defines the bound "on one core"; the
#            two-process bound above gives each end a core of its own.
#            The latency ceiling: a raw DPDK ping-pong of 138 B frames (a
#            64 B WRITE's) over the same memif, pong on lcore 1, ping on
#            lcore 0, one-way = half the round trip; and the same with
#            both ends on lcore 0, each yielding after an empty poll
#            (bench_pktio --yield_idle), as the two daemons share it.
#            The placement floor: that one-core ping-pong with an
#            application process per end on lcore 1 that posts through
#            shared memory and spins on it for the peer's message
#            (bench_pktio --apps): every hand-over write_lat through two
#            daemons makes, with none of the RNIC's work. write_lat runs
#            a second time with the tools on lcore 1 to compare with it.
#   rocemu:  daemons A and B (memif server and client) both on lcore 0,
#            the tools on whatever core the scheduler gives them: on 2
#            cores the daemons take turns on one (each yields when a pass
#            moved nothing, eal.idle_yield) and the spinning tools keep the
#            other. rocemu-perf server on A's verbs socket, client on B's,
#            malloc'd buffers (as perftest uses them): write_bw at 64 B ..
#            1 MiB on one QP, 64 B on 16 QPs, write_lat at 64 B (p50/p99),
#            and write_bw 64 KiB with --memory=shm next to malloc.
#   embedded: no daemon (docs/embedded.md): each rocemu-perf runs its RNIC
#            in-process ($ROCEMU_EMBEDDED, same memif link, progress
#            thread on lcore 0), its empty polls running the RNIC: write_lat
#            64 B, write_bw 64 B on 16 QPs and 4 KiB .. 1 MiB on one QP,
#            malloc'd buffers.
#   perftest: Debian's ib_write_lat, ib_send_lat and ib_write_bw (64 B)
#            over the drop-in libibverbs beside rocemu-perf's figures for
#            the same operations (scripts/bench_dropin.sh --rounds 3).
# Ratio: rocemu payload rate / (ceiling frames/s x payload per frame), and
# the same against the bound's frames/s;
# latency: rocemu p50 / ping-pong p50.
# Prints a markdown table; with --append adds it, the command and the
# machine load (uptime) to docs/performance.md. Needs root (namespaces).
#
# The tools spin as perftest does (the library gives the core away every
# 64 empty CQ polls by itself); --yield makes them sched_yield() after
# every empty poll.
#
#   sudo scripts/bench_perf.sh [--build DIR] [--seconds N] [--yield] [--append]
set -euo pipefail
build=build
seconds=3
yield=0
append=0
. "$(dirname "$0")/bench_lib.sh"
bench_options "[--build DIR] [--seconds N] [--yield] [--append]" "$@"
root="$(cd "$(dirname "$0")/.." && pwd)"
exec python3 - "$root" "$build" "$seconds" "$yield" "$append" "$*" <<'PY'
import json, os, subprocess, sys, time
root, build = sys.argv[1], sys.argv[2]
seconds, use_yield, append = float(sys.argv[3]), sys.argv[4] == "1", sys.argv[5] == "1"
sys.path.insert(0, os.path.join(root, "tests", "emulator"))
sys.path.insert(0, os.path.join(root, "scripts"))
import bench_memif
import bench_pair
import net_perf_test as t

pktio = os.path.join(root, build, "emulator", "rocemu-bench-pktio")
rocemud = os.path.join(root, build, "emulator", "rocemud")
perf = os.path.join(root, build, "verbs", "tools", "rocemu-perf")
for f in (pktio, rocemud, perf):
    if not os.path.exists(f):
        sys.exit(f"missing {f}: build {build} first")
SIZES = [64, 256, 1024, 4096, 64 << 10, 1 << 20]
MTU = 4096
HDR_ONLY = 14 + 20 + 8 + 12 + 16 + 4   # Eth IPv4 UDP BTH RETH ICRC
HDR_MIDDLE = 14 + 20 + 8 + 12 + 4      # MIDDLE/LAST: no RETH


def frame_of(size):
    """(frame bytes, payload bytes per frame) of most of a message's packets."""
    if size <= MTU:
        return HDR_ONLY + size, size
    return HDR_MIDDLE + MTU, MTU


def work_of(frame):
    """bench_pktio flags of the necessary-work bound for `frame` bytes."""
    opcode = "write_middle" if frame == HDR_MIDDLE + MTU else "write_only"
    return ["--work", "rnic", "--opcode", opcode, "--mr_mib", "64"]


def perf_run(r, ns, a, b, test, args, cpus=None):
    """rocemu-perf on daemon A's and daemon B's verbs sockets (on `cpus`,
    taskset's list, if given)."""
    return bench_pair.perf_pair(r, ns, perf, test, args,
                                (["-d", a.verbs_sock], None),
                                (["-d", b.verbs_sock], None),
                                use_yield=use_yield, cpus=cpus)


def embedded_run(r, ns, test, args):
    """rocemu-perf with each side's RNIC in its own process (DPDK's
    default memif ring, as the ceilings)."""
    return bench_pair.embedded_run(r, ns, perf, test, args,
                                   use_yield=use_yield)


def iters_for(size):
    # 4 GiB (2 M messages at most): about a second of traffic per size at
    # the rates seen here, so that start-up (a new memif connection, the
    # first completions) is a small part of what is measured.
    return max(256, min(2000000, (4 << 30) // size))


uptime_before = subprocess.run(["uptime"], capture_output=True,
                               text=True).stdout.strip()
ceil, bound, bound1 = {}, {}, {}
bw, lat, mem, bw16, pingpong, pingpong1 = {}, None, {}, None, None, None
lat_pinned, pingpong_apps = None, None
emb_lat, emb_bw16, emb_bw = None, None, {}
r = t.Run(rocemud, perf)
try:
    ns = r.netns("bench-perf")
    for frame in sorted({frame_of(s)[0] for s in SIZES}):
        ceil[frame] = bench_memif.rate(pktio, ns, frame, f"c{frame}", seconds)
        print(f"ceiling {frame} B frames: {ceil[frame]['mpps']:.3f} Mpps "
              f"(runs {ceil[frame]['runs']})", flush=True)
        bound[frame] = bench_memif.rate(pktio, ns, frame, f"w{frame}",
                                        seconds, work=work_of(frame))
        print(f"necessary-work bound {frame} B frames: "
              f"{bound[frame]['mpps']:.3f} Mpps (runs {bound[frame]['runs']}"
              f", ICRC errors {bound[frame]['icrc_errors']}, malformed "
              f"{bound[frame]['malformed']})", flush=True)
        bound1[frame] = bench_memif.loop_rate(pktio, ns, frame, f"l{frame}",
                                              seconds, work=work_of(frame))
        print(f"one-core bound {frame} B frames: "
              f"{bound1[frame]['mpps']:.3f} Mpps (runs "
              f"{bound1[frame]['runs']}, ICRC errors "
              f"{bound1[frame]['icrc_errors']}, malformed "
              f"{bound1[frame]['malformed']})", flush=True)
    pingpong = bench_memif.ping_pong(pktio, ns, frame_of(64)[0])
    print(f"ping-pong {frame_of(64)[0]} B frames: {pingpong}", flush=True)
    pingpong1 = bench_memif.ping_pong(pktio, ns, frame_of(64)[0],
                                      one_core=True)
    print(f"one-core ping-pong {frame_of(64)[0]} B frames: {pingpong1}",
          flush=True)
    # A floor: the best (lowest p50) of three runs, as the ceilings are.
    floor_runs = [bench_memif.ping_pong(pktio, ns, frame_of(64)[0],
                                        one_core=True, apps=True)
                  for _ in range(3)]
    floor_runs = [f for f in floor_runs if f]
    pingpong_apps = min(floor_runs, key=lambda f: f["p50_us"],
                        default=None)
    if pingpong_apps:
        pingpong_apps["runs"] = [f["p50_us"] for f in floor_runs]
    print(f"placement floor {frame_of(64)[0]} B frames: {pingpong_apps}",
          flush=True)
    # Both daemons on lcore 0 (see the top): idle_sleep_us lets an idle
    # daemon sleep, idle_yield (default) hands the core to the other daemon
    # after a pass without work.
    ns2, a, b = t.setup(r, "memif", eal_a={"lcore": 0}, eal_b={"lcore": 0})
    for size in SIZES:
        res, err = perf_run(r, ns2, a, b, "write_bw",
                            ["-s", str(size), "-n", str(iters_for(size)),
                             "--memory=malloc"])
        bw[size] = res
        print(f"write_bw {size}: {res or err}", flush=True)
    # 16 QPs, as the issue's message-rate goal: 100000 WRITEs per QP.
    bw16, err = perf_run(r, ns2, a, b, "write_bw",
                         ["-s", "64", "-q", "16", "-n", str(16 * 100000),
                          "--memory=malloc"])
    print(f"write_bw 64 x 16 QPs: {bw16 or err}", flush=True)
    lat, err = perf_run(r, ns2, a, b, "write_lat",
                        ["-s", "64", "-n", "5000", "--memory=malloc"])
    print(f"write_lat 64: {lat or err}", flush=True)
    # The same with the tools on lcore 1, as the floor's applications.
    lat_pinned, err = perf_run(r, ns2, a, b, "write_lat",
                               ["-s", "64", "-n", "5000", "--memory=malloc"],
                               cpus="1")
    print(f"write_lat 64, tools on lcore 1: {lat_pinned or err}", flush=True)
    for memory in ("shm", "malloc"):
        res, err = perf_run(r, ns2, a, b, "write_bw",
                            ["-s", "65536", "-n", "1000",
                             f"--memory={memory}"])
        mem[memory] = res if res else err
        print(f"write_bw 64K --memory={memory}: {res or err}", flush=True)
    # The daemons stop; the same pairs with the RNICs embedded.
    for d in (a, b):
        d.proc.terminate()
        d.proc.wait(timeout=15)
        r.procs.remove(d.proc)
    emb_lat, err = embedded_run(r, ns2, "write_lat",
                                ["-s", "64", "-n", "20000", "--memory=malloc"])
    print(f"embedded write_lat 64: {emb_lat or err}", flush=True)
    emb_bw16, err = embedded_run(r, ns2, "write_bw",
                                 ["-s", "64", "-q", "16", "-n",
                                  str(16 * 100000), "--memory=malloc"])
    print(f"embedded write_bw 64 x 16 QPs: {emb_bw16 or err}", flush=True)
    for size in (4096, 64 << 10, 1 << 20):
        res, err = embedded_run(r, ns2, "write_bw",
                                ["-s", str(size), "-n", str(iters_for(size)),
                                 "--memory=malloc"])
        emb_bw[size] = res
        print(f"embedded write_bw {size}: {res or err}", flush=True)
finally:
    r.cleanup()
# perftest's own figures over the drop-in beside rocemu-perf's, same run
# (scripts/bench_dropin.sh: its own pair of daemons, 64 B, malloc'd
# buffers, three rounds in alternating order).
dropin = subprocess.run(
    [os.path.join(root, "scripts", "bench_dropin.sh"), "--build", build,
     "--rounds", "3"], capture_output=True, text=True, timeout=1800)
dropin_lines = [l for l in dropin.stdout.splitlines()
                if l.startswith("|") or l.startswith("rounds ")]
if dropin.returncode != 0 or not dropin_lines:
    dropin_lines = ["perftest beside rocemu-perf: failed (" +
                    (dropin.stderr.strip().splitlines() or ["no output"])[-1]
                    + ")"]
print("\n".join(dropin_lines), flush=True)
uptime_after = subprocess.run(["uptime"], capture_output=True,
                              text=True).stdout.strip()


def human(n):
    return f"{n >> 20} MiB" if n >= 1 << 20 else (
        f"{n >> 10} KiB" if n >= 1024 else f"{n} B")


def payload_gbps(rates, frame, per_frame):
    return rates[frame]["mpps"] * 1e6 * per_frame * 8 / 1e9


def ratio(gbps, of):
    return f"{gbps / of:.3f}" if of > 0 else "n/a"


rows = []
for size in SIZES:
    frame, per_frame = frame_of(size)
    c, w, w1 = ceil[frame], bound[frame], bound1[frame]
    ceil_gbps = payload_gbps(ceil, frame, per_frame)
    bound_gbps = payload_gbps(bound, frame, per_frame)
    bound1_gbps = payload_gbps(bound1, frame, per_frame)
    head = (f"| {human(size)} | {frame} | {c['mpps']:.3f} | {ceil_gbps:.2f} | "
            f"{w['mpps']:.3f} | {bound_gbps:.2f} | "
            f"{ratio(bound_gbps, ceil_gbps)} | {w1['mpps']:.3f} |")
    res = bw[size]
    if res is None:
        rows.append(head + " failed | | | | | |")
        continue
    rows.append(head + f" {res['bw_avg_gbps']:.3f} | "
                f"{res['msg_rate_mpps']:.4f} | {res['bw_peak_gbps']:.3f} | "
                f"{ratio(res['bw_avg_gbps'], ceil_gbps)} | "
                f"{ratio(res['bw_avg_gbps'], bound_gbps)} | "
                f"{ratio(res['bw_avg_gbps'], bound1_gbps)} |")
table = ("| message | wire frame (B) | ceiling Mpps | ceiling payload Gb/s | "
         "bound Mpps | bound payload Gb/s | bound / ceiling | "
         "one-core bound Mpps | "
         "rocemu-perf write_bw avg Gb/s | Mpps | peak Gb/s | avg / ceiling | "
         "avg / bound | avg / one-core bound |\n"
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n" +
         "\n".join(rows))
c64, b64 = ceil[frame_of(64)[0]], bound[frame_of(64)[0]]
b64_1 = bound1[frame_of(64)[0]]
rate_line = ("write_bw 64 B on 16 QPs: failed" if bw16 is None else
             f"write_bw 64 B on 16 QPs: {bw16['msg_rate_mpps']:.3f} Mpps = "
             f"{ratio(bw16['msg_rate_mpps'], c64['mpps'])} of the ceiling's "
             f"{c64['mpps']:.3f} Mpps, "
             f"{ratio(bw16['msg_rate_mpps'], b64['mpps'])} of the bound's "
             f"{b64['mpps']:.3f} Mpps, "
             f"{ratio(bw16['msg_rate_mpps'], b64_1['mpps'])} of the one-core "
             f"bound's {b64_1['mpps']:.3f} Mpps ({frame_of(64)[0]} B frames)")
ping_p50 = pingpong["p50_us"] if pingpong else 0
lat_line = ("write_lat 64 B: failed" if lat is None else
            f"write_lat 64 B ({lat['iterations']} iterations, one-way = "
            f"half the round trip): p50 {lat['p50_us']:.1f} us, p99 "
            f"{lat['p99_us']:.1f} us, min {lat['t_min_us']:.1f} us, max "
            f"{lat['t_max_us']:.1f} us")
ping_line = ("raw DPDK ping-pong: failed" if not pingpong else
             f"raw DPDK ping-pong, {frame_of(64)[0]} B frames over the same "
             f"memif (one-way): p50 {ping_p50:.2f} us, p99 "
             f"{pingpong['p99_us']:.2f} us; write_lat p50 / ping-pong p50 = "
             + (f"{lat['p50_us'] / ping_p50:.1f}" if lat and ping_p50 else "n/a"))
ping1_p50 = pingpong1["p50_us"] if pingpong1 else 0
ping_line += ("; both ends on lcore 0, yielding when idle as the daemons "
              "do: " + (f"p50 {ping1_p50:.2f} us, p99 "
                        f"{pingpong1['p99_us']:.2f} us" if pingpong1
                        else "failed"))
# write_lat through two daemons against what their placement costs with
# no RNIC work (bench_pktio --apps: each end an application on lcore 1
# handing over through shared memory to a process on lcore 0 that yields
# when idle, the link between them), plus the work the embedded pair does
# in its one-way time beyond the raw cross-core ping-pong.
floor_line = "placement floor: failed"
if pingpong_apps:
    floor = pingpong_apps["p50_us"]
    floor_line = (f"placement floor (bench_pktio --apps: an application per "
                  f"end on lcore 1, both daemons' stand-ins on lcore 0, "
                  f"no RNIC work; best of runs {pingpong_apps['runs']}): "
                  f"p50 {floor:.2f} us, p99 {pingpong_apps['p99_us']:.2f} us")
    if lat_pinned:
        floor_line += (f"; write_lat p50 with the tools on lcore 1: "
                       f"{lat_pinned['p50_us']:.2f} us (p99 "
                       f"{lat_pinned['p99_us']:.1f})")
    if emb_lat and ping_p50:
        work = emb_lat["p50_us"] - ping_p50
        est = floor + work
        floor_line += (f"; the embedded pair's work (its p50 - the raw "
                       f"ping-pong's) {work:.2f} us; floor + that work = "
                       f"{est:.2f} us = {est / emb_lat['p50_us']:.2f}x the "
                       f"embedded p50 (goal: daemons <= 2x)")
mem_lines = []
for memory in ("shm", "malloc"):
    m = mem.get(memory)
    if isinstance(m, dict):
        mem_lines.append(f"write_bw 64 KiB --memory={memory}: "
                         f"{m['bw_avg_gbps']:.3f} Gb/s avg, "
                         f"{m['msg_rate_mpps']:.4f} Mpps")
    else:
        mem_lines.append(f"write_bw 64 KiB --memory={memory}: not run ({m})")
IN_PROCESS_P50 = 6.3  # us: verbs/tools/perf_test.cc's in-process pair
emb_lines = []
if emb_lat:
    emb_lines.append(
        f"embedded write_lat 64 B ({emb_lat['iterations']} iterations): p50 "
        f"{emb_lat['p50_us']:.2f} us, p99 {emb_lat['p99_us']:.1f} us; p50 / "
        f"ping-pong p50 = " +
        (f"{emb_lat['p50_us'] / ping_p50:.1f}" if ping_p50 else "n/a") +
        f", / the in-process pair's {IN_PROCESS_P50} us = "
        f"{emb_lat['p50_us'] / IN_PROCESS_P50:.2f}")
else:
    emb_lines.append("embedded write_lat 64 B: failed")
emb_lines.append(
    "embedded write_bw 64 B on 16 QPs: failed" if emb_bw16 is None else
    f"embedded write_bw 64 B on 16 QPs: {emb_bw16['msg_rate_mpps']:.3f} Mpps"
    f" = {ratio(emb_bw16['msg_rate_mpps'], b64['mpps'])} of the bound, "
    f"{ratio(emb_bw16['msg_rate_mpps'], b64_1['mpps'])} of the one-core bound")
for size, res in emb_bw.items():
    frame, per_frame = frame_of(size)
    ceil_gbps = payload_gbps(ceil, frame, per_frame)
    bound_gbps = payload_gbps(bound, frame, per_frame)
    bound1_gbps = payload_gbps(bound1, frame, per_frame)
    emb_lines.append(
        f"embedded write_bw {human(size)}: failed" if res is None else
        f"embedded write_bw {human(size)}: {res['bw_avg_gbps']:.3f} Gb/s = "
        f"{ratio(res['bw_avg_gbps'], ceil_gbps)} of the ceiling, "
        f"{ratio(res['bw_avg_gbps'], bound_gbps)} of the bound, "
        f"{ratio(res['bw_avg_gbps'], bound1_gbps)} of the one-core bound")
runs_line = ("ceiling runs, Mpps (each ceiling is the best of its runs): " +
             "; ".join(f"{f} B {ceil[f]['runs']}" for f in sorted(ceil)))
bound_line = ("necessary-work bound runs, Mpps (best of its runs; "
              "bench_pktio --work rnic): " +
              "; ".join(f"{f} B {bound[f]['runs']}" for f in sorted(bound)))
bound1_line = ("one-core bound runs, Mpps (best of its runs; bench_pktio --mode "
               "loop --work rnic on lcore 0): " +
               "; ".join(f"{f} B {bound1[f]['runs']}" for f in sorted(bound1)))
icrc_errors = sum(b["icrc_errors"] + b["malformed"]
                  for b in list(bound.values()) + list(bound1.values()))
below = [f for f in bound if bound[f]["mpps"] > ceil[f]["mpps"]]
checks = []
if icrc_errors:
    checks.append(f"FAILED: {icrc_errors} frame(s) of the bound runs failed "
                  "the ICRC check or were malformed")
if below:
    checks.append("WARNING: the bound is above the ceiling at " +
                  ", ".join(f"{f} B" for f in sorted(below)) +
                  " (runs too noisy to compare; run again on a quiet machine)")
print(table)
print(runs_line)
print(bound_line)
print(bound1_line)
print("\n".join(checks))
print(rate_line)
print(lat_line)
print(ping_line)
print(floor_line)
print("\n".join(mem_lines))
print("\n".join(emb_lines))
if append:
    cmd = (f"sudo scripts/bench_perf.sh --build {build} --seconds {seconds:g}"
           + (" --yield" if use_yield else "") + " --append")
    with open(os.path.join(root, "docs", "performance.md"), "a") as f:
        f.write(f"\n### Run of {time.strftime('%Y-%m-%d %H:%M')} UTC "
                f"(`{cmd}`)\n\n"
                f"Load: before `{uptime_before}`; after `{uptime_after}`.\n\n"
                f"{table}\n\n- {runs_line}\n- {bound_line}\n- {bound1_line}\n"
                f"- {rate_line}\n"
                f"- {lat_line}\n- {ping_line}\n- {floor_line}\n" +
                "".join(f"- {l}\n" for l in checks + mem_lines + emb_lines) +
                "\nperftest over the drop-in beside rocemu-perf (64 B, "
                "scripts/bench_dropin.sh --rounds 3, same run):\n\n" +
                "\n".join(dropin_lines) + "\n")
sys.exit(1 if icrc_errors else 0)
PY
