// file_util: see file_util.hpp.
#include "io/util/file_util.hpp"

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/base/error.hpp"
#include "io/util/temp_files.hpp"

namespace lockstep::io {

namespace fs = std::filesystem;

namespace {
std::string errno_text() { return std::strerror(errno); }
}  // namespace

bool path_exists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

bool is_directory(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

void make_dirs(const std::string& path) {
  if (path.empty() || is_directory(path)) return;
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) throw Error("cannot create directory " + path + ": " + ec.message());
}

std::string parent_dir(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

void require_regular_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return;
  const char* kind = S_ISFIFO(st.st_mode)                         ? "a FIFO"
                     : S_ISDIR(st.st_mode)                        ? "a directory"
                     : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                     : S_ISSOCK(st.st_mode)                       ? "a socket"
                                                                  : "not a file";
  throw Error(path + ": not a regular file (" + kind + "); lockstep reads its inputs only from regular files");
}

std::string read_text_file(const std::string& path) {
  require_regular_file(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read " + path + ": " + errno_text());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<char> read_binary_file(const std::string& path) {
  require_regular_file(path);
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw Error("cannot read " + path + ": " + errno_text());
  std::vector<char> out(static_cast<size_t>(in.tellg()));
  in.seekg(0);
  if (!out.empty() && !in.read(out.data(), static_cast<std::streamsize>(out.size())))
    throw Error("cannot read " + path + ": short read");
  return out;
}

void fsync_path(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw Error("cannot open " + path + " to fsync: " + errno_text());
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0 && errno != EINVAL) throw Error("fsync " + path + ": " + errno_text());
}

void write_all(int fd, const std::string& data, const std::string& what) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error("cannot write " + what + ": " + errno_text());
    done += static_cast<size_t>(n);
  }
}

namespace {

// Steps 1-2 of write_file_atomic: PATH's temp file written and synced; its name.
std::string write_synced_temp(const std::string& path, const std::string& data) {
  const std::string tmp = temp_name_for(path);
  ::unlink(tmp.c_str());  // a stale temp (or a link planted under its name) goes first
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0664);
  if (fd < 0) throw Error("cannot write " + tmp + ": " + errno_text());
  try {
    write_all(fd, data, tmp);
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const std::string why = errno_text();
    ::unlink(tmp.c_str());
    throw Error("cannot flush " + tmp + ": " + why);
  }
  return tmp;
}

}  // namespace

void write_file_atomic(const std::string& path, const std::string& data) {
  commit_temp(write_synced_temp(path, data), path);
}

void write_files_atomic(const std::vector<std::pair<std::string, std::string>>& files) {
  std::vector<std::string> temps;
  try {
    for (const auto& [path, data] : files) temps.push_back(write_synced_temp(path, data));
  } catch (...) {
    for (const std::string& t : temps) ::unlink(t.c_str());
    throw;
  }
  for (size_t i = 0; i < files.size(); ++i) commit_temp(temps[i], files[i].first);
}

std::string base_name(const std::string& path) { return fs::path(path).filename().string(); }

bool is_symlink(const std::string& path) {
  std::error_code ec;
  return fs::is_symlink(fs::symlink_status(path, ec));
}

std::string canonical_path(const std::string& path) {
  std::error_code ec;
  const fs::path real = fs::canonical(path, ec);
  return ec ? path : real.string();
}

bool path_is_inside(const std::string& path, const std::string& dir) {
  const std::string p = canonical_path(path), d = canonical_path(dir);
  return p == d || (p.size() > d.size() && p.compare(0, d.size(), d) == 0 && (d == "/" || p[d.size()] == '/'));
}

int open_append_nofollow(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0664);
  if (fd >= 0) return fd;
  if (errno == ELOOP) throw Error(path + " is a symbolic link: lockstep does not write through links in a run directory");
  throw Error("cannot open " + path + " for appending: " + errno_text());
}

bool file_identity(const std::string& path, FileIdentity* out) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return false;
  out->dev = static_cast<uint64_t>(st.st_dev);
  out->ino = static_cast<uint64_t>(st.st_ino);
  return true;
}

std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    out.push_back(it->path().filename().string());
  if (ec) throw Error("cannot list " + dir + ": " + ec.message());
  std::sort(out.begin(), out.end());
  return out;
}

void remove_file(const std::string& path) { ::unlink(path.c_str()); }

namespace {
thread_local std::string t_remove_failed;  // remove_tree's walk: the path that could not be removed
}  // namespace

void remove_tree(const std::string& path) {
  // Depth first, links not followed (FTW_PHYS), files before their directory (FTW_DEPTH).
  const auto remove_one = [](const char* p, const struct stat*, int type, struct FTW*) -> int {
    const int rc = type == FTW_DP || type == FTW_DNR ? ::rmdir(p) : ::unlink(p);  // DNR: unreadable
    if (rc == 0 || errno == ENOENT) return 0;
    t_remove_failed = p;
    return -1;
  };
  struct stat st;
  // A walk cut short by an entry that vanished under it (ENOENT) is walked again.
  for (int attempt = 0; attempt < 3 && ::lstat(path.c_str(), &st) == 0; ++attempt) {
    t_remove_failed = path;
    if (::nftw(path.c_str(), remove_one, 16, FTW_DEPTH | FTW_PHYS) != 0 && errno != ENOENT)
      throw Error("cannot remove " + t_remove_failed + ": " + errno_text());
  }
  if (::lstat(path.c_str(), &st) == 0) throw Error("cannot remove " + path + ": it keeps reappearing");
  if (errno != ENOENT) throw Error("cannot remove " + path + ": " + errno_text());
}

int64_t file_size(const std::string& path) {
  std::error_code ec;
  const auto n = fs::file_size(path, ec);
  if (ec) throw Error("cannot stat " + path + ": " + ec.message());
  return static_cast<int64_t>(n);
}

uint32_t crc32_of_file(const std::string& path) {
  require_regular_file(path);
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw Error("cannot read " + path + ": " + errno_text());
  std::vector<unsigned char> buf(1 << 20);
  uLong crc = ::crc32(0L, Z_NULL, 0);
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string why = errno_text();
      ::close(fd);
      throw Error("cannot read " + path + ": " + why);
    }
    if (n == 0) break;
    crc = ::crc32(crc, buf.data(), static_cast<uInt>(n));
  }
  ::close(fd);
  return static_cast<uint32_t>(crc);
}

}  // namespace lockstep::io
