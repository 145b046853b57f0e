#!/usr/bin/env python3
"""Say why (issue 36) with Debian's unmodified programs over the drop-in
libibverbs, between two rocemud daemons on a veth pair, each capturing
both directions into one pcapng and dumping failed QPs:

  short receive buffer: ibv_rc_pingpong -s 4096 against a server whose
      receives hold 64 bytes: the server's RNIC NAKs the SEND
      (recv_too_short), the client's WR fails with REM_INV_REQ_ERR;
  wrong R_Key: ib_write_bw writing 64 KiB into a server that registered
      4 KiB: the server's RNIC NAKs the first WRITE (rkey_bounds, the MR's
      bounds in words), the client's WR fails with REM_ACCESS_ERR;
  a peer that stops answering: ib_write_bw (one WRITE in flight) while
      the server's daemon is stopped (SIGSTOP): the client's QP is killed
      by retry_exceeded;
      its flight recorder's dump (log, dump file, rocemu-ctl qp N --why)
      shows the transmissions and the timeouts waiting for their ACKs;
  P_Key mismatch: the server's daemon restarted with P_Key 0x8001 at
      index 0: every frame of the client's is dropped (bad_pkey, both keys
      in words) and the client's QP ends in retry_exceeded.

Checked with tshark as the oracle: the frame the RNIC acted on carries the
verdict (frame.verdict.hw: the reason's code in nic/drop_reason.h) and the
words, the NAK names that frame's packet id (frame.packet_id), the error
completion's log line names it too; the per-reason counters (rocemu-ctl
counters --drops) moved by exactly the frames that carry the verdict and
agree with the rxe/mlx5 counters; `rocemu-ctl why` lists the failed QPs;
Wireshark's dissector and ../shared/oracle's checkers find nothing
malformed in the captures and the dumps.

Usage: net_why_test.py ROCEMUD DROPIN_DIR ROCEMU_CTL SHARED_DIR DROP_REASON_H
"""
import json
import os
import re
import signal
import subprocess
import sys
import time

import netns_util
from netns_util import sh

DEV = "rocemu_p0"


def reason_codes(header):
    """{name: code}: a reason's code is its position in the X-macro table."""
    names = re.findall(r"X\(k\w+,\s*(\w+),", open(header).read())
    assert names and names[0] == "none", header
    return {n: i for i, n in enumerate(names)}


class Run(netns_util.NetRun):
    def __init__(self, rocemud, dropin, ctl, shared, header):
        super().__init__("rocemu-why-", world_readable=True)
        self.rocemud, self.dropin, self.ctl = rocemud, dropin, ctl
        self.shared = shared
        self.codes = reason_codes(header)
        self.names = {v: k for k, v in self.codes.items()}
        self.port = 19515 + self.pid % 1000

    def daemon(self, ns, name, iface, mac, ip, pkeys=None):
        d = os.path.join(self.tmp, name)
        os.makedirs(d, exist_ok=True)
        ctl = os.path.join(d, "ctl.sock")
        verbs = os.path.join(d, "verbs.sock")
        cfg = os.path.join(d, "rocemud.yaml")
        cap = os.path.join(d, "p0.pcapng")
        more = {"pkeys": pkeys} if pkeys else {}
        netns_util.write_rocemud_config(
            cfg, f"rocemu-why-{name}-{self.pid}",
            [netns_util.port(
                "p0", f"net_af_packet0,iface={iface},framesz=8192,"
                "blocksz=8192", mac, f"{ip}/24", 4200, **more)],
            control={"socket": ctl, "prometheus_port": 9464},
            verbs={"socket": verbs},
            logging={"file": f"{d}/rocemud.log"},
            capture={"enabled": True, "format": "pcapng", "rx_path": cap,
                     "tx_path": cap, "rotate_mb": 0},
            recorder={"dump_dir": f"{d}/why", "log_per_second": 1000})
        p = netns_util.start_rocemud(ns, self.rocemud, cfg, (ctl, verbs), name,
                                     timeout=60)
        self.procs.append(p)
        return {"name": name, "ns": ns, "ctl": ctl, "verbs": verbs, "proc": p,
                "ip": ip, "cap": cap, "log": f"{d}/rocemud.log",
                "why": f"{d}/why"}

    def stop(self, d):
        if d["proc"].poll() is None:
            d["proc"].send_signal(signal.SIGCONT)
            netns_util.stop_rocemud(d["proc"])
        self.procs.remove(d["proc"])

    def tool(self, ns, daemon, argv):
        env = dict(os.environ)
        env["LD_LIBRARY_PATH"] = self.dropin
        env["ROCEMU_VERBS_SOCKET"] = daemon["verbs"]
        return subprocess.Popen(["ip", "netns", "exec", ns] + argv, env=env,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)

    def pair(self, ns, srv_d, cli_d, srv_argv, cli_argv, timeout=60,
             between=None, server_hangs=False):
        """Server on srv_d, then once it listens the client on cli_d;
        `between(client)` runs once the client started. A server whose peer
        failed may wait for it forever (server_hangs): it is killed once the
        client is done. Returns (server rc, server output, client rc, client
        output)."""
        self.port += 1
        port = ["-p", str(self.port)]
        srv = self.tool(ns, srv_d, srv_argv + port)
        netns_util.wait_for(
            f"server listening on {self.port}",
            lambda: str(self.port) in sh("ss", "-Hltn", ns=ns,
                                         check=False).stdout
            or srv.poll() is not None, timeout=30)
        cli = self.tool(ns, cli_d, cli_argv + port + ["127.0.0.1"])
        if between is not None:
            between(cli)
        outs = []
        for p in (cli, srv):
            if p is srv and server_hangs and p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
            try:
                out, _ = p.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                out, _ = p.communicate()
                out += "\n(killed)"
            outs.append((p.returncode, out))
        (crc, cout), (src, sout) = outs
        return src, sout, crc, cout

    def ctl_json(self, d, *args):
        out = subprocess.run([self.ctl, "--socket", d["ctl"], "--json", *args],
                             capture_output=True, text=True, timeout=20)
        return json.loads(out.stdout) if out.returncode == 0 else {}

    def ctl_text(self, d, *args, cwd=None):
        out = subprocess.run([self.ctl, "--socket", d["ctl"], *args],
                             capture_output=True, text=True, timeout=20,
                             cwd=cwd)
        return out.returncode, out.stdout + out.stderr

    def metrics(self, d):
        """The daemon's Prometheus text (127.0.0.1:9464 in its namespace)."""
        return sh(sys.executable, "-c",
                  "import urllib.request;print(urllib.request.urlopen("
                  "'http://127.0.0.1:9464/metrics',timeout=5).read()"
                  ".decode())", ns=d["ns"], check=False).stdout

    def drops(self, d):
        return self.ctl_json(d, "counters")["ports"]["p0"].get("drops", {})

    def rnic(self, d):
        return self.ctl_json(d, "counters")["ports"]["p0"]["rnic"]

    def frames(self, path):
        """tshark's view of a pcapng: one dict per frame."""
        keys = ["dir", "id", "verdict", "comment", "opcode", "psn", "aeth",
                "pkey"]
        out = subprocess.run(
            ["tshark", "-r", path, "-n", "-T", "fields", "-E",
             "separator=|", "-e", "frame.packet_flags_direction",
             "-e", "frame.packet_id", "-e", "frame.verdict.hw",
             "-e", "frame.comment", "-e", "infiniband.bth.opcode",
             "-e", "infiniband.bth.psn", "-e", "infiniband.aeth.syndrome",
             "-e", "infiniband.bth.p_key"],
            capture_output=True, text=True, timeout=120).stdout
        rows = []
        for line in out.splitlines():
            f = dict(zip(keys, line.split("|")))
            v = f.get("verdict", "").replace(" ", "").replace(":", "")
            f["reason"] = self.names.get(int(v, 16)) if v else None
            f["inbound"] = f.get("dir") == "0x00000001"
            rows.append(f)
        return rows

    def frames_with(self, path, want, what):
        """The capture once `want(rows)` holds (the daemon flushes it every
        100 ms), or as it is after 15 s."""
        rows = []
        try:
            netns_util.wait_for(what, lambda: want(self.frames(path)),
                                timeout=15)
        except AssertionError:
            pass
        rows = self.frames(path)
        return rows

    def oracles(self, path, label, snapshots=False, streams=True):
        """../shared/oracle's checkers. A flight recorder's frames are the
        first 96 bytes of each (snapshots): Wireshark's dissector must
        show them without a malformed or warning mark, check_pcap takes
        the cut as allowed. streams=False: a capture that saw one QPN
        reused by a restarted peer (no per-QP PSN continuity check)."""
        if snapshots:
            out = subprocess.run(
                ["tshark", "-r", path, "-n", "-T", "fields", "-e",
                 "_ws.malformed", "-e", "_ws.expert.severity"],
                capture_output=True, text=True, timeout=120).stdout
            bad = [l for l in out.splitlines()
                   if l.split("\t")[0] or any(
                       int(x) >= 6291456 for x in
                       l.split("\t")[1].split(",") if x)]
            self.check(out and not bad, f"{label}: Wireshark dissects "
                       f"{len(out.splitlines())} frames, none malformed or "
                       f"warned about: {bad[:3]}")
        else:
            chk = subprocess.run(
                ["bash", os.path.join(self.shared, "oracle",
                                      "tshark_check.sh"), "-q", path],
                capture_output=True, text=True, timeout=120)
            self.check(chk.returncode == 0,
                       f"{label}: tshark_check: {chk.stdout.strip()[-300:]}")
        extra = (["--allow-snaplen"] if snapshots else []) + \
            ([] if streams else ["--no-streams"])
        chk = subprocess.run(
            [sys.executable, os.path.join(self.shared, "oracle",
                                          "check_pcap.py"), *extra, path],
            capture_output=True, text=True, timeout=120)
        self.check(chk.returncode == 0,
                   f"{label}: check_pcap: {chk.stdout.strip()[-300:]}")


def show(label, text):
    """What an operator would see, printed with the test's output."""
    print(f"     --- {label} ---")
    for line in text.rstrip("\n").splitlines():
        print("     | " + line)


def show_tshark(label, path, display_filter):
    """The frames an operator would pick out with tshark, as docs/debugging.md
    quotes them."""
    out = subprocess.run(
        ["tshark", "-r", path, "-n", "-Y", display_filter, "-T", "fields",
         "-e", "frame.packet_id", "-e", "frame.verdict.hw",
         "-e", "infiniband.bth.psn", "-e", "frame.comment"],
        capture_output=True, text=True, timeout=120).stdout
    show(f"{label}: tshark -Y '{display_filter}' -T fields -e frame.packet_id "
         "-e frame.verdict.hw -e infiniband.bth.psn -e frame.comment", out)


def show_log(label, path):
    show(label, "\n".join(l for l in open(path).read().splitlines()
                          if "IBV_WC" in l or "-> ERR" in l))


def delta(after, before):
    return {k: v - before.get(k, 0) for k, v in after.items()
            if v != before.get(k, 0)}


def short_receive_buffer(r, ns, a, b):
    before_a, before_b = r.drops(a), r.drops(b)
    ra, rb = r.rnic(a), r.rnic(b)
    src, sout, crc, cout = r.pair(
        ns, a, b,
        ["ibv_rc_pingpong", "-d", DEV, "-g", "0", "-s", "64", "-n", "5"],
        ["ibv_rc_pingpong", "-d", DEV, "-g", "0", "-s", "4096", "-n", "5"],
        timeout=30)
    r.check("remote invalid request error" in cout or
            "status 9" in cout or "REM_INV_REQ" in cout,
            f"short buffer: the client's WR fails (REM_INV_REQ_ERR): "
            f"{cout.strip()[-200:]!r}")
    da, db = delta(r.drops(a), before_a), delta(r.drops(b), before_b)
    r.check(da.get("recv_too_short") == 1,
            f"short buffer: server's drops moved by one recv_too_short: {da}")
    r.check(db.get("nak_invalid_request") == 1,
            f"short buffer: client's drops: one nak_invalid_request: {db}")
    ra2 = r.rnic(a)
    r.check(ra2["resp_local_length_error"] - ra["resp_local_length_error"]
            == da.get("recv_too_short"),
            "short buffer: recv_too_short agrees with resp_local_length_error")
    frames = r.frames_with(
        a["cap"], lambda rows: any(f["reason"] == "recv_too_short" and any(
            g["comment"].startswith(f"answers packet {f['id']}:")
            for g in rows) for f in rows), "the NAK in the server's capture")
    hit = [f for f in frames if f["reason"] == "recv_too_short"]
    # -s 4096 at MTU 1024: the SEND's first packet already does not fit.
    r.check(len(hit) == 1 and hit[0]["inbound"] and hit[0]["opcode"] == "0"
            and hit[0]["comment"] == "NAKed: message of at least 1024 bytes, "
            "the receive WQE's buffers hold 64",
            f"short buffer: the SEND's verdict and words: {hit}")
    if hit:
        naks = [f for f in frames if not f["inbound"] and
                f["comment"].startswith(f"answers packet {hit[0]['id']}:")]
        r.check(len(naks) == 1 and int(naks[0]["aeth"] or "0", 0) == 0x61,
                f"short buffer: the NAK (invalid request) names packet "
                f"{hit[0]['id']}: {naks}")
        show_tshark("server", a["cap"], "frame.verdict.hw")
        show_log("server's log", a["log"])
        show_log("client's log", b["log"])


def wrong_rkey(r, ns, a, b):
    before_a, before_b = r.drops(a), r.drops(b)
    src, sout, crc, cout = r.pair(
        ns, a, b,
        ["ib_write_bw", "-d", DEV, "-x", "0", "-s", "4096", "-n", "5"],
        ["ib_write_bw", "-d", DEV, "-x", "0", "-s", "65536", "-n", "5"],
        timeout=30)
    da, db = delta(r.drops(a), before_a), delta(r.drops(b), before_b)
    print("     | " + cout.strip()[-300:].replace("\n", "\n     | "))
    r.check(da.get("rkey_bounds") == 1,
            f"wrong R_Key: server's drops moved by one rkey_bounds: {da}")
    rc, text = r.ctl_text(a, "counters", "--drops")
    show("server: rocemu-ctl counters --drops", text)
    r.check(rc == 0 and re.search(r"p0 +rkey_bounds +1 +remote access outside "
                                  r"the MR", text) is not None,
            "wrong R_Key: counters --drops names it with its meaning")
    r.check(db.get("nak_remote_access") == 1,
            f"wrong R_Key: client's drops: one nak_remote_access: {db}")
    frames = r.frames_with(
        a["cap"], lambda rows: any(f["reason"] == "rkey_bounds" and any(
            g["comment"].startswith(f"answers packet {f['id']}:")
            for g in rows) for f in rows), "the NAK in the server's capture")
    hit = [f for f in frames if f["reason"] == "rkey_bounds"]
    ok = len(hit) == 1 and re.fullmatch(
        r"NAKed: R_Key 0x[0-9a-f]+: VA 0x[0-9a-f]+\+65536 outside MR "
        r"\[0x[0-9a-f]+,\+\d+\)", hit[0]["comment"]) is not None
    r.check(ok, f"wrong R_Key: the WRITE's verdict and words: {hit}")
    if hit:
        naks = [f for f in frames if not f["inbound"] and
                f["comment"].startswith(f"answers packet {hit[0]['id']}:")]
        r.check(len(naks) == 1 and int(naks[0]["aeth"] or "0", 0) == 0x62,
                f"wrong R_Key: the NAK (remote access) names packet "
                f"{hit[0]['id']}: {naks}")
        show_tshark("server", a["cap"],
                    f"frame.packet_id == {hit[0]['id']} || "
                    f"frame.comment contains \"answers packet {hit[0]['id']}:\"")
        cfr = r.frames_with(
            b["cap"], lambda rows: any(f["reason"] == "nak_remote_access"
                                       for f in rows),
            "the NAK in the client's capture")
        got = [f for f in cfr if f["reason"] == "nak_remote_access"]
        r.check(len(got) == 1 and got[0]["inbound"],
                f"wrong R_Key: the client's capture: the NAK with its "
                f"verdict: {got}")
        if got:
            log = open(b["log"]).read()
            show("client's log", "\n".join(l for l in log.splitlines()
                                           if "IBV_WC" in l or "-> ERR" in l))
            m = r.metrics(b)
            r.check('rocemu_drops{port="p0",reason="nak_remote_access"} 1\n'
                    in m and 'reason="bad_icrc"} 0\n' in m,
                    "wrong R_Key: Prometheus shows the reason, every reason "
                    "a series")
            r.check(re.search(r"wr_id 0x[0-9a-f]+: IBV_WC_REM_ACCESS_ERR: "
                              r"nak_remote_access: .*packet " + got[0]["id"],
                              log) is not None,
                    "wrong R_Key: the client's daemon logs the error "
                    "completion's cause with the NAK's packet id")


def peer_stops(r, ns, a, b):
    before_b = r.rnic(b)

    def stop_server_daemon(cli):
        # Once the client's WRITEs flow (its QP sent some), the server's
        # daemon stops answering. The client always has a WRITE in flight
        # (a ping-pong may be waiting for the peer's message instead, with
        # nothing to retry).
        netns_util.wait_for("the client's WRITEs", lambda: any(
            q.get("pid") and q.get("counters", {}).get("sent_pkts", 0) > 100
            for q in r.ctl_json(b, "qps")["ports"][0]["qps"]), timeout=30)
        a["proc"].send_signal(signal.SIGSTOP)

    src, sout, crc, cout = r.pair(
        ns, a, b,
        ["ib_write_bw", "-d", DEV, "-x", "0", "-s", "1024", "-t", "1", "-Q",
         "1", "-D", "20"],
        ["ib_write_bw", "-d", DEV, "-x", "0", "-s", "1024", "-t", "1", "-Q",
         "1", "-D", "20"],
        timeout=30, between=stop_server_daemon, server_hangs=True)
    a["proc"].send_signal(signal.SIGCONT)
    r.check("Failed status 12" in cout,
            f"peer stops: the client's WR fails with RETRY_EXC_ERR (12): "
            f"{cout.strip()[-200:]!r}")
    # The program exited (its QP is destroyed): the daemon still knows why.
    why = r.ctl_json(b, "why")["qps"]
    mine = [q for q in why if q["reason"] == "retry_exceeded"]
    r.check(len(mine) == 1 and mine[0]["destroyed"],
            f"peer stops: rocemu-ctl why lists the QP: {why}")
    if not mine:
        return
    qpn = mine[0]["qpn"]
    rc, text = r.ctl_text(b, "why")
    show("client: rocemu-ctl why", text)
    r.check(rc == 0 and f"{qpn}" in text and "retry_exceeded" in text,
            f"peer stops: rocemu-ctl why in words:\n{text}")
    rc, text = r.ctl_text(b, "qp", str(qpn), "--why", cwd=r.tmp)
    show(f"client: rocemu-ctl qp {qpn} --why", text)
    tx = re.findall(r"\btx +\d+ +RC_RDMA_WRITE_ONLY +PSN 0x([0-9a-f]{6})",
                    text)
    timeouts = re.findall(r"ACK timeout: no ACK for PSN 0x([0-9a-f]{6})", text)
    r.check(rc == 0 and len(tx) >= 8 and len(timeouts) >= 8 and
            len(set(tx[-8:])) == 1 and timeouts[-8:] == tx[-8:] and
            "state RTS -> ERR: retry_exceeded" in text and
            "IBV_WC_RETRY_EXC_ERR" in text,
            f"peer stops: qp {qpn} --why: 8 transmissions of the same PSN, "
            f"8 timeouts awaiting its ACK, ERR and the completion:\n{text}")
    dump = os.path.join(r.tmp, f"rocemu-qp{qpn}.pcapng")
    r.check(os.path.exists(dump), f"peer stops: {dump} written")
    if os.path.exists(dump):
        fr = r.frames(dump)
        resent = [f for f in fr if f["comment"].startswith(
            "retransmission after no ACK for PSN")]
        r.check(len(resent) >= 7, f"peer stops: the dump's pcapng shows "
                f"{len(resent)} retransmissions with their cause")
        r.oracles(dump, "peer stops: the dump", snapshots=True)
    files = os.listdir(b["why"]) if os.path.isdir(b["why"]) else []
    r.check(any(f.endswith(".txt") for f in files) and
            any(f.endswith(".pcapng") for f in files),
            f"peer stops: the daemon dumped the QP: {files}")
    log = open(b["log"]).read()
    r.check(re.search(rf"QP 0x{qpn:06x} -> ERR: retry_exceeded: PSN", log)
            is not None, "peer stops: the log names the cause")
    after = r.rnic(b)
    r.check(r.drops(b).get("retry_exceeded") == after["retry_exceeded_err"]
            and after["retry_exceeded_err"] -
            before_b["retry_exceeded_err"] == 1,
            "peer stops: retry_exceeded agrees with retry_exceeded_err")


def pkey_mismatch(r, ns, a, b):
    before_b = r.drops(b)
    src, sout, crc, cout = r.pair(
        ns, a, b, ["ibv_rc_pingpong", "-d", DEV, "-g", "0", "-n", "5"],
        ["ibv_rc_pingpong", "-d", DEV, "-g", "0", "-n", "5"], timeout=20,
        server_hangs=True)
    r.check("transport retry counter exceeded" in cout or "status 12" in cout,
            f"P_Key: the client's WR fails with RETRY_EXC_ERR: "
            f"{cout.strip()[-200:]!r}")
    da = r.drops(a)
    frames = r.frames_with(
        a["cap"], lambda rows: sum(f["reason"] == "bad_pkey" for f in rows)
        >= da.get("bad_pkey", 0), "every bad_pkey frame in the capture")
    hit = [f for f in frames if f["reason"] == "bad_pkey"]
    # The SEND (4 packets of 1024 bytes) and its 7 retransmissions.
    r.check(len(hit) == 32 and all(
        f["inbound"] and f["comment"] == "dropped: P_Key 0xffff does not match "
        "the QP's (index 0: 0x8001)" for f in hit),
        f"P_Key: the SEND's 4 packets, 8 times, dropped with both keys in "
        f"words: {len(hit)} {hit[:2]}")
    show_tshark("server", a["cap"], "frame.verdict.hw && infiniband.bth.psn")
    rc, text = r.ctl_text(b, "why")
    show("client: rocemu-ctl why", text)
    r.check(da.get("bad_pkey") == len(hit) == r.rnic(a)["bad_pkey_cntr"],
            f"P_Key: bad_pkey ({da}) counts exactly those frames and agrees "
            "with bad_pkey_cntr")
    r.check(delta(r.drops(b), before_b).get("retry_exceeded") == 1,
            "P_Key: the client's QP ends in retry_exceeded")


def main():
    rocemud, dropin, ctl, shared, header = map(os.path.abspath, sys.argv[1:6])
    r = Run(rocemud, dropin, ctl, shared, header)
    with netns_util.failures_reported(r):
        na, nb = r.netns("rocemu-wa"), r.netns("rocemu-wb")
        va, vb = f"wa{r.pid % 100000}", f"wb{r.pid % 100000}"
        netns_util.veth_pair(na, va, nb, vb)
        a = r.daemon(na, "a", va, "02:00:00:7c:01:01", "10.124.1.1")
        b = r.daemon(nb, "b", vb, "02:00:00:7c:01:02", "10.124.1.2")
        # The tools' TCP exchange needs one loopback: both run in na, each
        # attached to its daemon by its verbs socket (a file).
        short_receive_buffer(r, na, a, b)
        wrong_rkey(r, na, a, b)
        peer_stops(r, na, a, b)
        r.stop(a)
        r.oracles(a["cap"], "server's capture")
        a = r.daemon(na, "a2", va, "02:00:00:7c:01:01", "10.124.1.1",
                     pkeys=["0x8001"])
        pkey_mismatch(r, na, a, b)
        r.stop(a)
        r.stop(b)
        r.oracles(a["cap"], "P_Key server's capture")
        # The restarted server numbered its QP as the first one: the
        # client's capture holds two connections with one QPN pair.
        r.oracles(b["cap"], "client's capture", streams=False)
    return netns_util.verdict(r.failures)


if __name__ == "__main__":
    sys.exit(main())
