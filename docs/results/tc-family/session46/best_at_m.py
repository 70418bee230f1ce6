#!/usr/bin/env python3
"""A copy of a tuning database with only the best entries of the problems at one m:
    python3 best_at_m.py SRC.sqlite DST.sqlite M
(the device tool carries at most 64 MiB; `nmtune bench --db DST --m M` re-times them)."""
import shutil, sqlite3, sys
src, dst, m = sys.argv[1], sys.argv[2], int(sys.argv[3])
shutil.copy(src, dst)
c = sqlite3.connect(dst)
keep = "(SELECT measurement_id FROM best JOIN problems p ON p.id = best.problem_id WHERE p.m = ?)"
c.execute(f"DELETE FROM measurements WHERE id NOT IN {keep}", (m,))
c.execute("DELETE FROM best WHERE problem_id IN (SELECT id FROM problems WHERE m != ?)", (m,))
c.execute("DELETE FROM problem_runs WHERE problem_id IN (SELECT id FROM problems WHERE m != ?)", (m,))
c.execute("DELETE FROM problems WHERE m != ?", (m,))
c.commit()
c.execute("VACUUM")
print(dst, c.execute("select count(*) from problems").fetchone(), c.execute("select count(*) from measurements").fetchone(), c.execute("select count(*) from best").fetchone())
