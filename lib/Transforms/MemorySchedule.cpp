//===- MemorySchedule.cpp - The order of a step's ops and shared buffers --===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The schedule the planner lays the arena out for and the lowering emits
// calls in (fused bodies inlined), and the values that share a buffer with
// another: views, fused results, caches and sums updated in place.
//
//===----------------------------------------------------------------------===//

#include "infir2/Transforms/MemoryPlan.h"

#include "infir2/Dialect/FP8/IR/FP8Ops.h"
#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"

using namespace mlir;
using namespace infir2;

bool infir2::addsInPlace(Operation *op, Value operand, Value result) {
  auto acc = dyn_cast<AccumulatingOpInterface>(op);
  return acc && operand == acc.getAccumulator() &&
         result == acc.getAccumulatedResult() &&
         llvm::count(op->getOperands(), operand) == 1;
}

bool infir2::runsAsOneCall(Operation *op, Operation *next) {
  if (op->getName() != next->getName() ||
      op->getPropertiesAsAttribute() != next->getPropertiesAsAttribute())
    return false;
  if (auto q = dyn_cast<fp8::QuantizeDualOp>(op))
    return cast<ShapedType>(q.getInput().getType()).getRank() ==
           cast<ShapedType>(
               cast<fp8::QuantizeDualOp>(next).getInput().getType())
               .getRank();
  if (auto sum = dyn_cast<ReduceSumOp>(op))
    return !sum.getAcc() == !cast<ReduceSumOp>(next).getAcc();
  return false;
}

/// Bytes of one row along the leading dimension of `v`'s stored tensor.
static int64_t rowBytes(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  return type.getDimSize(0) ? storedBytes(type) / type.getDimSize(0) : 0;
}

/// Whether `v`, an input of a concat, can lie inside the concat's result:
/// made by an op of the schedule into a buffer of its own, read by the
/// concat alone, once.
static bool placeable(Value v, const DenseMap<Value, View> &alias) {
  return isa<OpResult>(v) && !alias.count(v) && v.hasOneUse();
}

bool infir2::concatIsPlaced(Operation *op, const DenseMap<Value, View> &alias) {
  auto concat = cast<ConcatOp>(op);
  return llvm::all_of(concat.getInputs(), [&](Value v) {
    auto it = alias.find(v);
    return it != alias.end() && it->second.base == concat.getResult();
  });
}

/// Appends `op` to the schedule, with fused bodies inlined.
static void scheduleOp(Operation *op, SmallVectorImpl<Operation *> &out,
                       DenseMap<Value, View> &alias) {
  if (auto fused = dyn_cast<fp8::FusedOp>(op)) {
    Block &body = fused.getBody().front();
    for (Operation &inner : body.without_terminator())
      scheduleOp(&inner, out, alias);
    for (auto [r, v] : llvm::zip_equal(fused.getResults(),
                                       body.getTerminator()->getOperands()))
      alias[r] = {v};
    return;
  }
  if (auto reshape = dyn_cast<ReshapeOp>(op))
    alias[reshape.getResult()] = {reshape.getInput()};
  // Entering a tensor-parallel region reads the tensor where it lies.
  if (auto copy = dyn_cast<TPCopyOp>(op))
    alias[copy.getResult()] = {copy.getInput()};
  if (auto slice = dyn_cast<SliceOp>(op))
    alias[slice.getResult()] = {slice.getInput(),
                                int64_t(slice.getStart()) *
                                    rowBytes(slice.getInput())};
  // Each input where its rows lie in the result, when all of them can be.
  if (auto concat = dyn_cast<ConcatOp>(op);
      concat && llvm::all_of(concat.getInputs(),
                             [&](Value v) { return placeable(v, alias); })) {
    int64_t offset = 0;
    for (Value v : concat.getInputs()) {
      alias[v] = {concat.getResult(), offset};
      offset += storedBytes(cast<RankedTensorType>(v.getType()));
    }
  }
  // A cache the step takes and updates once is updated in place: the state
  // slot of the argument is the state slot of the result.
  if (auto write = dyn_cast<CacheWriteOp>(op);
      write && isa<BlockArgument>(write.getCache()) &&
      write.getCache().hasOneUse())
    alias[write.getResult()] = {write.getCache()};
  // A sum over the ranks is taken in place: each gradient accumulator the
  // all-reduce alone reads holds its sum afterwards (one rank: no copy at
  // all), instead of a copy of every gradient in the arena.
  if (auto reduce = dyn_cast<AllReduceOp>(op))
    for (auto [in, sum] :
         llvm::zip_equal(reduce->getOperands(), reduce->getResults()))
      if (isa<BlockArgument>(in) && in.hasOneUse() &&
          llvm::none_of(sum.getUsers(), [](Operation *user) {
            return user->hasTrait<OpTrait::IsTerminator>();
          }))
        alias[sum] = {in};
  out.push_back(op);
}

void infir2::scheduleBlock(Block &block, SmallVectorImpl<Operation *> &schedule,
                           DenseMap<Value, View> &alias) {
  for (Operation &op : block.without_terminator())
    scheduleOp(&op, schedule, alias);
}
