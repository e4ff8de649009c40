#!/usr/bin/env bash
# Every C and C++ source tracked by git must be formatted with the repo's .clang-format.
# Prints the files that are not, and how to fix them.
set -euo pipefail
cd "$1"
command -v clang-format >/dev/null || { echo "clang-format not installed"; exit 77; }
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || { echo "not a git checkout"; exit 77; }
bad=()
while IFS= read -r f; do
  [ -f "$f" ] || continue
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done < <(git ls-files '*.c' '*.h' '*.cpp' '*.hpp' | grep -v '^include/dat2/')
if [ ${#bad[@]} -gt 0 ]; then
  echo "not formatted (run: clang-format -i <file>):"
  printf '  %s\n' "${bad[@]}"
  exit 1
fi
echo "all $(git ls-files '*.c' '*.h' '*.cpp' '*.hpp' | grep -vc '^include/dat2/') sources formatted"
