#!/usr/bin/env python3
"""rocemu-pingpong between two rocemud daemons over a veth pair (af_packet
on both ends, in network namespaces this test creates), each tool attached
to its own daemon through the daemon's verbs socket:
  rc and ud, 64 B and 4096 B (rc with -m 1024: SEND_FIRST/MIDDLE/LAST),
  server on either daemon, busy polling and -e (completion channel),
  -o (malloc'd memory registered as process memory), RoCEv2 over IPv6
  (-g 1), the device by path, by name and by default, --verify on both
  sides (every byte of every message).
Checked: both sides exit 0, print the ibv_*_pingpong lines with each
other's QPN/PSN/GID and size * iters * 2 bytes, verify reports every
message byte-exact; the daemons' tx/rx captures pass
../shared/oracle/check_pcap.py --strict, and for every run the frames show
the announced PSNs, the right opcode sequence and payload (RC) or Q_Key
0x11111111 and the sender's QPN in DETH (UD). Bad input: a client facing a
peer that sent no GID, ud with a message larger than the port MTU and an
unknown device name fail cleanly. Bounded in time; always cleans up.
Usage: net_pingpong_test.py ROCEMUD ROCEMU_PINGPONG SHARED_DIR
"""
import os
import subprocess
import sys
import time

import netns_util

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "interop"))
import pingpong_wire  # noqa: E402

ITERS = 20


class Test(netns_util.NetRun):
    def __init__(self, rocemud, pingpong, shared):
        super().__init__("rocemu-pingpong-")
        self.rocemud, self.pingpong, self.shared = rocemud, pingpong, shared


    def start_daemon(self, ns, name, iface, mac, ip, ip6):
        # One directory per daemon: a device name (both are "rocemu_p0")
        # is then looked up among one daemon's sockets.
        os.makedirs(os.path.join(self.tmp, name))
        sock = os.path.join(self.tmp, name, "verbs.sock")
        ctl = os.path.join(self.tmp, f"{name}.ctl.sock")
        cfg = os.path.join(self.tmp, f"{name}.yaml")
        netns_util.write_rocemud_config(
            cfg, f"rocemu-pp{name}-{self.pid}",
            [netns_util.port(
                "p0", f"net_af_packet0,iface={iface},framesz=8192,blocksz=8192",
                mac, [f"{ip}/24", f"{ip6}/64"], 4200)],
            capture={"enabled": True,
                     "rx_path": f"{self.tmp}/{name}-{{port}}-rx.pcap",
                     "tx_path": f"{self.tmp}/{name}-{{port}}-tx.pcap",
                     "rotate_mb": 0},
            control={"socket": ctl}, verbs={"socket": sock},
            logging={"file": f"{self.tmp}/{name}.log"})
        p = netns_util.start_rocemud(ns, self.rocemud, cfg, sock, name,
                                     f"verbs socket {sock}", timeout=15)
        self.procs.append(p)
        return dict(name=name, sock=sock, proc=p, ip=ip, ip6=ip6)

    def stop_daemon(self, d):
        rc = netns_util.stop_rocemud(d["proc"])
        self.procs.remove(d["proc"])
        self.check(rc == 0, f"{d['name']}: clean exit on SIGTERM ({rc})")

    def tool(self, ns, daemon, args, server=None, device="path"):
        """-d as a socket path, -d as the device name (found among the
        sockets of $ROCEMU_VERBS_DIR), or no -d (the first device:
        $ROCEMU_VERBS_SOCKET)."""
        env = dict(os.environ)
        env.pop("ROCEMU_VERBS_SOCKET", None)
        dev = []
        if device == "path":
            dev = ["-d", daemon["sock"]]
        elif device == "name":
            dev = ["-d", "rocemu_p0"]
            env["ROCEMU_VERBS_DIR"] = os.path.dirname(daemon["sock"])
        else:
            env["ROCEMU_VERBS_SOCKET"] = daemon["sock"]
        cmd = ["ip", "netns", "exec", ns, self.pingpong, *args, *dev,
               "--timeout=20"]
        if server:
            cmd.append(server)
        return subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env)


def listening(ns, port):
    out = netns_util.sh("ss", "-Hltn", f"sport = :{port}", ns=ns,
                        check=False).stdout
    return str(port) in out


def run_case(t, ns, srv, cli, transport, size, extra, port, device="path"):
    """One server/client run; returns what the wire check needs."""
    args = [transport, "-g", "0", "-s", str(size), "-n", str(ITERS), "-p",
            str(port), "--verify", *extra]
    if transport == "rc":
        args += ["-m", "1024"]
    ps = t.tool(ns, srv, args, device=device)
    netns_util.wait_for(f"server listening on {port}",
                        lambda: listening(ns, port) or ps.poll() is not None)
    pc = t.tool(ns, cli, args, server="127.0.0.1", device=device)
    outs = []
    for p in (ps, pc):
        try:
            out, err = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        outs.append((p.returncode, out, err))
    label = (f"{transport} {size} B {' '.join(extra) or 'poll'} "
             f"({srv['name']} server, {cli['name']} client, device by "
             f"{device})")
    ok = t.check(outs[0][0] == 0 and outs[1][0] == 0,
                 f"{label}: both sides exit 0 (server {outs[0][0]}, "
                 f"client {outs[1][0]})")
    if not ok:
        for rc, out, err in outs:
            print("     | " + (out + err).replace("\n", "\n     | "))
    server, client = (pingpong_wire.parse_output(o[1]) for o in outs)
    fails = pingpong_wire.check_outputs(server, client, size, ITERS)
    t.check(not fails, f"{label}: address and result lines agree"
            + ("" if not fails else ": " + "; ".join(fails)))
    # GID index 0 is the daemon's IPv4 address, 1 its IPv6 one.
    v6 = "-g" in extra
    want = (lambda d: d["ip6"]) if v6 else (lambda d: f"::ffff:{d['ip']}")
    t.check(server.get("local", {}).get("gid") == want(srv) and
            client.get("local", {}).get("gid") == want(cli),
            f"{label}: each side sends its daemon's GID (index "
            f"{1 if v6 else 0})")
    verified = all(f"verify: {ITERS} messages received, all byte-exact" in o[1]
                   for o in outs)
    t.check(verified, f"{label}: --verify: every message byte-exact")
    return dict(transport=transport, size=size, server=server, client=client,
                label=label)


def bad_input(t, ns, a, b):
    # A peer without -g sends an all-zero GID: RoCE cannot reach it.
    port = 18600
    ps = t.tool(ns, a, ["rc", "-s", "64", "-n", "2", "-p", str(port)])
    netns_util.wait_for("server listening",
                        lambda: listening(ns, port) or ps.poll() is not None)
    pc = t.tool(ns, b, ["rc", "-g", "0", "-s", "64", "-n", "2", "-p",
                        str(port)], server="127.0.0.1")
    out_c, err_c = pc.communicate(timeout=30)
    out_s, err_s = ps.communicate(timeout=30)
    t.check(pc.returncode == 1 and "sent no GID" in err_c and
            ps.returncode != 0,
            f"a peer without -g: the client refuses (rc {pc.returncode}: "
            f"{err_c.strip().splitlines()[-1] if err_c.strip() else ''}), "
            f"the server fails too (rc {ps.returncode})")
    p = t.tool(ns, a, ["ud", "-g", "0", "-s", "8192", "-n", "1"])
    out, err = p.communicate(timeout=30)
    t.check(p.returncode == 1 and
            "Requested size larger than port MTU (4096)" in err,
            f"ud -s 8192 on a 4096 MTU port refused: {err.strip()}")
    p = t.tool(ns, a, ["rc", "-d", "rocemu_nope", "-n", "1"], device="none")
    out, err = p.communicate(timeout=30)
    t.check(p.returncode == 1 and "IB device rocemu_nope not found" in err,
            f"an unknown device name refused: {err.strip()}")


def main():
    rocemud, pingpong, shared = (os.path.abspath(a) for a in sys.argv[1:4])
    if os.geteuid() != 0:
        print("FAIL: the net suite needs root")
        return 1
    t = Test(rocemud, pingpong, shared)
    with netns_util.failures_reported(t):
        na, nb = t.netns("rocemu-ppa"), t.netns("rocemu-ppb")
        va, vb = f"ppa{t.pid % 100000}", f"ppb{t.pid % 100000}"
        netns_util.sh("ip", "link", "add", va, "netns", na, "type", "veth",
                      "peer", "name", vb, "netns", nb)
        for ns, dev in ((na, va), (nb, vb)):
            netns_util.sh("ip", "link", "set", dev, "mtu", "9000", ns=ns)
            netns_util.sh("ip", "link", "set", dev, "up", ns=ns)
        a = t.start_daemon(na, "a", va, "02:00:00:78:03:01", "10.78.3.1",
                           "fd78:3::1")
        b = t.start_daemon(nb, "b", vb, "02:00:00:78:03:02", "10.78.3.2",
                           "fd78:3::2")
        # Both tools run in namespace A and exchange addresses over its
        # loopback; their RDMA traffic goes through the daemons and the veth.
        cases = [("rc", 64, [], a, b, "path"), ("rc", 4096, [], b, a, "name"),
                 ("rc", 4096, ["-e"], a, b, "default"),
                 ("ud", 64, [], b, a, "name"),
                 ("ud", 4096, [], a, b, "path"),
                 ("ud", 4096, ["-e", "-r", "4"], b, a, "default"),
                 ("rc", 64, ["-c", "-r", "2"], b, a, "path"),
                 # -o: malloc'd buffers, reached by the daemon with
                 # process_vm_readv/writev instead of shared memory.
                 ("rc", 4096, ["-o"], a, b, "path"),
                 # RoCEv2 over IPv6: GID index 1.
                 ("rc", 4096, ["-g", "1"], b, a, "path"),
                 ("ud", 1024, ["-g", "1"], a, b, "path")]
        runs = []
        for i, (tr, size, extra, srv, cli, dev) in enumerate(cases):
            runs.append(run_case(t, na, srv, cli, tr, size, extra, 18515 + i,
                                 dev))
        bad_input(t, na, a, b)
        time.sleep(0.2)
        t.stop_daemon(b)
        t.stop_daemon(a)
        frames = []
        for name in ("a", "b"):
            for d in ("tx", "rx"):
                path = f"{t.tmp}/{name}-p0-{d}.pcap"
                rc, summary, fr = pingpong_wire.decode(shared, path,
                                                       ["--strict"])
                t.check(rc == 0, f"check_pcap {name} {d}: {summary}")
                if d == "tx":  # each frame once: a's tx + b's tx
                    frames += fr
        for r in runs:
            fails = pingpong_wire.check_wire(frames, r["transport"], r["size"],
                                             ITERS, 1024 if r["transport"] ==
                                             "rc" else 4096, r["server"],
                                             r["client"])
            t.check(not fails, f"{r['label']}: wire as ibv_{r['transport']}"
                    f"_pingpong" + ("" if not fails else ": " +
                                    "; ".join(fails)))
    return netns_util.verdict(t.failures)


if __name__ == "__main__":
    sys.exit(main())
