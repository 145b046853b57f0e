#!/usr/bin/env bash
# fuzz.sh - a longer fuzzing campaign than the test suite's: every libFuzzer
# target of the sanitizer tree (or the ones named), N minutes each on a
# temporary copy of its seed corpus (through tests/fuzz/run_fuzzer.sh),
# one at a time or --jobs J at once. With --plateau M a target stops
# earlier, once its coverage (edges) has not grown for M minutes. Prints
# each target's seed (ROCEMU_FUZZ_SEED=<seed> reproduces the run) and a
# table: executions, exec/s, coverage at start and end (libFuzzer's cov:
# edges and ft: features), the corpus it grew to, when the last new edge
# came, whether it stopped on a plateau, and the result. Logs, coverage
# curves (<target>.curve: seconds executions edges features corpus), crash
# artifacts and grown corpora stay in the printed output directory. Exit
# status 1 if any target failed.
#
#   scripts/fuzz.sh --minutes N [--plateau M] [--jobs J] [--resume DIR]
#                   [--build DIR] [TARGET...]
#
# --resume DIR starts each target from its seeds and the corpus a
# campaign in DIR grew for it, so campaigns chain: a plateau is judged
# from where the last one ended, not from the seeds (which keep only
# small inputs, below).
#
# --seeds-from DIR instead adds to each target's seed corpus in the tree
# what a campaign in DIR (an output directory of this script) grew: the
# inputs of at most 2 KiB (ROCEMU_SEED_MAX_BYTES) that reach an edge the
# seeds do not (libFuzzer -merge=1 on edges, -use_counters=0), so the seeds
# stay small and the 30 s suite starts where the campaign ended.
#
#   scripts/fuzz.sh --seeds-from DIR [--build DIR] [TARGET...]
set -uo pipefail
usage() {
  echo "usage: $0 --minutes N [--plateau M] [--jobs J] [--resume DIR] [--build DIR] [TARGET...]" >&2
  echo "       $0 --seeds-from DIR [--build DIR] [TARGET...]" >&2
  exit 2
}
minutes=""
seeds_from=""
resume=""
plateau=""
jobs=1
build="build-san"
build_arg=""
targets=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --minutes) [[ $# -ge 2 ]] || usage; minutes="$2"; shift 2 ;;
    --seeds-from) [[ $# -ge 2 ]] || usage; seeds_from="$2"; shift 2 ;;
    --plateau) [[ $# -ge 2 ]] || usage; plateau="$2"; shift 2 ;;
    --resume) [[ $# -ge 2 ]] || usage; resume="$2"; shift 2 ;;
    --jobs) [[ $# -ge 2 ]] || usage; jobs="$2"; shift 2 ;;
    --build) [[ $# -ge 2 ]] || usage; build="$2"; build_arg=" --build $2"; shift 2 ;;
    -*) usage ;;
    *) targets+=("$1"); shift ;;
  esac
done
# Fractions of a minute are for trying the script out.
[[ -n $seeds_from ]] && minutes=0
[[ $minutes =~ ^[0-9]+([.][0-9]+)?$ ]] || usage
secs=$(awk -v m="$minutes" 'BEGIN { s = int(m * 60 + 0.5); print s < 1 ? 1 : s }')
plateau_secs=0
if [[ -n $plateau ]]; then
  [[ $plateau =~ ^[0-9]+([.][0-9]+)?$ ]] || usage
  plateau_secs=$(awk -v m="$plateau" 'BEGIN { print int(m * 60 + 0.5) }')
fi
[[ $jobs =~ ^[1-9][0-9]*$ ]] || usage
[[ -z $resume || -d $resume ]] || { echo "fuzz: --resume $resume: no such directory" >&2; exit 2; }
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

# malloc_context_size=0: no stack trace recorded per allocation and free.
# It cost control_fuzzer about a tenth of its time in ASan's stack depot
# (docs/fuzzing.md); a finding still aborts with the faulting stack, and
# running the target on its saved artifact (default ASAN_OPTIONS) gives the
# allocation and free stacks too.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:malloc_context_size=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

if [[ -n $seeds_from ]]; then
  max_bytes=${ROCEMU_SEED_MAX_BYTES:-2048}
  status=0
  for t in "${targets[@]}"; do
    corpus=$(awk -v t="$t" '$1 == t { print $2 }' <<<"$corpora")
    grown="$seeds_from/$t/corpus"
    [[ -d $grown && -n $corpus ]] || continue
    small=$(mktemp -d)
    find "$grown" -type f -size -$((max_bytes + 1))c -exec cp {} "$small/" \;
    before=$(ls "$corpus" | wc -l)
    if ! "$fuzzdir/$t" -merge=1 -use_counters=0 "$corpus" "$small" \
      >"$seeds_from/$t.merge.log" 2>&1; then
      echo "fuzz: $t: merge failed, see $seeds_from/$t.merge.log" >&2
      status=1
    fi
    rm -rf "$small"
    echo "fuzz: $t: $before -> $(ls "$corpus" | wc -l) seeds," \
      "$(cat "$corpus"/* | wc -c) bytes ($corpus)"
  done
  exit $status
fi
out=$(mktemp -d /tmp/rocemu-fuzz.XXXXXX)
echo "fuzz: ${#targets[@]} target(s), ${secs} s each at most, $jobs at once; output in $out"
# One target: its table row goes to $out/<target>.row.
run_target() {
  local t=$1 seed=$2 corpus cov0="" ft0="" cov1="" ft1="" corp="" log rc last
  local execs rate result artifact cov ft watch last_new="-" on_plateau="-"
  corpus=$(awk -v t="$t" '$1 == t { print $2 }' <<<"$corpora")
  if [[ ! -x $fuzzdir/$t || -z $corpus || ! -d $corpus ]]; then
    echo "fuzz: $t: no such target or no seed corpus in tests/fuzz/meson.build" >&2
    echo "$t - - - - - - - - missing" >"$out/$t.row"
    return
  fi
  if [[ -n $resume && -d $resume/$t/corpus ]]; then
    # Seeds and the earlier campaign's corpus, in one directory.
    mkdir -p "$out/$t.start"
    cp "$corpus"/* "$out/$t.start/"
    cp -n "$resume/$t/corpus"/* "$out/$t.start/"  # same name, same bytes
    echo "fuzz: $t resumes from $resume/$t/corpus ($(ls "$out/$t.start" | wc -l) inputs)"
    corpus="$out/$t.start"
  fi
  echo "fuzz: $t seed $seed (ROCEMU_FUZZ_SEED=$seed scripts/fuzz.sh --minutes $minutes$build_arg $t)"
  log="$out/$t.log"
  watch=$(ROCEMU_FUZZ_SEED=$seed ROCEMU_FUZZ_OUT="$out/$t" \
    python3 "$root/tests/fuzz/fuzz_watch.py" --plateau "$plateau_secs" \
    "$log" "$out/$t.curve" "$t" -- \
    bash "$root/tests/fuzz/run_fuzzer.sh" "$fuzzdir/$t" "$corpus" "$secs")
  rc=$?
  read -r last_new on_plateau <<<"$watch"
  [[ $plateau_secs -gt 0 ]] || on_plateau="-"
  [[ $on_plateau != 1 ]] || on_plateau=yes
  [[ $on_plateau != 0 ]] || on_plateau=no
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
  echo "$t ${execs:--} ${rate:--} $cov $ft ${corp:--} ${last_new}s $on_plateau $seed $result" \
    >"$out/$t.row"
}

for t in "${targets[@]}"; do
  while [[ $(jobs -rp | wc -l) -ge $jobs ]]; do wait -n; done
  run_target "$t" \
    "${ROCEMU_FUZZ_SEED:-$(( (RANDOM << 15 | RANDOM) % 2000000000 + 1 ))}" &
done
wait
rows=()
failed=0
for t in "${targets[@]}"; do
  row=$(cat "$out/$t.row" 2>/dev/null || echo "$t - - - - - - - - lost")
  [[ ${row##* } == ok ]] || failed=1
  rows+=("$row")
done

echo
{
  echo "target executions exec/s cov(start->end) ft(start->end) corpus last_new_edge plateau seed result"
  printf '%s\n' "${rows[@]}"
} | column -t
exit $failed
