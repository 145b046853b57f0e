#!/usr/bin/env python3
"""One side of raw_net_test.py: a raw packet QP over pyverbs (Debian's
python3-pyverbs, on the drop-in libibverbs.so.1).

  raw_endpoint.py recv DEV DST_MAC ETHERTYPE COUNT
      A flow rule (ETH spec: destination MAC, ether type) on a raw QP;
      prints "ready", then waits for COUNT frames and checks each one's
      bytes (frame i: seq i in its payload, see frame()); prints "got N".
  raw_endpoint.py send DEV DST_MAC SRC_MAC ETHERTYPE COUNT
      Sends COUNT frames (frame(i)) and waits for each send completion.
"""
import sys
import time

import pyverbs.enums as e
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.flow import Flow, FlowAttr
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.spec import EthSpec
from pyverbs.wr import SGE, RecvWR, SendWR

FRAME = 300
DEADLINE = 60.0


def mac_bytes(mac):
    return bytes.fromhex(mac.replace(":", ""))


def frame(i, dst, src, ethertype):
    head = mac_bytes(dst) + mac_bytes(src) + ethertype.to_bytes(2, "big")
    body = i.to_bytes(4, "big") + bytes((i * 7 + k) & 0xFF
                                        for k in range(FRAME - 18))
    return head + body


def raw_qp(ctx, pd, cq, depth):
    cap = QPCap(max_send_wr=depth, max_recv_wr=depth, max_send_sge=1,
                max_recv_sge=1)
    init = QPInitAttr(qp_type=e.IBV_QPT_RAW_PACKET, scq=cq, rcq=cq, cap=cap)
    return QP(pd, init, QPAttr(port_num=1))  # to RTS


def poll(cq, what):
    end = time.monotonic() + DEADLINE
    while time.monotonic() < end:
        n, wcs = cq.poll(1)
        if n > 0:
            wc = wcs[0]
            if wc.status != e.IBV_WC_SUCCESS:
                sys.exit(f"{what}: completion status {wc.status}")
            return wc
    sys.exit(f"{what}: no completion in {DEADLINE} s")


def recv(dev, dst, ethertype, count):
    ctx = Context(name=dev)
    pd, cq = PD(ctx), CQ(ctx, 2 * count + 8)
    qp = raw_qp(ctx, pd, cq, count + 4)
    mr = MR(pd, FRAME * (count + 4), e.IBV_ACCESS_LOCAL_WRITE)
    spec = EthSpec(ether_type=ethertype, dst_mac=dst)
    attr = FlowAttr(num_of_specs=1, port=1)
    attr.specs.append(spec)
    flow = Flow(qp, attr)
    for i in range(count):
        qp.post_recv(RecvWR(wr_id=i, num_sge=1,
                            sg=[SGE(mr.buf + i * FRAME, FRAME, mr.lkey)]))
    print("ready", flush=True)
    for n in range(count):
        wc = poll(cq, f"frame {n}")
        if wc.opcode != e.IBV_WC_RECV or wc.byte_len != FRAME:
            sys.exit(f"frame {n}: opcode {wc.opcode} byte_len {wc.byte_len}")
        got = mr.read(FRAME, wc.wr_id * FRAME)
        seq = int.from_bytes(got[14:18], "big")
        want = frame(seq, dst, got[6:12].hex(":"), ethertype)
        if got != want:
            sys.exit(f"frame {n} (seq {seq}): bytes differ")
    print(f"got {count}", flush=True)
    flow.close()


def send(dev, dst, src, ethertype, count):
    ctx = Context(name=dev)
    pd, cq = PD(ctx), CQ(ctx, count + 8)
    qp = raw_qp(ctx, pd, cq, 16)
    mr = MR(pd, FRAME, e.IBV_ACCESS_LOCAL_WRITE)
    for i in range(count):
        mr.write(frame(i, dst, src, ethertype), FRAME)
        wr = SendWR(wr_id=i, opcode=e.IBV_WR_SEND, num_sge=1,
                    sg=[SGE(mr.buf, FRAME, mr.lkey)],
                    send_flags=e.IBV_SEND_SIGNALED)
        qp.post_send(wr)
        poll(cq, f"send {i}")
    print(f"sent {count}", flush=True)


def main():
    mode, dev = sys.argv[1], sys.argv[2]
    if mode == "recv":
        recv(dev, sys.argv[3], int(sys.argv[4], 0), int(sys.argv[5]))
    else:
        send(dev, sys.argv[3], sys.argv[4], int(sys.argv[5], 0),
             int(sys.argv[6]))


if __name__ == "__main__":
    main()
