"""Sliced k (k groups) against the stored m = 256 winners (session 39).

usage: summary.py REPORT.csv TIME.txt[.gz]...

REPORT.csv is `nmtune report --format csv` of the database whose winners the lists took
(tuning-db/h200.sqlite at 8573a32); each TIME file is the `time` step's output of
`nmtune bench`, one block per problem: the stored winner first, then its k-group twins.
Per sparsity and layout: geometric means of the speed-up over cuBLAS (each line's own cuBLAS
time, same process) as stored, as re-timed, and with the best twin where it is faster.
"""
import collections, csv, math, os, sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '../../../scripts'))
from time_blocks import blocks  # noqa: E402

def geo(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))

stored = {}
for r in csv.DictReader(open(sys.argv[1])):
    if r['m'] == '256' and r['l'] == '32':
        stored[(r['n'], r['k'], r['nm'], r['a_layout'])] = float(r['cublas_us']) / float(r['median_us'])

timed = blocks(sys.argv[2:])
winner = {(k[1], k[2], k[3], k[4]): w for k, (w, _) in timed.items() if k[0] == '256'}
twin = {(k[1], k[2], k[3], k[4]): t for k, (_, t) in timed.items() if k[0] == '256'}

cells = collections.defaultdict(list)
for key, s in stored.items():
    if key in winner:
        cells[(key[2], key[3])].append((s, winner[key], max(s, twin.get(key, 0.0)), twin.get(key, 0.0) > 1.01 * s))
print(f"{'cell':12s} {'n':>3s} {'stored':>7s} {'re-timed':>8s} {'best of both':>12s}  twin > 1.01x stored")
for (nm, layout), v in sorted(cells.items()):
    retimed = [w for _, w, _, _ in v if w]
    print(f"{nm + ' ' + layout:12s} {len(v):3d} {geo([s for s, _, _, _ in v]):7.3f} {geo(retimed):8.3f} "
          f"{geo([b for _, _, b, _ in v]):12.3f}  {sum(1 for *_, t in v if t)}")
