// file_util: the POSIX file operations lockstep's durability rests on.
//
// write_file_atomic: 1. write PATH.tmp.PID, 2. fsync it, 3. rename over PATH,
// 4. fsync the directory. A crash at any point leaves either the old PATH or the new one,
// never a torn file under the final name.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lockstep::io {

bool path_exists(const std::string& path);
bool is_directory(const std::string& path);
void make_dirs(const std::string& path);  // mkdir -p; throws naming PATH
std::string read_text_file(const std::string& path);
std::vector<char> read_binary_file(const std::string& path);
void write_file_atomic(const std::string& path, const std::string& data);
void fsync_path(const std::string& path);     // a file or a directory
std::string temp_name_for(const std::string& path);  // PATH.tmp.PID
std::vector<std::string> list_dir(const std::string& dir);  // names, sorted
void remove_file(const std::string& path);  // no error if missing
uint32_t crc32_of_file(const std::string& path);
int64_t file_size(const std::string& path);
std::string parent_dir(const std::string& path);

}  // namespace lockstep::io
