//===- SafetensorsTest.cpp - safetensors reading and writing --------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "infir2/runtime/Checkpoint.h"
#include "infir2/runtime/Float.h"

#include "TempDir.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <fstream>
#include <iterator>

using namespace infir2::rt;
using infir2::rt::test::TempDir;

namespace {

StoredTensor tensor(const std::string &dtype, std::vector<int64_t> shape,
                    const std::vector<float> &values) {
  StoredTensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  for (float v : values) {
    uint8_t b[4];
    size_t n = 4;
    if (dtype == "BF16") {
      uint16_t h = floatToBF16(v);
      std::memcpy(b, &h, n = 2);
    } else if (dtype == "F16") {
      uint16_t h = floatToHalf(v);
      std::memcpy(b, &h, n = 2);
    } else {
      std::memcpy(b, &v, 4);
    }
    t.bytes.insert(t.bytes.end(), b, b + n);
  }
  return t;
}

std::string slurp(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

/// A file with `header` as its JSON header and `data` after it.
std::string withHeader(const TempDir &dir, const std::string &header,
                       const std::string &data) {
  std::string len(8, '\0');
  for (int b = 0; b < 8; ++b)
    len[b] = char((header.size() >> (8 * b)) & 0xff);
  return dir.write("h.safetensors", len + header + data);
}

} // namespace

TEST(Safetensors, RoundTripOfEveryFloatType) {
  TempDir dir;
  StoredTensor f32 = tensor("F32", {2, 2}, {1.0f, -2.5f, 3.25f, 1e-7f});
  StoredTensor bf16 = tensor("BF16", {3}, {1.0f, 0.1f, -65504.0f});
  StoredTensor f16 = tensor("F16", {1, 3}, {0.5f, -0.099975586f, 6e-8f});
  std::string path = dir / "t.safetensors";
  std::string error;
  ASSERT_TRUE(writeSafetensors(
      path, {{"model.w", &f32}, {"b", &bf16}, {"h", &f16}}, error))
      << error;
  std::map<std::string, StoredTensor> back;
  ASSERT_TRUE(readSafetensors(path, back, error)) << error;
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back["model.w"].shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(back["model.w"].bytes, f32.bytes);
  EXPECT_EQ(back["b"].dtype, "BF16");
  EXPECT_EQ(back["b"].bytes, bf16.bytes);
  EXPECT_EQ(back["h"].dtype, "F16");
  EXPECT_EQ(back["h"].bytes, f16.bytes);
  EXPECT_EQ(storedFloat(back["model.w"], 1), -2.5f);
  EXPECT_EQ(storedFloat(back["b"], 0), 1.0f);
  EXPECT_EQ(storedFloat(back["h"], 0), 0.5f);
  EXPECT_EQ(storedFloat(back["h"], 1), halfToFloat(floatToHalf(-0.1f)));

  // The header is JSON, padded to 8 bytes, in the order given.
  std::string blob = slurp(path);
  uint64_t n = 0;
  for (int b = 7; b >= 0; --b)
    n = (n << 8) | uint8_t(blob[b]);
  EXPECT_EQ(n % 8, 0u);
  auto header = nlohmann::ordered_json::parse(blob.substr(8, n));
  EXPECT_EQ(header.begin().key(), "model.w");
  EXPECT_EQ(header["h"]["data_offsets"].dump(), "[22,28]");
  EXPECT_EQ(blob.size(), 8 + n + 28);
}

TEST(Safetensors, CorruptedHeaderIsRejected) {
  TempDir dir;
  std::map<std::string, StoredTensor> t;
  std::string error;
  std::string path = withHeader(dir, "{\"a\": {\"dtype\": \"F32\",", "");
  EXPECT_FALSE(readSafetensors(path, t, error));
  EXPECT_EQ(error, path + ": the header is not a JSON object");

  path = withHeader(dir, "[1, 2]", "");
  EXPECT_FALSE(readSafetensors(path, t, error));
  EXPECT_EQ(error, path + ": the header is not a JSON object");

  path = withHeader(dir, R"({"a": {"dtype": "F32", "shape": [1]}})", "abcd");
  EXPECT_FALSE(readSafetensors(path, t, error));
  EXPECT_EQ(error, path + ": tensor 'a' has a malformed header entry");

  path = withHeader(
      dir, R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})",
      "abcd");
  EXPECT_FALSE(readSafetensors(path, t, error));
  EXPECT_EQ(error, path + ": tensor 'a' (F32) has data offsets that do not "
                          "match its shape or the file");

  path = withHeader(
      dir, R"({"a": {"dtype": "Q4", "shape": [1], "data_offsets": [0, 4]}})",
      "abcd");
  EXPECT_FALSE(readSafetensors(path, t, error));
  EXPECT_EQ(error, path + ": tensor 'a' (Q4) has data offsets that do not "
                          "match its shape or the file");

  std::string len =
      dir.write("len.safetensors", std::string("\xff\0\0\0\0\0\0\0{}", 10));
  EXPECT_FALSE(readSafetensors(len, t, error));
  EXPECT_EQ(error, len + ": truncated (header of 255 bytes, file of 10)");

  std::string shortFile = dir.write("short.safetensors", "abc");
  EXPECT_FALSE(readSafetensors(shortFile, t, error));
  EXPECT_EQ(error, shortFile + ": truncated (no header length)");
}

// The format's rule, which the loader accepted broken: the tensors' byte
// ranges tile the data exactly.
TEST(Safetensors, ByteRangesMustTileTheData) {
  TempDir dir;
  std::map<std::string, StoredTensor> t;
  std::string error;
  std::string path = withHeader(
      dir,
      R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
      R"( "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
      "abcdefgh");
  EXPECT_FALSE(readSafetensors(path, t, error));
  EXPECT_EQ(error, path + ": tensor 'b' starts at byte 4 of the data, "
                          "expected 8 (it overlaps another tensor)");

  path = withHeader(
      dir,
      R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
      "abcdefgh");
  EXPECT_FALSE(readSafetensors(path, t, error));
  EXPECT_EQ(error, path + ": tensor 'a' starts at byte 4 of the data, "
                          "expected 0 (a hole before it)");

  path = withHeader(
      dir,
      R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})",
      "abcdefgh");
  EXPECT_FALSE(readSafetensors(path, t, error));
  EXPECT_EQ(error, path + ": 4 bytes after the last tensor's data");

  // A shape whose element count overflows 64 bits.
  path = withHeader(
      dir,
      R"({"a": {"dtype": "F32", "shape": [4, 4611686018427387905],)"
      R"( "data_offsets": [0, 4]}})",
      "abcd");
  EXPECT_FALSE(readSafetensors(path, t, error));
  EXPECT_EQ(error, path + ": tensor 'a' has a malformed header entry");
}

TEST(Safetensors, MetadataIsSkipped) {
  TempDir dir;
  std::string path = withHeader(dir,
                                R"({"__metadata__": {"format": "pt"},
          "a": {"dtype": "F32", "shape": [], "data_offsets": [0, 4]}})",
                                std::string("\0\0\x80\x3f", 4));
  std::map<std::string, StoredTensor> t;
  std::string error;
  ASSERT_TRUE(readSafetensors(path, t, error)) << error;
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(storedFloat(t["a"], 0), 1.0f);
}

// Tensors are written as their sources produce them, one at a time, with
// the metadata transformers requires, and read back one at a time.
TEST(Safetensors, StreamsTensorByTensor) {
  TempDir dir;
  std::string path = dir.str() + "/s.safetensors";
  std::vector<float> a = {1.5f, -2.0f, 3.25f}, b = {7.0f};
  int produced = 0;
  std::vector<TensorSource> sources = {
      {"a", "F32", {3}, 12, [&](std::string &) -> const void * {
         ++produced;
         return a.data();
       }},
      {"b", "F32", {1, 1}, 4, [&](std::string &) -> const void * {
         ++produced;
         return b.data();
       }}};
  std::string error;
  FileDigest digest;
  ASSERT_TRUE(writeSafetensors(path, sources, {{"format", "pt"}}, error,
                               &digest))
      << error;
  EXPECT_EQ(produced, 2);
  FileDigest onDisk;
  ASSERT_TRUE(digestFile(path, onDisk, error)) << error;
  EXPECT_EQ(digest, onDisk);

  SafetensorsFile file;
  ASSERT_TRUE(file.open(path, error)) << error;
  ASSERT_EQ(file.tensors().size(), 2u);
  EXPECT_EQ(file.tensors().at("b").shape, (std::vector<int64_t>{1, 1}));
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(file.read("a", bytes, error)) << error;
  ASSERT_EQ(bytes.size(), 12u);
  EXPECT_EQ(std::memcmp(bytes.data(), a.data(), 12), 0);
  EXPECT_FALSE(file.read("c", bytes, error));
  EXPECT_EQ(error, path + ": no tensor 'c'");

  std::ifstream in(path, std::ios::binary);
  std::string blob((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  uint64_t n = 0;
  std::memcpy(&n, blob.data(), 8);
  auto header = nlohmann::json::parse(blob.substr(8, n));
  EXPECT_EQ(header["__metadata__"]["format"], "pt");
}

// A source that cannot produce its tensor (a failed gather) fails the
// write, naming the file and the source's reason.
TEST(Safetensors, AFailingSourceFailsTheWrite) {
  TempDir dir;
  std::string path = dir.str() + "/s.safetensors";
  std::vector<TensorSource> sources = {
      {"a", "F32", {1}, 4, [](std::string &error) -> const void * {
         error = "gathering 'a': rank 1 never arrived";
         return nullptr;
       }}};
  std::string error;
  EXPECT_FALSE(writeSafetensors(path, sources, {}, error));
  EXPECT_EQ(error, path + ": gathering 'a': rank 1 never arrived");
}
