//===- DocumentStreamTest.cpp - Samples from datasets and blends ----------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "Blend.h"
#include "DocumentStream.h"

#include "TempDir.h"
#include "WriteDataset.h"

#include <gtest/gtest.h>

#include <set>

using namespace infir2::rt;
using infir2::rt::test::TempDir;
using infir2::rt::test::writeDataset;

namespace {

/// Writes documents as dataset `prefix`.
SourceOptions options(int64_t seq, bool shuffle, uint64_t seed = 0) {
  SourceOptions o;
  o.seq = seq;
  o.vocab = 100;
  o.shuffle = shuffle;
  o.seed = seed;
  o.packing = Packing::Stream;
  return o;
}

const std::vector<std::vector<int64_t>> kDocs = {
    {10, 11, 12}, {20, 21}, {30, 31, 32, 33}};

} // namespace

TEST(DocumentStream, SamplesSpanDocumentsAndEpochs) {
  TempDir dir;
  writeDataset(dir / "d", IndexedDType::UInt16, kDocs);
  writeDataset(dir / "d.mask", IndexedDType::UInt8,
               {{0, 0, 1}, {1, 1}, {0, 1, 1, 0}});
  Expected<std::unique_ptr<TokenSource>> s =
      openTokenSource(dir / "d", options(3, /*shuffle=*/false));
  ASSERT_TRUE(s) << s.message();
  EXPECT_TRUE((*s)->masked());
  EXPECT_EQ((*s)->samplesPerEpoch(), 2); // (9 - 1) / 3
  // The stream: 10 11 12 20 21 30 31 32 33 | 10 11 12 ...; sample i is
  // tokens [3i, 3i + 4); each target's weight is its own mask value.
  std::vector<std::vector<int32_t>> want = {
      {10, 11, 12, 20}, {20, 21, 30, 31}, {31, 32, 33, 10}, {10, 11, 12, 20}};
  std::vector<std::vector<float>> weights = {
      {0, 1, 1}, {1, 0, 1}, {1, 0, 0}, {0, 1, 1}};
  for (size_t i = 0; i < want.size(); ++i) {
    int32_t tokens[4], seg[3];
    float w[3];
    ASSERT_TRUE((*s)->sample(int64_t(i), tokens, w, seg));
    EXPECT_EQ(std::vector<int32_t>(tokens, tokens + 4), want[i]) << i;
    EXPECT_EQ(std::vector<float>(w, w + 3), weights[i]) << i;
  }
}

TEST(DocumentStream, EachEpochIsAShuffleOfEveryDocument) {
  TempDir dir;
  std::vector<std::vector<int64_t>> docs;
  for (int64_t d = 0; d < 20; ++d)
    docs.push_back({d});
  writeDataset(dir / "d", IndexedDType::UInt16, docs);
  auto epochOrder = [&](uint64_t seed, int64_t epoch) {
    auto s = openTokenSource(dir / "d", options(1, true, seed));
    EXPECT_TRUE(s) << s.message();
    std::vector<int32_t> order;
    for (int64_t i = 0; i < 20; ++i) {
      int32_t t[2], seg[1];
      float w[1];
      EXPECT_TRUE((*s)->sample(epoch * 20 + i, t, w, seg));
      order.push_back(t[0]);
    }
    return order;
  };
  std::vector<int32_t> e0 = epochOrder(1, 0), e1 = epochOrder(1, 1);
  EXPECT_EQ(std::set<int32_t>(e0.begin(), e0.end()).size(), 20u);
  EXPECT_EQ(std::set<int32_t>(e1.begin(), e1.end()).size(), 20u);
  EXPECT_NE(e0, e1);                  // a new order each epoch
  EXPECT_EQ(e0, epochOrder(1, 0));    // the same for the same seed
  EXPECT_NE(e0, epochOrder(2, 0));    // another for another
}

TEST(DocumentStream, BadDataIsNamed) {
  TempDir dir;
  writeDataset(dir / "d", IndexedDType::UInt16, kDocs);
  writeDataset(dir / "d.mask", IndexedDType::UInt8, {{0, 0, 1}, {1, 1}});
  EXPECT_EQ(openTokenSource(dir / "d", options(3, false)).message(),
            dir / "d.mask: 2 documents, but " + dir / "d" + " has 3");
  writeDataset(dir / "d.mask", IndexedDType::UInt8,
               {{0, 0, 1}, {1, 1}, {0, 2, 1, 0}});
  auto s = openTokenSource(dir / "d", options(3, false));
  ASSERT_TRUE(s) << s.message();
  int32_t t[4], seg[3];
  float w[3];
  EXPECT_EQ((*s)->sample(1, t, w, seg).message(),
            dir / "d.mask: document 2 holds mask value 2 (0 or 1 expected)");
  writeDataset(dir / "v", IndexedDType::UInt16, {{1, 2, 300, 4}});
  s = openTokenSource(dir / "v", options(3, false));
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ((*s)->sample(0, t, w, seg).message(),
            dir / "v: document 0 holds token 300, outside the model's "
                  "vocabulary of 100");
  EXPECT_EQ(openTokenSource(dir / "v", options(4, false)).message(),
            dir / "v: 4 tokens, fewer than one sequence needs (5)");
  // The files' own names work as the prefix.
  EXPECT_TRUE(openTokenSource(dir / "v.bin", options(3, false)));
  EXPECT_TRUE(openTokenSource(dir / "v.idx", options(3, false)));
}

namespace {
/// Sample i of source k: tokens {100k + i, ...}.
class Numbered : public TokenSource {
public:
  explicit Numbered(int k) : k_(k) {}
  Status sample(int64_t index, int32_t *tokens, float *weights,
                int32_t *segments) override {
    tokens[0] = int32_t(100 * k_ + index);
    weights[0] = 1;
    segments[0] = 0;
    return Status::ok();
  }
  int64_t samplesPerEpoch() const override { return 10; }
  std::string describe() const override { return "n" + std::to_string(k_); }

private:
  int k_;
};
} // namespace

TEST(Blend, FollowsMegatronsAssignment) {
  std::vector<std::unique_ptr<TokenSource>> sources;
  sources.push_back(std::make_unique<Numbered>(0));
  sources.push_back(std::make_unique<Numbered>(1));
  Blend blend({7, 3}, std::move(sources)); // normalized to 0.7 and 0.3
  // Worked by hand from w_d·max(i, 1) − taken_d (first maximum wins):
  // sources 0 1 0 0 1 0 0 1 0 0, each taking its next sample.
  std::vector<int32_t> want = {0, 100, 1, 2, 101, 3, 4, 102, 5, 6};
  for (int64_t i = 0; i < 10; ++i) {
    int32_t t[2], seg[1];
    float w[1];
    ASSERT_TRUE(blend.sample(i, t, w, seg));
    EXPECT_EQ(t[0], want[size_t(i)]) << i;
  }
  // Random access (a resumed run) gives the same assignment.
  EXPECT_EQ(blend.locate(4), (std::pair<size_t, int64_t>{1, 1}));
  EXPECT_EQ(blend.locate(9), (std::pair<size_t, int64_t>{0, 6}));
  EXPECT_EQ(blend.describe(), "blend of 2: 0.7 × n0; 0.3 × n1");
}
