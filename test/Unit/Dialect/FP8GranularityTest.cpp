//===- FP8GranularityTest.cpp - Scale shapes of fp8 granularities ---------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The expected scale shapes here are worked out by hand from the recipe's
// definition (one scale per 1x128 group, per 128x128 block, per tensor), not
// computed by the code under test.
//
//===----------------------------------------------------------------------===//

#include "infir2/Dialect/FP8/IR/FP8Attrs.h"
#include "infir2/Dialect/FP8/IR/FP8Dialect.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace infir2::fp8;

namespace {

class GranularityTest : public ::testing::Test {
protected:
  GranularityTest() { ctx.loadDialect<FP8Dialect>(); }

  /// Runs getScaleShape and captures the diagnostic it emits, if any.
  FailureOr<SmallVector<int64_t>> scaleShape(GranularityAttrInterface g,
                                             ArrayRef<int64_t> shape) {
    lastError.clear();
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
      lastError = diag.str();
      return success();
    });
    return getScaleShape(g, shape,
                         [&] { return emitError(UnknownLoc::get(&ctx)); });
  }

  void expectScaleShape(GranularityAttrInterface g, ArrayRef<int64_t> shape,
                        ArrayRef<int64_t> expected) {
    FailureOr<SmallVector<int64_t>> actual = scaleShape(g, shape);
    ASSERT_TRUE(succeeded(actual)) << lastError;
    EXPECT_EQ(ArrayRef<int64_t>(*actual), expected);
  }

  void expectRejected(GranularityAttrInterface g, ArrayRef<int64_t> shape,
                      StringRef message) {
    EXPECT_TRUE(failed(scaleShape(g, shape)));
    EXPECT_NE(lastError.find(message.str()), std::string::npos) << lastError;
  }

  MLIRContext ctx;
  std::string lastError;
};

TEST_F(GranularityTest, ActivationGroupsAlongContraction) {
  // A [tokens=4096, K=2048] activation in 1x128 groups along K: 2048/128 = 16
  // scales per token.
  expectScaleShape(GroupsAttr::get(&ctx, 128, 1), {4096, 2048}, {4096, 16});
}

TEST_F(GranularityTest, ColumnWiseGroupsAlongTokens) {
  // The weight-gradient GEMM's copy is grouped along tokens (dim 0):
  // 4096/128 = 32 groups per column.
  expectScaleShape(GroupsAttr::get(&ctx, 128, 0), {4096, 2048}, {32, 2048});
}

TEST_F(GranularityTest, WeightBlocks) {
  // Qwen2.5-7B's MLP up-projection [18944, 3584] in 128x128 blocks:
  // 18944/128 = 148, 3584/128 = 28.
  expectScaleShape(BlocksAttr::get(&ctx, 128, 128), {18944, 3584}, {148, 28});
}

TEST_F(GranularityTest, BlocksKeepBatchDimensions) {
  expectScaleShape(BlocksAttr::get(&ctx, 128, 64), {3, 256, 192}, {3, 2, 3});
}

TEST_F(GranularityTest, TensorwiseIsAllOnes) {
  expectScaleShape(TensorwiseAttr::get(&ctx), {7, 5, 3}, {1, 1, 1});
}

TEST_F(GranularityTest, RowwiseIsAGroupSpanningTheRow) {
  expectScaleShape(GroupsAttr::get(&ctx, 896, 1), {64, 896}, {64, 1});
}

TEST_F(GranularityTest, GroupThatDoesNotDivideIsRejected) {
  expectRejected(GroupsAttr::get(&ctx, 128, 1), {64, 200},
                 "block size 128 does not divide dimension 1 (size 200)");
}

TEST_F(GranularityTest, BlockThatDoesNotDivideIsRejected) {
  expectRejected(BlocksAttr::get(&ctx, 128, 128), {384, 4928},
                 "block size 128 does not divide dimension 1 (size 4928)");
}

TEST_F(GranularityTest, GroupDimensionOutOfRangeIsRejected) {
  expectRejected(GroupsAttr::get(&ctx, 128, 2), {128, 128},
                 "group dimension 2 is out of range");
}

TEST_F(GranularityTest, BlocksNeedRankTwo) {
  expectRejected(BlocksAttr::get(&ctx, 128, 128), {16384}, "rank at least 2");
}

TEST_F(GranularityTest, EmptyTensorIsRejected) {
  expectRejected(TensorwiseAttr::get(&ctx), {0, 128}, "empty dimension");
}

TEST_F(GranularityTest, FormatElementTypesAndRanges) {
  EXPECT_TRUE(isa<Float8E4M3FNType>(getElementType(&ctx, Format::e4m3)));
  EXPECT_TRUE(isa<Float8E5M2Type>(getElementType(&ctx, Format::e5m2)));
  // OCP FP8 spec: E4M3FN max = 1.75 * 2^8, E5M2 max = 1.75 * 2^15.
  EXPECT_EQ(getMaxFinite(Format::e4m3), 1.75 * 256);
  EXPECT_EQ(getMaxFinite(Format::e5m2), 1.75 * 32768);
}

} // namespace
