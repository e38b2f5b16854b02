//===- TensorParallel.h - infir2-run over a tensor-parallel group -*- C++
//-*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// A module made by --infir2-tensor-parallel has one rank's shapes. infir2-run
// draws (or reads) the whole tensors, as for the unsharded module, gives each
// rank its slice, runs the ranks in step (interp::runRanks) and puts the
// results back together, so that its output compares with the unsharded
// run's directly.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_TOOLS_INFIR2_RUN_TENSORPARALLEL_H
#define INFIR2_TOOLS_INFIR2_RUN_TENSORPARALLEL_H

#include "infir2/Interpreter/Interpreter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <optional>

namespace infir2::run {

/// The module's tensor-parallel size (1 when it has none).
int64_t tensorParallelSize(mlir::ModuleOp module);

/// The dimension that argument (or result, `isResult`) `index` of `fn` is
/// split along, if it is a shard: a parameter's `infir2.tp_shard`, or that
/// of the parameter a state tensor (`infir2.grad_of`, ...) belongs to.
std::optional<int64_t> shardDimOf(mlir::func::FuncOp fn, unsigned index,
                                  bool isResult);

/// The whole tensor's type of argument `index` of a rank's `fn`.
mlir::RankedTensorType wholeArgType(mlir::func::FuncOp fn, unsigned index,
                                    int64_t size);

/// Each rank's inputs: its slice of each sharded argument, the others whole.
llvm::SmallVector<llvm::SmallVector<interp::Tensor>>
sliceForRanks(mlir::func::FuncOp fn, llvm::ArrayRef<interp::Tensor> whole,
              int64_t size);

/// The whole results from each rank's: sharded results put back together
/// in rank order; every other result must be the same on every rank (an
/// error otherwise).
mlir::FailureOr<llvm::SmallVector<interp::Tensor>>
gatherRanks(mlir::func::FuncOp fn,
            llvm::ArrayRef<llvm::SmallVector<interp::Tensor>> ranks);

} // namespace infir2::run

#endif // INFIR2_TOOLS_INFIR2_RUN_TENSORPARALLEL_H
