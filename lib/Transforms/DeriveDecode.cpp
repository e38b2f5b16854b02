//===- DeriveDecode.cpp - A decode step with a key/value cache ------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// @forward computes a loss from the logits of a [B, S] batch of tokens.
// @decode_step is the same computation for one new token: the ops the logits
// depend on, cloned with [B, S, ...] shapes turned into [1, 1, ...], and
// each causal attention turned into writes of the token's key and value
// into its layer's cache and attention of its query over the cache.
//
//===----------------------------------------------------------------------===//

#include "infir2/Transforms/Passes.h"

#include "infir2/Dialect/Infir2/IR/Infir2Attrs.h"
#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

namespace infir2 {
#define GEN_PASS_DEF_DERIVEDECODEPASS
#include "infir2/Transforms/Passes.h.inc"
} // namespace infir2

using namespace mlir;
using namespace infir2;

namespace {

/// Why the step cannot be derived, and where.
struct Unsupported {
  Operation *at;
  std::string why;
};

class Deriver {
public:
  Deriver(func::FuncOp forward, int64_t maxLength)
      : forward(forward), maxLength(maxLength) {}

  /// Builds @decode_step after the forward function, or says why not.
  std::optional<Unsupported> derive();

private:
  std::optional<Unsupported> collect(CrossEntropyOp loss);
  /// `type` with its leading [B, S] turned into [1, 1]; null when it does
  /// not start with them.
  RankedTensorType perToken(Type type) const;
  bool isPerBatch(Type type) const { return perToken(type) != nullptr; }

  func::FuncOp forward;
  int64_t maxLength, batch = 0, seq = 0;
  BlockArgument ids, positions;
  /// The ops the logits depend on, in block order.
  SmallVector<Operation *> slice;
  SmallVector<AttentionOp> attentions;
};

RankedTensorType Deriver::perToken(Type type) const {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t || t.getRank() < 2 || t.getDimSize(0) != batch ||
      t.getDimSize(1) != seq)
    return {};
  SmallVector<int64_t> shape(t.getShape());
  shape[0] = shape[1] = 1;
  return t.clone(shape);
}

std::optional<Unsupported> Deriver::collect(CrossEntropyOp loss) {
  Value logits = loss.getLogits();
  llvm::SetVector<Operation *> seen;
  SmallVector<Value> work{logits};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      std::optional<StringRef> role = getBatchInputRole(arg);
      bool isParam = forward.getArgAttr(arg.getArgNumber(),
                                        Infir2Dialect::getParamAttrName()) !=
                     nullptr;
      if (role == "input_ids")
        ids = arg;
      else if (role == "positions")
        positions = arg;
      else if (!isParam)
        return Unsupported{forward, ("the logits depend on argument #" +
                                     Twine(arg.getArgNumber()) +
                                     (role ? " (" + *role + ")" : Twine("")) +
                                     ", which a decode step does not have")
                                        .str()};
      continue;
    }
    Operation *op = v.getDefiningOp();
    if (!seen.insert(op))
      continue;
    if (op->getNumRegions() != 0)
      return Unsupported{op, "an op with regions is on the way to the logits"};
    if (auto a = dyn_cast<AttentionOp>(op)) {
      // The segments of packed samples have no meaning for one sequence.
      work.append({a.getQuery(), a.getKey(), a.getValue()});
      continue;
    }
    llvm::append_range(work, op->getOperands());
  }
  for (Operation &op : forward.getBody().front())
    if (seen.contains(&op))
      slice.push_back(&op);
  for (Operation *op : slice) {
    if (auto a = dyn_cast<AttentionOp>(op)) {
      if (!a.getCausal())
        return Unsupported{op, "attention without a causal mask cannot be "
                               "decoded token by token"};
      attentions.push_back(a);
    }
    if (auto r = dyn_cast<RopeOp>(op); r && r.getPositions() != positions)
      return Unsupported{op, "rotary positions that are not the forward's "
                             "positions argument"};
    // A tensor of the batch's tokens must stay one (a row per token).
    bool perTokenIn = llvm::any_of(op->getOperandTypes(), [&](Type t) {
      return isPerBatch(t);
    });
    for (Type t : op->getResultTypes()) {
      if (perTokenIn && !isPerBatch(t))
        return Unsupported{op, "a tensor of the batch's tokens becomes one "
                               "not shaped [batch, seq, ...]"};
      if (!perTokenIn && isPerBatch(t))
        return Unsupported{op, "a tensor shaped [batch, seq, ...] that does "
                               "not come from the tokens"};
    }
  }
  if (!ids)
    return Unsupported{loss, "the logits do not depend on token ids"};
  return std::nullopt;
}

std::optional<Unsupported> Deriver::derive() {
  Block &body = forward.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  auto loss = ret.getNumOperands() == 1
                  ? ret.getOperand(0).getDefiningOp<CrossEntropyOp>()
                  : CrossEntropyOp();
  if (!loss)
    return Unsupported{ret, "the forward does not return the cross_entropy "
                            "of logits"};
  auto logitsType = cast<RankedTensorType>(loss.getLogits().getType());
  if (logitsType.getRank() != 3)
    return Unsupported{loss, "the logits are not shaped [batch, seq, vocab]"};
  batch = logitsType.getDimSize(0);
  seq = logitsType.getDimSize(1);
  int64_t length = maxLength ? maxLength : seq;
  if (std::optional<Unsupported> u = collect(loss))
    return u;

  // The signature: parameters, the token and its position, the caches.
  OpBuilder b(forward.getContext());
  SmallVector<Type> argTypes, resultTypes;
  SmallVector<DictionaryAttr> argAttrs, resultAttrs;
  auto named = [&](StringRef attr, StringRef value) {
    return b.getDictionaryAttr(b.getNamedAttr(attr, b.getStringAttr(value)));
  };
  SmallVector<unsigned> params;
  for (BlockArgument arg : body.getArguments())
    if (forward.getArgAttr(arg.getArgNumber(),
                           Infir2Dialect::getParamAttrName())) {
      params.push_back(arg.getArgNumber());
      argTypes.push_back(arg.getType());
      argAttrs.push_back(forward.getArgAttrDict(arg.getArgNumber()));
    }
  Type idType = perToken(ids.getType());
  Type posType = positions ? perToken(positions.getType())
                           : RankedTensorType::get({1, 1}, b.getI32Type());
  if (!idType || !posType)
    return Unsupported{forward, "the token ids or positions are not shaped "
                                "[batch, seq]"};
  argTypes.append({idType, posType});
  argAttrs.append({named(Infir2Dialect::getDecodeAttrName(), "input_ids"),
                   named(Infir2Dialect::getDecodeAttrName(), "positions")});
  resultTypes.push_back(perToken(logitsType));
  resultAttrs.push_back(named(Infir2Dialect::getDecodeAttrName(), "logits"));
  SmallVector<std::string> cacheNames;
  for (auto [i, a] : llvm::enumerate(attentions))
    for (auto [what, v] : {std::pair<StringRef, Value>{"key", a.getKey()},
                           {"value", a.getValue()}}) {
      auto t = cast<RankedTensorType>(v.getType());
      Type cache = t.clone({1, length, t.getDimSize(2)});
      cacheNames.push_back(("layers." + Twine(i) + "." + what).str());
      argTypes.push_back(cache);
      resultTypes.push_back(cache);
      argAttrs.push_back(
          named(Infir2Dialect::getCacheAttrName(), cacheNames.back()));
      resultAttrs.push_back(argAttrs.back());
    }

  b.setInsertionPointAfter(forward);
  auto step = func::FuncOp::create(b, forward.getLoc(), "decode_step",
                                   b.getFunctionType(argTypes, resultTypes));
  step.setAllArgAttrs(argAttrs);
  step.setAllResultAttrs(resultAttrs);
  Block *entry = step.addEntryBlock();
  b.setInsertionPointToEnd(entry);
  IRMapping map;
  for (auto [i, p] : llvm::enumerate(params))
    map.map(body.getArgument(p), entry->getArgument(i));
  Value newIds = entry->getArgument(params.size()),
        pos = entry->getArgument(params.size() + 1);
  map.map(ids, newIds);
  if (positions)
    map.map(positions, pos);
  unsigned nextCache = params.size() + 2;
  SmallVector<Value> results{Value()};
  for (Operation *op : slice) {
    if (auto a = dyn_cast<AttentionOp>(op)) {
      Location loc = a.getLoc();
      Value kc = entry->getArgument(nextCache++),
            vc = entry->getArgument(nextCache++);
      Value k = CacheWriteOp::create(b, loc, kc.getType(),
                                     map.lookup(a.getKey()), kc, pos);
      Value v = CacheWriteOp::create(b, loc, vc.getType(),
                                     map.lookup(a.getValue()), vc, pos);
      Value q = map.lookup(a.getQuery());
      Value o = CacheAttentionOp::create(
          b, loc, q.getType(), q, k, v, pos, a.getNumHeadsAttr(),
          a.getNumKvHeadsAttr(), a.getHeadDimAttr(), a.getScaleAttr());
      map.map(a.getResult(), o);
      results.append({k, v});
      continue;
    }
    Operation *clone = b.clone(*op, map);
    for (OpResult r : clone->getResults())
      if (RankedTensorType t = perToken(r.getType()))
        r.setType(t);
  }
  results[0] = map.lookup(loss.getLogits());
  func::ReturnOp::create(b, forward.getLoc(), results);
  return std::nullopt;
}

struct DeriveDecodePass
    : public infir2::impl::DeriveDecodePassBase<DeriveDecodePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (module.lookupSymbol("decode_step"))
      return; // derived already, or written by hand
    auto forward = module.lookupSymbol<func::FuncOp>(forwardName);
    if (maxLength < 0) {
      module.emitError() << "max-length must be positive (or 0 for the "
                            "forward's sequence length), got "
                         << maxLength.getValue();
      return signalPassFailure();
    }
    if (!forward || forward.isExternal() ||
        !llvm::hasSingleElement(forward.getBody())) {
      if (ifSupported)
        return;
      module.emitError() << "expects a function '" << forwardName
                         << "' with a body of one block to derive a decode "
                            "step from";
      return signalPassFailure();
    }
    std::optional<Unsupported> u = Deriver(forward, maxLength).derive();
    if (!u || ifSupported)
      return;
    u->at->emitError() << "cannot derive a decode step from @"
                       << forward.getSymName() << ": " << u->why;
    signalPassFailure();
  }
};

} // namespace
