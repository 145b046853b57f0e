#!/usr/bin/env python3
"""Seeds of net_stack_fuzzer (tests/fuzz/net_stack_fuzzer.cc): valid ARP,
ICMP echo, neighbour discovery, ICMPv6 echo, RoCEv2 and PAUSE frames,
untagged and 802.1Q-tagged, in its input format
[addresses u8][prefix4 u8][prefix6 u8][vlan u8][vid u16 be] then ops.
Usage: make_net_stack_corpus.py DIR"""
import os
import struct
import sys

OUR_MAC = bytes([2, 0, 0, 0x77, 0, 2])
PEER_MAC = bytes([2, 0, 0, 0x77, 0, 1])
BCAST = b"\xff" * 6
OUR4 = bytes([10, 77, 0, 2])
PEER4 = bytes([10, 77, 0, 1])
OUR6 = bytes([0xfd, 0x77]) + bytes(13) + b"\x02"
PEER6 = bytes([0xfd, 0x77]) + bytes(13) + b"\x01"
ALL_NODES = bytes([0xff, 2]) + bytes(13) + b"\x01"
# Fuzzer buffer-size index of 1600 bytes; tidy flags: headers, lengths,
# checksums (the frames below are valid already; the flags keep mutations
# of them valid too).
BUF_1600 = 23
TIDY = 0x38


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def eth(dst, etype, vid=None):
    if vid is None:
        return dst + PEER_MAC + struct.pack("!H", etype)
    return dst + PEER_MAC + struct.pack("!HHH", 0x8100, vid, etype)


def arp(op, tpa, dst=BCAST, vid=None):
    body = struct.pack("!HHBBH", 1, 0x0800, 6, 4, op)
    body += PEER_MAC + PEER4 + (OUR_MAC if op == 2 else bytes(6)) + tpa
    return eth(dst, 0x0806, vid) + body


def ipv4(proto, l4, vid=None):
    hdr = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), 1,
                                0x4000, 64, proto, 0, PEER4, OUR4))
    hdr[10:12] = struct.pack("!H", csum(bytes(hdr)))
    return eth(OUR_MAC, 0x0800, vid) + bytes(hdr) + l4


def icmp_echo(vid=None):
    msg = bytearray(struct.pack("!BBHHH", 8, 0, 0, 0x1234, 1) + b"rocemu!!")
    msg[2:4] = struct.pack("!H", csum(bytes(msg)))
    return ipv4(1, bytes(msg), vid)


def udp(dport, payload):
    return struct.pack("!HHHH", 49152, dport, 8 + len(payload), 0) + payload


def ipv6(src, dst, nh, l4, hop=64, dst_mac=OUR_MAC, vid=None):
    hdr = struct.pack("!IHBB", 0x60000000, len(l4), nh, hop) + src + dst
    return eth(dst_mac, 0x86DD, vid) + hdr + l4


def icmp6(src, dst, msg):
    msg = bytearray(msg)
    pseudo = src + dst + struct.pack("!IxxxB", len(msg), 58)
    msg[2:4] = struct.pack("!H", csum(pseudo + bytes(msg)))
    return bytes(msg)


def solicited(a):
    return bytes([0xff, 2]) + bytes(9) + bytes([1, 0xff]) + a[13:]


def ns(src=PEER6, vid=None):
    group = solicited(OUR6)
    msg = struct.pack("!BBHI", 135, 0, 0, 0) + OUR6
    if src != bytes(16):
        msg += bytes([1, 1]) + PEER_MAC
    mac = b"\x33\x33" + group[12:]
    return ipv6(src, group, 58, icmp6(src, group, msg), 255, mac, vid)


def na(vid=None):
    msg = struct.pack("!BBHI", 136, 0, 0, 0x60000000) + PEER6
    msg += bytes([2, 1]) + PEER_MAC
    return ipv6(PEER6, OUR6, 58, icmp6(PEER6, OUR6, msg), 255, vid=vid)


def echo6(vid=None):
    msg = struct.pack("!BBHHH", 128, 0, 0, 7, 1) + b"ping6 payload"
    return ipv6(PEER6, OUR6, 58, icmp6(PEER6, OUR6, msg), vid=vid)


def roce4(vid=None):
    bth = bytes([0x04, 0, 0xff, 0xff, 0, 0, 0, 0x11, 0, 0, 0, 1])
    return ipv4(17, udp(4791, bth + bytes(4)), vid)


def roce6(vid=None):
    bth = bytes([0x04, 0, 0xff, 0xff, 0, 0, 0, 0x11, 0, 0, 0, 1])
    return ipv6(PEER6, OUR6, 17, udp(4791, bth + bytes(4)), vid=vid)


def pause():
    body = struct.pack("!HH", 1, 0xFFFF) + bytes(42)
    return bytes([1, 0x80, 0xc2, 0, 0, 1]) + PEER_MAC + b"\x88\x08" + body


def header(vid=None):
    # 10.77.0.2/24, 192.168.5.2/16 and fd77::2/64; the port VLAN if any.
    return bytes([7, 24, 64, 0 if vid is None else 1]) + struct.pack(
        "!H", vid or 0)


def rx(frame, flags=TIDY, pick=0, buf=BUF_1600):
    return bytes([0, flags, pick, buf]) + struct.pack("!H", len(frame)) + frame


def resolve(sel, target=b"", buf=BUF_1600):
    return bytes([4, sel]) + target + bytes([buf])


def time_step(ms):
    return bytes([0x83]) + struct.pack("!I", ms)


def build(arp_request, sel, target=b"", buf=BUF_1600):
    return bytes([0x85 if arp_request else 5, sel]) + target + bytes([buf])


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    seeds = {
        "arp_request": header() + rx(arp(1, OUR4)),
        "arp_reply": header() + resolve(0) + rx(arp(2, OUR4, OUR_MAC)),
        "icmp_echo": header() + rx(icmp_echo()),
        "nd_solicit": header() + rx(ns()),
        "nd_solicit_dad": header() + rx(ns(bytes(16))),
        "nd_advert": header() + resolve(1) + rx(na()),
        "icmpv6_echo": header() + rx(echo6()),
        "roce_v4": header() + rx(roce4()),
        "roce_v6": header() + rx(roce6()),
        "pause": header() + rx(pause()),
        "vlan_arp_request": header(100) + rx(arp(1, OUR4, vid=100)),
        "vlan_icmp_echo": header(100) + rx(icmp_echo(vid=0x2064)),
        "vlan_nd_solicit": header(7) + rx(ns(vid=7)),
        "vlan_icmpv6_echo": header(7) + rx(echo6(vid=7)),
        "vlan_roce_v4": header(100) + rx(roce4(vid=100)),
        # Resolution rounds: solicit, retry after a second, learn, expire.
        "resolve_rounds": header(5) + resolve(0) + resolve(1) +
        resolve(2) + time_step(1500) + resolve(0) + resolve(6, b"\x09") +
        build(True, 4, PEER4) + build(False, 5, PEER6) + time_step(400000) +
        bytes([0x87]) + resolve(1),
    }
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
