//===- EmitObject.cpp - LLVM dialect to LLVM IR or an object file ---------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "infir2/Compiler/Compiler.h"

#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"

using namespace mlir;

LogicalResult infir2::emitLLVM(ModuleOp llvmModule, StringRef path,
                                 bool emitObject) {
  MLIRContext *ctx = llvmModule.getContext();
  registerBuiltinDialectTranslation(*ctx);
  registerLLVMDialectTranslation(*ctx);
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> m =
      translateModuleToLLVMIR(llvmModule, llvmContext, "infir2_model");
  if (!m)
    return llvmModule.emitError() << "translation to LLVM IR failed";

  std::error_code ec;
  auto file =
      std::make_unique<llvm::ToolOutputFile>(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return llvmModule.emitError()
           << "cannot write '" << path << "': " << ec.message();
  if (!emitObject) {
    m->print(file->os(), nullptr);
    file->keep();
    return success();
  }
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return llvmModule.emitError()
           << "no LLVM target for " << triple.str() << ": " << error;
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, "generic", "", options, llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Less));
  m->setTargetTriple(triple);
  m->setDataLayout(tm->createDataLayout());
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, file->os(), nullptr,
                              llvm::CodeGenFileType::ObjectFile))
    return llvmModule.emitError() << "the LLVM target cannot emit objects";
  pm.run(*m);
  file->keep();
  return success();
}
