//===- infir2-bisect.cpp - Which FP8 GEMMs make a step drift --------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
//   infir2-bisect model.mlir --inputs step.safetensors
//                 [--recipe-options="granularity=tensorwise"] [--tolerance X]
//                 [--criterion=logits|gradients]
//
// Runs a model's training step through the FP64 reference interpreter twice
// on the same inputs (a trainer's --dump-step): with the BF16 recipe (the
// reference: no FP8 anywhere) and with the FP8 recipe. It prints every FP8
// GEMM's product error against the reference's (relative L2 and SQNR,
// worst first; what the step fuses into a GEMM, an accumulator or a
// residual, is subtracted), then searches for a set of FP8 GEMMs whose
// return to high precision brings the step within --tolerance of the
// reference, none of which can go back to FP8 alone (delta debugging). The
// criterion is the logits' relative L2 error (over the forward GEMMs, the
// only ones that reach them, named WEIGHT:fprop), or with
// --criterion=gradients the worst relative L2 error of any weight's
// gradient (over every FP8 GEMM: fprop, dgrad and wgrad). It prints the
// set as the recipe option that applies it:
//   --recipe-options="keep-high=model.layers.1.mlp.down_proj.weight:fprop"
// with which infir2-compile builds a trainer that keeps those GEMMs high,
// saying "kept high by bisection".
//
//===----------------------------------------------------------------------===//

#include "infir2/Dialect/FP8/IR/FP8Dialect.h"
#include "infir2/Dialect/FP8/IR/FP8Ops.h"
#include "infir2/Dialect/Infir2/IR/Infir2Dialect.h"
#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"
#include "infir2/InitAll.h"
#include "infir2/Interpreter/Interpreter.h"
#include "infir2/Pipelines/Pipelines.h"
#include "infir2/Support/ToolOptions.h"

#include "Inputs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/WithColor.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

using namespace mlir;
using infir2::interp::Tensor;
namespace cl = llvm::cl;

static cl::OptionCategory category("infir2-bisect options");
static cl::opt<std::string> inputPath(cl::Positional, cl::Required,
                                      cl::desc("<model.mlir>"),
                                      cl::cat(category));
static cl::opt<std::string>
    inputsPath("inputs", cl::Required,
               cl::desc("The step's inputs: a trainer's --dump-step file"),
               cl::value_desc("file"), cl::cat(category));
static cl::opt<std::string> recipeOptions(
    "recipe-options", cl::init(""),
    cl::desc("The FP8 recipe's options, as infir2-compile takes them"),
    cl::cat(category));
static cl::opt<double>
    tolerance("tolerance", cl::init(1e-2),
              cl::desc("How close to the BF16 step (relative L2 error of the "
                       "criterion) the FP8 step must come (default 1e-2)"),
              cl::cat(category));
enum class Criterion { logits, gradients };
static cl::opt<Criterion> criterion(
    "criterion", cl::init(Criterion::logits),
    cl::desc("What must come within the tolerance"),
    cl::values(clEnumValN(Criterion::logits, "logits",
                          "the logits (bisects the forward GEMMs)"),
               clEnumValN(Criterion::gradients, "gradients",
                          "every weight's gradient, the worst one (bisects "
                          "every FP8 GEMM: fprop, dgrad, wgrad)")),
    cl::cat(category));

static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "infir2-bisect") << message << "\n";
  return 1;
}

namespace {

/// A GEMM of the step, as keep-high names it.
struct Gemm {
  std::string weight, role;
  std::string name() const { return weight + ":" + role; }
};

/// The weight a GEMM reads: named on it (a gradient GEMM), or the parameter
/// or FP8 weight-cache argument an operand comes from through conversions.
std::string weightOf(Operation *op) {
  if (auto w = op->getAttrOfType<StringAttr>(
          infir2::Infir2Dialect::getGemmWeightAttrName()))
    return w.getValue().str();
  for (Value v : op->getOperands()) {
    while (Operation *def = v.getDefiningOp()) {
      if (def->getNumOperands() != 1)
        break;
      v = def->getOperand(0);
    }
    auto arg = dyn_cast<BlockArgument>(v);
    if (!arg)
      continue;
    auto fn = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
    if (!fn)
      continue;
    if (auto p = fn.getArgAttrOfType<infir2::ParamAttr>(
            arg.getArgNumber(), infir2::Infir2Dialect::getParamAttrName()))
      return p.getName().str();
    if (auto c = fn.getArgAttrOfType<StringAttr>(
            arg.getArgNumber(), infir2::Infir2Dialect::getFP8CacheAttrName())) {
      StringRef name = c.getValue().split(':').first; // "<w>[.t]:data"
      name.consume_back(".t");
      return name.str();
    }
  }
  return "";
}

/// The value a GEMM adds its product into (a residual, a gradient
/// accumulator, another GEMM's product), or null.
Value accumulatorOf(Operation *op) {
  if (auto s = dyn_cast<infir2::fp8::ScaledMatmulOp>(op))
    return s.getAcc();
  if (auto a = dyn_cast<infir2::AccumulatingOpInterface>(op))
    return a.getAccumulator();
  return {};
}

Gemm describe(Operation *op) {
  auto role = op->getAttrOfType<StringAttr>(
      infir2::Infir2Dialect::getGemmRoleAttrName());
  return {weightOf(op), role ? role.getValue().str() : "fprop"};
}

/// One interpreted step: its loss, its logits (what the loss reads: every
/// forward GEMM's error reaches them, and unlike the loss they do not let
/// errors cancel), its weight gradients (by parameter) and each GEMM's
/// output in order.
struct Step {
  double loss = 0.0;
  Tensor logits;
  std::map<std::string, Tensor> grads;
  std::vector<std::pair<Gemm, Tensor>> gemms;
  std::vector<Gemm> fp8; ///< the GEMMs the recipe put in FP8
};

class Bisector {
public:
  Bisector(ModuleOp model) : model(model) {}

  /// The step with `recipe` (bf16-recipe, or fp8-recipe keeping `high`).
  FailureOr<Step> run(bool fp8, const std::vector<std::string> &high) {
    OwningOpRef<ModuleOp> module = model.clone();
    PassManager pm(model.getContext());
    if (fp8) {
      std::string options = recipeOptions;
      if (!high.empty())
        options += " keep-high=" + llvm::join(high, ",");
      auto parsed = infir2::FP8RecipeOptions::createFromString(options);
      if (!parsed)
        return failure();
      infir2::buildFP8RecipePipeline(pm, *parsed);
    } else {
      infir2::buildBF16RecipePipeline(pm, infir2::BF16RecipeOptions());
    }
    if (failed(pm.run(*module)))
      return failure();
    auto fn = module->lookupSymbol<func::FuncOp>("train_step");
    if (!fn)
      return model.emitError() << "the recipe made no @train_step";
    std::vector<std::string> names;
    SmallVector<Tensor> inputs;
    for (BlockArgument arg : fn.getArguments()) {
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      if (!type || !type.hasStaticShape()) {
        fail("argument #" + std::to_string(arg.getArgNumber()) +
             " of @train_step is not a statically shaped tensor");
        return failure();
      }
      names.push_back(infir2::run::argumentName(fn, arg.getArgNumber()));
      inputs.push_back(Tensor(type.getShape()));
    }
    std::string error;
    if (failed(infir2::run::readStoredInputs(fn, names, inputs, inputsPath,
                                             error))) {
      fail(error);
      return failure();
    }
    if (failed(infir2::run::fillWeightCache(*module, fn, names, inputs)))
      return failure();
    Step step;
    llvm::SmallPtrSet<Operation *, 4> logits; // the losses' logits' makers
    llvm::DenseSet<Value> accumulators;       // what GEMMs add into
    fn.walk([&](Operation *op) {
      if (isa<infir2::fp8::ScaledMatmulOp>(op))
        step.fp8.push_back(describe(op));
      if (auto ce = dyn_cast<infir2::CrossEntropyOp>(op))
        if (Operation *def = ce.getLogits().getDefiningOp())
          logits.insert(def);
      if (isa<infir2::GemmOpInterface>(op))
        if (Value acc = accumulatorOf(op))
          accumulators.insert(acc);
    });
    // Each GEMM's own product: what it adds into, subtracted (a function
    // argument's value is an input; an op's, seen when it ran).
    llvm::DenseMap<Value, Tensor> seenAccumulators;
    auto seen = [&](Operation *op, ArrayRef<Tensor> results) {
      for (auto [r, t] : llvm::zip_equal(op->getResults(), results))
        if (accumulators.contains(r))
          seenAccumulators[r] = t;
      if (isa<infir2::GemmOpInterface>(op)) {
        Tensor product = results.front();
        if (Value acc = accumulatorOf(op)) {
          auto arg = dyn_cast<BlockArgument>(acc);
          const Tensor *added = arg && arg.getOwner()->getParentOp() == fn
                                    ? &inputs[arg.getArgNumber()]
                                    : nullptr;
          if (auto it = seenAccumulators.find(acc);
              !added && it != seenAccumulators.end())
            added = &it->second;
          if (added && added->data.size() == product.data.size())
            for (auto [p, a] : llvm::zip_equal(product.data, added->data))
              p -= a;
        }
        step.gemms.push_back({describe(op), std::move(product)});
      }
      if (logits.contains(op)) // in order, chunk by chunk
        step.logits.data.insert(step.logits.data.end(),
                                results.front().data.begin(),
                                results.front().data.end());
    };
    FailureOr<SmallVector<Tensor>> out =
        infir2::interp::run(fn, inputs, nullptr, seen);
    if (failed(out))
      return failure();
    step.loss = out->front().data.front();
    for (unsigned i = 0; i < fn.getNumResults(); ++i)
      if (auto p = fn.getResultAttrOfType<StringAttr>(
              i, infir2::Infir2Dialect::getGradOfAttrName()))
        step.grads[p.getValue().str()] = (*out)[i];
    ++runs;
    return step;
  }

  /// The worst weight gradient of `s` against the reference's: its relative
  /// L2 error and its parameter.
  std::pair<double, std::string> worstGradient(const Step &s) const {
    std::pair<double, std::string> worst{0.0, ""};
    for (auto &[name, g] : s.grads)
      if (auto it = reference.grads.find(name); it != reference.grads.end())
        worst = std::max(worst, {relativeError(g, it->second), name});
    return worst;
  }

  /// The criterion's error against the reference with `high` kept high.
  FailureOr<double> drift(const std::vector<std::string> &high) {
    FailureOr<Step> s = run(/*fp8=*/true, high);
    if (failed(s))
      return failure();
    return criterion == Criterion::logits
               ? relativeError(s->logits, reference.logits)
               : worstGradient(*s).first;
  }

  static double relativeError(const Tensor &got, const Tensor &want) {
    double signal = 0.0, noise = 0.0;
    for (auto [g, w] : llvm::zip_equal(got.data, want.data)) {
      signal += w * w;
      noise += (g - w) * (g - w);
    }
    return std::sqrt(noise / std::max(signal, 1e-300));
  }

  ModuleOp model;
  Step reference; ///< the BF16 step
  int runs = 0;
};

/// The relative L2 error and SQNR (dB) of `got` against `want`.
std::pair<double, double> errorOf(const Tensor &got, const Tensor &want) {
  double rel = Bisector::relativeError(got, want);
  return {rel, rel == 0.0 ? INFINITY : -20.0 * std::log10(rel)};
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM y(argc, argv);
  infir2::setUpToolOptions({&category});
  cl::ParseCommandLineOptions(
      argc, argv,
      "Finds the FP8 GEMMs that make a training step drift from BF16\n");
  if (!(tolerance > 0))
    return fail("--tolerance must be a positive number");
  DialectRegistry registry;
  infir2::registerAllDialects(registry);
  MLIRContext ctx(registry);
  ctx.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  std::string error;
  auto buffer = openInputFile(inputPath, &error);
  if (!buffer)
    return fail(error);
  sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  SourceMgrDiagnosticHandler handler(sourceMgr, &ctx);
  OwningOpRef<ModuleOp> model = parseSourceFile<ModuleOp>(sourceMgr, &ctx);
  if (!model)
    return 1;
  auto options = infir2::FP8RecipeOptions::createFromString(recipeOptions);
  if (!options)
    return fail("--recipe-options: '" + recipeOptions +
                "' is not the FP8 recipe's options");
  if (options->tensorParallel > 1 || options->zero1)
    return fail("--recipe-options: the reference interpreter runs one "
                "process's step: no tensor-parallel or zero1");
  // A forward, not a step: the recipes derive the step themselves, and on
  // a module a recipe has already run there would be no BF16 reference.
  bool lowered = model->lookupSymbol("train_step") != nullptr;
  model->walk([&](Operation *op) {
    lowered |= isa<infir2::fp8::ScaledMatmulOp>(op) ||
               op->hasAttr(infir2::fp8::FP8Dialect::getDecisionAttrName());
  });
  if (lowered)
    return fail(inputPath +
                " already has a training step or FP8 "
                "decisions: give infir2-bisect the model (its forward, as "
                "infir2-import writes it)");

  // The FP8 step first: a recipe option the pipeline refuses stops here.
  Bisector b(*model);
  FailureOr<Step> fp8 = b.run(/*fp8=*/true, {});
  if (failed(fp8))
    return 1;
  FailureOr<Step> bf16 = b.run(/*fp8=*/false, {});
  if (failed(bf16))
    return 1;
  if (bf16->logits.data.empty() ||
      bf16->logits.data.size() != fp8->logits.data.size())
    return fail("the step has no cross-entropy loss whose logits an op "
                "makes: nothing to compare");
  if (criterion == Criterion::gradients && bf16->grads.empty())
    return fail("the step returns no weight gradients (results marked "
                "infir2.grad_of): nothing to compare");
  b.reference = *bf16;
  double logitsDrift = Bisector::relativeError(fp8->logits, bf16->logits);
  auto [gradDrift, worstParam] = b.worstGradient(*fp8);
  bool byLogits = criterion == Criterion::logits;
  double drift = byLogits ? logitsDrift : gradDrift;
  std::string tol;
  llvm::raw_string_ostream(tol)
      << llvm::format(" (tolerance %g)", tolerance.getValue());
  llvm::outs() << llvm::format("loss: bf16 %.9g, fp8 %.9g; logits: %.3g "
                               "relative L2 error%s\n",
                               bf16->loss, fp8->loss, logitsDrift,
                               byLogits ? tol.c_str() : "");
  llvm::outs() << llvm::format("gradients: the worst %.3g relative L2 error "
                               "(%s)%s\n",
                               gradDrift, worstParam.c_str(),
                               byLogits ? "" : tol.c_str());

  // Each FP8 GEMM's output against the reference's same GEMM (the k-th of
  // its weight and role), worst first.
  std::map<std::string, std::vector<const Tensor *>> want;
  for (auto &[g, t] : bf16->gemms)
    want[g.name()].push_back(&t);
  std::map<std::string, int> taken;
  struct Row {
    std::string name;
    double rel, sqnr;
  };
  std::vector<Row> rows;
  std::set<std::string> fp8Names, candidates;
  for (const Gemm &g : fp8->fp8) {
    fp8Names.insert(g.name());
    // Only the forward GEMMs reach the logits: the gradient GEMMs run after
    // them, and returning one to high precision cannot change them. Every
    // GEMM reaches some gradient.
    if (g.role == "fprop" || criterion == Criterion::gradients)
      candidates.insert(g.name());
  }
  for (auto &[g, t] : fp8->gemms) {
    int k = taken[g.name()]++;
    auto it = want.find(g.name());
    if (!fp8Names.count(g.name()) || it == want.end() ||
        k >= int(it->second.size()) || it->second[k]->shape != t.shape)
      continue;
    auto [rel, sqnr] = errorOf(t, *it->second[k]);
    rows.push_back({g.name(), rel, sqnr});
  }
  std::sort(rows.begin(), rows.end(),
            [](const Row &a, const Row &b) { return a.sqnr < b.sqnr; });
  llvm::outs() << "FP8 GEMM products against BF16's (" << rows.size()
               << "), worst first:\n";
  for (const Row &r : rows)
    llvm::outs() << llvm::format("  %-48s rel %.3e  SQNR %6.1f dB\n",
                                 r.name.c_str(), r.rel, r.sqnr);

  if (drift <= tolerance) {
    llvm::outs() << "the FP8 step is within the tolerance: nothing to keep "
                    "high\n";
    return 0;
  }
  // Delta debugging: drop chunks of the high set while the step stays
  // within the tolerance, halving the chunks when none can go.
  std::vector<std::string> high(candidates.begin(), candidates.end());
  FailureOr<double> all = b.drift(high);
  if (failed(all))
    return 1;
  if (*all > tolerance)
    return fail(llvm::formatv("with every {0} kept high the {1} still {2:e2} "
                              "from BF16's: the drift is not the GEMMs'",
                              byLogits ? "forward FP8 GEMM" : "FP8 GEMM",
                              byLogits ? "logits are" : "worst gradient is",
                              *all)
                    .str());
  size_t chunks = 2;
  while (high.size() > 0) {
    size_t n = std::min(chunks, high.size()), size = high.size();
    bool dropped = false;
    for (size_t c = 0; c < n && !dropped; ++c) {
      std::vector<std::string> kept;
      for (size_t i = 0; i < size; ++i)
        if (i * n / size != c)
          kept.push_back(high[i]);
      FailureOr<double> d = b.drift(kept);
      if (failed(d))
        return 1;
      if (*d <= tolerance) {
        high = kept;
        chunks = std::max<size_t>(chunks - 1, 2);
        dropped = true;
      }
    }
    if (!dropped) {
      if (n >= size)
        break;
      chunks = std::min(2 * chunks, size);
    }
  }
  llvm::outs() << llvm::format("kept high: %zu of %zu %s bring the %s "
                               "within the tolerance (%d interpreted steps)\n",
                               high.size(), candidates.size(),
                               byLogits ? "forward FP8 GEMMs" : "FP8 GEMMs",
                               byLogits ? "logits" : "weight gradients",
                               b.runs);
  for (const std::string &n : high)
    llvm::outs() << "  " << n << "\n";
  llvm::outs() << "--recipe-options=\"" << recipeOptions
               << (recipeOptions.empty() ? "" : " ")
               << "keep-high=" << llvm::join(high, ",") << "\"\n";
  return 0;
}
