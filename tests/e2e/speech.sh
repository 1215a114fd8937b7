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

# 2b. The LibriSpeech layout (SPEAKER/CHAPTER/SPEAKER-CHAPTER.trans.txt, FLAC): 12 training
# utterances as 16 kHz mono FLAC give exactly the WAV manifest's features; as 44.1 kHz
# stereo FLAC they are resampled and down-mixed (one note line) to nearly the same.
"$PYTHON" - <<'PY'
import os, subprocess
lines = [l.rstrip("\n").split("\t") for l in open("digits.wav/train.tsv") if not l.startswith("#")][:12]
with open("ls12.tsv", "w") as m:
    for path, text, spk in lines:
        m.write(f"digits.wav/{path}\t{text.upper()}\n")
# (both channels the mono signal: ffmpeg's own up-mix would lower each by 3 dB)
for name, args in (("ls16", ["-ar", "16000", "-ac", "1"]), ("ls44", ["-af", "pan=stereo|c0=c0|c1=c0", "-ar", "44100"])):
    for i, (path, text, spk) in enumerate(lines):
        s = str(100 + i % 3)  # three speakers, one chapter each
        os.makedirs(f"{name}/{s}/7", exist_ok=True)
        uid = f"{s}-7-{i:04d}"
        subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-i", f"digits.wav/{path}", *args,
                        f"{name}/{s}/7/{uid}.flac"], check=True)
        with open(f"{name}/{s}/7/{s}-7.trans.txt", "a") as t:
            t.write(f"{uid} {text.upper()}\n")
PY
expect_rc 0 "$LOCKSTEP" shard --input audio:ls12.tsv --output ls-wav --val-fraction 0
expect_rc 0 "$LOCKSTEP" shard --input librispeech:ls16 --output ls-16 --val-fraction 0
expect_rc 0 "$LOCKSTEP" shard --input librispeech:ls44 --output ls-44 --val-fraction 0
expect_output "note: 12 audio file\(s\) resampled to 16000 Hz, 12 down-mixed to mono"
"$PYTHON" - <<'PY' || fail "the LibriSpeech-layout imports differ from the WAV manifest's"
import json, h5py, numpy as np
def utts(d):
    m = json.load(open(f"{d}/manifest.json"))
    out = {}
    for s in m["splits"]["train"]["shards"]:
        with h5py.File(f"{d}/{s['file']}") as h:
            for x, length, tokens in zip(h["samples"][:], h["lengths"][:], h["targets"][:]):
                out["".join(m["tokens"][t] for t in tokens if t >= 0)] = x[:, :length]
    return out
wav, flac16, flac44 = utts("ls-wav"), utts("ls-16"), utts("ls-44")
assert set(wav) == set(flac16) == set(flac44) and len(wav) == 12, (len(wav), len(flac16), len(flac44))
worst = 0.0
for text, x in wav.items():
    assert np.array_equal(x, flac16[text]), text
    y = flac44[text]
    t = min(x.shape[1], y.shape[1])
    assert abs(x.shape[1] - y.shape[1]) <= 1, (text, x.shape, y.shape)
    worst = max(worst, float(np.median(np.abs(x[:, :t] - y[:, :t]))))
print(f"librispeech: 16 kHz FLAC == WAV features; 44.1 kHz stereo resampled: median |d log-mel| <= {worst:.4f}")
assert worst < 0.05, worst
PY
pass "librispeech:DIR (FLAC) imports as the WAV manifest does; other rates and stereo resampled, down-mixed"

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
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
acc = EventAccumulator(sys.argv[1].replace("metrics.jsonl", "tb")); acc.Reload()
tags = set(acc.Tags()["scalars"])
assert {"val/cer", "val/wer", "test/cer", "test/wer"} <= tags, tags  # TensorBoard carries them too
assert len(acc.Scalars("val/cer")) == 8, acc.Scalars("val/cer")
PY
pass "gru + CTC trains on 2 ranks, CER/WER in every row and in TensorBoard, best.ckpt by val_wer"

# The LMU acoustic model (jobs/speech_digits_lmu.ini's) trains on the same path.
expect_rc 0 run_mpi 2 train --data digits --model lmu --model.width 32 --epochs 1 --batch-size 8 --optimizer adam \
  --lr 0.003 --ckpt.best-metric val_cer --run-dir lmu
expect_output "finished at step [0-9]+: val_loss [0-9.]+ val_cer [0-9.]+ val_wer [0-9.]+, test_cer"
pass "lmu + CTC trains on 2 ranks"

# Your own CTC model: a PyTorch module (docs/python/examples/gru_ctc.py) scripted by
# docs/python/script_model.py, trained at 2 ranks through --model torchscript:PATH.
tokens=$("$PYTHON" -c "import json; print(len(json.load(open('digits/manifest.json'))['tokens']))")
"$PYTHON" "$ROOT/docs/python/script_model.py" --file "$ROOT/docs/python/examples/gru_ctc.py" --class MyGruCtc \
  --args "{\"features\": 40, \"tokens\": $tokens, \"hidden\": 64}" --sample-shape 40,100 --out gru_ctc.pt >script.txt 2>&1 ||
  { cat script.txt; fail "script_model.py"; }
grep -q "CTC: forward with 2 input(s)" script.txt || { cat script.txt; fail "script_model.py did not see a CTC signature"; }
expect_rc 0 run_mpi 2 train --data digits --model torchscript:gru_ctc.pt --epochs 6 --batch-size 8 --optimizer adam \
  --lr 0.003 --ckpt.best-metric val_cer --log-every 5 --run-dir byo
expect_output "finished at step [0-9]+: val_loss [0-9.]+ val_cer [0-9.]+ val_wer [0-9.]+, test_cer"
"$PYTHON" - byo/metrics.jsonl <<'PY' || fail "the scripted CTC model did not learn"
import json, sys
test = [json.loads(l) for l in open(sys.argv[1]) if '"kind":"test"' in l][0]
print("your scripted GRU-CTC after 6 epochs: test CER", test["test_cer"], "WER", test["test_wer"])
assert test["test_cer"] < 0.5, test
PY
"$PYTHON" "$ROOT/docs/python/script_model.py" --file "$ROOT/docs/python/examples/gru_ctc.py" --class MyGruCtc \
  --args "{\"features\": 40, \"tokens\": 3}" --out wrong.pt >/dev/null
expect_rc 2 run_mpi 1 train --data digits --model torchscript:wrong.pt --epochs 1 --ckpt.best-metric val_wer --run-dir bad-byo
expect_output "forward returns logits of shape \[2, [0-9]+, 4\] for a batch of 2, expected \[2, T, $((tokens + 1))\]"
# A TorchScript model is code: a checkpoint's (or an export's) metadata naming one never makes
# lockstep load it (a safetensors file from elsewhere could name any file); the user names it.
expect_rc 2 run_mpi 1 evaluate --data digits --checkpoint byo/checkpoints/best.ckpt --eval.split test
expect_output "byo/checkpoints/best.ckpt: its model is torchscript:gru_ctc.pt, a TorchScript file: lockstep loads one only when you name it"
expect_rc 2 "$LOCKSTEP" export --checkpoint byo/checkpoints/best.ckpt --out byo.safetensors
expect_rc 0 "$LOCKSTEP" export --checkpoint byo/checkpoints/best.ckpt --model torchscript:gru_ctc.pt --out byo.safetensors
expect_rc 2 run_mpi 1 predict --data digits --checkpoint byo.safetensors --split test --out byo-tr.csv
[ ! -e byo-tr.csv ] || fail "predict loaded the TorchScript file a safetensors file's metadata named"
mkdir -p elsewhere && cp gru_ctc.pt elsewhere/
expect_rc 0 run_mpi 1 predict --data digits --checkpoint byo.safetensors --model torchscript:elsewhere/gru_ctc.pt \
  --split test --out byo-tr.csv
pass "a scripted PyTorch GRU-CTC (x, lengths) -> (logits, out_lengths) trains at 2 ranks; a wrong vocabulary is refused; its file is loaded for inference only when named"

# 4. CER/WER are all-reduced sums: 1 and 2 ranks score a checkpoint identically.
for np in 1 2; do
  expect_rc 0 run_mpi $np evaluate --data digits --model gru --model.width 64 --checkpoint run/checkpoints/best.ckpt \
    --eval.split test --eval.out eval$np.json
done
"$PYTHON" -c "import json; a, b = (json.load(open(f'eval{n}.json')) for n in (1, 2)); \
assert (a['cer'], a['wer'], a['samples'], a['unaligned']) == (b['cer'], b['wer'], b['samples'], b['unaligned']), (a, b); \
print(a['cer'], a['wer'], a['unaligned'])" ||
  fail "CER/WER differ between 1 and 2 ranks"
pass "evaluate: CER/WER over 1 rank equal those over 2 ranks"

# 4b. predict transcribes (greedy, in sample order) with the CER/WER evaluate reports; the
# .h5 holds per-frame log-probabilities, which the exported model's PyTorch reference
# module (docs/python: GruCtc, Lmu) reproduces; for gru and the LMU.
expect_rc 0 run_mpi 2 predict --data digits --checkpoint run/checkpoints/best.ckpt --split test --out tr.csv
expect_output "greedy transcriptions\); CER [0-9.]+ WER [0-9.]+ against the references"
cer=$(grep -o "CER [0-9.]*" out.txt | head -1 | cut -d' ' -f2)
"$PYTHON" - "$cer" <<'PY' || fail "predict's transcriptions or CER differ from evaluate's"
import csv, json, sys
rows = list(csv.DictReader(open("tr.csv")))
e = json.load(open("eval2.json"))
assert [int(r["index"]) for r in rows] == list(range(e["samples"])), "rows are not in sample order"
assert all(r["reference"] for r in rows) and any(r["transcript"] for r in rows), rows[:3]
assert abs(float(sys.argv[1]) - e["cer"]) < 1e-4, (sys.argv[1], e["cer"])
print(f"{len(rows)} transcriptions, CER {sys.argv[1]} (evaluate: {e['cer']:.4f}); e.g.", rows[0])
PY
for m in run lmu; do
  expect_rc 0 "$LOCKSTEP" export --checkpoint $m/checkpoints/best.ckpt --out $m.safetensors
  expect_rc 0 run_mpi 2 predict --data digits --checkpoint $m.safetensors --split test --out $m-tr.h5
  "$PYTHON" "$ROOT/tests/e2e/check_export.py" "$ROOT/docs/python" $m.safetensors digits test $m-tr.h5 ||
    fail "$m: the PyTorch reference module disagrees with lockstep predict"
done
pass "predict transcribes CTC models (CER as evaluate); gru and lmu exports load into their PyTorch modules"

# 4c. Unlabelled speech (`shard --no-labels`, a manifest of paths): predict transcribes it
# with the checkpoint's vocabulary, in manifest order, the labelled test split's transcriptions.
grep -v '^#' digits.wav/test.tsv | cut -f1 >digits.wav/unl.tsv
expect_rc 0 "$LOCKSTEP" shard --input audio:digits.wav/unl.tsv --no-labels --output unl
expect_rc 0 "$LOCKSTEP" inspect unl
expect_output "none \(unlabeled data\)"
expect_rc 0 run_mpi 2 predict --data unl --checkpoint run/checkpoints/best.ckpt --split train --out unl.csv
expect_output "greedy transcriptions\); unlabelled data: no references to score against"
expect_rc 0 "$LOCKSTEP" shard --input audio:digits.wav/test.tsv --output ordered --no-shuffle --val-fraction 0
expect_rc 0 run_mpi 2 predict --data ordered --checkpoint run/checkpoints/best.ckpt --split train --out ordered.csv
"$PYTHON" - <<'PY' || fail "unlabelled speech: transcriptions differ from the labelled split's"
import csv
u, o = list(csv.DictReader(open("unl.csv"))), list(csv.DictReader(open("ordered.csv")))
assert list(u[0].keys()) == ["index", "transcript"], u[0]
assert [r["transcript"] for r in u] == [r["transcript"] for r in o], "transcriptions differ"
print(len(u), "utterances transcribed in manifest order, e.g.", u[0])
PY
expect_rc 2 "$LOCKSTEP" predict --data unl --checkpoint run/checkpoints/best.ckpt --split train --out p.csv \
  --predict.top-k 3
expect_output "--predict.top-k is for class outputs; run/checkpoints/best.ckpt is a CTC model"
expect_rc 2 "$LOCKSTEP" shard --input idx:digits --no-labels --output bad
expect_output "--no-labels is for video:, audio:, librispeech: and csv: inputs"
pass "unlabelled speech (--no-labels): predict transcribes it in manifest order with the checkpoint's vocabulary"

# 5. The wrong model, metric or tool for sequence data: one clear line each.
expect_rc nonzero "$LOCKSTEP" train --data digits --model cnn1d --ckpt.best-metric val_wer --run-dir bad1
expect_output "classifies whole samples, but dataset 'speech-digits' has sequence targets"
expect_rc nonzero "$LOCKSTEP" train --data digits --model gru --run-dir bad2
expect_output "--ckpt.best-metric val_f1 needs class labels; dataset 'speech-digits' has sequence targets: set --ckpt.best-metric val_wer"
expect_rc 2 "$LOCKSTEP" predict --data digits --model gru --checkpoint run/checkpoints/best.ckpt --out p.csv \
  --predict.top-k 3
expect_output "--predict.top-k is for class outputs; dataset 'speech-digits' has sequence targets"
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
write("good2.wav", 16000, 1, 16000)
write("tiny.wav", 16000, 1, 800)
write("rate_short.wav", 22050, 2, 500)
open("noise.wav", "wb").write(b"RIFF not really a wave file")
data = open("good.wav", "rb").read()
open("cut.wav", "wb").write(data[: len(data) // 3])  # a copy cut short: libsndfile reads it as a short file
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
bad 'rate_short.wav\tone\n' "rate_short.wav \(.*bad.tsv:1\): 500 samples at 22050 Hz \(363 at 16000 Hz\), shorter than one 400-sample frame"
bad 'empty.wav\tone\n' "empty.wav .*: 0 samples, shorter than one 400-sample frame"
bad 'short.wav\tone\n' "short.wav .*: 399 samples, shorter than one 400-sample frame"
bad 'noise.wav\tone\n' "noise.wav: cannot read as audio"
bad 'cut.wav\tone\n' "cut.wav: truncated: its header declares 32000 bytes of audio, the file holds [0-9]+"
bad 'missing.wav\tone\n' "bad.tsv:1: .*missing.wav: cannot read as audio"
bad 'good.wav\tone\rgood.wav\ttwo\r' "bad.tsv:1: a control character \(0x0D\) in the line: a carriage return alone ends its lines"
printf '\xef\xbb\xbfgood.wav\tone\ngood2.wav\ttwo\n' >bom.tsv  # Excel's UTF-8 mark before the first path
expect_rc 0 "$LOCKSTEP" shard --input audio:bom.tsv --output bomout --val-fraction 0
bad 'good.wav\t \n' "bad.tsv:1: empty transcript"
bad 'good.wav one two\n' "bad.tsv:1: expected PATH<TAB>TRANSCRIPT\[<TAB>SPEAKER\], got 1 field"
bad 'good.wav\tone\tspk1\ngood.wav\ttwo\n' "bad.tsv:2: a speaker column on some lines only"
bad '# nothing\n' "bad.tsv: no utterances"
# A transcript longer in CTC's frames than its audio trained nothing with a loss of exactly 0.
bad 'tiny.wav\tone two\n' "bad.tsv: 1 of 1 utterance\(s\) are shorter in frames than their transcripts need \(first: .*tiny.wav \([0-9]+ frames for 7\)\): CTC cannot align them"
bad 'good.wav\tone two\n' "badtest.tsv:1: character 's' is not in the vocabulary of the training manifest" 'good2.wav\tsix\n'
# A file listed twice trained twice (with two transcripts, on both); in both manifests it was tested on.
bad 'good.wav\tone\ngood2.wav\ttwo\n./good.wav\tsix\n' "bad.tsv:3: good.wav is listed twice \\(also on line 1\\)"
bad 'good.wav\tone\n' "badtest.tsv:1: good.wav is listed twice \\(also in .*bad.tsv:1\\)" 'good.wav\tone\n'
# ... however it is spelled: an absolute path, a link (compared by the file's identity).
ln -sf good.wav link.wav
bad "good.wav\tone\n$PWD/good.wav\tsix\n" "bad.tsv:2: .*/good.wav is listed twice \\(also on line 1\\)"
bad 'good.wav\tone\n' "badtest.tsv:1: .*link.wav is listed twice \\(also in .*bad.tsv:1\\)" 'link.wav\tone\n'
bad 'good.wav\tone\ttwo\ngood2.wav\tsix\n' "bad.tsv:2: a speaker column on some lines only: this line has 2 tab-separated fields, line 1 has 3"
pass "bad audio input: one line naming the file, non-zero exit, nothing written"
printf 'good.wav\tone\tspk1\n' >tr.tsv
printf 'good2.wav\tone\tspk1\n' >te.tsv
expect_rc 0 "$LOCKSTEP" shard --input audio:tr.tsv --test-input audio:te.tsv --output overlap --val-fraction 0
expect_output "te.tsv: 1 speaker\(s\) also in the training manifest \(e.g. 'spk1'\): the test split does not measure unseen speakers"
pass "a speaker in both train and test manifests is warned about"
echo "speech: all passed"
