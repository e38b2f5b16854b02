//===- GradientOps.cpp - Interpreter rules of infir2 *_grad ops -*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The FP64 rules of the gradient ops of the infir2 dialect
// (Infir2GradientOps.td) and of reduce_sum; silu_grad and swiglu_grad are
// in the dispatch.
//
//===----------------------------------------------------------------------===//

#include "InterpreterImpl.h"

#include <cmath>

using namespace mlir;
using namespace infir2;
using namespace infir2::interp;
using namespace infir2::interp::detail;

LogicalResult Interpreter::ropeGrad(RopeGradOp op) {
  set(op.getInputGrad(),
      rotate(get(op.getResultGrad()), get(op.getPositions()), op.getHeadDim(),
             op.getTheta().convertToDouble(), -1.0));
  return success();
}

LogicalResult Interpreter::rmsNormGrad(RMSNormGradOp op) {
  const Tensor &x = get(op.getInput()), &w = get(op.getWeight()),
               &dy = get(op.getResultGrad());
  int64_t d = x.shape.back(), rows = x.getNumElements() / d;
  double eps = op.getEpsilon().convertToDouble();
  // With an accumulator, the weight's gradient adds into it; with a
  // residual, the input's gradient.
  Tensor dx = op.getResidual() ? get(op.getResidual()) : Tensor(x.shape),
         dw = op.getAcc() ? get(op.getAcc()) : Tensor(w.shape);
  for (int64_t r = 0; r < rows; ++r) {
    const double *xr = x.data.data() + r * d, *gr = dy.data.data() + r * d;
    double ss = 0.0, dot = 0.0;
    for (int64_t i = 0; i < d; ++i) {
      ss += xr[i] * xr[i];
      dot += w.data[i] * gr[i] * xr[i];
    }
    double inv = 1.0 / std::sqrt(ss / d + eps);
    for (int64_t i = 0; i < d; ++i) {
      dw.data[i] += gr[i] * xr[i] * inv;
      dx.data[r * d + i] +=
          inv * w.data[i] * gr[i] - inv * inv * inv / d * xr[i] * dot;
    }
  }
  set(op.getInputGrad(), std::move(dx));
  set(op.getWeightGrad(), std::move(dw));
  return success();
}

LogicalResult Interpreter::attentionGrad(AttentionGradOp op) {
  const Tensor &q = get(op.getQuery()), &k = get(op.getKey()),
               &v = get(op.getValue()), &dout = get(op.getResultGrad());
  AttentionRows a = AttentionRows::of(
      op, q, k, op.getSegments() ? &get(op.getSegments()) : nullptr);
  Tensor dq(q.shape), dk(k.shape), dv(v.shape);
  std::vector<double> p(a.skv), dp(a.skv);
  for (int64_t b = 0; b < a.batch; ++b)
    for (int64_t h = 0; h < a.heads; ++h)
      for (int64_t s = 0; s < a.sq; ++s) {
        // Recompute the probabilities, then dP = dO·Vᵀ and
        // dS = P ⊙ (dP − Σ P·dP).
        int64_t visible = a.probabilities(q, k, b, h, s, p);
        int64_t kh = h / a.group;
        const double *qv = a.row(q, b, s, h, true);
        const double *go = a.row(dout, b, s, h, true);
        double pdp = 0.0;
        for (int64_t t = 0; t < visible; ++t) {
          const double *vv = a.row(v, b, t, kh, false);
          double dot = 0.0;
          for (int64_t i = 0; i < a.hd; ++i)
            dot += go[i] * vv[i];
          dp[t] = dot;
          pdp += p[t] * dot;
        }
        double *dqv = dq.data.data() + (b * a.sq + s) * a.qw + h * a.hd;
        for (int64_t t = 0; t < visible; ++t) {
          double ds = p[t] * (dp[t] - pdp) * a.scale;
          const double *kv = a.row(k, b, t, kh, false);
          int64_t kvOffset = (b * a.skv + t) * a.kw + kh * a.hd;
          for (int64_t i = 0; i < a.hd; ++i) {
            dqv[i] += ds * kv[i];
            dk.data[kvOffset + i] += ds * qv[i];
            dv.data[kvOffset + i] += p[t] * go[i];
          }
        }
      }
  set(op.getQueryGrad(), std::move(dq));
  set(op.getKeyGrad(), std::move(dk));
  set(op.getValueGrad(), std::move(dv));
  return success();
}

LogicalResult Interpreter::crossEntropyGrad(CrossEntropyGradOp op) {
  const Tensor &logits = get(op.getLogits()), &targets = get(op.getTargets());
  if (failed(wholeLogits(op, logits)))
    return failure();
  const Tensor *mask = op.getLossMask() ? &get(op.getLossMask()) : nullptr;
  double dloss = get(op.getLossGrad()).data[0];
  int64_t vocab = logits.shape.back(), tokens = targets.getNumElements();
  double total = 0.0;
  for (int64_t t = 0; t < tokens; ++t)
    total += tokenWeight(op, targets, mask, t);
  if (op.getDivisor())
    total = get(op.getDivisor()).data[0];
  Tensor out(logits.shape);
  for (int64_t t = 0; t < tokens && total != 0.0; ++t) {
    double w = tokenWeight(op, targets, mask, t);
    if (w == 0.0)
      continue;
    if (failed(checkIndex(op, "target", targets.data[t], t, vocab)))
      return failure();
    const double *row = logits.data.data() + t * vocab;
    double lse = logSumExp(row, vocab), coeff = dloss * w / total;
    int64_t target = static_cast<int64_t>(targets.data[t]);
    for (int64_t i = 0; i < vocab; ++i)
      out.data[t * vocab + i] =
          coeff * (std::exp(row[i] - lse) - (i == target ? 1.0 : 0.0));
  }
  set(op.getLogitsGrad(), std::move(out));
  return success();
}

LogicalResult Interpreter::embeddingGrad(EmbeddingGradOp op) {
  const Tensor &ids = get(op.getIds()), &dy = get(op.getResultGrad());
  Tensor out =
      op.getAcc() ? get(op.getAcc()) : Tensor(shapeOf(op.getTableGrad()));
  int64_t vocab = out.shape[0], dim = out.shape[1];
  FailureOr<int64_t> first =
      vocabOffset(op, int64_t(op.getVocabShards()), vocab);
  if (failed(first))
    return failure();
  for (int64_t t = 0, n = ids.getNumElements(); t < n; ++t) {
    if (failed(checkIndex(op, "token id", ids.data[t], t,
                          vocab * int64_t(op.getVocabShards()))))
      return failure();
    int64_t row = static_cast<int64_t>(ids.data[t]) - *first;
    if (row < 0 || row >= vocab)
      continue; // another rank's row
    for (int64_t i = 0; i < dim; ++i)
      out.data[row * dim + i] += dy.data[t * dim + i];
  }
  set(op.getTableGrad(), std::move(out));
  return success();
}

LogicalResult Interpreter::reduceSum(ReduceSumOp op) {
  const Tensor &x = get(op.getInput());
  Tensor out = op.getAcc() ? get(op.getAcc()) : Tensor(shapeOf(op.getResult()));
  int64_t n = out.getNumElements();
  for (int64_t i = 0, e = x.getNumElements(); i < e; ++i)
    out.data[i % n] += x.data[i];
  set(op.getResult(), std::move(out));
  return success();
}
