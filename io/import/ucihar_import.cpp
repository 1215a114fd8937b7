// ucihar_import: see ucihar_import.hpp.
#include "io/import/ucihar_import.hpp"
#include "io/util/file_util.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>

#include "core/base/error.hpp"
#include "io/import/text_fields.hpp"

namespace lockstep::io {
namespace {

bool is_dir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// A whitespace-separated number matrix: every non-blank line the same width.
struct Matrix {
  int64_t rows = 0, cols = 0;
  std::vector<float> values;
};

Matrix read_matrix(const std::string& path) {
  require_regular_file(path);
  std::ifstream in(path);
  LOCKSTEP_REQUIRE(in.good(), "cannot read " + path);
  Matrix m;
  std::string line;
  int64_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    const std::vector<std::string> fields = split_fields(line, ' ');
    const int64_t width = static_cast<int64_t>(fields.size());
    for (int64_t k = 0; k < width; ++k) {
      const std::string& field = fields[static_cast<size_t>(k)];
      float v = 0;
      LOCKSTEP_REQUIRE(parse_float(field, &v) && std::isfinite(v),
                       path + ":" + std::to_string(lineno) + ": value " + std::to_string(k + 1) + " '" +
                           field.substr(0, 40) + "' is not a finite number");
      m.values.push_back(v);
    }
    if (width == 0) continue;  // blank line
    if (m.rows == 0) m.cols = width;
    LOCKSTEP_REQUIRE(width == m.cols, path + ":" + std::to_string(lineno) + ": " +
                                          std::to_string(width) + " values, the first line has " +
                                          std::to_string(m.cols));
    ++m.rows;
  }
  LOCKSTEP_REQUIRE(!in.bad(), "cannot read " + path);
  LOCKSTEP_REQUIRE(m.rows > 0, path + ": no data lines");
  return m;
}

// One integer per line (ids): returns them, checking each is integral.
std::vector<int64_t> read_ids(const std::string& path) {
  const Matrix m = read_matrix(path);
  LOCKSTEP_REQUIRE(m.cols == 1,
                   path + ": " + std::to_string(m.cols) + " values per line, expected one id");
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < m.rows; ++i) {
    const float v = m.values[static_cast<size_t>(i)];
    LOCKSTEP_REQUIRE(
        v == std::floor(v) && std::fabs(v) < 1e9f,
        path + ":" + std::to_string(i + 1) + ": '" + std::to_string(v) + "' is not an integer id");
    ids.push_back(static_cast<int64_t>(v));
  }
  return ids;
}

// activity_labels.txt: "ID NAME" lines, ids 1..K in any order, each once.
std::vector<std::string> read_activities(const std::string& path) {
  require_regular_file(path);
  std::ifstream in(path);
  LOCKSTEP_REQUIRE(in.good(), "cannot read " + path + " (the UCI-HAR directory's activity names)");
  std::map<int64_t, std::string> names;
  std::string line;
  int64_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    char* stop = nullptr;
    errno = 0;
    const long long id = std::strtoll(line.c_str(), &stop, 10);
    const std::string name = trim(stop);
    LOCKSTEP_REQUIRE(
        stop != line.c_str() && errno == 0 && id >= 1 && id <= 1000 && !name.empty(),
        path + ":" + std::to_string(lineno) + ": expected 'ID NAME' with ID in 1..1000");
    LOCKSTEP_REQUIRE(names.emplace(id, name).second, path + ":" + std::to_string(lineno) +
                                                         ": activity id " + std::to_string(id) +
                                                         " appears twice");
  }
  LOCKSTEP_REQUIRE(!names.empty(), path + ": no activities");
  LOCKSTEP_REQUIRE(names.rbegin()->first == static_cast<int64_t>(names.size()),
                   path + ": activity ids must be 1.." + std::to_string(names.size()));
  std::vector<std::string> out;
  for (const auto& [id, name] : names) out.push_back(name);
  return out;
}

const char* const kInertial[] = {"body_acc_x",  "body_acc_y",  "body_acc_z",
                                 "body_gyro_x", "body_gyro_y", "body_gyro_z",
                                 "total_acc_x", "total_acc_y", "total_acc_z"};

InputSplit open_split(const std::string& dir, const std::string& split, const std::string& signals,
                      int64_t classes, std::vector<std::string>* files) {
  const std::string base = dir + "/" + split + "/";
  const std::string y_path = base + "y_" + split + ".txt",
                    s_path = base + "subject_" + split + ".txt";
  std::vector<int64_t> labels = read_ids(y_path), groups = read_ids(s_path);
  files->push_back(y_path);
  files->push_back(s_path);
  const int64_t n = static_cast<int64_t>(labels.size());
  LOCKSTEP_REQUIRE(static_cast<int64_t>(groups.size()) == n,
                   s_path + ": " + std::to_string(groups.size()) + " lines, " + y_path + " has " +
                       std::to_string(n));
  for (int64_t i = 0; i < n; ++i) {
    int64_t& l = labels[static_cast<size_t>(i)];
    LOCKSTEP_REQUIRE(l >= 1 && l <= classes,
                     y_path + ":" + std::to_string(i + 1) + ": activity " + std::to_string(l) +
                         " is not in activity_labels.txt (1.." + std::to_string(classes) + ")");
    --l;  // class ids count from 0
  }
  DatasetSpec spec;
  spec.dtype = DType::kFloat32;
  spec.num_classes = classes;
  spec.labeled = true;
  std::vector<float> samples;
  if (signals == "features") {
    const std::string x_path = base + "X_" + split + ".txt";
    Matrix x = read_matrix(x_path);
    files->push_back(x_path);
    LOCKSTEP_REQUIRE(x.rows == n, x_path + ": " + std::to_string(x.rows) + " lines, " + y_path +
                                      " has " + std::to_string(n));
    spec.sample_shape = {x.cols};
    samples = std::move(x.values);
  } else {
    std::vector<Matrix> channels;
    for (const char* name : kInertial) {
      const std::string path = base + "Inertial Signals/" + name + "_" + split + ".txt";
      channels.push_back(read_matrix(path));
      files->push_back(path);
      const Matrix& m = channels.back();
      LOCKSTEP_REQUIRE(m.rows == n, path + ": " + std::to_string(m.rows) + " lines, " + y_path +
                                        " has " + std::to_string(n));
      LOCKSTEP_REQUIRE(m.cols == channels[0].cols, path + ": windows of " + std::to_string(m.cols) +
                                                       " values, " + kInertial[0] + " has " +
                                                       std::to_string(channels[0].cols));
    }
    const int64_t len = channels[0].cols, c = static_cast<int64_t>(channels.size());
    spec.sample_shape = {c, len};
    samples.resize(static_cast<size_t>(n * c * len));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < c; ++k)
        std::memcpy(&samples[static_cast<size_t>((i * c + k) * len)],
                    &channels[static_cast<size_t>(k)].values[static_cast<size_t>(i * len)],
                    static_cast<size_t>(len) * sizeof(float));
  }
  std::vector<unsigned char> bytes(samples.size() * sizeof(float));
  std::memcpy(bytes.data(), samples.data(), bytes.size());
  return {split,
          std::make_unique<MemorySource>(base, spec, std::move(bytes), std::move(labels),
                                         std::move(groups)),
          split == "train"};
}

}  // namespace

std::vector<InputSplit> open_ucihar(const std::string& dir, const std::string& signals,
                                    std::vector<std::string>* class_names,
                                    std::vector<std::string>* files) {
  LOCKSTEP_REQUIRE(is_dir(dir + "/train"), dir + ": not a UCI-HAR directory (no train/ inside)");
  const std::string labels_path = dir + "/activity_labels.txt";
  *class_names = read_activities(labels_path);
  files->push_back(labels_path);
  const int64_t classes = static_cast<int64_t>(class_names->size());
  std::vector<InputSplit> out;
  out.push_back(open_split(dir, "train", signals, classes, files));
  if (is_dir(dir + "/test")) out.push_back(open_split(dir, "test", signals, classes, files));
  return out;
}

}  // namespace lockstep::io
