//===- infir2-compile.cpp - Model IR to a trainer executable --------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
//   infir2-compile model.mlir --recipe=fp8|bf16 [--recipe-options="..."]
//                  [--emit=plan|mlir|llvm|obj|exe] [--report-memory] -o trainer
//
// Runs the recipe pipeline (the same builder as infir2-opt --fp8-recipe /
// --bf16-recipe: autodiff and the optimizer if the model is forward-only),
// plans the state and the scratch arena, writes the steps as infir2rt calls
// on the planned buffers, lowers those to the LLVM dialect, emits an object
// file and links it with the
// runtime and the trainer driver. --emit stops early; --report-memory prints
// the planned memory by category and stops. Outputs appear only when
// complete: the executable is linked to a temporary name, then renamed.
//
//===----------------------------------------------------------------------===//

#include "infir2/InitAll.h"
#include "infir2/Lowering/Lowering.h"
#include "infir2/Pipelines/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

using namespace mlir;
using namespace llvm;

static cl::opt<std::string> inputPath(cl::Positional, cl::desc("<model.mlir>"),
                                      cl::init("-"));
static cl::opt<std::string> outputPath("o", cl::desc("Output file"),
                                       cl::value_desc("path"),
                                       cl::init("trainer"));
static cl::opt<std::string>
    recipe("recipe", cl::desc("fp8 (the InfiR2 recipe) or bf16 (the baseline)"),
           cl::init("fp8"));
static cl::opt<std::string> recipeOptions(
    "recipe-options",
    cl::desc("Options of the recipe pipeline, as infir2-opt takes them, e.g. "
             "\"recipe=tensorwise format=hybrid keep-first-last=1\""),
    cl::init(""));
static cl::opt<std::string>
    emit("emit",
         cl::desc("plan (the planned steps as infir2rt calls), mlir (the "
                  "LLVM dialect), llvm (LLVM IR), obj, or exe (default: a "
                  "trainer executable)"),
         cl::init("exe"));
static cl::opt<bool>
    reportMemory("report-memory",
                 cl::desc("Print the planned memory by category and stop"));

static int fail(const Twine &message) {
  WithColor::error(errs(), "infir2-compile") << message << "\n";
  return 1;
}

/// Links `object` with the runtime and the driver into `output`.
static int link(StringRef object, StringRef output) {
  std::string tmp = (output + ".tmp").str();
  SmallVector<std::string> args = {INFIR2_LINKER, object.str()};
  SmallVector<StringRef> libs;
  StringRef(INFIR2_TRAINER_LINK).split(libs, '|', -1, false);
  for (StringRef l : libs)
    args.push_back(l.str());
  args.push_back("-o");
  args.push_back(tmp);
  SmallVector<StringRef> argv(args.begin(), args.end());
  std::string error;
  int rc =
      sys::ExecuteAndWait(INFIR2_LINKER, argv, std::nullopt, {}, 0, 0, &error);
  if (rc != 0) {
    sys::fs::remove(tmp);
    return fail("linking the trainer failed" +
                (error.empty() ? "" : ": " + error));
  }
  if (std::error_code ec = sys::fs::rename(tmp, output))
    return fail("cannot write '" + output + "': " + ec.message());
  return 0;
}

int main(int argc, char **argv) {
  InitLLVM y(argc, argv);
  cl::ParseCommandLineOptions(argc, argv,
                              "InfiR2: compiles a model to a trainer\n");
  if (recipe != "fp8" && recipe != "bf16")
    return fail("--recipe must be fp8 or bf16, got '" + recipe + "'");
  if (emit != "plan" && emit != "mlir" && emit != "llvm" && emit != "obj" &&
      emit != "exe")
    return fail("--emit must be plan, mlir, llvm, obj or exe, got '" + emit +
                "'");

  DialectRegistry registry;
  infir2::registerAllDialects(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  ctx.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, &ctx);
  std::string error;
  auto file = openInputFile(inputPath, &error);
  if (!file)
    return fail(error);
  sourceMgr.AddNewSourceBuffer(std::move(file), SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &ctx);
  if (!module)
    return 1; // The parser or verifier has printed the diagnostic.

  // A trainer is data-parallel unless told otherwise: alone, its all-reduce
  // is a copy; under mpirun it sums the gradients of all ranks.
  std::string pipelineOptions = recipeOptions;
  if (!StringRef(pipelineOptions).contains("data-parallel"))
    pipelineOptions = "data-parallel=true " + pipelineOptions;
  PassManager pm(&ctx);
  if (recipe == "fp8") {
    auto options = infir2::FP8RecipeOptions::createFromString(pipelineOptions);
    if (!options)
      return fail("bad --recipe-options for the fp8 recipe: '" + recipeOptions +
                  "'");
    infir2::buildFP8RecipePipeline(pm, *options);
  } else {
    auto options = infir2::BF16RecipeOptions::createFromString(pipelineOptions);
    if (!options)
      return fail("bad --recipe-options for the bf16 recipe: '" +
                  recipeOptions + "'");
    infir2::buildBF16RecipePipeline(pm, *options);
  }
  if (failed(pm.run(*module)))
    return 1;

  FailureOr<infir2::lowering::ModelPlan> plan =
      infir2::lowering::planModel(*module);
  if (failed(plan))
    return 1;
  if (reportMemory) {
    infir2::lowering::printMemoryReport(*plan, outs());
    return 0;
  }
  auto runtime = infir2::lowering::buildRuntimeModule(*module, *plan);
  if (failed(runtime))
    return 1;
  if (emit == "plan") {
    std::error_code ec;
    ToolOutputFile out(outputPath, ec, sys::fs::OF_None);
    if (ec)
      return fail("cannot write '" + outputPath + "': " + ec.message());
    (*runtime)->print(out.os());
    out.keep();
    return 0;
  }
  auto lowered = infir2::lowering::lowerToLLVM(**runtime);
  if (failed(lowered))
    return 1;
  if (emit == "mlir") {
    std::error_code ec;
    ToolOutputFile out(outputPath, ec, sys::fs::OF_None);
    if (ec)
      return fail("cannot write '" + outputPath + "': " + ec.message());
    (*lowered)->print(out.os());
    out.keep();
    return 0;
  }
  if (emit == "llvm" || emit == "obj")
    return failed(
               infir2::lowering::emitLLVM(**lowered, outputPath, emit == "obj"))
               ? 1
               : 0;
  SmallString<128> object;
  if (std::error_code ec =
          sys::fs::createTemporaryFile("infir2-model", "o", object))
    return fail("cannot create a temporary object file: " + ec.message());
  int rc = failed(infir2::lowering::emitLLVM(**lowered, object, true))
               ? 1
               : link(object, outputPath);
  sys::fs::remove(object);
  return rc;
}
