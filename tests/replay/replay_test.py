#!/usr/bin/env python3
"""Replay tests (suite 'tools').

  replay_test.py golden REPLAY CASE_DIR SHARED_DIR
      Runs the case, compares output pcap and summary JSON with the goldens
      byte for byte, runs ../shared/oracle/check_pcap.py on the output, and
      checks what the case is about against facts computed here
      independently (rxe's own answers in the capture, memory contents).
  replay_test.py negative REPLAY CASE_DIR
      A modified input (one frame removed; one payload byte flipped) must
      change the output: the golden comparison is real.
  replay_test.py bad REPLAY BAD_DIR
      Every bad case file gives exit status 2 and one error line naming the
      file, line and column and containing the text its '# expect:' gives.
  replay_test.py verdicts REPLAY CASE_DIR SHARED_DIR DROP_REASON_H
      The rc_lossy case replayed into a pcapng: the frames fed in (inbound)
      and sent (outbound) are those of input.pcap and golden.pcap, byte for
      byte; tshark shows on each frame the RNIC acted on the verdict and
      words the reasons table (nic/drop_reason.h) gives, each NAK and
      answer to a duplicate names the packet id of the inbound frame that
      caused it; Wireshark and check_pcap.py find nothing malformed.
"""
import collections
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def read_pcap(path):
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack_from("<I", data, 0)[0]
    if magic not in (0xA1B2C3D4, 0xA1B23C4D):
        fail(f"{path}: not a little-endian pcap")
    nano = magic == 0xA1B23C4D
    frames, off = [], 24
    while off < len(data):
        sec, frac, caplen, _ = struct.unpack_from("<IIII", data, off)
        off += 16
        frames.append((sec * 10**9 + (frac if nano else frac * 1000),
                       data[off:off + caplen]))
        off += caplen
    return nano, frames


def write_pcap(path, frames, nano):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B23C4D if nano else 0xA1B2C3D4,
                            2, 4, 0, 0, 65535, 1))
        for t, b in frames:
            frac = t % 10**9 if nano else (t % 10**9) // 1000
            f.write(struct.pack("<IIII", t // 10**9, frac, len(b), len(b)))
            f.write(b)


RETH_OPS = {0x06, 0x0A, 0x0B, 0x0C}
AETH_OPS = {0x0D, 0x0F, 0x10, 0x11, 0x12}
ATOMIC_OPS = {0x13, 0x14}


def roce(frame):
    """The RoCEv2 view of an untagged IPv4 frame, or None."""
    if len(frame) < 14 + 20 + 8 + 12 + 4 or frame[12:14] != b"\x08\x00":
        return None
    ihl = (frame[14] & 0xF) * 4
    src, dst = frame[26:30], frame[30:34]
    if frame[23] != 17:
        return None
    udp = 14 + ihl
    if struct.unpack_from(">H", frame, udp + 2)[0] != 4791:
        return None
    bth = udp + 8
    op = frame[bth]
    pad = (frame[bth + 1] >> 4) & 3
    r = {"src": bytes(src), "dst": bytes(dst), "opcode": op,
         "dqp": int.from_bytes(frame[bth + 5:bth + 8], "big"),
         "ackreq": frame[bth + 8] >> 7,
         "psn": int.from_bytes(frame[bth + 9:bth + 12], "big")}
    off = bth + 12
    if op in RETH_OPS:
        r["reth"] = struct.unpack_from(">QII", frame, off)
        off += 16
    if op in ATOMIC_OPS:
        r["atomic"] = struct.unpack_from(">QIQQ", frame, off)
        off += 28
    if op in AETH_OPS:
        r["aeth"] = (frame[off], int.from_bytes(frame[off + 1:off + 4], "big"))
        off += 4
    if op == 0x12:
        r["orig"] = struct.unpack_from(">Q", frame, off)[0]
        off += 8
    if op in (0x03, 0x05, 0x09, 0x0B):
        off += 4  # ImmDt
    r["payload"] = bytes(frame[off:len(frame) - 4 - pad])
    return r


def ip(s):
    return bytes(int(x) for x in s.split("."))


def run_replay(replay, case, out_pcap, out_json):
    p = subprocess.run([replay, "--case", case, "--out", out_pcap,
                        "--summary", out_json], capture_output=True, text=True,
                       timeout=120)
    return p


def transport(r, keys):
    return {k: r.get(k) for k in keys}


def check_rxe_write_read(case_dir, out):
    # rocemu answers as rxe's responder did: same opcodes, PSNs, AETH
    # (syndrome and MSN) and READ data, frame for frame.
    _, inp = read_pcap(os.path.join(case_dir, "input.pcap"))
    rxe = [r for r in (roce(b) for _, b in inp)
           if r and r["src"] == ip("192.168.65.4") and r["dqp"] != 1]
    every = [roce(b) for _, b in out]
    ours = [r for r in every if r["dqp"] != 1]
    keys = ("opcode", "psn", "dqp", "aeth", "payload")
    if len(rxe) != 5 or len(ours) != len(rxe):
        fail(f"expected 5 answers like rxe's, got {len(ours)}")
    # The CM has no listener: REJ 8 (invalid service ID) for rxe's REQ and a
    # DREP for its DREQ, both MADs from QP1 (attribute at MAD byte 16, REJ
    # reason at CM data byte 10).
    mads = [r["payload"][8:] for r in every if r["dqp"] == 1]  # after DETH
    attrs = [struct.unpack_from(">H", m, 16)[0] for m in mads]
    if attrs != [0x12, 0x16]:
        fail(f"expected REJ and DREP from the CM, got {attrs}")
    if struct.unpack_from(">H", mads[0], 24 + 10)[0] != 8:
        fail("the REJ's reason is not 8 (invalid service ID)")
    for i, (a, b) in enumerate(zip(rxe, ours)):
        if transport(a, keys) != transport(b, keys):
            fail(f"answer {i + 1} differs from rxe's: {transport(b, keys)} "
                 f"vs {transport(a, keys)}")


def check_rxe_requester(case_dir, out, summary):
    # rocemu's requests equal rxe's client requests; the READ data it
    # received is rxe's READ response payload.
    _, inp = read_pcap(os.path.join(case_dir, "input.pcap"))
    views = [r for r in (roce(b) for _, b in inp) if r and r["dqp"] != 1]
    rxe_req = [r for r in views if r["src"] == ip("192.168.2.25")]
    rxe_resp = [r for r in views if r["src"] == ip("192.168.2.24")]
    ours = [roce(b) for _, b in out]
    keys = ("opcode", "psn", "dqp", "ackreq", "reth", "payload")
    if [transport(r, keys) for r in ours] != [transport(r, keys)
                                              for r in rxe_req]:
        fail("requests differ from rxe's client requests")
    mem = bytearray(8192)
    mem[0:17] = b"client-wrote-this"
    data = b"".join(r["payload"] for r in rxe_resp if r["opcode"] in
                    (0x0D, 0x0E, 0x0F, 0x10))
    if len(data) != 4096:
        fail(f"rxe READ data {len(data)} bytes")
    mem[4096:8192] = data
    want = "0x%08x" % zlib.crc32(bytes(mem))
    if summary["mrs"][0]["crc32"] != want:
        fail(f"MR content crc {summary['mrs'][0]['crc32']} != {want}")
    st = [(c["opcode"], c["status"]) for c in summary["completions"]]
    if st != [("IBV_WC_RDMA_WRITE", "IBV_WC_SUCCESS"),
              ("IBV_WC_RDMA_READ", "IBV_WC_SUCCESS")]:
        fail(f"completions {st}")


def check_rc_lossy(out, summary):
    def pat(psn, n):  # replay-make-lossy's payload pattern
        return bytes((psn * 31 + i) & 0xFF for i in range(n))

    mem = bytearray((i + 0x40) & 0xFF for i in range(16384))
    orig = struct.unpack_from("<Q", mem, 8192)[0]
    mem[0:1024], mem[1024:2048] = pat(0x100, 1024), pat(0x101, 1024)
    mem[2048:3000] = pat(0x102, 952)
    mem[12288:12352] = pat(0x106, 64)
    struct.pack_into("<Q", mem, 8192, orig + 5)  # once, not twice
    rbuf = bytearray(4096)
    rbuf[0:100], rbuf[1024:1224] = pat(0x103, 100), pat(0x108, 200)
    got = {m["name"]: m["crc32"] for m in summary["mrs"]}
    want = {"mem": "0x%08x" % zlib.crc32(bytes(mem)),
            "rbuf": "0x%08x" % zlib.crc32(bytes(rbuf))}
    if got != want:
        fail(f"memory {got} != expected {want}")
    views = [roce(b) for _, b in out]
    naks = [r["psn"] for r in views if r["opcode"] == 0x11
            and r["aeth"][0] == 0x60]
    if naks != [0x102, 0x106]:
        fail(f"PSN sequence NAKs at {naks}, expected [0x102, 0x106]")
    reads = [r["psn"] for r in views if r["opcode"] in (0x0D, 0x0F)]
    if reads != [0x104, 0x105, 0x104, 0x105]:
        fail(f"READ responses {reads}: the duplicate READ was not re-run")
    origs = [r["orig"] for r in views if r["opcode"] == 0x12]
    if origs != [orig, orig]:
        fail(f"atomic ACK originals {origs}, expected twice {orig:#x}")
    recv = [(c["wr_id"], c["byte_len"]) for c in summary["completions"]]
    if recv != [(1, 100), (2, 200)]:
        fail(f"receive completions {recv}")


def check_rocemu_rping(case_dir, out, out_pcap, summary):
    # rocemu replaying rping's server sends what the original server (a
    # rocemud driven by the drop-in librdmacm) sent, frame for frame: the
    # REP (same comm IDs, starting PSN, parameters), ACKs, READ requests,
    # SENDs and WRITEs with the same PSNs, RETHs and payloads, the DREP.
    _, inp = read_pcap(os.path.join(case_dir, "input.pcap"))
    orig = [r for r in (roce(b) for _, b in inp)
            if r and r["src"] == ip("10.122.2.1")]
    client = [r for r in (roce(b) for _, b in inp)
              if r and r["src"] == ip("10.122.2.2")]
    ours = [roce(b) for _, b in out]
    keys = ("opcode", "psn", "dqp", "ackreq", "reth", "aeth", "payload")
    if len(ours) != len(orig) or len(orig) != 14:
        fail(f"{len(ours)} frames, the original server sent {len(orig)}")
    for i, (a, b) in enumerate(zip(orig, ours)):
        if transport(a, keys) != transport(b, keys):
            fail(f"frame {i + 1} differs from the original server's: "
                 f"{transport(b, keys)} vs {transport(a, keys)}")
    # The CM's side of it, as tshark dissects the golden: REP then DREP,
    # no expert warnings on any frame.
    t = subprocess.run(["tshark", "-r", out_pcap, "-T", "fields", "-e",
                        "infiniband.mad.attributeid", "-e", "_ws.expert"],
                       capture_output=True, text=True, timeout=60)
    rows = [line.split("\t") for line in t.stdout.splitlines()]
    attrs = [r[0] for r in rows if r[0]]
    if t.returncode != 0 or attrs != ["0x0013", "0x0016"]:
        fail(f"tshark: CM attributes {attrs} (want REP, DREP): {t.stderr}")
    if any(len(r) > 1 and r[1] for r in rows):
        fail("tshark reports expert info on the golden")
    events = [e["type"] for e in summary["cm_events"]]
    if events != ["REQ_RECEIVED", "ESTABLISHED", "DISCONNECTED",
                  "TIMEWAIT_EXIT"]:
        fail(f"CM events {events}")
    st = [(c["opcode"], c["status"]) for c in summary["completions"]]
    round_ = [("IBV_WC_RECV", "IBV_WC_SUCCESS"),
              ("IBV_WC_RDMA_READ", "IBV_WC_SUCCESS"),
              ("IBV_WC_SEND", "IBV_WC_SUCCESS"),
              ("IBV_WC_RECV", "IBV_WC_SUCCESS"),
              ("IBV_WC_RDMA_WRITE", "IBV_WC_SUCCESS"),
              ("IBV_WC_SEND", "IBV_WC_SUCCESS")]
    if sorted(st) != sorted(round_ * 2) or len(st) != 12:
        fail(f"completions {st}")
    # rdma_buf holds what the second READ brought: the client's second ping.
    reads = [r["payload"] for r in client if r["opcode"] == 0x10]
    got = {m["name"]: m["crc32"] for m in summary["mrs"]}
    if len(reads) != 2 or \
            got["rdma_buf"] != "0x%08x" % zlib.crc32(reads[1]):
        fail(f"rdma_buf {got['rdma_buf']} is not the client's second ping")
    if not reads[1].startswith(b"rdma-ping-1: "):
        fail(f"the client's second ping reads {reads[1][:16]!r}")
    cm = summary["counters"]
    if (cm.get("cm_rtu_rcvd"), cm.get("cm_dreq_rcvd"),
            cm.get("cm_rx_unmatched", 0)) != (1, 1, 0):
        fail(f"the client's RTU and DREQ must match the REP's comm ID: {cm}")


def golden(replay, case_dir, shared):
    with tempfile.TemporaryDirectory() as tmp:
        out_pcap = os.path.join(tmp, "out.pcap")
        out_json = os.path.join(tmp, "out.json")
        p = run_replay(replay, os.path.join(case_dir, "case.yaml"), out_pcap,
                       out_json)
        if p.returncode != 0:
            fail(f"rocemu-replay exit {p.returncode}: {p.stderr}")
        for got, want in ((out_pcap, "golden.pcap"), (out_json, "golden.json")):
            with open(got, "rb") as a, open(os.path.join(case_dir, want),
                                             "rb") as b:
                if a.read() != b.read():
                    fail(f"{want} differs (regenerate with "
                         "scripts/replay_regen.sh after inspecting)")
        with open(out_json) as f:
            text = f.read()
        if p.stdout != text:
            fail("stdout summary differs from --summary file")
        summary = json.loads(text)
        nano, out = read_pcap(out_pcap)
        if not nano or len(out) != summary["output_frames"] or not out:
            fail("output pcap must be nanosecond and hold output_frames")
        chk = subprocess.run([sys.executable,
                              os.path.join(shared, "oracle", "check_pcap.py"),
                              out_pcap], capture_output=True, text=True,
                             timeout=120)
        if chk.returncode != 0:
            fail("check_pcap.py: " + chk.stdout[-2000:])
        name = os.path.basename(os.path.normpath(case_dir))
        if name == "rxe_write_read":
            check_rxe_write_read(case_dir, out)
        elif name == "rxe_requester":
            check_rxe_requester(case_dir, out, summary)
        elif name == "rc_lossy":
            check_rc_lossy(out, summary)
        elif name == "rocemu_rping":
            check_rocemu_rping(case_dir, out, out_pcap, summary)
    print(f"PASS {case_dir}")


def negative(replay, case_dir):
    _, inp = read_pcap(os.path.join(case_dir, "input.pcap"))
    nano = read_pcap(os.path.join(case_dir, "input.pcap"))[0]
    with open(os.path.join(case_dir, "golden.pcap"), "rb") as f:
        gold = f.read()
    variants = {}
    # The READ request (frame 6) removed: no READ responses.
    variants["dropped"] = [f for i, f in enumerate(inp) if i != 5]
    # One payload byte of the WRITE (frame 4) flipped: the ICRC fails, the
    # WRITE is dropped, the READ behind it is out of sequence.
    flipped = list(inp)
    t, b = flipped[3]
    b = bytearray(b)
    b[-6] ^= 0x01
    flipped[3] = (t, bytes(b))
    variants["flipped"] = flipped
    for what, frames in variants.items():
        with tempfile.TemporaryDirectory() as tmp:
            for n in os.listdir(case_dir):
                if n != "input.pcap":
                    shutil.copy(os.path.join(case_dir, n), tmp)
            write_pcap(os.path.join(tmp, "input.pcap"), frames, nano)
            out = os.path.join(tmp, "out.pcap")
            p = run_replay(replay, os.path.join(tmp, "case.yaml"), out,
                           os.path.join(tmp, "out.json"))
            if p.returncode != 0:
                fail(f"{what}: exit {p.returncode}: {p.stderr}")
            with open(out, "rb") as f:
                if f.read() == gold:
                    fail(f"{what}: modified input gave the golden output")
    print("PASS negative")


def bad(replay, bad_dir):
    names = sorted(n for n in os.listdir(bad_dir) if n.endswith(".yaml"))
    if len(names) < 10:
        fail(f"only {len(names)} bad cases")
    with tempfile.TemporaryDirectory() as tmp:
        for n in names:
            path = os.path.join(bad_dir, n)
            with open(path) as f:
                first = f.readline()
            if not first.startswith("# expect: "):
                fail(f"{n}: first line must be '# expect: TEXT'")
            expect = first[len("# expect: "):].strip()
            p = run_replay(replay, path, os.path.join(tmp, "o.pcap"),
                           os.path.join(tmp, "o.json"))
            lines = p.stderr.splitlines()
            if p.returncode != 2 or len(lines) != 1:
                fail(f"{n}: exit {p.returncode}, stderr {p.stderr!r}")
            if not lines[0].startswith(f"rocemu-replay: {path}:") or \
                    expect not in lines[0]:
                fail(f"{n}: error {lines[0]!r} lacks {expect!r}")
            if p.stdout:
                fail(f"{n}: printed a summary")
    print(f"PASS {len(names)} bad cases")


def read_pcapng(path):
    """The Enhanced Packet Blocks' data, in file order (little-endian
    files, one interface: what rocemu writes)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x0a\x0d\x0d\x0a":
        fail(f"{path}: not pcapng")
    frames, off = [], 0
    while off + 12 <= len(data):
        btype, blen = struct.unpack_from("<II", data, off)
        if btype == 6:
            caplen = struct.unpack_from("<I", data, off + 20)[0]
            frames.append(data[off + 28:off + 28 + caplen])
        off += blen
    return frames


def reason_codes(header):
    """{name: code} from the X-macro table of nic/drop_reason.h: a code is
    the reason's position in it."""
    import re
    text = open(header).read()
    names = re.findall(r"X\(k\w+,\s*(\w+),", text)
    if len(names) < 40 or names[0] != "none":
        fail(f"{header}: {len(names)} reasons read")
    return {n: i for i, n in enumerate(names)}


def verdicts(replay, case_dir, shared, header):
    codes = reason_codes(header)
    _, inp = read_pcap(os.path.join(case_dir, "input.pcap"))
    _, gold = read_pcap(os.path.join(case_dir, "golden.pcap"))
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.pcapng")
        p = run_replay(replay, os.path.join(case_dir, "case.yaml"), out,
                       os.path.join(tmp, "out.json"))
        if p.returncode != 0:
            fail(f"exit {p.returncode}: {p.stderr}")
        rows = subprocess.run(
            ["tshark", "-r", out, "-n", "-T", "fields", "-E", "separator=|",
             "-e", "frame.packet_flags_direction", "-e", "frame.packet_id",
             "-e", "frame.verdict.hw", "-e", "frame.comment",
             "-e", "infiniband.bth.opcode", "-e", "infiniband.bth.psn",
             "-e", "infiniband.aeth.syndrome"],
            capture_output=True, text=True, timeout=120).stdout.splitlines()
        blocks = read_pcapng(out)
        chk = subprocess.run(["bash", os.path.join(shared, "oracle",
                                                   "tshark_check.sh"), "-q",
                              out], capture_output=True, text=True,
                             timeout=120)
        if chk.returncode != 0:
            fail("tshark_check: " + chk.stdout[-2000:])
        # The input is lossy by design (no stream checks); the one frame
        # the oracle finds wrong is the one the RNIC dropped for its ICRC.
        chk = subprocess.run([sys.executable, os.path.join(
            shared, "oracle", "check_pcap.py"), "--no-streams", out],
            capture_output=True, text=True, timeout=120)
        errors = [l for l in chk.stdout.splitlines() if ": ERROR " in l]
        # The same input as a tshark-written pcapng: the same output.
        conv = os.path.join(tmp, "case")
        shutil.copytree(case_dir, conv)
        subprocess.run(["editcap", "-F", "pcapng",
                        os.path.join(case_dir, "input.pcap"),
                        os.path.join(conv, "input.pcap")], check=True,
                       capture_output=True, timeout=60)
        with open(os.path.join(conv, "input.pcap"), "rb") as f:
            if f.read(4) != b"\x0a\x0d\x0d\x0a":
                fail("editcap did not write pcapng")
        again = os.path.join(tmp, "again.pcap")
        p = run_replay(replay, os.path.join(conv, "case.yaml"), again,
                       os.path.join(tmp, "again.json"))
        with open(again, "rb") as f, \
                open(os.path.join(case_dir, "golden.pcap"), "rb") as g:
            if p.returncode != 0 or f.read() != g.read():
                fail(f"a pcapng input (editcap) did not give the golden "
                     f"output: {p.returncode} {p.stderr}")
    if len(rows) != len(blocks):
        fail(f"tshark read {len(rows)} frames, the file has {len(blocks)}")
    fields = [r.split("|") for r in rows]
    inbound = [b for f, b in zip(fields, blocks) if f[0] == "0x00000001"]
    outbound = [b for f, b in zip(fields, blocks) if f[0] == "0x00000002"]
    if len(inbound) + len(outbound) != len(blocks):
        fail("a frame without its direction")
    fed = [b for _, b in inp if b[30:34] == ip("10.0.0.1")]  # select: dst_ip
    if inbound != fed:
        fail(f"{len(inbound)} inbound frames are not the {len(fed)} of "
             "input.pcap the case selects")
    if outbound != [b for _, b in gold]:
        fail(f"{len(outbound)} outbound frames are not golden.pcap's "
             f"{len(gold)}")
    ids = [int(f[1]) for f in fields]
    if len(set(ids)) != len(ids) or 0 in ids:
        fail(f"packet ids not unique and non-zero: {ids}")
    by_id = {int(f[1]): f for f in fields}

    def code(f):
        return int(f[2].replace(" ", "").replace(":", ""), 16) if f[2] else 0
    name_of = {v: k for k, v in codes.items()}
    got = collections.Counter(name_of[code(f)] for f in fields if code(f))
    want = {"bad_icrc": 1, "psn_sequence": 3, "duplicate": 3}
    for k, v in want.items():
        if got.get(k) != v:
            fail(f"{got.get(k)} frames with verdict {k}, expected {v}: {got}")
    for f in fields:
        if code(f) and f[0] != "0x00000001":
            fail(f"an outbound frame carries verdict {code(f)}: {f}")
        if code(f) and not f[3]:
            fail(f"verdict {name_of[code(f)]} without words: {f}")
    icrc = [i for i, f in enumerate(fields) if code(f) == codes["bad_icrc"]]
    if fields[icrc[0]][3] != "dropped: ICRC mismatch":
        fail(f"ICRC verdict in words: {fields[icrc[0]][3]!r}")
    if len(errors) != 1 or not errors[0].startswith(
            f"frame {icrc[0] + 1}: ERROR ICRC mismatch"):
        fail(f"check_pcap's errors {errors}, expected the ICRC of frame "
             f"{icrc[0] + 1} only")
    # Each PSN sequence NAK answers the first frame past its gap.
    naks = [f for f in fields if f[6] and int(f[6], 0) == 0x60]
    if [int(f[5]) for f in naks] != [0x102, 0x106]:
        fail(f"NAKs {[(f[5], f[3]) for f in naks]}")
    for f in naks:
        m = __import__("re").match(
            r"answers packet (\d+): PSN out of sequence: expected "
            r"0x([0-9a-f]{6}), received 0x([0-9a-f]{6})$", f[3])
        if not m:
            fail(f"NAK's comment {f[3]!r}")
        cause = by_id.get(int(m.group(1)))
        if cause is None or cause[0] != "0x00000001" or \
                code(cause) != codes["psn_sequence"] or \
                int(cause[5]) != int(m.group(3), 16) or \
                int(m.group(2), 16) != int(f[5]):
            fail(f"NAK {f} names {cause}")
        if not cause[3].startswith("NAKed: PSN out of sequence"):
            fail(f"the NAKed frame says {cause[3]!r}")
    # Every answer to a duplicate names an inbound duplicate.
    answers = [f for f in fields if "duplicate request" in f[3] and
               f[0] == "0x00000002"]
    if len(answers) < 3:
        fail(f"{len(answers)} answers to duplicates")
    for f in answers:
        m = __import__("re").match(r"answers packet (\d+): ", f[3])
        cause = by_id.get(int(m.group(1))) if m else None
        if cause is None or code(cause) != codes["duplicate"]:
            fail(f"answer {f} names {cause}")
    print(f"PASS verdicts: {dict(got)}, {len(naks)} NAKs and "
          f"{len(answers)} answers named by their cause")


def main():
    mode = sys.argv[1]
    if mode == "golden":
        golden(sys.argv[2], sys.argv[3], sys.argv[4])
    elif mode == "negative":
        negative(sys.argv[2], sys.argv[3])
    elif mode == "bad":
        bad(sys.argv[2], sys.argv[3])
    elif mode == "verdicts":
        verdicts(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5])
    else:
        fail("unknown mode " + mode)


if __name__ == "__main__":
    main()
