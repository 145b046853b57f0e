#!/usr/bin/env bash
# Configures (first time) and builds build-san: clang, ASan+UBSan, the whole
# tree with the libFuzzer targets, less what only the release tree runs (the
# sim suite's C++ tests and the benchmarks: -Drelease_suites=false; turn it
# on to run those under ASan) and ns3/ (-Dns3=disabled: ns-3's fabric runs
# are release-tree work). scripts/test.sh runs the core, daemon and
# fuzz suites in it; scripts/sanitize.sh the embedded mode's pairs.
set -uo pipefail
cd "$(dirname "$0")/.."
san_opts=(-Dcore_only=false -Dfuzz=true -Drelease_suites=false -Db_sanitize=address,undefined
          -Db_lundef=false -Dbuildtype=debugoptimized -Dns3=disabled)
if [[ -f build-san/build.ninja ]]; then
  meson setup --reconfigure build-san "${san_opts[@]}" >/dev/null || exit 1
else
  CC=clang CXX=clang++ meson setup build-san "${san_opts[@]}" >/dev/null || exit 1
fi
ninja -C build-san
