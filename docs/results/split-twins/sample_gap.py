"""Per problem of a `--strategy sample --retune` run: the stored winner before it and the fastest
configuration the run timed that was not timed before, from the database after the run.
usage: sample_gap.py BEFORE.sqlite AFTER.sqlite M NM_N LAYOUT"""
import sqlite3, sys, math
before, after, m, nm_n, layout = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
Q = """select p.n, p.k, ms.kernel_name, ms.median_us from measurements ms join problems p on p.id = ms.problem_id
       where p.m = ? and p.nm_n = ? and p.l = 32 and p.a_layout = ? and ms.status in ('ok', 'abandoned')
       and ms.verified = 1 and ms.source = 'measured' and ms.median_us is not null"""
def rows(db):
    out = {}
    for n, k, name, us in sqlite3.connect(db).execute(Q, (m, nm_n, layout)):
        out.setdefault((n, k), {})[name] = us
    return out
old, new = rows(before), rows(after)
ratios = []
for key in sorted(new):
    won = min(old[key].values())
    fresh = {name: us for name, us in new[key].items() if name not in old[key]}
    name, us = min(fresh.items(), key=lambda kv: kv[1])
    ratios.append(us / won)
    print(f"n={key[0]:6} k={key[1]:6} winner {won:8.1f} us  new {len(fresh):4}, fastest {us:8.1f} us ({us / won:.3f})  {name}")
print(f"{sum(len({n for n in new[k] if n not in old[k]}) for k in new)} new timings; fastest new / winner: "
      f"geomean {math.exp(sum(map(math.log, ratios)) / len(ratios)):.3f}, min {min(ratios):.3f}")
