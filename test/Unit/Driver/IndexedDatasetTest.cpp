//===- IndexedDatasetTest.cpp - Megatron-LM's indexed datasets ------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The layout is checked byte for byte against the format as Megatron-LM's
// indexed_dataset.py writes it (the expected bytes are spelled out here,
// not produced by our writer); test/tools/infir2-data checks the same
// files with an independent Python reader and writer.
//
//===----------------------------------------------------------------------===//

#include "infir2/runtime/IndexedDataset.h"

#include "TempDir.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

using namespace infir2::rt;
using infir2::rt::test::TempDir;

namespace {

std::string slurp(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

template <typename T> std::string bytesOf(std::initializer_list<T> values) {
  std::string s;
  for (T v : values)
    s.append(reinterpret_cast<const char *>(&v), sizeof v);
  return s;
}

/// The index of `lengths` (one sequence per document) for elements of
/// `size` bytes and type `code`, spelled out from the format.
std::string indexOf(uint8_t code, int64_t size,
                    std::initializer_list<int32_t> lengths) {
  std::string s("MMIDIDX\0\0", 9);
  s += bytesOf<uint64_t>({1});
  s += std::string(1, char(code));
  s += bytesOf<uint64_t>({lengths.size(), lengths.size() + 1});
  for (int32_t n : lengths)
    s += bytesOf<int32_t>({n});
  int64_t at = 0;
  for (int32_t n : lengths) {
    s += bytesOf<int64_t>({at});
    at += n * size;
  }
  for (int64_t d = 0; d <= int64_t(lengths.size()); ++d)
    s += bytesOf<int64_t>({d});
  return s;
}

} // namespace

TEST(IndexedDataset, WritesMegatronsLayout) {
  TempDir dir;
  Expected<IndexedDatasetWriter> w =
      IndexedDatasetWriter::create(dir / "d", IndexedDType::UInt16);
  ASSERT_TRUE(w) << w.message();
  int64_t a[] = {1, 2, 65535}, b[] = {7};
  ASSERT_TRUE(w->addDocument(a, 3));
  ASSERT_TRUE(w->addDocument(b, 1));
  ASSERT_TRUE(w->addDocument(nullptr, 0));
  ASSERT_TRUE(w->finish());
  EXPECT_EQ(slurp(dir / "d.bin"), bytesOf<uint16_t>({1, 2, 65535, 7}));
  EXPECT_EQ(slurp(dir / "d.idx"), indexOf(8, 2, {3, 1, 0}));
  EXPECT_FALSE(std::filesystem::exists(dir / "d.bin.tmp"));

  Expected<IndexedDataset> ds = IndexedDataset::open(dir / "d");
  ASSERT_TRUE(ds) << ds.message();
  EXPECT_EQ(ds->numDocuments(), 3);
  EXPECT_EQ(ds->numElements(), 4);
  EXPECT_EQ(ds->documentLength(0), 3);
  EXPECT_EQ(ds->documentLength(2), 0);
  int64_t out[3];
  ds->readDocument(0, 1, 2, out);
  EXPECT_EQ(out[0], 2);
  EXPECT_EQ(out[1], 65535);
}

TEST(IndexedDataset, ReadsInt32AndMultiSequenceDocuments) {
  // Two documents: sequences {5, -1} and {9}, {8, 8} (as --split-sentences
  // writes them).
  TempDir dir;
  dir.write("m.bin", bytesOf<int32_t>({5, -1, 9, 8, 8}));
  std::string idx("MMIDIDX\0\0", 9);
  idx += bytesOf<uint64_t>({1}) + std::string(1, char(4)) +
         bytesOf<uint64_t>({3, 3}) + bytesOf<int32_t>({2, 1, 2}) +
         bytesOf<int64_t>({0, 8, 12}) + bytesOf<int64_t>({0, 1, 3});
  dir.write("m.idx", idx);
  Expected<IndexedDataset> ds = IndexedDataset::open(dir / "m");
  ASSERT_TRUE(ds) << ds.message();
  EXPECT_EQ(ds->dtype(), IndexedDType::Int32);
  EXPECT_EQ(ds->numDocuments(), 2);
  EXPECT_EQ(ds->documentLength(1), 3);
  int64_t out[3];
  ds->readDocument(1, 0, 3, out);
  EXPECT_EQ(std::vector<int64_t>(out, out + 3), (std::vector<int64_t>{9, 8, 8}));
}

TEST(IndexedDataset, DamageIsNamed) {
  TempDir dir;
  std::string good = indexOf(8, 2, {2, 1});
  auto opened = [&](const std::string &idx, const std::string &bin) {
    dir.write("x.idx", idx);
    dir.write("x.bin", bin);
    return IndexedDataset::open(dir / "x").message();
  };
  std::string bin = bytesOf<uint16_t>({1, 2, 3}), idx = dir / "x.idx";
  EXPECT_EQ(opened("MMIDIDY" + good.substr(7), bin),
            idx + ": not a Megatron-LM index (no MMIDIDX header)");
  std::string v2 = good;
  v2[9] = 2;
  EXPECT_EQ(opened(v2, bin), idx + ": index version 2, only version 1 is known");
  std::string f32 = good;
  f32[17] = 7;
  EXPECT_EQ(opened(f32, bin),
            idx + ": element type code 7 (float32) is not an integer type");
  EXPECT_EQ(opened(good.substr(0, good.size() - 1), bin),
            idx + ": 2 sequences and 3 document indices need 82 bytes, the "
                  "file has 81 (truncated, or a multimodal index, which is not "
                  "supported)");
  std::string huge = good;
  huge[25] = char(0x7f); // a sequence count near 2^63
  EXPECT_NE(opened(huge, bin).find("need more bytes"), std::string::npos);
  std::string gap = good;
  gap[34 + 8 + 8] = 6; // sequence 1 at byte 6 instead of 4
  EXPECT_EQ(opened(gap, bin), idx + ": sequence 1 starts at byte 6 of " +
                                  dir / "x.bin" +
                                  ", expected 4 (sequences must follow each "
                                  "other)");
  EXPECT_EQ(opened(good, bin + "xx"),
            dir / "x.bin" + ": 8 bytes, but " + idx + " describes 6");
  std::string docs = good;
  docs[34 + 8 + 16 + 8] = 5; // document index 1 = 5 > 2
  EXPECT_EQ(opened(docs, bin),
            idx + ": document index 2 (2) is below the one before it");
  EXPECT_EQ(IndexedDataset::open(dir / "none").message(),
            dir / "none.idx" + ": cannot open: No such file or directory");
}

TEST(IndexedDataset, WriterRefusesWhatDoesNotFit) {
  TempDir dir;
  Expected<IndexedDatasetWriter> w =
      IndexedDatasetWriter::create(dir / "w", IndexedDType::UInt16);
  ASSERT_TRUE(w);
  int64_t big[] = {70000};
  Status s = w->addDocument(big, 1);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), dir / "w" + ": value 70000 does not fit uint16");
  EXPECT_EQ(tokenDTypeFor(65499), IndexedDType::UInt16);
  EXPECT_EQ(tokenDTypeFor(151665), IndexedDType::Int32);
}

TEST(IndexedDataset, UnfinishedWriterLeavesNothing) {
  TempDir dir;
  {
    Expected<IndexedDatasetWriter> w =
        IndexedDatasetWriter::create(dir / "u", IndexedDType::Int32);
    ASSERT_TRUE(w);
    int64_t a[] = {1};
    ASSERT_TRUE(w->addDocument(a, 1));
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "u.bin.tmp"));
  EXPECT_FALSE(std::filesystem::exists(dir / "u.bin"));
  EXPECT_FALSE(std::filesystem::exists(dir / "u.idx"));
}
