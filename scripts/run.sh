#!/usr/bin/env bash
# The README's "run" command: installs and builds (scripts/setup.sh), then
# starts rocemud on the default configuration (config/rocemu.yaml: one TAP
# port, rocemu0, 10.77.0.2/24 and fd77::2/64) and shows it working:
#   1. ping and ping -6 from the kernel side of the TAP link,
#   2. the daemon's counters read from its control socket, and its RDMA
#      device, ports and PFC state through rocemu-ctl,
#   3. a capture switched on at run time and opened in tshark,
#   4. rocemu-decode's verdict on every frame the codec builds,
#   5. RDMA moving between two RNICs: a second rocemud on another TAP port
#      (bridged with the first in the namespace), and Debian's unmodified
#      ibv_rc_pingpong and ib_write_bw run over them through the drop-in
#      libibverbs (scripts/rocemu-run), with both RNICs' counters and
#      tshark's view of the RoCEv2 frames they exchanged.
# The daemon runs inside a network namespace of its own (rocemu-run), so
# nothing on the host's network changes. On a terminal it then keeps running
# until Ctrl-C; otherwise (or with --once) it stops after the demonstration.
# Needs root (TAP, network namespaces).
set -euo pipefail
cd "$(dirname "$0")/.."
once=0
[[ "${1:-}" == "--once" || ! -t 0 ]] && once=1

scripts/setup.sh
[[ $(id -u) -eq 0 ]] || { echo "run.sh: needs root (TAP, namespaces)"; exit 1; }

ns=rocemu-run
work=$(mktemp -d /tmp/rocemu-run.XXXXXX)
sock=$work/rocemud.sock
cfg=$work/rocemu.yaml
daemon_pid=""
peer_pid=""
cleanup() {
  [[ -n "$peer_pid" ]] && kill -TERM "$peer_pid" 2>/dev/null && wait "$peer_pid" 2>/dev/null || true
  [[ -n "$daemon_pid" ]] && kill -TERM "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null || true
  ip netns del "$ns" 2>/dev/null || true
}
trap cleanup EXIT
ip netns del "$ns" 2>/dev/null || true
ip netns add "$ns"
ip netns exec "$ns" ip link set lo up

# The default configuration, with the control socket and captures moved into
# this run's scratch directory (the defaults live under /run and /var/lib).
sed -e "s|/run/rocemu/rocemud.sock|$sock|" \
    -e "s|/run/rocemu/verbs.sock|$work/verbs.sock|" \
    -e "s|/var/lib/rocemu/|$work/|g" config/rocemu.yaml > "$cfg"
build/emulator/rocemud --config "$cfg" --check-config

ctl() {  # one JSON request to the control socket, pretty-printed reply
  /usr/bin/python3 - "$sock" "$1" <<'EOF'
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(5)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\n")
data = b""
while not data.endswith(b"\n"):
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
print(json.dumps(json.loads(data), indent=1)[:3000])
EOF
}

echo "== starting rocemud (config/rocemu.yaml) in namespace $ns"
ip netns exec "$ns" build/emulator/rocemud --config "$cfg" &
daemon_pid=$!
for _ in $(seq 100); do
  [[ -S "$sock" ]] && ip netns exec "$ns" ip link show rocemu0 >/dev/null 2>&1 && break
  sleep 0.1
done
ip netns exec "$ns" ip addr add 10.77.0.1/24 dev rocemu0
ip netns exec "$ns" ip addr add fd77::1/64 dev rocemu0 nodad
ip netns exec "$ns" ip link set rocemu0 up

ctl '{"cmd":"capture","enable":true}'
echo
echo "== ping the RNIC's addresses from the kernel side of the TAP link"
ip netns exec "$ns" ping -c 3 -i 0.2 -W 2 10.77.0.2
ip netns exec "$ns" ping -6 -c 3 -i 0.2 -W 2 fd77::2
ctl '{"cmd":"capture","enable":false}'
echo
echo "== counters (control socket: {\"cmd\":\"counters\"})"
ctl '{"cmd":"counters"}'
echo
echo "== the RDMA device applications attach to (rocemu-ctl devices)"
build/emulator/tools/rocemu-ctl --socket "$sock" devices
echo "== its ports and PFC state (rocemu-ctl ports / pfc)"
build/emulator/tools/rocemu-ctl --socket "$sock" ports
build/emulator/tools/rocemu-ctl --socket "$sock" pfc
echo
echo "== the capture, opened in tshark"
shown=0
for f in "$work"/*-rx.pcap* "$work"/*-tx.pcap*; do
  [[ -s "$f" ]] || continue
  echo "-- $f"
  { tshark -r "$f" -n 2>/dev/null || true; } | head -20
  shown=$((shown + 1))
done
# The capture's format (pcapng or pcap) decides the name: a glob that
# misses it must not pass for a capture that shows nothing.
((shown > 0)) || { echo "run.sh: no capture file in $work" >&2; exit 1; }

echo
echo "== every RoCEv2/PFC frame type the codec builds, verified by rocemu-decode"
build/emulator/tools/rocemu-codec-demo "$work/demo.pcap" >/dev/null
build/emulator/tools/rocemu-decode "$work/demo.pcap" | tail -5
echo "(full list: build/emulator/tools/rocemu-decode $work/demo.pcap)"

echo
echo "== RDMA between two RNICs with unmodified Debian programs"
# RNIC B: the same configuration on a second TAP port; both TAPs join a
# bridge in the namespace, so the two RNICs share one Ethernet segment.
peer_sock=$work/peer.sock
sed -e "s|/run/rocemu/rocemud.sock|$peer_sock|" \
    -e "s|/run/rocemu/verbs.sock|$work/peer-verbs.sock|" \
    -e "s|/var/lib/rocemu/|$work/peer-|g" \
    -e "s|name: tap0 |name: tap1 |" \
    -e "s|net_tap0,iface=rocemu0|net_tap1,iface=rocemu1|" \
    -e "s|10.77.0.2/24|10.77.0.3/24|" -e "s|fd77::2/64|fd77::3/64|" \
    config/rocemu.yaml > "$work/peer.yaml"
ip netns exec "$ns" build/emulator/rocemud --config "$work/peer.yaml" &
peer_pid=$!
for _ in $(seq 100); do
  [[ -S "$peer_sock" ]] && ip netns exec "$ns" ip link show rocemu1 >/dev/null 2>&1 && break
  sleep 0.1
done
ip netns exec "$ns" ip link add rocemubr type bridge
for dev in rocemu0 rocemu1; do
  ip netns exec "$ns" ip link set "$dev" master rocemubr
  ip netns exec "$ns" ip link set "$dev" up
done
ip netns exec "$ns" ip link set rocemubr up
ctl '{"cmd":"capture","enable":true}'
run_a() { ip netns exec "$ns" scripts/rocemu-run --socket "$work/verbs.sock" "$@"; }
run_b() { ip netns exec "$ns" scripts/rocemu-run --socket "$work/peer-verbs.sock" "$@"; }
echo "-- ibv_devices, as each program sees it"
run_a ibv_devices
echo "-- ibv_rc_pingpong: server on RNIC A (10.77.0.2), client on RNIC B (10.77.0.3)"
run_a ibv_rc_pingpong -g 0 -n 1000 -s 4096 > "$work/pp-server.txt" 2>&1 &
pp=$!
sleep 0.5
run_b timeout 60 ibv_rc_pingpong -g 0 -n 1000 -s 4096 127.0.0.1
wait "$pp"
echo "-- ib_write_bw (perftest), 64 KiB messages"
run_a timeout 60 ib_write_bw -d rocemu_tap0 -x 0 -s 65536 -n 2000 --report_gbits > "$work/bw-server.txt" 2>&1 &
bw=$!
sleep 0.5
run_b timeout 60 ib_write_bw -d rocemu_tap1 -x 0 -s 65536 -n 2000 --report_gbits 127.0.0.1 | tail -4
wait "$bw"
ctl '{"cmd":"capture","enable":false}'
echo "-- RNIC A's RDMA counters (rocemu-ctl counters)"
build/emulator/tools/rocemu-ctl --socket "$sock" counters | grep -E "sent_pkts|rcvd_pkts|sent_bytes|rcvd_bytes|rx_write_requests|rdma_sends|rdma_recvs|out_of_sequence|duplicate_request" | head -12
echo "-- RNIC B's"
build/emulator/tools/rocemu-ctl --socket "$peer_sock" counters | grep -E "sent_pkts|rcvd_pkts|sent_bytes|rcvd_bytes|rx_write_requests|rdma_sends|rdma_recvs|out_of_sequence|duplicate_request" | head -12
echo "-- the RoCEv2 frames RNIC A sent, in tshark (first 12)"
for f in "$work"/tap0-tx.pcap*; do
  { tshark -r "$f" -n -Y infiniband 2>/dev/null || true; } | head -12
done

if ((once)); then
  echo "== done; stopping rocemud"
  exit 0
fi
echo
echo "== rocemud keeps running in namespace $ns; try:"
echo "   ip netns exec $ns ping 10.77.0.2"
echo "   build/emulator/tools/rocemu-ctl --socket $sock counters   # or qps, clients, dcqcn"
echo "   applications: rocemu_open_device(\"$work/verbs.sock\")"
echo "   Ctrl-C stops it (clean shutdown: QPs flushed, captures closed)"
wait "$daemon_pid"
