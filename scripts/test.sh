#!/usr/bin/env bash
# Installs, builds and runs every test suite; ends with "N passed, N failed".
#   build/      g++ release: the sim, tools, net and interop suites, and the
#               daemon suite's tests that load the drop-in libibverbs into
#               Debian's own binaries (suite 'uninstrumented')
#   build-san/  clang + ASan/UBSan, the whole tree (daemon, session server,
#               verbs library and drop-ins included) with the libFuzzer
#               targets: the core, daemon and fuzz suites
# Neither tree defines (so builds) the C++ tests it does not run: the
# release tree has -Dsanitizer_suites=false, the sanitizer tree
# -Drelease_suites=false (no sim-suite tests, no benchmarks).
# Usage: scripts/test.sh [meson test args...]
set -uo pipefail
cd "$(dirname "$0")/.."
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
fail=0

scripts/setup.sh -Dsanitizer_suites=false || { echo "0 passed, 1 failed"; exit 1; }

scripts/san_tree.sh || { echo "0 passed, 1 failed"; exit 1; }

nproc_=$(nproc)
meson test -C build --no-rebuild --num-processes "$nproc_" --suite sim --suite tools \
  --suite net --suite interop --suite uninstrumented --print-errorlogs "$@" || fail=1
meson test -C build-san --no-rebuild --num-processes "$nproc_" --suite core --suite fuzz \
  --suite daemon --no-suite uninstrumented --print-errorlogs "$@" || fail=1

/usr/bin/python3 scripts/test_summary.py build/meson-logs/testlog.json build-san/meson-logs/testlog.json || fail=1
exit $fail
