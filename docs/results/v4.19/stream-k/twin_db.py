"""Copy a tuning database with every stored tiled winner that does not split k replaced by
its stream-K twin (same configuration, `stream_k` on), so that `nmtune bench --db` times the
twins exactly as it times the stored winners. Session 27, issue 11.
usage: python3 twin_db.py IN.sqlite OUT.sqlite"""
import json
import shutil
import sqlite3
import sys

src, dst = sys.argv[1:3]
shutil.copyfile(src, dst)
db = sqlite3.connect(dst)
rows = db.execute(
    "select ms.id, ms.kernel_name, ms.config_json from best b"
    " join measurements ms on ms.id = b.measurement_id"
    " join problems p on p.id = b.problem_id where p.m > 16"
).fetchall()
twins = 0
for mid, name, cfg_json in rows:
    cfg = json.loads(cfg_json)
    if cfg.get("split_k", 1) != 1 or "decode" in cfg.get("a_copy", "") or cfg.get("l") == 1:
        continue
    cfg["stream_k"] = True
    db.execute(
        "update measurements set kernel_name = ?, config_json = ? where id = ?",
        (name + "_streamk", json.dumps(cfg, separators=(",", ":")), mid),
    )
    twins += 1
db.commit()
print(f"{twins} of {len(rows)} stored winners replaced by their stream-K twins")
