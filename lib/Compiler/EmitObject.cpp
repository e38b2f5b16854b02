//===- EmitObject.cpp - LLVM dialect to LLVM IR or an object file ---------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "infir2/Compiler/Compiler.h"

#include "llvm/Support/Error.h"

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

static llvm::Error emitFileError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Error infir2::emitLLVM(ModuleOp llvmModule, StringRef path,
                             bool emitObject) {
  MLIRContext *ctx = llvmModule.getContext();
  registerBuiltinDialectTranslation(*ctx);
  registerLLVMDialectTranslation(*ctx);
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> m =
      translateModuleToLLVMIR(llvmModule, llvmContext, "infir2_model");
  if (!m) // translateModuleToLLVMIR has emitted why on the op at fault
    return emitFileError("translation to LLVM IR failed");

  std::error_code ec;
  auto file =
      std::make_unique<llvm::ToolOutputFile>(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return emitFileError("cannot write '" + path + "': " + ec.message());
  if (!emitObject) {
    m->print(file->os(), nullptr);
    file->keep();
    return llvm::Error::success();
  }
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return emitFileError("no LLVM target for " + triple.str() + ": " + error);
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, "generic", "", options, llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Less));
  m->setTargetTriple(triple);
  m->setDataLayout(tm->createDataLayout());
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, file->os(), nullptr,
                              llvm::CodeGenFileType::ObjectFile))
    return emitFileError("the LLVM target for " + triple.str() +
                   " cannot emit object files");
  pm.run(*m);
  file->keep();
  return llvm::Error::success();
}
