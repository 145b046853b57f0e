#!/usr/bin/env python3
"""The embedded mode: no rocemud anywhere; each program runs its RNIC in its
own process ($ROCEMU_EMBEDDED names a rocemud config, docs/embedded.md), and
the two RNICs talk RoCEv2 over a memif link between the two programs.

- rocemu-perf pairs, --verify, malloc'd buffers: write_lat and send_lat (the
  application's polls run the RNIC), write_bw on 4 QPs, read_lat, atomic_lat;
- Debian's unmodified perftest over the drop-in libibverbs.so.1: ib_send_lat,
  ib_write_bw -q 4, and ib_write_lat, which waits by spinning on memory,
  with $ROCEMU_EMBEDDED_PROGRESS=thread;
- an embedded program against a rocemud daemon on the other end of the link;
- a daemon whose memif client starts before its server, and rejoins the
  next server after the first one has gone;
- libibverbs loaded by dlopen (Python's ctypes), whose constructor runs
  under the dynamic loader's lock;
- while a pair runs, the embedded RNIC answers on its control socket like a
  daemon (rocemu-ctl's counters: frames moved, no error counter);
- bad input: a config that does not load, an unknown progress mode, a
  module that is not there. The program finds no device and says why; it
  does not crash.

Usage: embedded_test.py [--perf-only] ROCEMUD ROCEMU_PERF DROPIN_DIR
                        EMBEDDED_MODULE
--perf-only: the rocemu-perf pairs and the control socket only (no perftest,
no daemon, no bad input); scripts/tsan.sh runs them with rocemu-perf and the
module built under ThreadSanitizer.
"""
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "emulator"))
import netns_util  # noqa: E402
from stock_tools_test import perftest_rows  # noqa: E402

DEV = "rocemu_p0"
ERROR_COUNTERS = ("retry_exceeded_err", "retry_rnr_exceeded_err",
                  "rx_malformed", "rx_bad_opcode", "out_of_sequence",
                  "local_ack_timeout_err", "req_remote_access_errors",
                  "resp_remote_access_errors", "mr_access_faults")


class Run(netns_util.NetRun):
    def __init__(self, rocemud, perf, dropin, module):
        super().__init__("rocemu-embedded-")
        self.rocemud, self.perf = rocemud, perf
        self.dropin, self.module = dropin, module
        self.tcp_port = 19515 + self.pid % 1000

    def config(self, name, role, ip_last):
        """A rocemud config for side `name` of the memif link."""
        d = os.path.join(self.tmp, name)
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "rocemu.yaml")
        netns_util.write_rocemud_config(
            path, f"rocemu-emb-{name}-{self.pid}",
            [netns_util.port(
                "p0", f"net_memif0,role={role},socket=rocemu-emb-{self.pid},"
                "bsize=8192", f"02:00:00:7b:01:0{ip_last}",
                f"10.123.1.{ip_last}/24", 4200)],
            control={"socket": os.path.join(d, "ctl.sock")},
            # Memory locking on, as by default: root's ranks keep
            # CAP_IPC_LOCK under rocemu-run --dev-node (UCX's pools outgrow
            # the 8 MiB RLIMIT_MEMLOCK this sandbox cannot raise).
            verbs={"socket": os.path.join(d, "verbs.sock")},
            logging={"file": os.path.join(d, "rocemu.log")})
        return {"name": name, "config": path, "dir": d,
                "ctl": os.path.join(d, "ctl.sock"),
                "verbs": os.path.join(d, "verbs.sock")}

    def sides(self):
        """Side A (the memif server, 10.123.1.1) and side B (its client)."""
        return self.config("a", "server", 1), self.config("b", "client", 2)

    def env(self, side, progress=None, daemon=False):
        e = dict(os.environ)
        e["LD_LIBRARY_PATH"] = self.dropin
        e.pop("ROCEMU_VERBS_SOCKET", None)
        if daemon:  # a daemon serves this side
            e["ROCEMU_VERBS_SOCKET"] = side["verbs"]
            e.pop("ROCEMU_EMBEDDED", None)
        else:
            e["ROCEMU_EMBEDDED"] = side["config"]
            e["ROCEMU_EMBEDDED_MODULE"] = self.module
        if progress:
            e["ROCEMU_EMBEDDED_PROGRESS"] = progress
        else:
            e.pop("ROCEMU_EMBEDDED_PROGRESS", None)
        return e

    def start(self, ns, argv, env):
        p = subprocess.Popen(["ip", "netns", "exec", ns] + argv, env=env,
                             stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True,
                             start_new_session=True)
        self.procs.append(p)
        return p

    def finish(self, p, deadline):
        try:
            out, _ = p.communicate(timeout=max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, _ = p.communicate()
            out += "\n(timed out)"
        self.procs.remove(p)
        return p.returncode, out

    def pair(self, ns, a, b, server_argv, client_argv, progress=None,
             a_daemon=False, b_daemon=False, during=None, timeout=120):
        """The server on side A (its embedded RNIC up first: a memif client
        joins a running server), then the client on side B; `during(a, b)`
        runs while both are up. Returns (server rc, out, client rc, out)."""
        self.tcp_port += 1
        port = ["-p", str(self.tcp_port)]
        srv = self.start(ns, server_argv + port,
                         self.env(a, progress, daemon=a_daemon))
        if not a_daemon:
            wait_for(a["verbs"], srv)
        cli = self.start(ns, client_argv + port + ["127.0.0.1"],
                         self.env(b, progress, daemon=b_daemon))
        if during is not None:
            wait_for(b["verbs"], cli)
            during(a, b)
        deadline = time.monotonic() + timeout
        crc, cout = self.finish(cli, deadline)
        src, sout = self.finish(srv, deadline)
        return src, sout, crc, cout


def wait_for(path, proc, timeout=20.0):
    """Until the embedded RNIC's socket exists (the program started it)."""
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"no {path} from the program")
        time.sleep(0.02)


def perf_json(out):
    lines = [json.loads(line) for line in out.splitlines()
             if line.startswith("{")]
    return lines[-1] if lines else None


def main():
    args = sys.argv[1:]
    perf_only = args[:1] == ["--perf-only"]
    if perf_only:
        args = args[1:]
    rocemud, perf, dropin, module = (os.path.abspath(p) for p in args[:4])
    if os.geteuid() != 0:
        print("FAIL: the net suite needs root")
        return 1
    r = Run(rocemud, perf, dropin, module)
    start = time.monotonic()
    with netns_util.failures_reported(r):
        ns = r.netns("rocemu-emb")
        a, b = r.sides()

        # rocemu-perf: the verbs library's own API, data verified.
        common = ["--json", "--verify", "--memory=malloc", "--timeout", "60"]
        for test, args, progress in (
                ("write_lat", ["-s", "64", "-n", "2000"], None),
                ("send_lat", ["-s", "4096", "-n", "2000"], None),
                ("write_bw", ["-s", "65536", "-q", "4", "-n", "2000"], None),
                ("read_lat", ["-s", "64", "-n", "1000"], None),
                ("atomic_lat", ["-n", "1000"], None),
                ("send_lat", ["-s", "64", "-n", "2000"], "thread")):
            argv = [perf, test] + args + common
            src, sout, crc, cout = r.pair(ns, a, b, argv + ["-d", DEV],
                                          argv + ["-d", DEV],
                                          progress=progress)
            res = perf_json(cout)
            ok = (src == 0 and crc == 0 and res is not None and
                  res.get("verified") is True and
                  res.get("peer_iterations", res.get("iterations")) ==
                  res.get("iterations_asked"))
            r.check(ok, f"rocemu-perf {test} {' '.join(args)}"
                    f"{' (progress ' + progress + ')' if progress else ''}: "
                    f"server {src}, "
                    f"client {crc}, "
                    f"{'verified' if res and res.get('verified') else res}")
            if not ok:
                netns_util.print_pair_output(sout, cout)

        # While a pair runs, the embedded RNIC serves its control socket;
        # its counters show the traffic and no errors.
        seen = {}

        def counters(a_side, b_side):
            # As soon as both RNICs have moved frames: a fixed wait could
            # outlast the run on a fast host (200000 round trips took
            # 0.7 s on one), and the socket goes with the program.
            deadline = time.monotonic() + 30
            while len(seen) < 2 and time.monotonic() < deadline:
                for side in (a_side, b_side):
                    try:
                        c = netns_util.control(side["ctl"], {"cmd": "counters"},
                                               timeout=10)["ports"]["p0"]
                    except (FileNotFoundError, ConnectionRefusedError):
                        continue  # not up yet, or already gone
                    if c["rnic"]["sent_pkts"] > 0 and \
                            c["rnic"]["rcvd_pkts"] > 0:
                        seen[side["name"]] = c
                time.sleep(0.05)

        # Long enough to outlast the first counters poll: 500000 round
        # trips, ~2 s on a fast host. Under ThreadSanitizer (--perf-only,
        # scripts/tsan.sh) a round trip costs ~20x, and a shared machine
        # made 500000 outlast the pair's 120 s bound.
        iters = "25000" if perf_only else "500000"
        argv = [perf, "send_lat", "-s", "64", "-n", iters, "-d", DEV] + common
        src, sout, crc, cout = r.pair(ns, a, b, argv, argv, during=counters)
        r.check(src == 0 and crc == 0, f"send_lat under rocemu-ctl: server "
                f"{src}, client {crc}")
        for name, c in seen.items():
            rnic = c["rnic"]
            bad = {k: rnic.get(k) for k in ERROR_COUNTERS if rnic.get(k)}
            r.check(c["rx_packets"] > 0 and c["tx_packets"] > 0 and
                    rnic["sent_pkts"] > 0 and rnic["rcvd_pkts"] > 0 and
                    not bad,
                    f"{name}: control socket counters mid-run (rx "
                    f"{c['rx_packets']}, tx {c['tx_packets']}, RNIC sent "
                    f"{rnic['sent_pkts']}, received {rnic['rcvd_pkts']}, "
                    f"errors {bad})")
        r.check(len(seen) == 2, "both embedded RNICs answered rocemu-ctl")
        if perf_only:
            print(f"{time.monotonic() - start:.0f} s")
            return netns_util.verdict(r.failures)

        # Debian's perftest, unmodified, over the drop-in.
        for tool, args, progress in (
                ("ib_send_lat", ["-s", "64", "-n", "2000"], None),
                ("ib_write_bw", ["-s", "4096", "-q", "4", "-n", "2000"], None),
                ("ib_write_lat", ["-s", "64", "-n", "2000"], "thread"),
                ("ib_read_bw", ["-s", "65536", "-n", "500"], "thread")):
            argv = [tool, "-d", DEV, "-x", "0", "-F"] + args
            src, sout, crc, cout = r.pair(ns, a, b, argv, argv,
                                          progress=progress)
            rows = perftest_rows(cout)
            size = int(args[args.index("-s") + 1])
            ok = src == 0 and crc == 0 and size in rows
            r.check(ok, f"{tool} {' '.join(args)}"
                    f"{' (progress ' + progress + ')' if progress else ''}: "
                    f"server {src}, client {crc}, row {rows.get(size)}")
            if not ok:
                netns_util.print_pair_output(sout, cout)

        # One end embedded, the other a daemon: the same wire.
        daemon = netns_util.start_rocemud(ns, rocemud, a["config"],
                                          (a["ctl"], a["verbs"]), "a")
        r.procs.append(daemon)
        argv = [perf, "write_bw", "-s", "4096", "-n", "5000", "-d", DEV] + \
            common
        src, sout, crc, cout = r.pair(ns, a, b, argv, argv, a_daemon=True)
        res = perf_json(cout)
        r.check(src == 0 and crc == 0 and res is not None and
                res.get("verified") is True,
                f"embedded client -> rocemud server: write_bw 4096 "
                f"verified: server {src}, client {crc}")
        if not (src == 0 and crc == 0):
            netns_util.print_pair_output(sout, cout)
        daemon.send_signal(signal.SIGTERM)
        r.check(daemon.wait(timeout=15) == 0, "rocemud: clean exit")
        r.procs.remove(daemon)

        # A memif client up before its server: the daemon on side B starts
        # first and joins each embedded server as it comes, the second one
        # after the first has gone (DPDK's memif client asks only once;
        # the daemon asks again while its link is down).
        open(os.path.join(b["dir"], "rocemu.log"), "w").close()
        daemon = netns_util.start_rocemud(ns, rocemud, b["config"],
                                          (b["ctl"], b["verbs"]), "b")
        r.procs.append(daemon)
        for round_ in (1, 2):
            argv = [perf, "send_lat", "-s", "64", "-n", "2000", "-d", DEV] + \
                common
            src, sout, crc, cout = r.pair(ns, a, b, argv, argv,
                                          b_daemon=True)
            r.check(src == 0 and crc == 0,
                    f"rocemud memif client started before its server, "
                    f"server {round_}: server {src}, client {crc}")
            if not (src == 0 and crc == 0):
                netns_util.print_pair_output(sout, cout)
        daemon.send_signal(signal.SIGTERM)
        r.check(daemon.wait(timeout=15) == 0, "rocemud (memif client): "
                "clean exit")
        r.procs.remove(daemon)
        with open(os.path.join(b["dir"], "rocemu.log")) as f:
            log = f.read()
        r.check("no memif server" in log and log.count("memif link up") >= 2,
                "rocemud's log: no server at start, then the link up with "
                f"each server ({log.count('memif link up')} times)")

        # A program that loads libibverbs with dlopen (Python here; UCX
        # loads its InfiniBand module so): the library's constructor runs
        # under the dynamic loader's lock, which the RNIC's start needs.
        # A child forked at once (the start still running in the parent)
        # must not hang in a verbs call or at its exit; it finds the
        # parent's device or none.
        probe = ("import ctypes, os\n"
                 "v = ctypes.CDLL('libibverbs.so.1')\n"
                 "v.ibv_get_device_list.restype = "
                 "ctypes.POINTER(ctypes.c_void_p)\n"
                 "v.ibv_get_device_name.restype = ctypes.c_char_p\n"
                 "v.ibv_get_device_name.argtypes = [ctypes.c_void_p]\n"
                 "def names():\n"
                 "    n = ctypes.c_int()\n"
                 "    l = v.ibv_get_device_list(ctypes.byref(n))\n"
                 "    return [v.ibv_get_device_name(l[i]).decode() "
                 "for i in range(n.value)]\n"
                 "pid = os.fork()\n"
                 "if pid == 0:\n"
                 "    print('child', len(names()), flush=True)\n"
                 "    os._exit(0)\n"
                 "os.waitpid(pid, 0)\n"
                 "print(names())\n")
        try:
            out = subprocess.run(["ip", "netns", "exec", ns, sys.executable,
                                  "-c", probe], env=r.env(a),
                                 capture_output=True, text=True, timeout=30)
            text, status = out.stdout + out.stderr, out.returncode
        except subprocess.TimeoutExpired:
            text, status = "(hung: 30 s)", None
        r.check(status == 0 and repr([DEV]) in text and "child" in text,
                f"libibverbs loaded by dlopen (ctypes): status {status}, "
                f"{text.strip()[-300:]}")

        # Bad input: a clear word, no device, no crash.
        bad_cfg = os.path.join(r.tmp, "bad.yaml")
        with open(bad_cfg, "w") as f:
            f.write("ports: [{name: p0, devargs: 7, mtu: -1}]\n")
        cases = (
            ({"ROCEMU_EMBEDDED": bad_cfg}, "bad.yaml"),
            ({"ROCEMU_EMBEDDED": a["config"],
              "ROCEMU_EMBEDDED_PROGRESS": "sometimes"},
             "ROCEMU_EMBEDDED_PROGRESS"),
            ({"ROCEMU_EMBEDDED": a["config"],
              "ROCEMU_EMBEDDED_MODULE": os.path.join(r.tmp, "none.so")},
             "none.so"),
        )
        for extra, word in cases:
            e = r.env(a)
            e.update(extra)
            out = subprocess.run(["ip", "netns", "exec", ns, "ibv_devices"],
                                 env=e, capture_output=True, text=True,
                                 timeout=60)
            text = out.stdout + out.stderr
            r.check(out.returncode in (0, 1) and DEV not in out.stdout and
                    word in text,
                    f"ibv_devices with {extra}: status {out.returncode}, "
                    f"no device, says {word!r}")
            if word not in text:
                print(text[-800:])
    print(f"{time.monotonic() - start:.0f} s")
    return netns_util.verdict(r.failures)


if __name__ == "__main__":
    sys.exit(main())
