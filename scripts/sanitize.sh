#!/usr/bin/env bash
# sanitize.sh - the embedded mode under ASan+UBSan+LSan, on top of what the
# default CI already runs in its sanitizer tree (build-san: the whole tree
# with clang ASan+UBSan; the core, daemon and fuzz suites). Here: the
# embedded mode's rocemu-perf pairs (tests/ibverbs/embedded_test.py
# --perf-only), two programs each running its RNIC in-process over memif
# inside a network namespace (root), leaks checked too, as the in-process
# RNIC leaves DPDK to the program's exit.
#
#   scripts/sanitize.sh [meson test args...]   (with args: those tests in
#                                              build-san instead)
#
# Not under ASan anywhere: tests that load the drop-in into Debian's
# uninstrumented binaries (perftest, ibverbs-utils, pyverbs; meson suite
# 'uninstrumented'): the ASan runtime would have to be preloaded into each;
# tests/ibverbs/valgrind_test.py covers the library inside ibv_rc_pingpong
# instead.
set -uo pipefail
cd "$(dirname "$0")/.."
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
scripts/san_tree.sh || exit 1
if [[ $# -gt 0 ]]; then
  exec meson test -C build-san --no-rebuild --num-processes "$(nproc)" --print-errorlogs "$@"
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "sanitize.sh: the embedded mode's pairs need root (network namespaces): not run" >&2
  exit 1
fi
python3 tests/ibverbs/embedded_test.py --perf-only build-san/emulator/rocemud \
  build-san/verbs/tools/rocemu-perf build-san/verbs/ibverbs \
  build-san/emulator/librocemu_embedded.so
