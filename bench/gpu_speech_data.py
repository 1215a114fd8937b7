"""Synthetic speech for the GPU report's speech stage (the GPU machines have numpy but no
espeak-ng, datasets or downloads): N utterances of 2-4 digit words ("three one four"), each
character a short tone burst at a pitch of its own (two harmonics, 60-120 ms, random level),
a word gap of silence, per-speaker pitch shift and noise; 16 kHz mono 16-bit WAVs and a
manifest `PATH<TAB>TRANSCRIPT<TAB>SPEAKER` for `lockstep shard --input audio:MANIFEST`, so
lockstep's log-mel import, ragged batches and CTC run as on jobs/speech_digits.sh's data.
Lengths: 80-240 frames of 10 ms, median ~155 (jobs/data/speech_digits.sh's: 80-344, median
165): what the LMU's recurrence steps through.

  python3 bench/gpu_speech_data.py OUT_DIR N [SEED]
"""
import os
import sys
import wave

import numpy as np

WORDS = "zero one two three four five six seven eight nine".split()
RATE = 16000


def main():
    out, n = sys.argv[1], int(sys.argv[2])
    rng = np.random.default_rng(int(sys.argv[3]) if len(sys.argv) > 3 else 0)
    os.makedirs(out, exist_ok=True)
    letters = sorted(set("".join(WORDS)))
    pitch = {c: 180.0 * 1.09 ** i for i, c in enumerate(letters)}
    lines = []
    for u in range(n):
        speaker = int(rng.integers(0, 16))
        shift = 0.85 + 0.02 * speaker
        text = " ".join(WORDS[d] for d in rng.integers(0, 10, size=int(rng.integers(2, 5))))
        parts = [np.zeros(int(RATE * 0.15))]
        for c in text:
            if c == " ":
                parts.append(np.zeros(int(RATE * rng.uniform(0.05, 0.12))))
                continue
            t = np.arange(int(RATE * rng.uniform(0.06, 0.12))) / RATE
            f = pitch[c] * shift
            tone = np.sin(2 * np.pi * f * t) + 0.5 * np.sin(4 * np.pi * f * t)
            parts.append(tone * np.hanning(len(t)) * rng.uniform(0.3, 0.8))
        parts.append(np.zeros(int(RATE * 0.15)))
        x = np.concatenate(parts) + rng.normal(0, 0.01, size=sum(len(p) for p in parts))
        pcm = (np.clip(x, -1, 1) * 32000).astype(np.int16)
        name = f"u{u:05d}.wav"
        with wave.open(os.path.join(out, name), "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(RATE)
            w.writeframes(pcm.tobytes())
        lines.append(f"{name}\t{text}\ts{speaker}\n")
    with open(os.path.join(out, "train.tsv"), "w") as f:
        f.write("# path\ttranscript\tspeaker; made by bench/gpu_speech_data.py\n")
        f.writelines(lines)
    print(f"{out}: {n} utterances")


if __name__ == "__main__":
    main()
