//===- Inputs.h - The inputs infir2-run gives a function ---------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// How infir2-run fills a function's arguments: drawn by their role (a
// parameter by its initialization rule, token ids below the vocabulary,
// positions, segments, optimizer state and scalars), and the FP8 weight
// cache computed from the parameters.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_TOOLS_INFIR2_RUN_INPUTS_H
#define INFIR2_TOOLS_INFIR2_RUN_INPUTS_H

#include "infir2/Dialect/Infir2/IR/Infir2Attrs.h"
#include "infir2/Interpreter/Interpreter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <random>
#include <string>
#include <utility>

namespace infir2::run {

/// The optimizer state or scalar role an argument carries, as
/// ("moment2", "<param>") or ("input", "learning_rate"); empty if none.
std::pair<std::string, std::string> roleOf(mlir::func::FuncOp fn,
                                           unsigned index);

/// A value for `arg` drawn from `rng` by its role: `param`'s rule (plus
/// normal noise of std `perturbInit`), `role`'s range, or the range its
/// uses imply for an integer input.
interp::Tensor drawInput(mlir::BlockArgument arg, mlir::RankedTensorType type,
                         ParamAttr param,
                         std::pair<std::string, std::string> role,
                         std::mt19937_64 &rng, double perturbInit);

/// The name argument `index` of `fn` goes by in a dump: its parameter's,
/// "fp8_cache.<name>" for the FP8 weight cache, "<role>.<name>" for the
/// optimizer state and step inputs, else "arg<index>".
std::string argumentName(mlir::func::FuncOp fn, unsigned index);

/// Fills `inputs` (named as argumentName says) from the safetensors file at
/// `path` (a trainer's --dump-step): parameters by name, batch inputs as
/// input.<role>; the FP8 weight cache is left to fillWeightCache. Fails
/// with `error` naming a missing or mis-shaped tensor.
mlir::LogicalResult
readStoredInputs(mlir::func::FuncOp fn, llvm::ArrayRef<std::string> names,
                 llvm::MutableArrayRef<interp::Tensor> inputs,
                 const std::string &path, std::string &error);

/// Fills `fn`'s FP8 weight cache arguments (infir2.fp8_cache) the way the
/// trainer does: by running @quantize_weights on the parameters among
/// `inputs` (found by `names`), here in the reference interpreter.
mlir::LogicalResult fillWeightCache(mlir::ModuleOp module,
                                    mlir::func::FuncOp fn,
                                    llvm::ArrayRef<std::string> names,
                                    llvm::MutableArrayRef<interp::Tensor> inputs);

} // namespace infir2::run

#endif // INFIR2_TOOLS_INFIR2_RUN_INPUTS_H
