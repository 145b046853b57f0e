#!/usr/bin/env bash
# Writes the codec demo capture into a temporary directory and runs one of the
# independent oracles in ../shared/oracle/ on it.
# usage: demo_oracle.sh check_pcap|tshark_check DEMO_BINARY SHARED_DIR
set -euo pipefail
mode=$1 demo=$2 shared=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$demo" "$tmp/demo.pcap" >/dev/null
case "$mode" in
  # --strict: warnings fail too; PMTU 256 is what the demo uses, so every
  # FIRST/MIDDLE payload size and READ response count is checked against it.
  check_pcap) exec /usr/bin/python3 "$shared/oracle/check_pcap.py" --strict \
                --require-roce --pmtu 256 -q "$tmp/demo.pcap" ;;
  tshark_check) exec "$shared/oracle/tshark_check.sh" --strict-ipv6-csum \
                  "$tmp/demo.pcap" ;;
  *) echo "unknown mode $mode" >&2; exit 2 ;;
esac
