// io/dataset/chunk_reader: /samples read straight from the file's chunks.
// - fletcher32() equals HDF5's algorithm, transcribed word by word below, over lengths odd
//   and even, short and past many 360-word blocks, and on the all-0xff bytes where its sums
//   are largest; and it equals the checksum HDF5 stored after each chunk of a shard;
// - a shard's samples read through the chunk reader equal HDF5's read of them, for ranges
//   inside a chunk, across chunk boundaries and into the short last chunk, from several
//   threads at once;
// - it applies only where it reads what HDF5 would: not with --compression, nor without
//   chunking along samples, nor in a file with a user block, nor for another type; float32
//   samples read as stored; without checksums it reads as well;
// - a changed byte in a chunk is an error naming the shard, the samples and the chunk.
#include <gtest/gtest.h>

#include <algorithm>
#include <unistd.h>

#include <fstream>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "io/dataset/chunk_reader.hpp"
#include "io/util/fletcher32.hpp"
#include "io/dataset/shard_reader.hpp"
#include "io/dataset/shard_writer.hpp"
#include "io/util/h5.hpp"
#include "test_helpers.hpp"

using namespace lockstep;
using namespace lockstep::io;
using namespace lockstep::testing;

#if H5_VERSION_GE(1, 10, 5)  // the chunk queries (chunk_reader.hpp)

namespace {

// HDF5's H5_checksum_fletcher32, one word at a time.
uint32_t fletcher32_word_by_word(const std::vector<uint8_t>& b) {
  size_t len = b.size() / 2;
  const uint8_t* d = b.data();
  uint32_t sum1 = 0, sum2 = 0;
  while (len) {
    size_t tlen = len > 360 ? 360 : len;
    len -= tlen;
    do {
      sum1 += (static_cast<uint32_t>(d[0]) << 8) | d[1];
      d += 2;
      sum2 += sum1;
    } while (--tlen);
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
  }
  if (b.size() % 2) {
    sum1 += static_cast<uint32_t>(*d) << 8;
    sum2 += sum1;
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
  }
  sum1 = (sum1 & 0xffff) + (sum1 >> 16);
  sum2 = (sum2 & 0xffff) + (sum2 >> 16);
  return (sum2 << 16) | sum1;
}

// A one-shard split of N tiny samples (16 bytes each) in chunks of CHUNK samples.
struct Shard {
  std::string path;
  DatasetSpec spec;
  std::vector<unsigned char> samples;
};

Shard write_shard(const std::string& dir, int64_t n, WriteOptions opt) {
  Shard s;
  s.spec = tiny_spec();
  std::vector<int64_t> labels;
  tiny_data(s.spec, n, &s.samples, &labels);
  const SplitEntry e = write_split(dir, "train", s.spec, s.samples.data(), labels.data(), n, 1, opt);
  s.path = dir + "/" + e.shards.at(0).file;
  return s;
}

// ChunkReader::open on the shard's /samples, as ShardFile calls it.
std::unique_ptr<ChunkReader> open_chunks(const std::string& path, H5Handle* file) {
  *file = H5Handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  H5Handle d(H5Dopen2(file->get(), "/samples", H5P_DEFAULT));
  return ChunkReader::open(file->get(), d.get(), H5T_NATIVE_UINT8, 16);
}

}  // namespace

TEST(Fletcher32, EqualsHdf5sAlgorithm) {
  std::mt19937 rng(7);
  for (size_t len : {1, 2, 3, 719, 720, 721, 722, 1441, 4096, 65537, 1000003}) {
    std::vector<uint8_t> b(len);
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    EXPECT_EQ(fletcher32(b.data(), b.size()), fletcher32_word_by_word(b)) << len;
    std::fill(b.begin(), b.end(), uint8_t{0xff});
    EXPECT_EQ(fletcher32(b.data(), b.size()), fletcher32_word_by_word(b)) << len << " bytes of 0xff";
  }
}

TEST(Fletcher32, EqualsTheChecksumsHdf5Stored) {
  const Shard s = write_shard(fresh_dir("fl"), 100, WriteOptions{0, 7, "", true});
  H5Handle f(H5Fopen(s.path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  H5Handle d(H5Dopen2(f.get(), "/samples", H5P_DEFAULT));
  for (hsize_t c = 0; c < 15; ++c) {
    hsize_t at[4] = {c * 7, 0, 0, 0}, size = 0;
    ASSERT_GE(H5Dget_chunk_storage_size(d.get(), at, &size), 0);
    std::vector<uint8_t> raw(size);
    uint32_t mask = 0;
    ASSERT_GE(H5Dread_chunk(d.get(), H5P_DEFAULT, at, &mask, raw.data()), 0);
    ASSERT_EQ(raw.size(), 7u * 16u + 4u) << "a chunk is stored whole, the last one too";
    const uint32_t stored = raw[112] | (raw[113] << 8) | (raw[114] << 16) | (static_cast<uint32_t>(raw[115]) << 24);
    EXPECT_EQ(fletcher32(raw.data(), 112), stored) << "chunk " << c;
    EXPECT_TRUE(fletcher32_matches(raw.data() + 112, fletcher32(raw.data(), 112)));
    // What HDF5 before 1.6.3 stored on little-endian hosts: each half's bytes swapped.
    std::swap(raw[112], raw[113]);
    std::swap(raw[114], raw[115]);
    EXPECT_TRUE(fletcher32_matches(raw.data() + 112, fletcher32(raw.data(), 112)));
    raw[112] ^= 1;
    EXPECT_FALSE(fletcher32_matches(raw.data() + 112, fletcher32(raw.data(), 112)));
  }
}

TEST(ChunkReader, ReadsWhatHdf5ReadsFromManyThreads) {
  for (const bool checksums : {true, false}) {
    const Shard s = write_shard(fresh_dir("cr"), 100, WriteOptions{0, 7, "", checksums});
    H5Handle file;
    const auto chunks = open_chunks(s.path, &file);
    ASSERT_NE(chunks, nullptr) << checksums;
    EXPECT_EQ(chunks->chunk_rows(), 7);
    const auto expect_range = [&](int64_t begin, int64_t n) {
      std::vector<unsigned char> got(static_cast<size_t>(n) * 16);
      ASSERT_EQ(chunks->read(begin, n, got.data()), "");
      EXPECT_TRUE(std::equal(got.begin(), got.end(), s.samples.begin() + begin * 16)) << begin << "+" << n;
    };
    for (const auto& [b, n] : std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {3, 4}, {6, 2}, {5, 30}, {95, 5}, {0, 100}})
      expect_range(b, n);
    std::vector<std::thread> readers;
    for (int t = 0; t < 4; ++t)
      readers.emplace_back([&, t] {
        for (int64_t b = t; b + 9 <= 100; b += 4) expect_range(b, 9);
      });
    for (auto& r : readers) r.join();
    // The shard as ShardFile reads it: the same bytes.
    ShardFile sf(s.path, s.spec);
    std::vector<unsigned char> all(100 * 16);
    std::vector<int64_t> records(100);
    sf.read(0, 100, all.data(), records.data());
    EXPECT_EQ(all, s.samples);
  }
}

TEST(ChunkReader, ReadsFloatSamplesAsStored) {
  const std::string dir = fresh_dir("cf");
  DatasetSpec spec = shape_spec({2, 3}, 4);
  spec.dtype = DType::kFloat32;
  spec.mean = {0.0, 0.0};
  spec.std = {1.0, 1.0};
  std::vector<float> x(40 * 6);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.25f * static_cast<float>(i) - 7.0f;
  std::vector<int64_t> labels(40);
  for (int64_t i = 0; i < 40; ++i) labels[static_cast<size_t>(i)] = i % 4;
  const SplitEntry e = write_split(dir, "train", spec, x.data(), labels.data(), 40, 1, WriteOptions{0, 6, "", true});
  H5Handle f(H5Fopen((dir + "/" + e.shards.at(0).file).c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  H5Handle d(H5Dopen2(f.get(), "/samples", H5P_DEFAULT));
  const auto chunks = ChunkReader::open(f.get(), d.get(), H5T_NATIVE_FLOAT, 24);
  ASSERT_NE(chunks, nullptr);
  std::vector<float> got(13 * 6);
  ASSERT_EQ(chunks->read(5, 13, got.data()), "");
  EXPECT_TRUE(std::equal(got.begin(), got.end(), x.begin() + 5 * 6));
}

TEST(ChunkReader, AppliesOnlyWhereItReadsWhatHdf5Would) {
  H5Handle file;
  EXPECT_EQ(open_chunks(write_shard(fresh_dir("cz"), 50, WriteOptions{1, 7, "", true}).path, &file), nullptr)
      << "deflate: HDF5 reads it";
  const Shard s = write_shard(fresh_dir("ct"), 50, WriteOptions{0, 7, "", true});
  file = H5Handle(H5Fopen(s.path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  H5Handle d(H5Dopen2(file.get(), "/samples", H5P_DEFAULT));
  EXPECT_EQ(ChunkReader::open(file.get(), d.get(), H5T_NATIVE_INT8, 16), nullptr) << "another type: HDF5 converts";
  // Chunked along a sample's axes too: a chunk is not whole samples.
  const std::string path = fresh_dir("cs") + "/split.h5";
  H5Handle f(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
  const hsize_t dims[2] = {10, 16}, chunk[2] = {5, 8};
  H5Handle space(H5Screate_simple(2, dims, nullptr)), dcpl(H5Pcreate(H5P_DATASET_CREATE));
  ASSERT_GE(H5Pset_chunk(dcpl.get(), 2, chunk), 0);
  H5Handle split(H5Dcreate2(f.get(), "/samples", H5T_NATIVE_UINT8, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT));
  const std::vector<uint8_t> zeros(160, 0);
  ASSERT_GE(H5Dwrite(split.get(), H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, zeros.data()), 0);
  EXPECT_EQ(ChunkReader::open(f.get(), split.get(), H5T_NATIVE_UINT8, 16), nullptr);
  // A user block: HDF5 1.10's chunk addresses leave it out.
  const std::string ub = fresh_dir("cu") + "/user_block.h5";
  H5Handle fcpl(H5Pcreate(H5P_FILE_CREATE));
  ASSERT_GE(H5Pset_userblock(fcpl.get(), 512), 0);
  H5Handle uf(H5Fcreate(ub.c_str(), H5F_ACC_TRUNC, fcpl.get(), H5P_DEFAULT));
  const hsize_t udims[2] = {10, 16}, uchunk[2] = {5, 16};
  H5Handle uspace(H5Screate_simple(2, udims, nullptr)), ucpl(H5Pcreate(H5P_DATASET_CREATE));
  ASSERT_GE(H5Pset_chunk(ucpl.get(), 2, uchunk), 0);
  H5Handle us(H5Dcreate2(uf.get(), "/samples", H5T_NATIVE_UINT8, uspace.get(), H5P_DEFAULT, ucpl.get(), H5P_DEFAULT));
  ASSERT_GE(H5Dwrite(us.get(), H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, zeros.data()), 0);
  EXPECT_EQ(ChunkReader::open(uf.get(), us.get(), H5T_NATIVE_UINT8, 16), nullptr);
}

TEST(ChunkReader, AChangedByteIsAnErrorNamingTheChunk) {
  const Shard s = write_shard(fresh_dir("cc"), 100, WriteOptions{0, 7, "", true});
  hsize_t addr = 0;
  {
    H5Handle f(H5Fopen(s.path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
    H5Handle d(H5Dopen2(f.get(), "/samples", H5P_DEFAULT));
    hsize_t at[4] = {21, 0, 0, 0}, size = 0;  // chunk 3
    unsigned mask = 0;
    haddr_t a = 0;
    ASSERT_GE(H5Dget_chunk_info_by_coord(d.get(), at, &mask, &a, &size), 0);
    addr = a;
  }
  {
    std::fstream io(s.path, std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(static_cast<std::streamoff>(addr + 5));
    io.put('\x5a');
  }
  ShardFile sf(s.path, s.spec);
  std::vector<unsigned char> out(100 * 16);
  std::vector<int64_t> records(100);
  sf.read(0, 21, out.data(), records.data());  // the chunks before it read
  EXPECT_ERROR_CONTAINS(sf.read(18, 10, out.data(), records.data()),
                        s.path + ": cannot read samples 18..27: chunk 3 at byte " + std::to_string(addr) +
                            ": fails its checksum (Fletcher-32)");
}

// A file cut short after it was opened: the chunk that runs past its end is named, and the
// chunks before the cut still read; an empty range and the short last chunk read as well.
TEST(ChunkReader, ACutFileNamesTheChunkPastItsEnd) {
  const Shard s = write_shard(fresh_dir("ce"), 100, WriteOptions{0, 7, "", true});
  H5Handle file;
  const auto chunks = open_chunks(s.path, &file);
  ASSERT_NE(chunks, nullptr);
  std::vector<unsigned char> out(100 * 16);
  EXPECT_EQ(chunks->read(98, 2, out.data()), "");
  EXPECT_TRUE(std::equal(out.begin(), out.begin() + 32, s.samples.begin() + 98 * 16));
  EXPECT_EQ(chunks->read(40, 0, out.data()), "");
  EXPECT_NE(chunks->read(95, 6, out.data()).find("outside the 100 stored"), std::string::npos);
  hsize_t addr = 0;
  {
    H5Handle d(H5Dopen2(file.get(), "/samples", H5P_DEFAULT));
    hsize_t at[4] = {21, 0, 0, 0}, size = 0;
    unsigned mask = 0;
    haddr_t a = 0;
    ASSERT_GE(H5Dget_chunk_info_by_coord(d.get(), at, &mask, &a, &size), 0);
    addr = a;
  }
  ASSERT_EQ(::truncate(s.path.c_str(), static_cast<off_t>(addr + 50)), 0);
  EXPECT_EQ(chunks->read(0, 21, out.data()), "");
  const std::string why = chunks->read(14, 10, out.data());
  EXPECT_NE(why.find("chunk 3 at byte " + std::to_string(addr) + ": the file ends inside it (truncated)"),
            std::string::npos)
      << why;
}

#endif  // H5_VERSION_GE(1, 10, 5)
