#!/usr/bin/env bash
# Shards a UEA time-series set for the sequence jobs (jobs/har_basicmotions.ini,
# jobs/japanese_vowels.ini) from the .ts files the `aeon` wheel on PyPI ships inside its
# package: the wheel alone is fetched (pip download --no-deps, pinned, cached in
# ~/.cache/lockstep/wheels), nothing is downloaded when a job runs.
#   bash jobs/data/uea.sh basicmotions|japanese-vowels|japanese-vowels-ragged [OUT_DIR]
#                                                                    (default data/NAME)
# japanese-vowels is the archive's equal-length variant (*_eq_*.ts, 25 frames), what
# jobs/japanese_vowels.ini was tuned on; japanese-vowels-ragged the original utterances
# of 7-29 frames, imported as ragged samples (shard format v2; docs/sequences.md). The
# .ts files are kept beside the shards, in OUT_DIR.ts/.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
NAME=${1:?usage: uea.sh basicmotions|japanese-vowels|japanese-vowels-ragged [OUT_DIR]}
OUT=${2:-$ROOT/data/$NAME}
BUILD=${LOCKSTEP_BUILD:-$ROOT/build}
LOCKSTEP=${LOCKSTEP:-$(command -v lockstep 2>/dev/null || echo "$BUILD/lockstep")}
PYTHON=${LOCKSTEP_PYTHON:-${LOCKSTEP_VENV:-$HOME/.cache/lockstep/venv-torch2.11}/bin/python}
AEON=aeon==1.6.0
case "$NAME" in
  basicmotions) FILES=(BasicMotions/BasicMotions_TRAIN.ts BasicMotions/BasicMotions_TEST.ts) ;;
  japanese-vowels) FILES=(JapaneseVowels/JapaneseVowels_eq_TRAIN.ts JapaneseVowels/JapaneseVowels_eq_TEST.ts) ;;
  japanese-vowels-ragged) FILES=(JapaneseVowels/JapaneseVowels_TRAIN.ts JapaneseVowels/JapaneseVowels_TEST.ts) ;;
  *) echo "uea.sh: unknown set '$NAME' (basicmotions, japanese-vowels, japanese-vowels-ragged)" >&2; exit 2 ;;
esac
WHEELS=${LOCKSTEP_WHEELS:-$HOME/.cache/lockstep/wheels}
mkdir -p "$WHEELS"
WHEEL=$(ls "$WHEELS"/aeon-1.6.0-*.whl 2>/dev/null | head -1 || true)
if [ -z "$WHEEL" ]; then
  "$PYTHON" -m pip download -q --no-deps "$AEON" -d "$WHEELS" >&2
  WHEEL=$(ls "$WHEELS"/aeon-1.6.0-*.whl | head -1)
fi
SRC=$OUT.ts
mkdir -p "$SRC"
"$PYTHON" - "$WHEEL" "$SRC" "${FILES[@]}" <<'PY'
import os, sys, zipfile
wheel, out, files = sys.argv[1], sys.argv[2], sys.argv[3:]
with zipfile.ZipFile(wheel) as z:
    for f in files:
        data = z.read("aeon/datasets/data/" + f)
        with open(os.path.join(out, os.path.basename(f)), "wb") as o:
            o.write(data)
PY
"$LOCKSTEP" shard --input "ts:$SRC/$(basename "${FILES[0]}")" --test-input "ts:$SRC/$(basename "${FILES[1]}")" \
  --output "$OUT" --shards 2 --name "$NAME"
