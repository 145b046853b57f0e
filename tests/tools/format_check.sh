#!/usr/bin/env bash
# Every C++ source and header is as clang-format (the repository's
# .clang-format, Google style) writes it; prints the first differences.
# Usage: format_check.sh SOURCE_ROOT
set -uo pipefail
cd "$1" || exit 1
command -v clang-format >/dev/null || {
  echo "format_check: clang-format is not installed (scripts/packages.txt)" >&2
  exit 1
}
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cc' '*.h')
else
  mapfile -t files < <(find . -path ./build\* -prune -o \( -name '*.cc' -o -name '*.h' \) -print)
fi
((${#files[@]} > 100)) || { echo "format_check: found only ${#files[@]} sources" >&2; exit 1; }
out=$(clang-format --dry-run -Werror "${files[@]}" 2>&1)
if [[ -n $out ]]; then
  echo "$out" | head -40
  echo "format_check: $(echo "$out" | grep -c 'error:') place(s) differ; run clang-format -i on the files named" >&2
  exit 1
fi
echo "format_check: ${#files[@]} files as clang-format writes them"
