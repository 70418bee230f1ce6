#!/usr/bin/env bash
# Every committed tuning database with a measurements file beside it must be reproducible from
# that file: the file is the database's exact export, and replaying it into a scratch database
# chooses the same best kernel and median for every problem. Fails (non-zero) on the first
# database that does not. NMTUNE may name an nmtune binary already built (CI passes the one
# the tests built); otherwise it is built with cargo.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${NMTUNE:-}" ]; then
    nmtune=("$NMTUNE")
else
    nmtune=(cargo run --release --quiet --)
fi
checked=0
for db in tuning-db/*.sqlite; do
    file="${db%.sqlite}.measurements.jsonl"
    [ -e "$file" ] || continue
    if ! "${nmtune[@]}" check-replay --db "$db" --measurements "$file"; then
        # nmtune's line says what to do: export after a re-tune on a GPU, or restore a
        # database that a run without a GPU wrote predictions into.
        echo "check-replay: $db is not reproduced by $file (see above)" >&2
        exit 1
    fi
    checked=$((checked + 1))
done
echo "check-replay: $checked database(s) reproduced from their measurements"
