//===- FP8Report.cpp - Report the precision decisions of every GEMM -------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "infir2/Transforms/Passes.h"

#include "RecipeUtils.h"

#include "infir2/Dialect/FP8/IR/FP8Attrs.h"
#include "infir2/Dialect/FP8/IR/FP8Dialect.h"
#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

namespace infir2 {
#define GEN_PASS_DEF_FP8REPORTPASS
#include "infir2/Transforms/Passes.h.inc"
} // namespace infir2

using namespace mlir;
using namespace infir2;

namespace {

/// "e4m3 1x128@2", "e4m3 128x128", "e5m2 tensor".
std::string describeOperand(fp8::GranularityAttrInterface g,
                            std::optional<fp8::Format> f) {
  std::string s = fp8::stringifyFormat(*f).str() + " ";
  if (auto groups = dyn_cast<fp8::GroupsAttr>(g))
    return s + "1x" + std::to_string(groups.getSize()) + "@" +
           std::to_string(groups.getDim());
  if (auto blocks = dyn_cast<fp8::BlocksAttr>(g))
    return s + std::to_string(blocks.getRows()) + "x" +
           std::to_string(blocks.getCols());
  if (auto mx = dyn_cast<fp8::MxAttr>(g))
    return s + "mx@" + std::to_string(mx.getDim());
  return s + "tensor";
}

/// The name a row goes by: the weight, else the op's location.
std::string nameOf(GemmOpInterface gemm) {
  Operation *op = gemm.getOperation();
  for (Value v : {gemm.getGemmRhs(), gemm.getGemmLhs()})
    if (auto arg = dyn_cast<BlockArgument>(v))
      if (auto fn =
              dyn_cast<FunctionOpInterface>(arg.getOwner()->getParentOp()))
        if (auto p = fn.getArgAttrOfType<ParamAttr>(
                arg.getArgNumber(), Infir2Dialect::getParamAttrName()))
          return p.getName().str();
  if (auto w =
          op->getAttrOfType<StringAttr>(Infir2Dialect::getGemmWeightAttrName()))
    return w.getValue().str();
  std::string loc;
  llvm::raw_string_ostream os(loc);
  op->getLoc().print(os);
  return loc;
}

struct Row {
  std::string name, role, shape, precision, lhs, rhs, reason;
  double flops;
};

struct FP8ReportPass : public infir2::impl::FP8ReportPassBase<FP8ReportPass> {
  using Base::Base;

  void runOnOperation() override {
    raw_ostream &os = toStdout ? llvm::outs() : llvm::errs();
    getOperation().walk([&](FunctionOpInterface fn) {
      SmallVector<Row> rows;
      fn.walk([&](GemmOpInterface gemm) {
        auto d = gemm->getAttrOfType<fp8::DecisionAttr>(
            fp8::FP8Dialect::getDecisionAttrName());
        Row r;
        r.name = nameOf(gemm);
        // Sizes are known only for the GEMM forms the recipe handles
        // (static tensors, not buffers).
        r.shape = "-";
        r.flops = 0.0;
        if (gemm.isSupportedGemm()) {
          GemmDims dims = getGemmDims(gemm);
          r.shape = std::to_string(dims.batch * dims.m) + "x" +
                    std::to_string(dims.n) + "x" + std::to_string(dims.k);
          r.flops = 2.0 * dims.batch * dims.m * dims.n * dims.k;
        }
        if (!d) {
          r.role = r.precision = "-";
          r.reason = "no decision (run --infir2-assign-precision)";
        } else {
          r.role = fp8::stringifyGemmRole(d.getRole()).str();
          r.precision = fp8::stringifyPrecision(d.getPrecision()).str();
          if (d.getPrecision() == fp8::Precision::fp8) {
            r.lhs = describeOperand(d.getLhs(), d.getLhsFormat());
            r.rhs = describeOperand(d.getRhs(), d.getRhsFormat());
          }
          r.reason = d.getReason().str();
          // The name already has its column.
          if (r.reason == "linear layer " + r.name)
            r.reason = "linear layer";
        }
        rows.push_back(std::move(r));
      });
      if (rows.empty())
        return;
      print(os, fn.getName(), rows);
    });
    markAllAnalysesPreserved();
  }

  void print(raw_ostream &os, StringRef fn, ArrayRef<Row> rows) {
    size_t w[4] = {4, 4, 5, 3};
    for (const Row &r : rows) {
      w[0] = std::max(w[0], r.name.size());
      w[1] = std::max(w[1], r.shape.size());
      w[2] = std::max(w[2], r.lhs.size());
      w[3] = std::max(w[3], r.rhs.size());
    }
    os << "@" << fn << ": " << rows.size() << " GEMMs\n";
    os << "  " << llvm::left_justify("gemm", w[0]) << "  role   "
       << llvm::left_justify("MxNxK", w[1]) << "  prec  "
       << llvm::left_justify("lhs", w[2]) << "  "
       << llvm::left_justify("rhs", w[3]) << "  reason\n";
    for (const Row &r : rows)
      os << "  " << llvm::left_justify(r.name, w[0]) << "  "
         << llvm::left_justify(r.role, 5) << "  "
         << llvm::left_justify(r.shape, w[1]) << "  "
         << llvm::left_justify(r.precision, 4) << "  "
         << llvm::left_justify(r.lhs, w[2]) << "  "
         << llvm::left_justify(r.rhs, w[3]) << "  " << r.reason << "\n";
    for (StringRef role : {"fprop", "dgrad", "wgrad"}) {
      unsigned n = 0, inFP8 = 0;
      double flops = 0, fp8Flops = 0;
      for (const Row &r : rows) {
        if (r.role != role)
          continue;
        ++n;
        flops += r.flops;
        if (r.precision == "fp8") {
          ++inFP8;
          fp8Flops += r.flops;
        }
      }
      if (n)
        os << "  " << role << ": " << inFP8 << " of " << n << " GEMMs in FP8, "
           << llvm::format("%.1f", flops > 0 ? 100.0 * fp8Flops / flops : 0.0)
           << "% of their flops\n";
    }
  }
};

} // namespace
