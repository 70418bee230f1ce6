import re, sys, collections
INS = re.compile(r'^\s*/\*([0-9a-f]+)\*/\s+(.*?)\s*;\s*/\*\s*(0x[0-9a-f]+)\s*\*/')
HI = re.compile(r'^\s*/\*\s*(0x[0-9a-f]+)\s*\*/\s*$')
def parse(path):
    lines = open(path).read().splitlines()
    out = []; i = 0
    while i < len(lines):
        m = INS.match(lines[i])
        if m:
            hm = HI.match(lines[i+1]); assert hm, lines[i+1]
            out.append((int(m.group(1),16), m.group(2), int(m.group(3),16), int(hm.group(1),16))); i += 2
        else: i += 1
    return out
def ctrl(hi):
    c = hi >> 41
    return dict(stall=c & 15, yld=(c>>4)&1, wb=(c>>5)&7, rb=(c>>8)&7, wait=(c>>11)&0x3f, reuse=(c>>17)&0xf)
def op_of(txt):
    t = re.sub(r'^@!?U?P[T0-9]\s+', '', txt)
    return t.split()[0]
def ffma_ops(txt):
    t = re.sub(r'^@!?U?P[T0-9]\s+', '', txt)
    parts = [p.strip() for p in t.split(None,1)[1].split(',')]
    d = parts[0]; srcs = parts[1:4]
    regs = []; reuse = []
    for s in srcs:
        r = s.replace('.reuse','').lstrip('-|')
        m = re.match(r'R(\d+|Z)$', r)
        regs.append(None if (not m or m.group(1)=='Z') else int(m.group(1)))
        reuse.append('.reuse' in s)
    return d, regs, reuse
def analyze(path, name):
    ins = parse(path)
    ops = [op_of(t) for _,t,_,_ in ins]
    cnt = collections.Counter(ops)
    ff = [(a,t,lo,hi) for (a,t,lo,hi),o in zip(ins,ops) if o=='FFMA']
    R = {}
    R['instructions in loop body'] = len(ins)
    R['FFMA'] = len(ff); R['FFMA %'] = round(100*len(ff)/len(ins),1)
    R['LDS (all widths)'] = sum(v for k,v in cnt.items() if k.startswith('LDS'))
    # reuse flags
    nre = collections.Counter(); slot = [0,0,0]
    prev_cache = [None,None,None]
    rfreads = collections.Counter(); c2 = c2all = c4 = c4all = raw2 = raw4 = 0
    share1 = share2 = 0; prevregs = None; dest_ne_c = 0
    stall = collections.Counter(); yld = collections.Counter(); waitn = 0; ctrl_reuse_mismatch = 0
    for a,t,lo,hi in ff:
        d, regs, reuse = ffma_ops(t)
        cc = ctrl(hi)
        if cc['reuse'] != sum(1<<k for k in range(3) if reuse[k]): ctrl_reuse_mismatch += 1
        stall[cc['stall']] += 1; yld[cc['yld']] += 1
        if cc['wait']: waitn += 1
        nre[sum(reuse)] += 1
        for k in range(3): slot[k] += reuse[k]
        if d != ('R%d'%regs[2] if regs[2] is not None else None): dest_ne_c += 1
        # operands read from RF: not supplied by reuse cache set by previous FFMA in same slot
        rf = [regs[k] for k in range(3) if regs[k] is not None and not (prev_cache[k] == regs[k])]
        prev_cache = [regs[k] if reuse[k] else None for k in range(3)]
        rfreads[len(rf)] += 1
        allr = [r for r in regs if r is not None]
        def coll(lst, nb):
            b = collections.Counter(r % nb for r in set(lst))
            return max(b.values()) if b else 0
        m2 = coll(rf,2); m4 = coll(rf,4)
        c2 += m2 >= 2; c2all += m2 >= 3; c4 += m4 >= 2; c4all += m4 >= 3
        raw2 += coll(allr,2) >= 2; raw4 += coll(allr,4) >= 2
        if prevregs is not None:
            sh = len(set(r for r in regs[:2] if r is not None) & set(r for r in prevregs[:2] if r is not None))
            share1 += sh >= 1; share2 += sh >= 2
        prevregs = regs
    R['FFMA with 0/1/2/3 .reuse flags'] = '/'.join(str(nre[k]) for k in range(4))
    R['.reuse per slot (a,b,c)'] = '/'.join(map(str,slot))
    R['ctrl-word reuse bits disagree with text'] = ctrl_reuse_mismatch
    R['RF source reads per FFMA (0/1/2/3 regs)'] = '/'.join(str(rfreads[k]) for k in range(4))
    R['mean RF reads per FFMA'] = round(sum(k*v for k,v in rfreads.items())/len(ff),3)
    R['2-bank: FFMA with >=2 RF reads same bank'] = c2
    R['2-bank: FFMA with 3 RF reads same bank'] = c2all
    R['4-bank: FFMA with >=2 RF reads same bank'] = c4
    R['4-bank: FFMA with 3 RF reads same bank'] = c4all
    R['(ignoring reuse) 2-bank >=2 same'] = raw2
    R['(ignoring reuse) 4-bank >=2 same'] = raw4
    R['consecutive FFMA sharing >=1 a/b source'] = share1
    R['consecutive FFMA sharing both a,b'] = share2
    R['FFMA with dest != accumulator src'] = dest_ne_c
    R['FFMA stall counts'] = dict(sorted(stall.items()))
    R['FFMA yield bit (raw) 0/1'] = '%d/%d' % (yld[0], yld[1])
    R['FFMA waiting on a scoreboard'] = waitn
    # LDS interleave
    runs = []; r = 0; gaps = []; g = 0
    for o in ops:
        if o.startswith('LDS'):
            runs.append(r); r = 0
        elif o == 'FFMA': r += 1
        if o == 'FFMA': 
            if g: gaps.append(g)
            g = 0
        else: g += 1
    runs.append(r)
    R['FFMAs between consecutive LDS: min/median/max'] = '%d/%d/%d' % (min(runs[1:-1]), sorted(runs[1:-1])[len(runs[1:-1])//2], max(runs[1:-1]))
    R['longest FFMA run without any other instr'] = max(len(x) for x in ''.join('F' if o=='FFMA' else '.' for o in ops).split('.'))
    R['non-FFMA instrs'] = dict(sorted(((k,v) for k,v in cnt.items() if k!='FFMA'), key=lambda kv:-kv[1]))
    allst = collections.Counter(ctrl(hi)['stall'] for _,_,_,hi in ins)
    R['sum of stall counts over body (static cycles)'] = sum(ctrl(hi)['stall'] for _,_,_,hi in ins)
    return R
if __name__ == '__main__':
    res = [analyze(p, p) for p in sys.argv[1:]]
    for k in res[0]:
        print('%-48s' % k, ' | '.join(str(r[k]) for r in res))
