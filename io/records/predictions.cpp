// predictions: see predictions.hpp.
#include "io/records/predictions.hpp"

#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

#include "core/base/error.hpp"
#include "io/util/file_util.hpp"
#include "io/util/temp_files.hpp"
#include "io/util/csv_text.hpp"
#include "io/util/h5.hpp"

namespace lockstep::io {

struct PredictionWriter::Impl {
  std::string path, tmp;
  PredictionFormat f;
  bool csv = false, finished = false;
  int64_t written = 0;
  std::FILE* out = nullptr;     // csv
  H5Handle file;                // h5
  H5Handle index, pred, prob, top_class, label;

  int64_t width() const { return f.top_k > 0 ? f.top_k : f.classes; }
  std::string name_of(int64_t c) const {
    return c >= 0 && c < static_cast<int64_t>(f.class_names.size()) ? f.class_names[static_cast<size_t>(c)]
                                                                      : std::to_string(c);
  }

  H5Handle dataset(const char* name, hid_t type, std::vector<hsize_t> dims) {
    H5Handle space(H5_CHECK(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr)));
    return H5Handle(H5_CHECK(H5Dcreate2(file.get(), name, type, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
  }

  void write_rows(const H5Handle& d, hid_t type, const void* data, int64_t n) {
    const RowSelection rows = select_rows(d.get(), written, n);
    H5_CHECK(H5Dwrite(d.get(), type, rows.memory.get(), rows.file.get(), H5P_DEFAULT, data));
  }
};

PredictionWriter::PredictionWriter(const std::string& path, PredictionFormat format) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.path = path;
  m.tmp = temp_name_for(path);
  m.f = std::move(format);
  const auto ends = [&](const char* ext) {
    const std::string e = ext;
    return path.size() > e.size() && path.compare(path.size() - e.size(), e.size(), e) == 0;
  };
  if (ends(".csv")) {
    m.csv = true;
  } else if (!ends(".h5") && !ends(".hdf5")) {
    throw UsageError("--predict.out " + path + ": the extension must be .csv or .h5");
  }
  ::unlink(m.tmp.c_str());
  if (m.csv) {
    m.out = std::fopen(m.tmp.c_str(), "wx");
    if (!m.out) throw Error("cannot write " + m.tmp + ": " + std::strerror(errno));
    std::string header = "index";
    if (m.f.labeled) header += ",label";
    const bool names = !m.f.class_names.empty();
    if (m.f.top_k > 0) {
      for (int64_t k = 1; k <= m.f.top_k; ++k)
        header += fmt::format(",top{}{},p_top{}", k, names ? fmt::format(",top{}_name", k) : "", k);
    } else {
      header += names ? ",pred,pred_name" : ",pred";
      for (int64_t c = 0; c < m.f.classes; ++c) header += fmt::format(",p_{}", c);
    }
    std::fputs((header + "\n").c_str(), m.out);
    return;
  }
  h5_quiet();
  m.file = H5Handle(H5Fcreate(m.tmp.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT));
  if (!m.file.valid()) throw Error("cannot create " + m.tmp + ": " + h5_last_error());
  const auto n = static_cast<hsize_t>(m.f.total), w = static_cast<hsize_t>(m.width());
  m.index = m.dataset("index", H5T_NATIVE_INT64, {n});
  if (m.f.top_k > 0) {
    m.top_class = m.dataset("topk_class", H5T_NATIVE_INT64, {n, w});
    m.prob = m.dataset("topk_prob", H5T_NATIVE_FLOAT, {n, w});
  } else {
    m.pred = m.dataset("pred", H5T_NATIVE_INT64, {n});
    m.prob = m.dataset("prob", H5T_NATIVE_FLOAT, {n, w});
  }
  if (m.f.labeled) m.label = m.dataset("label", H5T_NATIVE_INT64, {n});
  std::string names;
  for (size_t i = 0; i < m.f.class_names.size(); ++i) names += (i ? "\n" : "") + m.f.class_names[i];
  h5_write_attr_str(m.file.get(), "class_names", names);
  h5_write_attr_str(m.file.get(), "checkpoint", m.f.checkpoint);
  h5_write_attr_str(m.file.get(), "split", m.f.split);
  h5_write_attr_i64(m.file.get(), "eval_hflip", {m.f.eval_hflip ? 1 : 0});
}

PredictionWriter::~PredictionWriter() {
  if (!impl_ || impl_->finished) return;
  if (impl_->out) std::fclose(impl_->out);
  impl_->index.reset();
  impl_->pred.reset();
  impl_->prob.reset();
  impl_->top_class.reset();
  impl_->label.reset();
  impl_->file.reset();
  remove_file(impl_->tmp);  // nothing half-written under the final name
}

void PredictionWriter::append(const int64_t* index, const int64_t* label, const float* prob, const int64_t* top_class,
                              int64_t n) {
  Impl& m = *impl_;
  LOCKSTEP_REQUIRE(m.written + n <= m.f.total, m.path + ": more prediction rows than samples");
  const int64_t w = m.width();
  if (m.csv) {
    std::string text;
    for (int64_t i = 0; i < n; ++i) {
      text += std::to_string(index[i]);
      if (m.f.labeled) text += "," + std::to_string(label[i]);
      const float* p = prob + i * w;
      if (m.f.top_k > 0) {
        for (int64_t k = 0; k < w; ++k) {
          const int64_t c = top_class[i * w + k];
          text += fmt::format(",{}{},{:.6g}", c, m.f.class_names.empty() ? "" : "," + csv_field(m.name_of(c)), p[k]);
        }
      } else {
        int64_t best = 0;
        for (int64_t c = 1; c < w; ++c) best = p[c] > p[best] ? c : best;
        text += "," + std::to_string(best) + (m.f.class_names.empty() ? "" : "," + csv_field(m.name_of(best)));
        for (int64_t c = 0; c < w; ++c) text += fmt::format(",{:.6g}", p[c]);
      }
      text += "\n";
    }
    if (std::fputs(text.c_str(), m.out) < 0) throw Error("cannot write " + m.tmp + ": " + std::strerror(errno));
  } else {
    m.write_rows(m.index, H5T_NATIVE_INT64, index, n);
    if (m.f.labeled) m.write_rows(m.label, H5T_NATIVE_INT64, label, n);
    m.write_rows(m.prob, H5T_NATIVE_FLOAT, prob, n);
    if (m.f.top_k > 0) {
      m.write_rows(m.top_class, H5T_NATIVE_INT64, top_class, n);
    } else {
      std::vector<int64_t> pred(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        const float* p = prob + i * w;
        int64_t best = 0;
        for (int64_t c = 1; c < w; ++c) best = p[c] > p[best] ? c : best;
        pred[static_cast<size_t>(i)] = best;
      }
      m.write_rows(m.pred, H5T_NATIVE_INT64, pred.data(), n);
    }
  }
  m.written += n;
}

void PredictionWriter::finish() {
  Impl& m = *impl_;
  LOCKSTEP_REQUIRE(m.written == m.f.total, fmt::format("{}: {} of {} rows written", m.path, m.written, m.f.total));
  if (m.csv) {
    close_synced(m.out, m.tmp);
  } else {
    for (H5Handle* d : {&m.index, &m.pred, &m.prob, &m.top_class, &m.label}) H5_CHECK(d->close());
    H5_CHECK(m.file.close());  // flushes: every close checked, or a full disk leaves holes
    fsync_path(m.tmp);
  }
  commit_temp(m.tmp, m.path);
  m.finished = true;
}

}  // namespace lockstep::io
