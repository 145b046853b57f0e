#!/usr/bin/env bash
# fuzz_curves.sh - plots the coverage curves scripts/fuzz.sh leaves in its
# output directories (<target>.curve: seconds executions edges features
# corpus): one panel per target, edges against minutes, executions on the
# second axis, into one PNG (gnuplot), and prints a table of each curve
# sampled at a few times (the table docs/fuzzing.md quotes).
#
#   scripts/fuzz_curves.sh OUT.png FUZZ_OUTPUT_DIR...
set -eu
[[ $# -ge 2 ]] || { echo "usage: $0 OUT.png FUZZ_OUTPUT_DIR..." >&2; exit 2; }
png=$1
shift
curves=()
for d in "$@"; do
  for f in "$d"/*.curve; do
    [[ -s $f ]] && curves+=("$f")
  done
done
[[ ${#curves[@]} -gt 0 ]] || { echo "fuzz_curves: no *.curve in $*" >&2; exit 1; }

# The table: edges (and executions) at each sample time a curve reaches.
printf '%-18s' target
samples=(0 1 2 5 10 15 20 30 45 60)
for m in "${samples[@]}"; do printf '%10s' "${m}min"; done
printf '\n'
for f in "${curves[@]}"; do
  printf '%-18s' "$(basename "$f" .curve)"
  for m in "${samples[@]}"; do
    # 0 min is the seed corpus (libFuzzer's INITED line, the first row).
    awk -v s=$((m * 60)) 'NR == 2 || (NR > 1 && $1 <= s + 0.5) { e = $3 }
      NR > 1 { last = $1 }
      END { if (last + 0.5 < s) printf "%10s", "-"; else printf "%10s", e }' "$f"
  done
  printf '\n'
done

command -v gnuplot >/dev/null || { echo "gnuplot not installed: table only" >&2; exit 0; }
n=${#curves[@]}
cols=2
rows=$(( (n + cols - 1) / cols ))
{
  echo "set terminal pngcairo size 1000,$((rows * 260))"
  echo "set output '$png'"
  echo "set multiplot layout $rows,$cols title 'libFuzzer coverage (edges) against time, build-san (ASan+UBSan)'"
  echo "set xlabel 'minutes'"
  echo "set ylabel 'edges'"
  echo "set y2label 'executions'"
  echo "set ytics nomirror"
  echo "set y2tics"
  echo "set format y2 '%.0s%c'"
  echo "set key right bottom"
  echo "set termoption noenhanced"
  for f in "${curves[@]}"; do
    echo "set title '$(basename "$f" .curve)'"
    echo "plot '$f' every ::1 using (\$1/60):3 with steps lw 2 title 'edges', \
'$f' every ::1 using (\$1/60):2 axes x1y2 with lines dt 2 title 'executions'"
  done
  echo "unset multiplot"
} | gnuplot
echo "fuzz_curves: $png"
