//===- infir2-run.cpp - Run IR through the reference interpreter ----------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
//   infir2-run model.mlir [--entry forward] [--seed N] [--dump out.safetensors]
//
// Draws the function's inputs from a seeded generator, runs the FP64 reference
// interpreter and prints the results. Parameters follow their initialization
// rule; token ids are drawn below the vocabulary they index; positions count
// 0..S-1; segment ids mark runs of 1..S/2 tokens; a float loss mask keeps each token with probability 3/4;
// --perturb-init adds noise to every parameter; optimizer inputs get values
// of their role (learning rate 1e-4..1e-2, step 1..100, grad_scale 1/K,
// non-negative second moments). With --dump, inputs (under their parameter
// names, ROLE.PARAM for optimizer state, or argN) and results (resultN)
// are written as FP64 tensors to a safetensors file for outside checks.
//
//===----------------------------------------------------------------------===//

#include "infir2/Dialect/Infir2/IR/Infir2Attrs.h"
#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"
#include "infir2/InitAll.h"
#include "infir2/Support/ToolOptions.h"
#include "infir2/Interpreter/Interpreter.h"
#include "infir2/runtime/Checkpoint.h"

#include "Fp8Stats.h"
#include "Inputs.h"
#include "TensorParallel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

#include <map>
#include <random>

using namespace mlir;
using infir2::interp::Tensor;
using infir2::run::drawInput;
using infir2::run::fillWeightCache;
using infir2::run::roleOf;
using infir2::run::wholeArgType;
namespace cl = llvm::cl;

static cl::OptionCategory category("infir2-run options");

static cl::opt<std::string> inputPath(cl::Positional, cl::desc("<input.mlir>"),
                                      cl::init("-"), cl::cat(category));
static cl::opt<std::string> entry("entry", cl::init("forward"),
                                  cl::desc("Function to run"), cl::cat(category));
static cl::opt<uint64_t> seed("seed", cl::init(0),
                              cl::desc("Seed of the input generator"), cl::cat(category));
static cl::opt<bool> freshSeed(
    "fresh-seed",
    cl::desc("Draw a new seed from std::random_device (printed, so a failure "
             "can be replayed with --seed)"), cl::cat(category));
static cl::opt<double> perturbInit(
    "perturb-init", cl::init(0.0),
    cl::desc("Add N(0, sigma^2) noise to every parameter after its "
             "initialization rule, so that zero biases and unit norms are "
             "exercised too"),
    cl::value_desc("sigma"), cl::cat(category));
static cl::opt<bool> gradcheck(
    "gradcheck",
    cl::desc("Check the gradients of --train-step against central finite "
             "differences of --entry (the forward function)"), cl::cat(category));
static cl::opt<std::string> trainStepName(
    "train-step", cl::init("train_step"),
    cl::desc("With --gradcheck: the function made by --infir2-autodiff"), cl::cat(category));
static cl::opt<unsigned> gradcheckSamples(
    "gradcheck-samples", cl::init(6),
    cl::desc("With --gradcheck: coordinates checked per parameter (the "
             "largest gradient plus random ones)"), cl::cat(category));
static cl::opt<double> gradcheckRtol("gradcheck-rtol", cl::init(1e-5),
                                     cl::desc("Relative tolerance"), cl::cat(category));
static cl::opt<double> gradcheckAtol("gradcheck-atol", cl::init(1e-8),
                                     cl::desc("Absolute tolerance"), cl::cat(category));
static cl::opt<uint64_t> maxElements(
    "max-elements", cl::init(uint64_t(1) << 28),
    cl::desc("Refuse functions whose inputs hold more elements than this "
             "(the FP64 interpreter is for small models; 2^28 elements are "
             "2 GiB)"));
static cl::opt<std::string> inputsPath(
    "inputs",
    cl::desc("Take inputs from this safetensors file (F32 or F64) instead of "
             "drawing them: parameters by name, optimizer state as "
             "grad.<name> etc., batch inputs as input.input_ids, "
             "input.targets, input.loss_mask, input.positions (what a "
             "compiled trainer's --dump-step writes), others as arg<N>"),
    cl::value_desc("file"), cl::init(""), cl::cat(category));
static cl::opt<std::string>
    dumpPath("dump",
             cl::desc("Write inputs and results to this safetensors file"),
             cl::value_desc("file"), cl::cat(category));

static cl::opt<std::string> fp8StatsPath(
    "fp8-stats",
    cl::desc("Write each FP8 quantization the entry function runs (its "
             "amax, scales, saturated and flushed fractions) to this file as "
             "JSON lines, as a trainer's --fp8-stats-every does"),
    cl::value_desc("file"), cl::init(""), cl::cat(category));

static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "infir2-run") << message << "\n";
  return 1;
}

/// Writes FP64 tensors as a safetensors file: an 8-byte little-endian header
/// length, a JSON header padded to 8 bytes, then the raw data.
static LogicalResult
writeSafetensors(StringRef path,
                 ArrayRef<std::pair<std::string, const Tensor *>> tensors,
                 std::string &error) {
  llvm::json::Object header;
  uint64_t offset = 0;
  for (auto &[name, t] : tensors) {
    uint64_t bytes = t->data.size() * sizeof(double);
    header[name] = llvm::json::Object{
        {"dtype", "F64"},
        {"shape", llvm::json::Array(t->shape)},
        {"data_offsets", llvm::json::Array{offset, offset + bytes}}};
    offset += bytes;
  }
  header["__metadata__"] =
      llvm::json::Object{{"seed", std::to_string(seed.getValue())}};
  std::string text = llvm::formatv("{0}", llvm::json::Value(std::move(header)));
  text.append((8 - text.size() % 8) % 8, ' ');
  std::unique_ptr<llvm::ToolOutputFile> out = openOutputFile(path, &error);
  if (!out)
    return failure();
  uint64_t len = text.size();
  for (int i = 0; i < 8; ++i)
    out->os() << static_cast<char>((len >> (8 * i)) & 0xff);
  out->os() << text;
  for (auto &[name, t] : tensors)
    out->os().write(reinterpret_cast<const char *>(t->data.data()),
                    t->data.size() * sizeof(double));
  out->os().flush();
  if (out->os().has_error()) {
    error = "cannot write '" + path.str() + "'";
    return failure();
  }
  out->keep();
  return success();
}

static void printTensor(llvm::raw_ostream &os, const Tensor &t) {
  if (t.shape.empty()) {
    os << llvm::format("%.17g", t.data[0]);
    return;
  }
  double sum = 0.0, sumAbs = 0.0;
  for (double x : t.data) {
    sum += x;
    sumAbs += std::fabs(x);
  }
  os << "shape [";
  llvm::interleaveComma(t.shape, os);
  os << "] sum " << llvm::format("%.17g", sum) << " mean|x| "
     << llvm::format("%.17g", sumAbs / t.data.size()) << " first [";
  for (size_t i = 0; i < std::min<size_t>(4, t.data.size()); ++i)
    os << (i ? ", " : "") << llvm::format("%.9g", t.data[i]);
  os << (t.data.size() > 4 ? ", ...]" : "]");
}

/// Compares dL/dparam from `step` (made by --infir2-autodiff) with central
/// differences of `forward`, both in FP64. The step sees zero accumulators,
/// so its outputs are the gradients themselves.
static int runGradcheck(func::FuncOp forward, func::FuncOp step,
                        SmallVector<Tensor> inputs) {
  auto params = infir2::getParams(forward);
  SmallVector<Tensor> stepInputs(inputs);
  for (auto [index, param] : params)
    stepInputs.push_back(Tensor(inputs[index].shape));
  FailureOr<SmallVector<Tensor>> stepOut =
      infir2::interp::run(step, stepInputs);
  if (failed(stepOut))
    return 1;
  if (stepOut->size() != params.size() + 1)
    return fail("'" + trainStepName +
                "' does not return the loss and one "
                "gradient per parameter");
  auto lossAt = [&](SmallVector<Tensor> &in) -> std::optional<double> {
    FailureOr<SmallVector<Tensor>> out = infir2::interp::run(forward, in);
    if (failed(out))
      return std::nullopt;
    return (*out)[0].data[0];
  };
  std::optional<double> loss = lossAt(inputs);
  if (!loss)
    return 1;
  double stepLoss = (*stepOut)[0].data[0];
  if (std::fabs(stepLoss - *loss) > 1e-12 * std::max(1.0, std::fabs(*loss)))
    return fail("the training step's loss " + std::to_string(stepLoss) +
                " differs from the forward loss " + std::to_string(*loss));
  llvm::outs() << "gradcheck: loss " << llvm::format("%.17g", *loss)
               << "; tolerance |g - fd| <= " << gradcheckAtol << " + "
               << gradcheckRtol << " * max(|g|, |fd|)\n";

  std::mt19937_64 rng(seed + 1);
  bool ok = true;
  unsigned total = 0;
  for (auto [p, entry] : llvm::enumerate(params)) {
    auto [index, param] = entry;
    const Tensor &g = (*stepOut)[p + 1];
    int64_t n = g.getNumElements();
    // The largest gradient, then random coordinates.
    SmallVector<int64_t> coords{static_cast<int64_t>(
        std::max_element(
            g.data.begin(), g.data.end(),
            [](double a, double b) { return std::fabs(a) < std::fabs(b); }) -
        g.data.begin())};
    std::uniform_int_distribution<int64_t> pick(0, n - 1);
    while (int64_t(coords.size()) < std::min<int64_t>(gradcheckSamples, n))
      coords.push_back(pick(rng));
    double worst = 0.0;
    for (int64_t c : coords) {
      double &theta = inputs[index].data[c];
      double saved = theta, h = 1e-5 * std::max(1.0, std::fabs(saved));
      theta = saved + h;
      std::optional<double> up = lossAt(inputs);
      theta = saved - h;
      std::optional<double> down = lossAt(inputs);
      theta = saved;
      if (!up || !down)
        return 1;
      double fd = (*up - *down) / (2 * h), an = g.data[c];
      double err = std::fabs(an - fd);
      double allowed = gradcheckAtol +
                       gradcheckRtol * std::max(std::fabs(an), std::fabs(fd));
      worst = std::max(worst, err / allowed);
      if (err > allowed) {
        ok = false;
        llvm::outs() << "  MISMATCH " << param.getName() << "[" << c
                     << "]: gradient " << llvm::format("%.12g", an)
                     << ", finite difference " << llvm::format("%.12g", fd)
                     << "\n";
      }
      ++total;
    }
    llvm::outs() << "  " << param.getName() << ": " << coords.size()
                 << " coordinates, worst error " << llvm::format("%.3g", worst)
                 << " of tolerance\n";
  }
  llvm::outs() << "gradcheck: " << params.size() << " parameters, " << total
               << " coordinates: " << (ok ? "PASS" : "FAIL") << "\n";
  return ok ? 0 : 1;
}

/// `fn`'s results on `inputs` (whole tensors), over `tp` tensor-parallel
/// ranks in step: each rank gets its slices (and fills its own FP8 weight
/// cache), and the results are put back together.
static FailureOr<SmallVector<Tensor>>
runGroup(ModuleOp module, func::FuncOp fn, ArrayRef<std::string> names,
         ArrayRef<Tensor> inputs, int64_t tp,
         const infir2::interp::QuantizationObserver &observer) {
  if (tp == 1)
    return infir2::interp::run(fn, inputs, observer);
  auto ranks = infir2::run::sliceForRanks(fn, inputs, tp);
  for (SmallVector<Tensor> &rank : ranks)
    if (failed(fillWeightCache(module, fn, names, rank)))
      return failure();
  auto results = infir2::interp::runRanks(fn, ranks, observer);
  if (failed(results))
    return failure();
  return infir2::run::gatherRanks(fn, *results);
}

int main(int argc, char **argv) {
  llvm::InitLLVM y(argc, argv);
  infir2::setUpToolOptions({&category});
  cl::ParseCommandLineOptions(
      argc, argv, "InfiR2 reference interpreter (FP64) on random inputs\n");

  DialectRegistry registry;
  infir2::registerAllDialects(registry);
  MLIRContext ctx(registry);
  llvm::SourceMgr sourceMgr;
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> buffer = openInputFile(inputPath, &error);
  if (!buffer)
    return fail(error);
  sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  SourceMgrDiagnosticHandler handler(sourceMgr, &ctx);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &ctx);
  if (!module)
    return 1; // The parser or verifier has printed the diagnostic.
  auto fn = module->lookupSymbol<func::FuncOp>(entry);
  if (!fn)
    return fail("no function named '" + entry + "' in " + inputPath);
  if (fn.isExternal())
    return fail("function '" + entry + "' has no body");

  if (freshSeed)
    seed = (static_cast<uint64_t>(std::random_device{}()) << 32) |
           std::random_device{}();
  uint64_t elements = 0;
  for (Type t : fn.getArgumentTypes())
    if (auto tensor = dyn_cast<RankedTensorType>(t);
        tensor && tensor.hasStaticShape())
      elements += tensor.getNumElements();
  if (elements > maxElements)
    return fail("@" + entry + " takes " + std::to_string(elements) +
                " input elements (" + std::to_string(elements * 8 >> 20) +
                " MiB in FP64), more than --max-elements=" +
                std::to_string(maxElements) +
                ": the reference interpreter is meant for small models");

  llvm::outs() << "infir2-run: @" << entry << " with inputs drawn from seed "
               << seed << "\n";
  std::mt19937_64 rng(seed);
  int64_t tp = infir2::run::tensorParallelSize(*module);
  SmallVector<Tensor> inputs;
  SmallVector<std::string> names;
  Block &body = fn.getBody().front();
  for (BlockArgument arg : body.getArguments()) {
    if (!isa<RankedTensorType>(arg.getType()) ||
        !cast<RankedTensorType>(arg.getType()).hasStaticShape())
      return fail("argument #" + std::to_string(arg.getArgNumber()) +
                  " is not a statically shaped tensor");
    names.push_back(infir2::run::argumentName(fn, arg.getArgNumber()));
    if (StringRef(names.back()).starts_with("fp8_cache.")) {
      // Computed from the parameters below, never drawn or read.
      inputs.push_back(
          Tensor(cast<RankedTensorType>(arg.getType()).getShape()));
      continue;
    }
    // A tensor-parallel rank's shard is drawn whole, as the unsharded
    // module draws it, and sliced below.
    auto param = fn.getArgAttrOfType<infir2::ParamAttr>(
        arg.getArgNumber(), infir2::Infir2Dialect::getParamAttrName());
    inputs.push_back(drawInput(arg, wholeArgType(fn, arg.getArgNumber(), tp),
                               param, roleOf(fn, arg.getArgNumber()), rng,
                               perturbInit));
  }

  if (!inputsPath.empty() && failed(infir2::run::readStoredInputs(
                                 fn, names, inputs, inputsPath, error)))
    return fail(error);

  if (tp > 1 && gradcheck)
    return fail("--gradcheck runs one rank: run it on the module before "
                "--infir2-tensor-parallel");
  if (tp == 1 && failed(fillWeightCache(*module, fn, names, inputs)))
    return 1;

  if (gradcheck && llvm::any_of(names, [](const std::string &n) {
        return StringRef(n).starts_with("fp8_cache.");
      }))
    return fail("--gradcheck compares @" + entry +
                " with the exact gradients of " + trainStepName +
                ", which an FP8 weight cache does not have: run it on the "
                "module before the FP8 recipe (e.g. --infir2-autodiff)");

  if (gradcheck) {
    auto step = module->lookupSymbol<func::FuncOp>(trainStepName);
    if (!step)
      return fail("no function named '" + trainStepName + "' in " + inputPath +
                  " (run --infir2-autodiff first)");
    return runGradcheck(fn, step, inputs);
  }

  std::unique_ptr<llvm::ToolOutputFile> statsFile;
  infir2::interp::QuantizationObserver observer;
  if (!fp8StatsPath.empty()) {
    std::error_code ec;
    statsFile = std::make_unique<llvm::ToolOutputFile>(fp8StatsPath, ec,
                                                       llvm::sys::fs::OF_None);
    if (ec)
      return fail("--fp8-stats " + fp8StatsPath + ": " + ec.message());
    observer = infir2::run::fp8StatsWriter(statsFile->os(), entry);
  }
  FailureOr<SmallVector<Tensor>> results =
      runGroup(*module, fn, names, inputs, tp, observer);
  if (failed(results))
    return 1; // Diagnosed at the op.
  if (statsFile)
    statsFile->keep();
  for (auto [i, r] : llvm::enumerate(*results)) {
    llvm::outs() << "result #" << i << ": ";
    printTensor(llvm::outs(), r);
    llvm::outs() << "\n";
  }

  if (!dumpPath.empty()) {
    SmallVector<std::pair<std::string, const Tensor *>> tensors;
    // Not the FP8 weight cache: it is computed from the parameters.
    for (auto [name, t] : llvm::zip_equal(names, inputs))
      if (!StringRef(name).starts_with("fp8_cache."))
        tensors.emplace_back(name, &t);
    for (auto [i, r] : llvm::enumerate(*results))
      tensors.emplace_back("result" + std::to_string(i), &r);
    if (failed(writeSafetensors(dumpPath, tensors, error)))
      return fail(error);
  }
  return 0;
}
