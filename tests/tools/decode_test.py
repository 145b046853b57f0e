#!/usr/bin/env python3
"""Tests of rocemu-decode on real files.

usage: decode_test.py DECODE_BINARY DEMO_BINARY SHARED_DIR

The decoder's JSON is checked field by field against the independent oracle
../shared/oracle/check_pcap.py (--json) on the demo capture and on the public
captures, so a wrong field in either decoder shows up as a disagreement.
"""
import glob
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

DECODE = DEMO = SHARED = None
ROCE_KEYS = {"frame", "ok", "error", "kind", "len", "caplen", "eth", "ip",
             "udp", "bth", "payload_len", "icrc", "icrc_valid"}
BTH_KEYS = {"opcode", "opcode_name", "se", "m", "padcnt", "tver", "pkey",
            "fecn", "becn", "destqp", "ackreq", "psn"}
# Extension headers implied by the opcode name (IBTA spelling).
EXT_BY_NAME = [("RDMA_WRITE_FIRST", "reth"), ("RDMA_WRITE_ONLY", "reth"),
               ("RDMA_READ_REQUEST", "reth"), ("ACKNOWLEDGE", "aeth"),
               ("READ_RESPONSE_FIRST", "aeth"), ("READ_RESPONSE_LAST", "aeth"),
               ("READ_RESPONSE_ONLY", "aeth"), ("UD_", "deth"),
               ("IMMEDIATE", "immdt"), ("INVALIDATE", "ieth"),
               ("COMPARE_SWAP", "atomiceth"), ("FETCH_ADD", "atomiceth"),
               ("ATOMIC_ACKNOWLEDGE", "atomicacketh")]


def is_xrc(d):
    return 0xA0 <= d.get("bth", {}).get("opcode", 0) <= 0xB7


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, **kw)


def decode_json(path):
    p = run([DECODE, "--json", path])
    frames = [json.loads(line) for line in p.stdout.splitlines()]
    return p.returncode, frames, p.stderr


def oracle_json(path, tmp):
    out = os.path.join(tmp, "oracle.json")
    run(["/usr/bin/python3", os.path.join(SHARED, "oracle", "check_pcap.py"),
         "--any-pkey", "--no-streams", "-q", "--json", out, path])
    with open(out) as f:
        return {fr["frame"]: fr for fr in json.load(f)}


def pcap_frame_offsets(path):
    """Byte offset of each frame's data in a classic little-endian pcap."""
    with open(path, "rb") as f:
        raw = f.read()
    offsets, off = [], 24
    while off + 16 <= len(raw):
        caplen = struct.unpack_from("<I", raw, off + 8)[0]
        offsets.append(off + 16)
        off += 16 + caplen
    return offsets


class DemoCapture(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        cls.pcap = os.path.join(cls.tmp, "demo.pcap")
        cls.manifest = os.path.join(cls.tmp, "demo.tsv")
        subprocess.run([DEMO, "--manifest", cls.manifest, cls.pcap],
                       check=True, stdout=subprocess.DEVNULL)
        cls.built = []
        with open(cls.manifest) as f:
            for line in f:
                no, kind, opcode, label = line.rstrip("\n").split("\t")
                cls.built.append((int(no), kind, int(opcode), label))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def corrupted_copy(self, frame_no, offset_in_frame, name):
        path = os.path.join(self.tmp, name)
        shutil.copy(self.pcap, path)
        off = pcap_frame_offsets(path)[frame_no - 1] + offset_in_frame
        with open(path, "r+b") as f:
            f.seek(off)
            b = f.read(1)[0]
            f.seek(off)
            f.write(bytes([b ^ 0x01]))
        return path

    def test_every_frame_ok_with_expected_fields(self):
        rc, frames, _ = decode_json(self.pcap)
        self.assertEqual(rc, 0)
        self.assertEqual(len(frames), len(self.built))
        for (no, kind, opcode, label), d in zip(self.built, frames):
            with self.subTest(frame=no, label=label):
                self.assertEqual(d["frame"], no)
                self.assertIs(d["ok"], True)
                self.assertIsNone(d["error"])
                self.assertEqual(d["kind"], kind)
                self.assertEqual(d["len"], d["caplen"])
                if kind == "roce":
                    self.assertLessEqual(ROCE_KEYS, set(d))
                    self.assertEqual(BTH_KEYS, set(d["bth"]))
                    self.assertEqual(d["bth"]["opcode"], opcode)
                    self.assertIs(d["icrc_valid"], True)
                    self.assertEqual(d["udp"]["dport"], 4791)
                    self.assertEqual(d["bth"]["padcnt"],
                                     -d["payload_len"] % 4)
                    name = d["bth"]["opcode_name"]
                    for marker, ext in EXT_BY_NAME:
                        if marker in name:
                            self.assertIn(ext, d, name)
                    # XRC requests name the demo's XRC SRQ; responses none.
                    request = name.startswith("XRC_") and not any(
                        m in name for m in ("RESPONSE", "ACKNOWLEDGE"))
                    self.assertEqual("xrceth" in d, request, name)
                    if request:
                        self.assertEqual(d["xrceth"]["xrcsrq"], 0x123)
                    self.assertEqual("vlan" in d, "VLAN" in label)
                    self.assertEqual(d["ip"]["version"],
                                     6 if "IPv6" in label else 4)
                    self.assertEqual("flow_label" in d["ip"],
                                     d["ip"]["version"] == 6)
                elif kind == "pfc":
                    self.assertEqual(len(d["pfc"]["quanta"]), 8)
                    self.assertIsNone(d["icrc_valid"])
                else:
                    self.assertIn("quanta", d["pause"])

    def test_fields_agree_with_independent_oracle(self):
        rc, frames, _ = decode_json(self.pcap)
        self.assertEqual(rc, 0)
        compare_with_oracle(self, frames, oracle_json(self.pcap, self.tmp))

    def test_special_frames(self):
        _, frames, _ = decode_json(self.pcap)
        labels = {no: label for no, _, _, label in self.built}
        cnps = [d for d in frames if d.get("bth", {}).get("opcode") == 0x81]
        self.assertEqual(len(cnps), 2)
        for d in cnps:
            self.assertIs(d["bth"]["becn"], True)
            self.assertEqual(d["ip"]["dscp"], 48)
            self.assertEqual(d["payload_len"], 0)
        ce = [d for d in frames if "ECN-CE" in labels[d["frame"]]
              and d["bth"]["destqp"] == 0x62]
        self.assertEqual([d["ip"]["ecn"] for d in ce], [3])
        # The RC connection's NAKs (the XRC connection repeats them).
        rc = [d for d in frames if not is_xrc(d)]
        naks = [d["aeth"]["nak"] for d in rc
                if d.get("aeth", {}).get("type") == "nak"]
        self.assertEqual(sorted(naks), sorted(
            ["psn_sequence_error", "invalid_request", "remote_access_error",
             "remote_operational_error"]))
        rnr = [d["aeth"] for d in rc
               if d.get("aeth", {}).get("type") == "rnr_nak"]
        self.assertEqual([a["value"] for a in rnr], [14])
        pads = {d["bth"]["padcnt"] for d in frames if "bth" in d}
        self.assertEqual(pads, {0, 1, 2, 3})
        xoff = [d["pfc"] for d in frames if d["kind"] == "pfc"][0]
        self.assertEqual(xoff["enable_vector"], 0x08)
        self.assertEqual(xoff["quanta"], [0, 0, 0, 0xFFFF, 0, 0, 0, 0])

    def test_flipped_payload_byte_is_bad_icrc(self):
        # Frame 1 is an IPv4 RC SEND_FIRST: payload starts after
        # Eth 14 + IPv4 20 + UDP 8 + BTH 12 bytes.
        self.assertIn("RC_SEND_FIRST", self.built[0][3])
        path = self.corrupted_copy(1, 14 + 20 + 8 + 12 + 5, "payload.pcap")
        rc, frames, stderr = decode_json(path)
        self.assertEqual(rc, 1)
        self.assertIs(frames[0]["ok"], False)
        self.assertEqual(frames[0]["error"], "bad_icrc")
        self.assertIs(frames[0]["icrc_valid"], False)
        # Headers are still decoded for the report.
        self.assertEqual(frames[0]["bth"]["opcode"], 0)
        self.assertTrue(all(d["ok"] for d in frames[1:]))
        self.assertIn("1 invalid", stderr)
        text = run([DECODE, path])
        self.assertEqual(text.returncode, 1)
        first = text.stdout.splitlines()[0]
        self.assertIn("BAD", first)
        self.assertIn('error="bad_icrc"', first)

    def test_ttl_change_breaks_ip_checksum_not_icrc(self):
        # TTL is masked out of the ICRC but covered by the IPv4 checksum.
        path = self.corrupted_copy(1, 14 + 8, "ttl.pcap")
        rc, frames, _ = decode_json(path)
        self.assertEqual(rc, 1)
        self.assertEqual(frames[0]["error"], "bad_ip_checksum")
        self.assertIs(frames[0]["icrc_valid"], True)

    def test_pcapng_gives_the_same_output(self):
        ng = os.path.join(self.tmp, "demo.pcapng")
        subprocess.run(["editcap", "-F", "pcapng", self.pcap, ng], check=True)
        with open(ng, "rb") as f:
            self.assertEqual(f.read(4), b"\x0a\x0d\x0d\x0a")
        rc1, a, _ = decode_json(self.pcap)
        rc2, b, _ = decode_json(ng)
        self.assertEqual((rc1, rc2), (0, 0))
        self.assertEqual(a, b)

    def test_text_mode_one_line_per_frame(self):
        p = run([DECODE, self.pcap])
        self.assertEqual(p.returncode, 0)
        lines = p.stdout.splitlines()
        self.assertEqual(len(lines), len(self.built) + 1)
        for (no, kind, _, _), line in zip(self.built, lines):
            fields = line.split()
            self.assertEqual(fields[:3], [str(no), "ok", kind])
        self.assertIn("%d frames, %d ok, 0 invalid" %
                      (len(self.built), len(self.built)), lines[-1])

    def test_snaplen_truncation_is_reported_not_invalid(self):
        cut = os.path.join(self.tmp, "cut.pcap")
        subprocess.run(["editcap", "-s", "60", self.pcap, cut], check=True)
        rc, frames, _ = decode_json(cut)
        self.assertEqual(rc, 0)
        long = [d for d in frames if d["len"] > 60]
        self.assertTrue(long)
        for d in long:
            self.assertIs(d["ok"], False)
            self.assertEqual(d["error"], "snaplen_truncated")
            self.assertEqual(d["caplen"], 60)


class PublicCaptures(unittest.TestCase):
    def test_every_roce_frame_ok_and_agrees_with_oracle(self):
        pcaps = sorted(glob.glob(os.path.join(SHARED, "captures-public",
                                              "*.pcap")))
        self.assertGreaterEqual(len(pcaps), 4)
        with tempfile.TemporaryDirectory() as tmp:
            for path in pcaps:
                with self.subTest(pcap=os.path.basename(path)):
                    rc, frames, _ = decode_json(path)
                    self.assertEqual(rc, 0)
                    roce = [d for d in frames if d["kind"] == "roce"]
                    self.assertTrue(roce)
                    for d in roce:
                        self.assertIs(d["ok"], True, d)
                        self.assertIs(d["icrc_valid"], True)
                    compare_with_oracle(self, frames, oracle_json(path, tmp))


class Usage(unittest.TestCase):
    def test_errors_exit_2(self):
        self.assertEqual(run([DECODE]).returncode, 2)
        self.assertEqual(run([DECODE, "/nonexistent.pcap"]).returncode, 2)
        self.assertEqual(run([DECODE, "--no_such_flag", "x"]).returncode, 2)
        with tempfile.NamedTemporaryFile(suffix=".pcap") as f:
            f.write(b"not a capture file at all")
            f.flush()
            self.assertEqual(run([DECODE, f.name]).returncode, 2)


def compare_with_oracle(tc, frames, oracle):
    """Every field both decoders report must agree."""
    compared = 0
    for d in frames:
        o = oracle.get(d["frame"])
        if o is None or o["kind"] not in ("rocev2", "pfc", "pause", "macctrl") \
                or not d["ok"]:
            continue
        # The oracle knows no XRC opcode (no XRCETH, no payload length).
        if is_xrc(d):
            continue
        f = o["fields"]
        pairs = [(d["eth"]["dst"], f.get("eth_dst")),
                 (d["eth"]["src"], f.get("eth_src")),
                 (d["eth"]["type"], f.get("ethertype"))]
        if "vlan" in d:
            v = f["vlan"][0]
            pairs += [(d["vlan"]["pcp"], v["pcp"]),
                      (int(d["vlan"]["dei"]), v["dei"]),
                      (d["vlan"]["vid"], v["vid"])]
        if d["kind"] == "roce":
            ip, b = d["ip"], d["bth"]
            pairs += [(ip["src"], f["ip_src"]), (ip["dst"], f["ip_dst"]),
                      (ip["dscp"], f["ip_dscp"]), (ip["ecn"], f["ip_ecn"]),
                      (d["udp"]["sport"], f["udp_sport"]),
                      (d["udp"]["dport"], f["udp_dport"]),
                      (d["udp"]["checksum"], f["udp_csum"]),
                      (b["opcode"], f["opcode"]), (int(b["se"]), f["se"]),
                      (int(b["m"]), f["m"]), (b["padcnt"], f["pad"]),
                      (b["tver"], f["tver"]), (b["pkey"], f["pkey"]),
                      (int(b["fecn"]), f["fecn"]), (int(b["becn"]), f["becn"]),
                      (b["destqp"], f["dqp"]), (int(b["ackreq"]), f["ackreq"]),
                      (b["psn"], f["psn"]),
                      (d["payload_len"], f["payload_len"]),
                      (struct.pack("<I", d["icrc"]).hex(), f["icrc"]),
                      (d["icrc_valid"], f["icrc_ok"])]
            if ip["version"] == 4:
                pairs += [(ip["ttl"], f["ip_ttl"]), (ip["id"], f["ip_id"]),
                          (int(ip["df"]), (f["ip_flags"] >> 1) & 1)]
            else:
                pairs += [(ip["ttl"], f["ip_hlim"]),
                          (ip["flow_label"], f["ip_flowlabel"])]
            if "reth" in d:
                pairs += [(d["reth"]["va"], f["reth_va"]),
                          (d["reth"]["rkey"], f["reth_rkey"]),
                          (d["reth"]["dma_len"], f["reth_dmalen"])]
            if "aeth" in d:
                a = d["aeth"]
                pairs += [(a["syndrome"], f["aeth_syndrome"]),
                          (a["msn"], f["aeth_msn"]),
                          (a["type"].upper(), f["aeth_type"])]
            if "deth" in d:
                pairs += [(d["deth"]["qkey"], f["deth_qkey"]),
                          (d["deth"]["src_qp"], f["deth_srcqp"])]
            if "immdt" in d:
                pairs += [(d["immdt"]["data"], f["immdt"])]
            if "ieth" in d:
                pairs += [(d["ieth"]["rkey"], f["ieth_rkey"])]
            if "atomiceth" in d:
                a = d["atomiceth"]
                pairs += [(a["va"], f["atomic_va"]),
                          (a["rkey"], f["atomic_rkey"]),
                          (a["swap_add"], f["atomic_swap_add"]),
                          (a["compare"], f["atomic_compare"])]
            if "atomicacketh" in d:
                pairs += [(d["atomicacketh"]["orig"], f["atomicack_orig"])]
        elif d["kind"] == "pfc":
            pairs += [(d["pfc"]["enable_vector"], f["pfc_class_enable"]),
                      (d["pfc"]["quanta"], f["pfc_times"])]
        elif d["kind"] == "pause":
            pairs += [(d["pause"]["quanta"], f["pause_time"])]
        for i, (ours, theirs) in enumerate(pairs):
            tc.assertEqual(ours, theirs, "frame %d, field #%d: %r" %
                           (d["frame"], i, d))
        compared += 1
    tc.assertGreater(compared, 0)


if __name__ == "__main__":
    DECODE, DEMO, SHARED = sys.argv[1:4]
    unittest.main(argv=[sys.argv[0], "-v"])
