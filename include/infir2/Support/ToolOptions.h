//===- ToolOptions.h - What a tool's --help shows ----------------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// LLVM's static libraries register hundreds of command-line options (every
// code generator's), which would bury a tool's own under --help. InfiR2's
// tools call hideLLVMOptions() first thing in main(): the options registered
// so far, except the tool's own categories and --help/--version, move to
// --help-hidden. Options registered later (MLIR's, infir2-opt's passes and
// pipelines) stay visible.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_SUPPORT_TOOLOPTIONS_H
#define INFIR2_SUPPORT_TOOLOPTIONS_H

#include "infir2/Config.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

namespace infir2 {

inline void
hideLLVMOptions(llvm::ArrayRef<const llvm::cl::OptionCategory *> keep = {}) {
  for (auto &entry : llvm::cl::getRegisteredOptions()) {
    llvm::StringRef name = entry.first;
    llvm::cl::Option *option = entry.second;
    if (name.starts_with("help") || name == "version" ||
        llvm::any_of(option->Categories, [&](llvm::cl::OptionCategory *c) {
          return llvm::is_contained(keep, c);
        }))
      continue;
    if (option->getOptionHiddenFlag() == llvm::cl::NotHidden)
      option->setHiddenFlag(llvm::cl::Hidden);
  }
}

/// --version of every InfiR2 tool: InfiR2's version and the MLIR/LLVM it is
/// built with.
inline void printVersion(llvm::raw_ostream &os) {
  os << "InfiR2 " << INFIR2_VERSION_STRING << "\n  built with MLIR and LLVM "
     << LLVM_VERSION_STRING << "\n";
}

/// What every tool's main() does first: hide LLVM's options (above) and
/// answer --version with printVersion.
inline void
setUpToolOptions(llvm::ArrayRef<const llvm::cl::OptionCategory *> keep = {}) {
  hideLLVMOptions(keep);
  llvm::cl::SetVersionPrinter(printVersion);
}

} // namespace infir2

#endif // INFIR2_SUPPORT_TOOLOPTIONS_H
