//===- ChunkLoss.cpp - The LM head and the loss by chunks of tokens -------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// --infir2-chunk-loss: the LM head's GEMM, the loss, the logits' gradient and
// the head's two gradient GEMMs, a chunk of tokens at a time, so that the
// step never holds the whole batch's logits (StepPasses.td).
//
//===----------------------------------------------------------------------===//

#include "infir2/Transforms/Passes.h"

#include "infir2/Dialect/Infir2/IR/Infir2Dialect.h"
#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"
#include "infir2/Transforms/MemoryPlan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/FormatVariadic.h"

namespace infir2 {
#define GEN_PASS_DEF_CHUNKLOSSPASS
#include "infir2/Transforms/Passes.h.inc"
} // namespace infir2

using namespace mlir;
using namespace infir2;

namespace {

/// The LM head and what reads its logits, as the recipes make them.
struct LossHead {
  MatmulOp head;           ///< logits = hidden · weightᵀ
  CrossEntropyOp loss;     ///< the loss of the logits
  CrossEntropyGradOp grad; ///< their gradient (a training step), or null
  MatmulOp inputGrad;      ///< gradient · weight, or null
  ReshapeOp gradRows;      ///< the gradient as [tokens, vocab], or null
  MatmulOp weightGrad;     ///< gradient rowsᵀ · hidden rows, or null
  int64_t tokens = 0, vocab = 0, width = 0;
};

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// `v` defined before `at` in `at`'s block (or an argument of that block).
bool availableAt(Value v, Operation *at) {
  if (!v)
    return true;
  if (auto arg = dyn_cast<BlockArgument>(v))
    return arg.getOwner() == at->getBlock();
  Operation *def = v.getDefiningOp();
  return def->getBlock() == at->getBlock() && def->isBeforeInBlock(at);
}

/// Every reader of `v` comes after `at`, in its block.
bool readAfter(Value v, Operation *at) {
  return llvm::all_of(v.getUsers(), [&](Operation *user) {
    return user->getBlock() == at->getBlock() && at->isBeforeInBlock(user);
  });
}

/// The head's gradient GEMMs: `gradient · weight` (same orientation as the
/// head) and, through a reshape to [tokens, vocab], `rowsᵀ · hidden rows`
/// into an FP32 result. Fails on any other reader.
LogicalResult matchGradients(LossHead &m) {
  for (Operation *user : m.grad.getLogitsGrad().getUsers()) {
    if (auto mm = dyn_cast<MatmulOp>(user);
        mm && !m.inputGrad && mm.getLhs() == m.grad.getLogitsGrad() &&
        mm.getRhs() == m.head.getRhs() && !mm.getTransposeLhs() &&
        mm.getTransposeRhs() != m.head.getTransposeRhs() && !mm.getAcc()) {
      m.inputGrad = mm;
      continue;
    }
    auto rows = dyn_cast<ReshapeOp>(user);
    if (!rows || m.gradRows || !rows->hasOneUse() ||
        typeOf(rows.getResult()).getRank() != 2)
      return failure();
    auto mm = dyn_cast<MatmulOp>(*rows->user_begin());
    auto hidden = mm ? mm.getRhs().getDefiningOp<ReshapeOp>() : ReshapeOp();
    if (!mm || mm.getLhs() != rows.getResult() || !mm.getTransposeLhs() ||
        mm.getTransposeRhs() || !hidden ||
        hidden.getInput() != m.head.getLhs() || !m.head.getTransposeRhs() ||
        !(mm.getAcc() || typeOf(mm.getResult()).getElementType().isF32()))
      return failure();
    m.gradRows = rows;
    m.weightGrad = mm;
  }
  return success(m.inputGrad != nullptr);
}

/// The LM head behind `loss`, when the pass knows its form.
FailureOr<LossHead> match(CrossEntropyOp loss) {
  LossHead m;
  m.loss = loss;
  m.head = loss.getLogits().getDefiningOp<MatmulOp>();
  if (!m.head || m.head.getAcc() || m.head.getTransposeLhs() ||
      typeOf(m.head.getRhs()).getRank() != 2 || loss.getDivisor())
    return failure();
  for (Operation *user : m.head.getResult().getUsers()) {
    if (user == loss.getOperation())
      continue;
    auto grad = dyn_cast<CrossEntropyGradOp>(user);
    if (!grad || m.grad || grad.getLogits() != loss.getLogits() ||
        grad.getTargets() != loss.getTargets() ||
        grad.getLossMask() != loss.getLossMask() || grad.getDivisor() ||
        grad.getIgnoreIndex() != loss.getIgnoreIndex() ||
        grad.getVocabShards() != loss.getVocabShards())
      return failure();
    m.grad = grad;
  }
  if (m.grad && failed(matchGradients(m)))
    return failure();
  ArrayRef<int64_t> logits = typeOf(loss.getLogits()).getShape();
  m.vocab = logits.back();
  m.tokens = typeOf(loss.getTargets()).getNumElements();
  m.width = typeOf(m.head.getLhs()).getShape().back();
  // Everything the chunks read exists where they go (the gradient's place,
  // or the loss's), and everything they replace is read after it.
  Operation *at = m.grad ? m.grad.getOperation() : loss.getOperation();
  for (Value v : std::initializer_list<Value>{
           m.head.getLhs(), m.head.getRhs(), loss.getTargets(),
           loss.getLossMask(), m.grad ? m.grad.getLossGrad() : Value(),
           m.weightGrad ? m.weightGrad.getAcc() : Value()})
    if (!availableAt(v, at))
      return failure();
  for (Operation *op : {m.loss.getOperation(), m.inputGrad.getOperation(),
                        m.weightGrad.getOperation()})
    if (op && !readAfter(op->getResult(0), at))
      return failure();
  return m;
}

/// A reshape of `v` to `shape` (same element type).
Value reshaped(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> shape) {
  if (!v)
    return v;
  return ReshapeOp::create(
      b, loc, RankedTensorType::get(shape, typeOf(v).getElementType()), v);
}

/// Rows [start, start + n) of the [rows, ...] tensor `v`.
Value rowsOf(OpBuilder &b, Location loc, Value v, int64_t start, int64_t n) {
  if (!v)
    return v;
  SmallVector<int64_t> shape(typeOf(v).getShape());
  shape[0] = n;
  return SliceOp::create(
      b, loc, RankedTensorType::get(shape, typeOf(v).getElementType()), v,
      b.getI64IntegerAttr(start));
}

/// A GEMM like `like` (its flags and attributes) on other operands.
Value gemmLike(OpBuilder &b, MatmulOp like, ArrayRef<int64_t> shape, Value lhs,
               Value rhs, Value acc) {
  Type element = typeOf(like.getResult()).getElementType();
  auto gemm = MatmulOp::create(
      b, like.getLoc(), RankedTensorType::get(shape, element), lhs, rhs,
      like.getTransposeLhs(), like.getTransposeRhs(), acc);
  gemm->setDiscardableAttrs(like->getDiscardableAttrDictionary());
  return gemm.getResult();
}

/// "1.16 GiB", "128.0 MiB", "64.0 KiB", "256 B".
std::string sizeText(double bytes) {
  if (bytes < 1024)
    return llvm::formatv("{0} B", int64_t(bytes)).str();
  if (bytes >= double(1 << 30))
    return llvm::formatv("{0:F2} GiB", bytes / double(1 << 30)).str();
  if (bytes >= double(1 << 20))
    return llvm::formatv("{0:F1} MiB", bytes / double(1 << 20)).str();
  return llvm::formatv("{0:F1} KiB", bytes / 1024.0).str();
}

/// Replaces `m` by `m.tokens / chunk` chunks.
void rewrite(LossHead &m, int64_t chunk) {
  CrossEntropyOp loss = m.loss;
  Operation *at = m.grad ? m.grad.getOperation() : loss.getOperation();
  OpBuilder b(at);
  Location loc = loss.getLoc();
  int64_t n = (m.tokens + chunk - 1) / chunk, last = m.tokens - (n - 1) * chunk;
  Value hidden = reshaped(b, loc, m.head.getLhs(), {m.tokens, m.width});
  Value targets = reshaped(b, loc, loss.getTargets(), {m.tokens});
  Value mask = reshaped(b, loc, loss.getLossMask(), {m.tokens});
  auto weight = LossWeightOp::create(b, loc, loss.getType(), targets, mask,
                                     loss.getIgnoreIndexAttr());
  int64_t logitBytes = storedBytes(
      RankedTensorType::get({1}, typeOf(loss.getLogits()).getElementType()));
  weight->setAttr(
      Infir2Dialect::getChunkedAttrName(),
      b.getStringAttr(llvm::formatv(
          "the LM head and the loss in {0} chunks of {1} tokens{2}: {3} of "
          "logits live at a time instead of {4}",
          n, chunk,
          last == chunk ? std::string()
                        : llvm::formatv(" (the last of {0})", last).str(),
          sizeText(double(chunk) * m.vocab * logitBytes),
          sizeText(double(m.tokens) * m.vocab * logitBytes))));
  Value total, weightGrad = m.weightGrad ? m.weightGrad.getAcc() : Value();
  SmallVector<Value> inputGrads;
  for (int64_t c = 0; c < n; ++c) {
    int64_t size = c + 1 < n ? chunk : last;
    Value rows = rowsOf(b, loc, hidden, c * chunk, size);
    Value t = rowsOf(b, loc, targets, c * chunk, size);
    Value w = rowsOf(b, loc, mask, c * chunk, size);
    Value logits =
        gemmLike(b, m.head, {size, m.vocab}, rows, m.head.getRhs(), Value());
    Value part = CrossEntropyOp::create(b, loc, loss.getType(), logits, t, w,
                                        weight, loss.getIgnoreIndexAttr(),
                                        loss.getVocabShardsAttr());
    total = total ? AddOp::create(b, loc, total, part).getResult() : part;
    if (!m.grad)
      continue;
    Value grad = CrossEntropyGradOp::create(
        b, m.grad.getLoc(),
        RankedTensorType::get({size, m.vocab},
                              typeOf(m.grad.getLogitsGrad()).getElementType()),
        logits, t, w, m.grad.getLossGrad(), weight, m.grad.getIgnoreIndexAttr(),
        m.grad.getVocabShardsAttr());
    inputGrads.push_back(gemmLike(b, m.inputGrad, {size, m.width}, grad,
                                  m.inputGrad.getRhs(), Value()));
    if (m.weightGrad)
      weightGrad =
          gemmLike(b, m.weightGrad, typeOf(m.weightGrad.getResult()).getShape(),
                   grad, rows, weightGrad);
  }
  loss.getResult().replaceAllUsesWith(total);
  if (m.grad) {
    Value all = ConcatOp::create(
        b, loc,
        RankedTensorType::get({m.tokens, m.width},
                              typeOf(m.inputGrad.getResult()).getElementType()),
        inputGrads);
    m.inputGrad.getResult().replaceAllUsesWith(
        reshaped(b, loc, all, typeOf(m.inputGrad.getResult()).getShape()));
    m.inputGrad->erase();
    if (m.weightGrad) {
      m.weightGrad.getResult().replaceAllUsesWith(weightGrad);
      Operation *hiddenRows = m.weightGrad.getRhs().getDefiningOp();
      m.weightGrad->erase();
      m.gradRows->erase();
      if (hiddenRows->use_empty())
        hiddenRows->erase();
    }
    m.grad->erase();
  }
  loss->erase();
  m.head->erase();
}

/// The chunk for `tokens` rows when `fit` rows' logits fit the budget: the
/// largest divisor of `tokens` that fits, if it is at least half of `fit`
/// (equal chunks); else `fit` rounded down to a multiple of 64 (a ragged
/// last chunk), so that an awkward count never makes tiny chunks.
int64_t chunkFor(int64_t tokens, int64_t fit) {
  fit = std::max<int64_t>(fit, 1);
  if (fit >= tokens)
    return tokens;
  for (int64_t d = fit; d >= 1 && 2 * d >= fit; --d)
    if (tokens % d == 0)
      return d;
  return fit >= 64 ? fit / 64 * 64 : fit;
}

struct ChunkLossPass : public infir2::impl::ChunkLossPassBase<ChunkLossPass> {
  using Base::Base;
  void runOnOperation() override {
    if (tokens < 0 || chunkBytes <= 0) {
      getOperation().emitError()
          << "--infir2-chunk-loss: tokens must be at least 0 and chunk-bytes "
             "positive";
      return signalPassFailure();
    }
    SmallVector<CrossEntropyOp> losses;
    getOperation().walk([&](CrossEntropyOp op) { losses.push_back(op); });
    for (CrossEntropyOp op : losses) {
      FailureOr<LossHead> m = match(op);
      if (failed(m)) {
        if (tokens)
          op.emitWarning() << "--infir2-chunk-loss: tokens=" << int64_t(tokens)
                           << " is not applied to this loss: its logits are "
                              "not a GEMM's read by the loss and its gradient "
                              "alone, as the recipes make them";
        continue;
      }
      int64_t logitBytes = storedBytes(RankedTensorType::get(
          {m->vocab}, typeOf(op.getLogits()).getElementType()));
      if (logitBytes == 0) // an empty vocabulary: nothing to chunk
        continue;
      int64_t chunk = tokens ? int64_t(tokens)
                             : chunkFor(m->tokens, chunkBytes / logitBytes);
      if (chunk < m->tokens)
        rewrite(*m, chunk);
    }
  }
};

} // namespace
