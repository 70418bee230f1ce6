#!/usr/bin/env python3
"""How a warm re-tune would have done on a past template change: for each problem, the new
generation's winner against the best of the old generation's top-N configurations, timed in
the new generation (both pruned tunings of the same problems).
usage: warmcheck.py OLD.jsonl NEW.jsonl"""
import json, collections, math, sys
def load(p):
    rows = collections.defaultdict(dict)
    for l in open(p):
        r = json.loads(l)
        if r['source'] != 'measured' or not r['verified'] or r['status'] not in ('ok', 'abandoned'):
            continue
        if not isinstance(r['median_us'], (int, float)):
            continue
        key = (r['m'], r['n'], r['k'], r['nm'], r['l'], r['a_layout'])
        t = r['median_us']
        rows[key][r['kernel']] = min(t, rows[key].get(r['kernel'], t))
    return rows
old, new = load(sys.argv[1]), load(sys.argv[2])
for top_n in (8,):
    hit = n = unknown = 0
    losses = []
    for key, timed_now in new.items():
        if key not in old:
            continue
        winner = min(timed_now, key=timed_now.get)
        top = sorted(old[key], key=old[key].get)[:top_n]
        n += 1
        if winner in top:
            hit += 1
            losses.append(1.0)
            continue
        again = [timed_now[k] for k in top if k in timed_now]
        if again:
            losses.append(min(again) / timed_now[winner])
        else:
            unknown += 1
    g = math.exp(sum(map(math.log, losses)) / len(losses))
    print(f"top {top_n}: {n} problems; the new winner among the old top {top_n}: {hit} ({hit / n:.1%}); "
          f"best of the old top timed anew / new winner: geomean {g:.4f}, "
          f"> 1 % slower on {sum(x > 1.01 for x in losses)}, worst {max(losses):.3f}; not timed anew: {unknown}")
