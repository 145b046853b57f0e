#!/usr/bin/env python3
"""Seeds of ring_fuzzer (tests/fuzz/ring_fuzzer.cc): a setup byte, then
operations [op u8][operands] in the fuzzer's encoding (see its Post*,
Craft*, PokeSlot, SetIndex, Doorbell, Step and Control readers).
Usage: make_ring_corpus.py DIR"""
import os
import struct
import sys

POST, CRAFT_SEND, CRAFT_RECV, POKE, SET_INDEX, DOORBELL = 0, 2, 3, 4, 5, 6
STEP, POLL, CONTROL = 7, 9, 10
# Rings as SetIndex/PokeSlot name them.
SQ0, SQ1, SQ2, RQ0, RQ2, SRQ, DOORBELLS, SCQ = 0, 1, 2, 4, 6, 8, 9, 10


def u8(v):
    return struct.pack("<B", v)


def u16(v):
    return struct.pack("<H", v)


def u32(v):
    return struct.pack("<I", v)


def u64(v):
    return struct.pack("<Q", v)


def post(kind, length=256, off=0, roff=2048, extra=b""):
    return u8(POST) + u8(kind) + u16(length) + u16(off) + u16(roff) + extra


EXTRA = {4: u8(1) + u8(2), 5: u8(3) + u8(0), 7: u32(0x01020304)}


def send(kind, length=256, off=0, roff=2048):
    """A well-formed post: kind & 15 picks it, 0x40 unsignaled, 0x80 from
    the process-memory region."""
    return post(kind, length, off, roff, EXTRA.get(kind & 0x0F, b""))


def recv(where):  # 0: QP 0's RQ, 1: the SRQ, 2: the UD QP's RQ
    return post(9, extra=u8(where))


def step(passes=4, exp=20):
    return u8(STEP) + u8(passes - 1) + u8(exp)


def key(sel, raw=0):  # 0 A, 1 R, 2 P, 3 zero, 4/5 neighbours, 6 MW, 7 raw
    return u8(sel) + (u32(raw) if sel >= 7 else b"")


def addr(sel, off=0, raw=0):  # see Address(): 6 is the victim area
    return u8(sel) + u16(off) + (u64(raw) if sel >= 8 else b"")


def length(v):
    if v < 200 * 37 and v % 37 == 0:
        return u8(v // 37)
    return u8(250) + u32(v)


def sge(a, n, k):
    return a + length(n) + k


def craft_send(q, opcode, sges, flags=2, num_sge=None, inline_len=0,
               remote=addr(0, 1024), rkey=key(0), publish=True):
    n = len(sges) if num_sge is None else num_sge
    body = (u8(q) + u8(0) + u8(opcode) + u8(n) + u8(flags) + u32(0) +
            key(0) + remote + rkey + u8(200) + length(inline_len) +
            u64(0) + u64(0) + u8(0) + u8(q) + u8(0) + u8(len(sges)) +
            b"".join(sges) + u8(0 if publish else 4))
    return u8(CRAFT_SEND) + body


def craft_recv(where, sges, num_sge=None):
    n = len(sges) if num_sge is None else num_sge
    return (u8(CRAFT_RECV) + u8(where) + u8(0) + u8(n) + u8(len(sges)) +
            b"".join(sges) + u8(0))


def set_index(ring, field, delta=None, raw=None):
    if raw is not None:
        return u8(SET_INDEX) + u8(ring) + u8(field) + u8(255) + u64(raw)
    return u8(SET_INDEX) + u8(ring) + u8(field) + u8(0) + u8(delta & 0xFF)


def control(sub, arg=0):
    return u8(CONTROL) + u8(sub) + u8(arg)


POLL_OP = u8(POLL)
traffic = (recv(1) * 3 + recv(0) * 3 + recv(2) + step() +
           b"".join(send(k) for k in range(9)) + step(4, 22) + POLL_OP +
           step(4, 26) + POLL_OP)

seeds = {
    "traffic_doorbells": u8(3) + traffic,
    "traffic_scanned": u8(0) + traffic,
    "process_region": u8(7) + recv(1) + recv(0) + step() +
    send(0x80) + send(0x82) + send(0x83) + send(0x84) + send(0xC1) +
    step(4, 24) + POLL_OP,
    "foreign_keys": u8(1) + recv(1) +
    craft_send(0, 2, [sge(addr(6, 16), 64, key(0))]) +  # victim, A's key
    craft_send(0, 2, [sge(addr(0), 64, key(3))]) +  # key 0
    craft_send(0, 0, [sge(addr(0), 64, key(0))], rkey=key(1)) +  # R remote
    craft_send(0, 0, [sge(addr(0), 64, key(0))], remote=addr(5, 100)) +
    craft_send(0, 4, [sge(addr(3), 64, key(1))]) +  # READ into R
    craft_recv(0, [sge(addr(3), 512, key(1))]) +  # RECV into R
    craft_recv(1, [sge(addr(6), 512, key(7, 0x1234))]) +
    step(4, 24) + POLL_OP + control(1) + step() + POLL_OP,
    "overflowing_sges": u8(1) + recv(1) +
    craft_send(0, 2, [sge(addr(1, 10), 0xFFFFFFF0, key(0)),
                      sge(addr(0), 0xFFFFFFFF, key(0))]) +
    craft_send(0, 2, [sge(addr(8, 0, 0xFFFFFFFFFFFFFF00), 0x1000, key(0))]) +
    craft_send(0, 2, [], num_sge=200) +
    craft_send(0, 2, [], flags=0x0A, inline_len=0x10000) +
    craft_send(0, 230, [sge(addr(0), 8, key(0))]) +
    craft_recv(0, [], num_sge=39) +
    step(4, 24) + POLL_OP,
    "bad_indices": u8(1) + recv(0) + send(1) + step() +
    set_index(RQ0, 0, delta=-3) + step() +
    set_index(SQ0, 0, raw=1 << 40) + u8(DOORBELL) + u8(0) + u8(0) + step(),
    "cq_and_arm": u8(1) + recv(1) + set_index(SCQ, 1, delta=5) +
    set_index(SCQ, 3, delta=2) + send(0) + step(4, 22) + POLL_OP +
    control(4, 8) + step() + POLL_OP,
    "doorbells": u8(1) + recv(1) +
    u8(DOORBELL) + u8(0) + u8(0) + u8(DOORBELL) + u8(2) + u8(130) +
    u8(DOORBELL) + u8(250) + u32(77) + u8(255) + u32(0xDEAD) +
    set_index(DOORBELLS, 0, delta=100) + step() +
    set_index(SQ0, 7, delta=0) + step(),
    "control_midflight": u8(3) + recv(1) * 3 + step() + send(0, 2000) +
    send(2, 2000) + control(3, 0) + step(2) + control(2, 1) + step() +
    control(0, 5 << 2) + step() + control(1) + send(3) + step(4, 24) +
    POLL_OP + control(6) + control(9) + control(5, 3) + control(8, 2),
    # Receives and WRITEs that run past the end of region A.
    "region_edges": u8(1) +
    craft_recv(0, [sge(addr(1, 8), 37 * 27, key(0))]) + send(1) +
    step(4, 22) + POLL_OP + control(1) +
    send(2, 512, 0, 6144 - 100) + step(4, 22) + POLL_OP + control(1) +
    send(3, 600, 6144 - 300, 0) + step(4, 22) + POLL_OP + control(1) +
    craft_recv(1, [sge(addr(2, 3), 37 * 2, key(0))]) + send(0) +
    step(4, 22) + POLL_OP,
    # A malformed receive left in the ring (no doorbell) that a SEND's
    # arrival fetches mid-receive.
    "fetch_malformed": u8(1) + u8(CRAFT_RECV) + u8(0) + u8(0) + u8(6) +
    u8(0) + u8(8) + send(1) + step(4, 22) + POLL_OP + step(4, 22) + POLL_OP,
    "bind_and_invalidate": u8(1) + control(6) + step() +
    craft_send(0, 8, [sge(addr(0), 0, key(0))], rkey=key(6)) +
    craft_send(0, 7, []) + step(4, 24) + POLL_OP,
    "raw_requests": u8(1) + u8(CONTROL) + u8(7) + u8(10) + u8(8) + u64(0) +
    u8(CONTROL) + u8(0x80) + u8(11) + u8(96) + bytes(96) + step() +
    control(0, 3) + step(),
}

out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(__file__) + \
    "/ring_corpus"
os.makedirs(out, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
