//===- TensorParallel.cpp - infir2-run over a tensor-parallel group -------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "TensorParallel.h"

#include "infir2/Dialect/Infir2/IR/Infir2Attrs.h"
#include "infir2/Dialect/Infir2/IR/Infir2Dialect.h"

using namespace mlir;
using infir2::Infir2Dialect;
using infir2::interp::Tensor;

int64_t infir2::run::tensorParallelSize(ModuleOp module) {
  auto size = module->getAttrOfType<IntegerAttr>(
      Infir2Dialect::getTensorParallelAttrName());
  return size ? size.getInt() : 1;
}

std::optional<int64_t> infir2::run::shardDimOf(func::FuncOp fn, unsigned index,
                                               bool isResult) {
  StringAttr owner;
  MLIRContext *ctx = fn.getContext();
  if (!isResult) {
    if (auto dim = fn.getArgAttrOfType<IntegerAttr>(
            index, Infir2Dialect::getTPShardAttrName()))
      return dim.getInt();
    // A parameter taken by another function (the FP8 weight cache's).
    if (auto param = fn.getArgAttrOfType<infir2::ParamAttr>(
            index, Infir2Dialect::getParamAttrName()))
      owner = StringAttr::get(ctx, param.getName());
  }
  // An FP8 weight cache's codes or scales ("<param>[.t]:data|scale"): the
  // parameter's split, the other dimension for its transposed copy.
  bool transposed = false;
  if (isResult)
    if (auto cache = fn.getResultAttrOfType<StringAttr>(
            index, Infir2Dialect::getFP8CacheAttrName())) {
      StringRef name = cache.getValue().rsplit(':').first;
      transposed = name.consume_back(".t");
      owner = StringAttr::get(ctx, name);
    }
  for (StringRef attr : {Infir2Dialect::getGradOfAttrName(),
                         Infir2Dialect::getMasterOfAttrName(),
                         Infir2Dialect::getMoment1OfAttrName(),
                         Infir2Dialect::getMoment2OfAttrName(),
                         Infir2Dialect::getWorkingCopyOfAttrName()})
    if (auto name = isResult ? fn.getResultAttrOfType<StringAttr>(index, attr)
                             : fn.getArgAttrOfType<StringAttr>(index, attr))
      owner = name;
  if (!owner)
    return std::nullopt;
  // The parameter, in whichever function of the module takes it (the
  // optimizer step takes its masters, not the parameters).
  auto module = fn->getParentOfType<ModuleOp>();
  for (auto other : module.getOps<func::FuncOp>())
    for (unsigned i = 0, e = other.getNumArguments(); i < e; ++i) {
      auto param = other.getArgAttrOfType<ParamAttr>(
          i, Infir2Dialect::getParamAttrName());
      if (param && param.getName() == owner.getValue())
        if (auto dim = other.getArgAttrOfType<IntegerAttr>(
                i, Infir2Dialect::getTPShardAttrName()))
          return transposed ? 1 - dim.getInt() : dim.getInt();
    }
  return std::nullopt;
}

RankedTensorType infir2::run::wholeArgType(func::FuncOp fn, unsigned index,
                                           int64_t size) {
  auto type = cast<RankedTensorType>(fn.getArgumentTypes()[index]);
  std::optional<int64_t> dim = shardDimOf(fn, index, /*isResult=*/false);
  if (!dim)
    return type;
  SmallVector<int64_t> shape(type.getShape());
  shape[*dim] *= size;
  return type.clone(shape);
}

/// Elements of `shape` before dimension `dim` (outer), and from it on
/// (inner), in row-major order.
static std::pair<int64_t, int64_t> split(ArrayRef<int64_t> shape, int64_t dim) {
  int64_t outer = 1, inner = 1;
  for (auto [i, d] : llvm::enumerate(shape))
    (int64_t(i) < dim ? outer : inner) *= d;
  return {outer, inner};
}

SmallVector<SmallVector<Tensor>>
infir2::run::sliceForRanks(func::FuncOp fn, ArrayRef<Tensor> whole,
                           int64_t size) {
  SmallVector<SmallVector<Tensor>> ranks(size);
  for (auto [i, t] : llvm::enumerate(whole)) {
    std::optional<int64_t> dim = shardDimOf(fn, i, /*isResult=*/false);
    for (auto [r, inputs] : llvm::enumerate(ranks)) {
      if (!dim) {
        inputs.push_back(t);
        continue;
      }
      SmallVector<int64_t> shape(t.shape);
      shape[*dim] /= size;
      Tensor slice(shape);
      auto [outer, inner] = split(t.shape, *dim);
      int64_t part = inner / size;
      for (int64_t o = 0; o < outer; ++o)
        std::copy_n(t.data.begin() + o * inner + int64_t(r) * part, part,
                    slice.data.begin() + o * part);
      inputs.push_back(std::move(slice));
    }
  }
  return ranks;
}

FailureOr<SmallVector<Tensor>>
infir2::run::gatherRanks(func::FuncOp fn, ArrayRef<SmallVector<Tensor>> ranks) {
  SmallVector<Tensor> results;
  int64_t size = ranks.size();
  for (unsigned i = 0, e = ranks.front().size(); i < e; ++i) {
    std::optional<int64_t> dim = shardDimOf(fn, i, /*isResult=*/true);
    if (!dim) {
      for (int64_t r = 1; r < size; ++r)
        if (ranks[r][i].data != ranks[0][i].data)
          return fn.emitError()
                 << "result #" << i << " should be the same on every rank, "
                 << "but rank " << r << "'s differs from rank 0's";
      results.push_back(ranks[0][i]);
      continue;
    }
    SmallVector<int64_t> shape(ranks[0][i].shape);
    shape[*dim] *= size;
    Tensor t(shape);
    auto [outer, inner] = split(shape, *dim);
    int64_t part = inner / size;
    for (int64_t r = 0; r < size; ++r)
      for (int64_t o = 0; o < outer; ++o)
        std::copy_n(ranks[r][i].data.begin() + o * part, part,
                    t.data.begin() + o * inner + r * part);
    results.push_back(std::move(t));
  }
  return results;
}
