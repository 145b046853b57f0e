#!/usr/bin/env bash
# Runs a libFuzzer target for a bounded time on a copy of its seed corpus (so
# the repository is not modified); crash artifacts go to the temporary
# directory and are printed. Exit status is libFuzzer's: non-zero on a crash,
# a sanitizer report, a timeout or an invariant abort. With ROCEMU_FUZZ_OUT
# set to a directory (scripts/fuzz.sh), the artifacts and the grown corpus
# are also kept there (artifacts/, corpus/).
# usage: run_fuzzer.sh FUZZER CORPUS_DIR [SECONDS]
set -uo pipefail
fuzzer=$1 corpus=$2 secs=${3:-60}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/corpus" "$tmp/artifacts"
cp "$corpus"/* "$tmp/corpus/"
# libFuzzer's default error exit code is 77, which meson reads as "skipped".
# Each run explores from a new seed, printed first: a red fuzz test is
# reproduced with ROCEMU_FUZZ_SEED=<that seed> (and the artifact below).
seed=${ROCEMU_FUZZ_SEED:-$(( ($(date +%s) ^ $$) % 2000000000 + 1 ))}
echo "run_fuzzer: $(basename "$fuzzer") seed $seed (ROCEMU_FUZZ_SEED=$seed reproduces)"
# A target's token dictionary, where it has one (tests/fuzz/TARGET.dict:
# control_fuzzer's JSON syntax, keys and commands, which mutation of bytes
# alone reaches only rarely; docs/fuzzing.md).
dict=()
dict_file="$(dirname "$0")/$(basename "$fuzzer").dict"
[[ -f $dict_file ]] && dict=(-dict="$dict_file")
# TMPDIR: whatever the target puts there (ring_fuzzer's socket) goes with
# $tmp, however libFuzzer ends.
TMPDIR="$tmp" "$fuzzer" -seed="$seed" -max_total_time="$secs" -timeout=5 \
  -rss_limit_mb=2048 "${dict[@]}" \
  -error_exitcode=1 -timeout_exitcode=1 \
  -max_len=9100 -print_final_stats=1 -artifact_prefix="$tmp/artifacts/" \
  "$tmp/corpus"
rc=$?
if [[ -n ${ROCEMU_FUZZ_OUT:-} ]]; then
  mkdir -p "$ROCEMU_FUZZ_OUT"
  cp -r "$tmp/corpus" "$tmp/artifacts" "$ROCEMU_FUZZ_OUT/"
fi
for f in "$tmp"/artifacts/*; do
  [[ -e $f ]] || continue
  echo "run_fuzzer: artifact $(basename "$f"):"
  od -A d -t x1 "$f" | head -40
done
exit $rc
