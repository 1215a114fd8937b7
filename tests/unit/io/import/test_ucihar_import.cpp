// The UCI-HAR directory layout: nine inertial channels or the feature file, subjects as
// groups, activity names, and refusals naming the file and line.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <fstream>

#include "core/base/error.hpp"
#include "io/import/import_spec.hpp"
#include "io/import/ucihar_import.hpp"
#include "test_helpers.hpp"

using namespace lockstep;
using namespace lockstep::io;
using namespace lockstep::testing;

namespace {

const char* const kChannels[] = {"body_acc_x", "body_acc_y", "body_acc_z", "body_gyro_x", "body_gyro_y",
                                 "body_gyro_z", "total_acc_x", "total_acc_y", "total_acc_z"};

// A UCI-HAR layout with N windows of length 4 per split: channel k of window i holds
// values 1000*k + 10*i + t; window i is activity (i % 3) + 1, subject BASE + i / 2.
void write_split(const std::string& dir, const std::string& split, int n, int subject_base) {
  const std::string base = dir + "/" + split;
  ::mkdir(base.c_str(), 0755);
  ::mkdir((base + "/Inertial Signals").c_str(), 0755);
  std::ofstream y(base + "/y_" + split + ".txt"), s(base + "/subject_" + split + ".txt"),
      x(base + "/X_" + split + ".txt");
  for (int i = 0; i < n; ++i) {
    y << (i % 3) + 1 << "\n";
    s << subject_base + i / 2 << "\n";
    x << "  " << i << ".5e-1 -" << i << " 2.0000000e+00\n";  // UCI's leading spaces and exponents
  }
  for (int k = 0; k < 9; ++k) {
    std::ofstream c(base + "/Inertial Signals/" + kChannels[k] + "_" + split + ".txt");
    for (int i = 0; i < n; ++i) {
      for (int t = 0; t < 4; ++t) c << "  " << 1000 * k + 10 * i + t;
      c << "\n";
    }
  }
}

std::string make_layout(const std::string& name) {
  const std::string dir = fresh_dir(name);
  std::ofstream(dir + "/activity_labels.txt") << "1 WALKING\n2 SITTING\n3 LAYING\n";
  write_split(dir, "train", 6, 1);
  write_split(dir, "test", 4, 20);
  return dir;
}

}  // namespace

TEST(UciHarImport, InertialSignalsBecomeNineChannelsWithSubjectsAsGroups) {
  const std::string dir = make_layout("ucihar");
  std::vector<std::string> names, files;
  auto inputs = open_ucihar(dir, "inertial", &names, &files);
  ASSERT_EQ(inputs.size(), 2u);
  EXPECT_EQ(names, (std::vector<std::string>{"WALKING", "SITTING", "LAYING"}));
  EXPECT_EQ(files.size(), 1u + 2 * (2 + 9));
  auto& train = *inputs[0].source;
  EXPECT_EQ(train.spec().sample_shape, (std::vector<int64_t>{9, 4}));
  EXPECT_EQ(train.labels(), (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(train.groups(), (std::vector<int64_t>{1, 1, 2, 2, 3, 3}));
  EXPECT_TRUE(inputs[0].with_val);
  EXPECT_EQ(inputs[1].split, "test");
  EXPECT_EQ(inputs[1].source->groups(), (std::vector<int64_t>{20, 20, 21, 21}));
  std::vector<float> w(9 * 4);
  train.read(2, 1, w.data());
  EXPECT_EQ(w[0], 20);            // body_acc_x, window 2, t 0
  EXPECT_EQ(w[4 * 3 + 1], 3021);  // body_gyro_x, t 1
  EXPECT_EQ(w[4 * 8 + 3], 8023);  // total_acc_z, t 3
}

TEST(UciHarImport, FeatureFileGivesOneVectorPerWindow) {
  const std::string dir = make_layout("ucihar-features");
  std::vector<std::string> names, files;
  auto inputs = open_ucihar(dir, "features", &names, &files);
  EXPECT_EQ(inputs[0].source->spec().sample_shape, (std::vector<int64_t>{3}));
  float v[3];
  inputs[0].source->read(1, 1, v);
  EXPECT_FLOAT_EQ(v[0], 1.5e-1f);
  EXPECT_EQ(v[1], -1);
  EXPECT_EQ(v[2], 2);
}

TEST(UciHarImport, BadLayoutsAreOneErrorNamingTheFile) {
  std::vector<std::string> names, files;
  EXPECT_ERROR_CONTAINS(open_ucihar(fresh_dir("ucihar-empty"), "inertial", &names, &files),
                        "not a UCI-HAR directory (no train/ inside)");
  ImportSpec spec;  // option values are checked by open_import, before any file is opened: exit 2
  spec.input = "ucihar:" + make_layout("ucihar-sig");
  spec.har_signals = "raw";
  EXPECT_THROW(open_import(spec), UsageError);
  EXPECT_ERROR_CONTAINS(open_import(spec), "--har-signals must be inertial | features, not 'raw'");

  std::string dir = make_layout("ucihar-label");
  std::ofstream(dir + "/train/y_train.txt", std::ios::app) << "7\n";
  std::ofstream(dir + "/train/subject_train.txt", std::ios::app) << "9\n";
  EXPECT_ERROR_CONTAINS(open_ucihar(dir, "inertial", &names, &files),
                        "y_train.txt:7: activity 7 is not in activity_labels.txt (1..3)");

  dir = make_layout("ucihar-count");
  std::ofstream(dir + "/train/subject_train.txt", std::ios::app) << "9\n";
  EXPECT_ERROR_CONTAINS(open_ucihar(dir, "inertial", &names, &files), "subject_train.txt: 7 lines, ");

  dir = make_layout("ucihar-value");
  std::ofstream(dir + "/train/Inertial Signals/body_gyro_y_train.txt", std::ios::app) << " 1 2 nan 4\n";
  EXPECT_ERROR_CONTAINS(open_ucihar(dir, "inertial", &names, &files),
                        "body_gyro_y_train.txt:7: value 3 'nan' is not a finite number");

  dir = make_layout("ucihar-width");
  std::ofstream(dir + "/test/X_test.txt", std::ios::app) << "1 2\n";
  EXPECT_ERROR_CONTAINS(open_ucihar(dir, "features", &names, &files), "X_test.txt:5: 2 values, the first line has 3");

  dir = make_layout("ucihar-names");
  std::ofstream(dir + "/activity_labels.txt") << "1 WALKING\n3 LAYING\n";
  EXPECT_ERROR_CONTAINS(open_ucihar(dir, "inertial", &names, &files), "activity ids must be 1..2");
  std::ofstream(dir + "/activity_labels.txt") << "1 WALKING\n1 SITTING\n";
  EXPECT_ERROR_CONTAINS(open_ucihar(dir, "inertial", &names, &files), "activity_labels.txt:2: activity id 1 appears twice");
}
