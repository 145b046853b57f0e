# Sourced by the benchmark scripts: bench_prepare, bench_out and bench_json
# by the Google Benchmark ones (bench_codec.sh, bench_engine.sh,
# bench_engine_ir.sh, bench_memory.sh), from the repository's root;
# bench_options by those that run daemons and programs (bench_cm.sh,
# bench_dropin.sh, bench_lcores.sh, bench_link.sh, bench_netdev.sh,
# bench_perf.sh).

#   bench_options "USAGE" "$@"
# parses a script's options as its USAGE lists them: "[--rounds N]" sets
# $rounds to the next argument, "[--append]" sets $append to 1 (the script
# sets the defaults first); anything else prints the usage and exits 2.
bench_options() {
  local usage=$1 opt name
  shift
  while [[ $# -gt 0 ]]; do
    opt=$1
    name=${opt#--}
    name=${name//-/_}
    if [[ $opt == --* && $usage == *"[$opt "[A-Z]*"]"* && $# -ge 2 ]]; then
      printf -v "$name" '%s' "$2"
      shift 2
    elif [[ $opt == --* && $usage == *"[$opt]"* ]]; then
      printf -v "$name" '%s' 1
      shift
    else
      echo "usage: $0 $usage" >&2
      exit 2
    fi
  done
}
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

#   bench_out
# sets $out to a temporary file for JSON results (files "$out".* beside it
# too), removed when the script exits.
bench_out() {
  out=$(mktemp)
  trap 'rm -f "$out" "$out".*' EXIT
}

#   bench_json FILE BINARY [ARGS...]
# runs one Google Benchmark binary with its results written to FILE as JSON
# (the console table is dropped).
bench_json() {
  local file=$1
  shift
  "$@" --benchmark_out="$file" --benchmark_out_format=json >/dev/null
}
