#!/usr/bin/env bash
# The README's "run" command until the daemon lands: installs and builds
# (scripts/setup.sh), writes one frame of every kind the codec builds to
# captures/demo.pcap, prints Wireshark's one-line summary of each frame and
# then rocemu-decode's verdict (which, unlike Wireshark, checks every ICRC).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
mkdir -p captures
build/emulator/tools/rocemu-codec-demo captures/demo.pcap

# Wireshark's RDMA payload heuristics (RPC-over-RDMA, SMB Direct, NVMe-oF,
# iSER ...) misparse arbitrary payload bytes; disable the ones this tshark has.
have=$(tshark -G protocols 2>/dev/null | cut -f3)
disable=()
for p in rpcordma smb_direct nvme-rdma iser smc lnet drbd sdp infiniband_sdp \
         fcoib; do
  grep -qx -- "$p" <<<"$have" && disable+=(--disable-protocol "$p")
done
echo
echo "== tshark: one line per frame (Wireshark 4.0 shows the CNP, opcode 0x81, as unknown)"
tshark -r captures/demo.pcap -n "${disable[@]}" 2>/dev/null
echo
echo "== rocemu-decode: every frame with its ICRC verified"
build/emulator/tools/rocemu-decode captures/demo.pcap
