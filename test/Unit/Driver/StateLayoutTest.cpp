//===- StateLayoutTest.cpp - The state region, slot by slot ---------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "io/StateLayout.h"

#include "infir2/runtime/Float.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <omp.h>
#include <vector>

using namespace infir2::rt;

namespace {

/// One parameter of `dtype` and shape [rows, 2], its master (a ZeRO-1
/// shard of `shardRows` rows when sharded), laid out from offset 0.
Manifest oneParam(const std::string &dtype, int64_t rows, int64_t shardRows,
                  int64_t zero1) {
  Manifest m;
  int64_t n = rows * 2, size = manifestDtypeSize(dtype);
  m.slots.push_back(
      {SlotKind::Param, "w", dtype, 0, n * size, {rows, 2}, "normal", 0.5});
  m.slots.push_back({SlotKind::Master,
                     "w",
                     "f32",
                     256,
                     shardRows * 2 * 4,
                     {shardRows, 2},
                     "zeros",
                     0.0});
  m.zero1WorldSize = zero1;
  m.stateBytes = 512;
  return m;
}

float master(const std::vector<uint8_t> &state, int64_t i) {
  return readElement("f32", state.data() + 256, i);
}

} // namespace

TEST(StateLayout, ElementsInEveryStorageType) {
  uint8_t buf[64] = {};
  for (const char *dtype : {"f32", "bf16", "f16", "f64"}) {
    writeElement(dtype, buf, 3, 0.1f);
    float want = std::string(dtype) == "bf16"  ? bf16ToFloat(floatToBF16(0.1f))
                 : std::string(dtype) == "f16" ? halfToFloat(floatToHalf(0.1f))
                                               : 0.1f;
    EXPECT_EQ(readElement(dtype, buf, 3), want) << dtype;
  }
  // f16 is IEEE half (2 bytes), not BF16 and not 8 bytes.
  std::memset(buf, 0, sizeof buf);
  writeElement("f16", buf, 1, 1.0f);
  uint16_t h;
  std::memcpy(&h, buf + 2, 2);
  EXPECT_EQ(h, 0x3c00);
  EXPECT_EQ(buf[4], 0);
  int32_t i32 = -7;
  std::memcpy(buf, &i32, 4);
  EXPECT_EQ(readElement("i32", buf, 0), -7.0f);
  EXPECT_EQ(storedDtype("f16"), "F16");
  EXPECT_EQ(storedDtype("bf16"), "BF16");
  EXPECT_EQ(storedDtype("f32"), "F32");
  EXPECT_EQ(storedDtype("i32"), "");
}

TEST(StateLayout, InitializesF16WorkingCopiesFromTheFp32Masters) {
  StateLayout layout(oneParam("f16", 4, 4, 0));
  std::vector<uint8_t> state(512, 0xff);
  std::mt19937_64 rng(3);
  ASSERT_TRUE(layout.initialize(state.data(), rng, 0));
  bool anyNonZero = false;
  for (int64_t i = 0; i < 8; ++i) {
    float m = master(state, i), w = readElement("f16", state.data(), i);
    EXPECT_TRUE(std::isfinite(w));
    EXPECT_EQ(w, halfToFloat(floatToHalf(m))) << i;
    EXPECT_LT(std::fabs(m), 4.0f); // normal(0, 0.5)
    anyNonZero |= m != 0.0f;
  }
  EXPECT_TRUE(anyNonZero);
  // Same seed, same weights.
  std::vector<uint8_t> again(512, 0);
  std::mt19937_64 rng2(3);
  ASSERT_TRUE(layout.initialize(again.data(), rng2, 0));
  EXPECT_EQ(std::vector<uint8_t>(state.begin(), state.begin() + 16),
            std::vector<uint8_t>(again.begin(), again.begin() + 16));
}

TEST(StateLayout, InitialWeightsAreNormalWhateverTheThreads) {
  // 2 x 40000 elements of normal(0, 0.5), more than one chunk per thread.
  const int64_t rows = 40000, n = rows * 2;
  Manifest m;
  m.slots.push_back(
      {SlotKind::Param, "w", "f32", 0, n * 4, {rows, 2}, "normal", 0.5});
  m.slots.push_back(
      {SlotKind::Master, "w", "f32", n * 4, n * 4, {rows, 2}, "zeros", 0.0});
  m.stateBytes = 2 * n * 4;
  StateLayout layout(m);
  const uint64_t seed = 11;
  SCOPED_TRACE("seed " + std::to_string(seed));
  auto draw = [&](int threads) {
    std::vector<uint8_t> state(m.stateBytes, 0);
    std::mt19937_64 rng(seed);
    int before = omp_get_max_threads();
    omp_set_num_threads(threads);
    EXPECT_TRUE(layout.initialize(state.data(), rng, 0));
    omp_set_num_threads(before);
    return state;
  };
  std::vector<uint8_t> one = draw(1), two = draw(2), three = draw(3);
  EXPECT_EQ(one, two);
  EXPECT_EQ(one, three);
  // The sample's mean and standard deviation: within 5 standard errors of
  // 0 and 0.5 (the mean's is 0.5 / sqrt(n), the deviation's about
  // 0.5 / sqrt(2n)); |z| < 5.8 by construction (24-bit uniforms).
  std::vector<float> w(n);
  std::memcpy(w.data(), one.data(), n * 4);
  double sum = 0, sq = 0, biggest = 0;
  for (float v : w) {
    sum += v;
    sq += double(v) * v;
    biggest = std::max(biggest, double(std::fabs(v)));
  }
  double mean = sum / n, sd = std::sqrt(sq / n - mean * mean);
  EXPECT_LT(std::fabs(mean), 5 * 0.5 / std::sqrt(double(n)));
  EXPECT_LT(std::fabs(sd - 0.5), 5 * 0.5 / std::sqrt(2.0 * n));
  EXPECT_LT(biggest, 0.5 * 5.8);
  EXPECT_GT(biggest, 0.5 * 3.5); // the tails are there
  // The master holds the same values as the FP32 working copy.
  EXPECT_EQ(0, std::memcmp(one.data(), one.data() + n * 4, n * 4));
}

TEST(StateLayout, Zero1ShardsAreRowsWithPadding) {
  // 3 rows over 2 ranks: shards of 2 rows; rank 1 holds 1 row and padding.
  StateLayout layout(oneParam("bf16", 3, 2, 2));
  const ManifestSlot *m = layout.find(SlotKind::Master, "w");
  ASSERT_NE(m, nullptr);
  Extent e0 = layout.extentOf(*m, 0), e1 = layout.extentOf(*m, 1);
  EXPECT_EQ(e0.shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(e0.begin, 0);
  EXPECT_EQ(e0.count, 4);
  EXPECT_EQ(e1.begin, 4);
  EXPECT_EQ(e1.count, 2);
  EXPECT_TRUE(e1.contains(5));
  EXPECT_FALSE(e1.contains(3));
  // The working copy is whole on every rank.
  Extent w = layout.extentOf(*layout.find(SlotKind::Param, "w"), 1);
  EXPECT_EQ(w.begin, 0);
  EXPECT_EQ(w.count, 6);

  // Both ranks draw the same values; each keeps its rows of the master.
  std::vector<uint8_t> s0(512, 0), s1(512, 0);
  std::mt19937_64 r0(5), r1(5);
  ASSERT_TRUE(layout.initialize(s0.data(), r0, 0));
  ASSERT_TRUE(layout.initialize(s1.data(), r1, 1));
  for (int64_t i = 0; i < 2; ++i)
    EXPECT_EQ(bf16ToFloat(floatToBF16(master(s1, i))),
              readElement("bf16", s0.data(), 4 + i));
  EXPECT_EQ(master(s1, 2), 0.0f); // padding
}

TEST(StateLayout, LoadsParametersAndNamesWhatIsWrong) {
  StateLayout layout(oneParam("f16", 2, 2, 0));
  std::vector<uint8_t> state(512, 0);
  StoredTensor t;
  t.dtype = "F32";
  t.shape = {2, 2};
  std::vector<float> v = {0.5f, -1.0f, 0.1f, 2.0f};
  t.bytes.resize(16);
  std::memcpy(t.bytes.data(), v.data(), 16);
  std::map<std::string, StoredTensor> tensors = {{"w", t}};
  ASSERT_TRUE(layout.loadParameters(tensors, "x.st", state.data(), 0));
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(master(state, i), v[i]);
    EXPECT_EQ(readElement("f16", state.data(), i),
              halfToFloat(floatToHalf(v[i])));
  }

  tensors["w"].shape = {4, 1};
  Status s = layout.loadParameters(tensors, "x.st", state.data(), 0);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(),
            "x.st: tensor 'w' has shape [4x1], the model expects [2x2]");
  tensors["w"].shape = {2, 2};
  tensors["w"].dtype = "I32";
  s = layout.loadParameters(tensors, "x.st", state.data(), 0);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "x.st: tensor 'w' has dtype I32 (expected F32, BF16, "
                         "F16 or F64)");
  tensors.clear();
  s = layout.loadParameters(tensors, "x.st", state.data(), 0);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "x.st: tensor 'w' is missing");
}

TEST(StateLayout, MissingSlotIsNamed) {
  StateLayout layout(oneParam("f32", 2, 2, 0));
  Expected<const ManifestSlot *> s = layout.get(SlotKind::Input, "input_ids");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "the compiled model has no input 'input_ids'");
}

// The byte ranges of a kind's slots: neighbours merge across the alignment
// padding between them, another slot or a wider gap splits them, and the
// manifest's order of slots does not matter (only their offsets).
TEST(StateLayout, RunsOfAKindMergeNeighboursOnly) {
  Manifest m;
  m.slots.push_back({SlotKind::Grad, "c", "f32", 256, 4, {1}, "zeros", 0.0});
  m.slots.push_back({SlotKind::Grad, "a", "f32", 0, 100, {25}, "zeros", 0.0});
  m.slots.push_back(
      {SlotKind::Param, "w", "bf16", 192, 64, {32}, "zeros", 0.0});
  m.slots.push_back({SlotKind::Grad, "b", "f32", 128, 64, {16}, "zeros", 0.0});
  m.slots.push_back({SlotKind::Grad, "d", "f32", 320, 8, {2}, "zeros", 0.0});
  // 64 bytes or more that no slot holds are not padding: a new run.
  m.slots.push_back({SlotKind::Grad, "e", "f32", 448, 4, {1}, "zeros", 0.0});
  m.stateBytes = 512;
  StateLayout layout(m);
  using Runs = std::vector<std::pair<int64_t, int64_t>>;
  EXPECT_EQ(layout.runsOf(SlotKind::Grad),
            (Runs{{0, 192}, {256, 72}, {448, 4}}));
  EXPECT_EQ(layout.runsOf(SlotKind::Param), (Runs{{192, 64}}));
  EXPECT_EQ(layout.runsOf(SlotKind::Moment1), Runs{});
}

// A tensor-parallel parameter's slices, with ZeRO-1 rows over 2
// data-parallel ranks on top (3 rows a rank: one rank holds padding): every
// rank's working copy and master rows are the unsharded model's values where
// wholeIndex() says, and the slices put back by assembleWhole() are the
// whole tensor.
TEST(StateLayout, TensorParallelSlicesOfTheWholeWithZero1Rows) {
  for (int64_t tpDim : {0, 1}) {
    // Whole [6, 4] split on dim 0, or [3, 8] split on dim 1: [3, 4] a rank.
    std::vector<int64_t> whole =
        tpDim == 0 ? std::vector<int64_t>{6, 4} : std::vector<int64_t>{3, 8};
    Manifest unsharded;
    unsharded.slots.push_back(
        {SlotKind::Param, "w", "f32", 0, 96, whole, "normal", 0.5});
    unsharded.slots.push_back(
        {SlotKind::Master, "w", "f32", 128, 96, whole, "zeros", 0.0});
    unsharded.stateBytes = 256;
    StateLayout one(unsharded);
    std::vector<uint8_t> ref(256, 0);
    std::mt19937_64 r(9);
    ASSERT_TRUE(one.initialize(ref.data(), r, 0));

    Manifest m;
    m.tensorParallel = 2;
    m.zero1WorldSize = 2;
    m.slots.push_back(
        {SlotKind::Param, "w", "f32", 0, 48, {3, 4}, "normal", 0.5, tpDim});
    m.slots.push_back(
        {SlotKind::Master, "w", "f32", 64, 32, {2, 4}, "zeros", 0.0, tpDim});
    m.stateBytes = 128;
    std::vector<uint8_t> params;  // the ranks' working copies, rank order
    std::vector<uint8_t> masters; // and their masters' rows
    for (int tp = 0; tp < 2; ++tp)
      for (int dp = 0; dp < 2; ++dp) {
        StateLayout layout(m);
        layout.setTensorParallelRank(tp);
        EXPECT_EQ(layout.wholeShape(m.slots[1]), whole);
        std::vector<uint8_t> state(128, 0);
        std::mt19937_64 rr(9);
        ASSERT_TRUE(layout.initialize(state.data(), rr, dp));
        for (int64_t i = 0; i < 12; ++i)
          EXPECT_EQ(
              readElement("f32", state.data(), i),
              readElement("f32", ref.data(), layout.wholeIndex(m.slots[0], i)))
              << "dim " << tpDim << " tp " << tp << " element " << i;
        Extent e = layout.extentOf(m.slots[1], dp);
        EXPECT_EQ(e.count, dp == 0 ? 8 : 4); // rows 0-1, or row 2 + padding
        for (int64_t i = 0; i < e.count; ++i)
          EXPECT_EQ(readElement("f32", state.data() + 64, i),
                    readElement("f32", ref.data(),
                                layout.wholeIndex(m.slots[1], e.begin + i)));
        if (dp == 0)
          params.insert(params.end(), state.begin(), state.begin() + 48);
        // The rank's master rows, as a save gathers them over the
        // data-parallel group (padding dropped): [3, 4] a rank.
        masters.insert(masters.end(), state.begin() + 64,
                       state.begin() + 64 + 4 * e.count);
      }
    StateLayout layout(m);
    std::vector<uint8_t> assembled(96);
    layout.assembleWhole(m.slots[0], params.data(), 4, assembled.data());
    EXPECT_EQ(0, std::memcmp(assembled.data(), ref.data(), 96))
        << "dim " << tpDim;
    // The masters' slot is a row shard; the tensor a rank holds is the
    // parameter's [3, 4] (rankShape), which assembleWhole puts together.
    ASSERT_EQ(masters.size(), 96u);
    layout.assembleWhole(m.slots[1], masters.data(), 4, assembled.data());
    EXPECT_EQ(0, std::memcmp(assembled.data(), ref.data() + 128, 96))
        << "masters, dim " << tpDim;
  }
}
