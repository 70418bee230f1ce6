#!/usr/bin/env bash
# What this session's commits weigh against the submission limits (256 MiB of diffs, added up
# as text over every commit; 512 MiB packed). A submission over either is refused whole, so a
# session that re-tunes databases checks this before it commits another copy of them.
#   bash scripts/submission-size.sh BASE     BASE: the commit main stood at when the session began
# Counts conservatively: a text file's diff as `git show` prints it, a binary file (the SQLite
# databases) as its old plus its new size, a file added and later removed twice.
set -euo pipefail
base=${1:?usage: submission-size.sh BASE (the commit main stood at when the session began)}
git rev-parse --verify -q "$base^{commit}" >/dev/null || { echo "submission-size: no commit '$base'" >&2; exit 1; }
blob_size() { git cat-file -s "$1" 2>/dev/null || echo 0; }
total=0
for c in $(git rev-list --reverse "$base..HEAD"); do
  bytes=0
  # Binary files: old and new blob sizes (git diff-tree's raw lines give both blob ids).
  while read -r _ _ old new _ path; do
    if git diff-tree --numstat -r "$c^" "$c" -- "$path" | grep -q $'^-\t-\t'; then
      bytes=$((bytes + $(blob_size "$old") + $(blob_size "$new")))
    fi
  done < <(git diff-tree -r --no-commit-id "$c^" "$c" | tr '\t' ' ')
  text=$(git show --format= --no-color --no-ext-diff "$c" | wc -c)
  bytes=$((bytes + text))
  total=$((total + bytes))
  printf '%8.1f MiB  %s\n' "$(awk -v b="$bytes" 'BEGIN{print b/1048576}')" "$(git log -1 --format='%h %s' "$c" | cut -c1-80)"
done
packed=$(git pack-objects --stdout -q --revs <<<"$(printf '%s\n^%s\n' HEAD "$base")" | wc -c)
printf 'diffs: %.1f MiB of 256 MiB; packed: %.1f MiB of 512 MiB\n' \
  "$(awk -v b="$total" 'BEGIN{print b/1048576}')" "$(awk -v b="$packed" 'BEGIN{print b/1048576}')"
if [ "$total" -gt $((200 * 1048576)) ]; then
  echo "submission-size: over 200 MiB of diffs: commit no further database copies this session" >&2
  exit 2
fi
