//===- ParamSummary.cpp - Print a model's trainable parameters ------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "infir2/Transforms/Passes.h"

#include "infir2/Dialect/Infir2/IR/Infir2Attrs.h"
#include "infir2/Dialect/Infir2/IR/Infir2Dialect.h"
#include "infir2/Support/Format.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

namespace infir2 {
#define GEN_PASS_DEF_PARAMSUMMARYPASS
#include "infir2/Transforms/Passes.h.inc"
} // namespace infir2

using namespace mlir;

namespace {

struct Row {
  std::string name, shape, type, init;
};

struct ParamSummaryPass
    : public infir2::impl::ParamSummaryPassBase<ParamSummaryPass> {
  using Base::Base;

  void runOnOperation() override {
    raw_ostream &os = toStdout ? llvm::outs() : llvm::errs();
    getOperation()->walk([&](FunctionOpInterface fn) {
      SmallVector<Row> rows;
      uint64_t elements = 0;
      for (auto [i, param] : infir2::getParams(fn)) {
        // The dialect's argument verifier guarantees a static tensor.
        auto type = cast<RankedTensorType>(fn.getArgumentTypes()[i]);
        elements += type.getNumElements();
        Row row;
        row.name = param.getName().str();
        llvm::raw_string_ostream shape(row.shape), elt(row.type),
            init(row.init);
        llvm::interleave(type.getShape(), shape, "x");
        elt << type.getElementType();
        init << infir2::stringifyInitKind(param.getInit());
        if (param.getInit() == infir2::InitKind::normal)
          init << llvm::format("(std = %g)", param.getStd().convertToDouble());
        rows.push_back(std::move(row));
      }
      if (rows.empty())
        return;
      size_t nameW = 0, shapeW = 0, typeW = 0;
      for (const Row &r : rows) {
        nameW = std::max(nameW, r.name.size());
        shapeW = std::max(shapeW, r.shape.size());
        typeW = std::max(typeW, r.type.size());
      }
      os << "@" << fn.getName() << ": " << rows.size() << " parameter tensors, "
         << infir2::formatWithThousands(elements) << " parameters\n";
      for (const Row &r : rows)
        os << "  " << llvm::left_justify(r.name, nameW) << "  "
           << llvm::left_justify(r.shape, shapeW) << "  "
           << llvm::left_justify(r.type, typeW) << "  " << r.init << "\n";
    });
    markAllAnalysesPreserved();
  }
};

} // namespace
