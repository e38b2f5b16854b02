//===- Infir2MatmulShapeTest.cpp - Shape rule of infir2.matmul ------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {

class MatmulShapeTest : public ::testing::Test {
protected:
  FailureOr<SmallVector<int64_t>> infer(ArrayRef<int64_t> lhs,
                                        ArrayRef<int64_t> rhs, bool tl,
                                        bool tr) {
    lastError.clear();
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
      lastError = diag.str();
      return success();
    });
    return infir2::inferMatmulShape(
        lhs, rhs, tl, tr, [&] { return emitError(UnknownLoc::get(&ctx)); });
  }

  MLIRContext ctx;
  std::string lastError;
};

TEST_F(MatmulShapeTest, LinearLayerWithSharedWeight) {
  // y[B, S, N] = x[B, S, K] · W[N, K]ᵀ
  auto s = infer({2, 32, 64}, {176, 64}, false, true);
  ASSERT_TRUE(succeeded(s)) << lastError;
  EXPECT_EQ(*s, (SmallVector<int64_t>{2, 32, 176}));
}

TEST_F(MatmulShapeTest, PlainMatrixProduct) {
  auto s = infer({5, 7}, {7, 3}, false, false);
  ASSERT_TRUE(succeeded(s)) << lastError;
  EXPECT_EQ(*s, (SmallVector<int64_t>{5, 3}));
}

TEST_F(MatmulShapeTest, WeightGradientTransposesLhs) {
  // dW[N, K] = dYᵀ · X with dY [T, N], X [T, K].
  auto s = infer({4096, 896}, {4096, 4864}, true, false);
  ASSERT_TRUE(succeeded(s)) << lastError;
  EXPECT_EQ(*s, (SmallVector<int64_t>{896, 4864}));
}

TEST_F(MatmulShapeTest, BatchedBothTransposed) {
  auto s = infer({3, 8, 5}, {3, 9, 8}, true, true);
  ASSERT_TRUE(succeeded(s)) << lastError;
  EXPECT_EQ(*s, (SmallVector<int64_t>{3, 5, 9}));
}

TEST_F(MatmulShapeTest, ContractionMismatch) {
  EXPECT_TRUE(failed(infer({2, 32, 64}, {176, 63}, false, true)));
  EXPECT_NE(lastError.find("contraction dimensions to match, got 64"),
            std::string::npos)
      << lastError;
}

TEST_F(MatmulShapeTest, BatchMismatch) {
  EXPECT_TRUE(failed(infer({2, 4, 8}, {3, 8, 4}, false, false)));
  EXPECT_NE(lastError.find("equal batch dimensions"), std::string::npos)
      << lastError;
}

TEST_F(MatmulShapeTest, RankOneIsRejected) {
  EXPECT_TRUE(failed(infer({8}, {8, 4}, false, false)));
  EXPECT_NE(lastError.find("rank at least 2"), std::string::npos) << lastError;
}

TEST_F(MatmulShapeTest, RhsOfOtherRankIsRejected) {
  EXPECT_TRUE(failed(infer({2, 3, 4, 8}, {2, 8, 4}, false, false)));
  EXPECT_NE(lastError.find("rank 2 or of the rank of 'lhs'"), std::string::npos)
      << lastError;
}

} // namespace
