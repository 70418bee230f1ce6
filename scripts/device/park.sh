#!/usr/bin/env bash
# The device tool carries at most 64 MiB of working tree, and the committed databases and
# their measurements files weigh more. Before a call, move the large tracked files the call
# does not need out of the tree; after it, put them back:
#   bash scripts/device/park.sh KEEP...     park every tracked file over 1 MB but KEEP
#   bash scripts/device/park.sh --restore   put them back
# Only files without uncommitted changes are parked (so `git checkout -- FILE` restores any
# that a lost /tmp would take); a modified large file not named in KEEP stops the script.
set -euo pipefail
cd "$(dirname "$0")/../.."
store=${PARK_DIR:-/tmp/nmtune-parked}
if [ "${1:-}" = --restore ]; then
  [ -d "$store" ] || { echo "park: nothing parked in $store"; exit 0; }
  (cd "$store" && find . -type f) | while read -r f; do
    mkdir -p "$(dirname "$f")"; mv "$store/$f" "$f"
  done
  echo "park: restored; git status:"; git status --short
  exit 0
fi
keep=" $* "
git ls-files -z | xargs -0 du -b 2>/dev/null | awk '$1 > 1000000 {print $2}' | while read -r f; do
  [[ $keep == *" $f "* ]] && continue
  if ! git diff --quiet HEAD -- "$f"; then
    echo "park: $f has uncommitted changes: commit it or name it to keep" >&2; exit 1
  fi
  mkdir -p "$store/$(dirname "$f")"; mv "$f" "$store/$f"
done
echo "park: tracked files left in the tree: $(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1) bytes"
