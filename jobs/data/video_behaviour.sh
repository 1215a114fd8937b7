#!/usr/bin/env bash
# Makes the synthetic behaviour-video set for jobs/video_behaviour.ini on the spot, with no
# download: jobs/data/render_videos.py draws a Fashion-MNIST garment resting or moving
# left/right/up/down over a textured background (64x64 gray, 25 fps; imbalanced labels,
# rest ~55%), encodes the videos with the ffmpeg CLI (.mp4 and .mkv H.264, .avi MPEG-4)
# and writes per-frame label CSVs (video,trial,frame,label; gaps between trials unlabelled).
# `lockstep shard` imports them (video:CSV): a clip of 17 frames centred on every second
# labelled frame of each trial, scaled to 32x32, labelled by its centre frame. Whole videos
# are held out for the test split, and the validation split takes whole trials
# (--group-column trial), so no trial's overlapping clips sit in two splits.
#   bash jobs/data/video_behaviour.sh [OUT_DIR] [TRAIN_VIDEOS] [TEST_VIDEOS]   (default data/video-behaviour, 24, 8)
# Videos and CSVs go to OUT_DIR.src, shards to OUT_DIR. Deterministic (seeded); rendering
# takes about 10 s for the defaults on 2 cores.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:-$ROOT/data/video-behaviour}
TRAIN=${2:-24}
TEST=${3:-8}
BUILD=${LOCKSTEP_BUILD:-$ROOT/build}
LOCKSTEP=${LOCKSTEP:-$(command -v lockstep 2>/dev/null || echo "$BUILD/lockstep")}
PYTHON=${LOCKSTEP_PYTHON:-${LOCKSTEP_VENV:-$HOME/.cache/lockstep/venv-torch2.11}/bin/python}
command -v ffmpeg >/dev/null || { echo "video_behaviour.sh: ffmpeg is not installed (apt-get install ffmpeg)" >&2; exit 2; }
SRC=$OUT.src
"$PYTHON" "$ROOT/jobs/data/render_videos.py" "$SRC" "$TRAIN" "$TEST" 1234
"$LOCKSTEP" shard --input "video:$SRC/train.csv" --test-input "video:$SRC/test.csv" --output "$OUT" \
  --name video_behaviour --clip-frames 17 --clip-stride 2 --frame-size 32x32 --color gray \
  --group-column trial --val-fraction 0.2 --shards 4
