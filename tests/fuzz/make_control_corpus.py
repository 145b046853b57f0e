#!/usr/bin/env python3
"""Seeds of control_fuzzer (tests/fuzz/control_fuzzer.cc): control socket
conversations in its input format [mode u8][early close u8][n u8][n chunk
sizes u8][bytes the clients send]. Mode bits: 0-1 what is at the socket
path first (nothing, stale socket, regular file, live daemon), 2 two
clients, 3 half-close at the end, 4 close the first client early, 5 the
test hooks behind the handler, 6 a new client must be served afterwards.
Usage: make_control_corpus.py DIR"""
import os
import sys

FRESH, STALE, FILE, LIVE = 0, 1, 2, 3
TWO, HALF_CLOSE, EARLY_CLOSE, HOOKS, PROBE = 4, 8, 16, 32, 64


def seed(stream, mode=0, sizes=b"", early=0):
    return bytes([mode, early, len(sizes)]) + sizes + stream


def lines(*reqs):
    return b"".join(r + b"\n" for r in reqs)


HOOKS_SESSION = lines(
    b'{"cmd":"reg_mr","port":"p0","len":4096,"seed":7}',
    b'{"cmd":"create_cq","port":"p0","cqe":64}',
    b'{"cmd":"create_qp","port":"p0","type":"RC","cq":257,'
    b'"max_send_wr":16,"max_recv_wr":16}',
    b'{"cmd":"modify_qp","port":"p0","qpn":17,"state":"INIT",'
    b'"access":15,"pkey_index":0,"port_num":1}',
    b'{"cmd":"connect","port":"p0","qpn":17,"remote_qpn":18,'
    b'"remote_ip":"10.77.9.2","mtu":1024}',
    b'{"cmd":"query_qp","port":"p0","qpn":17}',
    b'{"cmd":"post_recv","port":"p0","qpn":17,"wr_id":1,"len":64,'
    b'"laddr":0,"lkey":257,"count":2}',
    b'{"cmd":"post_send","port":"p0","qpn":17,"opcode":"WRITE","wr_id":2,'
    b'"len":64,"laddr":0,"lkey":257,"raddr":0,"rkey":257,"signaled":true}',
    b'{"cmd":"poll_cq","port":"p0","cq":257,"max":16,"summary":false}',
    b'{"cmd":"mr_read","port":"p0","key":257,"offset":8,"len":16}',
    b'{"cmd":"mr_digest","port":"p0","key":257}',
    b'{"cmd":"create_ah","port":"p0","remote_ip":"fd77:9::2",'
    b'"sgid_index":1,"traffic_class":0,"sl":0}',
    b'{"cmd":"destroy_qp","port":"p0","qpn":17}',
    b'{"cmd":"dereg_mr","port":"p0","key":257}')


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    seeds = {
        "counters": seed(lines(b'{"cmd":"counters"}', b'{"cmd":"ping"}')),
        "resolve_chunked": seed(
            lines(b'{"cmd":"resolve","port":"p0","ip":"10.77.0.1"}',
                  b'{ "cmd" : "resolve", "port":"p0", "ip":"fd77::1"}'),
            PROBE, sizes=bytes([4])),
        "capture_half_close": seed(
            lines(b'{"cmd":"capture","enable":true}') +
            b'{"cmd":"capture","enable": false}', HALF_CLOSE),
        "hooks": seed(HOOKS_SESSION, HOOKS, sizes=bytes([63, 200])),
        "too_long": seed(b"{\"cmd\":\"" + b"a" * 5000 + b"\"}\n",
                         PROBE, sizes=bytes([0xF1])),
        "two_clients": seed(
            lines(b'{"cmd":"qps"}', b'{"cmd":"ports"}', b'{"cmd":"pfc"}'),
            TWO, sizes=bytes([6, 10])),
        "early_close": seed(lines(b'{"cmd":"devices"}', b'{"cmd":"cm"}'),
                            TWO | EARLY_CLOSE | PROBE, sizes=bytes([8]),
                            early=1),
        "nul_crlf": seed(b'{"cmd":"x\0y"}\r\n\r\n\0\n\n{"cmd":"dcqcn"}\r\n'),
        "numbers": seed(lines(
            b'{"cmd":"poll_cq", "cq":\t12\t,"max":18446744073709551615}',
            b'{"cmd":"post_send","len":18446744073709551616,"wr_id":007}',
            b'{"port":"len","len":5,"signaled":trueish,"summary" :false}')),
        "stale_socket": seed(lines(b'{"cmd":"clients"}'), STALE | PROBE),
        "regular_file": seed(lines(b'{"cmd":"mrs"}'), FILE),
        "live_daemon": seed(lines(b'{"cmd":"ping"}'), LIVE | HALF_CLOSE),
    }
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
