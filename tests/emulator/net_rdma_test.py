#!/usr/bin/env python3
"""Two rocemud daemons exchange RDMA traffic through their test hooks
(control.test_hooks), in network namespaces this test creates:
  veth:  af_packet on the two ends of a veth pair (kernel MTU 9000,
         framesz/blocksz 8192, so the 4 KiB RoCE MTU fits);
  memif: a memif server and client in one namespace.
RC WRITE, WRITE with immediate, READ, SEND with immediate, compare-and-swap
and fetch-and-add, and UD sends must complete byte-exact (CRC-32 digests of
the daemons' buffers, atomic values recomputed here from the seeded
pattern). Captures are checked by ../shared/oracle/check_pcap.py and
tshark_check.sh. With --faults both daemons drop 1 %, reorder 1 % and
corrupt 0.1 % of received frames: RC transfers must still be byte-exact and
the counters must show the faults and the retransmissions; UD (unreliable)
messages that arrive must be byte-exact; the pcapng captures show every
frame the fault injector dropped, corrupted or held back with that verdict
and the rule in words (tshark), exactly as many as the fault counters and
the per-reason counters (issue 36), and every retransmission names a
packet id the daemon's captures hold.
Bounded in time; always cleans up.
Usage: net_rdma_test.py ROCEMUD SHARED_DIR veth|memif [--faults]
"""
import json
import os
import subprocess
import sys
import time

import netns_util
from netns_util import control


def sh(*cmd, ns=None, check=True, timeout=30):
    return netns_util.sh(*cmd, ns=ns, check=check, timeout=timeout)

MASK64 = (1 << 64) - 1
KIB = 1024
MIB = 1024 * 1024


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


def pattern_word(seed, offset):
    """The 64-bit little-endian word at 8-aligned `offset` of a reg_mr
    buffer filled with `seed` (emulator/control/test_hooks.h)."""
    return splitmix64(seed + offset // 8)


class Daemon:
    def __init__(self, name, sock, proc, ip):
        self.name, self.sock, self.proc, self.ip = name, sock, proc, ip

    def call(self, cmd, **fields):
        return control(self.sock, dict(cmd=cmd, port="p0", **fields),
                       timeout=10)

    def ok(self, cmd, **fields):
        r = self.call(cmd, **fields)
        if "error" in r:
            raise AssertionError(f"{self.name}: {cmd}: {r['error']}")
        return r

    def retry(self, cmd, timeout=15, **fields):
        """Repeats a request answered with "retry" (neighbour unresolved)."""
        deadline = time.monotonic() + timeout
        while True:
            r = self.call(cmd, **fields)
            if "error" not in r:
                return r
            if not r.get("retry") or time.monotonic() > deadline:
                raise AssertionError(f"{self.name}: {cmd}: {r['error']}")
            time.sleep(0.05)

    def digest(self, mr, offset, length):
        return self.ok("mr_digest", key=mr["key"], offset=offset,
                       len=length)["crc32"]

    def counters(self):
        return self.ok("counters")["ports"]["p0"]


class Run(netns_util.NetRun):
    def __init__(self, rocemud, shared, faults):
        super().__init__("rocemu-rdma-")
        self.rocemud, self.shared, self.faults = rocemud, shared, faults


    def start(self, ns, name, devargs, mac, ip, seed):
        sock = os.path.join(self.tmp, f"{name}.sock")
        cfg = os.path.join(self.tmp, f"{name}.yaml")
        faults = {}
        # Seeds 7 and 8 corrupt a frame early in the run (0.1 % alone would
        # leave a short run without one now and then).
        if self.faults:
            faults = {"faults": {"drop": 0.01, "reorder": 0.01,
                                 "corrupt": 0.001, "seed": seed}}
        netns_util.write_rocemud_config(
            cfg, f"rocemu-{name}-{self.pid}",
            [netns_util.port("p0", devargs, mac, f"{ip}/24", 4200, **faults)],
            capture={"enabled": True,
                     "rx_path": f"{self.tmp}/{name}-{{port}}-rx.pcap",
                     "tx_path": f"{self.tmp}/{name}-{{port}}-tx.pcap",
                     "rotate_mb": 0},
            control={"socket": sock, "test_hooks": True},
            verbs={"socket": f"{sock}.verbs"},
            logging={"file": f"{self.tmp}/{name}.log"})
        p = netns_util.start_rocemud(ns, self.rocemud, cfg, sock, name)
        self.procs.append(p)
        return Daemon(name, sock, p, ip)

    def stop(self, d):
        rc = netns_util.stop_rocemud(d.proc)
        self.procs.remove(d.proc)
        self.check(rc == 0, f"{d.name}: clean exit on SIGTERM (status {rc})")


def wait_cq(d, cq, n, timeout=60):
    """Polls until n completions arrived; returns them."""
    wcs = []
    deadline = time.monotonic() + timeout
    while len(wcs) < n:
        r = d.ok("poll_cq", cq=cq, max=256)
        wcs += r["wcs"]
        if len(wcs) >= n:
            break
        if time.monotonic() > deadline:
            raise AssertionError(
                f"{d.name}: {len(wcs)}/{n} completions after {timeout} s")
        time.sleep(0.01 if r["count"] else 0.05)
    return wcs


def all_success(wcs):
    return all(w["status"] == "IBV_WC_SUCCESS" for w in wcs)


def transfers(r, a, b):
    size = 4 * MIB if not r.faults else 2 * MIB
    chunk = 256 * KIB
    # Buffers: each filled with its own seed, so equal digests mean the
    # bytes really moved.
    a_src = a.ok("reg_mr", len=size, seed=11)
    a_dst = a.ok("reg_mr", len=size, seed=12)
    b_src = b.ok("reg_mr", len=size, seed=21)
    b_dst = b.ok("reg_mr", len=size, seed=22)
    b_atom = b.ok("reg_mr", len=64, seed=23)
    a_res = a.ok("reg_mr", len=64, seed=13)
    r.check(a.digest(a_src, 0, size) != b.digest(b_dst, 0, size),
            "source and destination differ before the transfers")
    cq_a, cq_b = a.ok("create_cq")["cq"], b.ok("create_cq")["cq"]
    qa = a.ok("create_qp", type="RC", cq=cq_a)["qpn"]
    qb = b.ok("create_qp", type="RC", cq=cq_b)["qpn"]
    common = dict(timeout=10, retry_cnt=7, rnr_retry=7)
    # A, which sends everything below, starts 256 PSNs before the wrap:
    # its WRITEs and SENDs cross 0xFFFFFF -> 0 (checked on its capture).
    ca = a.retry("connect", qpn=qa, remote_qpn=qb, remote_ip=b.ip,
                 sq_psn=0xFFFF00, rq_psn=100, **common)
    cb = b.retry("connect", qpn=qb, remote_qpn=qa, remote_ip=a.ip,
                 sq_psn=100, rq_psn=0xFFFF00, **common)
    r.check(ca["state"] == "RTS" and cb["state"] == "RTS" and
            ca["mtu"] == 4096, f"RC QPs {qa}<->{qb} connected, MTU "
            f"{ca['mtu']}")

    # RDMA WRITE: A's source into B's destination, in chunks.
    half = size // 2
    for i, off in enumerate(range(0, half, chunk)):
        a.ok("post_send", qpn=qa, opcode="WRITE", wr_id=1000 + i,
             laddr=a_src["addr"] + off, lkey=a_src["key"], len=chunk,
             raddr=b_dst["addr"] + off, rkey=b_dst["key"])
    wcs = wait_cq(a, cq_a, half // chunk)
    r.check(all_success(wcs) and all(w["opcode"] == "IBV_WC_RDMA_WRITE"
                                     for w in wcs),
            f"{len(wcs)} RDMA WRITEs completed")
    r.check(a.digest(a_src, 0, half) == b.digest(b_dst, 0, half),
            f"RDMA WRITE of {half // KIB} KiB is byte-exact")

    # RDMA READ: B's source into A's destination.
    for i, off in enumerate(range(0, half, chunk)):
        a.ok("post_send", qpn=qa, opcode="READ", wr_id=2000 + i,
             laddr=a_dst["addr"] + off, lkey=a_dst["key"], len=chunk,
             raddr=b_src["addr"] + off, rkey=b_src["key"])
    wcs = wait_cq(a, cq_a, half // chunk)
    r.check(all_success(wcs) and all(w["opcode"] == "IBV_WC_RDMA_READ"
                                     for w in wcs),
            f"{len(wcs)} RDMA READs completed")
    r.check(a.digest(a_dst, 0, half) == b.digest(b_src, 0, half),
            f"RDMA READ of {half // KIB} KiB is byte-exact")

    # SEND with immediate: into receive WRs B posted on the second half.
    nsend = half // chunk
    for i in range(nsend):
        b.ok("post_recv", qpn=qb, wr_id=3000 + i,
             laddr=b_dst["addr"] + half + i * chunk, lkey=b_dst["key"],
             len=chunk)
    for i in range(nsend):
        a.ok("post_send", qpn=qa, opcode="SEND_IMM", wr_id=4000 + i,
             imm=0xABC000 + i, laddr=a_src["addr"] + half + i * chunk,
             lkey=a_src["key"], len=chunk)
    sends = wait_cq(a, cq_a, nsend)
    recvs = wait_cq(b, cq_b, nsend)
    r.check(all_success(sends) and all_success(recvs),
            f"{nsend} SENDs and their receives completed")
    r.check([w["imm"] for w in recvs] ==
            [0xABC000 + i for i in range(nsend)] and
            all(w["with_imm"] and w["byte_len"] == chunk for w in recvs),
            "receive completions carry the immediate data and length")
    return dict(size=size, chunk=chunk, half=half, a_src=a_src, b_dst=b_dst,
                b_atom=b_atom, a_res=a_res, qa=qa, qb=qb, cq_a=cq_a,
                cq_b=cq_b, nsend=nsend)


def send_and_atomics(r, a, b, t):
    half, chunk = t["half"], t["chunk"]
    r.check(a.digest(t["a_src"], half, half) ==
            b.digest(t["b_dst"], half, half),
            f"SEND of {half // KIB} KiB is byte-exact")

    # WRITE with immediate consumes a receive WR and lands in memory.
    b.ok("post_recv", qpn=t["qb"], wr_id=5000, len=0)
    a.ok("post_send", qpn=t["qa"], opcode="WRITE_IMM", wr_id=5001,
         imm=0x5EED, laddr=t["a_src"]["addr"], lkey=t["a_src"]["key"],
         len=chunk, raddr=t["b_dst"]["addr"] + half + chunk,
         rkey=t["b_dst"]["key"])
    w = wait_cq(a, t["cq_a"], 1) + wait_cq(b, t["cq_b"], 1)
    r.check(all_success(w) and w[1]["imm"] == 0x5EED and
            w[1]["opcode"] == "IBV_WC_RECV_RDMA_WITH_IMM",
            "RDMA WRITE with immediate completed on both sides")
    r.check(a.digest(t["a_src"], 0, chunk) ==
            b.digest(t["b_dst"], half + chunk, chunk),
            "RDMA WRITE with immediate is byte-exact")

    # Atomics on B's word 0 (seed 23); results land in A's a_res.
    orig = pattern_word(23, 0)
    a.ok("post_send", qpn=t["qa"], opcode="FETCH_ADD", wr_id=6000,
         laddr=t["a_res"]["addr"], lkey=t["a_res"]["key"], len=8,
         raddr=t["b_atom"]["addr"], rkey=t["b_atom"]["key"], compare_add=5)
    swap = 0x1122334455667788
    a.ok("post_send", qpn=t["qa"], opcode="CMP_SWAP", wr_id=6001,
         laddr=t["a_res"]["addr"] + 8, lkey=t["a_res"]["key"], len=8,
         raddr=t["b_atom"]["addr"], rkey=t["b_atom"]["key"],
         compare_add=(orig + 5) & MASK64, swap=swap)
    w = wait_cq(a, t["cq_a"], 2)
    res = bytes.fromhex(a.ok("mr_read", key=t["a_res"]["key"], offset=0,
                             len=16)["hex"])
    mem = bytes.fromhex(b.ok("mr_read", key=t["b_atom"]["key"], offset=0,
                             len=8)["hex"])
    fetched = int.from_bytes(res[:8], "little")
    compared = int.from_bytes(res[8:], "little")
    r.check(all_success(w) and fetched == orig and
            compared == (orig + 5) & MASK64 and
            int.from_bytes(mem, "little") == swap,
            "FETCH_ADD and CMP_SWAP returned the old values and updated "
            "the remote word")


def ud(r, a, b):
    msg, n = 1024, 32
    a_buf = a.ok("reg_mr", len=n * msg, seed=31)
    b_buf = b.ok("reg_mr", len=n * (msg + 40), seed=32)
    cq_a, cq_b = a.ok("create_cq")["cq"], b.ok("create_cq")["cq"]
    qa = a.ok("create_qp", type="UD", cq=cq_a)["qpn"]
    qb = b.ok("create_qp", type="UD", cq=cq_b)["qpn"]
    a.ok("connect", qpn=qa, qkey=0x1234, sq_psn=7)
    b.ok("connect", qpn=qb, qkey=0x1234, sq_psn=9)
    for i in range(n):
        # UD receives start with the 40-byte GRH.
        b.ok("post_recv", qpn=qb, wr_id=i,
             laddr=b_buf["addr"] + i * (msg + 40), lkey=b_buf["key"],
             len=msg + 40)
    ah = a.retry("create_ah", remote_ip=b.ip)["ah"]
    for i in range(n):
        a.ok("post_send", qpn=qa, opcode="SEND", wr_id=i, ah=ah,
             remote_qpn=qb, remote_qkey=0x1234,
             laddr=a_buf["addr"] + i * msg, lkey=a_buf["key"], len=msg)
    sends = wait_cq(a, cq_a, n)
    r.check(all_success(sends), f"{n} UD sends completed")
    expect = n if not r.faults else n // 2
    deadline = time.monotonic() + 5
    recvs = []
    while time.monotonic() < deadline:
        recvs += b.ok("poll_cq", cq=cq_b, max=256)["wcs"]
        if len(recvs) == n:
            break
        time.sleep(0.05)
    r.check(len(recvs) >= expect and all_success(recvs) and
            all(w["src_qp"] == qa and w["byte_len"] == msg + 40
                for w in recvs),
            f"{len(recvs)}/{n} UD messages received (need {expect})")
    sent = {a.digest(a_buf, i * msg, msg) for i in range(n)}
    got = [b.digest(b_buf, w["wr_id"] * (msg + 40) + 40, msg) for w in recvs]
    if not r.faults:
        got_set = set(got)
        r.check(got_set == sent, "every UD message arrived byte-exact")
    else:
        r.check(all(g in sent for g in got),
                "every UD message that arrived is byte-exact")


def check_counters(r, a, b, qa_b):
    ca, cb = a.counters(), b.counters()
    for d, c in ((a, ca), (b, cb)):
        qps = c["rnic"]["qps"]
        r.check(len(qps) == 2 and all(q["sent_pkts"] > 0 or
                                      q["rcvd_pkts"] > 0
                                      for q in qps.values()),
                f"{d.name}: per-QP counters for {len(qps)} QPs")
    if not r.faults:
        r.check(all(c["rnic"]["rx_icrc_encapsulated"] == 0 and
                    c["rnic"]["rx_malformed"] == 0 for c in (ca, cb)),
                "no ICRC or malformed drops on a clean link")
        return {}
    total = {}
    for c in (ca, cb):
        for k in ("rx_fault_dropped", "rx_fault_reordered",
                  "rx_fault_corrupted", "rx_bad_checksum", "rx_malformed",
                  "rx_not_for_us"):
            total[k] = total.get(k, 0) + c[k]
        for k in ("completer_retry_err", "rx_icrc_encapsulated",
                  "duplicate_request", "out_of_sequence"):
            total[k] = total.get(k, 0) + c["rnic"][k]
    print("     fault totals:", json.dumps(total))
    r.check(total["rx_fault_dropped"] > 0 and
            total["rx_fault_reordered"] > 0 and
            total["rx_fault_corrupted"] > 0,
            "fault counters show drops, reorders and corruption")
    r.check(total["completer_retry_err"] > 0,
            "the RNICs retransmitted (completer_retry_err)")
    r.check(total["rx_icrc_encapsulated"] + total["rx_bad_checksum"] +
            total["rx_malformed"] + total["rx_not_for_us"] > 0,
            "corrupted frames were caught (ICRC or header checks)")
    return {"a": ca, "b": cb}


def tshark_fields(path, *fields):
    out = subprocess.run(["tshark", "-r", path, "-n", "-T", "fields", "-E",
                          "separator=|", *sum((["-e", f] for f in fields), [])],
                         capture_output=True, text=True, timeout=120).stdout
    return [line.split("|") for line in out.splitlines()]


def psn_wrap(r, path, dest_qp):
    """A's requests to `dest_qp` in its TX capture cross PSN 0xFFFFFF -> 0
    in order (first transmissions; a retransmission may repeat PSNs)."""
    psns = []
    for op, dqp, psn in tshark_fields(path, "infiniband.bth.opcode",
                                      "infiniband.bth.destqp",
                                      "infiniband.bth.psn"):
        # RC requests only (not ACKs, READ responses).
        if not op or int(op) > 0x0C or int(dqp, 0) != dest_qp:
            continue
        psns.append(int(psn))
    crossed = any(x == 0xFFFFFF and y == 0 for x, y in zip(psns, psns[1:]))
    ends = f"{psns[0]:#x} .. {psns[-1]:#x}" if psns else "none"
    r.check(crossed and psns[0] == 0xFFFF00 and psns[-1] < 0x100000,
            f"A's {len(psns)} request packets crossed PSN 0xffffff -> 0 "
            f"in order ({ends})")


def fault_verdicts(r, counters):
    """What the fault injector did, as the pcapng captures tell it."""
    header = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                          "..", "nic", "drop_reason.h")
    import re
    names = re.findall(r"X\(k\w+,\s*(\w+),", open(header).read())
    drop_code = names.index("fault_drop")
    for name, c in counters.items():
        ids, causes = set(), []
        seen = {"drop": 0, "corrupt": 0, "held": 0}
        for d in ("rx", "tx"):
            for dir_, pid, verdict, comment in tshark_fields(
                    f"{r.tmp}/{name}-p0-{d}.pcap",
                    "frame.packet_flags_direction", "frame.packet_id",
                    "frame.verdict.hw", "frame.comment"):
                ids.add(pid)
                v = verdict.replace(" ", "").replace(":", "")
                if v and int(v, 16) == drop_code:
                    seen["drop"] += comment.startswith(
                        "dropped: fault injector: dropped (faults.drop 0.01, "
                        f"{d})")
                seen["corrupt"] += "corrupted: fault injector: bit " in comment
                seen["held"] += "held: fault injector: held behind" in comment
                m = re.search(r"^retransmission after .*\(packet (\d+)\)",
                              comment)
                if m:
                    causes.append(m.group(1))
        drops = c.get("drops", {})
        r.check(seen["drop"] == c["rx_fault_dropped"] ==
                drops.get("fault_drop", 0) > 0,
                f"{name}: {seen['drop']} frames in the capture dropped by the "
                f"fault injector, rule in words; rx_fault_dropped "
                f"{c['rx_fault_dropped']}, drops {drops.get('fault_drop')}")
        r.check(seen["corrupt"] == c["rx_fault_corrupted"] ==
                drops.get("fault_corrupt", 0),
                f"{name}: {seen['corrupt']} corrupted frames say which bit; "
                f"rx_fault_corrupted {c['rx_fault_corrupted']}")
        r.check(seen["held"] <= c["rx_fault_reordered"] ==
                drops.get("fault_reorder", 0) and seen["held"] > 0,
                f"{name}: {seen['held']} reordered frames say so "
                f"(rx_fault_reordered {c['rx_fault_reordered']})")
        missing = [x for x in causes if x not in ids]
        r.check(not missing,
                f"{name}: {len(causes)} retransmissions name a packet of "
                f"the daemon's captures (missing: {missing[:5]})")


def oracles(r, names):
    check_pcap = os.path.join(r.shared, "oracle", "check_pcap.py")
    tshark = os.path.join(r.shared, "oracle", "tshark_check.sh")
    # With faults the receive captures hold the corrupted frames as they
    # were injected, so only what the daemons sent is checked.
    dirs = ("tx",) if r.faults else ("tx", "rx")
    # Under loss the responder re-executes duplicate READs; their responses
    # carry the MSN of the original request, which the oracle's per-QP
    # stream view reads as "MSN went backwards". Frame layout, ICRC and
    # headers are still checked frame by frame.
    extra = ["--no-streams"] if r.faults else []
    for name in names:
        for d in dirs:
            path = f"{r.tmp}/{name}-p0-{d}.pcap"
            p = subprocess.run([sys.executable, check_pcap, "--strict",
                                *extra, path], capture_output=True,
                               text=True, timeout=120)
            last = (p.stdout.strip().splitlines() or ["(no output)"])[-1]
            r.check(p.returncode == 0, f"check_pcap {name} {d}: {last}")
            p = subprocess.run(["bash", tshark, "--quiet", path],
                               capture_output=True, text=True, timeout=120)
            last = (p.stdout.strip().splitlines() or ["(no output)"])[-1]
            r.check(p.returncode == 0, f"tshark_check {name} {d}: {last}")


def setup(r, link):
    if link == "veth":
        na, nb = r.netns("rocemu-ra"), r.netns("rocemu-rb")
        va, vb = f"ra{r.pid % 100000}", f"rb{r.pid % 100000}"
        netns_util.veth_pair(na, va, nb, vb)
        opts = "framesz=8192,blocksz=8192"
        a = r.start(na, "a", f"net_af_packet0,iface={va},{opts}",
                    "02:00:00:78:01:01", "10.78.1.1", 7)
        b = r.start(nb, "b", f"net_af_packet0,iface={vb},{opts}",
                    "02:00:00:78:01:02", "10.78.1.2", 8)
    else:
        ns = r.netns("rocemu-rm")
        sock = f"rocemu-rdma-{r.pid}"
        a = r.start(ns, "a", f"net_memif0,role=server,socket={sock},"
                    "bsize=8192", "02:00:00:78:02:01", "10.78.2.1", 7)
        b = r.start(ns, "b", f"net_memif0,role=client,socket={sock},"
                    "bsize=8192", "02:00:00:78:02:02", "10.78.2.2", 8)
    return a, b


def main():
    rocemud, shared, link = (os.path.abspath(sys.argv[1]),
                             os.path.abspath(sys.argv[2]), sys.argv[3])
    faults = "--faults" in sys.argv[4:]
    if os.geteuid() != 0:
        print("FAIL: the net suite needs root")
        return 1
    r = Run(rocemud, shared, faults)
    with netns_util.failures_reported(r):
        a, b = setup(r, link)
        t = transfers(r, a, b)
        send_and_atomics(r, a, b, t)
        ud(r, a, b)
        counters = check_counters(r, a, b, t["qb"])
        # Straight after the traffic: a memif survivor contains its peer's
        # teardown (emulator/port/memif_guard.h).
        r.stop(b)
        r.stop(a)
        psn_wrap(r, f"{r.tmp}/a-p0-tx.pcap", t["qb"])
        oracles(r, ("a", "b"))
        if counters:
            fault_verdicts(r, counters)
    return netns_util.verdict(r.failures)


if __name__ == "__main__":
    sys.exit(main())
