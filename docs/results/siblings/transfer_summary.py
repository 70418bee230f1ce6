"""The winners of a report cell timed on every layer of the cell (session 39).

usage: transfer_summary.py REPORT.csv TIME.txt[.gz]

REPORT.csv: `nmtune report --format csv` of the database the list was made from (the
committed tuning-db/h200.sqlite before the re-tune); TIME: the `time` step's output, one block
per problem, the stored winner first, then the cell's other winners (as they won and with
split-K 1). Per cell: the geometric mean of the speed-ups as stored, as re-timed, and with
the fastest transferred winner where it beats the stored time; and on how many layers it
does by more than 1 %.
"""
import collections, csv, math, os, sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '../../../scripts'))
from time_blocks import blocks  # noqa: E402

def geo(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))

stored = {}
for r in csv.DictReader(open(sys.argv[1])):
    if r['l'] == '32':
        stored[(r['m'], r['n'], r['k'], r['nm'], r['a_layout'])] = float(r['speedup'])
cells = collections.defaultdict(list)
for key, (w, b) in blocks(sys.argv[2:]).items():
    st = stored[key]
    cells[(key[4], int(key[0]), key[3])].append((st, w, max(st, b), b > 1.01 * st))
print(f"{'cell':18s} {'stored':>7s} {'re-timed':>8s} {'with transfer':>13s}  better on")
for (layout, m, nm), v in sorted(cells.items()):
    print(f"{layout} m={m:<5d} {nm:6s} {geo([a for a, *_ in v]):7.3f} {geo([w for _, w, *_ in v if w]):8.3f} "
          f"{geo([c for _, _, c, _ in v]):13.3f}  {sum(1 for *_, t in v if t)} of {len(v)}")
