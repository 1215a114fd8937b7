// audio_import: see audio_import.hpp.
#include "io/import/audio_import.hpp"

#include <fmt/format.h>
#include <samplerate.h>
#include <sndfile.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>

#include "core/base/error.hpp"
#include "core/base/log.hpp"
#include "io/import/log_mel.hpp"
#include "io/import/text_fields.hpp"
#include "io/util/file_util.hpp"

namespace lockstep::io {
namespace {

// A RIFF/WAVE file's audio bytes: what its data chunk declares, and what the file holds after
// the chunk's header; {0, 0} when it is no RIFF/WAVE file, has no data chunk, or declares a
// streamed size (0 or 0xFFFFFFFF). libsndfile reads a WAV cut short as a shorter one, silently.
std::pair<uint64_t, uint64_t> wav_data_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[12];
  if (!in.read(head, 12) || std::memcmp(head, "RIFF", 4) != 0 || std::memcmp(head + 8, "WAVE", 4) != 0) return {0, 0};
  in.seekg(0, std::ios::end);
  const uint64_t size = static_cast<uint64_t>(in.tellg());
  uint64_t at = 12;
  while (at + 8 <= size) {
    char chunk[8];
    in.seekg(static_cast<std::streamoff>(at));
    if (!in.read(chunk, 8)) return {0, 0};
    const uint64_t declared = static_cast<uint8_t>(chunk[4]) | static_cast<uint64_t>(static_cast<uint8_t>(chunk[5])) << 8 |
                              static_cast<uint64_t>(static_cast<uint8_t>(chunk[6])) << 16 |
                              static_cast<uint64_t>(static_cast<uint8_t>(chunk[7])) << 24;
    if (std::memcmp(chunk, "data", 4) == 0)
      return declared == 0 || declared == 0xFFFFFFFFu ? std::pair<uint64_t, uint64_t>{0, 0}
                                                      : std::pair<uint64_t, uint64_t>{declared, size - at - 8};
    at += 8 + declared + (declared & 1);  // chunks are padded to even sizes
  }
  return {0, 0};
}

// An open sound file (RAII over SNDFILE*).
class SoundFile {
 public:
  explicit SoundFile(const std::string& path) : path_(path) {
    std::memset(&info_, 0, sizeof info_);
    require_regular_file(path);
    file_ = sf_open(path.c_str(), SFM_READ, &info_);
    if (!file_) throw Error(path + ": cannot read as audio: " + sf_strerror(nullptr));
    if ((info_.format & SF_FORMAT_TYPEMASK) == SF_FORMAT_WAV) {
      const auto [declared, held] = wav_data_bytes(path);
      if (declared > held) {
        sf_close(file_);
        file_ = nullptr;
        throw Error(path + ": truncated: its header declares " + std::to_string(declared) +
                    " bytes of audio, the file holds " + std::to_string(held) + " (a copy cut short?)");
      }
    }
  }
  ~SoundFile() {
    if (file_) sf_close(file_);
  }
  SoundFile(const SoundFile&) = delete;
  SoundFile& operator=(const SoundFile&) = delete;

  bool resampled(int rate) const { return info_.samplerate != rate; }
  bool downmixed() const { return info_.channels > 1; }

  // Samples at RATE (the features' rate) after resampling, and the one-frame minimum.
  int64_t checked_samples(const LogMel& mel, const std::string& where) const {
    LOCKSTEP_REQUIRE(info_.samplerate >= 1000 && info_.samplerate <= 768000 && info_.channels > 0 &&
                         info_.channels <= 64,
                     where + ": " + std::to_string(info_.samplerate) + " Hz, " + std::to_string(info_.channels) +
                         " channel(s): not audio lockstep reads (1-768 kHz, up to 64 channels)");
    const int rate = mel.options().sample_rate;
    const int64_t n = length_at(rate);
    LOCKSTEP_REQUIRE(n <= (int64_t{1} << 28), where + ": longer than 4 hours at " + std::to_string(rate) + " Hz");
    LOCKSTEP_REQUIRE(mel.frames(n) > 0, where + ": " + std::to_string(info_.frames) + " samples" +
                                            (resampled(rate) ? " at " + std::to_string(info_.samplerate) + " Hz (" +
                                                                   std::to_string(n) + " at " + std::to_string(rate) + " Hz)"
                                                             : "") +
                                            ", shorter than one " + std::to_string(mel.options().window) +
                                            "-sample frame (empty or truncated audio?)");
    return n;
  }

  // Mono at RATE: channels averaged, resampled with libsamplerate's medium sinc converter,
  // exactly length_at(RATE) samples.
  std::vector<float> read_all(int rate) const {
    const int c = info_.channels;
    std::vector<float> raw(static_cast<size_t>(info_.frames) * c);
    const sf_count_t got = sf_readf_float(file_, raw.data(), info_.frames);
    LOCKSTEP_REQUIRE(got == info_.frames, path_ + ": read " + std::to_string(got) + " of " +
                                              std::to_string(info_.frames) + " samples (truncated file?)");
    std::vector<float> mono(static_cast<size_t>(info_.frames));
    for (size_t i = 0; i < mono.size(); ++i) {
      float sum = 0;
      for (int k = 0; k < c; ++k) sum += raw[i * c + k];
      mono[i] = sum / static_cast<float>(c);
    }
    if (info_.samplerate == rate) return mono;
    std::vector<float> out(static_cast<size_t>(length_at(rate)) + 16, 0.0f);
    SRC_DATA d{};
    d.data_in = mono.data();
    d.input_frames = static_cast<long>(mono.size());
    d.data_out = out.data();
    d.output_frames = static_cast<long>(out.size());
    d.src_ratio = static_cast<double>(rate) / info_.samplerate;
    const int err = src_simple(&d, SRC_SINC_MEDIUM_QUALITY, 1);
    LOCKSTEP_REQUIRE(err == 0, path_ + ": resampling from " + std::to_string(info_.samplerate) + " Hz fails: " +
                                   src_strerror(err));
    out.resize(static_cast<size_t>(length_at(rate)));  // zero past what the converter gave
    return out;
  }

 private:
  int64_t length_at(int rate) const {
    return (static_cast<int64_t>(info_.frames) * rate + info_.samplerate / 2) / info_.samplerate;
  }

 public:

 private:
  std::string path_;
  SF_INFO info_;
  SNDFILE* file_ = nullptr;
};

class AudioSource final : public SampleSource {
 public:
  AudioSource(std::string manifest, std::vector<Utterance> utts, DatasetSpec spec, std::vector<int64_t> extras,
              std::vector<int64_t> groups)
      : manifest_(std::move(manifest)),
        utts_(std::move(utts)),
        spec_(std::move(spec)),
        labels_(utts_.size(), 0),
        extras_(std::move(extras)),
        groups_(std::move(groups)) {}
  const DatasetSpec& spec() const override { return spec_; }
  int64_t count() const override { return static_cast<int64_t>(utts_.size()); }
  const std::vector<int64_t>& labels() const override { return labels_; }
  const std::vector<int64_t>& groups() const override { return groups_; }
  const std::vector<int64_t>& extras() const override { return extras_; }
  std::string name() const override { return manifest_; }

  void read(int64_t begin, int64_t n, void* out) override {
    LOCKSTEP_REQUIRE(begin >= 0 && begin + n <= count(), manifest_ + ": read past the end");
    const int64_t t_max = spec_.time_steps(), elems = spec_.sample_elems();
    auto* f = static_cast<float*>(out);
    std::fill(f, f + n * elems, 0.0f);
    for (int64_t i = 0; i < n; ++i) {
      const Utterance& u = utts_[static_cast<size_t>(begin + i)];
      const SoundFile sound(u.path);
      const std::vector<float> wave = sound.read_all(mel_.options().sample_rate);
      mel_.compute(wave.data(), static_cast<int64_t>(wave.size()), f + i * elems, t_max);
    }
  }

 private:
  std::string manifest_;
  std::vector<Utterance> utts_;
  DatasetSpec spec_;
  std::vector<int64_t> labels_, extras_, groups_;
  LogMel mel_;
};

}  // namespace

std::vector<std::string> utf8_chars(const std::string& text, const std::string& where) {
  std::vector<std::string> out;
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    const size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    LOCKSTEP_REQUIRE(len > 0 && i + len <= text.size(), where + ": the transcript is not valid UTF-8");
    for (size_t k = 1; k < len; ++k)
      LOCKSTEP_REQUIRE((static_cast<unsigned char>(text[i + k]) >> 6) == 0x2, where + ": the transcript is not valid UTF-8");
    out.push_back(text.substr(i, len));
    i += len;
  }
  return out;
}

std::vector<Utterance> read_audio_manifest(const std::string& path, bool labeled) {
  require_regular_file(path);
  std::ifstream in(path);
  LOCKSTEP_REQUIRE(in.good(), path + ": cannot open the audio manifest");
  const std::string dir = path.find('/') == std::string::npos ? "." : path.substr(0, path.rfind('/'));
  std::vector<Utterance> out;
  size_t first_fields = 0;  // the first line's, for the speaker column's message
  std::string line;
  for (int no = 1; std::getline(in, line); ++no) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (no == 1 && line.compare(0, 3, "\xEF\xBB\xBF") == 0) line.erase(0, 3);  // a UTF-8 byte-order mark
    if (trim(line).empty() || trim(line)[0] == '#') continue;
    const std::string where = path + ":" + std::to_string(no);
    // A control character (a CR of old Mac line endings: two lines read as one, the next
    // path in the transcript) became a vocabulary token; a tab separates the fields.
    const auto control = std::find_if(line.begin(), line.end(), [](char c) {
      return static_cast<unsigned char>(c) < 0x20 && c != '\t';
    });
    if (control != line.end())
      throw Error(where + fmt::format(": a control character (0x{:02X}) in the line", static_cast<unsigned char>(*control)) +
                  (*control == '\r' ? ": a carriage return alone ends its lines (old Mac line endings? convert them "
                                      "with tr '\\r' '\\n')"
                                    : ""));
    const std::vector<std::string> f = split_fields(line, '\t');
    LOCKSTEP_REQUIRE(f.size() == 2 || f.size() == 3 || (!labeled && f.size() == 1),
                     where + (labeled ? ": expected PATH<TAB>TRANSCRIPT[<TAB>SPEAKER], got "
                                      : ": expected PATH[<TAB>TRANSCRIPT[<TAB>SPEAKER]], got ") +
                         std::to_string(f.size()) + " field(s)");
    Utterance u;
    const std::string p = trim(f[0]);
    LOCKSTEP_REQUIRE(!p.empty(), where + ": empty audio path");
    u.path = p[0] == '/' ? p : dir + "/" + p;
    if (labeled) {
      u.transcript = trim(f[1]);
      LOCKSTEP_REQUIRE(!u.transcript.empty(), where + ": empty transcript");
    }
    if (f.size() == 3) {
      u.speaker = trim(f[2]);
      LOCKSTEP_REQUIRE(!u.speaker.empty(), where + ": empty speaker");
    }
    u.line = no;
    u.source = path;
    // Named from both sides: a tab inside line 1's transcript made it the odd one.
    if (out.empty()) first_fields = f.size();
    LOCKSTEP_REQUIRE(out.empty() || out.front().speaker.empty() == u.speaker.empty(),
                     where + ": a speaker column on some lines only: this line has " + std::to_string(f.size()) +
                         " tab-separated fields, line " + std::to_string(out.front().line) + " has " +
                         std::to_string(first_fields) + " (a tab inside a transcript counts as one)");
    out.push_back(std::move(u));
  }
  LOCKSTEP_REQUIRE(!out.empty(), path + ": no utterances");
  return out;
}

std::vector<InputSplit> open_audio(const std::vector<std::pair<std::string, std::string>>& split_files,
                                   bool librispeech, bool labeled, std::vector<std::string>* files) {
  const LogMel mel;
  std::vector<std::vector<Utterance>> manifests;
  for (const auto& [split, file] : split_files) {
    manifests.push_back(librispeech ? read_librispeech(file) : read_audio_manifest(file, labeled));
    if (!labeled)
      for (Utterance& u : manifests.back()) u.transcript.clear();  // not read: no targets, no vocabulary
  }
  // A file listed twice weighs twice in training, or with two transcripts teaches both; in the
  // training and a test manifest it is tested on what it trained on (video refuses the same).
  // One file however the manifests spell it: by its identity (an absolute and a relative
  // path, a link), by its path text only when it does not exist (refused when read).
  std::map<std::string, const Utterance*> listed;
  for (const std::vector<Utterance>& m : manifests)
    for (const Utterance& u : m) {
      const std::string file = std::filesystem::path(u.path).lexically_normal().string();
      FileIdentity id;
      const std::string key = file_identity(u.path, &id) ? "id " + std::to_string(id.dev) + ":" + std::to_string(id.ino)
                                                         : "path " + file;
      const auto [it, fresh] = listed.emplace(key, &u);
      LOCKSTEP_REQUIRE(fresh, u.source + ":" + std::to_string(u.line) + ": " + file + " is listed twice (also " +
                                  (it->second->source == u.source ? "on line " : "in " + it->second->source + ":") +
                                  std::to_string(it->second->line) + ")");
    }
  // The vocabulary: the training transcripts' characters, sorted.
  std::set<std::string> chars;
  for (const Utterance& u : manifests[0])
    for (const std::string& c : utf8_chars(u.transcript, u.source + ":" + std::to_string(u.line)))
      chars.insert(c);
  const std::vector<std::string> tokens(chars.begin(), chars.end());
  std::map<std::string, int64_t> id;
  for (size_t i = 0; i < tokens.size(); ++i) id[tokens[i]] = static_cast<int64_t>(i);
  // One pass over the headers: frames and target lengths, so every split shares one shape.
  int64_t t_max = 0, l_max = 0, resampled = 0, downmixed = 0;
  std::string first_converted;
  std::vector<std::vector<int64_t>> frames(manifests.size());
  std::vector<std::vector<std::vector<int64_t>>> targets(manifests.size());  // per split, per utterance
  for (size_t s = 0; s < manifests.size(); ++s) {
    for (const Utterance& u : manifests[s]) {
      const std::string where = u.source + ":" + std::to_string(u.line);
      const std::unique_ptr<SoundFile> opened = [&] {
        try {  // the manifest line that names the file, then what is wrong with it
          return std::make_unique<SoundFile>(u.path);
        } catch (const Error& e) {
          throw Error(where + ": " + e.what());
        }
      }();
      const SoundFile& sound = *opened;
      const int64_t n = mel.frames(sound.checked_samples(mel, u.path + " (" + where + ")"));
      resampled += sound.resampled(mel.options().sample_rate) ? 1 : 0;
      downmixed += sound.downmixed() ? 1 : 0;
      if ((sound.resampled(mel.options().sample_rate) || sound.downmixed()) && first_converted.empty())
        first_converted = u.path;
      frames[s].push_back(n);
      files->push_back(u.path);
      t_max = std::max(t_max, n);
      std::vector<int64_t>& ids = targets[s].emplace_back();
      for (const std::string& c : utf8_chars(u.transcript, where)) {
        const auto it = id.find(c);
        LOCKSTEP_REQUIRE(it != id.end(), where + ": character '" + c + "' is not in the vocabulary of the training "
                                             "manifest " + split_files[0].second);
        ids.push_back(it->second);
      }
      l_max = std::max<int64_t>(l_max, static_cast<int64_t>(ids.size()));
    }
  }
  // A transcript that needs more frames than its utterance has (its characters, and a blank
  // between equal neighbours) has no CTC alignment for a model that emits a frame per input
  // frame or fewer: it trains nothing and its loss counts 0. Every one of a split so: refused.
  for (size_t s = 0; s < manifests.size(); ++s) {
    int64_t short_ones = 0;
    std::string first;
    for (size_t i = 0; i < targets[s].size(); ++i) {
      const std::vector<int64_t>& ids = targets[s][i];
      const int64_t needed = ctc_frames_needed(ids.data(), static_cast<int64_t>(ids.size()));
      if (needed <= frames[s][i]) continue;
      if (short_ones++ == 0)
        first = manifests[s][i].path + " (" + std::to_string(frames[s][i]) + " frames for " + std::to_string(needed) + ")";
    }
    if (short_ones == 0) continue;
    const std::string what = split_files[s].second + ": " + std::to_string(short_ones) + " of " +
                             std::to_string(targets[s].size()) + " utterance(s) are shorter in frames than their "
                             "transcripts need (first: " + first + "): CTC cannot align them";
    if (short_ones == static_cast<int64_t>(targets[s].size()))
      throw UsageError(what + "; check that the manifest pairs each file with its own transcript");
    log::warn(what + (split_files[s].first == "train"
                          ? "; they train nothing (lockstep train says how many per epoch)"
                          : "; they are left out of the loss (evaluation counts them in CER/WER and says how many)"));
  }
  if (resampled + downmixed > 0)
    log::info0("note: " + std::to_string(resampled) + " audio file(s) resampled to " +
               std::to_string(mel.options().sample_rate) + " Hz, " + std::to_string(downmixed) +
               " down-mixed to mono (channels averaged; first: " + first_converted + ")");
  // A speaker in both the training and a test manifest makes the test speaker-dependent.
  std::set<std::string> train_speakers;
  for (const Utterance& u : manifests[0]) train_speakers.insert(u.speaker);
  for (size_t s = 1; s < manifests.size(); ++s) {
    std::set<std::string> shared;
    for (const Utterance& u : manifests[s])
      if (!u.speaker.empty() && train_speakers.count(u.speaker)) shared.insert(u.speaker);
    if (!shared.empty())
      log::warn(split_files[s].second + ": " + std::to_string(shared.size()) + " speaker(s) also in the training "
                "manifest (e.g. '" + *shared.begin() + "'): the " + split_files[s].first +
                " split does not measure unseen speakers");
  }
  DatasetSpec spec;
  spec.sample_shape = {mel.options().mels, t_max};
  spec.dtype = DType::kFloat32;
  spec.labeled = false;
  spec.ragged = true;
  spec.max_target_length = l_max;
  spec.tokens = tokens;
  std::vector<InputSplit> out;
  for (size_t s = 0; s < manifests.size(); ++s) {
    std::vector<int64_t> extras, groups;
    std::map<std::string, int64_t> speakers;
    for (size_t i = 0; i < manifests[s].size(); ++i) {
      extras.push_back(frames[s][i]);
      const std::vector<int64_t>& ids = targets[s][i];
      extras.insert(extras.end(), ids.begin(), ids.end());
      extras.insert(extras.end(), static_cast<size_t>(l_max) - ids.size(), int64_t{-1});
      if (!manifests[s][i].speaker.empty())
        groups.push_back(speakers.emplace(manifests[s][i].speaker, static_cast<int64_t>(speakers.size())).first->second);
    }
    out.push_back({split_files[s].first,
                   std::make_unique<AudioSource>(split_files[s].second, std::move(manifests[s]), spec, std::move(extras),
                                                 std::move(groups)),
                   s == 0});
  }
  return out;
}

}  // namespace lockstep::io
