//===- infir2-compile.cpp - Model IR to a trainer executable --------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
//   infir2-compile model.mlir --recipe=fp8|bf16 [--recipe-options="..."]
//                  [--optimizer-options="..."] [--report-memory[=html]]
//                  [--report-step-time=h100|h200|cpu [--calibration=FILE]]
//                  [--memory-budget=SIZE]
//                  [--emit=recipe|plan|runtime|llvm|llvm-ir|obj|exe]
//                  -o trainer
//
// A thin tool over the trainer pipeline (buildTrainerPipeline, the same
// builder as infir2-opt --infir2-trainer): it parses the model, runs the
// pipeline up to the stage --emit asks for, and either prints that stage's
// module or leaves MLIR: LLVM IR, an object file, or the object linked with
// the runtime and the trainer driver. Outputs appear only when complete: the
// executable is linked to a temporary name, then renamed.
//
//===----------------------------------------------------------------------===//

#include "infir2/Compiler/Compiler.h"
#include "infir2/InitAll.h"
#include "infir2/Pipelines/Pipelines.h"
#include "infir2/Support/ToolOptions.h"
#include "infir2/Transforms/MemoryPlan.h"
#include "infir2/Transforms/StepTime.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

using namespace mlir;
using namespace llvm;

namespace {

/// What infir2-compile writes.
enum class Emit { recipe, plan, runtime, llvm, llvmIR, obj, exe };
enum class MemoryReport { none, text, html };

} // namespace

INFIR2_ENUM_OPTION_PARSER(Emit);

static cl::OptionCategory category("infir2-compile options");

static cl::opt<std::string> inputPath(cl::Positional, cl::desc("<model.mlir>"),
                                      cl::init("-"), cl::cat(category));
static cl::opt<std::string>
    outputPath("o",
               cl::desc("Output file (default: 'trainer' for an executable, "
                        "'model.o' for an object, else standard output)"),
               cl::value_desc("path"), cl::cat(category));
static cl::opt<infir2::Recipe> recipe("recipe",
                                      cl::desc("The training recipe"),
                                      cl::init(infir2::Recipe::fp8),
                                      infir2::recipeValues(), cl::cat(category));
static cl::opt<std::string> recipeOptions(
    "recipe-options",
    cl::desc("Options of the --infir2-trainer pipeline, as infir2-opt takes "
             "them, e.g. \"granularity=tensorwise format=hybrid "
             "keep-first-last=1 zero1=true world-size=8\""),
    cl::init(""), cl::cat(category));
static cl::opt<std::string> optimizerOptions(
    "optimizer-options",
    cl::desc("The optimizer's settings, e.g. \"beta1=0.9 beta2=0.95 eps=1e-8 "
             "weight-decay=0.1 grad-clip=1.0\" (the defaults, the InfiR2 "
             "paper's); also optimizer=adamw|sgd, decay-1d and "
             "optimizer-state=fp32|bf16 (AdamW's moments)"),
    cl::init(""), cl::cat(category));
static cl::opt<Emit> emit(
    "emit", cl::desc("What to write (default: a trainer executable)"),
    cl::init(Emit::exe),
    cl::values(
        clEnumValN(Emit::recipe, "recipe",
                   "the training step with its precision decisions"),
        clEnumValN(Emit::plan, "plan", "the step with its memory plan"),
        clEnumValN(Emit::runtime, "runtime",
                   "the planned steps as infir2rt calls"),
        clEnumValN(Emit::llvm, "llvm", "the LLVM dialect"),
        clEnumValN(Emit::llvmIR, "llvm-ir", "LLVM IR"),
        clEnumValN(Emit::obj, "obj", "an object file"),
        clEnumValN(Emit::exe, "exe", "a trainer executable")),
    cl::cat(category));
static cl::opt<MemoryReport> reportMemory(
    "report-memory",
    cl::desc("Report the planned memory and stop: by category on standard "
             "output, or (=html) as one self-contained page written to -o"),
    cl::ValueOptional, cl::init(MemoryReport::none),
    cl::values(clEnumValN(MemoryReport::text, "", "by category (the default)"),
               clEnumValN(MemoryReport::text, "text", "by category"),
               clEnumValN(MemoryReport::html, "html",
                          "the memory over the step's ops, the peak and "
                          "what is live at it, the GEMMs' precision and "
                          "the predicted step time, as an HTML page")),
    cl::cat(category));

static cl::opt<std::string> memoryBudget(
    "memory-budget",
    cl::desc("Recompute activations in the backward pass until the planned "
             "step (state + arena) fits this size, e.g. 80GiB (the recipe "
             "option memory-budget)"),
    cl::value_desc("size"), cl::cat(category));

static cl::opt<std::string> reportStepTime(
    "report-step-time",
    cl::desc("Print the step's predicted time on a target (h100, h200, "
             "cpu) by kind of op, and stop"),
    cl::value_desc("target"), cl::cat(category));
static cl::opt<std::string> calibration(
    "calibration",
    cl::desc("For --report-step-time=cpu: this machine's rates, the JSON "
             "file `infir2-gemm-peak --json` writes"),
    cl::value_desc("file"), cl::cat(category));

static int fail(const Twine &message) {
  WithColor::error(errs(), "infir2-compile") << message << "\n";
  return 1;
}

/// The link of a trainer: the runtime's archives and the system libraries,
/// from <bindir>/../lib/infir2/trainer-link.txt beside this executable (so
/// an installed prefix can move). A line that is not a flag or an absolute
/// path is relative to that file's directory.
static FailureOr<SmallVector<std::string>> trainerLink(const char *argv0) {
  std::string exe =
      sys::fs::getMainExecutable(argv0, reinterpret_cast<void *>(&fail));
  SmallString<256> file(sys::path::parent_path(exe));
  sys::path::append(file, "..", "lib", "infir2", "trainer-link.txt");
  sys::path::remove_dots(file, /*remove_dot_dot=*/true);
  auto buffer = MemoryBuffer::getFile(file);
  if (!buffer)
    return fail("cannot read the trainer runtime's link '" + file +
                "' (infir2-compile looks for it in ../lib/infir2 beside "
                "itself): " +
                buffer.getError().message()),
           failure();
  SmallVector<std::string> args;
  SmallVector<StringRef> lines;
  (*buffer)->getBuffer().split(lines, '\n', -1, false);
  for (StringRef line : lines) {
    line = line.trim();
    if (line.empty())
      continue;
    if (line.starts_with("-") || sys::path::is_absolute(line)) {
      args.push_back(line.str());
      continue;
    }
    SmallString<256> path(sys::path::parent_path(file));
    sys::path::append(path, line);
    sys::path::remove_dots(path, /*remove_dot_dot=*/true);
    if (!sys::fs::exists(path))
      return fail("the trainer runtime is incomplete: '" + path +
                  "' (listed in '" + file + "') is missing"),
             failure();
    args.push_back(std::string(path));
  }
  return args;
}

/// Links `object` with the runtime and the driver into `output`.
static int link(StringRef object, StringRef output,
                ArrayRef<std::string> libs) {
  std::string tmp = (output + ".tmp").str();
  SmallVector<std::string> args = {INFIR2_LINKER, object.str()};
  args.append(libs.begin(), libs.end());
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

/// A bad option string: llvm::cl has printed what is wrong with a value;
/// MLIR's parser returns what is wrong with the string itself.
static LogicalResult badOptions(StringRef flag, StringRef error) {
  if (!error.trim().empty())
    fail("bad " + flag + ": " + error.trim());
  return failure();
}

/// The pipeline's options: --recipe, then --recipe-options, then
/// --optimizer-options (which may set nothing but the optimizer).
static LogicalResult configure(infir2::TrainerPipelineOptions &options) {
  std::string error;
  raw_string_ostream os(error);
  if (failed(options.parseFromString(recipeOptions, os)))
    return badOptions("--recipe-options", error);
  // What the tool's own flags decide.
  for (auto [set, flag] :
       {std::pair<bool, StringRef>{options.recipe.getNumOccurrences() > 0,
                                   "recipe (use --recipe)"},
        {options.stopAfter.getNumOccurrences() > 0, "stop-after (use --emit)"},
        {options.reportMemory.getNumOccurrences() > 0,
         "report-memory (use --report-memory)"}})
    if (set)
      return fail("bad --recipe-options: " + flag + " is not set here"),
             failure();
  if (memoryBudget.getNumOccurrences()) {
    if (options.memoryBudget.getNumOccurrences())
      return fail("give the budget once: --memory-budget or the recipe "
                  "option memory-budget"),
             failure();
    options.memoryBudget = memoryBudget;
  }
  if (!optimizerOptions.empty()) {
    infir2::OptimizerOptions optimizer;
    if (failed(optimizer.parseFromString(optimizerOptions, os)) ||
        failed(options.parseFromString(optimizerOptions, os)))
      return badOptions("--optimizer-options", error);
  }
  if (!options.zero1 && options.worldSize != 0)
    return fail("bad --recipe-options: world-size=" +
                Twine(int64_t(options.worldSize)) +
                " is for zero1=true only: the gradient all-reduce runs at "
                "any world size"),
           failure();
  if (std::optional<std::string> bad =
          infir2::checkDecodeLength(options.decodeLength))
    return fail("bad --recipe-options: " + *bad), failure();
  if (std::optional<std::string> bad = infir2::checkOptimizerSettings(
          options.beta1, options.beta2, options.eps, options.weightDecay,
          options.gradClip))
    return fail(*bad), failure();
  options.recipe = recipe;
  options.reportMemory = reportMemory == MemoryReport::text;
  bool report = reportStepTime.getNumOccurrences() > 0;
  options.stopAfter =
      reportMemory != MemoryReport::none ? infir2::TrainerStage::plan
      : report || emit == Emit::recipe   ? infir2::TrainerStage::recipe
      : emit == Emit::plan               ? infir2::TrainerStage::plan
      : emit == Emit::runtime            ? infir2::TrainerStage::runtime
                                         : infir2::TrainerStage::llvm;
  return success();
}

/// --report-memory=html: the plan of the planned `module` as a page at -o,
/// its step time predicted on an H100.
static int writeHtmlReport(ModuleOp module) {
  FailureOr<infir2::ModelPlan> plan = infir2::planModel(module);
  std::string why;
  FailureOr<infir2::StepTimeTarget> h100 =
      infir2::lookUpStepTimeTarget("h100", "", why);
  if (failed(plan)) // planModel has said why
    return 1;
  if (failed(h100))
    return fail("cannot report the plan: " + why);
  std::error_code ec;
  ToolOutputFile out(outputPath, ec, sys::fs::OF_None);
  if (ec)
    return fail("cannot write '" + outputPath + "': " + ec.message());
  infir2::printMemoryReportHtml(*plan, module, *h100, out.os());
  out.keep();
  return 0;
}

int main(int argc, char **argv) {
  InitLLVM y(argc, argv);
  infir2::setUpToolOptions({&category});
  cl::ParseCommandLineOptions(argc, argv,
                              "InfiR2: compiles a model to a trainer\n");
  infir2::TrainerPipelineOptions options;
  if (failed(configure(options)))
    return 1;
  if (reportMemory == MemoryReport::html &&
      (outputPath.getNumOccurrences() == 0 || emit.getNumOccurrences() ||
       reportStepTime.getNumOccurrences()))
    return fail("--report-memory=html writes one page to -o FILE: give -o, "
                "and no --emit or --report-step-time");
  if (outputPath.getNumOccurrences() == 0)
    outputPath = emit == Emit::exe   ? "trainer"
                 : emit == Emit::obj ? "model.o"
                                     : "-";
  if (outputPath == "-" && reportMemory == MemoryReport::none &&
      (emit == Emit::exe || emit == Emit::obj))
    return fail("an executable or object file cannot go to standard output: "
                "give -o a path");
  // An output that cannot be written is an error before any work.
  StringRef dir = sys::path::parent_path(outputPath);
  if ((reportMemory != MemoryReport::text) &&
      !reportStepTime.getNumOccurrences() && outputPath != "-" &&
      !dir.empty() && !sys::fs::is_directory(dir))
    return fail("cannot write '" + outputPath + "': no directory '" + dir +
                "'");

  DialectRegistry registry;
  infir2::registerAllDialects(registry);
  MLIRContext ctx(registry);
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

  // The target first: a bad one fails before any work.
  std::optional<infir2::StepTimeTarget> target;
  if (calibration.getNumOccurrences() && reportStepTime != "cpu")
    return fail("--calibration is for --report-step-time=cpu");
  if (reportStepTime.getNumOccurrences() &&
      (emit.getNumOccurrences() || outputPath.getNumOccurrences()))
    return fail("--report-step-time prints a report and compiles nothing: "
                "drop --emit and -o");
  if (reportStepTime.getNumOccurrences()) {
    std::string why;
    FailureOr<infir2::StepTimeTarget> t =
        infir2::lookUpStepTimeTarget(reportStepTime, calibration, why);
    if (failed(t))
      return fail("--report-step-time: " + why);
    target = *t;
  }
  PassManager pm(&ctx);
  infir2::buildTrainerPipeline(pm, options);
  if (failed(pm.run(*module)))
    return 1;
  if (target)
    infir2::printStepTimeReport(*module, *target, llvm::outs());
  if (reportMemory == MemoryReport::html)
    return writeHtmlReport(*module);
  if (reportMemory != MemoryReport::none || target)
    return 0;

  if (emit != Emit::obj && emit != Emit::exe && emit != Emit::llvmIR) {
    std::error_code ec;
    ToolOutputFile out(outputPath, ec, sys::fs::OF_None);
    if (ec)
      return fail("cannot write '" + outputPath + "': " + ec.message());
    module->print(out.os());
    out.os() << "\n";
    out.keep();
    return 0;
  }
  if (emit != Emit::exe) {
    if (Error e = infir2::emitLLVM(*module, outputPath, emit == Emit::obj))
      return fail(toString(std::move(e)));
    return 0;
  }
  FailureOr<SmallVector<std::string>> libs = trainerLink(argv[0]);
  if (failed(libs))
    return 1;
  SmallString<128> object;
  if (std::error_code ec =
          sys::fs::createTemporaryFile("infir2-model", "o", object))
    return fail("cannot create a temporary object file: " + ec.message());
  int rc = 0;
  if (Error e = infir2::emitLLVM(*module, object, true))
    rc = fail(toString(std::move(e)));
  else
    rc = link(object, outputPath, *libs);
  sys::fs::remove(object);
  return rc;
}
