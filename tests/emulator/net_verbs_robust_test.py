#!/usr/bin/env python3
"""Robustness of the verbs attach point, over two real rocemud daemons
joined by a veth pair, with clients (tests/verbs/verbs_probe) attached
through each daemon's verbs socket:

(a) a client SIGKILLed mid-transfer: K on daemon A streams RC SENDs both
    ways with P on daemon B while a second pair K2/P2 does the same. After
    SIGKILL of K, daemon A must show within 1 s that K's client, PD, MR, CQ
    and QP are gone and its QP was flushed; P (which sends as well as
    receives) must get an error completion; K2/P2 must go on byte-exact
    before, during and after, and end cleanly.
(b) isolation between uids: U1 (root) holds an MR and a QP; U2 (uid 65534)
    uses U1's L_Key in its own work requests (read into, write from,
    receive into U1's memory), U1's R_Key from daemon B (write, read), and
    U1's QPN and MR keys on the control socket; each next to a positive
    control of the same operation on U2's own objects. U1's memory, MR and
    QP must come out intact. Then daemon B restarted with allowed_uids [0]
    refuses a uid-65534 client at connect and still takes root.
Bounded in time; always cleans up.
Usage: net_verbs_robust_test.py ROCEMUD VERBS_PROBE
"""
import errno
import json
import os
import signal
import subprocess
import sys
import threading
import time

import netns_util
from netns_util import control

NOBODY = 65534
IBV_WC_SUCCESS = 0
IBV_WC_WR_FLUSH_ERR = 5
IBV_WC_RETRY_EXC_ERR = 12


def sh(*cmd, ns=None, check=True, timeout=30):
    return netns_util.sh(*cmd, ns=ns, check=check, timeout=timeout)


class Probe:
    """A verbs_probe process whose JSON lines are collected by a thread."""

    def __init__(self, name, argv, uid=None):
        self.name = name
        if uid is not None:
            argv = ["setpriv", f"--reuid={uid}", f"--regid={uid}",
                    "--clear-groups"] + argv
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        self.events = []
        self.raw = []
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.proc.stdout:
            line = line.strip()
            try:
                ev = json.loads(line)
            except ValueError:
                with self.lock:
                    self.raw.append(line)
                continue
            with self.lock:
                self.events.append(ev)

    def find(self, event):
        with self.lock:
            return [e for e in self.events if e.get("event") == event]

    def last(self, event):
        found = self.find(event)
        return found[-1] if found else None

    def recv(self):
        p = self.last("progress")
        return p["recv"] if p else 0

    def recv_at(self, t):
        """Messages received by monotonic time t (the probe's progress
        lines carry CLOCK_MONOTONIC, the clock of time.monotonic())."""
        seen = [e["recv"] for e in self.find("progress") if e["t"] <= t]
        return seen[-1] if seen else 0

    def wait(self, timeout):
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
            print(f"     {self.name}: killed after {timeout} s")
        self.thread.join(timeout=5)
        return rc

    def dump(self):
        with self.lock:
            for e in self.events:
                if e.get("event") != "progress":
                    print(f"     {self.name}: {json.dumps(e)}")
            for line in self.raw[-20:]:
                print(f"     {self.name} (raw): {line}")


class Daemon:
    def __init__(self, name, ns, sock, verbs, proc, ip, cfg):
        self.name, self.ns, self.sock, self.verbs = name, ns, sock, verbs
        self.proc, self.ip, self.cfg = proc, ip, cfg

    def verbs_state(self):
        r = control(self.sock, {"cmd": "counters"}, timeout=10)
        if "error" in r:
            raise AssertionError(f"{self.name}: counters: {r['error']}")
        return r["ports"]["p0"]

    def client(self, state, client_id):
        for c in state["verbs"]["clients"]:
            if c["id"] == client_id:
                return c
        return None


class Run(netns_util.NetRun):
    def __init__(self, rocemud, probe):
        # uid 65534 must reach the verbs sockets and read U1's info file.
        super().__init__("rocemu-robust-", world_readable=True)
        self.rocemud, self.probe = rocemud, probe
        self.daemons, self.probes = [], []


    def subdir(self, name):
        d = os.path.join(self.tmp, name)
        os.mkdir(d)
        os.chmod(d, 0o755)
        return d

    def start(self, ns, name, dev, mac, ip):
        sock = os.path.join(self.tmp, f"{name}.ctl")
        verbs = os.path.join(self.tmp, f"{name}.verbs")
        cfg = os.path.join(self.tmp, f"{name}.yaml")
        netns_util.write_rocemud_config(
            cfg, f"rocemu-robust-{name}-{self.pid}",
            [netns_util.port(
                "p0", f"net_af_packet0,iface={dev},framesz=8192,blocksz=8192",
                mac, f"{ip}/24", 4200)],
            control={"socket": sock},
            verbs={"socket": verbs, "socket_mode": "0666"},
            logging={"file": f"{self.tmp}/{name}.log"})
        return self.launch(Daemon(name, ns, sock, verbs, None, ip, cfg))

    def launch(self, d):
        for path in (d.sock, d.verbs):
            if os.path.exists(path):
                os.unlink(path)
        d.proc = netns_util.start_rocemud(d.ns, self.rocemud, d.cfg,
                                          (d.sock, d.verbs), d.name,
                                          "control/verbs socket", timeout=15)
        self.daemons.append(d)
        return d

    def stop(self, d):
        rc = netns_util.stop_rocemud(d.proc)
        self.daemons.remove(d)
        self.check(rc == 0, f"{d.name}: clean exit on SIGTERM (status {rc})")

    def run_probe(self, label, cmd, uid=None, **flags):
        argv = [self.probe, cmd] + [f"--{k}={v}" for k, v in flags.items()]
        p = Probe(label, argv, uid)
        self.probes.append(p)
        return p

    def cleanup(self):
        for p in self.probes:
            if p.proc.poll() is None:
                p.proc.kill()
                p.proc.wait()
        self.procs[:] = [d.proc for d in self.daemons]
        super().cleanup()


def wait_for(what, predicate, timeout=20.0):
    return netns_util.wait_for(what, predicate, timeout)


def setup(r):
    na, nb = r.netns("robust-a"), r.netns("robust-b")
    va, vb = f"rba{r.pid % 100000}", f"rbb{r.pid % 100000}"
    sh("ip", "link", "add", va, "netns", na, "type", "veth", "peer", "name",
       vb, "netns", nb)
    for ns, dev in ((na, va), (nb, vb)):
        sh("ip", "link", "set", dev, "mtu", "9000", ns=ns)
        sh("ip", "link", "set", dev, "up", ns=ns)
    a = r.start(na, "a", va, "02:00:00:79:01:01", "10.79.1.1")
    b = r.start(nb, "b", vb, "02:00:00:79:01:02", "10.79.1.2")
    return a, b


def stream(r, name, peer, sock, d, seed, **extra):
    return r.run_probe(name, "stream", socket=sock, dir=d, name=name,
                       peer=peer, seed=seed, seconds=90, **extra)


def sigkill_part(r, a, b):
    print("--- (a) a client SIGKILLed mid-transfer")
    d1, d2 = r.subdir("pair1"), r.subdir("pair2")
    # ACK timeout 2^16 * 4.096 us = 268 ms, 3 retries: P's SENDs end in
    # RETRY_EXC_ERR about a second after K's QP stops answering, long
    # enough to see K2/P2 carry on while K is dead and P not yet told.
    k = stream(r, "K", "P", a.verbs, d1, 1, timeout=16)
    p = stream(r, "P", "K", b.verbs, d1, 2, timeout=16, expect_error="true")
    # The second pair leaves its address vectors' MAC to the daemons.
    k2 = stream(r, "K2", "P2", a.verbs, d2, 3, zero_dmac="true")
    p2 = stream(r, "P2", "K2", b.verbs, d2, 4, zero_dmac="true")
    try:
        wait_for("both pairs streaming",
                 lambda: all(x.recv() >= 50 for x in (k, p, k2, p2)) or
                 any(x.proc.poll() is not None for x in (k, p, k2, p2)),
                 timeout=30)
    except AssertionError:
        pass
    streaming = all(x.recv() >= 50 for x in (k, p, k2, p2))
    if not r.check(streaming, "K/P and K2/P2 stream SENDs both ways (" +
                   ", ".join(f"{x.name} recv {x.recv()}"
                             for x in (k, p, k2, p2)) + ")"):
        for x in (k, p, k2, p2):
            x.dump()
        raise AssertionError("streams did not start")
    kr = k.last("ready")
    kid, kqpn = kr["client_id"], kr["qpn"]
    before = a.verbs_state()
    kc = a.client(before, kid)
    r.check(kc is not None and kc["pid"] == k.proc.pid and
            len(kc["pds"]) == 1 and len(kc["mrs"]) == 1 and
            len(kc["cqs"]) == 1 and
            [q["qpn"] for q in kc["qps"]] == [kqpn] and
            kc["qps"][0]["state"] == "RTS",
            f"daemon A shows K (client {kid}, pid {k.proc.pid}) with its PD, "
            f"MR, CQ and QP {kqpn} in RTS: {json.dumps(kc)}")
    r.check(str(kqpn) in before["rnic"]["qps"],
            f"QP {kqpn} is in daemon A's RNIC")
    vc0 = before["verbs"]["counters"]

    t_kill = time.monotonic()
    os.kill(k.proc.pid, signal.SIGKILL)
    k.wait(5)

    def gone():
        s = a.verbs_state()
        if a.client(s, kid) is not None:
            return None
        if any(q["qpn"] == kqpn for c in s["verbs"]["clients"]
               for q in c["qps"]):
            return None
        if str(kqpn) in s["rnic"]["qps"]:
            return None
        return s

    # The daemon learns of the death from the socket and frees K's
    # objects; the deadline only stops the wait. That it did so while P
    # was still retrying is read from the wire below (rx_unknown_qp), not
    # from the clock.
    try:
        after = wait_for("daemon A to free K's objects", gone, timeout=30)
    except AssertionError:
        after = None
    r.check(after is not None,
            f"daemon A freed K's client, PD, MR, CQ and QP {kqpn} after "
            "SIGKILL")
    if after:
        vc = after["verbs"]["counters"]
        r.check(vc["qps_flushed"] == vc0["qps_flushed"] + 1 and
                vc["clients_closed"] == vc0["clients_closed"] + 1,
                f"K's QP was flushed (qps_flushed {vc0['qps_flushed']} -> "
                f"{vc['qps_flushed']}, clients_closed "
                f"{vc0['clients_closed']} -> {vc['clients_closed']})")
        others = sorted(c["id"] for c in after["verbs"]["clients"])
        r.check(others == sorted([k2.last("ready")["client_id"]]),
                f"daemon A's remaining verbs clients: {others} (K2 only)")

    prc = p.wait(30)
    err = p.last("error_wc")
    later = {}
    for e in p.find("later_wc"):
        st = e["wc"]["status_str"]
        later[st] = later.get(st, 0) + 1
    status = err["wc"]["status_str"] if err else None
    r.check(prc == 0 and err is not None and
            err["wc"]["status"] == IBV_WC_RETRY_EXC_ERR,
            f"P got an error completion after the kill: {status} "
            f"(opcode {err['wc']['opcode'] if err else None}, after "
            f"{err['sent'] if err else '?'} SENDs and "
            f"{err['recv'] if err else '?'} receives), then {later}")
    r.check(err is not None and err["recv"] >= p.recv() and
            all(e["wc"]["status"] == IBV_WC_WR_FLUSH_ERR
                for e in p.find("later_wc")),
            "P's remaining work requests were flushed")
    if prc != 0 or err is None:
        p.dump()
    # Order: P's requests met no QP on daemon A before they gave up, so
    # K's QP was gone while P still retried (a QP kept alive would have
    # acknowledged them into K's posted receives, and P would see no
    # error at all).
    unknown0 = before["rnic"]["rx_unknown_qp"]
    unknown = a.verbs_state()["rnic"]["rx_unknown_qp"]
    r.check(unknown - unknown0 >= 1,
            f"daemon A dropped P's retransmissions to the vanished QP {kqpn} "
            f"before P gave up (rx_unknown_qp {unknown0} -> {unknown})")

    # The second pair: before the kill, while K is dead and P not yet
    # told, after; then a clean end with every message accounted for.
    t_err = err["t"] if err else time.monotonic()
    at_kill = [x.recv_at(t_kill) for x in (k2, p2)]
    at_err = [x.recv_at(t_err) for x in (k2, p2)]
    try:
        wait_for("K2/P2 progress after the kill",
                 lambda: min(k2.recv() - at_err[0], p2.recv() - at_err[1])
                 >= 100 or k2.proc.poll() is not None or
                 p2.proc.poll() is not None, timeout=30)
    except AssertionError:
        pass
    with open(os.path.join(d2, "stop"), "w"):
        pass
    rc2, rcp2 = k2.wait(30), p2.wait(30)
    done2, donep2 = k2.last("done"), p2.last("done")
    end = [done2["recv"] if done2 else 0, donep2["recv"] if donep2 else 0]
    r.check(min(at_kill) >= 50 and at_err[0] > at_kill[0] and
            at_err[1] > at_kill[1] and end[0] >= at_err[0] + 100 and
            end[1] >= at_err[1] + 100 and rc2 == 0 and rcp2 == 0,
            f"K2/P2 kept streaming byte-exact and in order: messages "
            f"received (K2, P2) {at_kill} at the kill, {at_err} at P's error "
            f"{(t_err - t_kill) * 1000:.0f} ms later, {end} at the end; "
            f"exit {rc2}/{rcp2}")
    if rc2 != 0 or rcp2 != 0:
        k2.dump()
        p2.dump()
    # K2 has exited: its EOF reaches the daemon's next control poll.
    def empty():
        s = a.verbs_state()
        return s["verbs"]["clients"] == [] and s["rnic"]["qps"] == {}
    try:
        left = wait_for("daemon A empty", empty, timeout=20)
    except AssertionError:
        left = False
    r.check(left, "daemon A holds no verbs clients and no QPs once the "
            "last client has left")


def isolation_part(r, a, b):
    print("--- (b) a client of another uid cannot use U1's MRs or QPs")
    d = r.subdir("iso")
    u1 = r.run_probe("U1", "victim", socket=a.verbs, socket2=b.verbs, dir=d,
                     name="u1", seed=5, seconds=60)
    wait_for("U1 ready", lambda: u1.last("ready") or
             u1.proc.poll() is not None, timeout=20)
    ready = u1.last("ready")
    if not r.check(ready is not None, "U1 (root) holds an MR and a QP"):
        u1.dump()
        raise AssertionError("victim did not start")
    v0 = a.verbs_state()["verbs"]["counters"]
    u2 = r.run_probe("U2", "attacker", uid=NOBODY, socket=a.verbs,
                     socket2=b.verbs, dir=d, peer="u1", seed=9, seconds=60)
    rc = u2.wait(60)
    u2r = u2.last("ready")
    r.check(u2r is not None and u2r["uid"] == NOBODY,
            f"U2 attached as uid {u2r['uid'] if u2r else '?'}")
    checks = u2.find("check")
    for c in checks:
        r.check(c["ok"], f"U2 {c['check']}: {json.dumps(c['saw'])}")
    r.check(rc == 0 and len(checks) == 15 and u2.last("attacker_done"),
            f"U2 ran all 15 checks (exit {rc}, {len(checks)} reported)")
    if rc != 0 or len(checks) != 15:
        u2.dump()

    s = a.verbs_state()
    vc = s["verbs"]["counters"]
    r.check(vc["lkey_violations"] - v0["lkey_violations"] == 3,
            f"daemon A counted U2's 3 foreign L_Key work requests "
            f"(lkey_violations {v0['lkey_violations']} -> "
            f"{vc['lkey_violations']})")
    c1 = a.client(s, ready["client_id"])
    r.check(c1 is not None and c1["uid"] == 0 and
            len(c1["mrs"]) == 1 and
            c1["mrs"][0]["key"] in (ready["lkey"], ready["rkey"]) and
            [(q["qpn"], q["state"]) for q in c1["qps"]] ==
            [(ready["qpn"], "RTS")],
            f"U1 still holds its MR {ready['rkey']} and QP {ready['qpn']} in "
            f"RTS: {json.dumps(c1)}")
    with open(os.path.join(d, "u1.stop"), "w"):
        pass
    rc = u1.wait(30)
    fin = u1.last("victim_final")
    r.check(rc == 0 and fin is not None and fin["memory_intact"] and
            fin["qp_state"] == 3 and fin["read_back_ok"],
            f"U1's memory is unchanged, its QP is in RTS and a READ through "
            f"its R_Key from daemon B returns its pattern: {json.dumps(fin)}")
    if rc != 0:
        u1.dump()


def allowed_uids_part(r, b):
    print("--- (b) allowed_uids [0] refuses uid 65534 at connect")
    r.stop(b)
    with open(b.cfg) as f:
        cfg = json.load(f)  # netns_util.write_rocemud_config's JSON
    cfg["verbs"]["allowed_uids"] = [0]
    eal = cfg.pop("eal")
    netns_util.write_rocemud_config(b.cfg, eal.pop("file_prefix"),
                                    cfg.pop("ports"), eal=eal, **cfg)
    r.launch(b)
    nobody = r.run_probe("open-65534", "open", uid=NOBODY, socket=b.verbs)
    rc = nobody.wait(20)
    o = nobody.last("open")
    r.check(rc == 3 and o is not None and not o["ok"] and
            o["errno"] in (errno.EACCES, errno.EPERM),
            f"uid 65534 refused at connect: {json.dumps(o)} (exit {rc}; "
            f"want EACCES or EPERM)")
    root = r.run_probe("open-root", "open", socket=b.verbs)
    rc = root.wait(20)
    o = root.last("open")
    r.check(rc == 0 and o is not None and o["ok"],
            f"root (uid 0) still attaches: {json.dumps(o)}")
    vc = b.verbs_state()["verbs"]["counters"]
    r.check(vc["clients_refused"] == 1 and vc["clients_accepted"] == 1,
            f"daemon B counted 1 refused and 1 accepted client "
            f"({vc['clients_refused']}, {vc['clients_accepted']})")


def main():
    rocemud, probe = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    if os.geteuid() != 0:
        print("FAIL: the net suite needs root")
        return 1
    r = Run(rocemud, probe)
    errors = netns_util.TEST_ERRORS + (TypeError,)
    with netns_util.failures_reported(r, errors):
        a, b = setup(r)
        sigkill_part(r, a, b)
        isolation_part(r, a, b)
        allowed_uids_part(r, b)
    return netns_util.verdict(r.failures)


if __name__ == "__main__":
    sys.exit(main())
