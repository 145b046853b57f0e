#!/usr/bin/env python3
"""Seeds of session_fuzzer (tests/fuzz/session_fuzzer.cc): short client
sessions in its record format [type-1 u8][flags u8][len u16 le][body], from
Hello through PDs, CQs, QPs and the Communication Manager's calls.
Usage: make_session_corpus.py DIR"""
import os
import struct
import sys

HELLO, ALLOC_PD, CREATE_CQ, CREATE_QP = 1, 4, 8, 10
MODIFY_QP, CREATE_AH, CM_OPEN, CM_LISTEN = 11, 14, 28, 29
CM_CONNECT, CM_ACCEPT, CM_ESTABLISH, CM_INIT_QP_ATTR = 30, 31, 33, 36
CM_SIDR_QUERY, CM_RESOLVE, CM_DESTROY = 37, 39, 35
EVENTFD, MEMFD, RAW = 1, 2, 4


def h(n):
    """The n-th handle the server gave this client (session_fuzzer.cc)."""
    return 0xFEED0000 + n


def rec(t, body=b"", flags=0):
    return struct.pack("<BBH", t - 1, flags, len(body)) + body


hello = rec(HELLO, struct.pack("<HHIQ32s", 1, 3, 0, 1, b"fuzz"))
gid2 = bytes(10) + b"\xff\xff" + bytes([10, 0, 0, 2])
gid1 = bytes(10) + b"\xff\xff" + bytes([10, 0, 0, 1])
path = gid2 + bytes(6) + struct.pack("<BBHBBI", 0, 0, 0xFFFF, 3, 64, 0)
ip = struct.pack("<BBHI", 1, 4, 40000, 0) + gid2 + gid1
cap = struct.pack("<IIIII", 16, 16, 1, 1, 0)
# Handles in reply order: Hello's first word is 0, then PD, CQ, QP.
qp = rec(CREATE_QP, struct.pack("<IBBHII", h(1), 2, 0, 0, h(2), h(2)) + cap +
         struct.pack("<I", 0))
seeds = {
    "hello": hello,
    "pd_cq_qp": hello + rec(ALLOC_PD) + rec(CREATE_CQ, struct.pack("<II", 64, 0))
    + qp,
    "cm_listen": hello + rec(CM_OPEN, flags=EVENTFD) +
    rec(CM_LISTEN, struct.pack("<Q", 0x1061C06) + gid1 + b"\x01" + bytes(7)),
    "cm_connect": hello + rec(ALLOC_PD) +
    rec(CREATE_CQ, struct.pack("<II", 64, 0)) + qp + rec(CM_OPEN, flags=EVENTFD) +
    rec(CM_CONNECT, struct.pack("<QIBBBBBBBBI", 0x1061C06, h(3), 2, 1, 1, 7,
                                7, 0, 0, 0, 0) + path + ip + bytes(96)) +
    rec(CM_INIT_QP_ATTR, struct.pack("<IB3x", h(5), 1)) +
    rec(CM_ESTABLISH, struct.pack("<II", h(5), 0)) +
    rec(CM_DESTROY, struct.pack("<II", h(5), 0)),
    # A connection to our own address: the REQ loops back to our listener.
    "cm_self": hello + rec(ALLOC_PD) +
    rec(CREATE_CQ, struct.pack("<II", 64, 0)) + qp + rec(CM_OPEN, flags=EVENTFD) +
    rec(CM_LISTEN, struct.pack("<Q", 0x1061C07) + bytes(16) + bytes(8)) +
    rec(CM_CONNECT, struct.pack("<QIBBBBBBBBI", 0x1061C07, h(3), 2, 1, 1, 7,
                                7, 0, 0, 0, 0) + gid1 + path[16:] + ip +
        bytes(96)) +
    rec(CM_INIT_QP_ATTR, struct.pack("<IB3x", h(6), 2)),
    # The same as XRC (RDMA_PS_IB): a listener of QP type IBV_QPT_XRC_RECV
    # (and one of no such type), a REQ offering IBV_QPT_XRC_SEND.
    "cm_xrc_self": hello + rec(ALLOC_PD) +
    rec(CREATE_CQ, struct.pack("<II", 64, 0)) + qp + rec(CM_OPEN, flags=EVENTFD) +
    rec(CM_LISTEN, struct.pack("<Q", 0x13F1C08) + bytes(16) + b"\x00\x0a" +
        bytes(6)) +
    rec(CM_LISTEN, struct.pack("<Q", 0x13F1C09) + bytes(16) + b"\x00\x4d" +
        bytes(6)) +
    rec(CM_CONNECT, struct.pack("<QIBBBBBBBBI", 0x13F1C08, h(3), 9, 1, 1, 7,
                                7, 0, 0, 0, 0) + gid1 + path[16:] + ip +
        bytes(96)) +
    rec(CM_INIT_QP_ATTR, struct.pack("<IB3x", h(6), 2)),
    "cm_sidr": hello + rec(CM_OPEN, flags=EVENTFD) +
    rec(CM_SIDR_QUERY, struct.pack("<Q", 0x1111C06) + path + ip +
        bytes(8) + bytes(216)),
    "cm_resolve": hello + rec(CM_RESOLVE, gid2) + rec(CM_RESOLVE, gid1),
    "no_hello": rec(CM_OPEN, flags=EVENTFD) + rec(ALLOC_PD),
    "raw": hello + rec(1, b"\x55\x4d\x43\x52" + bytes(12), flags=RAW),
    "memfd": hello + rec(CM_OPEN, flags=MEMFD),
}
os.makedirs(sys.argv[1], exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(sys.argv[1], name), "wb") as f:
        f.write(data)
