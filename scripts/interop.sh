#!/bin/bash
# Interop with Linux Soft-RoCE: rocemu-pingpong (on a rocemud attached to the
# peer harness' bridge) against rdma-core's ibv_rc_pingpong/ibv_ud_pingpong
# running on rdma_rxe in a qemu guest (../shared/peer), rocemu as client
# and as server:
#   standard frames (rxe's active MTU 1024, rocemud's too): RC at 64 B and
#   4096 B (-m 1024: SEND_FIRST/MIDDLE/LAST), UD at 64 B and 1024 B (a UD
#   message is one packet: 1024 B is the most a 1024-byte MTU carries);
#   jumbo frames (both sides' active MTU 4096): UD at 4096 B.
# Unmodified programs on both sides (stock_* cases): Debian's own
# ibv_rc_pingpong, ibv_ud_pingpong, ib_write_bw, ib_read_bw, ib_send_bw,
# ib_atomic_bw and ib_write_lat run on rxe in the guest AND on the host over
# rocemu's drop-in libibverbs.so.1, each side its own binary, rxe as server
# and as client.
# rdma_cm programs (stock_cm_* cases): rping, ucmatose, udaddy (UD over
# SIDR) and ib_write_bw / ib_send_lat -R, connected by the IB CM between
# rxe's kernel rdma_cm and rocemu's drop-in librdmacm.so.1, each side as
# client and as server; peers are addressed by their RoCE IPs. mckey (UD
# multicast to 239.1.2.3): the "server" side receives, the "client" sends.
# UCX (stock_ucx_* cases, not in the default set: the guest needs UCX,
# which ../shared/peer's image lacks; scripts/peer_with_ucx.sh makes a copy
# of the harness whose guest has it, for ROCEMU_PEER_DIR): ucx_perftest's
# UCT rc_verbs put_lat and put_bw (64 KiB, zero-copy RDMA WRITE) between
# rxe and rocemu. ucx_perftest's UCT mode sends its device name to the
# server, so the guest renames rxe0 to rocemu_p0 first. (UCP needs UCX's
# UD for its wire-up, which fails on rxe even between two rxe guests: rxe
# does not report the packet type in a UD completion's sl.)
# Each phase boots ONE guest that runs its cases in order. Every case's
# bridge capture must pass ../shared/oracle/check_pcap.py --strict and show
# the announced PSNs, opcodes, payload sizes and Q_Key
# (tests/interop/pingpong_wire.py).
#
#   scripts/interop.sh [--cm | --verbs | CASE...]   (root; default: every case)
#   cases: rc64_rxe_server rc4096_rxe_server ud64_rxe_server ud1024_rxe_server
#          rc64_rxe_client rc4096_rxe_client ud64_rxe_client ud1024_rxe_client
#          ud4096_rxe_server ud4096_rxe_client            (jumbo phase)
#          stock_<tool>_rxe_server stock_<tool>_rxe_client, tool one of
#          rc_pingpong ud_pingpong write_bw read_bw send_bw atomic_bw write_lat
#          cm_rping cm_ucmatose cm_udaddy cm_write_bw cm_send_lat cm_mckey
#          (optional, with a UCX guest) ucx_put_lat ucx_put_bw
#          (optional) cm_rstream cm_riostream
#
# Environment: RSTREAM_OPTS (cm_rstream's and cm_riostream's options on
# both sides, default
# "-S 100000 -C 20 -B 16384 -T v"), ROCEMU_BUILD_DIR (default build/; or ROCEMUD,
# ROCEMU_PINGPONG, ROCEMU_IBVERBS and ROCEMU_RDMACM (the drop-ins'
# directories) naming them), ROCEMU_PEER_DIR (default
# ../shared/peer), ITERS (default 10), INTEROP_OUT (kept results, default
# /var/tmp/rocemu-interop), KEEP=1 keeps the scratch directory. Prints
# "RESULT <case>: PASS|FAIL" and "N passed, M failed"; exit 1 on any
# failure. See docs/interop.md.
#
# Layout, inside the harness' netns (rxepeer): guest A (10.99.0.1, tap0,
# rdma_rxe) and a veth whose bridge end is enslaved to rxebr0 and whose
# other end is rocemud's af_packet port (10.99.0.10, GID index 0). The TCP
# exchange runs between the guest and the netns' kernel (10.99.0.254); the
# RDMA traffic between rxe and rocemud.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PEER_DIR=${ROCEMU_PEER_DIR:-$ROOT/../shared/peer}
PEER_DIR=$(cd "$PEER_DIR" && pwd)
SHARED=$(cd "$PEER_DIR/.." && pwd)
BLD=$(cd "${ROCEMU_BUILD_DIR:-$ROOT/build}" && pwd)
ROCEMUD=${ROCEMUD:-$BLD/emulator/rocemud}
PINGPONG=${ROCEMU_PINGPONG:-$BLD/verbs/tools/rocemu-pingpong}
CTL=${ROCEMU_CTL:-$BLD/emulator/tools/rocemu-ctl}
DROPIN=${ROCEMU_IBVERBS:-$BLD/verbs/ibverbs}
RDMACM=${ROCEMU_RDMACM:-$BLD/verbs/rdmacm}
PACER=${ROCEMU_CONNECT_PACER:-$BLD/tests/interop/connect_pacer.so}
CHECK_PCAP=$SHARED/oracle/check_pcap.py
WIRE=$ROOT/tests/interop/pingpong_wire.py
ITERS=${ITERS:-10}
# perftest -R between two rdma_cm listens: a client that comes in the gap
# gets REJ 8 (no listener); the exchange then runs again from scratch, this
# many times at most. Our client pauses before its second connect
# (connect_pacer.c), which closes the gap when rxe is the server; rxe's
# client against our server still retries. A TCG guest loses that race often: 3 times running on
# a loaded host, then 5 of 5 attempts in a CI run with the suite otherwise
# idle (interop tests run alone), and 4 of 5 when rerun at once. A failed
# attempt costs ~25 s; the test's limit is 600 s.
CM_ATTEMPTS=12
OUT=${INTEROP_OUT:-/var/tmp/rocemu-interop}
# shellcheck source=/dev/null
. "$PEER_DIR/lib.sh"

ROCEMU_IP=$NET.10
ROCEMU_MAC=02:00:00:99:00:0a
GUEST_IP=$(guest_ip 1)
VETH_BR=rppint-br    # bridge end
VETH_D=rppint-d      # rocemud's end

STOCK_TOOLS="rc_pingpong ud_pingpong write_bw read_bw send_bw atomic_bw write_lat
cm_rping cm_ucmatose cm_udaddy cm_write_bw cm_send_lat cm_mckey"
ALL_CASES="rc64_rxe_server rc4096_rxe_server ud64_rxe_server ud1024_rxe_server
rc64_rxe_client rc4096_rxe_client ud64_rxe_client ud1024_rxe_client
ud4096_rxe_server ud4096_rxe_client
$(for t in $STOCK_TOOLS; do echo "stock_${t}_rxe_server stock_${t}_rxe_client"; done)"
UCX_CASES=$(for t in ucx_put_lat ucx_put_bw; do echo "stock_${t}_rxe_server stock_${t}_rxe_client"; done | xargs)
# Stream rsockets (not in the default set, which has no time to spare):
# rstream and riostream on rdma-core's rsockets over rxe against the same
# on the drop-in librdmacm's, each side as server and as client.
RSOCKET_CASES="stock_cm_rstream_rxe_server stock_cm_rstream_rxe_client
stock_cm_riostream_rxe_server stock_cm_riostream_rxe_client"
# --cm: the rdma_cm cases only; --verbs: all the others (the test suite
# runs the two sets as two tests, each within its own time limit).
case "${1:-}" in
    --cm) CASES=$(for c in $ALL_CASES; do case $c in stock_cm_*) echo "$c";; esac; done | xargs); shift;;
    --verbs) CASES=$(for c in $ALL_CASES; do case $c in stock_cm_*) ;; *) echo "$c";; esac; done | xargs); shift;;
    *) # shellcheck disable=SC2086
       [ $# -gt 0 ] && CASES="$*" || CASES=$(echo $ALL_CASES);;
esac

[ "$(id -u)" = 0 ] || { echo "interop.sh: needs root (netns, qemu taps)" >&2; exit 2; }
for f in "$ROCEMUD" "$PINGPONG"; do
    [ -x "$f" ] || { echo "interop.sh: $f missing: build first (ninja -C $BLD)" >&2; exit 2; }
done
for c in $CASES; do
    # shellcheck disable=SC2086
    case " $(echo $ALL_CASES $UCX_CASES $RSOCKET_CASES) " in *" $c "*) ;; *) echo "interop.sh: unknown case $c" >&2; exit 2;; esac
done

T0=$SECONDS
# meson puts the build's libibverbs on LD_LIBRARY_PATH for this test; the
# guest image's libraries come from ldd and must be Debian's own, so neither
# the harness nor the guest build inherits it (the drop-in reaches rocemu's
# side explicitly, below).
unset LD_LIBRARY_PATH
# scripts/setup.sh builds the guest image (cached); only a missing one is
# built here, inside the test's time.
PEER_BUILD=${RXE_PEER_BUILD:-/var/tmp/rxe-peer}
if [ ! -s "$PEER_BUILD/initrd.img" ] || [ ! -s "$PEER_BUILD/kver" ]; then
    "$PEER_DIR/build-guest.sh" >/dev/null
fi
ns_up
RUN=$(mktemp -d /tmp/rocemu-interop.XXXXXX)
mkdir -p "$OUT"
DAEMON_PID="" GUEST_PID="" CAP_PID="" SERVER_PID=""

stop_daemon() {
    [ -n "$DAEMON_PID" ] || return 0
    kill -TERM "$DAEMON_PID" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$DAEMON_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$DAEMON_PID" 2>/dev/null || true
    wait "$DAEMON_PID" 2>/dev/null || true
    DAEMON_PID=""
}
cleanup() {
    set +e
    [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null
    [ -n "$CAP_PID" ] && cap_stop "$CAP_PID"
    [ -n "$GUEST_PID" ] && kill "$GUEST_PID" 2>/dev/null
    stop_daemon
    ip -n "$NS" link del "$VETH_BR" 2>/dev/null
    ip -n "$NS" link set tap0 mtu 1500 2>/dev/null
    if [ -n "${KEEP:-}" ]; then echo "kept $RUN"; else rm -rf "$RUN"; fi
}
trap cleanup EXIT

# --- rocemud on a veth into the bridge -----------------------------------
ip -n "$NS" link del "$VETH_BR" 2>/dev/null || true
ip -n "$NS" link add "$VETH_BR" type veth peer name "$VETH_D"
ip -n "$NS" link set "$VETH_BR" mtu 9000
ip -n "$NS" link set "$VETH_D" mtu 9000
ip -n "$NS" link set "$VETH_BR" master "$BR" up
ip -n "$NS" link set "$VETH_D" up

start_daemon() {  # start_daemon PORT_MTU  (1500: active MTU 1024, as rxe's)
    rm -f "$RUN/verbs.sock"
    cat > "$RUN/rocemud.yaml" <<EOF
eal: {file_prefix: rocemu-interop-$$, idle_sleep_us: 50}
ports:
  - name: p0
    devargs: net_af_packet0,iface=$VETH_D,framesz=8192,blocksz=8192
    mac: "$ROCEMU_MAC"
    mtu: $1
    addresses: [$ROCEMU_IP/24]
control: {socket: $RUN/ctl.sock}
verbs: {socket: $RUN/verbs.sock}
logging: {file: $RUN/rocemud.log}
EOF
    ip netns exec "$NS" "$ROCEMUD" --config "$RUN/rocemud.yaml" >>"$RUN/rocemud.out" 2>&1 &
    DAEMON_PID=$!
    for _ in $(seq 1 150); do
        [ -S "$RUN/verbs.sock" ] && break
        kill -0 "$DAEMON_PID" 2>/dev/null || break
        sleep 0.1
    done
    [ -S "$RUN/verbs.sock" ] || { echo "interop.sh: rocemud did not start:"; cat "$RUN/rocemud.out" "$RUN/rocemud.log" 2>/dev/null; exit 1; }
}

case_stock() { case $1 in stock_*) return 0;; *) return 1;; esac; }
stock_tool() { local t=${1#stock_}; echo "${t%_rxe_*}"; }
case_cm() { case $1 in stock_cm_*) return 0;; *) return 1;; esac; }
# The peer address a client of CASE names: the TCP exchange of the verbs
# tools runs against the netns' kernel, rdma_cm connects RoCE addresses.
peer_of_guest() { if case_cm "$1"; then echo "$ROCEMU_IP"; else echo "$HOST_IP"; fi; }
CM_PINGS=100
RSTREAM_OPTS=${RSTREAM_OPTS:--S 100000 -C 20 -B 16384 -T v}
MCAST_GROUP=239.1.2.3
# The stock command line of a case on either side (DEV: rxe0 or rocemu_p0;
# GID: the GID index; ROLE: server or client; the peer address is appended
# by the caller).
stock_cmd() {  # stock_cmd CASE DEV GID ROLE
    local cm_client=""
    [ "${4:-}" = client ] && cm_client=1
    case $(stock_tool "$1") in
        cm_rping) if [ -n "$cm_client" ]; then echo "rping -c -v -V -C $CM_PINGS -S 64 -a";
                  else echo "rping -s -v -V -C $CM_PINGS -S 64 -a 0.0.0.0"; fi;;
        cm_ucmatose) echo "ucmatose -c 2 -C 10${cm_client:+ -s}";;
        cm_udaddy) echo "udaddy -c 2 -C 10${cm_client:+ -s}";;
        # Bound to the side's own RoCE address; the peer address the
        # caller appends is an operand mckey ignores.
        cm_mckey) local own=$ROCEMU_IP; [ "$2" = rxe0 ] && own=$GUEST_IP
                  echo "mckey -m $MCAST_GROUP -b $own -C 10${cm_client:+ -s}";;
        # 20 messages of 97 KiB each way through 32 KiB receive buffers,
        # every byte checked by the receiver (-T v).
        cm_rstream) echo "rstream $RSTREAM_OPTS${cm_client:+ -s}";;
        # riomap/riowrite: each side writes into the buffer the other mapped.
        cm_riostream) echo "riostream $RSTREAM_OPTS${cm_client:+ -s}";;
        cm_write_bw) echo "ib_write_bw -d $2 -x $3 -R -F -m 1024 -s 4096 -n 100 --report_gbits";;
        cm_send_lat) echo "ib_send_lat -d $2 -x $3 -R -F -s 64 -n 100";;
        rc_pingpong) echo "ibv_rc_pingpong -d $2 -g $3 -s 4096 -m 1024 -n $ITERS";;
        ud_pingpong) echo "ibv_ud_pingpong -d $2 -g $3 -s 1024 -n $ITERS";;
        write_bw) echo "ib_write_bw -d $2 -x $3 -F -m 1024 -s 4096 -n 100 --report_gbits";;
        read_bw) echo "ib_read_bw -d $2 -x $3 -F -m 1024 -s 4096 -n 100 --report_gbits";;
        send_bw) echo "ib_send_bw -d $2 -x $3 -F -m 1024 -s 4096 -n 100 --report_gbits";;
        atomic_bw) echo "ib_atomic_bw -d $2 -x $3 -F -m 1024 -n 100 --report_gbits";;
        write_lat) echo "ib_write_lat -d $2 -x $3 -F -m 1024 -s 64 -n 100";;
        ucx_put_lat|ucx_put_bw)
            local t=put_lat s=8 pre="rdma dev set rxe0 name rocemu_p0 2>/dev/null;"
            [ "$(stock_tool "$1")" = ucx_put_bw ] && t="put_bw -D zcopy" s=65536
            [ "$2" = rocemu_p0 ] && pre="$ROOT/scripts/rocemu-run --dev-node"
            echo "$pre ucx_perftest -p 18515 -d rocemu_p0:1 -x rc_verbs -t $t -s $s -n 1000";;
    esac
}
# What each side printing means success, besides exit status 0.
# A perftest result row that carries a measurement: bytes, iterations,
# then finite, non-negative figures of which the first two (peak and
# average bandwidth, or min and max latency) are not both zero.
perftest_row() {  # perftest_row OUTPUT_FILE
    awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 5 {
           ok = 1
           for (i = 3; i <= NF; i++) if ($i !~ /^[0-9]+(\.[0-9]+)?$/) ok = 0
           if (ok && $3 + $4 > 0) found = 1
         } END { exit !found }' "$1"
}
# What each side printing means success, besides exit status 0.
stock_ok() {  # stock_ok CASE OUTPUT_FILE SIDE(rocemu|rxe)
    case $(stock_tool "$1") in
        cm_rping) grep -q "rdma-ping-$((CM_PINGS - 1)):" "$2";;
        cm_ucmatose|cm_udaddy|cm_mckey) grep -q "test complete" "$2";;
        # rstream's result row (it exits non-zero on a data mismatch).
        cm_rstream|cm_riostream) grep -qE "^custom +[0-9]" "$2";;
        # The client prints the result; the server, the peer it accepted.
        ucx_*) grep -qE "^Final: +1000 |^Accepted connection" "$2";;
        *_pingpong) grep -q "iters in" "$2";;
        # perftest: a row with a measurement. perftest times with the TSC
        # and calibrates it against gettimeofday; in the TCG guest that
        # sampling can fail ("Correlation coefficient r^2 < 0.9") and rxe's
        # side then prints inf for every figure. Our side's row must carry
        # figures; rxe's may lack them only for that reason, and says so.
        *) perftest_row "$2" ||
           { [ "$3" = rxe ] && grep -q "Correlation coefficient r^2" "$2" &&
             grep -qE "^ *[0-9]+ +[0-9]+ +inf " "$2" &&
             echo "    rxe side: its perftest could not calibrate its clock in the guest; its row has no figures (ours must)"; };;
    esac
}
case_tool()  { case $1 in rc*) echo rc;; ud*) echo ud;; esac; }
case_size()  { local s=${1%%_*}; echo "${s#??}"; }
case_rxe_server() { case $1 in *_rxe_server) return 0;; *) return 1;; esac; }
case_jumbo() { ! case_stock "$1" && [ "$(case_tool "$1")" = ud ] && [ "$(case_size "$1")" -gt 1024 ]; }
mtu_args()   { if [ "$(case_tool "$1")" = rc ]; then echo "-m 1024"; fi; }

wait_path() {  # wait_path FILE TIMEOUT_S
    local end=$((SECONDS + $2))
    until [ -e "$1" ]; do
        [ $SECONDS -ge $end ] && return 1
        kill -0 "$GUEST_PID" 2>/dev/null || { [ -e "$1" ] && return 0; return 1; }
        sleep 0.05
    done
    return 0
}
listening() { ip netns exec "$NS" ss -Hltn "sport = :18515" | grep -q 18515; }
# rocemud's CM holds a listener (rocemu-ctl cm).
cm_listening_here() {
    "$CTL" --socket "$RUN/ctl.sock" cm 2>/dev/null | grep -q " LISTEN "
}
# A QP of rocemud's is attached to the multicast group (mckey's receiver).
group_joined_here() {
    "$CTL" --socket "$RUN/ctl.sock" --json qps 2>/dev/null | python3 -c '
import json, sys
try:
    ports = json.load(sys.stdin)["ports"]
except (ValueError, KeyError):
    sys.exit(1)
groups = [g for p in ports for s in [p] + p.get("shards", [])
          for g in s["multicast_groups"]]
sys.exit(0 if any(g["gid"] == sys.argv[1] and g["qpns"] for g in groups)
         else 1)' "$MCAST_GROUP"
}
# The harness' cap_start without packet batching: libpcap's TPACKET_V3 ring
# hands tcpdump a block only when it fills or after its timeout (1 s), so a
# short case stopped 0.5 s after its last frame loses its frames.
cap_start_now() {
    rm -f "$1"
    ip netns exec "$NS" tcpdump -i "$BR" -s 0 -B 131072 --immediate-mode -U -n -w "$1" >"$1.tcpdump.log" 2>&1 &
    local pid=$!
    wait_for_line "$1.tcpdump.log" 'listening on' 10 || echo "[interop] tcpdump did not start" >&2
    echo "$pid"
}

# The guest's job for the given cases: each waits for go.N (we are ready),
# runs the rdma-core tool (server: signals ready.N once it listens) and
# leaves its exit status in rc.N.
guest_job() {
    cat <<'EOF'
tcp_listening() {
    p=$(printf "%04X" "$1")
    grep -qE "^ *[0-9]+: [0-9A-F]+:$p [0-9A-F]+:0000 0A" /proc/net/tcp /proc/net/tcp6 2>/dev/null
}
wait_file() { n=0; until [ -e "$1" ]; do sleep 0.05; n=$((n+1)); [ $n -gt 1200 ] && return 1; done; return 0; }
T=""; command -v timeout >/dev/null 2>&1 && T="timeout 150"
EOF
    local i=0 c cmd role ready
    for c in "$@"; do
        i=$((i + 1))
        role=client
        if case_rxe_server "$c"; then role=server; fi
        ready='tcp_listening 18515'
        if case_cm "$c"; then ready='rdma res show cm_id 2>/dev/null | grep -q LISTEN'; fi
        # mckey's receiver is ready once its join put the group in the
        # kernel's IGMP table (the QP is attached by then); bounded at
        # ~10 s for a kernel that does not list it.
        if [ "$(stock_tool "$c")" = cm_mckey ]; then
            ready='grep -qi 030201EF /proc/net/igmp || [ $n -gt 200 ]'
        fi
        if case_stock "$c"; then
            cmd="$(stock_cmd "$c" rxe0 '$GIDX' $role)"
        else
            cmd="ibv_$(case_tool "$c")_pingpong -d rxe0 -g \$GIDX -s $(case_size "$c") -n $ITERS $(mtu_args "$c")"
        fi
        # A tool waiting for a peer that gave up must not hold the guest's
        # later cases: bounded (busybox timeout, when the image has it).
        cmd="\$T $cmd"
        echo "echo \"### case $i $c\""
        echo "wait_file \$SHARE/go.$i || { echo 'no go for case $i'; exit 1; }"
        if case_rxe_server "$c" && case_cm "$c"; then
            # perftest -R connects twice (exchange, then the test QPs) and
            # its server listens again in between: a fast client can reach
            # a slow (TCG) server in that gap and get REJ 8 (no listener).
            # The host then asks for a fresh server (retry.N.A) and the
            # whole exchange runs again, up to CM_ATTEMPTS times.
            echo "A=1; while :; do"
            echo "  $cmd > \$SHARE/rxe.$i.out 2>&1 &"
            echo "  P=\$!; n=0; until $ready; do sleep 0.05; n=\$((n+1)); [ \$n -gt 1200 ] && break; done"
            echo "  touch \$SHARE/ready.$i.\$A; [ \$A = 1 ] && touch \$SHARE/ready.$i"
            echo "  while kill -0 \$P 2>/dev/null && [ ! -e \$SHARE/retry.$i.\$A ]; do sleep 0.1; done"
            echo "  [ -e \$SHARE/retry.$i.\$A ] && kill \$P 2>/dev/null"
            echo "  wait \$P; R=\$?"
            echo "  [ -e \$SHARE/retry.$i.\$A ] && [ \$A -lt $CM_ATTEMPTS ] && { A=\$((A+1)); continue; }"
            echo "  break"
            echo "done; echo \$R > \$SHARE/rc.$i"
        elif case_rxe_server "$c"; then
            echo "$cmd > \$SHARE/rxe.$i.out 2>&1 &"
            echo "P=\$!; n=0; until $ready; do sleep 0.05; n=\$((n+1)); [ \$n -gt 1200 ] && break; done"
            echo "touch \$SHARE/ready.$i"
            echo "wait \$P; echo \$? > \$SHARE/rc.$i"
        elif case_cm "$c"; then
            # The mirror of the above: rxe's perftest client can reach our
            # server between its two listens (REJ 8). It tells the host
            # (rej.N.A), which starts a fresh server (again.N.A).
            echo "A=1; while :; do"
            echo "  $cmd $(peer_of_guest "$c") > \$SHARE/rxe.$i.out 2>&1; R=\$?"
            echo "  if [ \$R != 0 ] && [ \$A -lt $CM_ATTEMPTS ] && grep -q 'REJECTED; error: 8' \$SHARE/rxe.$i.out; then"
            echo "    touch \$SHARE/rej.$i.\$A; wait_file \$SHARE/again.$i.\$A || break; A=\$((A+1)); continue"
            echo "  fi; break"
            echo "done; echo \$R > \$SHARE/rc.$i"
        else
            echo "$cmd $(peer_of_guest "$c") > \$SHARE/rxe.$i.out 2>&1; echo \$? > \$SHARE/rc.$i"
        fi
    done
}

pass=0 fail=0

# run_stock N CASE SHARE : our side of stock case N (the same Debian tool,
# over the drop-in libibverbs).
run_stock() {
    local i=$1 c=$2 share=$3
    local pcap=$RUN/$c.pcap out=$RUN/$c.rocemu.out rxe_out=$share/rxe.$i.out
    local t0=$SECONDS ok=1 rc=0 rxe_rc cmd role=server
    if case_rxe_server "$c"; then role=client; fi
    cmd=$(stock_cmd "$c" rocemu_p0 0 $role)
    CAP_PID=$(cap_start_now "$pcap")
    if case_rxe_server "$c"; then
        touch "$share/go.$i"
        if wait_path "$share/ready.$i" 120; then
            local attempt=1 preload=""
            # perftest -R: a pause before its second connect lets the
            # guest's server listen again (tests/interop/connect_pacer.c).
            case $(stock_tool "$c") in cm_*_bw|cm_*_lat) preload=$PACER;; esac
            while :; do
                ok=1
                # shellcheck disable=SC2086
                ip netns exec "$NS" env LD_LIBRARY_PATH="$RDMACM:$DROPIN" ROCEMU_VERBS_SOCKET="$RUN/verbs.sock" \
                    ${preload:+LD_PRELOAD=$preload} timeout 120 $cmd "$GUEST_IP" >"$out" 2>&1 || { rc=$?; ok=0; }
                # The guest's perftest was between its two listens (see
                # guest_job): a fresh server, a fresh exchange.
                if [ $ok = 0 ] && case_cm "$c" && [ $attempt -lt $CM_ATTEMPTS ] &&
                   grep -q "REJECTED; error: 8" "$out"; then
                    echo "    (attempt $attempt: REJ 8 between the guest's two listens; again)"
                    touch "$share/retry.$i.$attempt"
                    attempt=$((attempt + 1))
                    wait_path "$share/ready.$i.$attempt" 120 || break
                    continue
                fi
                break
            done
        else
            echo "guest never got its server up" >"$out"; ok=0
        fi
    else
        local attempt=1 signal="go.$i"
        while :; do
            # shellcheck disable=SC2086
            ip netns exec "$NS" env LD_LIBRARY_PATH="$RDMACM:$DROPIN" ROCEMU_VERBS_SOCKET="$RUN/verbs.sock" \
                timeout 120 $cmd >"$out" 2>&1 &
            SERVER_PID=$!
            if [ "$(stock_tool "$c")" = cm_mckey ]; then
                for _ in $(seq 1 100); do group_joined_here && break; sleep 0.05; done
            elif case_cm "$c"; then
                for _ in $(seq 1 100); do cm_listening_here && break; sleep 0.05; done
            else
                for _ in $(seq 1 100); do listening && break; sleep 0.05; done
            fi
            touch "$share/$signal"
            # The guest's client got REJ 8 between our server's two listens
            # (see guest_job): this server waits for a test connection that
            # will not come; a fresh one for the client's next attempt.
            while kill -0 "$SERVER_PID" 2>/dev/null && [ ! -e "$share/rej.$i.$attempt" ]; do
                sleep 0.1
            done
            if [ -e "$share/rej.$i.$attempt" ]; then
                echo "    (attempt $attempt: rxe's client got REJ 8 between our two listens; again)"
                kill "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null || true
                signal="again.$i.$attempt"
                attempt=$((attempt + 1))
                continue
            fi
            wait "$SERVER_PID" || { rc=$?; ok=0; }
            break
        done
        SERVER_PID=""
    fi
    wait_path "$share/rc.$i" 120 || true
    cap_stop "$CAP_PID"; CAP_PID=""
    rxe_rc=$(cat "$share/rc.$i" 2>/dev/null || echo none)
    # The status itself: 124 is the timeout, 128+N a signal N.
    echo "--- $c: rocemu side exit $([ $ok = 1 ] && echo 0 || echo "$rc"), rxe side exit $rxe_rc, $((SECONDS - t0)) s"
    [ "$rxe_rc" = 0 ] || ok=0
    stock_ok "$c" "$out" rocemu || { echo "    rocemu side printed no result"; ok=0; }
    stock_ok "$c" "$rxe_out" rxe || { echo "    rxe side printed no result"; ok=0; }
    # mckey: rocemu told the link it joined the group (an IGMPv3 report
    # tshark dissects), as rxe's kernel does.
    if [ "$(stock_tool "$c")" = cm_mckey ] &&
       ! tshark -r "$pcap" -Y "igmp.type == 0x22 && eth.src == $ROCEMU_MAC" \
            -T fields -e igmp.maddr 2>/dev/null | grep -q "$MCAST_GROUP"; then
        echo "    rocemu sent no IGMPv3 report for $MCAST_GROUP"; ok=0
    fi
    # Every RoCEv2 frame of both implementations, checked by the oracle.
    if ! python3 "$CHECK_PCAP" --strict "$pcap" 2>&1 | tail -3 | sed 's/^/    oracle: /'; then
        ok=0
    fi
    grep -E "bytes in|BW average|^ *[0-9]+ +[0-9]+ +[0-9.]|Failed|Couldn't|error" "$out" 2>/dev/null | head -4 | sed 's/^/    rocemu: /' || true
    grep -E "bytes in|^ *[0-9]+ +[0-9]+ +[0-9.]|Failed|Couldn't|error" "$rxe_out" 2>/dev/null | head -4 | sed 's/^/    rxe:    /' || true
    cp "$pcap" "$out" "$OUT/" 2>/dev/null || true
    cp "$rxe_out" "$OUT/$c.rxe.out" 2>/dev/null || true
    if [ $ok = 1 ]; then echo "RESULT $c: PASS"; pass=$((pass + 1));
    else echo "RESULT $c: FAIL"; fail=$((fail + 1)); fi
}

# run_one N CASE SHARE : our side of case N of the running guest.
run_one() {
    if case_stock "$2"; then run_stock "$@"; return; fi
    local i=$1 c=$2 share=$3
    local tool size pcap rocemu_out rxe_out server_out client_out t0 ok rxe_rc
    tool=$(case_tool "$c") size=$(case_size "$c")
    pcap=$RUN/$c.pcap rocemu_out=$RUN/$c.rocemu.out rxe_out=$share/rxe.$i.out
    local args=("$tool" -d "$RUN/verbs.sock" -g 0 -s "$size" -n "$ITERS" --verify --timeout=60)
    if [ "$tool" = rc ]; then args+=(-m 1024); fi
    # rocemu's side also sleeps on its completion channel when it serves,
    # and uses malloc'd (process) memory for RC 4096 B as a client.
    if ! case_rxe_server "$c"; then args+=(-e); fi
    if [ "$c" = rc4096_rxe_server ]; then args+=(-o); fi
    t0=$SECONDS ok=1
    CAP_PID=$(cap_start_now "$pcap")
    if case_rxe_server "$c"; then
        touch "$share/go.$i"
        if wait_path "$share/ready.$i" 90; then
            ip netns exec "$NS" timeout 90 "$PINGPONG" "${args[@]}" "$GUEST_IP" >"$rocemu_out" 2>&1 || ok=0
        else
            echo "guest never got its server up" >"$rocemu_out"; ok=0
        fi
        server_out=$rxe_out client_out=$rocemu_out
    else
        ip netns exec "$NS" timeout 90 "$PINGPONG" "${args[@]}" >"$rocemu_out" 2>&1 &
        SERVER_PID=$!
        for _ in $(seq 1 100); do listening && break; sleep 0.05; done
        touch "$share/go.$i"
        wait "$SERVER_PID" || ok=0
        SERVER_PID=""
        server_out=$rocemu_out client_out=$rxe_out
    fi
    wait_path "$share/rc.$i" 90 || true
    cap_stop "$CAP_PID"; CAP_PID=""
    rxe_rc=$(cat "$share/rc.$i" 2>/dev/null || echo none)
    echo "--- $c: rocemu-pingpong exit $([ $ok = 1 ] && echo 0 || echo '!= 0'), ibv_${tool}_pingpong exit $rxe_rc, $((SECONDS - t0)) s"
    [ "$rxe_rc" = 0 ] || ok=0
    # (the path MTU argument only matters for RC; UD messages are one packet)
    if ! python3 "$WIRE" "$SHARED" "$pcap" "$tool" "$size" "$ITERS" 1024 \
            "$server_out" "$client_out" | sed 's/^/    /'; then
        ok=0
    fi
    grep -E "bytes in|verify:|Failed|Couldn't|error" "$rocemu_out" 2>/dev/null | sed 's/^/    rocemu: /' || true
    grep -E "bytes in|Failed|Couldn't|error" "$rxe_out" 2>/dev/null | sed 's/^/    rxe:    /' || true
    cp "$pcap" "$rocemu_out" "$OUT/" 2>/dev/null || true
    cp "$rxe_out" "$OUT/$c.rxe.out" 2>/dev/null || true
    if [ $ok = 1 ]; then echo "RESULT $c: PASS"; pass=$((pass + 1));
    else echo "RESULT $c: FAIL"; fail=$((fail + 1)); fi
}

# run_phase NAME GUEST_MTU PORT_MTU CASE... : one daemon, one guest boot.
run_phase() {
    local phase=$1 guest_mtu=$2 port_mtu=$3; shift 3
    local share=$RUN/$phase i=0 c
    mkdir -p "$share"
    ip -n "$NS" link set tap0 mtu "$guest_mtu"
    start_daemon "$port_mtu"
    guest_job "$@" > "$share/A.sh"
    echo "=== interop ($phase): rocemu-pingpong ($ROCEMU_IP, $ROCEMU_MAC, port MTU $port_mtu) vs rdma_rxe in guest A ($GUEST_IP, eth0 MTU $guest_mtu), $ITERS iterations per case"
    GUEST_PID=$(start_guest 1 "$share" "$RUN/$phase.console.log" "rxe.mtu=$guest_mtu")
    for c in "$@"; do
        i=$((i + 1))
        run_one "$i" "$c" "$share"
    done
    wait_pids 60 "$GUEST_PID" || echo "[interop] guest did not power off" >&2
    GUEST_PID=""
    cp "$RUN/$phase.console.log" "$OUT/" 2>/dev/null || true
    stop_daemon
}

standard="" jumbo=""
for c in $CASES; do
    if case_jumbo "$c"; then jumbo="$jumbo $c"; else standard="$standard $c"; fi
done
# shellcheck disable=SC2086
if [ -n "$standard" ]; then run_phase mtu1500 1500 1500 $standard; fi
# UD carries one packet per message: 4096 B needs a 4096-byte active MTU on
# both sides, i.e. jumbo frames (rxe: netdev MTU >= 4096 + its 80 bytes of
# headers; rocemud: port MTU 4200).
# shellcheck disable=SC2086
if [ -n "$jumbo" ]; then run_phase mtu9000 9000 4200 $jumbo; fi
echo "$pass passed, $fail failed ($((SECONDS - T0)) s; captures and outputs in $OUT)"
[ "$fail" = 0 ]
