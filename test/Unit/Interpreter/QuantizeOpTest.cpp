//===- QuantizeOpTest.cpp - fp8.quantize in the interpreter ---------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Runs fp8.quantize / dequantize / amax through the interpreter on groups
// with subnormal, tiny, zero, huge, infinite and NaN values, and on random
// normal data (seed printed). Expected values are derived by hand from the
// numerics contract.
//
//===----------------------------------------------------------------------===//

#include "infir2/InitAll.h"
#include "infir2/Interpreter/Interpreter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

using namespace mlir;
using infir2::interp::Tensor;

namespace {

// Four 1x4 groups per row, e4m3, power-of-two scales.
constexpr const char *kQuantize = R"mlir(
func.func @q(%x: tensor<1x16xf32>) -> (tensor<1x16xf8E4M3FN>, tensor<1x4xf32>, tensor<1x16xf32>, tensor<1x4xf32>) {
  %q, %s = fp8.quantize %x to e4m3 by #fp8.groups<4, dim = 1> scale pow2
      : tensor<1x16xf32> -> tensor<1x16xf8E4M3FN>, tensor<1x4xf32>
  %d = fp8.dequantize (%q, %s by #fp8.groups<4, dim = 1>) : (tensor<1x16xf8E4M3FN>, tensor<1x4xf32>) -> tensor<1x16xf32>
  %a = fp8.amax (%x by #fp8.groups<4, dim = 1>) : tensor<1x16xf32> -> tensor<1x4xf32>
  return %q, %s, %d, %a : tensor<1x16xf8E4M3FN>, tensor<1x4xf32>, tensor<1x16xf32>, tensor<1x4xf32>
}
)mlir";

class QuantizeOpTest : public ::testing::Test {
protected:
  QuantizeOpTest() : ctx(makeRegistry()) {
    module = parseSourceString<ModuleOp>(kQuantize, &ctx);
  }
  static DialectRegistry makeRegistry() {
    DialectRegistry r;
    infir2::registerAllDialects(r);
    return r;
  }
  FailureOr<SmallVector<Tensor>> run(std::vector<double> values) {
    Tensor x(llvm::ArrayRef<int64_t>{1, 16});
    x.data = std::move(values);
    lastError.clear();
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
      lastError = d.str();
      return success();
    });
    return infir2::interp::run(module->lookupSymbol<func::FuncOp>("q"), {x});
  }
  MLIRContext ctx;
  OwningOpRef<ModuleOp> module;
  std::string lastError;
};

TEST_F(QuantizeOpTest, SpecialGroups) {
  const double tiny = 2.2e-43, sub = 1e-40;
  auto r = run({
      0, 0, 0, 0,                // all zero: scale 1, data 0
      tiny, -tiny, 0, tiny,      // FP32 subnormal amax: floored scale, flushes
      1e30, -1e30, 1e29, 0,      // huge: scale 2^ceil(log2(1e30/448))
      3.0, -0.5, sub, 448.0 / 2, // ordinary: amax 224 -> scale 0.5
  });
  ASSERT_TRUE(succeeded(r)) << lastError;
  const Tensor &q = (*r)[0], &s = (*r)[1], &d = (*r)[2], &a = (*r)[3];
  EXPECT_EQ(s.data[0], 1.0);
  EXPECT_EQ(s.data[1], std::ldexp(1.0, -48));
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(q.data[i], 0.0) << i;
  // 1e30 / 448 = 2.23e27 lies in (2^90, 2^91]: scale 2^91.
  EXPECT_EQ(s.data[2], std::ldexp(1.0, 91));
  EXPECT_TRUE(std::isfinite(q.data[8]) && std::fabs(q.data[8]) <= 448.0);
  EXPECT_NEAR(d.data[8] / 1e30, 1.0, 1.0 / 16) << "e4m3 keeps 3 mantissa bits";
  EXPECT_EQ(s.data[3], 0.5);
  EXPECT_EQ(q.data[12], 6.0);   // 3 / 0.5, exact
  EXPECT_EQ(q.data[13], -1.0);  // -0.5 / 0.5
  EXPECT_EQ(q.data[14], 0.0);   // 2e-40 is far below 2^-9
  EXPECT_EQ(q.data[15], 448.0); // 224 / 0.5, exactly the max
  EXPECT_EQ(d.data[12], 3.0);
  EXPECT_EQ(a.data[3], 224.0);
}

TEST_F(QuantizeOpTest, InfinityIsReportedNotQuantized) {
  std::vector<double> v(16, 1.0);
  v[5] = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(failed(run(v)));
  EXPECT_NE(lastError.find("non-finite amax (inf) in scale block 1"),
            std::string::npos)
      << lastError;
}

TEST_F(QuantizeOpTest, NaNIsReportedNotQuantized) {
  std::vector<double> v(16, 1.0);
  v[14] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(failed(run(v)));
  EXPECT_NE(lastError.find("non-finite amax (nan) in scale block 3"),
            std::string::npos)
      << lastError;
}

TEST_F(QuantizeOpTest, RoundTripOnRandomNormalData) {
  // E4M3 with power-of-two scales keeps every value within half an ulp of a
  // 3-bit mantissa: relative error <= 2^-4 for values in the normal range of
  // the scaled format; the SQNR of N(0,1) data is then well above 25 dB.
  unsigned seed = 20261122;
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  double signal = 0.0, noise = 0.0;
  for (int trial = 0; trial < 64; ++trial) {
    std::vector<double> v(16);
    for (double &x : v)
      x = static_cast<float>(normal(rng));
    auto r = run(v);
    ASSERT_TRUE(succeeded(r)) << lastError << " (seed " << seed << ")";
    for (int i = 0; i < 16; ++i) {
      signal += v[i] * v[i];
      noise += (v[i] - (*r)[2].data[i]) * (v[i] - (*r)[2].data[i]);
    }
  }
  double sqnr = 10.0 * std::log10(signal / noise);
  EXPECT_GE(sqnr, 25.0) << "seed " << seed;
  std::printf("seed %u: e4m3 1x4 pow2 round-trip SQNR %.1f dB\n", seed, sqnr);
}

} // namespace
