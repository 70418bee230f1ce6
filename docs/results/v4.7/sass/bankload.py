import sys, collections; sys.path.insert(0,'.')
from analyze import parse, op_of, ffma_ops, ctrl
for p in sys.argv[1:]:
    ins=parse(p); ents=[dict() for _ in range(3)]; load=collections.Counter(); serial=0; n=0; out=[]
    for a,t,lo,hi in ins:
        o=op_of(t)
        if o!='FFMA':
            out.append('%05x %-48s' % (a,t)); continue
        n+=1; d,regs,reuse=ffma_ops(t); rf=[]
        for k in range(3):
            r=regs[k]
            if r is None: continue
            if ents[k].get(r%2)!=r: rf.append(r)
            if reuse[k]: ents[k][r%2]=r
            else: ents[k].pop(r%2,None)
        b=collections.Counter(r%2 for r in rf); load.update(b)
        serial+=max(1,max(b.values()) if b else 0)
        c=ctrl(hi)
        out.append('%05x %-48s rf=%-14s banks=%-8s S%02d %s wait=%02x' % (a,t,','.join('R%d'%r for r in rf),''.join(str(r%2) for r in rf),c['stall'],'Y' if c['yld'] else '-',c['wait']))
    open(p.replace('.sass','.annot.txt'),'w').write('\n'.join(out)+'\n')
    print(p,'FFMA',n,'instrs',len(ins),'bank0 reads',load[0],'bank1 reads',load[1],'per FFMA %.2f/%.2f'%(load[0]/n,load[1]/n),'sum max-bank-reads (serial, FFMA only)',serial, 'ratio %.3f'%(serial/n))
    # LDS clustering
    s=''.join('F' if op_of(t)=='FFMA' else ('L' if op_of(t).startswith('LDS') else 'o') for _,t,_,_ in ins)
    import re
    print('  LDS groups (consecutive LDS with <=2 instrs between):', len(re.findall(r'L(?:[o]{0,2}L)*', s)), ' max FFMA run', max(map(len, re.findall('F+', s))))
