//===- DataSourceTest.cpp - Training data as token streams ----------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "DataSource.h"

#include "TempDir.h"

#include <gtest/gtest.h>

using namespace infir2::rt;
using infir2::rt::test::TempDir;

TEST(DataSource, FormatFromTheExtension) {
  EXPECT_EQ(resolveDataFormat("a.u16", "auto"), "u16");
  EXPECT_EQ(resolveDataFormat("a.bin", "auto"), "u16");
  EXPECT_EQ(resolveDataFormat("a.u32", "auto"), "u32");
  EXPECT_EQ(resolveDataFormat("a.txt", "auto"), "text");
  EXPECT_EQ(resolveDataFormat("a.u16", "text"), "text");
}

TEST(DataSource, TextIsBytes) {
  Expected<std::vector<uint32_t>> t =
      decodeTokens("x", std::string("A\xff\0", 3), "text");
  ASSERT_TRUE(t) << t.message();
  EXPECT_EQ(*t, (std::vector<uint32_t>{65, 255, 0}));
}

TEST(DataSource, TokenFilesAreLittleEndian) {
  Expected<std::vector<uint32_t>> u16 =
      decodeTokens("x", std::string("\x01\x02\xff\xff", 4), "u16");
  ASSERT_TRUE(u16) << u16.message();
  EXPECT_EQ(*u16, (std::vector<uint32_t>{0x0201, 0xffff}));
  Expected<std::vector<uint32_t>> u32 =
      decodeTokens("x", std::string("\x01\x02\x03\x04", 4), "u32");
  ASSERT_TRUE(u32) << u32.message();
  EXPECT_EQ(*u32, (std::vector<uint32_t>{0x04030201}));
}

TEST(DataSource, TruncatedTokenFile) {
  Expected<std::vector<uint32_t>> t = decodeTokens("odd.u16", "abc", "u16");
  ASSERT_FALSE(t);
  EXPECT_EQ(t.message(),
            "odd.u16: truncated: 3 bytes is not a whole number of u16 tokens");
}

TEST(DataSource, ReadChecksVocabularyAndLength) {
  TempDir dir;
  std::string big =
      dir.write("big.u32", std::string("\x05\0\0\0\x2c\x01\0\0", 8));
  Expected<std::vector<uint32_t>> t = readTokens(big, "auto", 256, 1);
  ASSERT_FALSE(t);
  EXPECT_EQ(t.message(), big + ": token 300 at position 1 is not below the "
                               "vocabulary size 256");

  std::string text = dir.write("short.txt", "too short");
  t = readTokens(text, "auto", 256, 129);
  ASSERT_FALSE(t);
  EXPECT_EQ(t.message(),
            text + ": 9 tokens, fewer than one sequence needs (129)");
  t = readTokens(text, "auto", 256, 9);
  ASSERT_TRUE(t) << t.message();
  EXPECT_EQ(t->size(), 9u);

  // Not regular files: refused before reading (a directory aborted the
  // trainer, /dev/zero was read forever).
  t = readTokens(dir.str(), "auto", 256, 1);
  ASSERT_FALSE(t);
  EXPECT_EQ(t.message(), dir.str() + ": not a regular file (training data is "
                                      "read from a file, not a directory, "
                                      "device or pipe)");
  t = readTokens("/dev/zero", "u16", 256, 1);
  ASSERT_FALSE(t);
  EXPECT_NE(t.message().find("/dev/zero: not a regular file"),
            std::string::npos);

  t = readTokens(dir / "missing.txt", "auto", 256, 1);
  ASSERT_FALSE(t);
  EXPECT_EQ(t.message(),
            dir / "missing.txt" + ": cannot open: No such file or directory");
}

TEST(DataSource, SequencesAreShiftedByOneAndWrap) {
  std::vector<uint32_t> tokens = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  int64_t position = 0;
  int32_t ids[2 * 3], targets[2 * 3];
  fillSequences(tokens, position, 2, 3, 1, 0, ids, targets);
  EXPECT_EQ(std::vector<int32_t>(ids, ids + 6),
            (std::vector<int32_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(std::vector<int32_t>(targets, targets + 6),
            (std::vector<int32_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(position, 6);
  // Tokens 6..9 hold one more sequence (and its last target); then
  // 9 + 3 + 1 > 10 and the stream starts over.
  fillSequences(tokens, position, 2, 3, 1, 0, ids, targets);
  EXPECT_EQ(std::vector<int32_t>(ids, ids + 6),
            (std::vector<int32_t>{6, 7, 8, 0, 1, 2}));
  EXPECT_EQ(std::vector<int32_t>(targets, targets + 6),
            (std::vector<int32_t>{7, 8, 9, 1, 2, 3}));
  EXPECT_EQ(position, 3);
}

TEST(DataSource, RanksSplitWhatOneProcessWouldRead) {
  std::vector<uint32_t> tokens(100);
  for (size_t i = 0; i < tokens.size(); ++i)
    tokens[i] = uint32_t(i);
  // One process of micro-batch 4 against two ranks of micro-batch 2.
  int64_t p1 = 0, p2a = 0, p2b = 0;
  int32_t ids1[4 * 5], tg1[4 * 5], idsA[2 * 5], tgA[2 * 5], idsB[2 * 5],
      tgB[2 * 5];
  for (int round = 0; round < 3; ++round) {
    fillSequences(tokens, p1, 4, 5, 1, 0, ids1, tg1);
    fillSequences(tokens, p2a, 2, 5, 2, 0, idsA, tgA);
    fillSequences(tokens, p2b, 2, 5, 2, 1, idsB, tgB);
    EXPECT_EQ(std::vector<int32_t>(ids1, ids1 + 10),
              std::vector<int32_t>(idsA, idsA + 10));
    EXPECT_EQ(std::vector<int32_t>(ids1 + 10, ids1 + 20),
              std::vector<int32_t>(idsB, idsB + 10));
    EXPECT_EQ(std::vector<int32_t>(tg1 + 10, tg1 + 20),
              std::vector<int32_t>(tgB, tgB + 10));
    EXPECT_EQ(p1, p2a);
    EXPECT_EQ(p1, p2b);
  }
}
