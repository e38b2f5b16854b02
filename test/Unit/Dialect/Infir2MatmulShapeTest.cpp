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
  FailureOr<SmallVector<int64_t>>
  infer(ArrayRef<int64_t> lhs, ArrayRef<int64_t> rhs, bool tl, bool tr) {
    lastError.clear();
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
      lastError = diag.str();
      return success();
    });
    return infir2::inferMatmulShape(
        lhs, rhs, tl, tr, [&] { return emitError(UnknownLoc::get(&ctx)); });
  }

  void expectShape(ArrayRef<int64_t> lhs, ArrayRef<int64_t> rhs, bool tl,
                   bool tr, ArrayRef<int64_t> expected) {
    FailureOr<SmallVector<int64_t>> actual = infer(lhs, rhs, tl, tr);
    ASSERT_TRUE(succeeded(actual)) << lastError;
    EXPECT_EQ(ArrayRef<int64_t>(*actual), expected);
  }

  void expectRejected(ArrayRef<int64_t> lhs, ArrayRef<int64_t> rhs, bool tl,
                      bool tr, StringRef message) {
    EXPECT_TRUE(failed(infer(lhs, rhs, tl, tr)));
    EXPECT_NE(lastError.find(message.str()), std::string::npos) << lastError;
  }

  MLIRContext ctx;
  std::string lastError;
};

TEST_F(MatmulShapeTest, LinearLayerWithSharedWeight) {
  // y[B, S, N] = x[B, S, K] · W[N, K]ᵀ
  expectShape({2, 32, 64}, {176, 64}, false, true, {2, 32, 176});
}

TEST_F(MatmulShapeTest, PlainMatrixProduct) {
  expectShape({5, 7}, {7, 3}, false, false, {5, 3});
}

TEST_F(MatmulShapeTest, WeightGradientTransposesLhs) {
  // dW[N, K] = dYᵀ · X with dY [T, N], X [T, K].
  expectShape({4096, 896}, {4096, 4864}, true, false, {896, 4864});
}

TEST_F(MatmulShapeTest, BatchedBothTransposed) {
  expectShape({3, 8, 5}, {3, 9, 8}, true, true, {3, 5, 9});
}

TEST_F(MatmulShapeTest, ContractionMismatch) {
  expectRejected({2, 32, 64}, {176, 63}, false, true,
                 "contraction dimensions to match, got 64");
}

TEST_F(MatmulShapeTest, BatchMismatch) {
  expectRejected({2, 4, 8}, {3, 8, 4}, false, false, "equal batch dimensions");
}

TEST_F(MatmulShapeTest, RankOneIsRejected) {
  expectRejected({8}, {8, 4}, false, false, "rank at least 2");
}

TEST_F(MatmulShapeTest, RhsOfOtherRankIsRejected) {
  expectRejected({2, 3, 4, 8}, {2, 8, 4}, false, false,
                 "rank 2 or of the rank of 'lhs'");
}

} // namespace
