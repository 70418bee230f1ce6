#!/usr/bin/env python3
"""Drop a tuning database's rows that a later tuning of the same problem superseded.

Usage: python3 scripts/drop_superseded_rows.py DB [DB ...]

Resuming a tuning after a template change re-tunes the problems whose rows carry another
template checksum and keeps the old rows beside the new ones (inert: lookup and report prefer
the current templates), so the file and its export grow by a whole copy per template change.
This keeps, per (GPU, problem), only the measured rows of the template checksum of its latest
completed run, which is what tuning into an empty file would have written, then VACUUMs.
Rows of other sources (model, replay) are left alone. Refuses, changing nothing, when a
problem has measured rows of a checksum whose run never completed (a tuning stopped midway:
finish it first). Afterwards: `nmtune export` and `nmtune report` again, then check-replay.
"""
import sqlite3
import sys


def latest_runs(db):
    latest = {}
    for gpu, problem, checksum, done in db.execute(
        "select gpu_id, problem_id, template_checksum, completed_at from problem_runs "
        "where source = 'measured'"
    ):
        if (gpu, problem) not in latest or done > latest[(gpu, problem)][1]:
            latest[(gpu, problem)] = (checksum, done)
    return {key: checksum for key, (checksum, _) in latest.items()}


def unfinished(db):
    return db.execute(
        "select distinct m.gpu_id, m.problem_id, m.template_checksum from measurements m "
        "where m.source = 'measured' and not exists (select 1 from problem_runs r "
        "where r.gpu_id = m.gpu_id and r.problem_id = m.problem_id "
        "and r.template_checksum = m.template_checksum and r.source = 'measured')"
    ).fetchall()


def compact(path):
    db = sqlite3.connect(path)
    db.execute("pragma foreign_keys = on")
    stopped = unfinished(db)
    if stopped:
        gpu, problem, checksum = stopped[0]
        sys.exit(f"{path}: {len(stopped)} problem(s) have rows of a run that never completed "
                 f"(first: gpu {gpu}, problem {problem}, checksum {checksum[:12]}); "
                 "finish the tuning, then run this again")
    db.execute("create temp table keep (gpu_id, problem_id, template_checksum)")
    db.executemany("insert into keep values (?, ?, ?)",
                   [(g, p, c) for (g, p), c in latest_runs(db).items()])
    before = db.execute("select count(*) from measurements").fetchone()[0]
    for table in ("measurements", "problem_runs"):
        db.execute(
            f"delete from {table} where source = 'measured' and not exists (select 1 from keep k "
            f"where k.gpu_id = {table}.gpu_id and k.problem_id = {table}.problem_id "
            f"and k.template_checksum = {table}.template_checksum)"
        )
    db.commit()
    after = db.execute("select count(*) from measurements").fetchone()[0]
    orphans = db.execute(
        "select count(*) from problem_runs r where not exists (select 1 from best b "
        "where b.gpu_id = r.gpu_id and b.problem_id = r.problem_id)"
    ).fetchone()[0]
    db.execute("vacuum")
    db.close()
    print(f"{path}: {before} -> {after} measurements; problems without a best entry: {orphans}")
    return orphans == 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.exit(0 if all([compact(p) for p in sys.argv[1:]]) else 1)
