//===- FP8SqnrTest.cpp - Signal-to-quantization-noise of the FP8 ops ------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The contract's quality bars, measured through the reference interpreter on
// random normal data (seed printed): a quantize -> dequantize round trip keeps
// SQNR >= 25 dB, and an FP8 GEMM's output (both operands quantized, FP32
// scales, exact accumulation) >= 18 dB against the exact FP64 product of the
// unquantized operands. E4M3 keeps 3 mantissa bits (about 30 dB on normal
// data), E5M2 2 bits (about 25 dB), which is why the hybrid format is only
// used for gradients.
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
#include <random>
#include <string>

using namespace mlir;
using infir2::interp::Tensor;

namespace {

// x [256, 512] in 1x128 groups, w [384, 512] in 128x128 blocks (or both
// tensorwise), the recipe's forward GEMM; the dequantized x is returned too.
std::string gemmModule(const std::string &xFormat, const std::string &wFormat,
                       const std::string &xGran, const std::string &wGran,
                       const std::string &xScale, const std::string &wScale) {
  auto elt = [](const std::string &f) {
    return f == "e4m3" ? std::string("f8E4M3FN") : std::string("f8E5M2");
  };
  return R"(
func.func @gemm(%x: tensor<256x512xf32>, %w: tensor<384x512xf32>) -> (tensor<256x384xf32>, tensor<256x512xf32>) {
  %xq, %xs = fp8.quantize %x to )" +
         xFormat + " by " + xGran +
         R"( scale pow2 : tensor<256x512xf32> -> tensor<256x512x)" +
         elt(xFormat) + ">, tensor<" + xScale + R"(xf32>
  %wq, %ws = fp8.quantize %w to )" +
         wFormat + " by " + wGran +
         R"( scale pow2 : tensor<384x512xf32> -> tensor<384x512x)" +
         elt(wFormat) + ">, tensor<" + wScale + R"(xf32>
  %y = fp8.scaled_matmul (%xq, %xs by )" +
         xGran + "), (%wq, %ws by " + wGran + R"() : (tensor<256x512x)" +
         elt(xFormat) + ">, tensor<" + xScale + "xf32>), (tensor<384x512x" +
         elt(wFormat) + ">, tensor<" + wScale + R"(xf32>) -> tensor<256x384xf32>
  %xd = fp8.dequantize (%xq, %xs by )" +
         xGran + ") : (tensor<256x512x" + elt(xFormat) + ">, tensor<" + xScale +
         R"(xf32>) -> tensor<256x512xf32>
  return %y, %xd : tensor<256x384xf32>, tensor<256x512xf32>
}
)";
}

double sqnr(const std::vector<double> &exact,
            const std::vector<double> &approx) {
  double signal = 0.0, noise = 0.0;
  for (size_t i = 0; i < exact.size(); ++i) {
    signal += exact[i] * exact[i];
    noise += (exact[i] - approx[i]) * (exact[i] - approx[i]);
  }
  return 10.0 * std::log10(signal / noise);
}

struct Case {
  const char *name, *xFormat, *wFormat, *xGran, *wGran, *xScale, *wScale;
  double minRoundTrip, minGemm;
};

class FP8Sqnr : public ::testing::TestWithParam<Case> {};

TEST_P(FP8Sqnr, MeetsTheContract) {
  const Case &c = GetParam();
  DialectRegistry registry;
  infir2::registerAllDialects(registry);
  MLIRContext ctx(registry);
  std::string error;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    error = d.str();
    return success();
  });
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(
      gemmModule(c.xFormat, c.wFormat, c.xGran, c.wGran, c.xScale, c.wScale),
      &ctx);
  ASSERT_TRUE(module) << error;

  unsigned seed = std::random_device{}();
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  Tensor x(llvm::ArrayRef<int64_t>{256, 512}),
      w(llvm::ArrayRef<int64_t>{384, 512});
  for (double &v : x.data)
    v = static_cast<float>(normal(rng));
  for (double &v : w.data)
    v = static_cast<float>(normal(rng) * 0.02); // an initialised weight
  auto results =
      infir2::interp::run(module->lookupSymbol<func::FuncOp>("gemm"), {x, w});
  ASSERT_TRUE(succeeded(results)) << error << " (seed " << seed << ")";

  std::vector<double> exact(256 * 384, 0.0);
  for (int i = 0; i < 256; ++i)
    for (int j = 0; j < 384; ++j)
      for (int k = 0; k < 512; ++k)
        exact[i * 384 + j] += x.data[i * 512 + k] * w.data[j * 512 + k];
  double roundTrip = sqnr(x.data, (*results)[1].data);
  double gemm = sqnr(exact, (*results)[0].data);
  std::printf("%s (seed %u): round trip %.1f dB, GEMM %.1f dB\n", c.name, seed,
              roundTrip, gemm);
  EXPECT_GE(roundTrip, c.minRoundTrip) << "seed " << seed;
  EXPECT_GE(gemm, c.minGemm) << "seed " << seed;
}

INSTANTIATE_TEST_SUITE_P(
    Recipes, FP8Sqnr,
    ::testing::Values(Case{"blockwise_e4m3", "e4m3", "e4m3",
                           "#fp8.groups<128, dim = 1>", "#fp8.blocks<128, 128>",
                           "256x4", "3x4", 25.0, 18.0},
                      Case{"tensorwise_e4m3", "e4m3", "e4m3", "#fp8.tensorwise",
                           "#fp8.tensorwise", "1x1", "1x1", 25.0, 18.0},
                      // The hybrid format's gradient operand: E5M2 has one
                      // mantissa bit less, so only the GEMM bar applies to the
                      // pair; its round trip is still above 20 dB.
                      Case{"hybrid_e5m2_lhs", "e5m2", "e4m3",
                           "#fp8.groups<128, dim = 1>", "#fp8.blocks<128, 128>",
                           "256x4", "3x4", 20.0, 18.0}),
    [](const ::testing::TestParamInfo<Case> &info) {
      return std::string(info.param.name);
    });

} // namespace
