//===- PackedDocumentsTest.cpp - Whole documents packed into samples ------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// --packing documents: which documents share a sample, their segments and
// positions, the loss weights at their boundaries, cut and left-out
// documents, per-epoch shuffles. Expected values are worked by hand from the
// rule in PackedDocuments.h.
//
//===----------------------------------------------------------------------===//

#include "DataSource.h"

#include "TempDir.h"
#include "WriteDataset.h"
#include "infir2/runtime/IndexedDataset.h"

#include <gtest/gtest.h>

#include <set>

using namespace infir2::rt;
using infir2::rt::test::TempDir;
using infir2::rt::test::writeDataset;

namespace {

SourceOptions packed(int64_t seq, bool shuffle = false, uint64_t seed = 0) {
  SourceOptions o;
  o.seq = seq;
  o.vocab = 100;
  o.shuffle = shuffle;
  o.seed = seed;
  o.packing = Packing::Documents;
  return o;
}

/// One micro-batch of `seq`, read at sample `index`.
struct Read {
  std::vector<int32_t> ids, targets, positions, segments;
  std::vector<float> weights;
};
Read read(TokenSource &s, int64_t index, int64_t seq) {
  Read r{std::vector<int32_t>(size_t(seq)), std::vector<int32_t>(size_t(seq)),
         std::vector<int32_t>(size_t(seq)), std::vector<int32_t>(size_t(seq)),
         std::vector<float>(size_t(seq))};
  Status st = fillSequences(s, index, 1, seq, 1, 0,
                            {r.ids.data(), r.targets.data(), r.weights.data(),
                             r.positions.data(), r.segments.data()});
  EXPECT_TRUE(st) << st.message();
  return r;
}

using Ints = std::vector<int32_t>;
using Floats = std::vector<float>;

} // namespace

TEST(PackedDocuments, WholeDocumentsShareSamplesApart) {
  TempDir dir;
  writeDataset(dir / "d", IndexedDType::UInt16,
               {{10, 11, 12}, {20, 21}, {30, 31, 32, 33}});
  writeDataset(dir / "d.mask", IndexedDType::UInt8,
               {{0, 0, 1}, {1, 1}, {0, 1, 1, 0}});
  // The mask makes documents the default packing.
  SourceOptions o = packed(5);
  o.packing = Packing::Auto;
  auto s = openTokenSource(dir / "d", o);
  ASSERT_TRUE(s) << s.message();
  EXPECT_TRUE((*s)->packed());
  // Samples of 6 tokens: documents 0 and 1 (3 + 2 tokens), then document 2
  // (4 + 2 would not fit).
  EXPECT_EQ((*s)->samplesPerEpoch(), 2);
  Read a = read(**s, 0, 5);
  EXPECT_EQ(a.ids, (Ints{10, 11, 12, 20, 21}));
  EXPECT_EQ(a.targets, (Ints{11, 12, 20, 21, 0}));
  EXPECT_EQ(a.segments, (Ints{1, 1, 1, 2, 2}));
  EXPECT_EQ(a.positions, (Ints{0, 1, 2, 0, 1}));
  // Each target weighs its mask value; 12 -> 20 and 21 -> padding cross a
  // document's end and weigh 0.
  EXPECT_EQ(a.weights, (Floats{0, 1, 0, 1, 0}));
  Read b = read(**s, 1, 5);
  EXPECT_EQ(b.ids, (Ints{30, 31, 32, 33, 0}));
  EXPECT_EQ(b.segments, (Ints{1, 1, 1, 1, 0}));
  EXPECT_EQ(b.positions, (Ints{0, 1, 2, 3, 0}));
  EXPECT_EQ(b.weights, (Floats{1, 1, 0, 0, 0}));
  // The next epoch, unshuffled, starts over.
  EXPECT_EQ(read(**s, 2, 5).ids, a.ids);
  EXPECT_EQ((*s)->describe(),
            "Megatron dataset " + dir / "d" +
                ": 3 documents, 9 tokens (uint16), loss mask " + dir / "d.mask" +
                ", whole documents packed into 2 samples of 6 tokens");
}

TEST(PackedDocuments, LongDocumentsAreCutShortOnesLeftOut) {
  TempDir dir;
  writeDataset(dir / "d", IndexedDType::UInt16,
               {{10, 11, 12, 13, 14}, {7}, {20, 21}});
  auto s = openTokenSource(dir / "d", packed(2));
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ((*s)->samplesPerEpoch(), 2);
  Read a = read(**s, 0, 2);
  EXPECT_EQ(a.ids, (Ints{10, 11}));
  EXPECT_EQ(a.targets, (Ints{11, 12}));
  EXPECT_EQ(a.weights, (Floats{1, 1})); // no mask: every target in it
  Read b = read(**s, 1, 2);
  EXPECT_EQ(b.ids, (Ints{20, 21}));
  EXPECT_EQ(b.weights, (Floats{1, 0}));
  EXPECT_NE((*s)->describe().find("(1 longer documents cut to 3 tokens) (1 "
                                  "documents of fewer than 2 tokens left out)"),
            std::string::npos)
      << (*s)->describe();
}

TEST(PackedDocuments, EachEpochPacksEveryDocumentOnce) {
  TempDir dir;
  std::vector<std::vector<int64_t>> docs;
  for (int64_t d = 0; d < 30; ++d)
    docs.push_back(std::vector<int64_t>(size_t(2 + d % 4), d + 1));
  writeDataset(dir / "d", IndexedDType::UInt16, docs);
  auto s = openTokenSource(dir / "d", packed(7, /*shuffle=*/true, 5));
  ASSERT_TRUE(s) << s.message();
  // Walk two epochs: each holds every document once, in its own order.
  std::vector<std::vector<int32_t>> orders(2);
  int64_t index = 0;
  for (int e = 0; e < 2; ++e) {
    std::set<int32_t> seen;
    while (seen.size() < 30) {
      Read r = read(**s, index++, 7);
      for (size_t t = 0; t < r.ids.size(); ++t)
        if (r.segments[t] && (t == 0 || r.segments[t] != r.segments[t - 1])) {
          EXPECT_TRUE(seen.insert(r.ids[t]).second) << "epoch " << e;
          orders[size_t(e)].push_back(r.ids[t]);
        }
    }
  }
  EXPECT_NE(orders[0], orders[1]);
  // Random access (a resumed run) reads the same samples.
  auto again = openTokenSource(dir / "d", packed(7, true, 5));
  ASSERT_TRUE(again);
  for (int64_t i : {int64_t(index - 1), int64_t(3), int64_t(0)})
    EXPECT_EQ(read(**again, i, 7).ids, read(**s, i, 7).ids) << i;
}

TEST(PackedDocuments, BadInputIsNamed) {
  TempDir dir;
  writeDataset(dir / "one", IndexedDType::UInt16, {{5}, {6}});
  EXPECT_EQ(openTokenSource(dir / "one", packed(4)).message(),
            dir / "one" +
                ": no document has 2 tokens or more (one input and its "
                "target), so there is nothing to train on");
  writeDataset(dir / "d", IndexedDType::UInt16, {{1, 2, 3}});
  writeDataset(dir / "m", IndexedDType::UInt8, {{1, 1}});
  SourceOptions o = packed(4);
  o.lossMask = dir / "m";
  EXPECT_EQ(openTokenSource(dir / "d", o).message(),
            dir / "m: document 0 has 2 mask values for 3 tokens");
  o.lossMask = dir / "absent";
  EXPECT_EQ(openTokenSource(dir / "d", o).message(),
            "--loss-mask " + dir / "absent" + ": no Megatron dataset there (" +
                dir / "absent.idx is missing)");
}
