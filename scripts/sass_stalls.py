#!/usr/bin/env python3
"""Warp-stall samples per SASS opcode of an ncu source-page CSV (scripts/device/ncu-source.sh),
and the FFMA dispatch stalls by how many non-reuse source registers share a register bank
(2- and 4-bank models).  usage: sass_stalls.py FILE.csv.gz"""
import csv, sys, gzip, re, collections
path = sys.argv[1]
rows = list(csv.reader(gzip.open(path, 'rt')))
for i, row in enumerate(rows):
    if len(row) > 3 and row[0] == 'Address':
        hdr, data = row, rows[i + 1:]
        break
ix = {h: i for i, h in enumerate(hdr)}
num = lambda r, c: float(r[ix[c]].replace(',', '') or 0)
kinds = ['stall_dispatch', 'stall_short_sb', 'stall_long_sb', 'stall_barrier', 'stall_wait', 'stall_math', 'stall_mio', 'stall_selected', 'stall_not_selected', 'stall_no_inst', 'stall_branch_resolving']
tot = collections.Counter()
by_op = collections.defaultdict(collections.Counter)
ffma = collections.defaultdict(lambda: collections.Counter())
for r in data:
    src = r[ix['Source']].strip()
    op = src.split()[0] if src else '?'
    if op.startswith('@'):
        op = src.split()[1]
    base = op.split('.')[0]
    for k in kinds:
        v = num(r, k)
        tot[k] += v
        by_op[base][k] += v
    by_op[base]['n'] += 1
    by_op[base]['exec'] += num(r, 'Instructions Executed')
    if base == 'FFMA':
        regs = re.findall(r'(R\d+)(\.reuse)?', src)
        srcs = regs[1:]  # dest first
        plain = [int(x[0][1:]) for x in srcs if not x[1]]
        for bank_mod in (2, 4):
            banks = collections.Counter(p % bank_mod for p in plain)
            conflict = max(banks.values()) if banks else 0
            ffma[(bank_mod, conflict)]['n'] += 1
            ffma[(bank_mod, conflict)]['dispatch'] += num(r, 'stall_dispatch')
            ffma[(bank_mod, conflict)]['samples'] += num(r, '# Samples')
print(path)
print('totals:', {k: int(v) for k, v in tot.items()})
print('by opcode (dispatch, short_sb, selected, n static, executed):')
for op, c in sorted(by_op.items(), key=lambda kv: -kv[1]['stall_dispatch'])[:8]:
    print(f"  {op:8s} dispatch {int(c['stall_dispatch']):7d} short_sb {int(c['stall_short_sb']):7d} selected {int(c['stall_selected']):7d} n {int(c['n']):5d} exec {c['exec']:.3g}")
print('FFMA by bank model and max same-bank non-reuse sources: n, dispatch per instr, samples per instr')
for key in sorted(ffma):
    c = ffma[key]
    print(f"  mod {key[0]} max-same {key[1]}: n {int(c['n']):5d} dispatch/instr {c['dispatch']/max(c['n'],1):8.1f} samples/instr {c['samples']/max(c['n'],1):8.1f}")
