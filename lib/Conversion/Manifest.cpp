//===- Manifest.cpp - The manifest a compiled trainer embeds --------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "Manifest.h"

#include "infir2/Dialect/Infir2/IR/Infir2Attrs.h"
#include "infir2/Dialect/Runtime/IR/RuntimeDialect.h"

#include "llvm/Support/Format.h"

using namespace mlir;
using namespace infir2;

FailureOr<std::string>
infir2::buildManifest(ModuleOp module, rtir::PlanAttr plan,
                      ArrayRef<func::FuncOp> planned) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << "infir2-model 1\n";
  os << "state_bytes " << plan.getStateBytes() << "\n";
  os << "scratch_bytes " << plan.getScratchBytes() << "\n";
  os << "batch " << plan.getBatch() << "\nseq " << plan.getSeq() << "\nvocab "
     << plan.getVocab() << "\n";
  if (plan.getZero1WorldSize())
    os << "zero1 " << plan.getZero1WorldSize() << "\n";
  for (auto s : plan.getSlots().getAsRange<rtir::SlotAttr>()) {
    std::string init = "zeros";
    double std = 0;
    if (auto p = dyn_cast_or_null<ParamAttr>(s.getInit())) {
      init = stringifyInitKind(p.getInit()).str();
      std = p.getStd().convertToDouble();
    }
    os << "slot " << rtir::stringifySlotKind(s.getKind()) << " " << s.getName()
       << " " << s.getType().getElementType() << " " << s.getOffset() << " "
       << s.getType().getRank();
    for (int64_t d : s.getType().getShape())
      os << " " << d;
    os << " " << init << " " << llvm::format("%.17g", std) << "\n";
  }
  for (func::FuncOp fn : planned)
    os << "function "
       << fn->getAttrOfType<StringAttr>(
                rtir::RuntimeDialect::getSymbolAttrName())
              .getValue()
       << " "
       << fn->getAttrOfType<IntegerAttr>(
                rtir::RuntimeDialect::getScratchBytesAttrName())
              .getInt()
       << "\n";
  return out;
}
