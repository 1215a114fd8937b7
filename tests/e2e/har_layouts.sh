# Human-activity data in the layouts it comes in, end to end: the UCI-HAR directory
# (ucihar:DIR) and WISDM-style raw text (';'-terminated records, a timestamp column, the
# user as the group), both generated here in those exact layouts; subject-wise validation;
# 2-rank training on each; malformed records refused with file:line.
source "$(dirname "$0")/common.sh" "$@"

# UCI-HAR: 10 train + 3 test subjects, 6 activities, windows of 9 channels x 128. Channel 0
# (body_acc_x) carries the subject number so the splits can be checked; the activity is in
# the frequency of the others.
"$PYTHON" - <<'PY'
import os, numpy as np
rng = np.random.default_rng(0)
root = "UCI HAR Dataset"
names = ["WALKING", "WALKING_UPSTAIRS", "WALKING_DOWNSTAIRS", "SITTING", "STANDING", "LAYING"]
os.makedirs(root, exist_ok=True)
with open(f"{root}/activity_labels.txt", "w") as f:
    f.writelines(f"{i + 1} {n}\n" for i, n in enumerate(names))
chans = [f"{k}_{a}" for k in ("body_acc", "body_gyro", "total_acc") for a in "xyz"]
for split, subjects in (("train", range(1, 11)), ("test", range(11, 14))):
    d = f"{root}/{split}/Inertial Signals"
    os.makedirs(d, exist_ok=True)
    y, s, sig = [], [], []
    for sub in subjects:
        for rep in range(4):
            for act in range(6):
                t = np.arange(128) / 50.0
                w = np.stack([np.sin(2 * np.pi * (act + 1) * t + c) + rng.normal(0, 0.3, 128) for c in range(9)])
                w[0] = sub
                y.append(act + 1); s.append(sub); sig.append(w)
    sig = np.array(sig)
    np.savetxt(f"{root}/{split}/y_{split}.txt", y, fmt="%d")
    np.savetxt(f"{root}/{split}/subject_{split}.txt", s, fmt="%d")
    np.savetxt(f"{root}/{split}/X_{split}.txt", sig.mean(axis=2), fmt="%15.7e")
    for c, name in enumerate(chans):
        np.savetxt(f"{d}/{name}_{split}.txt", sig[:, c, :], fmt="%15.7e")
PY
expect_rc 0 "$LOCKSTEP" shard --input "ucihar:UCI HAR Dataset" --output ucihar --val-fraction 0.2 --shards 2
expect_output "train +192 samples"  # 8 of 10 subjects x 24 windows
expect_output "val +48 samples"
expect_output "test +72 samples"
"$LOCKSTEP" inspect ucihar >"$WORK/out.txt" 2>&1
expect_output "9x128 float32"
expect_output "WALKING, WALKING_UPSTAIRS, WALKING_DOWNSTAIRS, SITTING, STANDING, LAYING"
"$PYTHON" - <<'PY' || fail "a UCI-HAR subject is in two splits"
import glob, h5py, numpy as np
subs = {}
for split in ("train", "val", "test"):
    subs[split] = set()
    for p in glob.glob(f"ucihar/{split}-*.h5"):
        with h5py.File(p) as f:
            subs[split] |= set(np.unique(f["samples"][:, 0, 0]).tolist())
assert not (subs["train"] & subs["val"]) and len(subs["val"]) == 2 and subs["test"] == {11.0, 12.0, 13.0}, subs
PY
pass "ucihar:DIR: [9, 128] windows, activity names, validation by whole subjects"
expect_rc 0 run_mpi 2 train --data ucihar --model cnn1d --width 16 --batch-size 8 --epochs 4 --lr 0.01 --optimizer adam \
  --run-dir ucihar-run --log-every 10
acc=$(json_rows ucihar-run/metrics.jsonl end test_acc)
python3 -c "import sys; sys.exit(0 if float('$acc') > 0.5 else 1)" || fail "UCI-HAR layout: test accuracy $acc (6 classes)"
expect_rc 0 "$LOCKSTEP" shard --input "ucihar:UCI HAR Dataset" --har-signals features --output ucihar-features \
  --val-fraction 0.2
expect_rc 0 "$LOCKSTEP" inspect ucihar-features
expect_output "samples +9 float32"
pass "2 ranks train on the UCI-HAR layout (test accuracy $acc); --har-signals features gives [9]"

# WISDM-style raw text: user,activity,timestamp,x,y,z; with some lines holding two records.
python3 - <<'PY'
import math, random
random.seed(2)
acts = ["Walking", "Jogging", "Sitting"]
with open("wisdm_raw.txt", "w") as f:
    ts = 0
    for user in range(1, 9):
        for block in range(6):
            act = acts[(block + user) % 3]
            for i in range(60):
                ts += 50000000
                v = [math.sin((acts.index(act) + 1) * i / 3 + k) * 5 + random.gauss(0, 0.5) for k in range(3)]
                rec = f"{user},{act},{ts},{v[0]:.4f},{v[1]:.4f},{v[2]:.4f};"
                f.write(rec + ("" if i % 7 == 3 else "\n"))
    f.write("\n")
PY
expect_rc 0 "$LOCKSTEP" shard --input csv:wisdm_raw.txt --header no --label-column 1 --group-column 0 --ignore-columns 2 \
  --window 20 --stride 10 --val-fraction 0.25 --output wisdm --shards 2
# 8 users x 6 activity runs of 60 records: (60 - 20) / 10 + 1 = 5 windows a run = 240; 2 of 8 users to val.
expect_output "train +180 samples"
expect_output "val +60 samples"
"$LOCKSTEP" inspect wisdm >"$WORK/out.txt" 2>&1
expect_output "3x20 float32"
expect_output "Jogging, Sitting, Walking"
expect_rc 0 run_mpi 2 train --data wisdm --model cnn1d --width 8 --batch-size 8 --epochs 2 --run-dir wisdm-run --lr 0.01
# Every import option is in the fingerprint: keeping the timestamp column is another dataset.
expect_rc 0 "$LOCKSTEP" shard --input csv:wisdm_raw.txt --header no --label-column 1 --group-column 0 \
  --window 20 --stride 10 --val-fraction 0.25 --output wisdm --shards 2
"$LOCKSTEP" inspect wisdm >"$WORK/out.txt" 2>&1
expect_output "4x20 float32"
pass "WISDM-style ';' records: timestamp ignored, user as group, windows within a user's activity, 2-rank training"

printf '33,Jogging,1,1,2,3;\n33,Jogging,2,1,2,;\n' >broken.txt
expect_rc 1 "$LOCKSTEP" shard --input csv:broken.txt --header no --label-column 1 --output broken
expect_output "broken.txt:2: column 'column 5' value '' is not a finite number"
pass "a malformed record is refused with its file:line"
