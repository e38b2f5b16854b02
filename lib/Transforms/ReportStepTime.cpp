//===- ReportStepTime.cpp - The step's predicted time, printed ------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "infir2/Transforms/Passes.h"

#include "infir2/Transforms/StepTime.h"

namespace infir2 {
#define GEN_PASS_DEF_REPORTSTEPTIMEPASS
#include "infir2/Transforms/Passes.h.inc"
} // namespace infir2

using namespace mlir;
using namespace infir2;

namespace {

struct ReportStepTimePass
    : public infir2::impl::ReportStepTimePassBase<ReportStepTimePass> {
  using Base::Base;

  void runOnOperation() override {
    std::string error;
    FailureOr<StepTimeTarget> t =
        lookUpStepTimeTarget(target, calibration, error);
    if (failed(t)) {
      getOperation().emitError() << "--infir2-report-step-time: " << error;
      return signalPassFailure();
    }
    if (!getOperation().lookupSymbol("train_step")) {
      getOperation().emitError()
          << "--infir2-report-step-time: no @train_step (run a recipe first)";
      return signalPassFailure();
    }
    printStepTimeReport(getOperation(), *t,
                        toStdout ? llvm::outs() : llvm::errs());
    markAllAnalysesPreserved();
  }
};

} // namespace
