// Reader: epoch orders (pure), memory and streaming modes, the prefetch loader.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <set>

#include "io/loader/batch_pool.hpp"
#include "io/loader/epoch_loader.hpp"
#include "io/loader/epoch_loaders.hpp"
#include "io/loader/epoch_order.hpp"
#include "io/util/file_util.hpp"
#include "io/loader/rank_reader.hpp"
#include "io/loader/shard_plan.hpp"
#include "test_helpers.hpp"

using namespace lockstep;
using namespace lockstep::io;
using namespace lockstep::testing;

namespace {

ReaderOptions mode(const char* m, int64_t block = 4, int64_t group = 3) {
  ReaderOptions o;
  o.mode = std::string(m) == "memory" ? ReadMode::kMemory : std::string(m) == "stream" ? ReadMode::kStream : ReadMode::kAuto;
  o.block_samples = block;
  o.shuffle_blocks = group;
  return o;
}

// The first pixel of every tiny sample is unique per sample index (i*16*31 % 251 ... ),
// so compare whole samples against the source data instead.
std::vector<unsigned char> sample_of(const DatasetSpec& spec, int64_t i) {
  std::vector<unsigned char> all;
  std::vector<int64_t> labels;
  tiny_data(spec, i + 1, &all, &labels);
  return std::vector<unsigned char>(all.end() - static_cast<std::ptrdiff_t>(spec.sample_bytes()), all.end());
}

}  // namespace

TEST(EpochOrder, StreamingVisitsEverySampleOnceGroupByGroup) {
  const std::vector<SampleRange> ranges{{0, 0, 23}, {2, 5, 17}};
  const auto o = streaming_order(ranges, 4, 3, true, 7, 1, 0);
  std::vector<int64_t> sorted = o.ids;
  std::sort(sorted.begin(), sorted.end());
  ASSERT_EQ(sorted.size(), 35u);
  for (int64_t i = 0; i < 35; ++i) EXPECT_EQ(sorted[static_cast<size_t>(i)], i);
  // Every position of group g holds an id from one of group g's blocks.
  for (size_t g = 0; g < o.groups.size(); ++g)
    for (int64_t q = o.group_start[g]; q < o.group_start[g + 1]; ++q) {
      const int64_t id = o.ids[static_cast<size_t>(q)];
      EXPECT_TRUE(std::any_of(o.groups[g].begin(), o.groups[g].end(),
                              [&](const Block& b) { return id >= b.local && id < b.local + b.size(); }));
    }
  EXPECT_EQ(streaming_order(ranges, 4, 3, true, 7, 1, 0).ids, o.ids);
  EXPECT_NE(streaming_order(ranges, 4, 3, true, 7, 2, 0).ids, o.ids);
  const auto natural = streaming_order(ranges, 4, 3, false, 7, 1, 0);
  for (int64_t i = 0; i < 35; ++i) EXPECT_EQ(natural.ids[static_cast<size_t>(i)], i);
}

TEST(EpochOrder, BlocksFollowRanges) {
  const auto blocks = make_blocks({{1, 2, 9}, {3, 0, 2}}, 3);
  ASSERT_EQ(blocks.size(), 4u);
  EXPECT_EQ(blocks[2].begin, 8);
  EXPECT_EQ(blocks[2].end, 9);
  EXPECT_EQ(blocks[3].shard, 3);
  EXPECT_EQ(blocks[3].local, 7);
}

TEST(ShardPlanWrap, StepsCoverTheLargestRank) {
  EXPECT_EQ(steps_per_epoch({10, 10, 10, 10, 9}, 2, 4, /*wrap=*/true), 8);  // rank 0: 29 samples
  EXPECT_THROW(steps_per_epoch({3}, 4, 1, true), Error);
}

// With several read threads too: a shuffle window's blocks (stream) and the shards' pieces
// (memory) read at once land where one thread puts them.
TEST(RankReader, BothModesReturnTheRightBytesForEveryId) {
  const std::string dir = fresh_dir("ds");
  const Manifest m = write_tiny_dataset(dir, 50, 3);
  for (const int threads : {1, 3}) {
    for (const char* md : {"memory", "stream"}) {
      ReaderOptions opt = mode(md);
      opt.read_threads = threads;
      const RankReader reader(dir, m, "train", 0, 1, opt);
      EXPECT_EQ(reader.streaming(), std::string(md) == "stream");
      const EpochOrder order = reader.order(true, 3, 0);
      std::vector<unsigned char> samples(50 * 16);
      std::vector<int64_t> labels(50);
      StreamCache cache;
      reader.fill(order, 0, 50, samples.data(), labels.data(), cache);
      for (int64_t q = 0; q < 50; ++q) {
        const int64_t id = order.ids[static_cast<size_t>(q)];  // one rank: local id = global index
        EXPECT_EQ(labels[static_cast<size_t>(q)], id % 3) << md << " threads " << threads;
        EXPECT_EQ(std::vector<unsigned char>(samples.begin() + q * 16, samples.begin() + (q + 1) * 16), sample_of(m.spec, id))
            << md << " threads " << threads << " position " << q;
      }
    }
  }
}

TEST(RankReader, AutoModeFollowsTheBudget) {
  const std::string dir = fresh_dir("ds");
  const Manifest m = write_tiny_dataset(dir, 50, 2);
  ReaderOptions o;
  EXPECT_FALSE(RankReader(dir, m, "train", 0, 1, o).streaming());
  o.memory_budget_mb = 0;
  EXPECT_TRUE(RankReader(dir, m, "train", 0, 1, o).streaming());
  o.mode = ReadMode::kMemory;  // an explicit mode wins over the budget
  EXPECT_FALSE(RankReader(dir, m, "train", 0, 1, o).streaming());
}

TEST(EpochLoader, DeliversEveryStepInOrderAndWraps) {
  const std::string dir = fresh_dir("ds");
  const Manifest m = write_tiny_dataset(dir, 30, 2);
  for (const char* md : {"memory", "stream"}) {
    const RankReader reader(dir, m, "train", 0, 1, mode(md));
    const EpochOrder order = reader.order(true, 1, 4);
    // 4 steps of 8 = 32 positions over 30 samples: the last batch wraps to the start.
    EpochLoader loader(reader, order, 8, 4, 1, 2);
    std::vector<int64_t> steps;
    while (const Batch* b = loader.next()) {
      steps.push_back(b->step);
      for (int64_t j = 0; j < 8; ++j) {
        const int64_t id = order.ids[static_cast<size_t>((b->step * 8 + j) % 30)];
        EXPECT_EQ(b->labels[static_cast<size_t>(j)], id % 3);
      }
    }
    EXPECT_EQ(steps, (std::vector<int64_t>{1, 2, 3})) << md;
    EXPECT_GE(loader.wait_seconds(), 0.0);
  }
}

TEST(EpochLoader, PartialLastBatchForEvaluation) {
  const std::string dir = fresh_dir("ds");
  const Manifest m = write_tiny_dataset(dir, 30, 2);
  const RankReader reader(dir, m, "train", 0, 1, mode("stream"));
  EpochLoader loader(reader, reader.order(false, 0, 0), 8, 4, 0, 2, /*partial_last=*/true);
  int64_t total = 0;
  while (const Batch* b = loader.next()) total += b->size;
  EXPECT_EQ(total, 30);
}

TEST(EpochLoader, ReaderErrorReachesTheTrainingThread) {
  const std::string dir = fresh_dir("ds");
  const Manifest m = write_tiny_dataset(dir, 40, 2);
  const RankReader reader(dir, m, "train", 0, 1, mode("stream", 4, 1));
  // Corrupt a shard after it was opened: the loader thread's read fails mid-epoch.
  const std::string path = dir + "/train-00001-of-00002.h5";
  ASSERT_EQ(::truncate(path.c_str(), 2500), 0);
  EpochLoader loader(reader, reader.order(false, 0, 0), 4, 10, 0, 2);
  EXPECT_ERROR_CONTAINS(while (loader.next()) {}, "train-00001-of-00002.h5");
}

TEST(EpochLoader, DestroyedMidEpochStopsCleanly) {
  const std::string dir = fresh_dir("ds");
  const Manifest m = write_tiny_dataset(dir, 200, 2);
  const RankReader reader(dir, m, "train", 0, 1, mode("memory"));
  for (int i = 0; i < 20; ++i) {
    EpochLoader loader(reader, reader.order(true, 0, i), 2, 100, 0, 3);
    ASSERT_NE(loader.next(), nullptr);
  }  // no hang, no crash: each destructor stops a thread with batches still queued
}

// On a GPU the training loader's batches are pinned memory that the step copies straight out
// of (io/loader/batch_pool): a batch whose copy is still in flight is written again only after
// the loader's thread waited for that copy — checked where the DMA would read, as each fake
// copy completes: the memory still holds the batch it was recorded for — and one whose copy
// has completed is refilled without a wait. Every batch equals a plain-memory loader's; an
// epoch's loader may go away with copies in flight (the next one, or the pool, waits).
TEST(EpochLoader, RefillsABatchOnlyOnceTheCopyOutOfItHasCompleted) {
  const std::string dir = fresh_dir("ds");
  const Manifest m = write_tiny_dataset(dir, 30, 2);
  for (const char* md : {"memory", "stream"}) {
    const RankReader reader(dir, m, "train", 0, 1, mode(md)), plain_reader(dir, m, "train", 0, 1, mode(md));
    const size_t bytes = 4 * reader.spec().sample_bytes();
    FakeCopies copies;
    std::mutex mu;
    std::map<int, std::pair<const unsigned char*, std::vector<unsigned char>>> in_flight;  // id -> memory, bytes
    int overwritten = 0, finished = 0;
    copies.on_complete = [&](int id) {
      std::lock_guard<std::mutex> lock(mu);
      ++finished;
      const auto& [at, want] = in_flight.at(id);
      overwritten += std::memcmp(at, want.data(), want.size()) != 0;
    };
    const HostBuffers buffers = fake_host_buffers(&copies);
    {
      BatchPool pool(reader.spec(), 4, 3, &buffers);  // prefetch 2
      for (int64_t epoch = 0; epoch < 2; ++epoch) {
        const EpochOrder order = reader.order(true, 9, epoch);
        EpochLoader loader(reader, order, 4, 7, 0, 2, false, &pool), plain(plain_reader, order, 4, 7, 0, 2);
        for (int64_t k = 0; k < 7; ++k) {
          const Batch* b = loader.next();
          const Batch* want = plain.next();
          ASSERT_NE(b, nullptr);
          ASSERT_NE(b->reuse, nullptr) << "HostBuffers memory has a fence per batch";
          ASSERT_EQ(0, std::memcmp(b->samples, want->samples, bytes)) << md << " step " << k;
          {
            std::lock_guard<std::mutex> lock(mu);
            in_flight[copies.recorded()] = {b->samples, std::vector<unsigned char>(b->samples, b->samples + bytes)};
          }
          b->reuse->record();  // the copy out of it, left in flight
          if (k % 3 == 0) copies.complete(copies.recorded() - 1);  // the device finished this one early
        }
        EXPECT_EQ(loader.next(), nullptr);
        // Steps 1 and 2's batches come round with their copies in flight (steps 4 and 5 end the
        // epoch in flight: the next epoch's loader waits for them before its first fills).
        EXPECT_EQ(loader.reuse_waits(), epoch == 0 ? 2 : 4) << md;
      }
    }  // the pool waits for the copies still in flight
    EXPECT_EQ(overwritten, 0) << md << ": a batch was written while a copy out of it was in flight";
    EXPECT_EQ(finished, copies.recorded()) << md << ": every copy completed before its memory was freed";
    EXPECT_EQ(copies.waited(), 2 + 4 + 2) << md << ": the loaders' waits and the pool's two at the end";
  }
}

TEST(EpochLoader, RefusesAPoolThatDoesNotFit) {
  const std::string dir = fresh_dir("ds");
  const Manifest m = write_tiny_dataset(dir, 30, 2);
  const RankReader reader(dir, m, "train", 0, 1, mode("memory"));
  BatchPool pool(reader.spec(), 4, 3);
  EXPECT_ERROR_CONTAINS(EpochLoader(reader, reader.order(false, 0, 0), 8, 2, 0, 2, false, &pool),
                        "batch size 8 does not fit the pool's 4");
  EXPECT_ERROR_CONTAINS(EpochLoader(reader, reader.order(false, 0, 0), 4, 2, 0, 4, false, &pool),
                        "prefetch 4 needs 5 batches, the pool has 3");
  {
    EpochLoader first(reader, reader.order(false, 0, 0), 4, 2, 0, 2, false, &pool);
    EXPECT_ERROR_CONTAINS(EpochLoader(reader, reader.order(false, 0, 0), 4, 2, 0, 2, false, &pool),
                          "a second loader would fill batches the first one fills");
  }
  EpochLoader after(reader, reader.order(false, 0, 0), 4, 2, 0, 2, false, &pool);  // the first gave it back
  EXPECT_NE(after.next(), nullptr);
}

// The next epoch's loader, started while an epoch ends, is the one open() hands out, and
// serves the batches a loader opened late would; another first step gets a new loader.
TEST(EpochLoaders, AStartedLoaderServesItsEpochFromTheFirstStep) {
  const std::string dir = fresh_dir("ds");
  const Manifest m = write_tiny_dataset(dir, 30, 2);
  for (const char* md : {"memory", "stream"}) {
    const RankReader reader(dir, m, "train", 0, 1, mode(md));
    const auto bytes_of = [&](EpochLoader& l) {  // every batch's samples, in order
      std::vector<unsigned char> all;
      while (const Batch* b = l.next())
        all.insert(all.end(), b->samples, b->samples + b->size * reader.spec().sample_bytes());
      return all;
    };
    EpochLoaders loaders(reader, 5, 4, 6, 2);
    EpochLoader& first = loaders.open(0, 0);
    ASSERT_NE(first.next(), nullptr);
    const EpochLoader* started = &loaders.start(1);  // releases epoch 0's loader mid-epoch: no hang
    EpochLoader& opened = loaders.open(1, 0);
    EXPECT_EQ(&opened, started) << md << ": the started loader is the one handed out";
    const std::vector<unsigned char> early = bytes_of(opened);
    const RankReader again(dir, m, "train", 0, 1, mode(md));  // its own reader: one loader per reader
    EpochLoader late(again, again.order(true, 5, 1, 4), 4, 6, 0, 2);
    EXPECT_EQ(early, bytes_of(late)) << md;
    EXPECT_EQ(loaders.open(1, 0).next()->step, 0) << md << ": a loader handed out is not handed out again";
    loaders.start(2);
    EpochLoader& from3 = loaders.open(2, 3);  // a resume mid-epoch: not the started loader (step 0)
    const Batch* b = from3.next();
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->step, 3) << md;
    loaders.start(3);
    loaders.release();  // a run that stops: the started loader's thread ends
  }
}

// A training reader deals a new share each epoch, in both modes: for every simulated rank
// the bytes match their ids, the shares of one epoch partition the split, and epochs differ.
TEST(RankReader, TrainingReaderDealsANewShareEveryEpoch) {
  const std::string dir = fresh_dir("ds");
  const Manifest m = write_tiny_dataset(dir, 50, 1);  // one shard, 3 ranks
  for (const char* md : {"memory", "stream", "auto"}) {
    ReaderOptions o = mode(md);
    o.redeal = true;
    std::vector<std::set<int64_t>> epoch_shares(2);
    for (int64_t epoch = 0; epoch < 2; ++epoch) {
      std::set<int64_t> all;
      for (int r = 0; r < 3; ++r) {
        const RankReader reader(dir, m, "train", r, 3, o);
        EXPECT_TRUE(reader.dealt()) << md;
        EXPECT_EQ(reader.size(), dealt_sample_count({50}, r, 3));
        const EpochOrder order = reader.order(true, 5, epoch, 4);
        ASSERT_EQ(static_cast<int64_t>(order.ids.size()), reader.size());
        std::vector<unsigned char> samples(static_cast<size_t>(reader.size()) * 16);
        std::vector<int64_t> labels(static_cast<size_t>(reader.size()));
        StreamCache cache;
        reader.fill(order, 0, reader.size(), samples.data(), labels.data(), cache);
        std::vector<int64_t> share_labels;
        for (int64_t q = 0; q < reader.size(); ++q) {
          // The sample's global index, found from its bytes (each tiny sample is unique).
          int64_t id = -1;
          for (int64_t i = 0; i < 50 && id < 0; ++i)
            if (std::vector<unsigned char>(samples.begin() + q * 16, samples.begin() + (q + 1) * 16) == sample_of(m.spec, i))
              id = i;
          ASSERT_GE(id, 0) << md << " rank " << r << " position " << q;
          EXPECT_EQ(labels[static_cast<size_t>(q)], id % 3);
          EXPECT_TRUE(all.insert(id).second) << md << ": sample " << id << " dealt twice in epoch " << epoch;
          share_labels.push_back(id % 3);
          if (r == 0) epoch_shares[static_cast<size_t>(epoch)].insert(id);
        }
        auto reported = reader.share_labels(5, epoch);
        std::sort(reported.begin(), reported.end());
        std::sort(share_labels.begin(), share_labels.end());
        EXPECT_EQ(reported, share_labels) << md;
      }
      EXPECT_EQ(all.size(), 50u) << md;
    }
    EXPECT_NE(epoch_shares[0], epoch_shares[1]) << md << ": rank 0 saw the same share in two epochs";
  }
}

TEST(RankReader, MemoryModeOverTheBudgetKeepsTheFixedShare) {
  const std::string dir = fresh_dir("ds");
  const Manifest m = write_tiny_dataset(dir, 50, 1);
  ReaderOptions o = mode("memory");
  o.redeal = true;
  o.memory_budget_mb = 0;  // the whole split does not fit: the rank's share is loaded
  const RankReader reader(dir, m, "train", 1, 2, o);
  EXPECT_FALSE(reader.dealt());
  EXPECT_FALSE(reader.streaming());
  EXPECT_EQ(reader.size(), rank_sample_count({50}, 1, 2));
  const EpochOrder e0 = reader.order(true, 5, 0), e1 = reader.order(true, 5, 1);
  EXPECT_NE(e0.ids, e1.ids);  // reshuffled within
  EXPECT_EQ(std::set<int64_t>(e0.ids.begin(), e0.ids.end()), std::set<int64_t>(e1.ids.begin(), e1.ids.end()));
  // Auto with the same budget streams, and deals.
  o.mode = ReadMode::kAuto;
  EXPECT_TRUE(RankReader(dir, m, "train", 1, 2, o).dealt());
  EXPECT_TRUE(RankReader(dir, m, "train", 1, 2, o).streaming());
}
