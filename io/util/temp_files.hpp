// temp_files: lockstep's mark on the temporary files it writes, and the one rule for
// removing them: a file is removed only when it carries the mark and its writer is gone.
//
// Every file lockstep writes goes first to PATH.lockstep-tmp.PID.HOST (write_file_atomic,
// the shard writer, predictions, the import's staging files), then is renamed over PATH.
// A writer killed in between leaves that file. remove_dead_temps removes such a file when
//   1. its name carries the mark (a user's "notes.tmp.123" or "thesis.tex.tmp.4242" does
//      not: it is never touched), and
//   2. its writer is gone: HOST is this host and no process PID runs here (kill(PID, 0)
//      says ESRCH; a PID in use, whoever it now is, keeps the file), or the writer is the
//      one that held the directory's lock before us (DirLock::previous(): the kernel
//      released that lock, so the process died, on whatever host).
// A marked file whose writer may still run (another host, a live PID) is kept and listed,
// so that two jobs never delete each other's half-written files.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace lockstep::io {

// A process that writes files: its PID and host name (gethostname).
struct Writer {
  long pid = 0;
  std::string host;
  bool operator==(const Writer& o) const { return pid == o.pid && host == o.host; }
};
Writer this_writer();

// The last steps of writing TMP in place of PATH: flush, fsync and close F (set to nullptr,
// whatever happens), then rename TMP over PATH and fsync PATH's directory, so PATH appears
// whole or not at all. Throw naming TMP (a failed rename removes it).
void close_synced(std::FILE*& f, const std::string& tmp);
void commit_temp(const std::string& tmp, const std::string& path);

// PATH.lockstep-tmp.PID.HOST for this process. A file name too long to carry the mark within
// NAME_MAX (the folder's, name_max) is cut to its temp_stem: its first bytes (whole UTF-8
// characters) and '~' and a hash of the whole name.
std::string temp_name_for(const std::string& path);
std::string temp_stem(const std::string& name, size_t name_max = 255);
size_t name_max(const std::string& dir);  // pathconf's _PC_NAME_MAX, 255 when it says nothing
// Whether NAME (a file name, no folder) carries the mark; fills WHO (its writer) and
// TARGET (the name it was to be renamed to, as its temp_stem) when given.
bool parse_temp_name(const std::string& name, Writer* who = nullptr, std::string* target = nullptr);

struct TempSweep {
  std::vector<std::string> removed;  // names removed: marked, writer gone
  std::vector<std::string> kept;     // marked, but the writer may still be running
};
// Removes DIR's marked temp files whose writer is gone (the rule above). RELEASED is the
// writer whose lock on DIR this process now holds (pid 0 when none is known). TARGET: only
// the temp files of that name (an output's, OutputGuard), "" for all.
TempSweep remove_dead_temps(const std::string& dir, const Writer& released = {}, const std::string& target = "");

}  // namespace lockstep::io
