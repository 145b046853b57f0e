#!/usr/bin/env bash
# Installs, builds and runs every test suite; ends with "N passed, N failed".
#   build/      release tree (g++): everything except the core unit tests
#   build-san/  clang + ASan/UBSan, core only: core unit tests and the fuzzer
# Usage: scripts/test.sh [meson test args...]
set -uo pipefail
cd "$(dirname "$0")/.."
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
fail=0

scripts/setup.sh || { echo "0 passed, 1 failed"; exit 1; }

if [[ ! -f build-san/build.ninja ]]; then
  CC=clang CXX=clang++ meson setup build-san -Dcore_only=true -Dfuzz=true \
    -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized >/dev/null \
    || { echo "0 passed, 1 failed"; exit 1; }
fi
ninja -C build-san || { echo "0 passed, 1 failed"; exit 1; }

nproc_=$(nproc)
meson test -C build --no-rebuild --num-processes "$nproc_" --no-suite core --no-suite fuzz --print-errorlogs "$@" || fail=1
meson test -C build-san --no-rebuild --num-processes "$nproc_" --suite core --suite fuzz --print-errorlogs "$@" || fail=1

/usr/bin/python3 scripts/test_summary.py build/meson-logs/testlog.json build-san/meson-logs/testlog.json || fail=1
exit $fail
