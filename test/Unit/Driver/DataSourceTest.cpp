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
  EXPECT_EQ(resolveDataFormat("a.u16", DataFormat::Auto), DataFormat::U16);
  EXPECT_EQ(resolveDataFormat("a.u32", DataFormat::Auto), DataFormat::U32);
  EXPECT_EQ(resolveDataFormat("a.txt", DataFormat::Auto), DataFormat::Text);
  EXPECT_EQ(resolveDataFormat("a.u16", DataFormat::Text), DataFormat::Text);
}

TEST(DataSource, TextIsBytes) {
  Expected<std::vector<uint32_t>> t =
      decodeTokens("x", std::string("A\xff\0", 3), DataFormat::Text);
  ASSERT_TRUE(t) << t.message();
  EXPECT_EQ(*t, (std::vector<uint32_t>{65, 255, 0}));
}

TEST(DataSource, TokenFilesAreLittleEndian) {
  Expected<std::vector<uint32_t>> u16 =
      decodeTokens("x", std::string("\x01\x02\xff\xff", 4), DataFormat::U16);
  ASSERT_TRUE(u16) << u16.message();
  EXPECT_EQ(*u16, (std::vector<uint32_t>{0x0201, 0xffff}));
  Expected<std::vector<uint32_t>> u32 =
      decodeTokens("x", std::string("\x01\x02\x03\x04", 4), DataFormat::U32);
  ASSERT_TRUE(u32) << u32.message();
  EXPECT_EQ(*u32, (std::vector<uint32_t>{0x04030201}));
}

TEST(DataSource, TruncatedTokenFile) {
  Expected<std::vector<uint32_t>> t =
      decodeTokens("odd.u16", "abc", DataFormat::U16);
  ASSERT_FALSE(t);
  EXPECT_EQ(t.message(),
            "odd.u16: truncated: 3 bytes is not a whole number of u16 tokens");
}

TEST(DataSource, ReadChecksVocabularyAndLength) {
  TempDir dir;
  std::string big =
      dir.write("big.u32", std::string("\x05\0\0\0\x2c\x01\0\0", 8));
  Expected<std::vector<uint32_t>> t = readTokens(big, DataFormat::Auto, 256, 1);
  ASSERT_FALSE(t);
  EXPECT_EQ(t.message(), big + ": token 300 at position 1 is not below the "
                               "vocabulary size 256");

  std::string text = dir.write("short.txt", "too short");
  t = readTokens(text, DataFormat::Auto, 256, 129);
  ASSERT_FALSE(t);
  EXPECT_EQ(t.message(),
            text + ": 9 tokens, fewer than one sequence needs (129)");
  t = readTokens(text, DataFormat::Auto, 256, 9);
  ASSERT_TRUE(t) << t.message();
  EXPECT_EQ(t->size(), 9u);

  // Not regular files: refused before reading (a directory aborted the
  // trainer, /dev/zero was read forever).
  t = readTokens(dir.str(), DataFormat::Auto, 256, 1);
  ASSERT_FALSE(t);
  EXPECT_EQ(t.message(), dir.str() + ": not a regular file (training data is "
                                      "read from a file, not a directory, "
                                      "device or pipe)");
  t = readTokens("/dev/zero", DataFormat::U16, 256, 1);
  ASSERT_FALSE(t);
  EXPECT_NE(t.message().find("/dev/zero: not a regular file"),
            std::string::npos);

  t = readTokens(dir / "missing.txt", DataFormat::Auto, 256, 1);
  ASSERT_FALSE(t);
  EXPECT_EQ(t.message(),
            dir / "missing.txt" + ": cannot open: No such file or directory");
}

/// A raw source of the u32 ids `tokens`, for sequences of `seq`.
static std::unique_ptr<TokenSource> rawSource(const TempDir &dir,
                                              const std::vector<uint32_t> &t,
                                              int64_t seq) {
  std::string path = dir.write(
      "t.u32", std::string(reinterpret_cast<const char *>(t.data()),
                           t.size() * 4));
  SourceOptions o;
  o.seq = seq;
  o.vocab = 1000;
  Expected<std::unique_ptr<TokenSource>> s = openTokenSource(path, o);
  EXPECT_TRUE(s) << s.message();
  return s ? std::move(*s) : nullptr;
}

TEST(DataSource, SequencesAreShiftedByOneAndWrap) {
  TempDir dir;
  auto source = rawSource(dir, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, 3);
  ASSERT_TRUE(source);
  EXPECT_EQ(source->samplesPerEpoch(), 3);
  int64_t position = 0;
  int32_t ids[2 * 3], targets[2 * 3], positions[2 * 3], segments[2 * 3];
  float weights[2 * 3];
  Batch batch{ids, targets, weights, positions, segments};
  ASSERT_TRUE(fillSequences(*source, position, 2, 3, 1, 0, batch));
  EXPECT_EQ(std::vector<int32_t>(ids, ids + 6),
            (std::vector<int32_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(std::vector<int32_t>(targets, targets + 6),
            (std::vector<int32_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(std::vector<float>(weights, weights + 6),
            std::vector<float>(6, 1.0f));
  EXPECT_EQ(std::vector<int32_t>(positions, positions + 6),
            (std::vector<int32_t>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(std::vector<int32_t>(segments, segments + 6),
            std::vector<int32_t>(6, 0));
  EXPECT_EQ(position, 2);
  // Tokens 6..9 hold one more sequence (and its last target); then the
  // stream starts over.
  ASSERT_TRUE(fillSequences(*source, position, 2, 3, 1, 0, batch));
  EXPECT_EQ(std::vector<int32_t>(ids, ids + 6),
            (std::vector<int32_t>{6, 7, 8, 0, 1, 2}));
  EXPECT_EQ(std::vector<int32_t>(targets, targets + 6),
            (std::vector<int32_t>{7, 8, 9, 1, 2, 3}));
  EXPECT_EQ(position, 4);
}

TEST(DataSource, RanksSplitWhatOneProcessWouldRead) {
  TempDir dir;
  std::vector<uint32_t> tokens(100);
  for (size_t i = 0; i < tokens.size(); ++i)
    tokens[i] = uint32_t(i);
  auto source = rawSource(dir, tokens, 5);
  ASSERT_TRUE(source);
  // One process of micro-batch 4 against two ranks of micro-batch 2.
  int64_t p1 = 0, p2a = 0, p2b = 0;
  int32_t ids1[4 * 5], tg1[4 * 5], idsA[2 * 5], tgA[2 * 5], idsB[2 * 5],
      tgB[2 * 5];
  float w[4 * 5];
  int32_t pos[4 * 5], seg[4 * 5];
  for (int round = 0; round < 3; ++round) {
    ASSERT_TRUE(fillSequences(*source, p1, 4, 5, 1, 0, {ids1, tg1, w, pos, seg}));
    ASSERT_TRUE(
        fillSequences(*source, p2a, 2, 5, 2, 0, {idsA, tgA, w, pos, seg}));
    ASSERT_TRUE(
        fillSequences(*source, p2b, 2, 5, 2, 1, {idsB, tgB, w, pos, seg}));
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

TEST(DataSource, WhatIsNoneOfTheFormatsIsRefusedByName) {
  TempDir dir;
  SourceOptions o;
  o.seq = 3;
  o.vocab = 256;
  // A .bin without its index (read as uint16 before, whatever it held).
  std::string bin = dir.write("lone.bin", std::string(64, 'x'));
  Expected<std::unique_ptr<TokenSource>> s = openTokenSource(bin, o);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), bin + ": a .bin without its .idx beside it (a "
                               "Megatron dataset needs both; for raw uint16 "
                               "token ids use --data-format u16 or the .u16 "
                               "extension)");
  // Binary data taken for text.
  std::string blob = dir.write("model.dat", std::string("ab\0\xff cdef", 9));
  s = openTokenSource(blob, o);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), blob + ": not UTF-8 text (byte 2), not a Megatron "
                                "dataset (no .idx beside it) and not named "
                                ".u16/.u32; --data-format text|u16|u32 says "
                                "which it is");
  // Unless it is said to be text.
  o.format = DataFormat::Text;
  EXPECT_TRUE(openTokenSource(blob, o));
  // UTF-8 that is not well formed: an overlong '/', a surrogate.
  o.format = DataFormat::Auto;
  for (const char *bad : {"abc\xc0\xaf", "abc\xed\xa0\x80"}) {
    std::string path = dir.write("bad.txt", bad);
    s = openTokenSource(path, o);
    ASSERT_FALSE(s) << bad;
    EXPECT_NE(s.message().find("not UTF-8 text (byte 3)"), std::string::npos)
        << s.message();
  }
  // A blend needs weight and prefix pairs with positive weights.
  for (const char *spec : {"0.5 a b", "x a", "-1 a", "0 a"}) {
    s = openTokenSource(spec, o);
    ASSERT_FALSE(s) << spec;
  }
  EXPECT_EQ(openTokenSource("0.5 a b", o).message(),
            "'0.5 a b': a blend is 'WEIGHT PREFIX WEIGHT PREFIX ...' (3 words "
            "given)");
  EXPECT_EQ(openTokenSource("nan a", o).message(),
            "'nan a': blend weight 'nan' is not a positive number");
}
