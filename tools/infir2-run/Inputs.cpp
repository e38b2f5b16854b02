//===- Inputs.cpp - The inputs infir2-run gives a function ----------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "Inputs.h"

#include "infir2/Dialect/Infir2/IR/Infir2Dialect.h"
#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"

#include "infir2/runtime/Checkpoint.h"

#include <cmath>
#include <map>

using namespace mlir;
using infir2::interp::Tensor;

/// The range an integer argument's values are drawn from, from how it is used.
/// What an integer input holds.
enum class IntegerInput { Bounded, Positions, Segments };

static int64_t integerBound(Value arg, IntegerInput &kind) {
  kind = IntegerInput::Bounded;
  for (OpOperand *usePtr : infir2::getUsesThroughViews(arg)) {
    OpOperand &use = *usePtr;
    Operation *user = use.getOwner();
    // A vocabulary split over tensor-parallel ranks: the whole one's ids.
    if (auto e = dyn_cast<infir2::EmbeddingOp>(user))
      return cast<RankedTensorType>(e.getTable().getType()).getShape()[0] *
             int64_t(e.getVocabShards());
    if (auto ce = dyn_cast<infir2::CrossEntropyOp>(user))
      return cast<RankedTensorType>(ce.getLogits().getType())
                 .getShape()
                 .back() *
             int64_t(ce.getVocabShards());
    if (isa<infir2::RopeOp>(user)) {
      kind = IntegerInput::Positions;
      return 0;
    }
    if (isa<infir2::AttentionOp>(user)) {
      kind = IntegerInput::Segments;
      return 0;
    }
  }
  return 16;
}

std::pair<std::string, std::string> infir2::run::roleOf(func::FuncOp fn,
                                                  unsigned index) {
  static const std::pair<StringRef, StringRef> kinds[] = {
      {"infir2.master_of", "master"},
      {"infir2.grad_of", "grad"},
      {"infir2.moment1_of", "moment1"},
      {"infir2.moment2_of", "moment2"},
      {"infir2.input", "input"}};
  for (auto [attr, kind] : kinds)
    if (auto value = fn.getArgAttrOfType<StringAttr>(index, attr))
      return {kind.str(), value.getValue().str()};
  return {};
}

std::string infir2::run::argumentName(func::FuncOp fn, unsigned index) {
  if (auto cache = fn.getArgAttrOfType<StringAttr>(
          index, infir2::Infir2Dialect::getFP8CacheAttrName()))
    return "fp8_cache." + cache.getValue().str();
  if (auto param = fn.getArgAttrOfType<infir2::ParamAttr>(
          index, infir2::Infir2Dialect::getParamAttrName()))
    return param.getName().str();
  auto role = roleOf(fn, index);
  return role.first.empty() ? "arg" + std::to_string(index)
                            : role.first + "." + role.second;
}

LogicalResult infir2::run::readStoredInputs(func::FuncOp fn,
                                            ArrayRef<std::string> names,
                                            MutableArrayRef<Tensor> inputs,
                                            const std::string &path,
                                            std::string &error) {
  std::map<std::string, infir2::rt::StoredTensor> stored;
  if (!infir2::rt::readSafetensors(path, stored, error))
    return failure();
  for (auto [i, arg] : llvm::enumerate(fn.getBody().front().getArguments())) {
    if (StringRef(names[i]).starts_with("fp8_cache."))
      continue;
    std::optional<StringRef> role = infir2::getBatchInputRole(arg);
    auto it = stored.find(names[i]);
    if (it == stored.end() && role)
      it = stored.find(("input." + *role).str());
    if (it == stored.end()) {
      error = path + ": no tensor '" + names[i] + "'" +
              (role ? " or 'input." + role->str() + "'" : "") +
              " for argument #" + std::to_string(i);
      return failure();
    }
    const infir2::rt::StoredTensor &t = it->second;
    Tensor &in = inputs[i];
    if (ArrayRef<int64_t>(t.shape) != ArrayRef<int64_t>(in.shape) ||
        (t.dtype != "F32" && t.dtype != "F64")) {
      error = path + ": tensor '" + it->first +
              "' is not F32/F64 of the shape of argument #" + std::to_string(i);
      return failure();
    }
    for (int64_t e = 0, n = in.getNumElements(); e < n; ++e)
      in.data[e] = infir2::rt::storedFloat(t, e);
  }
  return success();
}

LogicalResult infir2::run::fillWeightCache(ModuleOp module, func::FuncOp fn,
                                     ArrayRef<std::string> names,
                                     MutableArrayRef<Tensor> inputs) {
  StringRef attr = infir2::Infir2Dialect::getFP8CacheAttrName();
  if (llvm::none_of(names, [](const std::string &n) {
        return StringRef(n).starts_with("fp8_cache.");
      }))
    return success();
  auto fill = module.lookupSymbol<func::FuncOp>("quantize_weights");
  if (!fill)
    return fn.emitError() << "takes an FP8 weight cache, but the module has "
                             "no @quantize_weights to fill it";
  SmallVector<Tensor> params;
  for (BlockArgument arg : fill.getArguments()) {
    auto param = fill.getArgAttrOfType<infir2::ParamAttr>(
        arg.getArgNumber(), infir2::Infir2Dialect::getParamAttrName());
    const auto *it = param ? llvm::find(names, param.getName().str())
                           : names.end();
    if (it == names.end())
      return fill.emitError() << "argument #" << arg.getArgNumber()
                              << " is no parameter of @" << fn.getSymName();
    params.push_back(inputs[it - names.begin()]);
  }
  FailureOr<SmallVector<Tensor>> cache = infir2::interp::run(fill, params);
  if (failed(cache))
    return failure();
  for (auto [i, t] : llvm::enumerate(*cache)) {
    auto name = fill.getResultAttrOfType<StringAttr>(i, attr);
    const auto *it =
        name ? llvm::find(names, "fp8_cache." + name.getValue().str())
             : names.end();
    if (it != names.end())
      inputs[it - names.begin()] = std::move(t);
  }
  return success();
}

Tensor infir2::run::drawInput(BlockArgument arg, RankedTensorType type,
                              infir2::ParamAttr param,
                              std::pair<std::string, std::string> role,
                              std::mt19937_64 &rng, double perturbInit) {
  Tensor t(type.getShape());
  // Optimizer inputs need values of their kind: a small positive learning
  // rate, a 1-based step, 1/K for K micro-batches, non-negative second
  // moments.
  if (role.first == "input") {
    std::uniform_real_distribution<double> logLr(-4.0, -2.0);
    std::uniform_int_distribution<int> step(1, 100), k(0, 3);
    double v = role.second == "learning_rate" ? std::pow(10.0, logLr(rng))
               : role.second == "step"        ? step(rng)
                                              : 1.0 / (1 << k(rng));
    std::fill(t.data.begin(), t.data.end(), v);
    return t;
  }
  if (role.first == "moment2") {
    std::normal_distribution<double> normal(0.0, 0.1);
    for (double &x : t.data)
      x = normal(rng) * normal(rng);
    for (double &x : t.data)
      x = std::fabs(x);
    return t;
  }
  if (param) {
    std::normal_distribution<double> normal(0.0,
                                            param.getStd().convertToDouble());
    std::normal_distribution<double> noise(0.0, perturbInit);
    for (double &x : t.data) {
      x = param.getInit() == infir2::InitKind::normal ? normal(rng)
          : param.getInit() == infir2::InitKind::ones ? 1.0
                                                      : 0.0;
      if (perturbInit > 0.0)
        x += noise(rng);
    }
    return t;
  }
  if (isa<IntegerType>(type.getElementType())) {
    IntegerInput kind;
    int64_t bound = integerBound(arg, kind);
    int64_t last = type.getRank() ? type.getShape().back() : 1;
    std::uniform_int_distribution<int64_t> uniform(
        0, std::max<int64_t>(bound, 1) - 1);
    // Segments: runs of 1..max(1, S/2) tokens, numbered along each sequence.
    std::uniform_int_distribution<int64_t> run(1, std::max<int64_t>(1, last / 2));
    for (int64_t i = 0, n = t.getNumElements(), id = 0, left = 0; i < n;
         ++i, --left) {
      if (kind == IntegerInput::Segments && (i % last == 0 || left == 0)) {
        left = run(rng);
        ++id;
      }
      t.data[i] = kind == IntegerInput::Positions  ? double(i % last)
                  : kind == IntegerInput::Segments ? double(id)
                                                   : double(uniform(rng));
    }
    return t;
  }
  bool isMask =
      llvm::any_of(infir2::getUsesThroughViews(arg), [](OpOperand *use) {
        auto ce = dyn_cast<infir2::CrossEntropyOp>(use->getOwner());
        return ce && ce.getLossMask() == use->get();
      });
  std::bernoulli_distribution keep(0.75);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (double &x : t.data)
    x = isMask ? (keep(rng) ? 1.0 : 0.0) : normal(rng);
  return t;
}
