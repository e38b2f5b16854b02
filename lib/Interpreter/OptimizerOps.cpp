//===- OptimizerOps.cpp - Interpreter rules of optimizer ops ----*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The FP64 rules of the optimizer-step ops of the infir2 dialect
// (Infir2OptimizerOps.td): the interpreter is a single rank, so the
// collectives copy their operands.
//
//===----------------------------------------------------------------------===//

#include "InterpreterImpl.h"

#include <cmath>

using namespace mlir;
using namespace infir2;
using namespace infir2::interp;
using namespace infir2::interp::detail;

/// ZeRO-1's collectives, run by the one rank the interpreter is: with a
/// world size of 1 the shard is the whole tensor.
template <typename CollectiveOp>
LogicalResult Interpreter::oneRankShards(CollectiveOp op) {
  if (op.getWorldSize() != 1)
    return op.emitOpError()
           << "shards over " << op.getWorldSize()
           << " ranks; the reference interpreter runs one (compile with "
              "world-size=1 to interpret ZeRO-1 steps)";
  for (auto [in, out] : llvm::zip_equal(op.getInputs(), op.getResults()))
    set(out, get(in));
  return success();
}

template LogicalResult Interpreter::oneRankShards(ReduceScatterOp op);
template LogicalResult Interpreter::oneRankShards(AllGatherOp op);

LogicalResult Interpreter::globalNorm(GlobalNormOp op) {
  if (op.getTpShards() > 0) // runRanks sums the shards' squares
    return op.emitOpError() << "sums its first " << op.getTpShards()
                            << " gradients' squares over the tensor-parallel "
                               "ranks: interpret the function with runRanks";
  double scale = get(op.getScale()).data[0], ss = 0.0;
  for (Value g : op.getGrads())
    for (double x : get(g).data)
      ss += (scale * x) * (scale * x);
  set(op.getNorm(), Tensor({}, std::sqrt(ss)));
  return success();
}

/// grad_scale times the global-norm clipping coefficient.
double Interpreter::clippedScale(double gradScale, double norm,
                                 double maxGradNorm) {
  if (maxGradNorm <= 0.0)
    return gradScale;
  return gradScale * std::min(1.0, maxGradNorm / (norm + 1e-6));
}

void AdamWRule::apply(const Tensor &p, const Tensor &g, const Tensor &m,
                      const Tensor &v, double wd, Tensor &np, Tensor &nm,
                      Tensor &nv) const {
  np = Tensor(p.shape), nm = Tensor(p.shape), nv = Tensor(p.shape);
  for (int64_t i = 0, n = p.getNumElements(); i < n; ++i) {
    double gi = g.data[i] * scale;
    nm.data[i] = b1 * m.data[i] + (1.0 - b1) * gi;
    nv.data[i] = b2 * v.data[i] + (1.0 - b2) * gi * gi;
    np.data[i] = p.data[i] -
                 lr * (wd * p.data[i] +
                       (nm.data[i] / c1) / (std::sqrt(nv.data[i] / c2) + eps));
  }
}

/// The rule of an adamw or adamw_group op (the same scalar operands and
/// hyperparameters), or an error at `op` for a step below 1.
template <typename UpdateOp>
FailureOr<AdamWRule> Interpreter::adamwRule(UpdateOp op) {
  double t = get(op.getStep()).data[0];
  if (!(t >= 1.0))
    return op.emitOpError() << "step must be at least 1, got " << t;
  double b1 = op.getBeta1().convertToDouble(),
         b2 = op.getBeta2().convertToDouble();
  return AdamWRule{get(op.getLearningRate()).data[0],
                   clippedScale(get(op.getGradScale()).data[0],
                                get(op.getGradNorm()).data[0],
                                op.getMaxGradNorm().convertToDouble()),
                   b1,
                   b2,
                   op.getEpsilon().convertToDouble(),
                   1.0 - std::pow(b1, t),
                   1.0 - std::pow(b2, t)};
}

LogicalResult Interpreter::adamw(AdamWOp op) {
  FailureOr<AdamWRule> rule = adamwRule(op);
  if (failed(rule))
    return failure();
  Tensor np, nm, nv;
  rule->apply(get(op.getParam()), get(op.getGrad()), get(op.getMoment1()),
              get(op.getMoment2()), op.getWeightDecay().convertToDouble(), np,
              nm, nv);
  set(op.getNewParam(), std::move(np));
  set(op.getNewMoment1(), std::move(nm));
  set(op.getNewMoment2(), std::move(nv));
  return success();
}

LogicalResult Interpreter::adamwGroup(AdamWGroupOp op) {
  FailureOr<AdamWRule> rule = adamwRule(op);
  if (failed(rule))
    return failure();
  ArrayRef<int64_t> working = op.getWorking();
  for (size_t i = 0, n = op.getParams().size(); i < n; ++i) {
    Tensor np, nm, nv;
    rule->apply(get(op.getParams()[i]), get(op.getGrads()[i]),
                get(op.getMoments1()[i]), get(op.getMoments2()[i]),
                op.getWeightDecays()[i], np, nm, nv);
    // The working copy is the updated master, rounded to its type (as
    // infir2.convert of the FP32 result).
    const auto *k = llvm::find(working, int64_t(i));
    set(op.getNewParams()[i], std::move(np));
    if (k != working.end())
      set(op.getWorkingCopies()[k - working.begin()],
          get(op.getNewParams()[i]));
    set(op.getNewMoments1()[i], std::move(nm));
    set(op.getNewMoments2()[i], std::move(nv));
  }
  return success();
}

LogicalResult Interpreter::sgd(SGDOp op) {
  const Tensor &p = get(op.getParam()), &g = get(op.getGrad());
  double lr = get(op.getLearningRate()).data[0];
  double scale = clippedScale(get(op.getGradScale()).data[0],
                              get(op.getGradNorm()).data[0],
                              op.getMaxGradNorm().convertToDouble());
  double wd = op.getWeightDecay().convertToDouble();
  Tensor np(p.shape);
  for (int64_t i = 0, n = p.getNumElements(); i < n; ++i)
    np.data[i] = p.data[i] - lr * (g.data[i] * scale + wd * p.data[i]);
  set(op.getNewParam(), std::move(np));
  return success();
}
