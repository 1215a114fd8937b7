#!/usr/bin/env bash
# Speech end to end: espeak-ng WAVs -> audio:MANIFEST import (log-mel checked against
# torch.fft) -> shard format v2 -> gru + CTC on 2 ranks -> CER/WER (1 rank = 2 ranks) ->
# and every bad audio input refused with one line naming the file.
source "$(dirname "$0")/common.sh" "$@"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
command -v espeak-ng >/dev/null || fail "espeak-ng is not installed (.ci/setup installs it)"
export LOCKSTEP LOCKSTEP_PYTHON=$PYTHON

# 1. A small set, made by the job's own script: 400 utterances.
bash "$ROOT/jobs/data/speech_digits.sh" "$WORK/digits" 400 >"$WORK/make.txt" 2>&1 || { cat "$WORK/make.txt"; fail "speech_digits.sh"; }
expect_rc 0 "$LOCKSTEP" inspect digits --verify
expect_output "ragged: the last axis is time"
expect_output "targets +token sequences \(CTC\), up to [0-9]+ of 1[0-9] tokens"
expect_output "^ok +test-00000-of-00001.h5"
pass "the spoken-digits set imports as shard format v2 and verifies"

# 2. Features: lockstep's C++ log-mel equals a torch.fft reference on a real utterance.
printf '%s\t%s\n' "$WORK/digits.wav/00000.wav" "$(sed -n 2p digits.wav/train.tsv digits.wav/test.tsv | head -1 | cut -f2)" >one.tsv
expect_rc 0 "$LOCKSTEP" shard --input audio:one.tsv --output one --val-fraction 0
"$PYTHON" - one/train-00000-of-00001.h5 "$WORK/digits.wav/00000.wav" <<'PY' || fail "log-mel differs from the torch.fft reference"
import sys, wave, h5py, numpy as np, torch
f = h5py.File(sys.argv[1], "r")
ours, length = f["samples"][0], int(f["lengths"][0])
with wave.open(sys.argv[2]) as w:
    x = torch.tensor(np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16) / 32768.0)
# Kaldi-style frames: 400 samples every 160, Hann-windowed, zero-padded at the end to 512.
frames = x.unfold(0, 400, 160) * torch.hann_window(400, dtype=torch.float64)
spec = torch.fft.rfft(frames, n=512).abs().T ** 2                        # [257, frames]
mel = lambda f: 2595 * np.log10(1 + f / 700)
hz = lambda m: 700 * (10 ** (m / 2595) - 1)
edges = hz(np.linspace(mel(0), mel(8000), 42))
freqs = np.arange(257) * 16000 / 512
fb = np.stack([np.clip(np.minimum((freqs - edges[m]) / (edges[m + 1] - edges[m]),
                                  (edges[m + 2] - freqs) / (edges[m + 2] - edges[m + 1])), 0, None) for m in range(40)])
ref = torch.log(torch.tensor(fb) @ spec + 1e-6).numpy()
assert ref.shape[1] == length, (ref.shape, length)
err = np.abs(ours[:, :length] - ref).max()
assert err < 1e-3, err
assert not ours[:, length:].any(), "padding is not zero"
print("max |lockstep - torch.fft| =", err)
PY
pass "log-mel features equal the torch.fft reference"

# 3. Train gru + CTC on 2 ranks; rows carry CER/WER; the test split is scored once.
ARGS=(--data digits --model gru --model.width 64 --epochs 8 --batch-size 8 --optimizer adam --lr 0.003
      --ckpt.best-metric val_wer --log-every 5)
expect_rc 0 run_mpi 2 train "${ARGS[@]}" --run-dir run --model.sync-bn true
expect_output "length-bucketed \(50 batches per sorting window\)"
expect_output "sync-bn over 1 layer"
expect_output "validation at step [0-9]+ on 'val' \([0-9]+ samples\): loss [0-9.]+ CER [0-9.]+ WER [0-9.]+"
expect_output "finished at step [0-9]+: val_loss [0-9.]+ val_cer [0-9.]+ val_wer [0-9.]+, test_cer [0-9.]+ test_wer [0-9.]+ \(the best val_wer checkpoint"
"$PYTHON" - run/metrics.jsonl <<'PY' || fail "metrics rows of a CTC run"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
epochs = [r for r in rows if r["kind"] == "epoch"]
assert len(epochs) == 8 and all("val_cer" in r and "val_wer" in r and "val_acc" not in r for r in epochs), epochs
assert all("train_acc" not in r for r in rows if r["kind"] == "train")
assert epochs[-1]["train_loss"] < epochs[0]["train_loss"], "CTC loss did not fall"
test = [r for r in rows if r["kind"] == "test"][0]
assert 0 <= test["test_cer"] < 0.9 and test["selected_by"] == "val_wer", test  # it learned something
print("test CER", test["test_cer"], "WER", test["test_wer"])
PY
pass "gru + CTC trains on 2 ranks, CER/WER in every row, best.ckpt by val_wer"

# The LMU acoustic model (jobs/speech_digits_lmu.ini's) trains on the same path.
expect_rc 0 run_mpi 2 train --data digits --model lmu --model.width 32 --epochs 1 --batch-size 8 --optimizer adam \
  --lr 0.003 --ckpt.best-metric val_cer --run-dir lmu
expect_output "finished at step [0-9]+: val_loss [0-9.]+ val_cer [0-9.]+ val_wer [0-9.]+, test_cer"
pass "lmu + CTC trains on 2 ranks"

# 4. CER/WER are all-reduced sums: 1 and 2 ranks score a checkpoint identically.
for np in 1 2; do
  expect_rc 0 run_mpi $np evaluate --data digits --model gru --model.width 64 --checkpoint run/checkpoints/best.ckpt \
    --eval.split test --eval.out eval$np.json
done
"$PYTHON" -c "import json; a, b = (json.load(open(f'eval{n}.json')) for n in (1, 2)); \
assert (a['cer'], a['wer'], a['samples']) == (b['cer'], b['wer'], b['samples']), (a, b); print(a['cer'], a['wer'])" ||
  fail "CER/WER differ between 1 and 2 ranks"
pass "evaluate: CER/WER over 1 rank equal those over 2 ranks"

# 5. The wrong model, metric or tool for sequence data: one clear line each.
expect_rc nonzero "$LOCKSTEP" train --data digits --model cnn1d --ckpt.best-metric val_wer --run-dir bad1
expect_output "classifies whole samples, but dataset 'speech-digits' has sequence targets"
expect_rc nonzero "$LOCKSTEP" train --data digits --model gru --run-dir bad2
expect_output "--ckpt.best-metric val_f1 needs class labels; dataset 'speech-digits' has sequence targets: set --ckpt.best-metric val_wer"
expect_rc nonzero "$LOCKSTEP" predict --data digits --model gru --checkpoint run/checkpoints/best.ckpt --out p.h5
expect_output "has sequence targets; lockstep predict writes class probabilities"
make_slice fm 200 1
expect_rc nonzero "$LOCKSTEP" train --data fm --model gru --run-dir bad3
expect_output "model 'gru' is a CTC sequence model"
pass "wrong model, metric and tool for the data are refused"

# 6. Bad audio input: each refused naming the file (and manifest line), nothing written.
"$PYTHON" - <<'PY'
import wave, numpy as np
def write(name, rate, channels, samples):
    with wave.open(name, "wb") as w:
        w.setnchannels(channels); w.setsampwidth(2); w.setframerate(rate)
        w.writeframes(np.zeros(samples * channels, dtype=np.int16).tobytes())
write("rate.wav", 22050, 1, 22050)
write("stereo.wav", 16000, 2, 16000)
write("empty.wav", 16000, 1, 0)
write("short.wav", 16000, 1, 399)
write("good.wav", 16000, 1, 16000)
open("noise.wav", "wb").write(b"RIFF not really a wave file")
PY
bad() {  # bad MANIFEST_TEXT REGEX [TEST_MANIFEST_TEXT]
  printf "$1" >bad.tsv
  local extra=()
  if [ -n "${3:-}" ]; then printf "$3" >badtest.tsv; extra=(--test-input audio:badtest.tsv); fi
  expect_rc nonzero "$LOCKSTEP" shard --input audio:bad.tsv "${extra[@]}" --output badout
  expect_output "$2"
  [ "$(grep -c . "$WORK/out.txt")" -le 2 ] || { cat "$WORK/out.txt"; fail "more than a one-line error"; }
  [ ! -e badout/manifest.json ] || fail "a failed import wrote a manifest"
}
bad 'rate.wav\tone two\n' "rate.wav \(.*bad.tsv:1\): sample rate 22050 Hz; lockstep reads 16000 Hz mono"
bad 'stereo.wav\tone two\n' "stereo.wav .*: 2 channels; lockstep reads mono"
bad 'empty.wav\tone\n' "empty.wav .*: 0 samples, shorter than one 400-sample frame"
bad 'short.wav\tone\n' "short.wav .*: 399 samples, shorter than one 400-sample frame"
bad 'noise.wav\tone\n' "noise.wav: cannot read as audio"
bad 'missing.wav\tone\n' "missing.wav: cannot read as audio"
bad 'good.wav\t \n' "bad.tsv:1: empty transcript"
bad 'good.wav one two\n' "bad.tsv:1: expected PATH<TAB>TRANSCRIPT\[<TAB>SPEAKER\], got 1 field"
bad 'good.wav\tone\tspk1\ngood.wav\ttwo\n' "bad.tsv:2: a speaker column on some lines only"
bad '# nothing\n' "bad.tsv: no utterances"
bad 'good.wav\tone two\n' "badtest.tsv:1: character 's' is not in the vocabulary of the training manifest" 'good.wav\tsix\n'
pass "bad audio input: one line naming the file, non-zero exit, nothing written"
printf 'good.wav\tone\tspk1\n' >tr.tsv
printf 'good.wav\tone\tspk1\n' >te.tsv
expect_rc 0 "$LOCKSTEP" shard --input audio:tr.tsv --test-input audio:te.tsv --output overlap --val-fraction 0
expect_output "te.tsv: 1 speaker\(s\) also in the training manifest \(e.g. 'spk1'\): the test split does not measure unseen speakers"
pass "a speaker in both train and test manifests is warned about"
echo "speech: all passed"
