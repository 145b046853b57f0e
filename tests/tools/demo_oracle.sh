#!/usr/bin/env bash
# Writes the codec demo capture into a temporary directory and runs one of the
# independent oracles in ../shared/oracle/ on it.
# usage: demo_oracle.sh check_pcap|tshark_check DEMO_BINARY SHARED_DIR
#
# The demo's last connection ("IPv4 RC IBTA 1.5": RC_ATOMIC_WRITE, RC_FLUSH
# and their READ_RESPONSE_ONLY answers) is more than these oracles know:
# check_pcap checks the two requests' layouts (FETH, RETH, 8-byte payload,
# ICRC) but matches READ responses to READ requests only, so the answers
# are left out for it; Wireshark 4.0 knows neither opcode (it shows
# "Unknown (28/29)" and the rest as vendor data, docs/verbs.md), so
# tshark_check gets none of that connection's frames. Neither oracle knows
# XRC (annex A14: opcodes 0xA0-0xB7, the XRCETH), so the demo's XRC
# connection ("IPv4 XRC", after it) is left out for both; our own
# tshark_demo_check.py checks it against Wireshark, which dissects XRC.
set -euo pipefail
mode=$1 demo=$2 shared=$3
tmp=$(mktemp -d)
# No exec below: the trap must outlive the oracle to remove $tmp.
trap 'rm -rf "$tmp"' EXIT
"$demo" --manifest "$tmp/demo.tsv" "$tmp/all.pcap" >/dev/null
# Frame numbers of the XRC connection.
xrc() {
  awk -F'\t' 'index($4, "IPv4 XRC ") == 1 { print $1 }' "$tmp/demo.tsv"
}
# Frame numbers of the IBTA 1.5 connection; with $2 only its READ responses.
ibta15() {
  awk -F'\t' -v resp="${1:-}" \
    'index($4, "IPv4 RC IBTA 1.5 ") == 1 && (resp == "" || $3 == 16) \
     { print $1 }' "$tmp/demo.tsv"
}
case "$mode" in
  # --strict: warnings fail too; PMTU 256 is what the demo uses, so every
  # FIRST/MIDDLE payload size and READ response count is checked against it.
  check_pcap)
    drop=$(ibta15 responses)
    [[ $(wc -w <<<"$drop") -eq 2 ]] || { echo "IBTA 1.5 responses: $drop"; exit 1; }
    drop="$drop $(xrc)"
    [[ $(wc -w <<<"$drop") -gt 30 ]] || { echo "XRC frames: $drop"; exit 1; }
    # shellcheck disable=SC2086
    editcap "$tmp/all.pcap" "$tmp/demo.pcap" $drop
    /usr/bin/python3 "$shared/oracle/check_pcap.py" --strict \
      --require-roce --pmtu 256 -q "$tmp/demo.pcap" ;;
  tshark_check)
    drop=$(ibta15)
    [[ $(wc -w <<<"$drop") -eq 4 ]] || { echo "IBTA 1.5 frames: $drop"; exit 1; }
    drop="$drop $(xrc)"
    [[ $(wc -w <<<"$drop") -gt 30 ]] || { echo "XRC frames: $drop"; exit 1; }
    # shellcheck disable=SC2086
    editcap "$tmp/all.pcap" "$tmp/demo.pcap" $drop
    "$shared/oracle/tshark_check.sh" --strict-ipv6-csum \
      "$tmp/demo.pcap" ;;
  *) echo "unknown mode $mode" >&2; exit 2 ;;
esac
