//===- CacheFP8Weights.cpp - Weights quantized once per optimizer step ----===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "infir2/Transforms/Passes.h"

#include "infir2/Dialect/FP8/IR/FP8Attrs.h"
#include "infir2/Dialect/FP8/IR/FP8Ops.h"
#include "infir2/Dialect/Infir2/IR/Infir2Attrs.h"
#include "infir2/Dialect/Infir2/IR/Infir2Dialect.h"
#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/MapVector.h"

namespace infir2 {
#define GEN_PASS_DEF_CACHEFP8WEIGHTSPASS
#include "infir2/Transforms/Passes.h.inc"
} // namespace infir2

using namespace mlir;
using namespace infir2;

namespace {

constexpr StringLiteral kQuantizeWeights = "quantize_weights";

/// One cached quantization of a parameter: its settings (a quantize op of
/// the step, the prototype every copy is cloned from) and whether it
/// quantizes the transpose.
struct CachedQuantization {
  fp8::QuantizeOp prototype;
  bool transposed = false;
  /// The step's arguments that replace its codes and scales.
  BlockArgument data, scale;
};

/// The parameters whose quantizations are cached, in the step's order.
struct Cache {
  /// Parameter argument index of @train_step -> its cached quantizations.
  llvm::MapVector<unsigned, SmallVector<CachedQuantization, 2>> byParam;
};

bool sameSettings(fp8::QuantizeOp a, fp8::QuantizeOp b) {
  return a.getFormat() == b.getFormat() &&
         a.getGranularity() == b.getGranularity() &&
         a.getScaleRule() == b.getScaleRule() &&
         a.getData().getType().getElementType() ==
             b.getData().getType().getElementType() &&
         a.getScale().getType().getElementType() ==
             b.getScale().getType().getElementType();
}

bool isSwap(TransposeOp t) {
  return t && t.getPermutation() == ArrayRef<int64_t>{1, 0};
}

/// The parameter argument `q` quantizes, directly or transposed (sets
/// `transposed`), by blocks; null for any other quantization.
BlockArgument cacheableWeight(fp8::QuantizeOp q, func::FuncOp step,
                              bool &transposed) {
  if (!isa<fp8::BlocksAttr>(q.getGranularity()))
    return nullptr;
  Value input = q.getInput();
  transposed = false;
  if (auto t = input.getDefiningOp<TransposeOp>(); isSwap(t)) {
    input = t.getInput();
    transposed = true;
  }
  auto arg = dyn_cast<BlockArgument>(input);
  if (!arg || arg.getOwner() != &step.getBody().front() ||
      !step.getArgAttrOfType<ParamAttr>(arg.getArgNumber(),
                                        Infir2Dialect::getParamAttrName()))
    return nullptr;
  return arg;
}

std::string cacheName(StringRef param, bool transposed, StringRef part) {
  return (param + (transposed ? ".t:" : ":") + part).str();
}

/// The codes and scales of `weight` quantized as `cached` says, built at
/// `b` (quantizing its transpose for a transposed copy).
std::pair<Value, Value> quantizeLike(OpBuilder &b, Location loc, Value weight,
                                     const CachedQuantization &cached) {
  fp8::QuantizeOp proto = cached.prototype;
  Value input = weight;
  if (cached.transposed)
    input = TransposeOp::create(b, loc, proto.getInput().getType(), weight,
                                b.getDenseI64ArrayAttr({1, 0}));
  auto q = fp8::QuantizeOp::create(
      b, loc, proto.getData().getType(), proto.getScale().getType(), input,
      proto.getFormatAttr(), proto.getGranularity(), proto.getScaleRuleAttr());
  return {q.getData(), q.getScale()};
}

/// Appends to `values` (and their cache names to `names`) the cached codes
/// and scales of one parameter, `weight`, built at `b`.
void emitCache(OpBuilder &b, Location loc, Value weight, StringRef param,
               ArrayRef<CachedQuantization> cached,
               SmallVectorImpl<Value> &values,
               SmallVectorImpl<std::string> &names) {
  SmallVector<std::pair<Value, Value>> built;
  // Both layouts of one setting by square blocks: one quantize_dual, which
  // writes the transposed codes and scales in the same pass.
  if (cached.size() == 2 && !cached[0].transposed && cached[1].transposed &&
      sameSettings(cached[0].prototype, cached[1].prototype)) {
    fp8::QuantizeOp a = cached[0].prototype, t = cached[1].prototype;
    auto blocks = cast<fp8::BlocksAttr>(a.getGranularity());
    if (blocks.getRows() == blocks.getCols()) {
      auto dual = fp8::QuantizeDualOp::create(
          b, loc, a.getData().getType(), a.getScale().getType(),
          t.getData().getType(), t.getScale().getType(), weight,
          a.getFormatAttr(), a.getGranularity(), t.getGranularity(),
          a.getScaleRuleAttr());
      built = {{dual.getData(), dual.getScale()},
               {dual.getDataT(), dual.getScaleT()}};
    }
  }
  if (built.empty())
    for (const CachedQuantization &c : cached)
      built.push_back(quantizeLike(b, loc, weight, c));
  for (auto [c, codes] : llvm::zip_equal(cached, built)) {
    values.append({codes.first, codes.second});
    names.push_back(cacheName(param, c.transposed, "data"));
    names.push_back(cacheName(param, c.transposed, "scale"));
  }
}

/// Appends `values` to `fn`'s results, each with its fp8_cache name.
LogicalResult returnAlso(func::FuncOp fn, ArrayRef<Value> values,
                         ArrayRef<std::string> names) {
  auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
  Builder b(fn.getContext());
  for (auto [v, name] : llvm::zip_equal(values, names))
    if (failed(fn.insertResult(
            fn.getNumResults(), v.getType(),
            b.getDictionaryAttr(b.getNamedAttr(
                Infir2Dialect::getFP8CacheAttrName(), b.getStringAttr(name))))))
      return failure();
  ret.getOperandsMutable().append(values);
  return success();
}

struct CacheFP8WeightsPass
    : public infir2::impl::CacheFP8WeightsPassBase<CacheFP8WeightsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto step = module.lookupSymbol<func::FuncOp>("train_step");
    auto opt = module.lookupSymbol<func::FuncOp>("optimizer_step");
    if (!step || !opt || step.isExternal() || opt.isExternal() ||
        module.lookupSymbol(kQuantizeWeights))
      return;
    // The updated working copy of each parameter, by name.
    llvm::StringMap<Value> updated;
    auto ret = cast<func::ReturnOp>(opt.getBody().front().getTerminator());
    for (auto [i, v] : llvm::enumerate(ret.getOperands()))
      if (auto name = opt.getResultAttrOfType<StringAttr>(
              i, Infir2Dialect::getWorkingCopyOfAttrName()))
        updated[name.getValue()] = v;

    Cache cache;
    SmallVector<fp8::QuantizeOp> replaced;
    Block &entry = step.getBody().front();
    for (Operation &op : entry) {
      auto q = dyn_cast<fp8::QuantizeOp>(op);
      bool transposed;
      BlockArgument w = q ? cacheableWeight(q, step, transposed) : nullptr;
      if (!w || !updated.count(paramName(step, w)))
        continue;
      auto &list = cache.byParam[w.getArgNumber()];
      // One cached copy per layout; a second quantization of the same
      // layout with other settings stays in the step.
      auto same = llvm::find_if(list, [&](const CachedQuantization &c) {
        return c.transposed == transposed;
      });
      if (same != list.end() && !sameSettings(same->prototype, q))
        continue;
      if (same == list.end())
        list.push_back({q, transposed, nullptr, nullptr});
      replaced.push_back(q);
    }
    if (cache.byParam.empty())
      return;
    for (auto &[index, list] : cache.byParam)
      llvm::stable_sort(list, [](const CachedQuantization &a,
                                 const CachedQuantization &b) {
        return !a.transposed && b.transposed;
      });

    if (failed(buildQuantizeWeights(module, step, cache)) ||
        failed(refreshInOptimizerStep(opt, step, cache, updated)) ||
        failed(addStepArguments(step, cache)))
      return signalPassFailure();
    // Evaluation reads the same cache (the trainer fills it before); while
    // the step's quantizations, the prototypes, still exist.
    if (auto forward = module.lookupSymbol<func::FuncOp>("forward");
        forward && !forward.isExternal())
      readCacheIn(forward, step, cache);
    for (fp8::QuantizeOp q : replaced) {
      bool transposed;
      BlockArgument w = cacheableWeight(q, step, transposed);
      for (const CachedQuantization &c : cache.byParam[w.getArgNumber()])
        if (c.transposed == transposed) {
          q.getData().replaceAllUsesWith(c.data);
          q.getScale().replaceAllUsesWith(c.scale);
        }
      eraseWithTranspose(q);
    }
  }

  static void eraseWithTranspose(fp8::QuantizeOp q) {
    auto t = q.getInput().getDefiningOp<TransposeOp>();
    q.erase();
    if (t && t->use_empty())
      t.erase();
  }

  /// Replaces `fn`'s quantizations of cached parameters, with the cached
  /// settings, by arguments of the cache's slots (one per tensor read).
  void readCacheIn(func::FuncOp fn, func::FuncOp step, const Cache &cache) {
    llvm::StringMap<const SmallVector<CachedQuantization, 2> *> byName;
    for (auto &[index, list] : cache.byParam)
      byName[paramName(step, step.getArgument(index))] = &list;
    llvm::StringMap<BlockArgument> args;
    Builder b(fn.getContext());
    SmallVector<fp8::QuantizeOp> replaced;
    for (auto q : fn.getBody().front().getOps<fp8::QuantizeOp>())
      replaced.push_back(q);
    for (fp8::QuantizeOp q : replaced) {
      bool transposed;
      BlockArgument w = cacheableWeight(q, fn, transposed);
      auto it = w ? byName.find(paramName(fn, w)) : byName.end();
      if (it == byName.end())
        continue;
      const auto *c = llvm::find_if(*it->second, [&](const auto &c) {
        return c.transposed == transposed && sameSettings(c.prototype, q);
      });
      if (c == it->second->end())
        continue;
      for (auto [part, v] : {std::pair{"data", q.getData()},
                             std::pair{"scale", q.getScale()}}) {
        std::string name = cacheName(it->first(), transposed, part);
        BlockArgument &arg = args[name];
        if (!arg) {
          unsigned at = fn.getNumArguments();
          if (failed(fn.insertArgument(
                  at, v.getType(),
                  b.getDictionaryAttr(b.getNamedAttr(
                      Infir2Dialect::getFP8CacheAttrName(),
                      b.getStringAttr(name))),
                  fn.getLoc())))
            return signalPassFailure();
          arg = fn.getArgument(at);
        }
        v.replaceAllUsesWith(arg);
      }
      eraseWithTranspose(q);
    }
  }

  static StringRef paramName(func::FuncOp fn, BlockArgument arg) {
    return fn
        .getArgAttrOfType<ParamAttr>(arg.getArgNumber(),
                                     Infir2Dialect::getParamAttrName())
        .getName();
  }

  /// @quantize_weights: the cached parameters in (with their param
  /// attributes, so the planner finds their slots), the cache out.
  LogicalResult buildQuantizeWeights(ModuleOp module, func::FuncOp step,
                                     const Cache &cache) {
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    SmallVector<Type> inputs;
    for (auto &[index, list] : cache.byParam)
      inputs.push_back(step.getArgumentTypes()[index]);
    auto fn = func::FuncOp::create(b, step.getLoc(), kQuantizeWeights,
                                   b.getFunctionType(inputs, {}));
    Block *body = fn.addEntryBlock();
    b.setInsertionPointToStart(body);
    SmallVector<Value> values;
    SmallVector<std::string> names;
    for (auto [i, entry] : llvm::enumerate(cache.byParam)) {
      auto &[index, list] = entry;
      fn.setArgAttr(i, Infir2Dialect::getParamAttrName(),
                    step.getArgAttr(index, Infir2Dialect::getParamAttrName()));
      emitCache(b, step.getLoc(), body->getArgument(i),
                paramName(step, step.getArgument(index)), list, values, names);
    }
    func::ReturnOp::create(b, step.getLoc(), ValueRange{});
    if (failed(returnAlso(fn, values, names)))
      return fn.emitError() << "cannot return the FP8 weight cache";
    return success();
  }

  /// The same copies, from each updated working copy, at the end of the
  /// optimizer step.
  LogicalResult refreshInOptimizerStep(func::FuncOp opt, func::FuncOp step,
                                       const Cache &cache,
                                       const llvm::StringMap<Value> &updated) {
    OpBuilder b(opt.getBody().front().getTerminator());
    SmallVector<Value> values;
    SmallVector<std::string> names;
    for (auto &[index, list] : cache.byParam) {
      StringRef name = paramName(step, step.getArgument(index));
      emitCache(b, opt.getLoc(), updated.lookup(name), name, list, values,
                names);
    }
    if (failed(returnAlso(opt, values, names)))
      return opt.emitError() << "cannot return the refreshed FP8 weight cache";
    return success();
  }

  /// Appends the cache's arguments to the step, after the others.
  LogicalResult addStepArguments(func::FuncOp step, Cache &cache) {
    Location loc = step.getLoc();
    Builder b(step.getContext());
    for (auto &[index, list] : cache.byParam) {
      StringRef name = paramName(step, step.getArgument(index));
      for (CachedQuantization &c : list) {
        for (auto [part, type, slot] :
             {std::tuple{"data", Type(c.prototype.getData().getType()), &c.data},
              std::tuple{"scale", Type(c.prototype.getScale().getType()),
                         &c.scale}}) {
          unsigned at = step.getNumArguments();
          if (failed(step.insertArgument(
                  at, type,
                  b.getDictionaryAttr(b.getNamedAttr(
                      Infir2Dialect::getFP8CacheAttrName(),
                      b.getStringAttr(cacheName(name, c.transposed, part)))),
                  loc)))
            return step.emitError() << "cannot add the FP8 weight cache's "
                                       "arguments";
          *slot = step.getArgument(at);
        }
      }
    }
    return success();
  }
};

} // namespace
