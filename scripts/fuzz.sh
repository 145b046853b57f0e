#!/usr/bin/env bash
# fuzz.sh - a longer fuzzing campaign than the test suite's: every libFuzzer
# target of the sanitizer tree (or the ones named), one after the other,
# N minutes each on a temporary copy of its seed corpus (through
# tests/fuzz/run_fuzzer.sh). Prints each target's seed (ROCEMU_FUZZ_SEED=
# <seed> reproduces the run) and a table: executions, exec/s, coverage at
# start and end (libFuzzer's cov: edges and ft: features), the corpus it
# grew to and the result. Logs, crash artifacts and grown corpora stay in
# the printed output directory. Exit status 1 if any target failed.
#
#   scripts/fuzz.sh --minutes N [--build DIR] [TARGET...]
set -uo pipefail
usage() {
  echo "usage: $0 --minutes N [--build DIR] [TARGET...]" >&2
  exit 2
}
minutes=""
build="build-san"
build_arg=""
targets=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --minutes) [[ $# -ge 2 ]] || usage; minutes="$2"; shift 2 ;;
    --build) [[ $# -ge 2 ]] || usage; build="$2"; build_arg=" --build $2"; shift 2 ;;
    -*) usage ;;
    *) targets+=("$1"); shift ;;
  esac
done
# Fractions of a minute are for trying the script out.
[[ $minutes =~ ^[0-9]+([.][0-9]+)?$ ]] || usage
secs=$(awk -v m="$minutes" 'BEGIN { s = int(m * 60 + 0.5); print s < 1 ? 1 : s }')
root="$(cd "$(dirname "$0")/.." && pwd)"
[[ $build = /* ]] || build="$root/$build"
fuzzdir="$build/tests/fuzz"
[[ -d $fuzzdir ]] || {
  echo "fuzz: $fuzzdir not found (a -Dfuzz=true tree: see scripts/test.sh)" >&2
  exit 2
}
if [[ ${#targets[@]} -eq 0 ]]; then
  for f in "$fuzzdir"/*_fuzzer; do
    [[ -f $f && -x $f ]] && targets+=("$(basename "$f")")
  done
fi
[[ ${#targets[@]} -gt 0 ]] || { echo "fuzz: no *_fuzzer in $fuzzdir" >&2; exit 2; }

# Each target's seed corpus, as tests/fuzz/meson.build hands it to
# run_fuzzer.sh: "<target> <corpus dir>" lines.
corpora=$(python3 - "$root/tests/fuzz" <<'PY'
import re, sys
src = open(sys.argv[1] + "/meson.build").read()
for m in re.finditer(r"test\('(\w+)',.*?current_source_dir\(\)\s*/\s*'([^']+)'",
                     src, re.S):
    print(m.group(1), sys.argv[1] + "/" + m.group(2))
PY
)

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
out=$(mktemp -d /tmp/rocemu-fuzz.XXXXXX)
echo "fuzz: ${#targets[@]} target(s), ${secs} s each; output in $out"
rows=()
failed=0
for t in "${targets[@]}"; do
  corpus=$(awk -v t="$t" '$1 == t { print $2 }' <<<"$corpora")
  if [[ ! -x $fuzzdir/$t || -z $corpus || ! -d $corpus ]]; then
    echo "fuzz: $t: no such target or no seed corpus in tests/fuzz/meson.build" >&2
    rows+=("$t - - - - - - missing")
    failed=1
    continue
  fi
  cov0="" ft0="" cov1="" ft1="" corp=""
  seed=${ROCEMU_FUZZ_SEED:-$(( (RANDOM << 15 | RANDOM) % 2000000000 + 1 ))}
  echo "fuzz: $t seed $seed (ROCEMU_FUZZ_SEED=$seed scripts/fuzz.sh --minutes $minutes$build_arg $t)"
  log="$out/$t.log"
  ROCEMU_FUZZ_SEED=$seed ROCEMU_FUZZ_OUT="$out/$t" \
    bash "$root/tests/fuzz/run_fuzzer.sh" "$fuzzdir/$t" "$corpus" \
    "$secs" >"$log" 2>&1
  rc=$?
  # libFuzzer status lines: "#N INITED cov: C ft: F corp: K/SIZE ..." at
  # start; the last one (DONE, or the last NEW/pulse before a crash) at end.
  read -r cov0 ft0 < <(grep -m1 -E '^#[0-9]+[[:space:]]+INITED' "$log" |
    sed -nE 's/.* cov: ([0-9]+) ft: ([0-9]+).*/\1 \2/p')
  last=$(grep -E '^#[0-9]+[[:space:]].* cov: [0-9]+ ft: [0-9]+' "$log" | tail -1)
  read -r cov1 ft1 corp < <(sed -nE \
    's/.* cov: ([0-9]+) ft: ([0-9]+) corp: ([0-9]+\/[0-9A-Za-z]+).*/\1 \2 \3/p' \
    <<<"$last")
  execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' "$log" | tail -1)
  rate=$(sed -nE 's/^stat::average_exec_per_sec: *([0-9]+)/\1/p' "$log" | tail -1)
  [[ -n $execs ]] || execs=$(sed -nE 's/^#([0-9]+).*/\1/p' <<<"$last")
  result=ok
  if [[ $rc -ne 0 ]]; then
    failed=1
    artifact=$(find "$out/$t/artifacts" -type f 2>/dev/null | head -1)
    if [[ -n $artifact ]]; then
      result="crash:$artifact"
    else
      result="failed(rc=$rc):$log"
    fi
  fi
  cov="-" ft="-"
  if [[ -n $cov0 && -n $cov1 ]]; then
    cov="$cov0->$cov1(+$(( cov1 - cov0 )))"
    ft="$ft0->$ft1(+$(( ft1 - ft0 )))"
  fi
  rows+=("$t ${execs:--} ${rate:--} $cov $ft ${corp:--} $seed $result")
done

echo
{
  echo "target executions exec/s cov(start->end) ft(start->end) corpus seed result"
  printf '%s\n' "${rows[@]}"
} | column -t
exit $failed
