// Import pipeline: the plan (pure), CSV and HDF5 sources, validation split, statistics.
#include <gtest/gtest.h>

#include <cmath>

#include <cstring>
#include <fstream>
#include <set>

#include "io/import/csv_import.hpp"
#include "io/util/file_util.hpp"
#include "io/util/temp_files.hpp"
#include "io/util/h5.hpp"
#include "io/import/hdf5_import.hpp"
#include "io/import/import_plan.hpp"
#include "io/import/importer.hpp"
#include "io/loader/rank_reader.hpp"
#include "io/dataset/shard_reader.hpp"
#include "test_helpers.hpp"

using namespace lockstep;
using namespace lockstep::io;
using namespace lockstep::testing;

namespace {

std::vector<int64_t> labels_mod(int64_t n, int64_t k) {
  std::vector<int64_t> l(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) l[static_cast<size_t>(i)] = i % k;
  return l;
}

ImportResult import(std::vector<InputSplit> inputs, const std::string& out, PlanOptions plan = {}) {
  ImportOptions opt;
  opt.output_dir = out;
  opt.plan = plan;
  return run_import(std::move(inputs), opt, "test", "fp-" + out);
}

// An HDF5 file with samples (N x 2 x 3, TYPE) and int32 labels i % 3.
std::string make_h5(const std::string& dir, int64_t n, hid_t type, bool with_labels = true) {
  const std::string path = dir + "/big.h5";
  h5_quiet();
  H5Handle f(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
  const hsize_t dims[3] = {static_cast<hsize_t>(n), 2, 3};
  H5Handle space(H5Screate_simple(3, dims, nullptr));
  H5Handle d(H5Dcreate2(f.get(), "x", type, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  std::vector<double> values(static_cast<size_t>(n) * 6);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i % 200);
  H5Dwrite(d.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
  if (with_labels) {
    const hsize_t ln = static_cast<hsize_t>(n);
    H5Handle lspace(H5Screate_simple(1, &ln, nullptr));
    H5Handle l(H5Dcreate2(f.get(), "y", H5T_STD_I32LE, lspace.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    std::vector<int32_t> labels(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) labels[static_cast<size_t>(i)] = static_cast<int32_t>(i % 3);
    H5Dwrite(l.get(), H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, labels.data());
  }
  return path;
}

}  // namespace

TEST(ImportPlan, EverySampleOnceAndShardsInASeededOrder) {
  const auto labels = labels_mod(103, 4);
  PlanOptions opt;
  opt.shards = 4;
  opt.seed = 9;
  const auto plan = plan_import(labels, 4, "train", opt);
  ASSERT_EQ(plan.size(), 1u);
  std::set<int64_t> seen;
  for (const auto& shard : plan[0].shards) {
    // Stored in the shuffled order, not source order: any range of a shard is a fair sample.
    EXPECT_FALSE(std::is_sorted(shard.begin(), shard.end()));
    EXPECT_GE(shard.size(), 25u);
    for (const int64_t i : shard) EXPECT_TRUE(seen.insert(i).second);
  }
  EXPECT_EQ(seen.size(), 103u);
  EXPECT_EQ(plan_import(labels, 4, "train", opt)[0].shards, plan[0].shards);  // deterministic
  opt.seed = 10;
  EXPECT_NE(plan_import(labels, 4, "train", opt)[0].shards, plan[0].shards);
}

TEST(ImportPlan, StratifiedValidation) {
  std::vector<int64_t> labels(1000, 0);
  for (size_t i = 0; i < 100; ++i) labels[i * 10] = 1;  // class 1 is 10% of the data
  PlanOptions opt;
  opt.shards = 3;
  opt.val_fraction = 0.2;
  const auto plan = plan_import(labels, 2, "train", opt);
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[1].split, "val");
  EXPECT_EQ(plan[1].count(), 200);
  EXPECT_EQ(plan[0].count(), 800);
  int64_t val_class1 = 0;
  for (const auto& s : plan[1].shards)
    for (const int64_t i : s) val_class1 += labels[static_cast<size_t>(i)];
  EXPECT_EQ(val_class1, 20);  // 20% of class 1, exactly
}

// Frame tables (video clips): shards take whole runs of consecutive samples (neighbouring
// clips share frames), the runs dealt at random, each shard stored in a seeded random order.
// The splits hold the same samples as without source_runs.
TEST(ImportPlan, SourceRunsDealWholeRunsAndShuffleWithin) {
  const auto labels = labels_mod(100, 4);
  PlanOptions opt;
  opt.shards = 3;
  opt.seed = 4;
  opt.val_fraction = 0.2;
  const auto plain = plan_import(labels, 4, "train", opt);
  opt.source_runs = 5;  // train: 80 samples, 16 runs of 5; val: 20 samples, 4 runs of 5
  const auto runs = plan_import(labels, 4, "train", opt);
  ASSERT_EQ(runs.size(), 2u);
  int64_t pieces = 0;
  for (size_t s = 0; s < runs.size(); ++s) {
    std::vector<int64_t> all, all_plain;
    for (const auto& shard : runs[s].shards) all.insert(all.end(), shard.begin(), shard.end());
    for (const auto& shard : plain[s].shards) all_plain.insert(all_plain.end(), shard.begin(), shard.end());
    std::sort(all.begin(), all.end());
    std::sort(all_plain.begin(), all_plain.end());
    ASSERT_EQ(all, all_plain) << runs[s].split;  // the same samples in each split
    for (const auto& shard : runs[s].shards) {
      EXPECT_FALSE(std::is_sorted(shard.begin(), shard.end()));  // stored shuffled
      std::vector<int64_t> sorted = shard;
      std::sort(sorted.begin(), sorted.end());
      // The shard's samples are whole runs: pieces of the split's source order, none shorter than a run.
      size_t begin = 0;
      for (size_t i = 1; i <= sorted.size(); ++i) {
        const auto at = [&](size_t k) { return std::lower_bound(all.begin(), all.end(), sorted[k]) - all.begin(); };
        if (i < sorted.size() && at(i) == at(i - 1) + 1) continue;
        EXPECT_GE(i - begin, 5u) << runs[s].split << " piece at " << sorted[begin];
        ++pieces;
        begin = i;
      }
    }
  }
  EXPECT_GT(pieces, 2 * 3);  // runs were dealt apart, not one contiguous range per shard
  EXPECT_EQ(plan_import(labels, 4, "train", opt)[0].shards, runs[0].shards);  // deterministic
  opt.shuffle = false;  // runs dealt in order: contiguous shards in source order
  const auto unshuffled = plan_import(labels, 4, "train", opt);
  int64_t last = -1;
  for (const auto& shard : unshuffled[0].shards) {
    EXPECT_TRUE(std::is_sorted(shard.begin(), shard.end()));
    EXPECT_GT(shard.front(), last);
    last = shard.back();
  }
}

TEST(ImportPlan, LimitAndNoShuffle) {
  PlanOptions opt;
  opt.shuffle = false;
  opt.limit = 10;
  opt.shards = 2;
  const auto plan = plan_import(labels_mod(50, 2), 2, "train", opt);
  EXPECT_EQ(plan[0].shards[0], (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(plan[0].shards[1], (std::vector<int64_t>{5, 6, 7, 8, 9}));
  opt.val_fraction = 1.5;
  EXPECT_THROW(plan_import(labels_mod(50, 2), 2, "train", opt), Error);
}

TEST(CsvImport, RowsWithHeaderAndTextLabels) {
  const std::string dir = fresh_dir("csv");
  std::ofstream(dir + "/train.csv") << "a,b,activity\n1,2,walk\n3,4,sit\n5,6.5,walk\n\n7,8,stand\n";
  std::ofstream(dir + "/test.csv") << "a,b,activity\n1,1,sit\n";
  std::vector<std::string> names;
  auto inputs = open_csv({{"train", dir + "/train.csv"}, {"test", dir + "/test.csv"}}, CsvOptions{}, &names);
  EXPECT_EQ(names, (std::vector<std::string>{"sit", "stand", "walk"}));
  ASSERT_EQ(inputs.size(), 2u);
  EXPECT_EQ(inputs[0].source->spec().sample_shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(inputs[0].source->labels(), (std::vector<int64_t>{2, 0, 2, 1}));
  EXPECT_EQ(inputs[1].source->labels(), (std::vector<int64_t>{0}));
  float row[2];
  inputs[0].source->read(2, 1, row);
  EXPECT_EQ(row[1], 6.5f);
}

// Issue 31, minor list: a test label the training file lacks became an empty class (the
// other importers refuse it). Text and numeric labels alike.
TEST(CsvImport, ATestLabelAbsentFromTrainingIsRefused) {
  // Refused by the import, as for every other input kind (io/import/label_checks).
  const std::string dir = fresh_dir("csv-labels");
  const auto import_csv = [&](const std::string& train, const std::string& test) {
    std::vector<std::string> names;
    auto inputs = open_csv({{"train", dir + "/" + train}, {"test", dir + "/" + test}}, CsvOptions{}, &names);
    ImportOptions opt;
    opt.output_dir = dir + "/out";
    opt.class_names = names;
    return run_import(std::move(inputs), opt, "csv", "fp");
  };
  std::ofstream(dir + "/train.csv") << "a,b,activity\n1,2,walk\n3,4,sit\n";
  std::ofstream(dir + "/test.csv") << "a,b,activity\n1,1,sit\n2,2,run\n3,3,run\n";
  EXPECT_ERROR_CONTAINS(import_csv("train.csv", "test.csv"),
                        dir + "/test.csv: class 0 ('run') (2 sample(s)) does not occur in " + dir + "/train.csv");
  std::ofstream(dir + "/train2.csv") << "a,label\n1,0\n2,1\n";
  std::ofstream(dir + "/test2.csv") << "a,label\n1,0\n2,2\n";
  EXPECT_ERROR_CONTAINS(import_csv("train2.csv", "test2.csv"), "class 2 (1 sample(s)) does not occur");
  EXPECT_FALSE(path_exists(dir + "/out/manifest.json"));
}

// Issue 31 (4): test columns were matched by position — a test file "c,a,b,label" under a
// training file "a,b,c,label" imported permuted features, exit 0. Now by name.
TEST(CsvImport, TestColumnsAreMatchedByName) {
  const std::string dir = fresh_dir("csvorder");
  std::ofstream(dir + "/train.csv") << "a,b,c,label\n1,2,3,0\n4,5,6,1\n";
  std::ofstream(dir + "/test.csv") << "c,label,a,b\n30,1,10,20\n";  // the label moved too
  std::vector<std::string> names;
  CsvOptions by_name;
  by_name.label_column = "label";  // (the default, the last column, is 'b' in the test file)
  auto inputs = open_csv({{"train", dir + "/train.csv"}, {"test", dir + "/test.csv"}}, by_name, &names);
  float row[3];
  inputs[1].source->read(0, 1, row);
  EXPECT_EQ(std::vector<float>(row, row + 3), (std::vector<float>{10, 20, 30}));
  EXPECT_EQ(inputs[1].source->labels(), (std::vector<int64_t>{1}));
  const auto refused = [&](const std::string& test, const std::string& needle) {
    std::ofstream(dir + "/bad.csv") << test;
    EXPECT_ERROR_CONTAINS(open_csv({{"train", dir + "/train.csv"}, {"test", dir + "/bad.csv"}}, CsvOptions{}, &names),
                          needle);
  };
  refused("a,b,d,label\n1,2,3,0\n", "bad.csv: no feature column 'c', which " + dir + "/train.csv has");
  refused("a,a,b,label\n1,2,3,0\n", "bad.csv: feature column 'a' appears twice");
  refused("1,2,3,0\n", "bad.csv has no header but " + dir + "/train.csv has one");
  // Both without a header: by position, as before.
  std::ofstream(dir + "/p1.csv") << "1,2,3,0\n7,8,9,1\n";
  std::ofstream(dir + "/p2.csv") << "4,5,6,1\n";
  EXPECT_NO_THROW(open_csv({{"train", dir + "/p1.csv"}, {"test", dir + "/p2.csv"}}, CsvOptions{}, &names));
}

TEST(CsvImport, LabelColumnByIndexNoHeader) {
  const std::string dir = fresh_dir("csv");
  std::ofstream(dir + "/d.csv") << "3,0.5,1\n1,0.25,2\n";
  CsvOptions opt;
  opt.label_column = "0";
  std::vector<std::string> names;
  auto inputs = open_csv({{"train", dir + "/d.csv"}}, opt, &names);
  EXPECT_TRUE(names.empty());
  EXPECT_EQ(inputs[0].source->labels(), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(inputs[0].source->spec().num_classes, 4);
}

TEST(CsvImport, WindowsOverATimeSeries) {
  const std::string dir = fresh_dir("csv");
  std::ofstream out(dir + "/ts.csv");
  out << "x,y,label\n";
  for (int i = 0; i < 10; ++i) out << i << "," << 100 + i << "," << (i < 6 ? 0 : 1) << "\n";
  out.close();
  CsvOptions opt;
  opt.window = 4;
  opt.stride = 2;
  opt.window_labels = "majority";
  std::vector<std::string> names;
  auto inputs = open_csv({{"train", dir + "/ts.csv"}}, opt, &names);
  auto& src = *inputs[0].source;
  EXPECT_EQ(src.spec().sample_shape, (std::vector<int64_t>{2, 4}));  // [features, window]
  ASSERT_EQ(src.count(), 4);                                         // starts 0, 2, 4, 6
  // Window 4..7 has labels 0,0,1,1: a tie goes to the smaller class id; 6..9 is all 1.
  EXPECT_EQ(src.labels(), (std::vector<int64_t>{0, 0, 0, 1}));
  float w[8];
  src.read(1, 1, w);  // rows 2..5: x = 2,3,4,5 then y = 102..105
  EXPECT_EQ(std::vector<float>(w, w + 8), (std::vector<float>{2, 3, 4, 5, 102, 103, 104, 105}));

  // The default: no window crosses the label change at row 6 (runs 0..5 and 6..9).
  opt.window_labels = "pure";
  auto pure = open_csv({{"train", dir + "/ts.csv"}}, opt, &names);
  EXPECT_EQ(pure[0].source->labels(), (std::vector<int64_t>{0, 0, 1}));  // starts 0, 2 | 6
  pure[0].source->read(2, 1, w);
  EXPECT_EQ(w[0], 6);
}

// WISDM's raw text: ';'-terminated records (several on a line, or a line each), a timestamp
// column to drop, the user as the group.
TEST(CsvImport, SemicolonRecordsIgnoredColumnsAndWhitespaceDelimiter) {
  const std::string dir = fresh_dir("csv");
  std::ofstream(dir + "/wisdm.txt") << "33,Jogging,49105962326000,-0.69,12.68,0.50;\n"
                                       "33,Jogging,49106062271000,5.01,11.26,0.95;33,Walking,4910,1,2,3;\n"
                                       "\n17,Walking,4911,4,5,6;\n";
  CsvOptions opt;
  opt.header = "no";
  opt.label_column = "1";
  opt.group_column = "0";
  opt.ignore_columns = "2";
  std::vector<std::string> names;
  auto inputs = open_csv({{"train", dir + "/wisdm.txt"}}, opt, &names);
  auto& src = *inputs[0].source;
  EXPECT_EQ(src.spec().sample_shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(src.count(), 4);
  EXPECT_EQ(names, (std::vector<std::string>{"Jogging", "Walking"}));
  EXPECT_EQ(src.groups(), (std::vector<int64_t>{0, 0, 0, 1}));
  float v[3];
  src.read(2, 1, v);
  EXPECT_EQ(std::vector<float>(v, v + 3), (std::vector<float>{1, 2, 3}));
  std::ofstream(dir + "/broken.txt") << "33,Jogging,1,1,2,3;\n33,Jogging,2,1,2;\n";
  EXPECT_ERROR_CONTAINS(open_csv({{"train", dir + "/broken.txt"}}, opt, &names), "broken.txt:2: 5 fields, expected 6");
  opt.ignore_columns = "1";
  EXPECT_ERROR_CONTAINS(open_csv({{"train", dir + "/wisdm.txt"}}, opt, &names), "names the label or group column");

  std::ofstream(dir + "/spaces.txt") << "  1.5e-1  -2 \t3  0\n4 5 6 1\n";
  CsvOptions ws;
  ws.delimiter = ' ';
  auto w = open_csv({{"train", dir + "/spaces.txt"}}, ws, &names);
  EXPECT_EQ(w[0].source->spec().sample_shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(w[0].source->labels(), (std::vector<int64_t>{0, 1}));
  w[0].source->read(0, 1, v);
  EXPECT_EQ(std::vector<float>(v, v + 3), (std::vector<float>{0.15f, -2, 3}));
}

// Subjects: windows stop at each subject's rows, and validation takes whole subjects.
TEST(CsvImport, GroupColumnKeepsWindowsAndValidationWithinSubjects) {
  const std::string dir = fresh_dir("csv");
  std::ofstream out(dir + "/har.csv");
  out << "subject,x,activity\n";
  // 6 subjects x 10 rows, one activity each: s0 walk, s1 sit, s2 walk, ...
  for (int sub = 0; sub < 6; ++sub)
    for (int r = 0; r < 10; ++r) out << "s" << sub << "," << sub * 100 + r << "," << (sub % 2 ? "sit" : "walk") << "\n";
  out.close();
  CsvOptions opt;
  opt.window = 4;
  opt.stride = 4;
  opt.group_column = "subject";
  std::vector<std::string> names;
  auto inputs = open_csv({{"train", dir + "/har.csv"}}, opt, &names);
  auto& src = *inputs[0].source;
  EXPECT_EQ(src.spec().sample_shape, (std::vector<int64_t>{1, 4}));  // the group column is not a feature
  ASSERT_EQ(src.count(), 12);                                        // 2 windows per subject (rows 0..3, 4..7)
  EXPECT_EQ(src.groups(), (std::vector<int64_t>{0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5}));
  float w[4];
  src.read(3, 1, w);  // subject 1's second window: rows 104..107, never 108, 109, 200
  EXPECT_EQ(std::vector<float>(w, w + 4), (std::vector<float>{104, 105, 106, 107}));

  PlanOptions plan;
  plan.val_fraction = 0.3;
  plan.seed = 7;
  const auto a = plan_import(src.labels(), 2, "train", plan, src.groups(), "har.csv");
  ASSERT_EQ(a.size(), 2u);
  std::set<int64_t> train_groups, val_groups;
  for (const auto& shard : a[0].shards)
    for (const int64_t i : shard) train_groups.insert(src.groups()[static_cast<size_t>(i)]);
  for (const auto& shard : a[1].shards)
    for (const int64_t i : shard) val_groups.insert(src.groups()[static_cast<size_t>(i)]);
  EXPECT_EQ(a[1].count(), 4);  // round(0.3 * 12) = 4: two whole subjects
  EXPECT_EQ(val_groups.size(), 2u);
  for (const int64_t g : val_groups) EXPECT_EQ(train_groups.count(g), 0u) << "subject " << g << " in both splits";
  EXPECT_EQ(plan_import(src.labels(), 2, "train", plan, src.groups(), "har.csv")[1].shards, a[1].shards);

  // Uneven groups (helper-41's trials of 11, 15, 11, 6, 30 and 16 clips at 0.3): validation
  // was every group until it held enough, 63% with one seed. Now near the fraction for all.
  std::vector<int64_t> uneven, no_labels;
  int64_t id = 0;
  for (const int n : {11, 15, 11, 6, 30, 16}) uneven.insert(uneven.end(), static_cast<size_t>(n), id++);
  no_labels.assign(uneven.size(), 0);
  for (uint64_t seed = 0; seed < 10; ++seed) {
    plan.seed = seed;
    const double share = static_cast<double>(plan_import(no_labels, 1, "train", plan, uneven, "t.csv")[1].count()) /
                         static_cast<double>(uneven.size());
    EXPECT_NEAR(share, 0.3, 0.05) << "seed " << seed;
  }
  plan.seed = 7;
  const std::vector<int64_t> one_group(12, 0);
  EXPECT_ERROR_CONTAINS(plan_import(src.labels(), 2, "train", plan, one_group, "har.csv"),
                        "har.csv: --val-fraction with groups needs at least 2 groups, found 1");
  opt.group_column = "nope";
  EXPECT_ERROR_CONTAINS(open_csv({{"train", dir + "/har.csv"}}, opt, &names), "no column named 'nope'");
  opt.group_column = "activity";
  EXPECT_ERROR_CONTAINS(open_csv({{"train", dir + "/har.csv"}}, opt, &names), "the same column");
  opt.group_column = "subject";
  opt.window = 11;  // longer than any subject's rows
  EXPECT_ERROR_CONTAINS(open_csv({{"train", dir + "/har.csv"}}, opt, &names), "no window of 11 rows fits");
}

TEST(CsvImport, ErrorsNameFileAndLine) {
  const std::string dir = fresh_dir("csv");
  std::vector<std::string> names;
  std::ofstream(dir + "/bad.csv") << "a,b,l\n1,2,0\n1,x,1\n";
  EXPECT_ERROR_CONTAINS(open_csv({{"train", dir + "/bad.csv"}}, CsvOptions{}, &names),
                        "bad.csv:3: column 'b' value 'x' is not a finite number");
  std::ofstream(dir + "/ragged.csv") << "1,2,0\n1,2\n";
  EXPECT_ERROR_CONTAINS(open_csv({{"train", dir + "/ragged.csv"}}, CsvOptions{}, &names), "ragged.csv:2: 2 fields, expected 3");
  std::ofstream(dir + "/nan.csv") << "1,nan,0\n";
  EXPECT_ERROR_CONTAINS(open_csv({{"train", dir + "/nan.csv"}}, CsvOptions{}, &names), "not a finite number");
  CsvOptions named;
  named.label_column = "label";
  EXPECT_ERROR_CONTAINS(open_csv({{"train", dir + "/ragged.csv"}}, named, &names), "no column named 'label'");
  CsvOptions windowed;
  windowed.window = 5;
  std::ofstream(dir + "/short.csv") << "1,0\n2,0\n";
  EXPECT_ERROR_CONTAINS(open_csv({{"train", dir + "/short.csv"}}, windowed, &names), "no window of 5 rows fits");
  EXPECT_ERROR_CONTAINS(open_csv({{"train", dir + "/none.csv"}}, CsvOptions{}, &names), "cannot read CSV file");
}

// Issue 31 (16): NaN/Inf in the input was blamed on the output shard; it names the input
// file and the sample now, whichever shard the sample was dealt to.
TEST(Hdf5Import, NonFiniteInputIsBlamedOnTheInputAndSample) {
  for (const double bad : {std::nan(""), double{INFINITY}, -double{INFINITY}}) {
    const std::string dir = fresh_dir("h5nan");
    const std::string path = make_h5(dir, 40, H5T_IEEE_F32LE);
    {
      H5Handle f(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT));
      H5Handle d(H5Dopen2(f.get(), "x", H5P_DEFAULT));
      std::vector<double> values(40 * 6);
      for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i % 200);
      values[37 * 6 + 4] = bad;  // sample 37
      H5Dwrite(d.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
    }
    std::vector<InputSplit> inputs;
    inputs.push_back({"train", open_hdf5_source(path, "x", "y"), true});
    PlanOptions plan;
    plan.shards = 3;
    EXPECT_ERROR_CONTAINS(import(std::move(inputs), fresh_dir("out"), plan),
                          path + ": sample 37 (0-based, in the input's order) contains NaN or Inf (here: " +
                              (std::isnan(bad) ? "NaN" : "Inf"));
  }
}

// Issue 31 (9, 12): `shard` wrote datasets its own reader refuses (labels up to 10^6, 9-D
// samples) or crashed on them (a zero-length dimension: SIGFPE). The importer now checks
// the reader's own limits (io::spec_problem) before writing anything.
TEST(Hdf5Import, DatasetsTheReaderWouldRefuseAreNotWritten) {
  const auto h5 = [](const std::string& dir, std::vector<hsize_t> dims, int32_t top_label) {
    const std::string path = dir + "/odd.h5";
    h5_quiet();
    H5Handle f(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
    H5Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr));
    H5Handle d(H5Dcreate2(f.get(), "x", H5T_STD_U8LE, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    hsize_t elems = 1;
    for (const hsize_t v : dims) elems *= v;
    std::vector<uint8_t> values(elems, 7);
    if (elems > 0) H5Dwrite(d.get(), H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
    const hsize_t n = dims[0];
    H5Handle lspace(H5Screate_simple(1, &n, nullptr));
    H5Handle l(H5Dcreate2(f.get(), "y", H5T_STD_I32LE, lspace.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    std::vector<int32_t> labels(n, 0);
    labels[n - 1] = top_label;
    H5Dwrite(l.get(), H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, labels.data());
    return path;
  };
  const struct {
    std::vector<hsize_t> dims;
    int32_t top;
    const char* why;
  } cases[] = {{{6, 2, 2}, 1000000, "num_classes 1000001 is outside"},
               {{6, 1, 1, 1, 1, 1, 1, 1, 1, 2}, 1, "sample_shape must have 1 to 8 dimensions"},
               {{6, 2, 0, 3}, 1, "is not a valid sample size"}};
  for (const auto& c : cases) {
    const std::string dir = fresh_dir("odd");
    std::unique_ptr<SampleSource> src;
    try {
      src = open_hdf5_source(h5(dir, c.dims, c.top), "x", "y");
    } catch (const Error& e) {  // refused by the source itself: as good, if it names the file
      EXPECT_NE(std::string(e.what()).find("odd.h5"), std::string::npos) << e.what();
      continue;
    }
    std::vector<InputSplit> inputs;
    inputs.push_back({"train", std::move(src), true});
    const std::string out = dir + "/out";
    EXPECT_ERROR_CONTAINS(import(std::move(inputs), out), c.why);
    EXPECT_FALSE(path_exists(out + "/manifest.json")) << c.why;
  }
}

TEST(Hdf5Import, ReshardsAFloatFileIntoShardsWithValidation) {
  const std::string dir = fresh_dir("h5");
  const std::string path = make_h5(dir, 300, H5T_IEEE_F64LE);
  auto src = open_hdf5_source(path, "x", "y");
  EXPECT_EQ(src->spec().dtype, DType::kFloat32);  // doubles become float32
  EXPECT_EQ(src->spec().sample_shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(src->spec().num_classes, 3);
  std::vector<InputSplit> inputs;
  inputs.push_back({"train", std::move(src), true});
  PlanOptions plan;
  plan.shards = 4;
  plan.val_fraction = 0.1;
  const std::string out = fresh_dir("out");
  const Manifest m = import(std::move(inputs), out, plan).manifest;
  EXPECT_EQ(m.split("train", out).count(), 270);
  EXPECT_EQ(m.split("val", out).count(), 30);
  EXPECT_EQ(m.split("val", out).shards[0].histogram.size(), 3u);
  EXPECT_EQ(verify_dataset(out).size(), 8u);
  // Bytes survive: every train sample read back equals the source value pattern.
  const RankReader reader(out, m, "train", 0, 1, ReaderOptions{});
  std::vector<float> samples(270 * 6);
  std::vector<int64_t> labels(270);
  StreamCache cache;
  reader.fill(reader.order(false, 0, 0), 0, 270, samples.data(), labels.data(), cache);
  for (const float v : samples) EXPECT_TRUE(v >= 0 && v < 200 && v == static_cast<float>(static_cast<int>(v)));
}

TEST(Hdf5Import, Errors) {
  const std::string dir = fresh_dir("h5");
  EXPECT_ERROR_CONTAINS(open_hdf5_source(dir + "/none.h5", "x", "y"), "does not exist");
  std::ofstream(dir + "/text.h5") << "not hdf5";
  EXPECT_ERROR_CONTAINS(open_hdf5_source(dir + "/text.h5", "x", "y"), "not an HDF5 file");
  const std::string path = make_h5(dir, 10, H5T_STD_U8LE, /*with_labels=*/false);
  EXPECT_ERROR_CONTAINS(open_hdf5_source(path, "x", "y"), "no dataset 'y'");
  EXPECT_ERROR_CONTAINS(open_hdf5_source(path, "samples", "x"), "no dataset 'samples'");
  const std::string ints = make_h5(fresh_dir("i32"), 10, H5T_STD_I32LE);
  EXPECT_ERROR_CONTAINS(open_hdf5_source(ints, "x", "y"), "sample type lockstep does not store");
}

TEST(Importer, LabelsOutsideClassNamesAndUnwritableOutput) {
  const std::string dir = fresh_dir("imp");
  std::ofstream(dir + "/d.csv") << "1,0\n2,1\n3,2\n";
  std::vector<std::string> names;
  ImportOptions opt;
  opt.output_dir = fresh_dir("out");
  opt.class_names = {"a", "b"};
  EXPECT_ERROR_CONTAINS(run_import(open_csv({{"train", dir + "/d.csv"}}, CsvOptions{}, &names), opt, "t", "fp"),
                        "--class-names gives 2 names, the labels need 3");
  opt.class_names.clear();
  std::ofstream(dir + "/file") << "x";
  opt.output_dir = dir + "/file/sub";
  EXPECT_ERROR_CONTAINS(run_import(open_csv({{"train", dir + "/d.csv"}}, CsvOptions{}, &names), opt, "t", "fp"),
                        "cannot create directory");
}

TEST(Unlabeled, Hdf5AndCsvImportWithoutLabels) {
  const std::string dir = fresh_dir("unlabeled");
  auto src = open_hdf5_source(make_h5(dir, 40, H5T_STD_U8LE, /*with_labels=*/false), "x", "none");
  EXPECT_FALSE(src->spec().labeled);
  std::vector<InputSplit> inputs;
  inputs.push_back({"train", std::move(src), true});
  PlanOptions plan;
  plan.shards = 2;
  plan.val_fraction = 0.25;  // no labels: a plain random cut
  const std::string out = fresh_dir("out");
  const Manifest m = import(std::move(inputs), out, plan).manifest;
  EXPECT_FALSE(m.spec.labeled);
  EXPECT_EQ(m.split("val", out).count(), 10);
  EXPECT_TRUE(m.split("train", out).shards[0].histogram.empty());
  EXPECT_EQ(verify_dataset(out).size(), 4u);
  const RankReader reader(out, m, "train", 0, 1, ReaderOptions{});
  std::vector<unsigned char> samples(30 * 6);
  std::vector<int64_t> labels(30, 7);
  StreamCache cache;
  reader.fill(reader.order(false, 0, 0), 0, 30, samples.data(), labels.data(), cache);
  for (const int64_t l : labels) EXPECT_EQ(l, -1);

  std::ofstream(dir + "/u.csv") << "1,2,3\n4,5,6\n";
  CsvOptions opt;
  opt.label_column = "none";
  std::vector<std::string> names;
  auto csv = open_csv({{"train", dir + "/u.csv"}}, opt, &names);
  EXPECT_FALSE(csv[0].source->spec().labeled);
  EXPECT_EQ(csv[0].source->spec().sample_shape, (std::vector<int64_t>{3}));
}

// A class-sorted source in one shard: the shard stores the plan's random order (staged and
// reordered window by window: a tiny window forces many), every byte in its place, the
// manifest says so, and no staging file is left; --no-shuffle keeps source order.
TEST(Importer, ShuffledShardsStoreThePlannedOrder) {
  const DatasetSpec spec = shape_spec({2, 3}, 3);
  const int64_t n = 90;
  std::vector<unsigned char> samples;
  std::vector<int64_t> unused;
  tiny_data(spec, n, &samples, &unused);
  std::vector<int64_t> sorted_labels(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) sorted_labels[static_cast<size_t>(i)] = i / 30;  // 30 of class 0, then 1, then 2
  for (const bool shuffle : {true, false}) {
    std::vector<InputSplit> inputs;
    inputs.push_back({"train", std::make_unique<MemorySource>("sorted", spec, samples, sorted_labels), false});
    ImportOptions opt;
    opt.output_dir = fresh_dir(shuffle ? "shuffled" : "source");
    opt.plan.shuffle = shuffle;
    opt.plan.seed = 3;
    opt.reorder_window_bytes = 7 * (spec.sample_bytes() + sizeof(int64_t));  // 7 samples a window
    const Manifest m = run_import(std::move(inputs), opt, "sorted", "fp").manifest;
    EXPECT_EQ(m.sample_order, shuffle ? SampleOrder::kShuffled : SampleOrder::kSource);
    EXPECT_EQ(read_manifest(opt.output_dir).sample_order, m.sample_order);
    for (const std::string& f : list_dir(opt.output_dir))
      EXPECT_FALSE(io::parse_temp_name(f)) << "left behind: " << f;
    const auto plan = plan_import(sorted_labels, 3, "train", opt.plan);
    const auto& order = plan[0].shards[0];
    ShardFile shard(opt.output_dir + "/" + m.split("train", "").shards[0].file, m.spec);
    std::vector<unsigned char> got(static_cast<size_t>(n) * spec.sample_bytes());
    std::vector<int64_t> labels(static_cast<size_t>(n));
    shard.read(0, n, got.data(), labels.data());
    for (int64_t p = 0; p < n; ++p) {
      const int64_t src = order[static_cast<size_t>(p)];
      EXPECT_EQ(labels[static_cast<size_t>(p)], sorted_labels[static_cast<size_t>(src)]);
      EXPECT_EQ(0, std::memcmp(got.data() + p * spec.sample_bytes(), samples.data() + src * spec.sample_bytes(),
                               spec.sample_bytes()))
          << "stored position " << p;
    }
    EXPECT_EQ(shard.read_class_labels(0, n), labels);
    // The first half of the shard: all three classes when shuffled, classes 0 and 1 only in source order.
    const std::set<int64_t> first_half(labels.begin(), labels.begin() + n / 2);
    EXPECT_EQ(first_half.size(), shuffle ? 3u : 2u);
  }
}
