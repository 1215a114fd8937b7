#!/usr/bin/env bash
# The video importer's decoding speed: decoded frames/s of `lockstep shard --input video:`
# (its own report, one line per input CSV: "[shard] CSV: decoded N frames of M videos in
# S s (R frames/s, T threads)", summed over the CSVs; JOBS decoding threads) against the ffmpeg CLI decoding the same files to raw gray 32x32 frames into
# /dev/null, one single-threaded ffmpeg per file, JOBS at a time (xargs -P), the same
# scaling and pixel format the import asks for. ffmpeg's frames are counted once with
# ffprobe -count_frames (not timed); its time includes a process start per file, as a
# script driving the CLI would pay. lockstep's own clock covers its decoding phases only
# (not probing, CSV parsing or HDF5 writing), so its end-to-end rate (frames / wall time of
# the whole shard command) is printed and compared too: that one is like for like. Median of RUNS runs each, interleaved, after a
# read of every file to warm the page cache.
#   bash bench/video_import.sh [RUNS] [SRC] [JOBS]   (default 3, data/video-behaviour.src, 2)
# SRC holds train.csv, test.csv and videos/ (jobs/data/video_behaviour.sh); when it has
# none, the default set is rendered into the work directory first (about 10 s).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${LOCKSTEP_BUILD:-$ROOT/build}
LOCKSTEP=${LOCKSTEP:-$BUILD/lockstep}
PYTHON=${LOCKSTEP_PYTHON:-${LOCKSTEP_VENV:-$HOME/.cache/lockstep/venv-torch2.11}/bin/python}
RUNS=${1:-3} SRC=${2:-$ROOT/data/video-behaviour.src} JOBS=${3:-2}
WORK=${VIDEO_IMPORT_WORK:-/tmp/lockstep-video-import}
command -v ffmpeg >/dev/null && command -v ffprobe >/dev/null ||
  { echo "video_import.sh: ffmpeg/ffprobe are not installed (apt-get install ffmpeg)" >&2; exit 2; }
mkdir -p "$WORK"
if [ ! -f "$SRC/train.csv" ]; then
  SRC=$WORK/src
  [ -f "$SRC/train.csv" ] || "$PYTHON" "$ROOT/jobs/data/render_videos.py" "$SRC" >/dev/null
fi
SRC=$(cd "$SRC" && pwd)
# Every video either CSV names, once, as a path relative to SRC.
python3 - "$SRC" >"$WORK/videos.txt" <<'PY'
import csv, os, sys
seen = {}
for split in ("train", "test"):
    path = os.path.join(sys.argv[1], split + ".csv")
    if os.path.exists(path):
        for row in csv.DictReader(open(path)):
            seen.setdefault(row["video"], None)
print("\n".join(seen))
PY
cd "$SRC"
FRAMES=0
while read -r v; do
  n=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 "$v")
  FRAMES=$((FRAMES + n))
done <"$WORK/videos.txt"
VIDEOS=$(wc -l <"$WORK/videos.txt")
xargs -a "$WORK/videos.txt" cat >/dev/null
TEST_INPUT=()
[ -f test.csv ] && TEST_INPUT=(--test-input "video:$SRC/test.csv")
now() { date +%s.%N; }
: >"$WORK/rates.txt"
for r in $(seq 1 "$RUNS"); do
  rm -rf "$WORK/shards"
  t0=$(now)
  "$LOCKSTEP" shard --input "video:$SRC/train.csv" "${TEST_INPUT[@]}" --output "$WORK/shards" --name video_import_bench \
    --clip-frames 17 --clip-stride 2 --frame-size 32x32 --color gray --decode-threads "$JOBS" --shards 4 \
    >"$WORK/lockstep-$r.log" 2>&1
  t1=$(now)
  report=$(grep -E 'decoded [0-9]+ frames of [0-9]+ videos in' "$WORK/lockstep-$r.log" | tr '\n' ' ') ||
    { echo "video_import.sh: no 'decoded N frames of M videos in S s' line in $WORK/lockstep-$r.log" >&2; exit 1; }
  t2=$(now)
  xargs -a "$WORK/videos.txt" -P "$JOBS" -I{} \
    ffmpeg -v error -threads 1 -i {} -f rawvideo -pix_fmt gray -s 32x32 -y /dev/null
  t3=$(now)
  echo "$r|$report|$t0 $t1|$t2 $t3" >>"$WORK/rates.txt"
done
python3 - "$WORK/rates.txt" "$FRAMES" "$VIDEOS" "$JOBS" <<'PY'
import re, statistics, sys
frames, videos, jobs = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
ls, wall, ff = [], [], []
for line in open(sys.argv[1]):
    _, report, lt, ft = line.rstrip("\n").split("|")
    parts = re.findall(r"decoded (\d+) frames of (\d+) videos in ([0-9.]+) s", report)  # one per input CSV
    n, s = sum(int(p[0]) for p in parts), sum(float(p[2]) for p in parts)
    ls.append(n / s)
    a, b = map(float, lt.split()); wall.append(n / (b - a))
    a, b = map(float, ft.split()); ff.append(frames / (b - a))
med = statistics.median
print(f"{videos} videos, {frames} frames (ffprobe); lockstep decoded {n}; {jobs} decoding threads / processes")
print(f"lockstep decode   frames/s {med(ls):9.0f}  (runs: {', '.join(f'{v:.0f}' for v in ls)})")
print(f"lockstep shard    frames/s {med(wall):9.0f}  (whole command, HDF5 writing included)")
print(f"ffmpeg CLI        frames/s {med(ff):9.0f}  (runs: {', '.join(f'{v:.0f}' for v in ff)})")
print(f"ratio lockstep decode / ffmpeg CLI  {med(ls) / med(ff):.2f}x   whole shard command / ffmpeg CLI "
      f"{med(wall) / med(ff):.2f}x")
PY
