"""Geometric-mean speed-ups of the m = 256 and 4096 cells of each database given (nmtune report --format csv). usage: cells.py DB..."""
import csv,sys,math,collections,subprocess,io
for db in sys.argv[1:]:
    out=subprocess.run(["./target/release/nmtune","report","--db",db,"--format","csv"],capture_output=True,text=True).stdout
    c=collections.defaultdict(list)
    for r in csv.DictReader(io.StringIO(out)):
        if r["l"]=="32" and r["m"] in ("256","4096"): c[(r["a_layout"],r["m"],r["nm"])].append(float(r["speedup"]))
    print(db)
    for lay in ("col","row"):
        for m in ("4096","256"):
            print(" ",lay,m," / ".join("%.3f"%math.exp(sum(map(math.log,c[(lay,m,nm)]))/len(c[(lay,m,nm)])) for nm in ("16:32","12:32","8:32","4:32")))
