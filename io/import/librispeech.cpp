// librispeech: the LibriSpeech layout as utterances for the audio importer (audio_import.hpp:
// read_librispeech). Transcripts are kept as written (LibriSpeech's are upper case).
#include <algorithm>

#include "core/base/error.hpp"
#include "io/import/audio_import.hpp"
#include "io/import/text_fields.hpp"
#include "io/util/file_util.hpp"

namespace lockstep::io {
namespace {

bool ends_with(const std::string& s, const std::string& e) {
  return s.size() > e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0;
}

// Every *.trans.txt under DIR, in byte order of the paths.
void find_transcripts(const std::string& dir, std::vector<std::string>* out) {
  for (const std::string& name : list_dir(dir)) {
    const std::string path = dir + "/" + name;
    if (is_directory(path)) {
      find_transcripts(path, out);
    } else if (ends_with(name, ".trans.txt")) {
      out->push_back(path);
    }
  }
}

}  // namespace

std::vector<Utterance> read_librispeech(const std::string& dir) {
  LOCKSTEP_REQUIRE(is_directory(dir), "librispeech input " + dir + " is not a directory");
  std::vector<std::string> lists;
  find_transcripts(dir, &lists);
  LOCKSTEP_REQUIRE(!lists.empty(), dir + ": no SPEAKER/CHAPTER/SPEAKER-CHAPTER.trans.txt (the LibriSpeech layout)");
  std::vector<Utterance> out;
  for (const std::string& list : lists) {
    const std::string chapter = parent_dir(list), speaker = base_name(parent_dir(chapter));
    const std::string text = read_text_file(list);
    int no = 0;
    for (size_t at = 0; at < text.size();) {
      size_t end = text.find('\n', at);
      if (end == std::string::npos) end = text.size();
      std::string line = text.substr(at, end - at);
      at = end + 1;
      ++no;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (trim(line).empty()) continue;
      const std::string where = list + ":" + std::to_string(no);
      const size_t space = line.find(' ');
      LOCKSTEP_REQUIRE(space != std::string::npos && space > 0, where + ": expected 'ID TRANSCRIPT'");
      Utterance u;
      const std::string id = line.substr(0, space);
      u.transcript = trim(line.substr(space + 1));
      LOCKSTEP_REQUIRE(!u.transcript.empty(), where + ": empty transcript");
      u.path = chapter + "/" + id + ".flac";
      if (!path_exists(u.path) && path_exists(chapter + "/" + id + ".wav")) u.path = chapter + "/" + id + ".wav";
      LOCKSTEP_REQUIRE(path_exists(u.path), where + ": no " + id + ".flac (or .wav) in " + chapter);
      u.speaker = speaker;
      u.line = no;
      u.source = list;
      out.push_back(std::move(u));
    }
  }
  LOCKSTEP_REQUIRE(!out.empty(), dir + ": the .trans.txt files hold no utterances");
  return out;
}

}  // namespace lockstep::io
