//===- MemoryPlan.cpp - State layout and liveness-based arena planning ----===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "infir2/Transforms/MemoryPlan.h"

#include "Arena.h"

#include "infir2/Dialect/FP8/IR/FP8Ops.h"
#include "infir2/Dialect/Infir2/IR/Infir2Attrs.h"
#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"
#include "infir2/Dialect/Runtime/IR/RuntimeDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace infir2;

int64_t infir2::storedBytes(RankedTensorType t) {
  Type e = t.getElementType();
  int64_t bits = e.isIntOrFloat() ? e.getIntOrFloatBitWidth() : 8;
  return t.getNumElements() * std::max<int64_t>(1, bits / 8);
}

int64_t infir2::alignedBytes(int64_t n) {
  return (n + kPlanAlignment - 1) / kPlanAlignment * kPlanAlignment;
}

namespace {

class Planner {
public:
  explicit Planner(ModelPlan &plan) : plan(plan) {}

  LogicalResult planFunction(func::FuncOp fn, StringRef symbol);

private:
  FailureOr<int64_t> slot(Operation *where, StringRef kind, StringRef name,
                          RankedTensorType type, ParamAttr param = {});
  FailureOr<int64_t> argumentSlot(func::FuncOp fn, BlockArgument arg);
  FailureOr<int64_t> resultSlot(func::FuncOp fn, unsigned i);
  MemoryCategory categoryOf(Value v, int64_t def, int64_t last, int64_t lossAt,
                      bool isTrainStep);

  ModelPlan &plan;
  llvm::StringMap<int64_t> slotIndex;
};

FailureOr<int64_t> Planner::slot(Operation *where, StringRef kind,
                                 StringRef name, RankedTensorType type,
                                 ParamAttr param) {
  std::string key = (kind + ":" + name).str();
  auto it = slotIndex.find(key);
  if (it != slotIndex.end()) {
    StateSlot &s = plan.state[it->second];
    if (s.type != type)
      return where->emitError()
             << "state tensor " << kind << " '" << name << "' is " << type
             << " here but " << s.type << " elsewhere";
    if (param)
      s.init = param;
    return it->second;
  }
  StateSlot s;
  s.kind = kind.str();
  s.name = name.str();
  s.type = type;
  s.bytes = storedBytes(type);
  s.offset = plan.stateBytes;
  plan.stateBytes += alignedBytes(s.bytes);
  if (param)
    s.init = param;
  plan.state.push_back(std::move(s));
  slotIndex[key] = plan.state.size() - 1;
  return plan.state.size() - 1;
}

FailureOr<int64_t> Planner::argumentSlot(func::FuncOp fn, BlockArgument arg) {
  unsigned i = arg.getArgNumber();
  auto type = dyn_cast<RankedTensorType>(arg.getType());
  if (!type || !type.hasStaticShape())
    return fn.emitError() << "argument #" << i
                          << " is not a statically shaped tensor";
  if (auto p =
          fn.getArgAttrOfType<ParamAttr>(i, Infir2Dialect::getParamAttrName()))
    return slot(fn, "param", p.getName(), type, p);
  for (auto [attr, kind] : {std::pair<StringRef, StringRef>{
                                Infir2Dialect::getGradOfAttrName(), "grad"},
                            {Infir2Dialect::getMasterOfAttrName(), "master"},
                            {Infir2Dialect::getMoment1OfAttrName(), "moment1"},
                            {Infir2Dialect::getMoment2OfAttrName(), "moment2"},
                            {Infir2Dialect::getInputAttrName(), "input"}})
    if (auto name = fn.getArgAttrOfType<StringAttr>(i, attr))
      return slot(fn, kind, name.getValue(), type);
  if (auto role =
          fn.getArgAttrOfType<StringAttr>(i, Infir2Dialect::getDecodeAttrName()))
    return slot(fn, "input", ("decode." + role.getValue()).str(), type);
  if (auto cache =
          fn.getArgAttrOfType<StringAttr>(i, Infir2Dialect::getCacheAttrName()))
    return slot(fn, "cache", cache.getValue(), type);
  if (auto cache = fn.getArgAttrOfType<StringAttr>(
          i, Infir2Dialect::getFP8CacheAttrName()))
    return slot(fn, "fp8_cache", cache.getValue(), type);
  if (std::optional<StringRef> role = getBatchInputRole(arg))
    return slot(fn, "input", *role, type);
  return fn.emitError() << "argument #" << i << " of @" << fn.getSymName()
                        << " has no role the trainer can fill (not a "
                           "parameter, state tensor, token ids, targets, "
                           "loss mask, positions or segments)";
}

FailureOr<int64_t> Planner::resultSlot(func::FuncOp fn, unsigned i) {
  auto type = dyn_cast<RankedTensorType>(fn.getResultTypes()[i]);
  if (!type || !type.hasStaticShape())
    return fn.emitError() << "result #" << i << " of @" << fn.getSymName()
                          << " is not a statically shaped tensor";
  for (auto [attr, kind] :
       {std::pair<StringRef, StringRef>{Infir2Dialect::getGradOfAttrName(),
                                        "grad"},
        {Infir2Dialect::getMasterOfAttrName(), "master"},
        {Infir2Dialect::getMoment1OfAttrName(), "moment1"},
        {Infir2Dialect::getMoment2OfAttrName(), "moment2"},
        {Infir2Dialect::getWorkingCopyOfAttrName(), "param"}})
    if (auto name = fn.getResultAttrOfType<StringAttr>(i, attr))
      return slot(fn, kind, name.getValue(), type);
  if (auto cache = fn.getResultAttrOfType<StringAttr>(
          i, Infir2Dialect::getCacheAttrName()))
    return slot(fn, "cache", cache.getValue(), type);
  if (auto cache = fn.getResultAttrOfType<StringAttr>(
          i, Infir2Dialect::getFP8CacheAttrName()))
    return slot(fn, "fp8_cache", cache.getValue(), type);
  if (auto role = fn.getResultAttrOfType<StringAttr>(
          i, Infir2Dialect::getDecodeAttrName()))
    return slot(fn, "output", ("decode." + role.getValue()).str(), type);
  // The one scalar result: the loss (@train_step, @forward), or the global
  // gradient norm (@optimizer_step), which the trainer logs.
  if (type.getRank() == 0) {
    StringRef name = fn.getSymName() == "forward"          ? "eval_loss"
                     : fn.getSymName() == "optimizer_step" ? "grad_norm"
                                                           : "loss";
    return slot(fn, "output", name, type);
  }
  return fn.emitError() << "result #" << i << " of @" << fn.getSymName()
                        << " has no state slot to go to";
}

MemoryCategory Planner::categoryOf(Value v, int64_t def, int64_t last, int64_t lossAt,
                             bool isTrainStep) {
  auto type = cast<RankedTensorType>(v.getType());
  if (Operation *op = v.getDefiningOp();
      op && op->hasAttr(Infir2Dialect::getRecomputeAttrName()))
    return MemoryCategory::Recomputed;
  if (isa<Float8E4M3FNType, Float8E5M2Type, Float8E8M0FNUType>(
          type.getElementType()) ||
      isa_and_nonnull<fp8::QuantizeOp, fp8::QuantizeDualOp>(v.getDefiningOp()))
    return MemoryCategory::FP8;
  if (isTrainStep && def < lossAt && last > lossAt)
    return MemoryCategory::SavedActivations;
  return MemoryCategory::Workspace;
}

/// Whether `op` reads element i of `operand` before it writes element i of
/// `result`, so that the two may share a buffer: the optimizer updates
/// (every operand and result of one shape), add / mul with an operand of
/// the result's shape (not the broadcast one), a norm gradient's residual,
/// and a GEMM's accumulator (each result element is its own accumulator
/// element plus a product of other operands).
static bool readsBeforeWriting(Operation *op, Value operand, Value result) {
  if (isa<AdamWOp, SGDOp>(op))
    return true;
  // The group updates tensor i from the i-th parameter, gradient and
  // moments only.
  if (auto group = dyn_cast<AdamWGroupOp>(op)) {
    auto indexIn = [](ValueRange values, Value v) -> int64_t {
      auto it = llvm::find(values, v);
      return it == values.end() ? -1 : it - values.begin();
    };
    int64_t in = -1, out = -1;
    for (ValueRange values :
         {ValueRange(group.getParams()), ValueRange(group.getGrads()),
          ValueRange(group.getMoments1()), ValueRange(group.getMoments2())})
      if (in < 0)
        in = indexIn(values, operand);
    for (ValueRange values : {ValueRange(group.getNewParams()),
                              ValueRange(group.getNewMoments1()),
                              ValueRange(group.getNewMoments2())})
      if (out < 0)
        out = indexIn(values, result);
    return in >= 0 && in == out;
  }
  if (isa<AddOp, MulOp>(op))
    return operand.getType() == result.getType();
  // A norm's gradient adds into its residual (read nowhere else).
  if (auto norm = dyn_cast<RMSNormGradOp>(op);
      norm && operand == norm.getResidual() && result == norm.getInputGrad())
    return llvm::count(op->getOperands(), operand) == 1;
  return addsInPlace(op, operand, result);
}

/// Whether result `v` of a step may be written straight into its state slot
/// at `offset` instead of the arena and then copied there: no argument of
/// the step in that slot is read after the op that makes `v`, nor by that op
/// unless it reads each element before writing it (the optimizer updates
/// the masters and moments in place, the accumulators add in place).
static bool writesIntoSlot(Block &entry, Value v, int64_t offset,
                           const FunctionPlan &fp,
                           const DenseMap<Value, int64_t> &defAt,
                           const DenseMap<Value, int64_t> &lastUse) {
  auto def = defAt.find(v);
  if (isa<BlockArgument>(v) || def == defAt.end())
    return false;
  for (BlockArgument arg : entry.getArguments()) {
    const Buffer &b = fp.buffers.lookup(arg);
    if (b.scratch || b.offset != offset)
      continue;
    auto last = lastUse.find(arg);
    if (last == lastUse.end() || last->second < def->second)
      continue;
    if (last->second > def->second ||
        !llvm::is_contained(v.getDefiningOp()->getOperands(), arg) ||
        !readsBeforeWriting(v.getDefiningOp(), arg, v))
      return false;
  }
  return true;
}

LogicalResult Planner::planFunction(func::FuncOp fn, StringRef symbol) {
  FunctionPlan fp;
  fp.symbol = symbol.str();
  fp.fn = fn;
  if (!llvm::hasSingleElement(fn.getBody()))
    return fn.emitError() << "expects @" << fn.getSymName()
                          << " to have a body of one block";
  Block &entry = fn.getBody().front();
  for (BlockArgument arg : entry.getArguments()) {
    FailureOr<int64_t> s = argumentSlot(fn, arg);
    if (failed(s))
      return failure();
    fp.buffers[arg] = {false, plan.state[*s].offset};
  }

  DenseMap<Value, View> alias;
  scheduleBlock(entry, fp.schedule, alias);
  for (Operation *op : fp.schedule)
    if (isa<ConcatOp>(op) && !concatIsPlaced(op, alias))
      return op->emitOpError()
             << "has an input it cannot hold in place (a function argument, "
                "a view of another tensor, or a value read elsewhere or "
                "twice): the runtime has no concatenation to copy it";
  // A gradient accumulator that only the ops adding into it read, whose last
  // sum goes back to its own slot, is added into where it lies: every link
  // of the chain (a tied embedding's two gradients) shares its buffer, and
  // no copy follows.
  for (BlockArgument arg : entry.getArguments()) {
    SmallVector<Value> links;
    Value v = arg;
    while (v.hasOneUse()) {
      auto acc = dyn_cast<AccumulatingOpInterface>(*v.user_begin());
      if (!acc || !addsInPlace(acc, v, acc.getAccumulatedResult()))
        break;
      v = acc.getAccumulatedResult();
      links.push_back(v);
    }
    if (links.empty() || !v.hasOneUse() ||
        !isa<func::ReturnOp>(*v.user_begin()))
      continue;
    FailureOr<int64_t> out = resultSlot(fn, v.use_begin()->getOperandNumber());
    FailureOr<int64_t> in = argumentSlot(fn, arg);
    if (succeeded(out) && succeeded(in) && *out == *in)
      for (Value link : links)
        alias[link] = {arg};
  }
  // The value whose buffer `v` lies in, and where in it.
  auto resolve = [&](Value v) {
    int64_t offset = 0;
    for (auto it = alias.find(v); it != alias.end(); it = alias.find(v)) {
      offset += it->second.offset;
      v = it->second.base;
    }
    return std::make_pair(v, offset);
  };
  auto root = [&](Value v) { return resolve(v).first; };

  // Liveness: the last schedule position reading each root buffer. Ops
  // the lowering runs as one call read their operands until the call's
  // last op.
  int64_t end = fp.schedule.size();
  SmallVector<int64_t> callEnd(end);
  for (int64_t i = end - 1; i >= 0; --i)
    callEnd[i] =
        i + 1 < end && runsAsOneCall(fp.schedule[i], fp.schedule[i + 1])
            ? callEnd[i + 1]
            : i;
  DenseMap<Value, int64_t> defAt, lastUse;
  int64_t lossAt = end;
  for (auto [i, op] : llvm::enumerate(fp.schedule)) {
    if (isa<CrossEntropyOp>(op) && lossAt == end)
      lossAt = i;
    for (Value v : op->getOperands())
      lastUse[root(v)] = callEnd[i];
    for (Value r : op->getResults())
      if (root(r) == r) {
        defAt[r] = i;
        lastUse.try_emplace(r, i);
      }
  }
  auto ret = cast<func::ReturnOp>(entry.getTerminator());
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    FailureOr<int64_t> s = resultSlot(fn, i);
    if (failed(s))
      return failure();
    fp.copyOut.push_back({root(v), *s});
    lastUse[root(v)] = end;
  }
  // Once every returned value's last use is the end (an argument returned
  // as it is is read then), the results that may go straight into their
  // slots.
  // Only a whole buffer (not a slice's view of one) whose writes all happen
  // at its op (not a concat's, whose inputs are made in it before) may.
  DenseMap<Value, int64_t> inPlace; // result -> its state slot's offset
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    auto [base, offset] = resolve(v);
    int64_t slot = fp.copyOut[i].second;
    if (!inPlace.count(base) && offset == 0 &&
        storedBytes(cast<RankedTensorType>(base.getType())) ==
            plan.state[slot].bytes &&
        !base.getDefiningOp<ConcatOp>() &&
        writesIntoSlot(entry, base, plan.state[slot].offset, fp, defAt,
                       lastUse))
      inPlace[base] = plan.state[slot].offset;
  }
  // Allocation in schedule order; a buffer is released after its last
  // reader, never before the op that writes its successor runs.
  Arena arena;
  DenseMap<int64_t, SmallVector<Value>> releaseAfter;
  for (auto &[v, last] : lastUse)
    if (!isa<BlockArgument>(v))
      releaseAfter[last].push_back(v);
  std::array<int64_t, kNumMemoryCategories> live{};
  int64_t liveTotal = 0, peak = -1;
  bool isTrainStep = fn.getSymName() == "train_step";
  DenseMap<Value, MemoryCategory> category;
  DenseMap<Value, int64_t> allocatedAt;
  for (auto [i, op] : llvm::enumerate(fp.schedule)) {
    for (Value result : op->getResults()) {
      // A buffer is placed when the first value lying in it is made: a
      // concat's result before its inputs.
      Value r = root(result);
      if (fp.buffers.count(r))
        continue;
      auto type = dyn_cast<RankedTensorType>(r.getType());
      if (!type || !type.hasStaticShape())
        return op->emitError() << "result is not a statically shaped tensor";
      int64_t bytes = storedBytes(type);
      if (auto it = inPlace.find(r); it != inPlace.end()) {
        fp.buffers[r] = {false, it->second}; // state: no scratch, no copy
        continue;
      }
      fp.buffers[r] = {true, arena.allocate(bytes)};
      allocatedAt[r] = i;
      MemoryCategory c = categoryOf(r, i, lastUse[r], lossAt, isTrainStep);
      category[r] = c;
      live[static_cast<int>(c)] += alignedBytes(bytes);
      liveTotal += alignedBytes(bytes);
    }
    fp.timeline.push_back(live);
    if (liveTotal > peak) {
      peak = liveTotal;
      fp.peakByCategory = live;
      fp.peakAt = i;
    }
    if (int64_t(i) == lossAt)
      fp.atBackwardStart = live;
    auto it = releaseAfter.find(i);
    if (it == releaseAfter.end())
      continue;
    for (Value v : it->second) {
      if (inPlace.count(v))
        continue;
      int64_t bytes = storedBytes(cast<RankedTensorType>(v.getType()));
      arena.release(fp.buffers[v].offset, bytes);
      live[static_cast<int>(category[v])] -= alignedBytes(bytes);
      liveTotal -= alignedBytes(bytes);
    }
  }
  // In schedule order (then the stable sort by size): the same list on
  // every run.
  for (Operation *op : fp.schedule)
    for (Value v : op->getResults()) {
      auto c = category.find(v);
      if (c != category.end() && allocatedAt[v] <= fp.peakAt &&
          lastUse[v] >= fp.peakAt)
        fp.atPeak.push_back(
            {v, alignedBytes(storedBytes(cast<RankedTensorType>(v.getType()))),
             c->second});
    }
  llvm::stable_sort(fp.atPeak, [](const auto &a, const auto &b) {
    return a.bytes > b.bytes;
  });
  fp.lossAt = lossAt < end ? lossAt : -1;
  // Aliases lie in their root's buffer. The root's entry is copied before
  // the alias's is made: `buffers[r] = buffers[root]` reads through a
  // reference that inserting `r` can free (the map grows).
  for (auto &entry : alias) {
    auto [base, offset] = resolve(entry.first);
    Buffer b = fp.buffers[base];
    b.offset += offset;
    fp.buffers[entry.first] = b;
  }
  fp.scratchBytes = arena.size();
  plan.scratchBytes = std::max(plan.scratchBytes, fp.scratchBytes);
  plan.functions.push_back(std::move(fp));
  return success();
}

} // namespace

FailureOr<ModelPlan> infir2::planModel(ModuleOp module) {
  ModelPlan plan;
  Planner planner(plan);
  auto train = module.lookupSymbol<func::FuncOp>("train_step");
  auto opt = module.lookupSymbol<func::FuncOp>("optimizer_step");
  if (!train || !opt)
    return module.emitError()
           << "expects @train_step and @optimizer_step (run a recipe "
              "pipeline, e.g. --fp8-recipe or --bf16-recipe, first)";
  // The trainer calls the steps by these symbols (train, optimizer, eval,
  // decode, the FP8 weight cache's fill).
  ArrayRef<StringRef> symbols = rtir::RuntimeDialect::getStepSymbols();
  if (failed(planner.planFunction(train, symbols[0])) ||
      failed(planner.planFunction(opt, symbols[1])))
    return failure();
  if (auto fwd = module.lookupSymbol<func::FuncOp>("forward"))
    if (failed(planner.planFunction(fwd, symbols[2])))
      return failure();
  if (auto decode = module.lookupSymbol<func::FuncOp>("decode_step"))
    if (failed(planner.planFunction(decode, symbols[3])))
      return failure();
  if (auto cache = module.lookupSymbol<func::FuncOp>("quantize_weights"))
    if (failed(planner.planFunction(cache, symbols[4])))
      return failure();
  // The batch geometry, from the token ids and the logits.
  for (const StateSlot &s : plan.state)
    if (s.kind == "input" && s.name == "input_ids" && s.type.getRank() == 2) {
      plan.batch = s.type.getDimSize(0);
      plan.seqLen = s.type.getDimSize(1);
    }
  // The whole vocabulary, when the logits are a tensor-parallel rank's
  // columns of it.
  train.walk([&](CrossEntropyOp ce) {
    plan.vocab =
        cast<RankedTensorType>(ce.getLogits().getType()).getShape().back() *
        int64_t(ce.getVocabShards());
  });
  opt.walk([&](ReduceScatterOp r) { plan.zero1WorldSize = r.getWorldSize(); });
  if (!plan.batch || !plan.vocab)
    return train.emitError() << "expects token ids of shape [batch, seq] and "
                                "a cross_entropy loss";
  return plan;
}
