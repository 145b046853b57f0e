#!/usr/bin/env python3
"""Our own Wireshark check of the codec demo capture.

Writes the demo capture (with its manifest of what was built) to a temporary
directory, dissects it with tshark and fails unless, for every frame:
  * tshark reports no malformed packet and no expert warning or error, with
    IP and UDP checksum validation on (IPv6 UDP checksums included);
  * a RoCE frame is dissected as InfiniBand with the BTH opcode the demo
    built, and (except the CNP, FLUSH, ATOMIC WRITE and XRC, whose headers
    Wireshark 4.0 does not dissect past the BTH) with an ICRC field;
    a PFC/PAUSE frame as MAC Control with the right opcode;
  * tshark's BTH DestQP, PSN, PadCnt, P_Key and ICRC equal what rocemu-decode
    prints for the same frame (two independent decoders agree).

usage: tshark_demo_check.py DEMO_BINARY DECODE_BINARY
"""
import json
import os
import subprocess
import sys
import tempfile

# Payload heuristics that misparse arbitrary RDMA payload bytes (see
# ../shared/reference/dpdk.md section 7); disabled when this tshark has them.
HEURISTIC_PROTOCOLS = ["rpcordma", "smb_direct", "nvme-rdma", "iser", "smc",
                       "lnet", "drbd", "sdp", "infiniband_sdp", "fcoib",
                       "infiniband.eoib"]
SEVERITY_WARNING = 6291456  # _ws.expert.severity of PI_WARN
# Opcodes Wireshark 4.0 dissects no further than the BTH: the CNP (it names
# 0x80 "CNP"), IBTA 1.5's RC_FLUSH and RC_ATOMIC_WRITE ("Unknown (28)",
# "Unknown (29)") and XRC's 0xA0-0xB7, which it names ("Extended Reliable
# Connection (XRC) - RDMA WRITE Only") but follows with no XRCETH: the rest,
# ICRC included, is "Unknown/Vendor Specific Data" (docs/verbs.md).
WIRESHARK_UNKNOWN = (0x81, 0x1C, 0x1D) + tuple(range(0xA0, 0xB8))
FIELDS = ["frame.number", "infiniband.bth.opcode", "infiniband.bth.destqp",
          "infiniband.bth.psn", "infiniband.bth.padcnt",
          "infiniband.bth.p_key", "infiniband.invariant.crc", "macc.opcode",
          "_ws.malformed", "_ws.expert.severity", "_ws.expert.message"]


def num(s):
    return int(s, 0)


def tshark_protocols():
    out = subprocess.run(["tshark", "-G", "protocols"], check=True,
                         capture_output=True, text=True).stdout
    return {line.split("\t")[2] for line in out.splitlines()
            if line.count("\t") >= 2}


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    demo, decode = sys.argv[1:]
    errors = []
    with tempfile.TemporaryDirectory() as tmp:
        pcap = os.path.join(tmp, "demo.pcap")
        manifest = os.path.join(tmp, "demo.tsv")
        subprocess.run([demo, "--manifest", manifest, pcap], check=True,
                       stdout=subprocess.DEVNULL)
        built = []
        with open(manifest) as f:
            for line in f:
                no, kind, opcode, label = line.rstrip("\n").split("\t")
                built.append((int(no), kind, int(opcode), label))

        have = tshark_protocols()
        cmd = ["tshark", "-r", pcap, "-n",
               "-o", "infiniband.rroce.port:4791",
               "-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE",
               "-T", "fields", "-E", "separator=/t", "-E", "occurrence=a",
               "-E", "aggregator=;"]
        for p in HEURISTIC_PROTOCOLS:
            if p in have:
                cmd += ["--disable-protocol", p]
        for fld in FIELDS:
            cmd += ["-e", fld]
        out = subprocess.run(cmd, check=True, capture_output=True,
                             text=True).stdout
        rows = [dict(zip(FIELDS, line.split("\t")))
                for line in out.splitlines()]

        dec = subprocess.run([decode, "--json", pcap], capture_output=True,
                             text=True)
        if dec.returncode != 0:
            errors.append("rocemu-decode exited %d" % dec.returncode)
        decoded = [json.loads(line) for line in dec.stdout.splitlines()]

    if len(rows) != len(built) or len(decoded) != len(built):
        print("FAIL: demo built %d frames, tshark saw %d, rocemu-decode %d"
              % (len(built), len(rows), len(decoded)))
        return 1
    opcodes_seen = set()
    for (no, kind, opcode, label), row, d in zip(built, rows, decoded):
        where = "frame %d (%s)" % (no, label)
        if row["_ws.malformed"]:
            errors.append("%s: tshark: malformed" % where)
        sevs = [s for s in row["_ws.expert.severity"].split(";") if s]
        msgs = row["_ws.expert.message"].split(";")
        for s, m in zip(sevs, msgs):
            if int(s) >= SEVERITY_WARNING:
                errors.append("%s: tshark expert: %s" % (where, m))
        if opcode >= 0:
            if not row["infiniband.bth.opcode"]:
                errors.append("%s: tshark did not dissect InfiniBand" % where)
                continue
            got = num(row["infiniband.bth.opcode"])
            opcodes_seen.add(got)
            if got != opcode:
                errors.append("%s: tshark opcode 0x%02x, built 0x%02x"
                              % (where, got, opcode))
            bth = d.get("bth", {})
            for fld, key in (("infiniband.bth.destqp", "destqp"),
                             ("infiniband.bth.psn", "psn"),
                             ("infiniband.bth.padcnt", "padcnt"),
                             ("infiniband.bth.p_key", "pkey")):
                if num(row[fld]) != bth.get(key):
                    errors.append("%s: tshark %s=%s, rocemu-decode %s=%r"
                                  % (where, fld, row[fld], key, bth.get(key)))
            crc = row["infiniband.invariant.crc"]
            if opcode in WIRESHARK_UNKNOWN:
                # Its BTH is dissected; the rest is left as vendor data.
                if crc:
                    errors.append("%s: tshark now dissects opcode 0x%02x: "
                                  "update docs/verbs.md" % (where, opcode))
            elif not crc:
                errors.append("%s: tshark found no ICRC" % where)
            if crc:
                # tshark shows the 4 wire bytes big-endian; the ICRC register
                # is stored least-significant byte first.
                wire = num(crc).to_bytes(4, "big")
                if int.from_bytes(wire, "little") != d.get("icrc"):
                    errors.append("%s: tshark ICRC %s, rocemu-decode %r"
                                  % (where, crc, d.get("icrc")))
        else:
            want = 0x0101 if kind == "pfc" else 0x0001
            if not row["macc.opcode"] or num(row["macc.opcode"]) != want:
                errors.append("%s: tshark MAC Control opcode %r, built 0x%04x"
                              % (where, row["macc.opcode"], want))
    for e in errors:
        print("ERROR", e)
    print("tshark_demo_check: %s frames=%d opcodes=%d errors=%d"
          % ("FAIL" if errors else "PASS", len(built), len(opcodes_seen),
             len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
