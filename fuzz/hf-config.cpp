//===- hf-config.cpp - Fuzzes the Hugging Face config.json importer -------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The input is a config.json as infir2-import reads it. A config the parser
// accepts is built into the forward module, which must then verify: the
// importer's contract is that what it accepts it can build.
//
//===----------------------------------------------------------------------===//

#include "infir2/Import/HFConfig.h"
#include "infir2/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

using namespace mlir;

/// Configs deeper than this are parsed but not built: the module grows with
/// the layers (shapes are attributes, so width costs nothing), and a
/// million-layer module tests the fuzzer's patience, not the importer.
static constexpr int64_t kMaxBuiltLayers = 4;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static DialectRegistry *registry = [] {
    auto *r = new DialectRegistry();
    infir2::registerAllDialects(*r);
    return r;
  }();
  llvm::StringRef json(reinterpret_cast<const char *>(data), size);
  llvm::Expected<infir2::DecoderConfig> config = infir2::parseHFConfig(json);
  if (!config) {
    llvm::consumeError(config.takeError());
    return 0;
  }
  if (config->numLayers > kMaxBuiltLayers)
    return 0;
  MLIRContext ctx(*registry, MLIRContext::Threading::DISABLED);
  infir2::ImportOptions options;
  options.seqLen = 8;
  OwningOpRef<ModuleOp> module =
      infir2::buildDecoderForward(&ctx, *config, options);
  if (module && failed(verify(*module))) {
    llvm::errs() << "hf-config: an accepted config built an invalid module\n";
    std::abort();
  }
  return 0;
}
