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

LogicalResult Interpreter::adamw(AdamWOp op) {
  const Tensor &p = get(op.getParam()), &g = get(op.getGrad()),
               &m = get(op.getMoment1()), &v = get(op.getMoment2());
  double lr = get(op.getLearningRate()).data[0];
  double t = get(op.getStep()).data[0];
  if (!(t >= 1.0))
    return op.emitOpError() << "step must be at least 1, got " << t;
  double scale = clippedScale(get(op.getGradScale()).data[0],
                              get(op.getGradNorm()).data[0],
                              op.getMaxGradNorm().convertToDouble());
  double b1 = op.getBeta1().convertToDouble(),
         b2 = op.getBeta2().convertToDouble(),
         eps = op.getEpsilon().convertToDouble(),
         wd = op.getWeightDecay().convertToDouble();
  double c1 = 1.0 - std::pow(b1, t), c2 = 1.0 - std::pow(b2, t);
  Tensor np(p.shape), nm(p.shape), nv(p.shape);
  for (int64_t i = 0, n = p.getNumElements(); i < n; ++i) {
    double gi = g.data[i] * scale;
    nm.data[i] = b1 * m.data[i] + (1.0 - b1) * gi;
    nv.data[i] = b2 * v.data[i] + (1.0 - b2) * gi * gi;
    np.data[i] = p.data[i] -
                 lr * (wd * p.data[i] +
                       (nm.data[i] / c1) / (std::sqrt(nv.data[i] / c2) + eps));
  }
  set(op.getNewParam(), std::move(np));
  set(op.getNewMoment1(), std::move(nm));
  set(op.getNewMoment2(), std::move(nv));
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
