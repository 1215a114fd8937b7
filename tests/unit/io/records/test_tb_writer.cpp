// io/records/tb_writer: CRC-32C and TFRecord framing of TensorBoard event files.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "io/records/tb_writer.hpp"
#include "io/util/file_util.hpp"
#include "test_helpers.hpp"

using namespace lockstep;

TEST(TensorBoard, Crc32cAndRecordFraming) {
  EXPECT_EQ(io::crc32c("123456789", 9), 0xE3069283u);  // the standard check value
  const std::string dir = lockstep::testing::fresh_dir("tb");
  std::string path;
  {
    io::TbWriter w(dir, "host");
    w.scalars(7, {{"train/loss", 0.5}});
    path = w.path();
  }
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Two records; each: u64 length, u32 crc, data, u32 crc.
  uint64_t len = 0;
  std::memcpy(&len, bytes.data(), 8);
  const size_t second = 8 + 4 + len + 4;
  ASSERT_GT(bytes.size(), second + 12);
  EXPECT_NE(bytes.substr(12, len).find("brain.Event:2"), std::string::npos);
  uint64_t len2 = 0;
  std::memcpy(&len2, bytes.data() + second, 8);
  EXPECT_EQ(bytes.size(), second + 8 + 4 + len2 + 4);
  EXPECT_NE(bytes.substr(second + 12, len2).find("train/loss"), std::string::npos);
}
