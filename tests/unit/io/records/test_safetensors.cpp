// io/records/safetensors: round trip, and every header claim checked before it is used.
#include <gtest/gtest.h>

#include <fstream>

#include "io/records/safetensors.hpp"
#include "io/util/file_util.hpp"
#include "test_helpers.hpp"

using namespace lockstep;
using namespace lockstep::io;
using namespace lockstep::testing;

namespace {

SafeTensors sample() {
  SafeTensors st;
  st.metadata = {{"lockstep_model", "cnn"}, {"format", "pt"}};
  st.tensors.push_back({"a.weight", "F32", {2, 3}, std::string(24, '\x01')});
  st.tensors.push_back({"a.count", "I64", {}, std::string(8, '\x02')});
  return st;
}

void write_safetensors_raw(const std::string& path, const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  std::ofstream(path, std::ios::binary) << out << header << data;
}

}  // namespace

TEST(SafeTensors, RoundTripWithMetadataAndAlignedData) {
  const std::string path = fresh_dir("st") + "/m.safetensors";
  write_safetensors(path, sample());
  EXPECT_EQ(file_size(path) % 8, 0);  // header padded: data 8-byte aligned, 32 data bytes
  const SafeTensors r = read_safetensors(path);
  ASSERT_EQ(r.tensors.size(), 2u);
  EXPECT_EQ(r.metadata.at("lockstep_model"), "cnn");
  const SafeTensor* w = r.find("a.weight");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(w->data, std::string(24, '\x01'));
  EXPECT_EQ(r.find("a.count")->shape.size(), 0u);
}

TEST(SafeTensors, BadHeadersAreOneLineNamingTheFile) {
  const std::string dir = fresh_dir("bad");
  std::ofstream(dir + "/tiny.safetensors") << "abc";
  EXPECT_ERROR_CONTAINS(read_safetensors(dir + "/tiny.safetensors"), "shorter than its 8-byte header length");
  write_safetensors_raw(dir + "/long.safetensors", "{}", "");
  std::ofstream(dir + "/long.safetensors", std::ios::binary) << std::string("\xff\xff\xff\xff\xff\xff\xff\x7f") << "{}";
  EXPECT_ERROR_CONTAINS(read_safetensors(dir + "/long.safetensors"), "exceeds the file's 10 bytes");
  write_safetensors_raw(dir + "/json.safetensors", "{not json", "");
  EXPECT_ERROR_CONTAINS(read_safetensors(dir + "/json.safetensors"), "not valid JSON");
  write_safetensors_raw(dir + "/dtype.safetensors", R"({"w": {"dtype": "F7", "shape": [1], "data_offsets": [0, 4]}})", "abcd");
  EXPECT_ERROR_CONTAINS(read_safetensors(dir + "/dtype.safetensors"), "tensor w has unknown dtype 'F7'");
  write_safetensors_raw(dir + "/span.safetensors", R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}})", "abcd");
  EXPECT_ERROR_CONTAINS(read_safetensors(dir + "/span.safetensors"), "need 8 bytes, data_offsets give 4");
  write_safetensors_raw(dir + "/out.safetensors", R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})", "abcd");
  EXPECT_ERROR_CONTAINS(read_safetensors(dir + "/out.safetensors"), "data_offsets outside the file's 4 data bytes");
  write_safetensors_raw(dir + "/lap.safetensors",
            R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, "b": {"dtype": "F32", "shape": [1], "data_offsets": [2, 6]}})",
            "abcdefgh");
  EXPECT_ERROR_CONTAINS(read_safetensors(dir + "/lap.safetensors"), "data_offsets overlap");
}
