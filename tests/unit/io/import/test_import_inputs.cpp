// What users' own files hold, read as they meant it (a hostile round on `lockstep shard`,
// 2026-11-29): a CSV's first row and its labels, a test input's classes, an input rewritten
// within a second, unlabelled input's order, an image folder that links back into itself,
// statistics the reader refuses, HDF5 files that declare more than they hold, and temp files
// an interrupted re-import left.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <limits>

#include "core/base/error.hpp"
#include "io/import/csv_import.hpp"
#include "io/import/hdf5_import.hpp"
#include "io/import/import_spec.hpp"
#include "io/import/importer.hpp"
#include "io/util/file_util.hpp"
#include "io/util/h5.hpp"
#include "io/util/temp_files.hpp"
#include "test_helpers.hpp"

using namespace lockstep;
using namespace lockstep::io;
using namespace lockstep::testing;

namespace {

std::vector<InputSplit> csv(const std::string& path, std::vector<std::string>* names, CsvOptions opt = {}) {
  return open_csv({{"train", path}}, opt, names);
}

// A float [N, 2] dataset "samples" in PATH, chunked by 4 rows; only the first WRITTEN rows are
// written (N: all). Labels: uint64 LABELS when given, none otherwise.
void make_chunked_h5(const std::string& path, hsize_t n, hsize_t written, const std::vector<uint64_t>& labels = {}) {
  h5_quiet();
  H5Handle f(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
  const hsize_t dims[2] = {n, 2}, chunk[2] = {4, 2};
  H5Handle space(H5Screate_simple(2, dims, nullptr));
  H5Handle dcpl(H5Pcreate(H5P_DATASET_CREATE));
  H5Pset_chunk(dcpl.get(), 2, chunk);
  H5Handle d(H5Dcreate2(f.get(), "samples", H5T_IEEE_F32LE, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT));
  if (written > 0) {
    std::vector<float> v(written * 2, 1.5f);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 7);
    const hsize_t start[2] = {0, 0}, count[2] = {written, 2};
    H5Handle file_space(H5Dget_space(d.get()));
    H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start, nullptr, count, nullptr);
    H5Handle mem(H5Screate_simple(2, count, nullptr));
    H5Dwrite(d.get(), H5T_NATIVE_FLOAT, mem.get(), file_space.get(), H5P_DEFAULT, v.data());
  }
  if (!labels.empty()) {
    const hsize_t ln = labels.size();
    H5Handle lspace(H5Screate_simple(1, &ln, nullptr));
    H5Handle l(H5Dcreate2(f.get(), "labels", H5T_STD_U64LE, lspace.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    H5Dwrite(l.get(), H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, labels.data());
  }
  H5Handle g(H5Gcreate2(f.get(), "group", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
}

ImportResult import_to(std::vector<InputSplit> inputs, const std::string& out, const std::string& fingerprint) {
  ImportOptions opt;
  opt.output_dir = out;
  opt.plan.val_fraction = 0.0;
  return run_import(std::move(inputs), opt, "test", fingerprint);
}

}  // namespace

// --header auto took any first row with a text field for a header: "1,2,cat" (text labels in
// every row) and a first row behind Excel's byte-order mark were dropped, silently.
TEST(CsvInputs, TheFirstRowIsAHeaderOnlyOverNumbers) {
  const std::string dir = fresh_dir("csv-header");
  std::vector<std::string> names;
  // Text only where the rows below hold text too: a header of numbered columns over text
  // labels ("0,1,label" over "5,3,cat") reads exactly as text-labelled rows do. Asked, not
  // guessed.
  std::ofstream(dir + "/text.csv") << "1,2,cat\n3,4,dog\n5,6,cat\n";
  EXPECT_ERROR_CONTAINS(csv(dir + "/text.csv", &names), "text.csv:1: cannot tell whether this first line is a header");
  std::ofstream(dir + "/numbered.csv") << "0,1,label\n5,3,cat\n";
  EXPECT_ERROR_CONTAINS(csv(dir + "/numbered.csv", &names), "pass --header yes or --header no");
  CsvOptions no_header;
  no_header.header = "no";
  auto in = csv(dir + "/text.csv", &names, no_header);
  EXPECT_EQ(in[0].source->count(), 3);
  EXPECT_EQ(in[0].source->labels(), (std::vector<int64_t>{0, 1, 0}));
  // A bad value in the first row names line 1 (the look-ahead has read line 2).
  std::ofstream(dir + "/bad.csv") << "1,x2,0\n3,4,1\n";
  EXPECT_ERROR_CONTAINS(csv(dir + "/bad.csv", &names, no_header), "bad.csv:1: column 'column 1' value 'x2'");
  names.clear();
  std::ofstream(dir + "/bom.csv") << "\xEF\xBB\xBF" "1,2,0\n3,4,1\n";
  EXPECT_EQ(csv(dir + "/bom.csv", &names)[0].source->count(), 2);
  std::ofstream(dir + "/bomhead.csv") << "\xEF\xBB\xBF" "id,x,label\n1,2,0\n3,4,1\n";
  CsvOptions ignore;
  ignore.ignore_columns = "id";  // the first column's name, without the mark
  auto h = csv(dir + "/bomhead.csv", &names, ignore);
  EXPECT_EQ(h[0].source->count(), 2);
  EXPECT_EQ(h[0].source->spec().sample_shape, (std::vector<int64_t>{1}));
  std::ofstream(dir + "/head.csv") << "x1,x2,activity\n1,2,walk\n3,4,sit\n";
  names.clear();
  EXPECT_EQ(csv(dir + "/head.csv", &names)[0].source->count(), 2);
  EXPECT_EQ(names, (std::vector<std::string>{"sit", "walk"}));
}

// Labels written as floats ("2.0") were class names sorted as text: 10.0 became class 2.
TEST(CsvInputs, WholeNumberLabelsAreClassIdsHoweverWritten) {
  const std::string dir = fresh_dir("csv-labels");
  std::vector<std::string> names;
  std::ofstream(dir + "/f.csv") << "x,label\n1,2.0\n2,10.0\n3,0\n4,1e0\n5,1\n";
  auto in = csv(dir + "/f.csv", &names);
  EXPECT_TRUE(names.empty());
  EXPECT_EQ(in[0].source->labels(), (std::vector<int64_t>{2, 10, 0, 1, 1}));
  EXPECT_EQ(in[0].source->spec().num_classes, 11);
  // -1/+1 data: names in numeric order, one class per number.
  std::ofstream(dir + "/pm.csv") << "x,label\n1,1\n2,-1\n3,1.0\n4,+1\n";
  auto pm = csv(dir + "/pm.csv", &names);
  EXPECT_EQ(names, (std::vector<std::string>{"-1", "1"}));
  EXPECT_EQ(pm[0].source->labels(), (std::vector<int64_t>{1, 0, 1, 1}));
  std::ofstream(dir + "/fr.csv") << "x,label\n1,0.5\n2,1\n";
  EXPECT_ERROR_CONTAINS(csv(dir + "/fr.csv", &names), "fr.csv: label '0.5' is a number with a fraction");
  // Names stay names; a test label spelt otherwise is the same class.
  std::ofstream(dir + "/tr.csv") << "x,label\n1,0\n2,1\n";
  std::ofstream(dir + "/te.csv") << "x,label\n1,1.0\n2,0\n";
  names.clear();
  auto both = open_csv({{"train", dir + "/tr.csv"}, {"test", dir + "/te.csv"}}, CsvOptions{}, &names);
  EXPECT_EQ(both[1].source->labels(), (std::vector<int64_t>{1, 0}));
}

// npy, npz, hdf5 and idx imported a test class the training input lacks (csv refused it).
TEST(ImportInputs, ATestClassTheTrainingInputLacksIsRefused) {
  const DatasetSpec spec = shape_spec({2}, 7);
  std::vector<unsigned char> bytes(6 * spec.sample_bytes(), 0);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>(i % 11);
  std::vector<InputSplit> inputs;
  inputs.push_back({"train", std::make_unique<MemorySource>("x_train", spec, bytes, std::vector<int64_t>{0, 1, 0, 1, 0, 1}), true});
  inputs.push_back({"test", std::make_unique<MemorySource>("x_test", spec, bytes, std::vector<int64_t>{0, 5, 5, 6, 1, 0}), false});
  EXPECT_ERROR_CONTAINS(import_to(std::move(inputs), fresh_dir("untrained"), "fp"),
                        "x_test: class 5 (2 sample(s), and 1 more class(es)) does not occur in x_train: a class the "
                        "model never trains on");
}

// The fingerprint was size + whole-second mtime: an input rewritten within the second it
// was imported was "up to date", its old shards kept.
TEST(ImportInputs, AnInputRewrittenWithinTheSecondIsNotUpToDate) {
  const std::string dir = fresh_dir("fingerprint");
  const std::string path = dir + "/d.csv";
  std::ofstream(path) << "x1,x2,label\n1,2,0\n3,4,1\n";
  const std::string before = file_fingerprint({path});
  EXPECT_EQ(file_fingerprint({path}), before);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  std::ofstream(path) << "x1,x2,label\n9,2,0\n3,4,1\n";  // same size
  const struct timespec times[2] = {st.st_atim, st.st_mtim};  // the same mtime, to the nanosecond
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  EXPECT_NE(file_fingerprint({path}), before);
}

// Unlabelled npy was shuffled with 10% moved to a val split: predict's row i was not the
// input's i-th sample.
TEST(ImportInputs, UnlabelledInputKeepsItsOrderWithoutAValSplit) {
  const std::string dir = fresh_dir("unlabelled");
  h5_quiet();
  make_chunked_h5(dir + "/u.h5", 8, 8);
  ImportSpec spec;
  spec.input = "hdf5:" + dir + "/u.h5";
  spec.labels_dataset = "none";
  spec.options.output_dir = dir + "/out";
  const OpenedImport opened = open_import(spec);
  EXPECT_EQ(spec.options.plan.val_fraction, 0.0);
  EXPECT_FALSE(spec.options.plan.shuffle);
  ImportSpec asked = spec;
  asked.options.plan = PlanOptions{};
  asked.options.plan.val_fraction = 0.2;
  asked.val_fraction_given = true;
  EXPECT_ERROR_CONTAINS(open_import(asked), "--val-fraction: hdf5:" + dir + "/u.h5 is unlabelled");
}

// A link back up an image folder (cat/loop -> ..) was followed ~40 levels deep: dog images
// imported as cat, 40 times over.
TEST(ImportInputs, AnImageFolderReachedTwiceIsRefused) {
  const std::string dir = fresh_dir("images-loop");
  for (const char* c : {"cat", "dog"}) {
    ASSERT_EQ(::mkdir((dir + "/" + c).c_str(), 0755), 0);
    std::ofstream(dir + "/" + c + "/a.png") << "x";
  }
  ASSERT_EQ(::symlink("..", (dir + "/cat/loop").c_str()), 0);
  ImportSpec spec;
  spec.input = "images:" + dir;
  spec.options.output_dir = fresh_dir("images-out");
  EXPECT_ERROR_CONTAINS(open_import(spec), dir + "/cat/loop is the folder " + dir + " again (a link)");
  ::unlink((dir + "/cat/loop").c_str());
  ASSERT_EQ(::symlink("../dog", (dir + "/cat/dogs").c_str()), 0);  // one folder under two classes
  EXPECT_ERROR_CONTAINS(open_import(spec), "is the folder " + dir + "/cat/dogs again");
}

// A nanosecond timestamp column: shard wrote statistics (mean 1.7e18) the reader refuses.
TEST(ImportInputs, StatisticsTheReaderRefusesAreNotWritten) {
  const std::string dir = fresh_dir("stats");
  std::ofstream(dir + "/t.csv") << "t_ns,x,label\n1732860000000000000,1,0\n1732860000020000000,2,1\n";
  std::vector<std::string> names;
  const std::string out = dir + "/out";
  EXPECT_ERROR_CONTAINS(import_to(csv(dir + "/t.csv", &names), out, "fp"),
                        "t.csv: its samples' channel 0 has mean 1.73286");
  EXPECT_FALSE(path_exists(out + "/manifest.json"));
}

// A 10 KB file declaring 10^9 samples took 8 GB before any check; a group named as the
// samples was HDF5's "unable to open dataset"; a uint64 label of 2^64-1 was shown as 2^63-1.
TEST(ImportInputs, Hdf5FilesThatDeclareMoreThanTheyHold) {
  const std::string dir = fresh_dir("h5-declared");
  make_chunked_h5(dir + "/holes.h5", 1000000000, 0, {});
  EXPECT_ERROR_CONTAINS(open_hdf5_source(dir + "/holes.h5", "samples", "none"),
                        "holes.h5: dataset 'samples' declares 1000000000 samples but 0 of its 250000000 chunks were "
                        "ever written");
  make_chunked_h5(dir + "/part.h5", 12, 5, {});
  EXPECT_ERROR_CONTAINS(open_hdf5_source(dir + "/part.h5", "samples", "none"), "2 of its 3 chunks were ever written");
  make_chunked_h5(dir + "/whole.h5", 12, 12, std::vector<uint64_t>(12, 1));
  EXPECT_EQ(open_hdf5_source(dir + "/whole.h5", "samples", "labels")->count(), 12);
  EXPECT_ERROR_CONTAINS(open_hdf5_source(dir + "/whole.h5", "group", "labels"),
                        "whole.h5: 'group' is a group, not a dataset of samples (--samples-dataset)");
  EXPECT_ERROR_CONTAINS(open_hdf5_source(dir + "/whole.h5", "samples", "group"),
                        "'group' is a group, not a dataset of labels (--labels-dataset)");
  std::vector<uint64_t> huge(12, 0);
  huge[3] = std::numeric_limits<uint64_t>::max();
  make_chunked_h5(dir + "/huge.h5", 12, 12, huge);
  EXPECT_ERROR_CONTAINS(open_hdf5_source(dir + "/huge.h5", "samples", "labels"),
                        "huge.h5: label >= 2^63 of sample 3 is not a class id");
}

// An import killed over an up-to-date dataset (a --force re-import) left temp files that
// the next import, finding the dataset up to date, never removed.
TEST(ImportInputs, AnUpToDateImportRemovesDeadWritersTempFiles) {
  const std::string dir = fresh_dir("uptodate");
  std::ofstream(dir + "/d.csv") << "x1,x2,label\n1,2,0\n3,4,1\n5,6,0\n";
  std::vector<std::string> names;
  const std::string out = dir + "/out";
  ASSERT_FALSE(import_to(csv(dir + "/d.csv", &names), out, "fp1").skipped);
  const std::string dead = out + "/train-00000-of-00001.h5.lockstep-tmp.999999999." + this_writer().host;
  std::ofstream(dead) << "half";
  const std::string live = out + "/train-00000-of-00001.h5.lockstep-tmp." + std::to_string(::getppid()) + "." +
                           this_writer().host;
  std::ofstream(live) << "being written";
  EXPECT_TRUE(import_to(csv(dir + "/d.csv", &names), out, "fp1").skipped);
  EXPECT_FALSE(path_exists(dead));
  EXPECT_TRUE(path_exists(live));  // its writer (another process, here the test's parent) runs
}
