#!/usr/bin/env bash
# Video end to end: rendered behaviour videos encoded by the ffmpeg CLI (mp4, mkv, avi)
# -> video:LABELS.csv import (clips [1,17,32,32], trial-wise validation) -> c3d and r3d
# on 2 ranks with 5-D augmentation, class weights, macro-F1 and best-by-F1 -> activation
# checkpointing -> every bad video input refused with one line, nothing committed.
source "$(dirname "$0")/common.sh" "$@"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
command -v ffmpeg >/dev/null || fail "ffmpeg is not installed (.ci/setup installs it)"
export LOCKSTEP LOCKSTEP_PYTHON=$PYTHON

# 1. A small set, made by the job's own script: 6 training videos, 2 test videos.
bash "$ROOT/jobs/data/video_behaviour.sh" "$WORK/vb" 6 2 >"$WORK/make.txt" 2>&1 || { cat "$WORK/make.txt"; fail "video_behaviour.sh"; }
grep -Eq "decoded [0-9]+ frames of 6 videos" make.txt || { cat make.txt; fail "no decode summary"; }
ls vb.src/videos | grep -q '\.mkv$' && ls vb.src/videos | grep -q '\.avi$' && ls vb.src/videos | grep -q '\.mp4$' ||
  fail "the set should hold mp4, mkv and avi files"
expect_rc 0 "$LOCKSTEP" inspect vb --verify
expect_output "samples +1x17x32x32 uint8"
expect_output "classes +5: down, left, rest, right, up"
expect_output "^ok +test-00000-of-00004.h5"
# Clips hold the decoded frames: the labelled frame is the middle one, and its sprite sits
# where the CSV's motion put it (the sprite moves 1 px/frame at 32 px: consecutive frames differ).
"$PYTHON" - vb/train-00000-of-00004.h5 "$ROOT/docs/python" <<'PY' || fail "clip contents"
import sys, h5py, numpy as np
sys.path.insert(0, sys.argv[2])
import lockstep_shards
x = lockstep_shards.shard_samples(h5py.File(sys.argv[1], "r"), 0, 64).astype(np.int16)
assert x.shape[1:] == (1, 17, 32, 32), x.shape
assert x.std() > 5, "blank clips"
# Every clip is a run of 17 distinct frames (noise differs frame to frame), not one frame repeated.
assert all(np.abs(np.diff(c[0], axis=0)).mean() > 0.5 for c in x), "clips repeat one frame"
PY
pass "rendered mp4/mkv/avi videos import as [1,17,32,32] clips and verify"

# 1b. Frames stored once (the default, shard format v3): the same clips in every split, bit
# for bit, as the whole-clip layout (--video-storage clips), on a fraction of its disk.
expect_rc 0 "$LOCKSTEP" shard --input video:vb.src/train.csv --test-input video:vb.src/test.csv --output vbclips \
  --name video_behaviour --clip-frames 17 --clip-stride 2 --frame-size 32x32 --color gray --group-column trial \
  --val-fraction 0.2 --shards 4 --video-storage clips
expect_rc 0 "$LOCKSTEP" inspect vb
expect_output "frames +[0-9]+ stored once for [0-9]+ clips"
"$PYTHON" - "$ROOT/docs/python" <<'PY' || fail "frame-table clips differ from whole clips"
import glob, json, os, sys, h5py, numpy as np
sys.path.insert(0, sys.argv[1])
import lockstep_shards
m, c = (json.load(open(f"{d}/manifest.json")) for d in ("vb", "vbclips"))
assert m["lockstep_format"] == 3 and m["frame_table"] and c["lockstep_format"] == 1, (m["lockstep_format"], c["lockstep_format"])
def clips(d, split):  # (clip bytes, label) of every sample, sorted
    x = lockstep_shards.split_samples(d, split)
    files = [f"{d}/{s['file']}" for s in json.load(open(f"{d}/manifest.json"))["splits"][split]["shards"]]
    y = np.concatenate([h5py.File(f, "r")["labels"][:] for f in files])
    return sorted((a.tobytes(), int(b)) for a, b in zip(x, y))
for split in ("train", "val", "test"):
    assert clips("vb", split) == clips("vbclips", split), split
size = lambda d: sum(os.path.getsize(f) for f in glob.glob(f"{d}/*.h5"))
frames = sum(s["frames"] for sp in m["splits"].values() for s in sp["shards"])
clips = sum(sp["count"] for sp in m["splits"].values())
print(f"{clips} clips: {size('vbclips') / 2**20:.1f} MiB as whole clips ({clips * 17} frames), "
      f"{size('vb') / 2**20:.1f} MiB as {frames} frames stored once")
assert size("vb") * 4 < size("vbclips"), (size("vb"), size("vbclips"))
PY
pass "frames stored once: the same clips bit for bit as whole clips, on a fraction of the disk"

# 2. Trial-wise split: the validation split's clip count is a sum of whole trials' counts
# (every trial's clips in one split; the unit tests check the grouping itself).
"$PYTHON" - vb.src/train.csv vb/manifest.json <<'PY' || fail "validation split is not trial-wise"
import csv, json, sys, itertools, collections
rows = list(csv.DictReader(open(sys.argv[1])))
per_trial = collections.Counter()
by_trial = collections.defaultdict(list)
for r in rows: by_trial[r["trial"]].append(int(r["frame"]))
for t, frames in by_trial.items(): per_trial[t] = len(frames[::2])   # --clip-stride 2
val = json.load(open(sys.argv[2]))["splits"]["val"]["count"]
sizes = sorted(per_trial.values())
# Some set of whole trials has exactly the validation count.
reach = {0}
for s in sizes: reach |= {r + s for r in reach}
assert val in reach, (val, sizes)
print("val", val, "clips from whole trials of sizes", sizes[:5], "...")
PY
pass "the validation split holds whole trials"

# 3. c3d on 2 ranks: every 5-D augmentation, class weights, macro-F1, best by F1, sync-BN.
ARGS=(--data vb --model c3d --model.width 8 --epochs 3 --batch-size 16 --optimizer adam --lr 0.003
      --train.class-weights auto --ckpt.best-metric val_f1 --log-every 10 --data.random-crop 2
      --data.time-jitter 1 --data.brightness 0.2 --data.contrast 0.2 --data.hflip true)
expect_rc 0 run_mpi 2 train "${ARGS[@]}" --run-dir c3d --model.sync-bn true
expect_output "sync-bn over 4 layer"
expect_output "per-class metrics"
expect_output "macro-F1 [0-9.]+"
expect_output "finished at step [0-9]+: .*val_f1 [0-9.]+, test_acc [0-9.]+ test_f1 [0-9.]+ \(the best val_f1 checkpoint"
"$PYTHON" - c3d/metrics.jsonl <<'PY' || fail "metrics rows of the video run"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
epochs = [r for r in rows if r["kind"] == "epoch"]
assert len(epochs) == 3 and all("val_f1" in r for r in epochs), epochs
assert epochs[-1]["train_loss"] < epochs[0]["train_loss"], "loss did not fall"
assert max(r["val_f1"] for r in epochs) > 0.4, "c3d learned nothing"
PY
pass "c3d trains on 2 ranks with 5-D augmentation, class weights and best-by-F1"

# CPU + --train.amp bf16 + 3-d convolutions: oneDNN off for the process (its bf16 conv3d weight
# gradients are wrong on some CPUs, core/model/onednn_guard), said once at start-up; float32
# keeps oneDNN and says nothing.
expect_rc 0 "$LOCKSTEP" train --data vb --model c3d --model.width 4 --batch-size 8 --max-steps 2 --amp bf16 --run-dir c3d-bf16
expect_output "note: oneDNN's bfloat16 3-d convolution gives wrong weight gradients on some CPUs"
expect_rc 0 "$LOCKSTEP" train --data vb --model c3d --model.width 4 --batch-size 8 --max-steps 2 --run-dir c3d-fp32
! grep -q "oneDNN" "$WORK/out.txt" || { cat "$WORK/out.txt"; fail "float32 c3d turned oneDNN off"; }
pass "CPU bf16 with 3-d convolutions runs without oneDNN and says so; float32 keeps it"

# 4. r3d-10 with activation checkpointing on 2 ranks, resumed, then evaluated.
expect_rc 0 run_mpi 2 train --data vb --model r3d --model.depth 10 --model.width 4 --epochs 1 --batch-size 16 \
  --model.checkpoint-activations --run-dir r3d
expect_rc 0 run_mpi 2 train --data vb --model r3d --model.depth 10 --model.width 4 --epochs 2 --batch-size 16 \
  --model.checkpoint-activations --run-dir r3d --resume auto
expect_output "resum"
expect_rc 0 "$LOCKSTEP" evaluate --checkpoint r3d/checkpoints/best.ckpt --data vb --split test
expect_output "macro-F1"
pass "r3d-10 with checkpointed activations trains, resumes and evaluates"

# 4b. Both video models exported load strictly into their PyTorch reference modules
# (docs/python/lockstep_models.py) and give lockstep predict's probabilities.
for m in c3d r3d; do
  expect_rc 0 "$LOCKSTEP" export --checkpoint $m/checkpoints/best.ckpt --out $m.safetensors
  expect_rc 0 run_mpi 2 predict --checkpoint $m.safetensors --data vb --split test --out $m-pred.h5
  "$PYTHON" "$ROOT/tests/e2e/check_export.py" "$ROOT/docs/python" $m.safetensors vb test $m-pred.h5 ||
    fail "$m: the PyTorch reference module disagrees with lockstep predict"
done
pass "c3d and r3d exports load strictly into their PyTorch modules, equal to predict"

# 4c. Unlabelled footage (`shard --no-labels`): the test CSV without its label column gives
# the labelled test split's clips, stored in source order, and predict gives each the same
# probabilities; a CSV of whole videos (no frame column) gives a clip around every frame.
"$PYTHON" - <<'PY' || fail "writing the unlabelled CSVs"
import csv
rows = list(csv.DictReader(open("vb.src/test.csv")))
with open("vb.src/unl.csv", "w") as f:
    f.write("video,trial,frame\n")
    f.writelines(f"{r['video']},{r['trial']},{r['frame']}\n" for r in rows)
videos = list(dict.fromkeys(r["video"] for r in rows))
open("vb.src/whole.csv", "w").write("video\n" + "".join(v + "\n" for v in videos))
PY
VOPT=(--clip-frames 17 --frame-size 32x32 --color gray)
expect_rc 0 "$LOCKSTEP" shard --input video:vb.src/unl.csv --no-labels --output unl --clip-stride 2 "${VOPT[@]}"
expect_rc 0 "$LOCKSTEP" inspect unl
expect_output "none \(unlabeled data\)"
expect_rc 0 run_mpi 2 predict --checkpoint c3d/checkpoints/best.ckpt --data unl --split train --out unl.h5
expect_rc 0 run_mpi 2 predict --checkpoint c3d/checkpoints/best.ckpt --data vb --split test --out lab.h5
expect_rc 0 "$LOCKSTEP" shard --input video:vb.src/whole.csv --no-labels --output whole "${VOPT[@]}"
expect_rc 0 run_mpi 2 predict --checkpoint c3d/checkpoints/best.ckpt --data whole --split train --out whole.csv
"$PYTHON" - "$ROOT/docs/python" <<'PY' || fail "unlabelled video: clips, order or predictions"
import csv, json, sys, h5py, numpy as np
sys.path.insert(0, sys.argv[1])
from lockstep_shards import split_samples as samples
u, lab = samples("unl", "train"), samples("vb", "test")
assert json.load(open("unl/manifest.json"))["sample_order"] == "source"
assert u.shape == lab.shape, (u.shape, lab.shape)
row_of = {x.tobytes(): i for i, x in enumerate(lab)}
match = [row_of[x.tobytes()] for x in u]              # every unlabelled clip is a labelled test clip
assert sorted(match) == list(range(len(lab))), "the clips differ"
pu, pl = h5py.File("unl.h5", "r"), h5py.File("lab.h5", "r")
assert "label" not in pu and list(pu.attrs["class_names"]) == list(pl.attrs["class_names"])
assert np.allclose(pu["prob"][:], pl["prob"][:][match], atol=1e-5), "predictions differ from the labelled split's"
# Source order: videos as the CSV first names them, then frames ascending (every 2nd row of
# each trial): consecutive clips D frames apart in one video overlap by 17 - D frames.
rows = list(csv.DictReader(open("vb.src/unl.csv")))
trials = {}
for r in rows: trials.setdefault((r["video"], r["trial"]), []).append(int(r["frame"]))
order = []
for v in dict.fromkeys(r["video"] for r in rows):
    order += [(v, f) for f in sorted(f for (tv, t), fs in trials.items() if tv == v for f in sorted(fs)[::2])]
assert len(order) == len(u), (len(order), len(u))
checked = 0
for i in range(len(u) - 1):
    (v0, f0), (v1, f1) = order[i], order[i + 1]
    if v0 == v1 and 0 < f1 - f0 < 17:
        d = f1 - f0
        assert np.array_equal(u[i][:, d:], u[i + 1][:, :-d]), f"clips {i}, {i + 1} are not frames {f0}, {f1} of {v0}"
        checked += 1
assert checked > len(u) // 2, checked
# Whole videos: one clip per frame, in frame order: frame t+1 of clip i is frame t of clip
# i+1 (the edge clips' repeated frames too); that breaks once, between the two videos.
w = samples("whole", "train")[:, 0]
breaks = [i for i in range(len(w) - 1) if not np.array_equal(w[i, 1:], w[i + 1, :-1])]
assert len(breaks) == 1 and len(w) > 900, (len(w), breaks[:20])
pred = list(csv.DictReader(open("whole.csv")))
assert [int(r["index"]) for r in pred] == list(range(len(w))) and "label" not in pred[0], pred[0]
print(f"{len(u)} clips in source order, predictions equal the labelled split's; {len(w)} whole-video clips")
PY
expect_rc 0 "$LOCKSTEP" shard --input video:vb.src/whole.csv --no-labels --output skipped --clip-edges skip "${VOPT[@]}"
expect_output "--clip-edges skip dropped 32 of 1163 clips"  # 8 at each end of each of the two videos
expect_rc 0 "$LOCKSTEP" inspect skipped/train-00000-of-00001.h5 --verify  # a shard against the manifest beside it
expect_output "^verified     train-00000-of-00001.h5 +[0-9]+ samples  crc32 [0-9a-f]+, as the manifest beside it lists it"
expect_rc 2 "$LOCKSTEP" inspect skipped/manifest.json --verify
expect_output "--verify checks a dataset, or a shard, against its manifest"
expect_rc 2 "$LOCKSTEP" shard --input video:vb.src/unl.csv --no-labels --val-fraction 0.2 --output bad "${VOPT[@]}"
expect_output "no validation split"
expect_rc 1 "$LOCKSTEP" shard --input video:vb.src/unl.csv --output bad "${VOPT[@]}"
expect_output "must name the columns video, frame and label"
pass "unlabelled footage (--no-labels): same clips in source order, predict gives the labelled split's probabilities"

# 5. Options that do not fit the data are refused before training.
make_slice fm 200 1
expect_rc 2 "$LOCKSTEP" train --data fm --epochs 1 --data.time-jitter 2 --run-dir bad
expect_output "--data.time-jitter shifts video clips \[C,T,H,W\]"
expect_rc 2 "$LOCKSTEP" train --data vb --model cnn --epochs 1 --run-dir bad
expect_output "needs image samples"
expect_rc 2 "$LOCKSTEP" train --data vb --model mlp --model.checkpoint-activations --epochs 1 --run-dir bad
expect_output "checkpoint-activations is built into resnet, r3d and c3d"
pass "time jitter on images, 2-D models on clips, checkpointing on mlp: refused"

# 6. Bad input: one line naming the file (and line or frame), exit 1, nothing committed —
# a previous dataset in the output stays as it was.
mkdir -p bad.src && cp -r vb.src/videos bad.src/
head -1 vb.src/train.csv >bad.src/ok.csv && grep ',train-00-t0,' vb.src/train.csv >>bad.src/ok.csv
expect_rc 0 "$LOCKSTEP" shard --input video:bad.src/ok.csv --output keep --val-fraction 0 --clip-frames 5
cp keep/manifest.json keep.manifest
refused() {  # refused CSV-BODY REGEX: importing it fails with one line matching REGEX
  { head -1 vb.src/train.csv; printf '%s\n' "$1"; } >bad.src/bad.csv
  expect_rc 1 "$LOCKSTEP" shard --input video:bad.src/bad.csv --output keep --val-fraction 0 --clip-frames 5 --force
  expect_output "$2"
  [ "$(grep -c . "$WORK/out.txt")" -le 2 ] || { cat "$WORK/out.txt"; fail "more than one error line"; }
  cmp -s keep/manifest.json keep.manifest || fail "a failed import changed the committed dataset"
  ! ls keep | grep -q '\.tmp\.' || fail "temp files left behind"
}
FIRST=$(sed -n 2p vb.src/train.csv)
VIDEO=$(echo "$FIRST" | cut -d, -f1)
FRAMES=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 "vb.src/$VIDEO")
refused "$VIDEO,t-x,$FRAMES,rest" "bad.csv:2: frame $FRAMES of .*$VIDEO is past the video's end \(it has $FRAMES frames\)"
refused "videos/nope.mp4,t-x,3,rest" "bad.csv:2: video .*videos/nope.mp4 not found"
OTHER=$(cut -d, -f1 vb.src/train.csv | sed 1d | sort -u | grep -v "^$VIDEO\$" | head -1)
refused "$(printf '%s,t-x,3,rest\n%s,t-x,4,rest' "$VIDEO" "$OTHER")" "bad.csv:3: trial 't-x' is in .* a trial must lie in one video"
refused "$VIDEO,t-x,abc,rest" "bad.csv:2: frame 'abc' is not a frame index"
# A truncated video (cut mid-stream: mkv opens, then ends early) and a file that is no video.
MKV=$(ls vb.src/videos | grep '\.mkv$' | head -1)
head -c $(( $(stat -c %s "vb.src/videos/$MKV") / 2 )) "vb.src/videos/$MKV" >bad.src/videos/cut.mkv
refused "videos/cut.mkv,t-x,$((FRAMES - 1)),rest" "bad.csv:2: .*cut.mkv.*(past the video's end|decodes to [0-9]+ frames, but frame [0-9]+ is needed)"
echo "not a video" >bad.src/videos/text.mp4
refused "videos/text.mp4,t-x,1,rest" "bad.csv:2: .*text.mp4: cannot open as video"  # the line, then the file
ln -sf loop2.mp4 bad.src/videos/loop1.mp4 && ln -sf loop1.mp4 bad.src/videos/loop2.mp4
refused "videos/loop1.mp4,t-x,1,rest" "bad.csv:2: video .*loop1.mp4 is a symbolic link to nothing"
expect_rc 0 "$LOCKSTEP" inspect keep --verify
pass "bad videos and labels are refused with one line; the committed dataset is untouched"

# 7. Label files as spreadsheets and pandas write them, mixed frame rates, uneven trials
# (helper-41): a quoted label is the unquoted class, not a class of its own; two frame rates
# in one import are said; --val-fraction over whole trials lands near the fraction and says
# where it landed.
{ echo '"video","trial","frame","label"'; sed 1d bad.src/ok.csv | tr -d '\r' | awk -F, '{printf "\"%s\",%s,%s,\"%s\"\n", $1, $2, $3, $4}'; } >bad.src/quoted.csv
expect_rc 0 "$LOCKSTEP" shard --input video:bad.src/quoted.csv --output quoted --val-fraction 0 --clip-frames 5
"$PYTHON" - quoted/manifest.json keep/manifest.json <<'PY' || fail "a quoted label file made other classes than the same file unquoted"
import json, sys
quoted, plain = (json.load(open(p))["class_names"] for p in sys.argv[1:3])
assert quoted == plain and all('"' not in c for c in quoted), (quoted, plain)
PY
ffmpeg -v error -f lavfi -i testsrc=rate=10:size=64x48 -frames:v 30 -c:v ffv1 bad.src/videos/slow.mkv
{ head -1 bad.src/ok.csv; sed -n 2p bad.src/ok.csv; echo "videos/slow.mkv,t-slow,10,rest"; } >bad.src/rates.csv
expect_rc 0 "$LOCKSTEP" shard --input video:bad.src/rates.csv --output rates --val-fraction 0 --clip-frames 5 --frame-size 32x32
expect_output "warning: .*slow.mkv is 10.00 fps, .* is [0-9.]+ fps: a clip of 5 frames spans 0.50 s in one"
expect_rc 0 "$LOCKSTEP" shard --input video:vb.src/train.csv --output trials --val-fraction 0.25 "${VOPT[@]}"
expect_output "val holds [0-9.]+% of train \+ val \(--val-fraction 0.25\)"
pass "quoted label files, mixed frame rates said, the validation share printed"
