#!/usr/bin/env python3
"""What a pingpong run must look like on the wire, checked from the tools'
own output lines and a capture decoded by ../shared/oracle/check_pcap.py.

Both ibv_*_pingpong and rocemu-pingpong print
  "  local address:  LID 0x0000, QPN 0x000011, PSN 0x1a2b3c, GID ::ffff:..."
  "  remote address: LID 0x0000, QPN 0x000012, PSN 0x4d5e6f, GID ::ffff:..."
  "N bytes in X seconds = Y Mbit/sec" and "N iters in X seconds = ..."
so a run is checked the same way whichever side is rocemu:
  * the output: both sides saw each other's QPN/PSN/GID as announced, and
    size * iters * 2 bytes moved;
  * the wire (frames check_pcap.py decoded, every one with a good ICRC and
    layout): RC - each side's SENDs go to the peer's QPN starting at its own
    announced PSN, `iters` messages of ceil(size / mtu) packets
    (FIRST/MIDDLE/LAST or ONLY) carrying `size` bytes each, and ACKs come
    back; UD - `iters` UD_SEND_ONLY each way with the tools' Q_Key
    0x11111111, the sender's QPN in DETH, `size` bytes each.
Retransmissions (rxe under TCG retransmits now and then) repeat PSNs:
messages are counted by distinct PSN.

As a script: pingpong_wire.py SHARED_DIR PCAP rc|ud SIZE ITERS MTU
SERVER_OUT CLIENT_OUT  -> prints ok/FAIL lines, exit 1 on any failure.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

UD_QKEY = 0x11111111
ADDR_RE = re.compile(
    r"^\s*(local|remote) address:\s+LID 0x([0-9a-f]+), QPN 0x([0-9a-f]+), "
    r"PSN 0x([0-9a-f]+)[,:] GID (\S+)\s*$", re.M)
BYTES_RE = re.compile(r"^(\d+) bytes in ([\d.]+) seconds = ([\d.]+) Mbit/sec",
                      re.M)
ITERS_RE = re.compile(r"^(\d+) iters in ([\d.]+) seconds = ([\d.]+) usec/iter",
                      re.M)


def parse_output(text):
    """The address lines and the result lines of one pingpong side."""
    out = {}
    for kind, lid, qpn, psn, gid in ADDR_RE.findall(text):
        out[kind] = dict(lid=int(lid, 16), qpn=int(qpn, 16),
                         psn=int(psn, 16), gid=gid)
    m = BYTES_RE.search(text)
    if m:
        out["bytes"] = int(m.group(1))
    m = ITERS_RE.search(text)
    if m:
        out["iters"] = int(m.group(1))
    return out


def check_outputs(server, client, size, iters):
    """Failures (strings) of the two sides' printed addresses/results."""
    fails = []
    for name, o in (("server", server), ("client", client)):
        for k in ("local", "remote", "bytes", "iters"):
            if k not in o:
                fails.append(f"{name}: no '{k}' line in the output")
    if fails:
        return fails
    for a, b, an, bn in ((server, client, "server", "client"),
                         (client, server, "client", "server")):
        if a["remote"] != b["local"]:
            fails.append(f"{an} saw {a['remote']} but {bn} announced "
                         f"{b['local']}")
        if a["bytes"] != size * iters * 2 or a["iters"] != iters:
            fails.append(f"{an}: {a['bytes']} bytes / {a['iters']} iters, "
                         f"want {size * iters * 2} / {iters}")
    return fails


def decode(shared, pcap, extra=()):
    """Runs check_pcap.py; returns (returncode, summary line, frames)."""
    tool = os.path.join(shared, "oracle", "check_pcap.py")
    with tempfile.NamedTemporaryFile(suffix=".json") as js:
        p = subprocess.run([sys.executable, tool, "--json", js.name, *extra,
                            pcap], capture_output=True, text=True,
                           timeout=120)
        summary = (p.stdout.strip().splitlines() or ["(no output)"])[-1]
        try:
            frames = json.load(open(js.name))
        except (OSError, ValueError):
            frames = []
    return p.returncode, summary, frames


def _gid_ip(gid):
    """The address a GID as the tools print it stands for (IPv4-mapped GIDs
    as dotted quads, as check_pcap.py reports ip_src/ip_dst)."""
    return gid[7:] if gid.startswith("::ffff:") and "." in gid else gid


def _packets_per_message(size, mtu):
    return max(1, -(-size // mtu))


def check_wire(frames, transport, size, iters, mtu, server, client):
    """Failures of the frames of one run (server/client: parse_output)."""
    fails = []
    roce = [f["fields"] for f in frames if f.get("kind") == "rocev2"]
    bad_icrc = [f for f in roce if not f.get("icrc_ok")]
    if bad_icrc:
        fails.append(f"{len(bad_icrc)} frames with a bad ICRC")
    for me, peer, name in ((client, server, "client"),
                           (server, client, "server")):
        # Two RNICs may hand out the same QPNs: a direction is its IP pair
        # (the GIDs) and the destination QP.
        me_ip, peer_ip = _gid_ip(me["local"]["gid"]), _gid_ip(peer["local"]["gid"])
        to_peer = [f for f in roce if f.get("dqp") == peer["local"]["qpn"] and
                   f.get("ip_src") == me_ip and f.get("ip_dst") == peer_ip]
        if transport == "ud":
            sends = [f for f in to_peer if f["opcode_name"] == "UD_SEND_ONLY"]
            psns = sorted({f["psn"] for f in sends})
            if len(psns) != iters:
                fails.append(f"{name}: {len(psns)} UD sends (distinct PSNs) "
                             f"to QPN {peer['local']['qpn']:#x}, want {iters}")
            if sends and psns[0] != me["local"]["psn"]:
                fails.append(f"{name}: first UD PSN {psns[0]:#x}, announced "
                             f"{me['local']['psn']:#x}")
            for f in sends:
                if (f.get("deth_qkey") != UD_QKEY or
                        f.get("deth_srcqp") != me["local"]["qpn"] or
                        f.get("payload_len") != size):
                    fails.append(
                        f"{name}: UD send PSN {f['psn']:#x}: Q_Key "
                        f"{f.get('deth_qkey', 0):#x}, src QP "
                        f"{f.get('deth_srcqp', 0):#x}, {f.get('payload_len')}"
                        f" bytes; want {UD_QKEY:#x}, "
                        f"{me['local']['qpn']:#x}, {size}")
                    break
            continue
        sends = [f for f in to_peer if f["opcode_name"].startswith("RC_SEND_")]
        by_psn = {}
        for f in sends:
            by_psn.setdefault(f["psn"], f)
        per_msg = _packets_per_message(size, mtu)
        want = iters * per_msg
        if len(by_psn) != want:
            fails.append(f"{name}: {len(by_psn)} distinct SEND packets to QPN "
                         f"{peer['local']['qpn']:#x}, want {want} "
                         f"({iters} x {per_msg})")
            continue
        start = me["local"]["psn"]
        names, total = [], 0
        for i in range(want):
            f = by_psn.get((start + i) & 0xFFFFFF)
            if f is None:
                fails.append(f"{name}: no SEND with PSN {(start + i):#x} "
                             f"(announced start {start:#x})")
                break
            names.append(f["opcode_name"])
            total += f.get("payload_len", 0)
        else:
            if per_msg == 1:
                pattern = ["RC_SEND_ONLY"] * iters
            else:
                pattern = (["RC_SEND_FIRST"] +
                           ["RC_SEND_MIDDLE"] * (per_msg - 2) +
                           ["RC_SEND_LAST"]) * iters
            if names != pattern:
                fails.append(f"{name}: SEND opcodes {names[:per_msg + 1]}..., "
                             f"want {pattern[:per_msg + 1]}...")
            if total != size * iters:
                fails.append(f"{name}: SEND payload {total} bytes, want "
                             f"{size * iters}")
        acks = [f for f in roce if f.get("dqp") == me["local"]["qpn"] and
                f.get("ip_src") == peer_ip and f.get("ip_dst") == me_ip and
                f["opcode_name"] == "RC_ACKNOWLEDGE"]
        if not acks:
            fails.append(f"{name}: no ACK came back to QPN "
                         f"{me['local']['qpn']:#x}")
    return fails


def main():
    if len(sys.argv) != 9:
        print(__doc__)
        return 2
    shared, pcap, transport = sys.argv[1:4]
    size, iters, mtu = (int(x) for x in sys.argv[4:7])
    server = parse_output(open(sys.argv[7], errors="replace").read())
    client = parse_output(open(sys.argv[8], errors="replace").read())
    fails = check_outputs(server, client, size, iters)
    rc, summary, frames = decode(shared, pcap, ["--strict"])
    print(("ok   " if rc == 0 else "FAIL ") + summary)
    if rc != 0:
        fails.append("check_pcap.py failed")
    if not fails:
        fails += check_wire(frames, transport, size, iters, mtu, server,
                            client)
    for f in fails:
        print("FAIL " + f)
    if not fails:
        print(f"ok   {transport} {size} B x {iters}: addresses, results and "
              f"wire as ibv_{transport}_pingpong")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
