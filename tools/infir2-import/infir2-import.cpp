//===- infir2-import.cpp - Import Hugging Face configs --------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
//   infir2-import --hf-config config.json [--seq-len N] [--micro-batch B]
//                 [--dtype bf16|f32] [--summary] [-o model.mlir]
//
// Writes the model's forward pass and loss in the infir2 dialect. The output
// file is written only when the import succeeded.
//
//===----------------------------------------------------------------------===//

#include "infir2/Dialect/Infir2/IR/Infir2Attrs.h"
#include "infir2/Dialect/Infir2/IR/Infir2Dialect.h"
#include "infir2/Import/HFConfig.h"
#include "infir2/InitAll.h"
#include "infir2/Support/EnumOption.h"
#include "infir2/Support/ToolOptions.h"
#include "infir2/Support/Format.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

#include <nlohmann/json.hpp>

using namespace mlir;
namespace cl = llvm::cl;

namespace {
/// The element type of a model's parameters and activations.
enum class DType { bf16, f16, f32 };
} // namespace

INFIR2_ENUM_OPTION_PARSER(DType);

static cl::OptionCategory category("infir2-import options");

static cl::opt<std::string> configPath("hf-config", cl::Required,
                                       cl::desc("Hugging Face config.json"),
                                       cl::value_desc("file"), cl::cat(category));
static cl::opt<std::string> outputPath("o", cl::desc("Output MLIR file"),
                                       cl::value_desc("file"), cl::init("-"), cl::cat(category));
static cl::opt<int64_t> seqLen("seq-len", cl::init(4096),
                               cl::desc("Tokens per sequence"), cl::cat(category));
static cl::opt<int64_t> microBatch("micro-batch", cl::init(1),
                                   cl::desc("Sequences per micro-batch"), cl::cat(category));
static cl::opt<DType>
    dtype("dtype", cl::init(DType::bf16),
          cl::desc("Element type of parameters and activations"),
          cl::values(clEnumValN(DType::bf16, "bf16", "BF16"),
                     clEnumValN(DType::f16, "f16", "IEEE half"),
                     clEnumValN(DType::f32, "f32", "FP32")),
          cl::cat(category));
static cl::opt<bool> summary(
    "summary",
    cl::desc("Print the architecture and parameter count; the IR is then "
             "written only with an explicit -o"),
    cl::cat(category));

static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "infir2-import") << message << "\n";
  return 1;
}

/// Prints the summary; false when the parameter count does not fit 64 bits.
static bool printSummary(const infir2::DecoderConfig &c, func::FuncOp forward) {
  // Each tensor has fewer than 2^62 elements (the importer's bounds); their
  // sum is checked, so that a huge config is an error, not a wrapped count.
  uint64_t elements = 0;
  auto params = infir2::getParams(forward);
  bool overflow = false;
  for (auto [index, param] : params)
    elements = llvm::SaturatingAdd(
        elements,
        uint64_t(cast<RankedTensorType>(forward.getArgumentTypes()[index])
                     .getNumElements()),
        &overflow);
  if (overflow)
    return false;
  llvm::outs() << "architecture  " << c.architecture << "\n"
               << "layers        " << c.numLayers << "\n"
               << "hidden        " << c.hiddenSize << " (" << c.numHeads
               << " heads x " << c.headDim << ", " << c.numKvHeads
               << " kv heads)\n"
               << "mlp           " << c.intermediateSize << "\n"
               << "vocab         " << c.vocabSize
               << (c.tieWordEmbeddings ? " (tied embeddings)" : "") << "\n"
               << "micro-batch   " << microBatch << " x " << seqLen
               << " tokens\n"
               << "parameters    " << infir2::formatWithThousands(elements)
               << " in " << params.size() << " tensors\n";
  return true;
}

int main(int argc, char **argv) {
  llvm::InitLLVM y(argc, argv);
  // --mlir-print-debuginfo shows the module path each op implements (under
  // --help-hidden, with the other generic options).
  registerAsmPrinterCLOptions();
  infir2::setUpToolOptions({&category});
  cl::ParseCommandLineOptions(
      argc, argv, "InfiR2 importer: Hugging Face config.json -> infir2 IR\n");

  auto buffer = llvm::MemoryBuffer::getFile(configPath);
  if (!buffer)
    return fail("cannot read '" + configPath +
                "': " + buffer.getError().message());
  llvm::Expected<infir2::DecoderConfig> config =
      infir2::parseHFConfig((*buffer)->getBuffer());
  if (!config)
    return fail(configPath + ": " + llvm::toString(config.takeError()));

  DialectRegistry registry;
  infir2::registerAllDialects(registry);
  MLIRContext ctx(registry);
  infir2::ImportOptions options;
  options.seqLen = seqLen;
  options.microBatch = microBatch;
  options.dtype = dtype == DType::bf16 ? "bf16"
                  : dtype == DType::f16  ? "f16"
                                         : "f32";
  OwningOpRef<ModuleOp> module =
      infir2::buildDecoderForward(&ctx, *config, options);
  if (!module)
    return 1; // The diagnostic has been printed.
  // The config itself goes into the module (compact, in its own key order),
  // and from there into the compiled trainer, whose saved folders need a
  // config.json. parseHFConfig has checked that it is a JSON object.
  auto json = nlohmann::ordered_json::parse((*buffer)->getBuffer(), nullptr,
                                            /*allow_exceptions=*/false);
  (*module)->setAttr(infir2::Infir2Dialect::getModelConfigAttrName(),
                     StringAttr::get(&ctx, json.dump()));
  if (failed(verify(*module)))
    return fail("the imported module does not verify (a bug in the importer)");

  if (summary)
    if (!printSummary(*config, module->lookupSymbol<func::FuncOp>("forward")))
      return fail(configPath + ": the model has more than 2^64 parameters");
  if (summary && outputPath.getNumOccurrences() == 0)
    return 0;

  std::string errorMessage;
  std::unique_ptr<llvm::ToolOutputFile> output =
      openOutputFile(outputPath, &errorMessage);
  if (!output)
    return fail(errorMessage);
  module->print(output->os(), OpPrintingFlags());
  output->os() << "\n";
  output->os().flush();
  if (output->os().has_error())
    return fail("cannot write '" + outputPath + "'");
  output->keep();
  return 0;
}
