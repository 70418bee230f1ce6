set -u
tar -C .device -xJf .device/bin.tar.xz
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/cuda/lib64
W=$OUT; export OUT=/tmp/o3; mkdir -p $OUT
for v in "V0 0 none none" "V2 1 after l2" "V3 1 start regs" "V4 1 after regs" "V5 1 start none"; do
  set -- $v
  SECONDS=0
  NMTUNE_X_ATTR=$2 NMTUNE_X_TRIGGER=$3 NMTUNE_X_PREFETCH=$4 NMTUNE_CACHE_DIR=/tmp/c-$1 timeout 150 .device/bin/nmtune-x bench --db tuning-db/h200-decode.sqlite --m 1 --runs 10 --csv $OUT/x-$1.csv > /dev/null 2> $OUT/x-$1.err
  echo "$v rc=$? ${SECONDS}s"
done
tar -C $OUT -cJf $W/o3.tar.xz .
