//===- RuntimeCallModels.cpp - The runtime call each op becomes -----------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// rtir::RuntimeCallOpInterface for InfiR2's ops, as external models: one
// `callOf` per op gives its entry point, operands and attributes. The
// attributes are the entry's struct (runtime/include/infir2/runtime/
// Attributes.h, generated from ABI.def) filled by name and encoded into
// words, the same struct the backends decode.
//
//===----------------------------------------------------------------------===//

#include "infir2/Conversion/RuntimeCallModels.h"

#include "infir2/Dialect/FP8/IR/FP8Dialect.h"
#include "infir2/Dialect/FP8/IR/FP8Ops.h"
#include "infir2/Dialect/Infir2/IR/Infir2Dialect.h"
#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"
#include "infir2/Dialect/Runtime/IR/RuntimeInterfaces.h"
#include "infir2/runtime/Attributes.h"
#include "infir2/runtime/FP8.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace infir2;
using rtir::RuntimeCall;
namespace attrs = infir2::rt::attrs;
using attrs::encoded;

namespace {

/// The accumulator `op` adds into (its last operand), or null. fp8's
/// scaled_matmul is read directly: its AccumulatingOpInterface is an
/// external model that a context may lack.
Value accumulatorOf(Operation *op) {
  if (auto gemm = dyn_cast<fp8::ScaledMatmulOp>(op))
    return gemm.getAcc();
  if (auto accumulating = dyn_cast<AccumulatingOpInterface>(op))
    return accumulating.getAccumulator();
  return Value();
}

/// The call of `op` to `entry`: its operands, then its results; an
/// accumulator goes after the results, so the other operands keep their
/// places and the entry's `has_acc` says whether it is there.
RuntimeCall callTo(Operation *op, StringRef entry,
                   std::vector<double> words = {}) {
  RuntimeCall c{entry.str(), {}, std::move(words)};
  c.operands.append(op->operand_begin(), op->operand_end());
  c.operands.append(op->result_begin(), op->result_end());
  if (Value acc = accumulatorOf(op)) {
    c.operands.erase(c.operands.begin() + op->getNumOperands() - 1);
    c.operands.push_back(acc);
  }
  return c;
}

/// Moves operand `index` of `c` last.
RuntimeCall &moveLast(RuntimeCall &c, size_t index) {
  Value v = c.operands[index];
  c.operands.erase(c.operands.begin() + index);
  c.operands.push_back(v);
  return c;
}

bool hasAccumulator(Operation *op) { return bool(accumulatorOf(op)); }

/// The block shape of `granularity` for a tensor `v`. The array fields of an
/// attribute struct view these words until the call is encoded.
std::vector<double> blockOf(fp8::GranularityAttrInterface granularity,
                            Value v) {
  ArrayRef<int64_t> shape = cast<RankedTensorType>(v.getType()).getShape();
  // The op verifiers have checked that the blocks tile the shape.
  FailureOr<SmallVector<int64_t>> block =
      granularity.getBlockShape(shape, [] { return InFlightDiagnostic(); });
  return std::vector<double>(block->begin(), block->end());
}

/// The quantizers' scale_rule word for a scale rule (FP8.h's ScaleRule).
int64_t scaleRuleWord(fp8::ScaleRule rule) {
  switch (rule) {
  case fp8::ScaleRule::fp32:
    return int64_t(rt::ScaleRule::FP32);
  case fp8::ScaleRule::pow2:
    return int64_t(rt::ScaleRule::Pow2);
  case fp8::ScaleRule::floor:
    return int64_t(rt::ScaleRule::Floor);
  }
  llvm_unreachable("unknown scale rule");
}

/// Fills the fields every quantize_dual-shaped entry shares (quantize_dual
/// and the fused producers'): the format, the scale rule and both layouts'
/// blocks, viewing `blocks`.
template <typename A>
void setQuantizeDual(A &a, fp8::QuantizeDualOp q,
                     std::vector<double> (&blocks)[2]) {
  a.format = q.getFormat() == fp8::Format::e5m2 ? 1 : 0;
  a.scale_rule = scaleRuleWord(q.getScaleRule());
  blocks[0] = blockOf(q.getGranularity(), q.getInput());
  blocks[1] = blockOf(q.getTransposedGranularity(), q.getDataT());
  a.block = attrs::Array<int64_t>(blocks[0]);
  a.block_t = attrs::Array<int64_t>(blocks[1]);
}

//===----------------------------------------------------------------------===//
// One callOf per op
//===----------------------------------------------------------------------===//

RuntimeCall callOf(ReshapeOp) { return {}; }
// Views: the planner places a slice inside its input, and a concatenation's
// inputs inside it.
RuntimeCall callOf(SliceOp) { return {}; }
RuntimeCall callOf(ConcatOp) { return {}; }
RuntimeCall callOf(ConvertOp op) { return callTo(op, "copy"); }
RuntimeCall callOf(CacheWriteOp op) { return callTo(op, "cache_write"); }
RuntimeCall callOf(SiluOp op) { return callTo(op, "silu"); }
RuntimeCall callOf(SwigluOp op) { return callTo(op, "swiglu"); }
RuntimeCall callOf(AddOp op) { return callTo(op, "add"); }
RuntimeCall callOf(MulOp op) { return callTo(op, "mul"); }
RuntimeCall callOf(SiluGradOp op) { return callTo(op, "silu_grad"); }
RuntimeCall callOf(SwigluGradOp op) { return callTo(op, "swiglu_grad"); }
RuntimeCall callOf(AllReduceOp op) { return callTo(op, "all_reduce"); }
// Entering a tensor-parallel region reads the tensor where it lies (a view);
// leaving it sums over the group.
RuntimeCall callOf(TPCopyOp) { return {}; }
RuntimeCall callOf(TPReduceOp op) { return callTo(op, "tp_reduce"); }
/// Sequence parallelism's collectives (`A`: their one field, the dimension).
template <typename A, typename Op>
RuntimeCall alongDimension(Op op, StringRef entry) {
  A a;
  a.dim = op.getDim();
  return callTo(op, entry, encoded(a));
}
RuntimeCall callOf(TPAllGatherOp op) {
  return alongDimension<attrs::tp_all_gather>(op, "tp_all_gather");
}
RuntimeCall callOf(TPReduceScatterOp op) {
  return alongDimension<attrs::tp_reduce_scatter>(op, "tp_reduce_scatter");
}

RuntimeCall callOf(TransposeOp op) {
  std::vector<double> words(op.getPermutation().begin(),
                            op.getPermutation().end());
  attrs::transpose a;
  a.permutation = attrs::Array<int64_t>(words);
  return callTo(op, "transpose", encoded(a));
}

FailureOr<RuntimeCall> callOf(arith::ConstantOp op) {
  auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
  if (!dense || !dense.isSplat() || !isa<FloatType>(dense.getElementType()))
    return op->emitOpError() << "only splat float constants can be lowered";
  attrs::fill a;
  a.value = dense.getSplatValue<APFloat>().convertToDouble();
  return callTo(op, "fill", encoded(a));
}

RuntimeCall callOf(MatmulOp op) {
  attrs::matmul a;
  a.transpose_lhs = op.getTransposeLhs();
  a.transpose_rhs = op.getTransposeRhs();
  a.has_acc = hasAccumulator(op);
  return callTo(op, "matmul", encoded(a));
}

RuntimeCall callOf(RMSNormOp op) {
  attrs::rms_norm a;
  a.epsilon = op.getEpsilon().convertToDouble();
  return callTo(op, "rms_norm", encoded(a));
}

/// rope and its gradient are one entry: the gradient rotates backwards.
template <typename Op> RuntimeCall ropeCall(Op op, double direction) {
  attrs::rope a;
  a.head_dim = op.getHeadDim();
  a.theta = op.getTheta().convertToDouble();
  a.direction = direction;
  return callTo(op, "rope", encoded(a));
}
RuntimeCall callOf(RopeOp op) { return ropeCall(op, 1.0); }
RuntimeCall callOf(RopeGradOp op) { return ropeCall(op, -1.0); }

/// Attention or its gradient (`A`, attrs::attention or attrs::attention_grad:
/// the same fields). The optional segments go after the results, so the
/// other operands keep their places.
template <typename A, typename Op>
RuntimeCall attentionCall(Op op, StringRef entry) {
  A a;
  a.heads = op.getNumHeads();
  a.kv_heads = op.getNumKvHeads();
  a.head_dim = op.getHeadDim();
  a.scale = op.getEffectiveScale();
  a.causal = op.getCausal();
  a.has_segments = bool(op.getSegments());
  RuntimeCall c = callTo(op, entry, encoded(a));
  if (Value segments = op.getSegments())
    moveLast(c, llvm::find(c.operands, segments) - c.operands.begin());
  return c;
}
RuntimeCall callOf(AttentionOp op) {
  return attentionCall<attrs::attention>(op, "attention");
}
RuntimeCall callOf(AttentionGradOp op) {
  return attentionCall<attrs::attention_grad>(op, "attention_grad");
}

RuntimeCall callOf(CacheAttentionOp op) {
  attrs::cache_attention a;
  a.heads = op.getNumHeads();
  a.kv_heads = op.getNumKvHeads();
  a.head_dim = op.getHeadDim();
  a.scale = op.getEffectiveScale();
  return callTo(op, "cache_attention", encoded(a));
}

/// The loss or its gradient (`A`: the same fields).
template <typename A, typename Op>
RuntimeCall crossEntropyCall(Op op, StringRef entry) {
  A a;
  a.ignore_index = op.getIgnoreIndexAttr().getInt();
  a.has_mask = bool(op.getLossMask());
  a.has_divisor = bool(op.getDivisor());
  a.vocab_shards = op.getVocabShards();
  return callTo(op, entry, encoded(a));
}
RuntimeCall callOf(LossWeightOp op) {
  attrs::loss_weight a;
  a.ignore_index = op.getIgnoreIndexAttr().getInt();
  a.has_mask = bool(op.getLossMask());
  return callTo(op, "loss_weight", encoded(a));
}
RuntimeCall callOf(CrossEntropyOp op) {
  return crossEntropyCall<attrs::cross_entropy>(op, "cross_entropy");
}
RuntimeCall callOf(CrossEntropyGradOp op) {
  return crossEntropyCall<attrs::cross_entropy_grad>(op, "cross_entropy_grad");
}

RuntimeCall callOf(ReduceSumOp op) {
  attrs::reduce_sum a;
  a.has_acc = hasAccumulator(op);
  return callTo(op, "reduce_sum", encoded(a));
}

/// The optional residual (operand 3) goes last, after the accumulator.
RuntimeCall callOf(RMSNormGradOp op) {
  attrs::rms_norm_grad a;
  a.epsilon = op.getEpsilon().convertToDouble();
  a.has_acc = hasAccumulator(op);
  a.has_residual = bool(op.getResidual());
  RuntimeCall c = callTo(op, "rms_norm_grad", encoded(a));
  return op.getResidual() ? moveLast(c, 3) : c;
}

RuntimeCall callOf(EmbeddingOp op) {
  attrs::embedding a;
  a.vocab_shards = op.getVocabShards();
  return callTo(op, "embedding", encoded(a));
}

RuntimeCall callOf(EmbeddingGradOp op) {
  attrs::embedding_grad a;
  a.has_acc = hasAccumulator(op);
  a.vocab_shards = op.getVocabShards();
  return callTo(op, "embedding_grad", encoded(a));
}

RuntimeCall callOf(GlobalNormOp op) {
  attrs::global_norm a;
  a.across_ranks = op.getAcrossRanks();
  a.tp_shards = op.getTpShards();
  return callTo(op, "global_norm", encoded(a));
}

RuntimeCall callOf(ReduceScatterOp op) {
  attrs::reduce_scatter a;
  a.world_size = op.getWorldSize();
  return callTo(op, "reduce_scatter", encoded(a));
}

RuntimeCall callOf(AllGatherOp op) {
  attrs::all_gather a;
  a.world_size = op.getWorldSize();
  return callTo(op, "all_gather", encoded(a));
}

RuntimeCall callOf(AdamWOp op) {
  attrs::adamw a;
  a.beta1 = op.getBeta1().convertToDouble();
  a.beta2 = op.getBeta2().convertToDouble();
  a.epsilon = op.getEpsilon().convertToDouble();
  a.weight_decay = op.getWeightDecay().convertToDouble();
  a.max_grad_norm = op.getMaxGradNorm().convertToDouble();
  return callTo(op, "adamw", encoded(a));
}

/// Operands: params, grads, moments1, moments2 (n each), the four scalars;
/// then new params, moments1, moments2 (n each) and the working copies (k).
RuntimeCall callOf(AdamWGroupOp op) {
  attrs::adamw_group a;
  a.beta1 = op.getBeta1().convertToDouble();
  a.beta2 = op.getBeta2().convertToDouble();
  a.epsilon = op.getEpsilon().convertToDouble();
  a.max_grad_norm = op.getMaxGradNorm().convertToDouble();
  a.n = int64_t(op.getParams().size());
  std::vector<double> decays(op.getWeightDecays().begin(),
                             op.getWeightDecays().end());
  a.weight_decay = attrs::Array<double>(decays);
  a.k = int64_t(op.getWorking().size());
  std::vector<double> working(op.getWorking().begin(), op.getWorking().end());
  a.working = attrs::Array<int64_t>(working);
  return callTo(op, "adamw_group", encoded(a));
}

RuntimeCall callOf(SGDOp op) {
  attrs::sgd a;
  a.weight_decay = op.getWeightDecay().convertToDouble();
  a.max_grad_norm = op.getMaxGradNorm().convertToDouble();
  return callTo(op, "sgd", encoded(a));
}

RuntimeCall callOf(fp8::QuantizeOp op) {
  attrs::quantize a;
  a.format = op.getFormat() == fp8::Format::e5m2 ? 1 : 0;
  a.scale_rule = scaleRuleWord(op.getScaleRule());
  std::vector<double> block = blockOf(op.getGranularity(), op.getInput());
  a.block = attrs::Array<int64_t>(block);
  return callTo(op, "quantize", encoded(a));
}

RuntimeCall callOf(fp8::QuantizeDualOp op) {
  attrs::quantize_dual a;
  std::vector<double> blocks[2];
  setQuantizeDual(a, op, blocks);
  return callTo(op, "quantize_dual", encoded(a));
}

RuntimeCall callOf(fp8::DequantizeOp op) {
  attrs::dequantize a;
  std::vector<double> block = blockOf(op.getGranularity(), op.getData());
  a.block = attrs::Array<int64_t>(block);
  return callTo(op, "dequantize", encoded(a));
}

RuntimeCall callOf(fp8::ScaledMatmulOp op) {
  attrs::scaled_matmul a;
  std::vector<double> lhs = blockOf(op.getLhsGranularity(), op.getLhs());
  std::vector<double> rhs = blockOf(op.getRhsGranularity(), op.getRhs());
  a.lhs_block = attrs::Array<int64_t>(lhs);
  a.rhs_block = attrs::Array<int64_t>(rhs);
  a.has_acc = hasAccumulator(op);
  return callTo(op, "scaled_matmul", encoded(a));
}

RuntimeCall callOf(fp8::AmaxOp op) {
  attrs::amax a;
  std::vector<double> block = blockOf(op.getGranularity(), op.getInput());
  a.block = attrs::Array<int64_t>(block);
  return callTo(op, "amax", encoded(a));
}

//===----------------------------------------------------------------------===//
// Fused producers
//===----------------------------------------------------------------------===//

/// The quantize_dual of `producer`'s result scheduled right after it in the
/// same fp8.fused region, or null.
fp8::QuantizeDualOp fusedQuantization(Operation *producer, Operation *next) {
  auto q = dyn_cast_or_null<fp8::QuantizeDualOp>(next);
  if (!q || !isa_and_nonnull<fp8::FusedOp>(producer->getParentOp()) ||
      q->getParentOp() != producer->getParentOp() ||
      q.getInput() != producer->getResult(0))
    return nullptr;
  return q;
}

/// The fused call of `producer` and its quantization `q`: the producer's
/// operands and result, then the quantization's results.
template <typename A>
RuntimeCall fusedCall(Operation *producer, fp8::QuantizeDualOp q,
                      StringRef entry, A a) {
  std::vector<double> blocks[2];
  setQuantizeDual(a, q, blocks);
  RuntimeCall c{entry.str(), {}, encoded(a)};
  c.operands.append(producer->operand_begin(), producer->operand_end());
  c.operands.push_back(producer->getResult(0));
  c.operands.append(q->result_begin(), q->result_end());
  return c;
}

std::optional<RuntimeCall> fusedCallOf(RMSNormOp op, Operation *next) {
  fp8::QuantizeDualOp q = fusedQuantization(op, next);
  if (!q)
    return std::nullopt;
  attrs::rms_norm_quantize_dual a;
  a.epsilon = op.getEpsilon().convertToDouble();
  return fusedCall(op, q, "rms_norm_quantize_dual", a);
}

std::optional<RuntimeCall> fusedCallOf(SwigluOp op, Operation *next) {
  fp8::QuantizeDualOp q = fusedQuantization(op, next);
  if (!q)
    return std::nullopt;
  return fusedCall(op, q, "swiglu_quantize_dual",
                   attrs::swiglu_quantize_dual{});
}

//===----------------------------------------------------------------------===//
// The models
//===----------------------------------------------------------------------===//

template <typename Op>
struct RuntimeCallModel
    : public rtir::RuntimeCallOpInterface::ExternalModel<RuntimeCallModel<Op>,
                                                         Op> {
  FailureOr<RuntimeCall> getRuntimeCall(Operation *op) const {
    return callOf(cast<Op>(op));
  }
};

/// An op that also fuses with the quantization of its result.
template <typename Op>
struct FusingRuntimeCallModel
    : public rtir::RuntimeCallOpInterface::ExternalModel<
          FusingRuntimeCallModel<Op>, Op> {
  FailureOr<RuntimeCall> getRuntimeCall(Operation *op) const {
    return callOf(cast<Op>(op));
  }
  std::optional<RuntimeCall> getFusedRuntimeCall(Operation *op,
                                                 Operation *next) const {
    return fusedCallOf(cast<Op>(op), next);
  }
};

template <typename... Ops> void attachModels(MLIRContext *ctx) {
  (Ops::template attachInterface<RuntimeCallModel<Ops>>(*ctx), ...);
}

} // namespace

void infir2::registerRuntimeCallModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, Infir2Dialect *) {
    attachModels<ReshapeOp, ConvertOp, TransposeOp, EmbeddingOp, MatmulOp,
                 RopeOp, RopeGradOp, AttentionOp, AttentionGradOp, CacheWriteOp,
                 CacheAttentionOp, SiluOp, AddOp, MulOp, CrossEntropyOp,
                 CrossEntropyGradOp, ReduceSumOp, SiluGradOp, SwigluGradOp,
                 RMSNormGradOp, EmbeddingGradOp, GlobalNormOp, AllReduceOp,
                 ReduceScatterOp, AllGatherOp, AdamWOp, AdamWGroupOp, SGDOp,
                 SliceOp, ConcatOp, LossWeightOp, TPCopyOp, TPReduceOp,
                 TPAllGatherOp, TPReduceScatterOp>(ctx);
    RMSNormOp::attachInterface<FusingRuntimeCallModel<RMSNormOp>>(*ctx);
    SwigluOp::attachInterface<FusingRuntimeCallModel<SwigluOp>>(*ctx);
  });
  registry.addExtension(+[](MLIRContext *ctx, fp8::FP8Dialect *) {
    attachModels<fp8::QuantizeOp, fp8::QuantizeDualOp, fp8::DequantizeOp,
                 fp8::ScaledMatmulOp, fp8::AmaxOp>(ctx);
  });
  registry.addExtension(+[](MLIRContext *ctx, arith::ArithDialect *) {
    attachModels<arith::ConstantOp>(ctx);
  });
}
