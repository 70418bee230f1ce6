"""Reads the output of `scripts/device/session.sh time`: one `nmtune bench` block per problem
whose first kernel is the one stored for it and whose others are alternatives to it.

blocks(paths) -> {problem: (first, best_other)}, speed-ups over the cuBLAS time of the same
line (None where the first kernel has no time; best_other 0.0 where no alternative ran).
A problem is (m, n, k, "N:M", "col" | "row") as strings, as `nmtune report --format csv`
spells them.
"""
import gzip


def problem_of(field):
    """`m256_n2048_k2048_8:32_l32[_acol]` -> ("256", "2048", "2048", "8:32", "col" | "row")."""
    parts = field.split('_')
    layout = 'col' if parts[-1] == 'acol' else 'row'
    return (parts[0][1:], parts[1][1:], parts[2][1:], parts[3], layout)


def blocks(paths):
    first, best = {}, {}
    for path in paths:
        lines = gzip.open(path, 'rt') if path.endswith('.gz') else open(path)
        for line in lines:
            f = line.split()
            if not f or not f[0].startswith('m') or f[0] == 'problem':
                continue
            key = problem_of(f[0])
            if f[3] == '-':
                first.setdefault(key, None)
                continue
            speedup = float(f[6]) / float(f[3])
            if key not in first:
                first[key] = speedup
            else:
                best[key] = max(best.get(key, 0.0), speedup)
    return {key: (s, best.get(key, 0.0)) for key, s in first.items()}
