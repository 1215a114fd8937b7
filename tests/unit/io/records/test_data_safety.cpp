// Data safety (issue 11): nothing lockstep did not create is destroyed, no changed byte is
// trained on, no file is written through a planted link, a header's size claim is
// checked before allocating, and metrics/run directories survive crashes. Each test
// failed before its fix.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "io/records/checkpoint_store.hpp"
#include "io/util/dir_lock.hpp"
#include "io/util/file_util.hpp"
#include "io/util/temp_files.hpp"
#include "io/util/h5.hpp"
#include "io/import/idx_import.hpp"
#include "io/import/importer.hpp"
#include "io/records/metrics_log.hpp"
#include "io/records/run_dir.hpp"
#include "io/import/sample_source.hpp"
#include "io/loader/sample_store.hpp"
#include "io/dataset/shard_reader.hpp"
#include "io/dataset/shard_writer.hpp"
#include "test_helpers.hpp"

using namespace lockstep;
using namespace lockstep::io;
using namespace lockstep::testing;

namespace {

std::vector<InputSplit> tiny_input(int64_t n) {
  DatasetSpec spec = tiny_spec();
  std::vector<unsigned char> samples;
  std::vector<int64_t> labels;
  tiny_data(spec, n, &samples, &labels);
  std::vector<InputSplit> in;
  in.push_back({"train", std::make_unique<MemorySource>("tiny", spec, std::move(samples), std::move(labels)), true});
  return in;
}

ImportOptions import_opts(const std::string& out, bool force = false) {
  ImportOptions opt;
  opt.output_dir = out;
  opt.force = force;
  opt.plan.shards = 2;
  return opt;
}

void flip_byte(const std::string& path, int64_t offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(offset);
  const char c = static_cast<char>(f.get());
  f.seekp(offset);
  f.put(static_cast<char>(c ^ 0x5a));
}

// Byte offset of the first chunk of /samples in a shard.
int64_t first_chunk_offset(const std::string& path) {
  h5_quiet();
  H5Handle f(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  H5Handle d(H5Dopen2(f.get(), "samples", H5P_DEFAULT));
  hsize_t offset[4] = {0, 0, 0, 0};
  haddr_t addr = 0;
  hsize_t size = 0;
  unsigned mask = 0;
  EXPECT_GE(H5Dget_chunk_info_by_coord(d.get(), offset, &mask, &addr, &size), 0);
  return static_cast<int64_t>(addr);
}

}  // namespace

TEST(Manifest, NamesThatLeaveTheDatasetDirectoryAreRefused) {
  const std::string dir = fresh_dir("escape");
  write_tiny_dataset(dir, 12, 1);
  std::string text = read_text_file(dir + "/manifest.json");
  const std::string good = "train-00000-of-00001.h5";
  std::string bad = text;
  bad.replace(bad.find(good), good.size(), "../../etc/passwd");
  std::ofstream(dir + "/manifest.json") << bad;
  EXPECT_ERROR_CONTAINS(read_manifest(dir), "shard file '../../etc/passwd' is not a plain file name");
}

TEST(Manifest, MalformedFieldsAreNamedNotBareConversions) {
  const std::string dir = fresh_dir("fields");
  write_tiny_dataset(dir, 12, 1);
  const std::string text = read_text_file(dir + "/manifest.json");
  const auto edit = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    const auto pos = t.find(from);
    ASSERT_NE(pos, std::string::npos) << from;
    t.replace(pos, from.size(), to);
    std::ofstream(dir + "/manifest.json") << t;
  };
  edit("\"crc32\":\"", "\"crc32\":\"zz");  // was a bare std::stoul exception
  EXPECT_ERROR_CONTAINS(read_manifest(dir), "expected 8 hex digits");
  edit("\"sample_shape\":[1,4,4]", "\"sample_shape\":[1,\"four\",4]");
  EXPECT_ERROR_CONTAINS(read_manifest(dir), "key 'sample_shape' holds a malformed value [1,\"four\",4]");
  edit("\"sample_shape\":[1,4,4]", "\"sample_shape\":[1,4,-4]");
  EXPECT_ERROR_CONTAINS(read_manifest(dir), "is not a valid sample size");
  edit("\"num_classes\":3", "\"num_classes\":4000000000");
  EXPECT_ERROR_CONTAINS(read_manifest(dir), "num_classes 4000000000 is outside");
  edit("\"std\":[2.0]", "\"std\":[0.0]");
  EXPECT_ERROR_CONTAINS(read_manifest(dir), "std must be finite and positive");
  edit("\"mean\":[10.0]", "\"mean\":[1e300]");  // finite, but float32 normalisation overflows (issue 31)
  EXPECT_ERROR_CONTAINS(read_manifest(dir), "channel 0 has mean 1e+300");
  edit("\"mean\":[10.0]", "\"mean\":[10.0,11.0]");
  EXPECT_ERROR_CONTAINS(read_manifest(dir), "mean/std have 2/1 entries for 1 channels");
}

TEST(ShardIntegrity, AChangedDataByteIsCaughtByTheChunkChecksum) {
  const std::string dir = fresh_dir("flip");
  const Manifest m = write_tiny_dataset(dir, 40, 1);
  const std::string shard = dir + "/train-00000-of-00001.h5";
  ShardFile before(shard, m.spec, &m.split("train", dir).shards[0], m.dataset_id);
  EXPECT_TRUE(before.chunk_checksums());
  flip_byte(shard, first_chunk_offset(shard) + 7);
  // uint8 samples have no NaN check: before Fletcher-32 this byte trained silently.
  EXPECT_ERROR_CONTAINS(load_rank_samples(dir, m, "train", 0, 1), "fails its checksum");
}

TEST(ShardIntegrity, ShardsWithoutChunkChecksumsAreVerifiedOnceAtOpen) {
  const std::string dir = fresh_dir("legacy");
  Manifest m;
  m.spec = tiny_spec();
  std::vector<unsigned char> samples;
  std::vector<int64_t> labels;
  tiny_data(m.spec, 40, &samples, &labels);
  WriteOptions legacy;
  legacy.chunk_checksums = false;  // what lockstep 0.1 wrote
  m.splits.emplace_back("train", write_split(dir, "train", m.spec, samples.data(), labels.data(), 40, 1, legacy));
  write_manifest(dir, m);
  const std::string shard = dir + "/train-00000-of-00001.h5";
  EXPECT_NO_THROW(load_rank_samples(dir, m, "train", 0, 1));
  flip_byte(shard, first_chunk_offset(shard) + 7);
  EXPECT_ERROR_CONTAINS(load_rank_samples(dir, m, "train", 0, 1), "checksum mismatch (manifest crc32");
}

TEST(ShardIntegrity, AShardOfAnotherImportIsRefused) {
  const std::string a = fresh_dir("a"), b = fresh_dir("b");
  run_import(tiny_input(40), import_opts(a), "tiny", "fp");
  run_import(tiny_input(40), import_opts(b), "tiny", "fp");
  const Manifest ma = read_manifest(a);
  EXPECT_FALSE(ma.dataset_id.empty());
  // Same name, same count, valid file: only the import id tells them apart.
  ASSERT_EQ(::rename((b + "/train-00000-of-00002.h5").c_str(), (a + "/train-00000-of-00002.h5").c_str()), 0);
  EXPECT_ERROR_CONTAINS(load_rank_samples(a, ma, "train", 0, 1), "shard of another import");
}

TEST(ShardIntegrity, StoredTypeMustMatchTheManifestNotBeConverted) {
  const std::string dir = fresh_dir("dtype");
  const Manifest m = write_tiny_dataset(dir, 20, 1);
  const std::string path = dir + "/train-00000-of-00001.h5";
  {  // rewrite /samples as float32 while the attribute still says uint8
    h5_quiet();
    H5Handle f(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT));
    ASSERT_GE(H5Ldelete(f.get(), "samples", H5P_DEFAULT), 0);
    const hsize_t dims[4] = {20, 1, 4, 4};
    H5Handle space(H5Screate_simple(4, dims, nullptr));
    H5Handle d(H5Dcreate2(f.get(), "samples", H5T_NATIVE_FLOAT, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    std::vector<float> v(320, 300.0f);  // would clamp to 255 as uint8
    ASSERT_GE(H5Dwrite(d.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), 0);
  }
  EXPECT_ERROR_CONTAINS(ShardFile(path, m.spec), "/samples is stored as float32, the manifest says uint8");
}

TEST(ImportSafety, RefusesADirectoryHoldingAnotherDatasetOrOtherFiles) {
  const std::string out = fresh_dir("other");
  run_import(tiny_input(40), import_opts(out), "idx:/data/one", "fp1");
  EXPECT_ERROR_CONTAINS(run_import(tiny_input(40), import_opts(out), "csv:/data/two.csv", "fp2"),
                        "holds dataset 'dataset' made from idx:/data/one");
  EXPECT_EQ(read_manifest(out).source, "idx:/data/one");
  // The same source with other options re-imports its own dataset.
  EXPECT_NO_THROW(run_import(tiny_input(30), import_opts(out), "idx:/data/one", "fp3"));
  EXPECT_NO_THROW(run_import(tiny_input(30), import_opts(out, /*force=*/true), "csv:/data/two.csv", "fp4"));

  const std::string home = fresh_dir("home");
  std::ofstream(home + "/thesis.tex") << "years of work";
  EXPECT_ERROR_CONTAINS(run_import(tiny_input(40), import_opts(home), "tiny", "fp"),
                        "holds files that are not a lockstep dataset (thesis.tex)");
  EXPECT_EQ(read_text_file(home + "/thesis.tex"), "years of work");
}

TEST(ImportSafety, AnInputTheImportWouldOverwriteIsRefusedEvenWithForce) {
  const std::string out = fresh_dir("self");
  run_import(tiny_input(40), import_opts(out), "tiny", "fp");
  ImportOptions opt = import_opts(out, /*force=*/true);
  opt.input_files = {out + "/train-00000-of-00002.h5"};
  EXPECT_ERROR_CONTAINS(run_import(tiny_input(40), opt, "hdf5:" + out + "/train-00000-of-00002.h5", "fp2"),
                        "this import would overwrite or delete it");
  ImportOptions inside = import_opts(out);
  inside.input_files = {out};  // an IDX directory that is the output directory
  EXPECT_ERROR_CONTAINS(run_import(tiny_input(40), inside, "tiny", "fp3"), "overlap");
}

TEST(ImportSafety, AFailedReimportLeavesThePreviousDatasetIntact) {
  const std::string out = fresh_dir("intact");
  run_import(tiny_input(40), import_opts(out), "tiny", "fp1");
  const std::string before = read_text_file(out + "/manifest.json");
  // A source that fails in the middle of the pass (a NaN sample in float data).
  DatasetSpec spec = tiny_spec();
  spec.dtype = DType::kFloat32;
  std::vector<float> values(40 * 16, 1.0f);
  values[30 * 16] = std::nanf("");
  std::vector<unsigned char> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  std::vector<int64_t> labels(40, 1);
  std::vector<InputSplit> in;
  in.push_back({"train", std::make_unique<MemorySource>("bad", spec, std::move(bytes), std::move(labels)), true});
  EXPECT_ERROR_CONTAINS(run_import(std::move(in), import_opts(out), "tiny", "fp2"), "contains NaN or Inf");
  EXPECT_EQ(read_text_file(out + "/manifest.json"), before);
  EXPECT_NO_THROW(verify_dataset(out));
  for (const auto& f : list_dir(out)) EXPECT_FALSE(parse_temp_name(f)) << f;
}

TEST(ImportSafety, LeftoverTempFilesOfAKilledImportAreRemovedAndAUsersAreNot) {
  const std::string out = fresh_dir("leftover");
  run_import(tiny_input(40), import_opts(out), "tiny", "fp");
  const std::string half = "train-00000-of-00002.h5.lockstep-tmp." + std::to_string(exited_pid()) + "." + this_writer().host;
  std::ofstream(out + "/" + half) << "half a shard";
  run_import(tiny_input(40), import_opts(out, true), "tiny", "fp2");
  for (const auto& f : list_dir(out)) EXPECT_FALSE(parse_temp_name(f)) << f;
  // Issue 31 (2): a user's "*.tmp.*" file is not a killed import's: the directory is
  // refused, the file kept.
  const std::string home = fresh_dir("home");
  std::ofstream(home + "/thesis.tex.tmp.4242") << "years of work";
  EXPECT_ERROR_CONTAINS(run_import(tiny_input(40), import_opts(home), "tiny", "fp"),
                        "holds files that are not a lockstep dataset (thesis.tex.tmp.4242)");
  EXPECT_EQ(read_text_file(home + "/thesis.tex.tmp.4242"), "years of work");
  EXPECT_EQ(list_dir(home).size(), 1u);
}

TEST(ImportSafety, OneImportPerDirectoryAtATime) {
  const std::string out = fresh_dir("concurrent") + "/d";
  run_import(tiny_input(40), import_opts(out), "tiny", "fp");
  const std::string before = read_text_file(out + "/manifest.json");
  {
    DirLock other(out, "dataset", "--output", [](const std::string&) { return true; });  // another `shard` at work
    EXPECT_ERROR_CONTAINS(run_import(tiny_input(40), import_opts(out, true), "tiny", "fp2"),
                          "dataset directory " + out + " is in use by another job (pid ");
  }
  EXPECT_EQ(read_text_file(out + "/manifest.json"), before);
  // A new directory a refused import created is not left behind (nor its lock file).
  const std::string fresh = fresh_dir("concurrent") + "/new";
  DatasetSpec spec = tiny_spec();
  spec.dtype = DType::kFloat32;
  std::vector<float> values(40 * 16, 1.0f);
  values[30 * 16] = std::nanf("");  // found while writing, after the directory was made and locked
  std::vector<unsigned char> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  std::vector<InputSplit> bad;
  bad.push_back({"train", std::make_unique<MemorySource>("bad", spec, std::move(bytes), std::vector<int64_t>(40, 1)),
                 true});
  EXPECT_ERROR_CONTAINS(run_import(std::move(bad), import_opts(fresh), "tiny", "fp"), "contains NaN or Inf");
  EXPECT_FALSE(path_exists(fresh));
}

TEST(ImportSafety, ForceReplacesTheWholeOldDatasetNotOnlyTheSplitsWrittenNow) {
  const std::string out = fresh_dir("force");
  std::vector<InputSplit> two = tiny_input(40);
  {
    DatasetSpec spec = tiny_spec();
    std::vector<unsigned char> samples;
    std::vector<int64_t> labels;
    tiny_data(spec, 20, &samples, &labels);
    two.push_back({"test", std::make_unique<MemorySource>("tiny-test", spec, std::move(samples), std::move(labels)),
                   false});
  }
  run_import(std::move(two), import_opts(out), "tiny", "fp");
  ASSERT_TRUE(path_exists(out + "/test-00000-of-00002.h5"));
  run_import(tiny_input(40), import_opts(out, true), "other", "fp2");
  for (const auto& f : list_dir(out)) EXPECT_NE(f.rfind("test-", 0), 0u) << "the old dataset's split was left: " << f;
  EXPECT_NO_THROW(verify_dataset(out));
}

TEST(IdxHeader, SizeClaimsAreCheckedBeforeAllocating) {
  const std::string dir = fresh_dir("idx");
  const std::string path = dir + "/huge-idx3-ubyte";
  {
    std::ofstream f(path, std::ios::binary);
    const unsigned char header[] = {0, 0, 8, 3, 0x7f, 0xff, 0xff, 0xff, 0x00, 0x00, 0xff, 0xff, 0x00, 0x00, 0xff, 0xff};
    f.write(reinterpret_cast<const char*>(header), sizeof header);
    f << "only a few bytes";
  }
  // Before: std::bad_alloc or vector::_M_default_append.
  EXPECT_ERROR_CONTAINS(read_idx(path), "more than 2^40 elements");
  {
    std::ofstream f(path, std::ios::binary);
    const unsigned char header[] = {0, 0, 8, 3, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0};  // 2^32 bytes claimed
    f.write(reinterpret_cast<const char*>(header), sizeof header);
    f << "only a few bytes";
  }
  EXPECT_ERROR_CONTAINS(read_idx(path), "truncated IDX data (the header claims 4294967296 bytes, the file holds 16)");
}

TEST(MetricsLogSafety, AResumedRunDropsRowsPastItsCheckpointAndAPartialLine) {
  const std::string dir = fresh_dir("metrics");
  const std::string path = dir + "/metrics.jsonl";
  std::ofstream(path) << "{\"kind\":\"train\",\"step\":10}\n{\"kind\":\"epoch\",\"step\":20}\n"
                         "{\"kind\":\"train\",\"step\":30}\n{\"kind\":\"end\",\"step\":40}\n{\"kind\":\"tra";
  int64_t dropped = 0;
  {
    MetricsLog log(path, 20, &dropped);  // resumed from the checkpoint of step 20
    log.write("{\"kind\":\"train\",\"step\":30}");
  }
  EXPECT_EQ(dropped, 3);
  EXPECT_EQ(read_text_file(path),
            "{\"kind\":\"train\",\"step\":10}\n{\"kind\":\"epoch\",\"step\":20}\n{\"kind\":\"train\",\"step\":30}\n");
  // A line that is no row (a note typed into the file) is named as what it is, with its line
  // number, not counted among the rows "past step S" (a hostile finding: its removal was
  // reported as rows past the checkpoint).
  std::vector<std::string> foreign;
  EXPECT_EQ(keep_metrics_rows("not json\n{\"step\":1}\n{\"step\":9}\n", 5, &dropped, nullptr, 0, &foreign),
            "{\"step\":1}\n");
  EXPECT_EQ(dropped, 1);
  EXPECT_EQ(foreign, (std::vector<std::string>{"line 1: 'not json'"}));
}

// A resume of a checkpoint at step 20 still in epoch 2 (1-based: the epoch the rows name):
// an epoch row of epoch 2 at step 20 is an end work whose checkpoint never landed (an earlier
// resume, killed before its rewrite of the checkpoint, or one on a world where the epoch
// ended at 20). It and the end-work rows after it at 20 go (no duplicate epoch row, and the
// stale end row no longer says the run ended); the step's train and start rows stay, and so
// do the rows of the run that wrote the checkpoint (a --max-steps end: no epoch row) and an
// earlier epoch's row.
TEST(MetricsLogSafety, AnEndWorkItsCheckpointNeverRecordedIsDropped) {
  const std::string dir = fresh_dir("metrics-redo");
  const std::string path = dir + "/metrics.jsonl";
  const std::string before = "{\"kind\":\"epoch\",\"epoch\":1,\"step\":10}\n{\"kind\":\"train\",\"step\":20}\n";
  const std::string own_end = "{\"kind\":\"test\",\"step\":20}\n{\"kind\":\"end\",\"step\":20}\n";
  const std::string start = "{\"kind\":\"start\",\"step\":20}\n";
  const std::string end_work = "{\"kind\":\"epoch\",\"epoch\":2,\"step\":20}\n{\"kind\":\"eval\",\"step\":20}\n"
                               "{\"kind\":\"test\",\"step\":20}\n{\"kind\":\"end\",\"step\":20}\n";
  const std::string text = before + own_end + start + end_work;
  std::ofstream(path) << text;
  int64_t dropped = 0;
  bool ended = false;
  // A checkpoint that rolled over into epoch 3: that work landed, everything stays.
  EXPECT_EQ(keep_metrics_rows(text, 20, &dropped, &ended, /*open_epoch=*/3), text);
  EXPECT_TRUE(ended);
  EXPECT_EQ(keep_metrics_rows(text, 20, &dropped, &ended, /*open_epoch=*/2), before + own_end + start);
  EXPECT_EQ(dropped, 4);
  EXPECT_TRUE(ended);  // the --max-steps end of the checkpoint's own run
  EXPECT_EQ(keep_metrics_rows(before + start + end_work, 20, &dropped, &ended, 2), before + start);
  EXPECT_FALSE(ended);
  // Step 0: the --init-from validation of a run killed before its first checkpoint is done again.
  EXPECT_EQ(keep_metrics_rows("{\"kind\":\"start\",\"step\":0}\n{\"kind\":\"eval\",\"step\":0}\n", 0, &dropped),
            "{\"kind\":\"start\",\"step\":0}\n");
  {
    MetricsLog log(path, 20, &dropped, 2);
    EXPECT_TRUE(log.ended());
  }
  EXPECT_EQ(read_text_file(path), before + own_end + start);
}

// A run killed between its final test row and its end row: the resume does the final work again
// (finish_trained), so that test row goes, or the run has two; a test row an end row followed stays.
TEST(MetricsLogSafety, ATestRowNoEndRowFollowedIsDropped) {
  const std::string train = "{\"kind\":\"epoch\",\"epoch\":2,\"step\":20}\n";
  const std::string test = "{\"kind\":\"test\",\"step\":20}\n";
  const std::string end = "{\"kind\":\"end\",\"step\":20}\n";
  const std::string start = "{\"kind\":\"start\",\"step\":20}\n";
  int64_t dropped = 0;
  bool ended = true;
  EXPECT_EQ(keep_metrics_rows(train + test, 20, &dropped, &ended, 3), train);
  EXPECT_EQ(dropped, 1);
  EXPECT_FALSE(ended);
  // The redo was cut there too: both go.
  EXPECT_EQ(keep_metrics_rows(train + test + start + test, 20, &dropped, &ended, 3), train + start);
  EXPECT_EQ(dropped, 2);
  // Ended, then re-run ("nothing to do" wrote a start row): everything stays.
  EXPECT_EQ(keep_metrics_rows(train + test + end + start, 20, &dropped, &ended, 3), train + test + end + start);
  EXPECT_EQ(dropped, 0);
  EXPECT_TRUE(ended);
  // An end row, then a redo's rows at that step cut before its end row: not ended (the redo's
  // final work runs again), its cut test row gone; the first end row stays, as history.
  EXPECT_EQ(keep_metrics_rows(test + end + start + train + test, 20, &dropped, &ended, 3), test + end + start + train);
  EXPECT_FALSE(ended);
  EXPECT_EQ(keep_metrics_rows(test + end + start + train, 20, &dropped, &ended, 3), test + end + start + train);
  EXPECT_FALSE(ended);
  // An earlier step's test row is history (a run extended by --epochs after it ended).
  const std::string old_test = "{\"kind\":\"test\",\"step\":10}\n";
  EXPECT_EQ(keep_metrics_rows(old_test + train, 20, &dropped, &ended, 3), old_test + train);
  // The rows kept at the start step, as rows (TensorBoard is given them again); a row of the
  // wrong types (edited by hand) left out.
  const std::string dir = fresh_dir("metrics-at-start");
  std::ofstream(dir + "/metrics.jsonl") << old_test + train + "{\"kind\":\"eval\",\"step\":20,\"val_acc\":\"x\"}\n" + test;
  {
    MetricsLog log(dir + "/metrics.jsonl", 20, &dropped, 3);
    ASSERT_EQ(log.rows_at_start().size(), 1u);
    EXPECT_EQ(log.rows_at_start()[0].kind, RowKind::kEpoch);
    EXPECT_EQ(log.rows_at_start()[0].step, 20);
  }
  // And a redo of it, idempotent: what is kept keeps.
  const std::string kept = keep_metrics_rows(train + test, 20, &dropped, &ended, 3);
  EXPECT_EQ(keep_metrics_rows(kept, 20, &dropped, &ended, 3), kept);
  EXPECT_EQ(dropped, 0);
}

TEST(LinkSafety, FilesAreNotWrittenThroughPlantedLinks) {
  const std::string dir = fresh_dir("links");
  const std::string victim = dir + "/victim";
  std::ofstream(victim) << "precious";
  ASSERT_EQ(::symlink(victim.c_str(), (dir + "/metrics.jsonl").c_str()), 0);
  EXPECT_ERROR_CONTAINS(MetricsLog(dir + "/metrics.jsonl", 0), "is a symbolic link");
  // The temp name write_file_atomic uses, planted as a link: replaced, not followed.
  ASSERT_EQ(::symlink(victim.c_str(), temp_name_for(dir + "/config.ini").c_str()), 0);
  write_file_atomic(dir + "/config.ini", "[train]\n");
  ASSERT_EQ(::symlink(victim.c_str(), (dir + "/train.log").c_str()), 0);
  EXPECT_ERROR_CONTAINS(open_append_nofollow(dir + "/train.log"), "is a symbolic link");
  EXPECT_EQ(read_text_file(victim), "precious");
  EXPECT_EQ(read_text_file(dir + "/config.ini"), "[train]\n");
}

TEST(RunDirLock, ASecondJobIsRefusedNamingTheHolderAndTheLockDiesWithIt) {
  const std::string dir = fresh_dir("run") + "/run";
  {
    RunDir first(dir);
    try {
      RunDir second(dir);
      ADD_FAILURE() << "a second holder was allowed";
    } catch (const DirRefused& e) {
      EXPECT_NE(std::string(e.what()).find("is in use by another job (pid " + std::to_string(::getpid())),
                std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(RunDir again(dir));  // released with its holder: never stuck
}

TEST(RunDirLock, TempFilesAreCleanedAndAReplacedDirectoryIsNoticed) {
  const std::string dir = fresh_dir("run") + "/run";
  { RunDir first(dir); }
  const std::string host = this_writer().host;
  std::ofstream(dir + "/checkpoints/step-000000010.ckpt.lockstep-tmp." + std::to_string(exited_pid()) + "." + host)
      << "torn";
  std::ofstream(dir + "/checkpoints/step-000000020.ckpt.lockstep-tmp.1." + host) << "pid 1 is alive";
  std::ofstream(dir + "/checkpoints/step-000000030.ckpt.tmp.777") << "not lockstep's mark";
  std::ofstream(dir + "/keep.me") << "x";
  RunDir run(dir);
  EXPECT_EQ(run.removed_temps().size(), 1u);
  EXPECT_EQ(run.kept_temps(), std::vector<std::string>{dir + "/checkpoints/step-000000020.ckpt.lockstep-tmp.1." + host});
  EXPECT_TRUE(path_exists(dir + "/checkpoints/step-000000030.ckpt.tmp.777"));
  EXPECT_TRUE(path_exists(dir + "/keep.me"));
  EXPECT_NO_THROW(run.check());
  ASSERT_EQ(::rename(dir.c_str(), (dir + ".old").c_str()), 0);
  make_dirs(dir + "/checkpoints");  // someone recreated it under the same name
  EXPECT_ERROR_CONTAINS(run.check(), "was deleted, moved or replaced");
}

TEST(CheckpointPrune, NeverDeletesAValidCheckpointWhileKeepingUnreadableOnes) {
  const std::string dir = fresh_dir("prune");
  for (const int64_t step : {10, 20, 30, 40}) write_checkpoint(dir, step, "{}", "payload");
  // The two newest are torn (a disk that filled up, a copy cut short).
  ASSERT_EQ(::truncate(checkpoint_path(dir, 30).c_str(), 10), 0);
  ASSERT_EQ(::truncate(checkpoint_path(dir, 40).c_str(), 10), 0);
  const std::string fresh = write_checkpoint(dir, 50, "{}", "payload");
  prune_checkpoints(dir, 2, {fresh});
  // Before: steps 40 and 50 kept (the newest two by name), 10 and 20 deleted: one valid
  // checkpoint left. Now: 50 and 20 are the two valid ones kept, 30/40 stay (skipped at
  // resume), 10 goes.
  std::vector<std::string> names;
  for (const auto& [step, path] : list_checkpoints(dir)) names.push_back(base_name(path));
  EXPECT_EQ(names, (std::vector<std::string>{"step-000000020.ckpt", "step-000000030.ckpt", "step-000000040.ckpt",
                                             "step-000000050.ckpt"}));
}

TEST(RunDirLock, ADirectoryLockstepDidNotMakeIsRefusedNotAdopted) {
  // Issue 31 (2): `train --run-dir proj` replaced the user's config.ini, rewrote their
  // metrics.jsonl and deleted notes.tmp.123.
  const std::string proj = fresh_dir("proj");
  std::ofstream(proj + "/config.ini") << "[mine]\n";
  std::ofstream(proj + "/metrics.jsonl") << "{\"mine\": 1}\n";
  std::ofstream(proj + "/notes.tmp.123") << "notes";
  EXPECT_ERROR_CONTAINS(RunDir run(proj), "holds files that are not a lockstep run (config.ini, metrics.jsonl, notes.tmp.123)");
  EXPECT_EQ(list_dir(proj), (std::vector<std::string>{"config.ini", "metrics.jsonl", "notes.tmp.123"}));
  EXPECT_EQ(read_text_file(proj + "/metrics.jsonl"), "{\"mine\": 1}\n");
  // A dataset is not a run directory, though it carries the same lock mark.
  const std::string data = fresh_dir("runds");
  run_import(tiny_input(40), import_opts(data), "tiny", "fp");
  EXPECT_ERROR_CONTAINS(RunDir run(data), "is a dataset directory");
  EXPECT_FALSE(is_run_dir(data));
  // The doctor's report, written first by the Slurm templates, is adopted.
  const std::string doctor = fresh_dir("rundoctor");
  std::ofstream(doctor + "/doctor.json") << "{}";
  EXPECT_NO_THROW(RunDir run(doctor));
  EXPECT_TRUE(is_run_dir(doctor));
}
