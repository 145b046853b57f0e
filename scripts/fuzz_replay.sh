#!/usr/bin/env bash
# fuzz_replay.sh - the coverage a corpus reproduces: each corpus given is
# replayed N times (default 3), each time by a fresh process with its own
# seed and address layout (libFuzzer -runs=0: every input run once, no
# mutation), and the edges of each replay are printed with their range.
#
# A campaign's live count (scripts/fuzz.sh's curves) also holds edges a
# stateful target reached only with the state earlier inputs left behind
# (session_fuzzer and ring_fuzzer keep their server across inputs, as a
# daemon does) or with one process's address layout (hash-table order).
# Such edges come and go between processes, and a long campaign keeps
# "finding" them again. Replaying the corpus at a campaign's start and at
# its end, a few times each, tells whether the campaign grew the coverage
# beyond that spread.
#
#   scripts/fuzz_replay.sh [--runs N] [--build DIR] TARGET CORPUS_DIR...
set -uo pipefail
runs=3
build="build-san"
usage() {
  echo "usage: $0 [--runs N] [--build DIR] TARGET CORPUS_DIR..." >&2
  exit 2
}
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) [[ $# -ge 2 ]] || usage; runs="$2"; shift 2 ;;
    --build) [[ $# -ge 2 ]] || usage; build="$2"; shift 2 ;;
    -*) usage ;;
    *) break ;;
  esac
done
[[ $# -ge 2 && $runs =~ ^[1-9][0-9]*$ ]] || usage
root="$(cd "$(dirname "$0")/.." && pwd)"
[[ $build = /* ]] || build="$root/$build"
target=$1
shift
fuzzer="$build/tests/fuzz/$target"
[[ -x $fuzzer ]] || { echo "fuzz_replay: no $fuzzer" >&2; exit 2; }
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}
status=0
for dir in "$@"; do
  [[ -d $dir ]] || { echo "fuzz_replay: $dir: no such directory" >&2; status=2; continue; }
  edges=()
  for ((i = 1; i <= runs; ++i)); do
    # A copy: libFuzzer may not write into the corpus it replays.
    copy=$(mktemp -d)
    cp "$dir"/* "$copy/" 2>/dev/null
    cov=$("$fuzzer" -runs=0 -seed="$i" -max_len=9100 -rss_limit_mb=4096 \
      -timeout=30 "$copy" 2>&1 |
      sed -nE 's/^#[0-9]+[[:space:]]+INITED cov: ([0-9]+) .*/\1/p' | tail -1)
    rm -rf "$copy"
    if [[ -z $cov ]]; then
      echo "fuzz_replay: $target on $dir: replay $i failed" >&2
      status=1
      continue
    fi
    edges+=("$cov")
  done
  [[ ${#edges[@]} -gt 0 ]] || continue
  lo=$(printf '%s\n' "${edges[@]}" | sort -n | head -1)
  hi=$(printf '%s\n' "${edges[@]}" | sort -n | tail -1)
  echo "$target $dir: $(ls "$dir" | wc -l) inputs, edges per replay: ${edges[*]} (range $lo-$hi)"
done
exit $status
