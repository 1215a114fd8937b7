// audio_import: speech for CTC, `lockstep shard --input audio:TRAIN.tsv [--test-input
// audio:TEST.tsv]`.
//
// A manifest is a text file, one utterance per line, tab-separated:
//   PATH<TAB>TRANSCRIPT[<TAB>SPEAKER]
// PATH (relative to the manifest's directory, or absolute) is a 16 kHz mono WAV (or any
// file libsndfile reads); TRANSCRIPT its text; SPEAKER, when every line has one, a group
// id: the validation split then takes whole speakers (import_plan.hpp). Blank lines and
// lines starting with '#' are skipped.
//
// `--no-labels` (speech to transcribe with a trained model): lines of PATH[<TAB>...], only
// the path read.
//
// Each utterance becomes a ragged float32 sample [40, T] of log-mel features (log_mel.hpp;
// T = its frame count, padded to the longest utterance of all the manifests) and a
// sequence target: its characters as token ids. The vocabulary is the set of characters
// (UTF-8 code points) of the training manifest's transcripts, sorted; a test transcript
// with another character is refused.
//
// Audio at another sample rate is resampled to 16 kHz (libsamplerate), stereo averaged to
// mono, with a note. Refused, with one line naming the file (and manifest line): audio
// shorter than one 25 ms frame (zero-length included),
// an unreadable file, an empty transcript, a missing tab, speakers on some lines only.
// Warned: speakers found in both the training and the test manifest.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "io/import/importer.hpp"

namespace lockstep::io {

struct Utterance {
  std::string path;        // resolved
  std::string transcript;
  std::string speaker;     // empty when the manifest has none
  int line = 0;            // in the manifest, for messages
  std::string source;      // the manifest (or LibriSpeech .trans.txt) it comes from
};

// Parses a manifest (PATH names it in messages). Unlabelled (!LABELED, `--no-labels`): a
// line may be PATH alone; a transcript, if any, is not read.
std::vector<Utterance> read_audio_manifest(const std::string& path, bool labeled = true);

// UTF-8 code points of TEXT, each as a string; throws naming WHERE on invalid UTF-8.
std::vector<std::string> utf8_chars(const std::string& text, const std::string& where);

// The LibriSpeech layout under DIR (any depth): SPEAKER/CHAPTER/SPEAKER-CHAPTER.trans.txt,
// lines "ID TRANSCRIPT", audio ID.flac (or ID.wav) beside it; the speaker is the folder
// above the chapter. In byte order of the paths. Throws naming the file and line.
std::vector<Utterance> read_librispeech(const std::string& dir);

// SPLIT_FILES: (split, manifest — or, LIBRISPEECH, a directory) pairs, the first one
// (train) gets --val-fraction and defines the vocabulary. Every audio file read is
// appended to FILES. Audio at another rate is resampled (libsamplerate), several channels
// averaged to one, with one note line saying how many. !LABELED (`--no-labels`): samples
// without targets or a vocabulary (a CTC checkpoint's vocabulary is used by `predict`).
std::vector<InputSplit> open_audio(const std::vector<std::pair<std::string, std::string>>& split_files,
                                   bool librispeech, bool labeled, std::vector<std::string>* files);

}  // namespace lockstep::io
