#!/usr/bin/env python3
"""Does occupancy explain a row's speed? For every problem of one (m, N, A layout) in a tuning
database: the winner's warps per scheduler (from ptxas's register count stored with each
row, 4 schedulers, 64 K registers and 32 warps per SM) and the fastest verified configuration
that runs at least 3 warps per scheduler, with its time over the winner's.

    python3 scripts/occupancy_check.py tuning-db/h100.sqlite 4096 4 col    (m, N of N:32, layout)
"""
import json
import math
import sqlite3
import sys

db, m, nm, lay = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
c=sqlite3.connect(db)
q="""select p.n,p.k,m.kernel_name,m.median_us,m.registers,m.config_json,m.status
 from measurements m join problems p on p.id=m.problem_id where p.m=? and p.nm_n=? and p.a_layout=? and m.status='ok'"""
rows=c.execute(q,(m,nm,lay)).fetchall()
def wps(cfg, regs):
    threads=cfg['m_s']*cfg['n_s']//(cfg['m_t']*cfg['n_t'])
    warps=threads//32
    rpw=((regs*32+255)//256)*256
    return warps*min(65536//(rpw*warps), 32//warps)/4
by={}
for r in rows: by.setdefault((r[0],r[1]),[]).append(r)
rat=[]
for key in sorted(by):
    rs=sorted(by[key], key=lambda r:r[3]); b=rs[0]
    cfg=json.loads(b[5]); w=wps(cfg,b[4] or 255)
    hi=[r for r in rs if r[4] and wps(json.loads(r[5]),r[4])>=3]
    h=hi[0] if hi else None
    if h: rat.append(h[3]/b[3])
    print(key, b[2][12:70], round(b[3],1), b[4], w, '| >=3:', (h[2][12:70], round(h[3],1), h[4], wps(json.loads(h[5]),h[4]), round(h[3]/b[3],3)) if h else None, len(hi),'/',len(rs))
print("geomean best(>=3 warps/sched)/best", math.exp(sum(map(math.log,rat))/len(rat)))
