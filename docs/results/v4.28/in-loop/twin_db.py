"""Copy a tuning database with every stored best entry above decode size that transposes A
first (`atrans`, stream-K or not) replaced by its `atransloop` twin (same configuration, the
pass moved into the main loop; a stream-K winner's twin is the plain schedule, which
`atransloop` needs), so that `nmtune bench --db` times the twins exactly as it times the
stored winners. Session 36, issue 11. With `transposedingrid atransgrid` after the paths, the
twins are `atransgrid` ones, for winners that do not split k (that path has one k-slice).
usage: python3 twin_db.py IN.sqlite OUT.sqlite [A_COPY TOKEN]"""
import json
import shutil
import sqlite3
import sys

src, dst = sys.argv[1:3]
a_copy, token = sys.argv[3:5] if len(sys.argv) > 3 else ("transposedinloop", "atransloop")
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
    if cfg.get("a_copy") != "transposed":
        continue
    if a_copy == "transposedingrid" and cfg.get("split_k", 1) != 1:
        continue
    cfg["a_copy"] = a_copy
    cfg.pop("stream_k", None)
    twin = name.replace("_atrans_", f"_{token}_").removesuffix("_streamk")
    db.execute(
        "update measurements set kernel_name = ?, config_json = ? where id = ?",
        (twin, json.dumps(cfg, separators=(",", ":")), mid),
    )
    twins += 1
db.commit()
print(f"{twins} of {len(rows)} stored winners replaced by their {token} twins")
