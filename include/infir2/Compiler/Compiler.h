//===- Compiler.h - What infir2-compile adds to the pipeline ----*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// infir2-compile runs the trainer pipeline (Pipelines.h) and then leaves
// MLIR: the LLVM dialect module becomes LLVM IR or an object file, which the
// tool links with the runtime into a trainer.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_COMPILER_COMPILER_H
#define INFIR2_COMPILER_COMPILER_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace infir2 {

/// Translates an LLVM dialect module to LLVM IR and writes it as an object
/// file for the host (emitObject) or as textual LLVM IR (otherwise) to
/// `path`, which appears only when complete. The error says what failed
/// and names the file.
llvm::Error emitLLVM(mlir::ModuleOp llvmModule, llvm::StringRef path,
                     bool emitObject);

} // namespace infir2

#endif // INFIR2_COMPILER_COMPILER_H
