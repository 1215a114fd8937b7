// transcripts: see transcripts.hpp.
#include "io/records/transcripts.hpp"

#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "core/base/error.hpp"
#include "io/util/file_util.hpp"
#include "io/util/csv_text.hpp"
#include "io/util/h5.hpp"
#include "io/util/temp_files.hpp"

namespace lockstep::io {
namespace {

bool ends_with(const std::string& s, const std::string& e) {
  return s.size() > e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0;
}

}  // namespace

std::string token_text(const std::vector<int64_t>& ids, const std::vector<std::string>& tokens) {
  std::string out;
  for (const int64_t t : ids) out += t >= 0 && t < static_cast<int64_t>(tokens.size()) ? tokens[static_cast<size_t>(t)] : "?";
  return out;
}

struct TranscriptWriter::Impl {
  std::string path, tmp;
  TranscriptFormat f;
  bool csv = false, finished = false;
  int64_t written = 0, frames_written = 0;
  std::FILE* out = nullptr;  // csv
  H5Handle file, text_type, index, transcript, reference, frames, log_prob;  // h5

  H5Handle dataset(const char* name, hid_t type, hsize_t n) {
    H5Handle space(H5_CHECK(H5Screate_simple(1, &n, nullptr)));
    return H5Handle(H5_CHECK(H5Dcreate2(file.get(), name, type, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
  }
  void write_rows(const H5Handle& d, hid_t type, const void* data, int64_t n) {
    const RowSelection rows = select_rows(d.get(), written, n);
    H5_CHECK(H5Dwrite(d.get(), type, rows.memory.get(), rows.file.get(), H5P_DEFAULT, data));
  }
  void write_texts(const H5Handle& d, const std::vector<std::string>& texts) {
    std::vector<const char*> p;
    for (const std::string& t : texts) p.push_back(t.c_str());
    write_rows(d, text_type.get(), p.data(), static_cast<int64_t>(p.size()));
  }
  void release() {
    index.reset();
    transcript.reset();
    reference.reset();
    frames.reset();
    log_prob.reset();
    text_type.reset();
    file.reset();
  }
};

TranscriptWriter::TranscriptWriter(const std::string& path, TranscriptFormat format) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.path = path;
  m.tmp = temp_name_for(path);
  m.f = std::move(format);
  m.csv = ends_with(path, ".csv");
  if (!m.csv && !ends_with(path, ".h5") && !ends_with(path, ".hdf5"))
    throw UsageError("--predict.out " + path + ": the extension must be .csv or .h5");
  ::unlink(m.tmp.c_str());
  if (m.csv) {
    m.out = std::fopen(m.tmp.c_str(), "wx");
    if (!m.out) throw Error("cannot write " + m.tmp + ": " + std::strerror(errno));
    std::fputs(m.f.references ? "index,transcript,reference\n" : "index,transcript\n", m.out);
    return;
  }
  h5_quiet();
  m.file = H5Handle(H5Fcreate(m.tmp.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT));
  if (!m.file.valid()) throw Error("cannot create " + m.tmp + ": " + h5_last_error());
  m.text_type = H5Handle(H5_CHECK(H5Tcopy(H5T_C_S1)));
  H5_CHECK(H5Tset_size(m.text_type.get(), H5T_VARIABLE));
  H5_CHECK(H5Tset_cset(m.text_type.get(), H5T_CSET_UTF8));
  const auto n = static_cast<hsize_t>(m.f.total);
  m.index = m.dataset("index", H5T_NATIVE_INT64, n);
  m.transcript = m.dataset("transcript", m.text_type.get(), n);
  if (m.f.references) m.reference = m.dataset("reference", m.text_type.get(), n);
  m.frames = m.dataset("frames", H5T_NATIVE_INT64, n);
  // [F, C], F growing as rows arrive: chunked, unlimited first dimension.
  const hsize_t c = static_cast<hsize_t>(m.f.classes), dims[2] = {0, c}, max[2] = {H5S_UNLIMITED, c},
                chunk[2] = {std::max<hsize_t>(1, (1u << 18) / std::max<hsize_t>(1, c)), c};
  H5Handle space(H5_CHECK(H5Screate_simple(2, dims, max)));
  H5Handle props(H5_CHECK(H5Pcreate(H5P_DATASET_CREATE)));
  H5_CHECK(H5Pset_chunk(props.get(), 2, chunk));
  m.log_prob = H5Handle(
      H5_CHECK(H5Dcreate2(m.file.get(), "log_prob", H5T_NATIVE_FLOAT, space.get(), H5P_DEFAULT, props.get(), H5P_DEFAULT)));
  std::string tokens;
  for (size_t i = 0; i < m.f.tokens.size(); ++i) tokens += (i ? "\n" : "") + m.f.tokens[i];
  h5_write_attr_str(m.file.get(), "tokens", tokens);
  h5_write_attr_str(m.file.get(), "checkpoint", m.f.checkpoint);
  h5_write_attr_str(m.file.get(), "split", m.f.split);
}

TranscriptWriter::~TranscriptWriter() {
  if (!impl_ || impl_->finished) return;
  if (impl_->out) std::fclose(impl_->out);
  impl_->release();
  remove_file(impl_->tmp);  // nothing half-written under the final name
}

bool TranscriptWriter::wants_log_prob() const { return !impl_->csv; }

void TranscriptWriter::append(const std::vector<TranscriptRow>& rows) {
  Impl& m = *impl_;
  const int64_t n = static_cast<int64_t>(rows.size());
  LOCKSTEP_REQUIRE(m.written + n <= m.f.total, m.path + ": more transcript rows than samples");
  if (m.csv) {
    std::string text;
    for (const TranscriptRow& r : rows) {
      text += std::to_string(r.index) + "," + csv_field(token_text(r.hypothesis, m.f.tokens));
      if (m.f.references) text += "," + csv_field(token_text(r.reference, m.f.tokens));
      text += "\n";
    }
    if (std::fputs(text.c_str(), m.out) < 0) throw Error("cannot write " + m.tmp + ": " + std::strerror(errno));
    m.written += n;
    return;
  }
  std::vector<int64_t> index, frames;
  std::vector<std::string> hyp, ref;
  std::vector<float> lp;
  for (const TranscriptRow& r : rows) {
    LOCKSTEP_REQUIRE(static_cast<int64_t>(r.log_prob.size()) == r.frames * m.f.classes,
                     m.path + ": a row's log-probabilities do not match its frames");
    index.push_back(r.index);
    frames.push_back(r.frames);
    hyp.push_back(token_text(r.hypothesis, m.f.tokens));
    ref.push_back(token_text(r.reference, m.f.tokens));
    lp.insert(lp.end(), r.log_prob.begin(), r.log_prob.end());
  }
  m.write_rows(m.index, H5T_NATIVE_INT64, index.data(), n);
  m.write_rows(m.frames, H5T_NATIVE_INT64, frames.data(), n);
  m.write_texts(m.transcript, hyp);
  if (m.f.references) m.write_texts(m.reference, ref);
  const int64_t f = static_cast<int64_t>(lp.size()) / std::max<int64_t>(1, m.f.classes);
  if (f > 0) {
    const hsize_t c = static_cast<hsize_t>(m.f.classes), size[2] = {static_cast<hsize_t>(m.frames_written + f), c};
    H5_CHECK(H5Dset_extent(m.log_prob.get(), size));
    H5Handle space(H5_CHECK(H5Dget_space(m.log_prob.get())));
    const hsize_t start[2] = {static_cast<hsize_t>(m.frames_written), 0}, count[2] = {static_cast<hsize_t>(f), c};
    H5_CHECK(H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start, nullptr, count, nullptr));
    H5Handle memory(H5_CHECK(H5Screate_simple(2, count, nullptr)));
    H5_CHECK(H5Dwrite(m.log_prob.get(), H5T_NATIVE_FLOAT, memory.get(), space.get(), H5P_DEFAULT, lp.data()));
    m.frames_written += f;
  }
  m.written += n;
}

void TranscriptWriter::finish(double cer, double wer) {
  Impl& m = *impl_;
  LOCKSTEP_REQUIRE(m.written == m.f.total, fmt::format("{}: {} of {} rows written", m.path, m.written, m.f.total));
  if (m.csv) {
    close_synced(m.out, m.tmp);
  } else {
    if (m.f.references) h5_write_attr_f64(m.file.get(), "cer", {cer});
    if (m.f.references) h5_write_attr_f64(m.file.get(), "wer", {wer});
    for (H5Handle* h : {&m.index, &m.transcript, &m.reference, &m.frames, &m.log_prob, &m.text_type, &m.file})
      H5_CHECK(h->close());  // the file last: every close checked, or a full disk leaves holes
    fsync_path(m.tmp);
  }
  commit_temp(m.tmp, m.path);
  m.finished = true;
}

}  // namespace lockstep::io
