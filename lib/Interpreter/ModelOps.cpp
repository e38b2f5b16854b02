//===- ModelOps.cpp - Interpreter rules of infir2 model ops -----*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The FP64 rules of the forward ops of the infir2 dialect (Infir2Ops.td);
// swiglu, add and mul go through Interpreter::broadcastBinary, and silu,
// reshape and convert are one-liners in the dispatch.
//
//===----------------------------------------------------------------------===//

#include "InterpreterImpl.h"

#include <cmath>

using namespace mlir;
using namespace infir2;
using namespace infir2::interp;
using namespace infir2::interp::detail;

FailureOr<int64_t> Interpreter::vocabOffset(Operation *op, int64_t shards,
                                            int64_t rows) {
  if (shards == 1)
    return 0;
  if (shards != tpSize)
    return op->emitOpError()
           << "splits the vocabulary over " << shards
           << " tensor-parallel ranks: interpret the function with runRanks "
              "over that many ranks, one input set a rank";
  return tpRank * rows;
}

LogicalResult Interpreter::embedding(EmbeddingOp op) {
  const Tensor &table = get(op.getTable()), &ids = get(op.getIds());
  int64_t vocab = table.shape[0], dim = table.shape[1];
  FailureOr<int64_t> first =
      vocabOffset(op, int64_t(op.getVocabShards()), vocab);
  if (failed(first))
    return failure();
  Tensor out(shapeOf(op.getResult()));
  for (int64_t t = 0, n = ids.getNumElements(); t < n; ++t) {
    if (failed(checkIndex(op, "token id", ids.data[t], t,
                          vocab * int64_t(op.getVocabShards()))))
      return failure();
    // Another rank's row: zero here, its own there.
    int64_t row = static_cast<int64_t>(ids.data[t]) - *first;
    if (row >= 0 && row < vocab)
      std::copy_n(table.data.begin() + row * dim, dim,
                  out.data.begin() + t * dim);
  }
  set(op.getResult(), std::move(out));
  return success();
}

LogicalResult Interpreter::matmul(MatmulOp op) {
  const Tensor &a = get(op.getLhs()), &b = get(op.getRhs());
  bool ta = op.getTransposeLhs(), tb = op.getTransposeRhs();
  ArrayRef<int64_t> as = a.shape, bs = b.shape;
  int64_t m = as[as.size() - (ta ? 1 : 2)], k = as[as.size() - (ta ? 2 : 1)];
  int64_t n = bs[bs.size() - (tb ? 2 : 1)];
  int64_t batch = product(as.drop_back(2));
  bool sharedRhs = bs.size() == 2;
  // With an accumulator: acc + the product.
  Tensor out = op.getAcc() ? get(op.getAcc()) : Tensor(shapeOf(op.getResult()));
  // Both operands copied to K-contiguous rows ([m, k] and [n, k]), so that
  // every dot product reads memory in order; the sum order is unchanged.
  std::vector<double> A(m * k), B(n * k);
  for (int64_t p = 0; p < batch; ++p) {
    const double *pa = a.data.data() + p * m * k;
    const double *pb = b.data.data() + (sharedRhs ? 0 : p * k * n);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t l = 0; l < k; ++l)
        A[i * k + l] = ta ? pa[l * m + i] : pa[i * k + l];
    if (p == 0 || !sharedRhs)
      for (int64_t j = 0; j < n; ++j)
        for (int64_t l = 0; l < k; ++l)
          B[j * k + l] = tb ? pb[j * k + l] : pb[l * n + j];
    double *C = out.data.data() + p * m * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0.0;
        for (int64_t l = 0; l < k; ++l)
          acc += A[i * k + l] * B[j * k + l];
        C[i * n + j] += acc;
      }
  }
  set(op.getResult(), std::move(out));
  return success();
}

LogicalResult Interpreter::rmsNorm(RMSNormOp op) {
  const Tensor &x = get(op.getInput()), &w = get(op.getWeight());
  int64_t d = x.shape.back(), rows = x.getNumElements() / d;
  double eps = op.getEpsilon().convertToDouble();
  Tensor out(x.shape);
  for (int64_t r = 0; r < rows; ++r) {
    const double *row = x.data.data() + r * d;
    double ss = 0.0;
    for (int64_t i = 0; i < d; ++i)
      ss += row[i] * row[i];
    double inv = 1.0 / std::sqrt(ss / d + eps);
    for (int64_t i = 0; i < d; ++i)
      out.data[r * d + i] = row[i] * inv * w.data[i];
  }
  set(op.getResult(), std::move(out));
  return success();
}

/// Rotates every (i, i + head_dim/2) pair of every head by `sign` times the
/// RoPE angle: sign +1 is rope, -1 its inverse (and gradient).
Tensor infir2::interp::detail::rotate(const Tensor &x, const Tensor &pos,
                                      int64_t hd, double theta, double sign) {
  int64_t width = x.shape.back(), seq = x.shape[x.shape.size() - 2];
  int64_t half = hd / 2, heads = width / hd;
  int64_t tokens = x.getNumElements() / width;
  bool shared = pos.shape.size() == 1;
  Tensor out(x.shape);
  for (int64_t t = 0; t < tokens; ++t) {
    double p = pos.data[shared ? t % seq : t];
    for (int64_t h = 0; h < heads; ++h) {
      const double *in = x.data.data() + t * width + h * hd;
      double *o = out.data.data() + t * width + h * hd;
      for (int64_t i = 0; i < half; ++i) {
        double angle = sign * p * std::pow(theta, -2.0 * i / hd);
        double c = std::cos(angle), s = std::sin(angle);
        o[i] = in[i] * c - in[i + half] * s;
        o[i + half] = in[i + half] * c + in[i] * s;
      }
    }
  }
  return out;
}

LogicalResult Interpreter::rope(RopeOp op) {
  set(op.getResult(),
      rotate(get(op.getInput()), get(op.getPositions()), op.getHeadDim(),
             op.getTheta().convertToDouble(), 1.0));
  return success();
}

/// The result of attention or cache_attention with geometry `a`.
static Tensor attend(const AttentionRows &a, const Tensor &q, const Tensor &k,
                     const Tensor &v) {
  Tensor out(q.shape);
  std::vector<double> p(a.skv);
  for (int64_t b = 0; b < a.batch; ++b)
    for (int64_t h = 0; h < a.heads; ++h)
      for (int64_t s = 0; s < a.sq; ++s) {
        int64_t visible = a.probabilities(q, k, b, h, s, p);
        double *o = out.data.data() + (b * a.sq + s) * a.qw + h * a.hd;
        for (int64_t t = 0; t < visible; ++t) {
          const double *vv = a.row(v, b, t, h / a.group, false);
          for (int64_t i = 0; i < a.hd; ++i)
            o[i] += p[t] * vv[i];
        }
      }
  return out;
}

LogicalResult Interpreter::attention(AttentionOp op) {
  const Tensor &q = get(op.getQuery()), &k = get(op.getKey());
  AttentionRows a = AttentionRows::of(
      op, q, k, op.getSegments() ? &get(op.getSegments()) : nullptr);
  set(op.getResult(), attend(a, q, k, get(op.getValue())));
  return success();
}

/// Fails unless every position lies in [0, length).
static LogicalResult checkPositions(Operation *op, const Tensor &pos,
                                    int64_t length) {
  for (int64_t i = 0, n = pos.getNumElements(); i < n; ++i)
    if (failed(checkIndex(op, "cache position", pos.data[i], i, length)))
      return failure();
  return success();
}

LogicalResult Interpreter::cacheWrite(CacheWriteOp op) {
  const Tensor &update = get(op.getUpdate()), &pos = get(op.getPositions());
  Tensor out = get(op.getCache());
  int64_t length = out.shape[1], width = out.shape[2], t = update.shape[1];
  if (failed(checkPositions(op, pos, length)))
    return failure();
  for (int64_t r = 0, n = pos.getNumElements(); r < n; ++r)
    std::copy_n(update.data.begin() + r * width, width,
                out.data.begin() +
                    ((r / t) * length + int64_t(pos.data[r])) * width);
  set(op.getResult(), std::move(out));
  return success();
}

LogicalResult Interpreter::cacheAttention(CacheAttentionOp op) {
  const Tensor &q = get(op.getQuery()), &k = get(op.getKeyCache()),
               &pos = get(op.getPositions());
  if (failed(checkPositions(op, pos, k.shape[1])))
    return failure();
  int64_t heads = op.getNumHeads(), kvHeads = op.getNumKvHeads(),
          hd = op.getHeadDim();
  AttentionRows a{q.shape[0], q.shape[1], k.shape[1],  heads,
                  heads / kvHeads, hd, heads * hd, kvHeads * hd,
                  op.getEffectiveScale(), /*causal=*/false,
                  /*segments=*/nullptr, &pos};
  set(op.getResult(), attend(a, q, k, get(op.getValueCache())));
  return success();
}

template <typename LossOp>
LogicalResult Interpreter::wholeLogits(LossOp op, const Tensor &logits) {
  if (logits.shape.back() ==
      shapeOf(op.getLogits()).back() * int64_t(op.getVocabShards()))
    return success();
  return op.emitOpError()
         << "splits the vocabulary over " << int64_t(op.getVocabShards())
         << " tensor-parallel ranks: interpret the function with runRanks "
            "over that many ranks, one input set a rank";
}
template LogicalResult Interpreter::wholeLogits(CrossEntropyGradOp,
                                                const Tensor &);

LogicalResult Interpreter::crossEntropy(CrossEntropyOp op) {
  const Tensor &logits = get(op.getLogits()), &targets = get(op.getTargets());
  if (failed(wholeLogits(op, logits)))
    return failure();
  const Tensor *mask = op.getLossMask() ? &get(op.getLossMask()) : nullptr;
  int64_t vocab = logits.shape.back(), tokens = targets.getNumElements();
  double total = 0.0, weight = 0.0;
  for (int64_t t = 0; t < tokens; ++t) {
    double w = tokenWeight(op, targets, mask, t);
    if (w == 0.0)
      continue;
    if (failed(checkIndex(op, "target", targets.data[t], t, vocab)))
      return failure();
    const double *row = logits.data.data() + t * vocab;
    total += w * (logSumExp(row, vocab) -
                  row[static_cast<int64_t>(targets.data[t])]);
    weight += w;
  }
  if (op.getDivisor())
    weight = get(op.getDivisor()).data[0];
  set(op.getResult(), Tensor({}, weight == 0.0 ? 0.0 : total / weight));
  return success();
}

LogicalResult Interpreter::transpose(TransposeOp op) {
  const Tensor &x = get(op.getInput());
  ArrayRef<int64_t> perm = op.getPermutation();
  Tensor out(shapeOf(op.getResult()));
  SmallVector<int64_t> inStrides = stridesOf(x.shape);
  SmallVector<int64_t> idx(out.shape.size(), 0);
  for (int64_t flat = 0, n = out.getNumElements(); flat < n; ++flat) {
    int64_t src = 0;
    for (size_t i = 0; i < idx.size(); ++i)
      src += idx[i] * inStrides[perm[i]];
    out.data[flat] = x.data[src];
    for (int i = static_cast<int>(idx.size()) - 1; i >= 0; --i) {
      if (++idx[i] < out.shape[i])
        break;
      idx[i] = 0;
    }
  }
  set(op.getResult(), std::move(out));
  return success();
}
