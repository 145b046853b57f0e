#!/usr/bin/env bash
# tsan.sh - the verbs library's multi-threaded paths under ThreadSanitizer:
# the drop-in libibverbs and tests/ibverbs/ibv_probe built with clang
# -fsanitize=thread in build-tsan, then ibv_probe's scenarios run over it
# against a release rocemud (the daemon is one polling thread; the threads
# are the application's): several threads posting WRITEs to one QP while
# another polls its CQ (each thread's spin lock and the shared rings), the
# completion channel and async event fds, refusals, fork. Then the embedded
# mode (docs/embedded.md): rocemu-perf and librocemu_embedded.so built under
# TSan, pairs of programs each running its RNIC in-process, where the
# program's polling threads and the progress thread share the RNIC's loop
# (tests/ibverbs/embedded_test.py --perf-only; DPDK itself is not
# instrumented). Last, rocemud itself built under TSan with eal.lcores: 2
# (docs/daemon.md): the port's lcore and a shard's lcore sharing rings,
# mbufs, the neighbour cache, the CM listener registry and the pause of
# the control views, driven by tests/ibverbs/stock_tools_test.py
# --lcores=2 (two perftest pairs at once, one over rdma_cm, and a pair
# across one daemon's shards; rocemu-ctl views while they run).
#
# A report fails the run (TSAN_OPTIONS halt_on_error=1, exit code 66). Not in
# the default CI: configuring and building the targets takes ~10 minutes on
# two cores, on top of a default suite near its 30-minute budget.
#
#   scripts/tsan.sh [--release-build DIR]   (default: build)
set -uo pipefail
cd "$(dirname "$0")/.."
release=build
while [[ $# -gt 0 ]]; do
  case "$1" in
    --release-build) release="$2"; shift 2 ;;
    *) echo "usage: $0 [--release-build DIR]" >&2; exit 2 ;;
  esac
done
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:exitcode=66:second_deadlock_stack=1}
# DPDK's rings in their C11-atomics form (the x86 default uses plain
# loads and compiler barriers, which TSan cannot follow): same ring layout,
# so the uninstrumented DPDK libraries interoperate.
if [[ ! -f build-tsan/build.ninja ]]; then
  CC=clang CXX=clang++ meson setup build-tsan -Db_sanitize=thread \
    -Db_lundef=false -Dbuildtype=debugoptimized \
    -Dcpp_args=-DRTE_USE_C11_MEM_MODEL >/dev/null || exit 1
else
  meson configure build-tsan -Dcpp_args=-DRTE_USE_C11_MEM_MODEL >/dev/null ||
    exit 1
fi
ninja -C build-tsan verbs/ibverbs/libibverbs.so.1.14.44 tests/ibverbs/ibv_probe ||
  exit 1
ninja -C build-tsan emulator/librocemu_embedded.so verbs/tools/rocemu-perf ||
  exit 1
ninja -C build-tsan emulator/rocemud || exit 1
ninja -C "$release" emulator/rocemud || exit 1
fail=0
python3 tests/ibverbs/dropin_probe_test.py "$release/emulator/rocemud" \
  build-tsan/verbs/ibverbs build-tsan/tests/ibverbs/ibv_probe || fail=1
TSAN_OPTIONS="$TSAN_OPTIONS:suppressions=$PWD/scripts/tsan_dpdk.supp" \
  python3 tests/ibverbs/embedded_test.py --perf-only \
  "$release/emulator/rocemud" build-tsan/verbs/tools/rocemu-perf \
  build-tsan/verbs/ibverbs build-tsan/emulator/librocemu_embedded.so || fail=1
ninja -C "$release" emulator/tools/rocemu-ctl || exit 1
ROCEMU_CTL="$release/emulator/tools/rocemu-ctl" \
TSAN_OPTIONS="$TSAN_OPTIONS:suppressions=$PWD/scripts/tsan_dpdk.supp" \
  python3 tests/ibverbs/stock_tools_test.py build-tsan/emulator/rocemud \
  "$release/verbs/ibverbs" memif --lcores=2 || fail=1
exit $fail
