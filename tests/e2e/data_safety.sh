#!/usr/bin/env bash
# Issue 11, end to end, the data: `lockstep shard` never destroys what it did not make,
# a shard whose bytes changed after import is never trained on, and a manifest cannot
# point outside its directory. Each case failed before the fix.
source "$(dirname "$0")/common.sh" "$@"
make_slice data 1024 2

mkdir home && echo "years of work" > home/thesis.tex
expect_rc 2 "$LOCKSTEP" shard --input "idx:$FMNIST" --output home --limit 256
expect_output "home is not empty and holds files that are not a lockstep dataset \(thesis.tex\)"
[ "$(cat home/thesis.tex)" = "years of work" ] || fail "thesis.tex was touched"
printf 'a,b,label\n1,2,0\n3,4,1\n5,6,0\n7,8,1\n' > d.csv
before=$(md5sum data/*.h5 data/manifest.json | md5sum)  # the dataset (its lock file records who held it)
expect_rc 2 "$LOCKSTEP" shard --input csv:d.csv --output data
expect_output "data holds dataset 'fmnist-slice' made from idx:$FMNIST; .* does not replace another dataset"
expect_rc 2 "$LOCKSTEP" shard --input hdf5:data/train-00000-of-00002.h5 --output data --force
expect_output "lies in --output data and this import would overwrite or delete it"
[ "$(md5sum data/*.h5 data/manifest.json | md5sum)" = "$before" ] || fail "a refused import changed the dataset"
expect_rc 0 "$LOCKSTEP" shard --input "idx:$FMNIST" --output data --limit 1024 --shards 2 --name fmnist-slice
expect_output "up to date"
# A hostile finding (helper-48): the same input re-imported under another name (--name left
# out) replaced the dataset silently, and runs on it could no longer resume.
expect_rc 2 "$LOCKSTEP" shard --input "idx:$FMNIST" --output data --limit 1024 --shards 3
expect_output "data holds dataset 'fmnist-slice' \(this import would name it 'dataset': --name fmnist-slice re-imports it"
[ "$(md5sum data/*.h5 data/manifest.json | md5sum)" = "$before" ] || fail "a refused re-import changed the dataset"
pass "shard refuses a foreign directory, another dataset and its own input (even with --force)"

# Issue 31 (2): a user's *.tmp.* file is not a killed import's (before: deleted); two
# imports into one directory are one too many (before: they broke each other).
mkdir tex && echo "draft" > tex/thesis.tex.tmp.4242
expect_rc 2 "$LOCKSTEP" shard --input "idx:$FMNIST" --output tex --limit 256
expect_output "tex is not empty and holds files that are not a lockstep dataset \(thesis.tex.tmp.4242\)"
[ "$(cat tex/thesis.tex.tmp.4242)" = draft ] || fail "the user's temp file was touched"
cp -r data busy && (flock busy/lock sleep 30 &) && sleep 0.3
before=$(md5sum busy/* | md5sum)
expect_rc 2 "$LOCKSTEP" shard --input "idx:$FMNIST" --output busy --limit 256 --force
expect_output "dataset directory busy is in use by another job"
[ "$(md5sum busy/* | md5sum)" = "$before" ] || fail "a refused concurrent import changed the dataset"
pkill -f "flock busy/lock" || true
# A hostile finding (helper-49): an "up to date" run swept the temp files of a live import
# on a host of the same name (a container: its pid is no process here) without the lock.
cp -r data live && tmp="live/train-00000-of-00002.h5.lockstep-tmp.999999.$(hostname)" && echo part >"$tmp"
(flock -o live/lock sleep 30 &) && sleep 0.3
expect_rc 0 "$LOCKSTEP" shard --input "idx:$FMNIST" --output live --limit 1024 --shards 2 --name fmnist-slice
expect_output "up to date"
[ -f "$tmp" ] || fail "an up-to-date run removed the temp file of an import that holds the directory"
pkill -f "flock -o live/lock" || true
expect_rc 0 "$LOCKSTEP" shard --input "idx:$FMNIST" --output live --limit 1024 --shards 2 --name fmnist-slice
[ ! -e "$tmp" ] || fail "a dead writer's temp file stayed once the directory was free"
pass "shard keeps a user's temp files and refuses a directory another import holds"

cp -r data flipped
shard=flipped/train-00001-of-00002.h5
python3 - "$shard" <<'PY'
import os, sys
path = sys.argv[1]
with open(path, "r+b") as f:  # one byte in the middle of the sample chunks
    f.seek(os.path.getsize(path) // 2); b = f.read(1); f.seek(-1, 1); f.write(bytes([b[0] ^ 0x5A]))
PY
expect_rc 1 run_mpi 2 train --data flipped --batch-size 32 --run-dir flip --max-steps 4
# (the chunk reader names the chunk; HDF5, where it reads the samples itself, does not)
expect_output "rank 1@.*train-00001-of-00002.h5: cannot read samples [0-9.]+(: chunk [0-9]+ at byte [0-9]+: fails its checksum| \(a chunk fails its checksum)"
for mode in memory stream; do
  expect_rc 1 run_mpi 1 train --data flipped --batch-size 32 --run-dir "flip-$mode" --max-steps 4 --data.mode $mode
  expect_output "train-00001-of-00002.h5: cannot read samples"
done
expect_rc 1 "$LOCKSTEP" inspect flipped --verify
expect_output "train-00001-of-00002.h5: checksum mismatch"
pass "a changed byte in a shard stops training (memory and stream readers) and fails --verify"

cp -r data escape
sed -i 's|"file":"train-00000-of-00002.h5"|"file":"../data/train-00000-of-00002.h5"|' escape/manifest.json
expect_rc 1 run_mpi 2 train --data escape --batch-size 32 --run-dir esc --max-steps 2
expect_output "shard file '../data/train-00000-of-00002.h5' is not a plain file name"
pass "a manifest cannot name files outside its directory"
# Issue 31 (8): shard onto a full disk gave a contextless HDF5 error, then SIGSEGV (exit
# 139) inside HDF5's own exit cleanup. Now: one error naming the file and ENOSPC, exit 1,
# no crash, nothing left behind. (Needs root for a small tmpfs.)
if [ "$(id -u)" = 0 ] && mkdir -p full && mount -t tmpfs -o size=3m tmpfs full 2>/dev/null; then
  trap 'umount -l "$WORK/full" 2>/dev/null || true' EXIT
  for limit in 3000 6000; do  # the disk fills at the final flush, and in the middle of a write
    expect_rc 1 "$LOCKSTEP" shard --input "idx:$FMNIST" --output full/d$limit --limit $limit --no-shuffle
    expect_output "HDF5 call .* failed: .*: No space left on device \(file full/d$limit/train-00000-of-00001.h5"
    [ -z "$(ls -A full)" ] || fail "a failed import on a full disk left $(ls -A full)"
  done
  umount -l full
  pass "shard onto a full disk: one error naming the file and ENOSPC, exit 1, no crash, nothing left"
  # A hostile finding (helper-46): predict --out X.h5 on a nearly full disk exited 0 with
  # zero-filled rows (closing a dataset writes its cached chunks; its ENOSPC went unchecked,
  # and the flush after it had nothing left to fail on). Every size: an error, or the file
  # equal to the one written on a roomy disk.
  expect_rc 0 run_mpi 2 train --data data --batch-size 32 --run-dir pr --max-steps 2
  expect_rc 0 "$LOCKSTEP" predict --checkpoint pr/checkpoints/best.ckpt --data data --out ref.h5
  failed=0
  for kb in $(seq 16 8 88); do
    mount -t tmpfs -o size=${kb}k tmpfs full
    rc=0
    "$LOCKSTEP" predict --checkpoint pr/checkpoints/best.ckpt --data data --out full/p.h5 >"$WORK/out.txt" 2>&1 || rc=$?
    if [ $rc = 0 ]; then
      "$PYTHON" - full/p.h5 ref.h5 <<'PY' || fail "predict on a ${kb}k disk exited 0 with a file unlike the reference"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1]) as a, h5py.File(sys.argv[2]) as b:
    assert sorted(a) == sorted(b) and all(np.array_equal(a[k][:], b[k][:]) for k in b), sys.argv[1]
PY
    else
      failed=$((failed + 1))
      grep -q "No space left on device" "$WORK/out.txt" || { cat "$WORK/out.txt"; fail "predict on a ${kb}k disk: no ENOSPC named"; }
      [ ! -e full/p.h5 ] || fail "a failed predict left full/p.h5"
    fi
    umount -l full
  done
  [ $failed -gt 0 ] || fail "no disk size made predict fail: the scan missed the full-disk window"
  pass "predict onto a nearly full disk: an error naming ENOSPC ($failed sizes), or the exact file"
else
  echo "skipped: cannot mount a tmpfs here (the full-disk case needs root)"
fi
echo "e2e data_safety: all passed"
