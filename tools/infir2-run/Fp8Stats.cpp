//===- Fp8Stats.cpp - infir2-run's --fp8-stats ----------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "Fp8Stats.h"

#include "infir2/Dialect/FP8/IR/FP8Ops.h"

#include "mlir/IR/Location.h"
#include "llvm/Support/JSON.h"

#include <memory>

using namespace mlir;

infir2::interp::QuantizationObserver
infir2::run::fp8StatsWriter(llvm::raw_ostream &os, std::string function) {
  auto index = std::make_shared<int64_t>(0);
  return [&os, function, index](const infir2::interp::QuantizationRecord &r) {
    std::string where;
    llvm::raw_string_ostream w(where);
    w << r.op->getName() << " at ";
    if (auto file = dyn_cast<FileLineColLoc>(r.op->getLoc()))
      w << file.getFilename().getValue() << ":" << file.getLine() << ":"
        << file.getColumn();
    else
      r.op->getLoc().print(w);
    bool e5m2 = false;
    if (auto q = dyn_cast<fp8::QuantizeOp>(r.op))
      e5m2 = q.getFormat() == fp8::Format::e5m2;
    else if (auto d = dyn_cast<fp8::QuantizeDualOp>(r.op))
      e5m2 = d.getFormat() == fp8::Format::e5m2;
    llvm::json::Array shape;
    for (int64_t d : r.shape)
      shape.push_back(d);
    llvm::json::OStream j(os);
    j.object([&] {
      j.attribute("function", function);
      j.attribute("call", 0);
      j.attribute("index", (*index)++);
      j.attribute("where", where);
      j.attribute("layout", r.transposed ? "column-wise" : "row-wise");
      j.attribute("shape", std::move(shape));
      j.attribute("format", e5m2 ? "e5m2" : "e4m3");
      j.attribute("amax", r.amax);
      j.attribute("scale_min", r.scaleMin);
      j.attribute("scale_max", r.scaleMax);
      j.attribute("max_scaled", r.maxScaled);
      j.attribute("saturated",
                  r.numel ? double(r.saturated) / double(r.numel) : 0.0);
      j.attribute("flushed",
                  r.nonzero ? double(r.flushed) / double(r.nonzero) : 0.0);
      j.attributeObject("counts", [&] {
        j.attribute("values", r.numel);
        j.attribute("nonzero", r.nonzero);
        j.attribute("saturated", r.saturated);
        j.attribute("flushed", r.flushed);
      });
    });
    os << "\n";
  };
}
