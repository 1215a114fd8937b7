#!/usr/bin/env bash
# Makes the spoken-digits speech set for jobs/speech_digits.ini on the spot, with no
# download: Debian's espeak-ng speaks random digit strings ("three one four one") in many
# voices (7 English accents x 12 voice variants), speeds and pitches; numpy resamples each
# to 16 kHz mono WAV; `lockstep shard` imports the manifests (audio:MANIFEST). Whole
# voices are held out for the test split (and the validation split takes whole voices
# from the rest, --group via the manifests' speaker column), so the test measures
# recognition of voices never heard in training.
#   bash jobs/data/speech_digits.sh [OUT_DIR] [UTTERANCES]   (default data/speech-digits, 2400)
# Deterministic for a given UTTERANCES (seeded); about a minute for 2400 on 2 cores.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:-$ROOT/data/speech-digits}
N=${2:-2400}
BUILD=${LOCKSTEP_BUILD:-$ROOT/build}
LOCKSTEP=${LOCKSTEP:-$(command -v lockstep 2>/dev/null || echo "$BUILD/lockstep")}
PYTHON=${LOCKSTEP_PYTHON:-${LOCKSTEP_VENV:-$HOME/.cache/lockstep/venv-torch2.11}/bin/python}
command -v espeak-ng >/dev/null || { echo "speech_digits.sh: espeak-ng is not installed (apt-get install espeak-ng)" >&2; exit 2; }
WAVS=$OUT.wav
mkdir -p "$WAVS"
"$PYTHON" - "$WAVS" "$N" <<'PY'
import io, os, random, subprocess, sys, wave
import numpy as np
out, n = sys.argv[1], int(sys.argv[2])
words = "zero one two three four five six seven eight nine".split()
accents = ["en-us", "en", "en-gb-scotland", "en-gb-x-rp", "en-029", "en-gb-x-gbclan", "en-gb-x-gbcwmd"]
variants = ["m1", "m2", "m3", "m4", "m5", "m6", "m7", "f1", "f2", "f3", "f4", "f5"]
voices = [a + "+" + v for a in accents for v in variants]
rng = random.Random(1234)
test_voices = set(rng.sample(voices, 12))  # held out: never heard in training
def speak(text, voice, speed, pitch):
    wav = subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-p", str(pitch), "--stdout", text],
                         check=True, capture_output=True).stdout
    with wave.open(io.BytesIO(wav)) as w:
        rate, x = w.getframerate(), np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16).astype(np.float64)
    # Band-limited resampling to 16 kHz: the spectrum cut (or zero-padded) to the new length.
    m = int(round(len(x) * 16000 / rate))
    y = np.fft.irfft(np.fft.rfft(x)[: m // 2 + 1], m) * (m / len(x))
    return np.clip(np.round(y), -32768, 32767).astype(np.int16)
lines = {"train": [], "test": []}
for i in range(n):
    voice = rng.choice(voices)
    text = " ".join(rng.choice(words) for _ in range(rng.randint(3, 6)))
    pcm = speak(text, voice, rng.randint(130, 210), rng.randint(25, 75))
    name = f"{i:05d}.wav"
    with wave.open(os.path.join(out, name), "wb") as w:
        w.setnchannels(1); w.setsampwidth(2); w.setframerate(16000); w.writeframes(pcm.tobytes())
    lines["test" if voice in test_voices else "train"].append(f"{name}\t{text}\t{voice}\n")
for split, ls in lines.items():
    with open(os.path.join(out, split + ".tsv"), "w") as f:
        f.write("# path\ttranscript\tspeaker (espeak-ng voice); made by jobs/data/speech_digits.sh\n")
        f.writelines(ls)
print(f"speech_digits: {len(lines['train'])} train / {len(lines['test'])} test utterances, "
      f"{len(voices) - len(test_voices)} training voices, {len(test_voices)} held out", file=sys.stderr)
PY
"$LOCKSTEP" shard --input "audio:$WAVS/train.tsv" --test-input "audio:$WAVS/test.tsv" --output "$OUT" \
  --name speech-digits --val-fraction 0.1 --compression 4
