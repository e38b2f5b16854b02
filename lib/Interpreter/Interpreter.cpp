//===- Interpreter.cpp - FP64 reference interpreter -----------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "infir2/Interpreter/Interpreter.h"

#include "infir2/Dialect/FP8/IR/FP8Ops.h"
#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace infir2;
using namespace infir2::interp;

Tensor::Tensor(ArrayRef<int64_t> shape, double fill) : shape(shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  data.assign(n, fill);
}

//===----------------------------------------------------------------------===//
// FP8 numerics
//===----------------------------------------------------------------------===//

double infir2::interp::roundToFP8(float value, bool e5m2) {
  if (std::isnan(value))
    return value;
  const llvm::fltSemantics &sem =
      e5m2 ? llvm::APFloat::Float8E5M2() : llvm::APFloat::Float8E4M3FN();
  double maxFinite = e5m2 ? 57344.0 : 448.0;
  // Saturate first: the conversion below would otherwise give inf or NaN.
  double clamped = std::clamp<double>(value, -maxFinite, maxFinite);
  llvm::APFloat f(clamped);
  bool losesInfo = false;
  f.convert(sem, llvm::APFloat::rmNearestTiesToEven, &losesInfo);
  f.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven,
            &losesInfo);
  return f.convertToDouble();
}

float infir2::interp::computeScale(float amax, float fmtMax, bool pow2) {
  if (amax == 0.0f)
    return 1.0f;
  float s = std::max(amax, kAmaxFloor) / fmtMax;
  if (!pow2)
    return s;
  int e = 0;
  float m = std::frexp(s, &e); // s = m * 2^e, m in [0.5, 1)
  return m == 0.5f ? s : std::ldexp(1.0f, e);
}

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

namespace {

SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

int64_t product(ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// For every element of a tensor of `shape`, the row-major index of the
/// scale block (of `block`) it belongs to.
std::vector<int64_t> blockIndexMap(ArrayRef<int64_t> shape,
                                   ArrayRef<int64_t> block) {
  SmallVector<int64_t> scaleShape;
  for (auto [d, b] : llvm::zip_equal(shape, block))
    scaleShape.push_back(d / b);
  SmallVector<int64_t> scaleStrides = stridesOf(scaleShape);
  std::vector<int64_t> map(product(shape));
  SmallVector<int64_t> idx(shape.size(), 0);
  for (int64_t flat = 0, n = map.size(); flat < n; ++flat) {
    int64_t s = 0;
    for (size_t i = 0; i < shape.size(); ++i)
      s += (idx[i] / block[i]) * scaleStrides[i];
    map[flat] = s;
    for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
      if (++idx[i] < shape[i])
        break;
      idx[i] = 0;
    }
  }
  return map;
}

std::vector<int64_t> blockIndexMap(Value data,
                                   fp8::GranularityAttrInterface granularity) {
  ArrayRef<int64_t> shape = shapeOf(data);
  // The op verifier has checked that the granularity tiles the shape.
  SmallVector<int64_t> block =
      *granularity.getBlockShape(shape, [] { return InFlightDiagnostic(); });
  return blockIndexMap(shape, block);
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

/// The geometry of an attention or attention_grad op, and the softmax
/// probabilities of one query row, shared by the forward and the gradient so
/// that the gradient differentiates exactly the function the forward computes.
struct AttentionRows {
  int64_t batch, sq, skv, heads, group, hd, qw, kw;
  double scale;
  bool causal;

  template <typename OpTy>
  static AttentionRows of(OpTy op, const Tensor &q, const Tensor &k) {
    int64_t heads = op.getNumHeads(), kvHeads = op.getNumKvHeads(),
            hd = op.getHeadDim();
    return {q.shape[0],    q.shape[1],      k.shape[1],
            heads,         heads / kvHeads, hd,
            heads * hd,    kvHeads * hd,    op.getEffectiveScale(),
            op.getCausal()};
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
    int64_t visible = causal ? s + 1 : skv;
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t t = 0; t < visible; ++t) {
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
double logSumExp(const double *row, int64_t n) {
  double mx = *std::max_element(row, row + n), sum = 0.0;
  for (int64_t i = 0; i < n; ++i)
    sum += std::exp(row[i] - mx);
  return mx + std::log(sum);
}

/// Reports `what` (a token id or a target) at position `t` outside [0, bound).
LogicalResult checkIndex(Operation *op, StringRef what, double value, int64_t t,
                         int64_t bound) {
  if (value >= 0 && value < bound)
    return success();
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

class Interpreter {
public:
  LogicalResult run(Operation *op);
  llvm::DenseMap<Value, Tensor> env;

private:
  const Tensor &get(Value v) { return env.find(v)->second; }
  void set(Value v, Tensor t) { env[v] = std::move(t); }

  LogicalResult embedding(EmbeddingOp op);
  LogicalResult matmul(MatmulOp op);
  LogicalResult rmsNorm(RMSNormOp op);
  LogicalResult rope(RopeOp op);
  LogicalResult attention(AttentionOp op);
  LogicalResult crossEntropy(CrossEntropyOp op);
  LogicalResult transpose(TransposeOp op);
  template <typename Fn> LogicalResult broadcastBinary(Operation *op, Fn fn);
  LogicalResult rmsNormGrad(RMSNormGradOp op);
  LogicalResult ropeGrad(RopeGradOp op);
  LogicalResult attentionGrad(AttentionGradOp op);
  LogicalResult crossEntropyGrad(CrossEntropyGradOp op);
  LogicalResult embeddingGrad(EmbeddingGradOp op);
  LogicalResult reduceSum(ReduceSumOp op);
  LogicalResult globalNorm(GlobalNormOp op);
  template <typename CollectiveOp> LogicalResult oneRankShards(CollectiveOp op);
  LogicalResult adamw(AdamWOp op);
  LogicalResult sgd(SGDOp op);
  double clippedScale(double gradScale, double norm, double maxGradNorm);
  LogicalResult quantize(fp8::QuantizeOp op);
  LogicalResult quantizeDual(fp8::QuantizeDualOp op);
  LogicalResult fused(fp8::FusedOp op);
  LogicalResult dequantize(fp8::DequantizeOp op);
  LogicalResult scaledMatmul(fp8::ScaledMatmulOp op);
  LogicalResult amax(fp8::AmaxOp op);
  LogicalResult constant(arith::ConstantOp op);
};

} // namespace

//===----------------------------------------------------------------------===//
// infir2 ops
//===----------------------------------------------------------------------===//

LogicalResult Interpreter::embedding(EmbeddingOp op) {
  const Tensor &table = get(op.getTable()), &ids = get(op.getIds());
  int64_t vocab = table.shape[0], dim = table.shape[1];
  Tensor out(shapeOf(op.getResult()));
  for (int64_t t = 0, n = ids.getNumElements(); t < n; ++t) {
    if (failed(checkIndex(op, "token id", ids.data[t], t, vocab)))
      return failure();
    std::copy_n(table.data.begin() + static_cast<int64_t>(ids.data[t]) * dim,
                dim, out.data.begin() + t * dim);
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
  Tensor out(shapeOf(op.getResult()));
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
        C[i * n + j] = acc;
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
static Tensor rotate(const Tensor &x, const Tensor &pos, int64_t hd,
                     double theta, double sign) {
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

LogicalResult Interpreter::ropeGrad(RopeGradOp op) {
  set(op.getInputGrad(),
      rotate(get(op.getResultGrad()), get(op.getPositions()), op.getHeadDim(),
             op.getTheta().convertToDouble(), -1.0));
  return success();
}

LogicalResult Interpreter::attention(AttentionOp op) {
  const Tensor &q = get(op.getQuery()), &k = get(op.getKey()),
               &v = get(op.getValue());
  AttentionRows a = AttentionRows::of(op, q, k);
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
  set(op.getResult(), std::move(out));
  return success();
}

LogicalResult Interpreter::crossEntropy(CrossEntropyOp op) {
  const Tensor &logits = get(op.getLogits()), &targets = get(op.getTargets());
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

template <typename Fn>
LogicalResult Interpreter::broadcastBinary(Operation *op, Fn fn) {
  const Tensor &a = get(op->getOperand(0)), &b = get(op->getOperand(1));
  Tensor out(a.shape);
  int64_t nb = b.getNumElements();
  for (int64_t i = 0, n = a.getNumElements(); i < n; ++i)
    out.data[i] = fn(a.data[i], b.data[i % nb]);
  set(op->getResult(0), std::move(out));
  return success();
}

//===----------------------------------------------------------------------===//
// Gradient ops
//===----------------------------------------------------------------------===//

LogicalResult Interpreter::rmsNormGrad(RMSNormGradOp op) {
  const Tensor &x = get(op.getInput()), &w = get(op.getWeight()),
               &dy = get(op.getResultGrad());
  int64_t d = x.shape.back(), rows = x.getNumElements() / d;
  double eps = op.getEpsilon().convertToDouble();
  Tensor dx(x.shape), dw(w.shape);
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
      dx.data[r * d + i] =
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
  AttentionRows a = AttentionRows::of(op, q, k);
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
  const Tensor *mask = op.getLossMask() ? &get(op.getLossMask()) : nullptr;
  double dloss = get(op.getLossGrad()).data[0];
  int64_t vocab = logits.shape.back(), tokens = targets.getNumElements();
  double total = 0.0;
  for (int64_t t = 0; t < tokens; ++t)
    total += tokenWeight(op, targets, mask, t);
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
  Tensor out(shapeOf(op.getTableGrad()));
  int64_t vocab = out.shape[0], dim = out.shape[1];
  for (int64_t t = 0, n = ids.getNumElements(); t < n; ++t) {
    if (failed(checkIndex(op, "token id", ids.data[t], t, vocab)))
      return failure();
    int64_t row = static_cast<int64_t>(ids.data[t]);
    for (int64_t i = 0; i < dim; ++i)
      out.data[row * dim + i] += dy.data[t * dim + i];
  }
  set(op.getTableGrad(), std::move(out));
  return success();
}

LogicalResult Interpreter::reduceSum(ReduceSumOp op) {
  const Tensor &x = get(op.getInput());
  Tensor out(shapeOf(op.getResult()));
  int64_t n = out.getNumElements();
  for (int64_t i = 0, e = x.getNumElements(); i < e; ++i)
    out.data[i % n] += x.data[i];
  set(op.getResult(), std::move(out));
  return success();
}

//===----------------------------------------------------------------------===//
// Optimizer ops
//===----------------------------------------------------------------------===//

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

//===----------------------------------------------------------------------===//
// fp8 ops
//===----------------------------------------------------------------------===//

/// The largest magnitude in every scale block of `data`; NaN propagates.
static Tensor blockAmax(const Tensor &x, Value data,
                        fp8::GranularityAttrInterface granularity,
                        ArrayRef<int64_t> scaleShape) {
  std::vector<int64_t> map = blockIndexMap(data, granularity);
  Tensor amax(scaleShape);
  for (int64_t i = 0, n = x.getNumElements(); i < n; ++i) {
    double &a = amax.data[map[i]];
    if (std::isnan(x.data[i]) || std::isnan(a))
      a = std::numeric_limits<double>::quiet_NaN();
    else
      a = std::max(a, std::fabs(x.data[i]));
  }
  return amax;
}

/// data · scale per block: exact in FP64 (FP8 values times FP32 scales).
static Tensor dequantized(const Tensor &q, const Tensor &s, Value data,
                          fp8::GranularityAttrInterface granularity) {
  std::vector<int64_t> map = blockIndexMap(data, granularity);
  Tensor out(q.shape);
  for (int64_t i = 0, n = q.getNumElements(); i < n; ++i)
    out.data[i] = q.data[i] * s.data[map[i]];
  return out;
}

/// Quantizes `x` (the value of `input`, whose shape it has) by `granularity`
/// into `data` and `scale`; fails, naming the block, on a non-finite amax.
static LogicalResult quantizeInto(Operation *op, const Tensor &x, Value input,
                                  fp8::GranularityAttrInterface granularity,
                                  fp8::Format format, fp8::ScaleRule rule,
                                  ArrayRef<int64_t> scaleShape, Tensor &data,
                                  Tensor &scale) {
  // Rounding to FP32 is monotone, so the amax of the FP32 inputs is the FP32
  // rounding of this FP64 amax.
  Tensor amax = blockAmax(x, input, granularity, scaleShape);
  bool e5m2 = format == fp8::Format::e5m2;
  bool pow2 = rule == fp8::ScaleRule::pow2;
  float fmtMax = static_cast<float>(fp8::getMaxFinite(format));
  scale = Tensor(amax.shape);
  for (int64_t b = 0, n = amax.getNumElements(); b < n; ++b) {
    if (!std::isfinite(amax.data[b]))
      return op->emitOpError() << "non-finite amax ("
                               << (std::isnan(amax.data[b]) ? "nan" : "inf")
                               << ") in scale block " << b
                               << " of 'input': refusing to quantize it";
    scale.data[b] =
        computeScale(static_cast<float>(amax.data[b]), fmtMax, pow2);
  }
  std::vector<int64_t> map = blockIndexMap(input, granularity);
  data = Tensor(x.shape);
  for (int64_t i = 0, n = x.getNumElements(); i < n; ++i)
    data.data[i] = roundToFP8(static_cast<float>(x.data[i]) /
                                  static_cast<float>(scale.data[map[i]]),
                              e5m2);
  return success();
}

/// The transpose of `x` viewed as a matrix of rows: [T, K] -> [K, T].
static Tensor transposeRows(const Tensor &x) {
  int64_t cols = x.shape.back(), rows = x.getNumElements() / cols;
  Tensor out(ArrayRef<int64_t>{cols, rows});
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      out.data[j * rows + i] = x.data[i * cols + j];
  return out;
}

LogicalResult Interpreter::quantize(fp8::QuantizeOp op) {
  Tensor data, scale;
  if (failed(quantizeInto(op, get(op.getInput()), op.getInput(),
                          op.getGranularity(), op.getFormat(),
                          op.getScaleRule(), shapeOf(op.getScale()), data,
                          scale)))
    return failure();
  set(op.getData(), std::move(data));
  set(op.getScale(), std::move(scale));
  return success();
}

LogicalResult Interpreter::quantizeDual(fp8::QuantizeDualOp op) {
  // Defined as two quantize ops: of the input, and of its [K, T] transpose.
  Tensor data, scale, dataT, scaleT;
  if (failed(quantizeInto(op, get(op.getInput()), op.getData(),
                          op.getGranularity(), op.getFormat(),
                          op.getScaleRule(), shapeOf(op.getScale()), data,
                          scale)) ||
      failed(quantizeInto(op, transposeRows(get(op.getInput())), op.getDataT(),
                          op.getTransposedGranularity(), op.getFormat(),
                          op.getScaleRule(), shapeOf(op.getScaleT()), dataT,
                          scaleT)))
    return failure();
  set(op.getData(), std::move(data));
  set(op.getScale(), std::move(scale));
  set(op.getDataT(), std::move(dataT));
  set(op.getScaleT(), std::move(scaleT));
  return success();
}

LogicalResult Interpreter::fused(fp8::FusedOp op) {
  // The body's ops, in order; the results are what it yields.
  Block &body = op.getBody().front();
  for (Operation &inner : body.without_terminator())
    if (failed(run(&inner)))
      return failure();
  for (auto [result, value] :
       llvm::zip_equal(op.getResults(), body.getTerminator()->getOperands()))
    set(result, get(value));
  return success();
}

LogicalResult Interpreter::dequantize(fp8::DequantizeOp op) {
  set(op.getResult(), dequantized(get(op.getData()), get(op.getScale()),
                                  op.getData(), op.getGranularity()));
  return success();
}

LogicalResult Interpreter::scaledMatmul(fp8::ScaledMatmulOp op) {
  // The exact product of the dequantized operands: only the sum rounds.
  Tensor a = dequantized(get(op.getLhs()), get(op.getLhsScale()), op.getLhs(),
                         op.getLhsGranularity());
  Tensor b = dequantized(get(op.getRhs()), get(op.getRhsScale()), op.getRhs(),
                         op.getRhsGranularity());
  int64_t k = a.shape.back(), m = a.shape[a.shape.size() - 2];
  int64_t n = b.shape[b.shape.size() - 2];
  int64_t batch = product(ArrayRef<int64_t>(a.shape).drop_back(2));
  bool sharedRhs = b.shape.size() == 2;
  Tensor out(shapeOf(op.getResult()));
  for (int64_t p = 0; p < batch; ++p)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const double *A = a.data.data() + (p * m + i) * k;
        const double *B = b.data.data() + ((sharedRhs ? 0 : p * n) + j) * k;
        double acc = 0.0;
        for (int64_t l = 0; l < k; ++l)
          acc += A[l] * B[l];
        out.data[(p * m + i) * n + j] = acc;
      }
  set(op.getResult(), std::move(out));
  return success();
}

LogicalResult Interpreter::amax(fp8::AmaxOp op) {
  set(op.getResult(), blockAmax(get(op.getInput()), op.getInput(),
                                op.getGranularity(), shapeOf(op.getResult())));
  return success();
}

LogicalResult Interpreter::constant(arith::ConstantOp op) {
  auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
  auto type = dyn_cast<RankedTensorType>(op.getType());
  if (!dense || !type)
    return op.emitOpError() << "the interpreter supports only dense tensor "
                               "constants";
  Tensor out(type.getShape());
  if (isa<FloatType>(type.getElementType())) {
    int64_t i = 0;
    for (const llvm::APFloat &v : dense.getValues<llvm::APFloat>())
      out.data[i++] = v.convertToDouble();
  } else {
    int64_t i = 0;
    for (const llvm::APInt &v : dense.getValues<llvm::APInt>())
      out.data[i++] = static_cast<double>(v.getSExtValue());
  }
  set(op.getResult(), std::move(out));
  return success();
}

LogicalResult Interpreter::run(Operation *op) {
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](EmbeddingOp o) { return embedding(o); })
      .Case([&](MatmulOp o) { return matmul(o); })
      .Case([&](RMSNormOp o) { return rmsNorm(o); })
      .Case([&](RopeOp o) { return rope(o); })
      .Case([&](AttentionOp o) { return attention(o); })
      .Case([&](SiluOp o) {
        Tensor out = get(o.getInput());
        for (double &x : out.data)
          x = x * sigmoid(x);
        set(o.getResult(), std::move(out));
        return success();
      })
      .Case([&](SwigluOp o) {
        return broadcastBinary(
            o, [](double g, double u) { return g * sigmoid(g) * u; });
      })
      .Case([&](AddOp o) {
        return broadcastBinary(o, [](double a, double b) { return a + b; });
      })
      .Case([&](MulOp o) {
        return broadcastBinary(o, [](double a, double b) { return a * b; });
      })
      .Case([&](CrossEntropyOp o) { return crossEntropy(o); })
      .Case([&](ReshapeOp o) {
        Tensor out = get(o.getInput());
        out.shape.assign(shapeOf(o.getResult()).begin(),
                         shapeOf(o.getResult()).end());
        set(o.getResult(), std::move(out));
        return success();
      })
      .Case([&](TransposeOp o) { return transpose(o); })
      .Case([&](RMSNormGradOp o) { return rmsNormGrad(o); })
      .Case([&](RopeGradOp o) { return ropeGrad(o); })
      .Case([&](AttentionGradOp o) { return attentionGrad(o); })
      .Case([&](CrossEntropyGradOp o) { return crossEntropyGrad(o); })
      .Case([&](EmbeddingGradOp o) { return embeddingGrad(o); })
      .Case([&](ReduceSumOp o) { return reduceSum(o); })
      .Case([&](GlobalNormOp o) { return globalNorm(o); })
      .Case([&](AdamWOp o) { return adamw(o); })
      .Case([&](SGDOp o) { return sgd(o); })
      .Case([&](ConvertOp o) {
        // FP64 throughout: a conversion changes the declared type only.
        set(o.getResult(), get(o.getInput()));
        return success();
      })
      .Case([&](SiluGradOp o) {
        const Tensor &x = get(o.getInput()), &dy = get(o.getResultGrad());
        Tensor out(x.shape);
        for (int64_t i = 0, n = x.getNumElements(); i < n; ++i) {
          double s = sigmoid(x.data[i]);
          out.data[i] = dy.data[i] * (s + x.data[i] * s * (1.0 - s));
        }
        set(o.getInputGrad(), std::move(out));
        return success();
      })
      .Case([&](SwigluGradOp o) {
        const Tensor &g = get(o.getGate()), &u = get(o.getUp()),
                     &dy = get(o.getResultGrad());
        Tensor dg(g.shape), du(g.shape);
        for (int64_t i = 0, n = g.getNumElements(); i < n; ++i) {
          double s = sigmoid(g.data[i]);
          du.data[i] = dy.data[i] * g.data[i] * s;
          dg.data[i] = dy.data[i] * u.data[i] * (s + g.data[i] * s * (1.0 - s));
        }
        set(o.getGateGrad(), std::move(dg));
        set(o.getUpGrad(), std::move(du));
        return success();
      })
      .Case([&](AllReduceOp o) {
        // The interpreter is one rank: the sum over ranks is the operand.
        for (auto [in, out] : llvm::zip_equal(o.getInputs(), o.getResults()))
          set(out, get(in));
        return success();
      })
      .Case([&](ReduceScatterOp o) { return oneRankShards(o); })
      .Case([&](AllGatherOp o) { return oneRankShards(o); })
      .Case([&](fp8::QuantizeOp o) { return quantize(o); })
      .Case([&](fp8::QuantizeDualOp o) { return quantizeDual(o); })
      .Case([&](fp8::FusedOp o) { return fused(o); })
      .Case([&](fp8::DequantizeOp o) { return dequantize(o); })
      .Case([&](fp8::ScaledMatmulOp o) { return scaledMatmul(o); })
      .Case([&](fp8::AmaxOp o) { return amax(o); })
      .Case([&](arith::ConstantOp o) { return constant(o); })
      .Default([&](Operation *o) {
        return o->emitOpError() << "has no rule in the reference interpreter";
      });
}

//===----------------------------------------------------------------------===//
// Entry point
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<Tensor>> infir2::interp::run(FunctionOpInterface fn,
                                                   ArrayRef<Tensor> inputs) {
  if (fn.isExternal())
    return fn.emitError() << "cannot interpret a function without a body";
  ArrayRef<Type> argTypes = fn.getArgumentTypes();
  if (inputs.size() != argTypes.size())
    return fn.emitError() << "expects " << argTypes.size() << " inputs, got "
                          << inputs.size();
  Interpreter interp;
  Block &entry = fn.getFunctionBody().front();
  for (auto [i, arg, input] : llvm::enumerate(entry.getArguments(), inputs)) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || !type.hasStaticShape())
      return fn.emitError()
             << "argument #" << i << " is not a statically shaped tensor";
    if (type.getShape() != ArrayRef<int64_t>(input.shape) ||
        static_cast<int64_t>(input.data.size()) != type.getNumElements())
      return fn.emitError()
             << "input #" << i << " does not have shape " << type;
    interp.env[arg] = input;
  }
  if (!llvm::hasSingleElement(fn.getFunctionBody()))
    return fn.emitError() << "the interpreter runs single-block functions only";
  for (Operation &op : entry) {
    if (op.hasTrait<OpTrait::IsTerminator>()) {
      SmallVector<Tensor> results;
      for (Value v : op.getOperands())
        results.push_back(interp.env.find(v)->second);
      return results;
    }
    if (failed(interp.run(&op)))
      return failure();
  }
  return fn.emitError() << "function body has no terminator";
}
