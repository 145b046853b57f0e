#!/usr/bin/env bash
# sanitize.sh - the whole tree (daemon, session server, verbs library, the
# drop-in libibverbs and librdmacm, tools) built with clang and
# ASan+UBSan in build-asan, and the tests of our own programs run there:
# the daemon suite's C++ tests (session server, hostile client, object
# model, process memory, rings, daemon loop and faults, control socket,
# test hooks, config, net stack ...), then the embedded mode's rocemu-perf
# pairs (tests/ibverbs/embedded_test.py --perf-only; leaks checked too, as
# the in-process RNIC leaves DPDK to the program's exit). The default CI's
# sanitizer tree (build-san) holds only the DPDK-free core and the fuzzers;
# this is the heavier run, about 15 minutes of building on two cores.
#
#   scripts/sanitize.sh [meson test args...]   (default: the tests below)
#
# Not here: tests that load the drop-in into Debian's uninstrumented
# binaries (perftest, ibverbs-utils, pyverbs): the ASan runtime would have
# to be preloaded into each; tests/ibverbs/valgrind_test.py covers the
# library inside ibv_rc_pingpong instead.
set -uo pipefail
cd "$(dirname "$0")/.."
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
if [[ ! -f build-asan/build.ninja ]]; then
  CC=clang CXX=clang++ meson setup build-asan -Db_sanitize=address,undefined \
    -Db_lundef=false -Dbuildtype=debugoptimized >/dev/null || exit 1
fi
ninja -C build-asan || exit 1
embedded=0
if [[ $# -eq 0 ]]; then
  embedded=1
  # Every C++ test executable of the daemon suite (python drivers excluded).
  mapfile -t tests < <(meson test -C build-asan --list --suite daemon 2>/dev/null |
    sed -n 's/^rocemu:daemon \/ //p' |
    grep -v -E '^(ibverbs_.*|check_configs)$')
  set -- "${tests[@]}"
fi
fail=0
meson test -C build-asan --no-rebuild --num-processes "$(nproc)" --print-errorlogs "$@" || fail=1
# The embedded mode (docs/embedded.md): rocemu-perf and the in-process RNIC
# module built here, in pairs over memif inside a network namespace (root).
if ((embedded)); then
  if [[ $(id -u) -eq 0 ]]; then
    python3 tests/ibverbs/embedded_test.py --perf-only build-asan/emulator/rocemud \
      build-asan/verbs/tools/rocemu-perf build-asan/verbs/ibverbs \
      build-asan/emulator/librocemu_embedded.so || fail=1
  else
    echo "sanitize.sh: the embedded mode's pairs need root (network namespaces): not run" >&2
    fail=1
  fi
fi
exit $fail
