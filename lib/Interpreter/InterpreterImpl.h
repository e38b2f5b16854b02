//===- InterpreterImpl.h - Internals of the interpreter ---------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The interpreter's state and per-op rules, shared by the files that define
// them: Interpreter.cpp (the dispatch and the entry point), ModelOps.cpp,
// GradientOps.cpp, OptimizerOps.cpp (the infir2 ops) and FP8Ops.cpp (the fp8
// ops). Internal to lib/Interpreter; the API is
// infir2/Interpreter/Interpreter.h.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_LIB_INTERPRETER_INTERPRETERIMPL_H
#define INFIR2_LIB_INTERPRETER_INTERPRETERIMPL_H

#include "infir2/Interpreter/Interpreter.h"

#include "infir2/Dialect/FP8/IR/FP8Ops.h"
#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace infir2::interp::detail {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

inline llvm::SmallVector<int64_t> stridesOf(llvm::ArrayRef<int64_t> shape) {
  llvm::SmallVector<int64_t> strides(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

inline int64_t product(llvm::ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

inline llvm::ArrayRef<int64_t> shapeOf(mlir::Value v) {
  return llvm::cast<mlir::RankedTensorType>(v.getType()).getShape();
}

inline double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

/// The geometry of an attention or attention_grad op, and the softmax
/// probabilities of one query row, shared by the forward and the gradient so
/// that the gradient differentiates exactly the function the forward computes.
struct AttentionRows {
  int64_t batch, sq, skv, heads, group, hd, qw, kw;
  double scale;
  bool causal;
  const Tensor *segments;            ///< [batch, sq] or null
  const Tensor *positions = nullptr; ///< cache_attention's [batch, sq]

  template <typename OpTy>
  static AttentionRows of(OpTy op, const Tensor &q, const Tensor &k,
                          const Tensor *segments) {
    int64_t heads = op.getNumHeads(), kvHeads = op.getNumKvHeads(),
            hd = op.getHeadDim();
    return {q.shape[0],    q.shape[1],      k.shape[1],
            heads,         heads / kvHeads, hd,
            heads * hd,    kvHeads * hd,    op.getEffectiveScale(),
            op.getCausal(), segments};
  }

  /// Whether query s of sequence b may see key t.
  bool sees(int64_t b, int64_t s, int64_t t) const {
    return !segments ||
           segments->data[b * sq + s] == segments->data[b * sq + t];
  }

  const double *row(const Tensor &t, int64_t b, int64_t pos, int64_t head,
                    bool isQuery) const {
    return t.data.data() +
           (b * (isQuery ? sq : skv) + pos) * (isQuery ? qw : kw) + head * hd;
  }

  /// Fills p[0, visible) with the probabilities of query (b, h, s) over the
  /// keys it may see, and returns `visible`.
  int64_t probabilities(const Tensor &q, const Tensor &k, int64_t b, int64_t h,
                        int64_t s, std::vector<double> &p) const {
    const double *qv = row(q, b, s, h, true);
    int64_t visible = positions ? int64_t(positions->data[b * sq + s]) + 1
                      : causal  ? s + 1
                                : skv;
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t t = 0; t < visible; ++t) {
      if (!sees(b, s, t)) {
        p[t] = -std::numeric_limits<double>::infinity(); // exp gives 0
        continue;
      }
      const double *kv = row(k, b, t, h / group, false);
      double dot = 0.0;
      for (int64_t i = 0; i < hd; ++i)
        dot += qv[i] * kv[i];
      p[t] = scale * dot;
      mx = std::max(mx, p[t]);
    }
    double sum = 0.0;
    for (int64_t t = 0; t < visible; ++t)
      sum += (p[t] = std::exp(p[t] - mx));
    for (int64_t t = 0; t < visible; ++t)
      p[t] /= sum;
    return visible;
  }
};

/// log(Σ exp(row)), computed stably.
inline double logSumExp(const double *row, int64_t n) {
  double mx = *std::max_element(row, row + n), sum = 0.0;
  for (int64_t i = 0; i < n; ++i)
    sum += std::exp(row[i] - mx);
  return mx + std::log(sum);
}

/// Reports `what` (a token id or a target) at position `t` outside [0, bound).
inline mlir::LogicalResult checkIndex(mlir::Operation *op, llvm::StringRef what,
                                      double value, int64_t t, int64_t bound) {
  if (value >= 0 && value < bound)
    return mlir::success();
  return op->emitOpError() << what << " " << static_cast<int64_t>(value)
                           << " at position " << t << " is out of range [0, "
                           << bound << ")";
}

/// The weight of token t in a cross-entropy: the mask (or 1), 0 when the
/// target is the ignore index.
template <typename OpTy>
double tokenWeight(OpTy op, const Tensor &targets, const Tensor *mask,
                   int64_t t) {
  if (targets.data[t] == static_cast<double>(op.getIgnoreIndexAttr().getInt()))
    return 0.0; // I64Attr getters return uint64_t; the index is signed (-100).
  return mask ? mask->data[t] : 1.0;
}

/// Rotates every (i, i + head_dim/2) pair of every head by `sign` times the
/// RoPE angle: sign +1 is rope, -1 its inverse (and gradient).
Tensor rotate(const Tensor &x, const Tensor &pos, int64_t hd, double theta,
              double sign);

//===----------------------------------------------------------------------===//
// The interpreter
//===----------------------------------------------------------------------===//

/// The values computed so far and one rule per op. `run` dispatches on the op
/// (Interpreter.cpp); the rules are defined by family in the files named
/// above.
/// One AdamW update's hyperparameters, in FP64 (OptimizerOps.cpp).
struct AdamWRule {
  double lr, scale, b1, b2, eps, c1, c2;

  /// The updated parameter and moments of `p` with weight decay `wd`.
  void apply(const Tensor &p, const Tensor &g, const Tensor &m,
             const Tensor &v, double wd, Tensor &np, Tensor &nm,
             Tensor &nv) const;
};

class Interpreter {
public:
  /// Runs `op`, then shows its results to `resultObserver`.
  mlir::LogicalResult run(mlir::Operation *op);
  llvm::DenseMap<mlir::Value, Tensor> env;
  /// This interpreter's rank in its tensor-parallel group (runRanks).
  int64_t tpRank = 0, tpSize = 1;
  /// See each quantization and each op's results (run's observers); may
  /// be empty.
  QuantizationObserver observer;
  ResultObserver resultObserver;

private:
  mlir::LogicalResult dispatch(mlir::Operation *op);
  const Tensor &get(mlir::Value v) { return env.find(v)->second; }
  void set(mlir::Value v, Tensor t) { env[v] = std::move(t); }

  // ModelOps.cpp
  mlir::FailureOr<int64_t> vocabOffset(mlir::Operation *op, int64_t shards,
                                       int64_t rows);
  mlir::LogicalResult embedding(EmbeddingOp op);
  /// The logits `op` reads are its whole vocabulary's: runRanks puts the
  /// ranks' columns side by side for a vocabulary-parallel loss.
  template <typename LossOp>
  mlir::LogicalResult wholeLogits(LossOp op, const Tensor &logits);
  mlir::LogicalResult matmul(MatmulOp op);
  mlir::LogicalResult rmsNorm(RMSNormOp op);
  mlir::LogicalResult rope(RopeOp op);
  mlir::LogicalResult attention(AttentionOp op);
  mlir::LogicalResult cacheWrite(CacheWriteOp op);
  mlir::LogicalResult cacheAttention(CacheAttentionOp op);
  mlir::LogicalResult crossEntropy(CrossEntropyOp op);
  mlir::LogicalResult transpose(TransposeOp op);
  template <typename Fn>
  mlir::LogicalResult broadcastBinary(mlir::Operation *op, Fn fn);
  // GradientOps.cpp
  mlir::LogicalResult rmsNormGrad(RMSNormGradOp op);
  mlir::LogicalResult ropeGrad(RopeGradOp op);
  mlir::LogicalResult attentionGrad(AttentionGradOp op);
  mlir::LogicalResult crossEntropyGrad(CrossEntropyGradOp op);
  mlir::LogicalResult embeddingGrad(EmbeddingGradOp op);
  mlir::LogicalResult reduceSum(ReduceSumOp op);
  // OptimizerOps.cpp
  mlir::LogicalResult globalNorm(GlobalNormOp op);
  template <typename CollectiveOp>
  mlir::LogicalResult oneRankShards(CollectiveOp op);
  mlir::LogicalResult adamw(AdamWOp op);
  mlir::LogicalResult adamwGroup(AdamWGroupOp op);
  mlir::LogicalResult sgd(SGDOp op);
  double clippedScale(double gradScale, double norm, double maxGradNorm);
  template <typename UpdateOp>
  mlir::FailureOr<AdamWRule> adamwRule(UpdateOp op);
  // FP8Ops.cpp
  mlir::LogicalResult quantize(fp8::QuantizeOp op);
  mlir::LogicalResult quantizeDual(fp8::QuantizeDualOp op);
  mlir::LogicalResult fused(fp8::FusedOp op);
  mlir::LogicalResult dequantize(fp8::DequantizeOp op);
  mlir::LogicalResult scaledMatmul(fp8::ScaledMatmulOp op);
  mlir::LogicalResult amax(fp8::AmaxOp op);
  // Interpreter.cpp
  mlir::LogicalResult constant(mlir::arith::ConstantOp op);
};

template <typename Fn>
mlir::LogicalResult Interpreter::broadcastBinary(mlir::Operation *op, Fn fn) {
  const Tensor &a = get(op->getOperand(0)), &b = get(op->getOperand(1));
  Tensor out(a.shape);
  int64_t nb = b.getNumElements();
  for (int64_t i = 0, n = a.getNumElements(); i < n; ++i)
    out.data[i] = fn(a.data[i], b.data[i % nb]);
  set(op->getResult(0), std::move(out));
  return mlir::success();
}

} // namespace infir2::interp::detail

#endif // INFIR2_LIB_INTERPRETER_INTERPRETERIMPL_H
