// file_util: the POSIX file operations lockstep's durability rests on.
//
// write_file_atomic: 1. create PATH's marked temp file (temp_files.hpp) exclusively (O_EXCL | O_NOFOLLOW: a planted
// file or link of that name is removed, never written through), 2. write and fsync it,
// 3. rename over PATH (rename replaces a link at PATH, it does not follow it), 4. fsync
// the directory. A crash at any point leaves either the old PATH or the new one, never a
// torn file under the final name; a killed writer leaves its marked temp file, which
// remove_dead_temps cleans up once the directory's owner holds its lock.
//
// Paths are bytes: nothing here assumes UTF-8. Directory and path queries use
// std::filesystem (error codes, never its exceptions); what durability or safety rests on —
// the atomic write, fsync, O_NOFOLLOW/O_EXCL opens — uses POSIX calls directly.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace lockstep::io {

bool path_exists(const std::string& path);
bool is_directory(const std::string& path);
void make_dirs(const std::string& path);  // mkdir -p; throws naming PATH
// Every reader of an input calls this before opening PATH: a FIFO or a device would block
// open() or read() forever (under mpirun outside any collective, where no watchdog sees
// it) and a directory fails obscurely. Throws "PATH: not a regular file (a FIFO) ...".
// A missing file passes: each reader names that its own way.
void require_regular_file(const std::string& path);
std::string read_text_file(const std::string& path);  // both check require_regular_file
std::vector<char> read_binary_file(const std::string& path);
void write_file_atomic(const std::string& path, const std::string& data);
// Several (PATH, DATA) written as one: every temp file written and synced before the first
// rename, so a full disk leaves the old set, not old and new files mixed (a report's
// table beside another run's curves). Throws naming the temp file that failed.
void write_files_atomic(const std::vector<std::pair<std::string, std::string>>& files);
void fsync_path(const std::string& path);     // a file or a directory
std::vector<std::string> list_dir(const std::string& dir);  // names, sorted
void remove_file(const std::string& path);  // no error if missing
// rm -rf PATH (links removed, never followed; no error if missing; throws naming what could
// not be removed). Not std::filesystem::remove_all: the torch wheel's libtorch.so exports its
// own copy, which the dynamic linker picks, and that copy calls a libstdc++ 13 function
// (recursive_directory_iterator::__erase) that Debian 12's libstdc++ lacks: a call to
// address 0 on any non-empty directory (tests/layering.py refuses it in lockstep's sources).
void remove_tree(const std::string& path);
uint32_t crc32_of_file(const std::string& path);
int64_t file_size(const std::string& path);
std::string parent_dir(const std::string& path);
std::string base_name(const std::string& path);
bool is_symlink(const std::string& path);   // lstat: PATH itself is a symbolic link
// Canonical absolute path (realpath); PATH itself when it does not exist yet.
std::string canonical_path(const std::string& path);
// Whether PATH is DIR or lies inside it (both canonicalised).
bool path_is_inside(const std::string& path, const std::string& dir);

// Opens PATH for appending (created 0664 if missing) without following a link at PATH;
// returns the descriptor. Throws naming PATH ("... is a symbolic link").
int open_append_nofollow(const std::string& path);
// Writes all of DATA to FD (one write(2) where the kernel allows: O_APPEND rows stay
// whole lines); WHAT names the file in errors.
void write_all(int fd, const std::string& data, const std::string& what);

// Device and inode of a path (stat): a directory deleted and recreated under the same
// name has another identity.
struct FileIdentity {
  uint64_t dev = 0, ino = 0;
  bool operator==(const FileIdentity& o) const { return dev == o.dev && ino == o.ino; }
  bool operator!=(const FileIdentity& o) const { return !(*this == o); }
};
// False when PATH does not exist.
bool file_identity(const std::string& path, FileIdentity* out);

}  // namespace lockstep::io
