# Sourced by the Google Benchmark scripts (bench_codec.sh, bench_engine.sh,
# bench_memory.sh), from the repository's root.
#   bench_prepare NAME BUILD_DIR TARGET...
# configures BUILD_DIR if needed, builds the targets and prints the machine
# line every figure in docs/performance.md is recorded with.
bench_prepare() {
  local name=$1 build=$2
  shift 2
  [[ -f $build/build.ninja ]] || meson setup "$build" >/dev/null
  ninja -C "$build" "$@" >/dev/null
  echo "$name: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), load $(cut -d' ' -f1-3 /proc/loadavg)"
}
