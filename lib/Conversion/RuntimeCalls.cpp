//===- RuntimeCalls.cpp - The runtime call each op becomes ----------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Each op's entry point, operands and attributes. The attributes are the
// entry's struct (runtime/include/infir2/runtime/Attributes.h, generated
// from ABI.def) filled by name and encoded into words, the same struct the
// backends decode.
//
//===----------------------------------------------------------------------===//

#include "RuntimeCalls.h"

#include "infir2/Dialect/FP8/IR/FP8Ops.h"
#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"
#include "infir2/runtime/Attributes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace infir2;
namespace attrs = infir2::rt::attrs;
using attrs::encoded;

namespace {

/// The block shape of `granularity` for a tensor `v`, as attribute words.
std::vector<double> blockOf(fp8::GranularityAttrInterface granularity,
                            Value v) {
  ArrayRef<int64_t> shape = cast<RankedTensorType>(v.getType()).getShape();
  // The op verifiers have checked that the blocks tile the shape.
  FailureOr<SmallVector<int64_t>> block =
      granularity.getBlockShape(shape, [] { return InFlightDiagnostic(); });
  return std::vector<double>(block->begin(), block->end());
}

/// Fills the fields every quantize_dual-shaped entry shares (quantize_dual
/// and the fused producers'): the format, the scale rule and both layouts'
/// blocks, viewing `blocks`, which must outlive the encoding.
template <typename A>
void setQuantizeDual(A &a, fp8::QuantizeDualOp q,
                     std::vector<double> (&blocks)[2]) {
  a.format = q.getFormat() == fp8::Format::e5m2 ? 1 : 0;
  a.pow2 = q.getScaleRule() == fp8::ScaleRule::pow2;
  blocks[0] = blockOf(q.getGranularity(), q.getInput());
  blocks[1] = blockOf(q.getTransposedGranularity(), q.getDataT());
  a.block = attrs::Array<int64_t>(blocks[0]);
  a.block_t = attrs::Array<int64_t>(blocks[1]);
}

/// The attributes of attention or its gradient (`A`, attrs::attention or
/// attrs::attention_grad: the same fields) of op `a`.
template <typename A, typename Op> A attentionAttrs(Op a) {
  A out;
  out.heads = a.getNumHeads();
  out.kv_heads = a.getNumKvHeads();
  out.head_dim = a.getHeadDim();
  out.scale = a.getEffectiveScale();
  out.causal = a.getCausal();
  out.has_segments = bool(a.getSegments());
  return out;
}

} // namespace

FailureOr<std::optional<CallSpec>> infir2::callFor(Operation *op) {
  CallSpec c;
  c.operands.append(op->operand_begin(), op->operand_end());
  c.operands.append(op->result_begin(), op->result_end());
  // An accumulator (the op's last operand) goes after the results, so the
  // other operands keep their places; its flag is the entry's has_acc.
  Value acc;
  if (auto accumulating = dyn_cast<AccumulatingOpInterface>(op))
    acc = accumulating.getAccumulator();
  auto call = [&](StringRef entry, const auto &a) {
    c.entry = entry.str();
    c.attrs = encoded(a);
    return success();
  };
  auto plain = [&](StringRef entry) {
    c.entry = entry.str();
    return success();
  };
  auto attention = [&](auto a, const auto &fields, StringRef entry) {
    // The optional segments go after the results, so the other operands
    // keep their places.
    if (Value segments = a.getSegments()) {
      c.operands.erase(llvm::find(c.operands, segments));
      c.operands.push_back(segments);
    }
    return call(entry, fields);
  };
  auto crossEntropy = [&](auto ce, auto fields, StringRef entry) {
    fields.ignore_index = ce.getIgnoreIndexAttr().getInt();
    fields.has_mask = bool(ce.getLossMask());
    return call(entry, fields);
  };
  // Array fields view these until the call is encoded.
  std::vector<double> words, blocks[2];
  LogicalResult r =
      llvm::TypeSwitch<Operation *, LogicalResult>(op)
          .Case([&](ReshapeOp) { return plain(""); })
          .Case([&](ConvertOp) { return plain("copy"); })
          .Case([&](TransposeOp t) {
            words.assign(t.getPermutation().begin(), t.getPermutation().end());
            attrs::transpose a;
            a.permutation = attrs::Array<int64_t>(words);
            return call("transpose", a);
          })
          .Case([&](arith::ConstantOp k) -> LogicalResult {
            auto dense = dyn_cast<DenseElementsAttr>(k.getValue());
            if (!dense || !dense.isSplat() ||
                !isa<FloatType>(dense.getElementType()))
              return op->emitOpError()
                     << "only splat float constants can be lowered";
            attrs::fill a;
            a.value = dense.getSplatValue<APFloat>().convertToDouble();
            return call("fill", a);
          })
          .Case([&](EmbeddingOp) { return plain("embedding"); })
          .Case([&](MatmulOp m) {
            attrs::matmul a;
            a.transpose_lhs = m.getTransposeLhs();
            a.transpose_rhs = m.getTransposeRhs();
            a.has_acc = bool(acc);
            return call("matmul", a);
          })
          .Case([&](RMSNormOp n) {
            attrs::rms_norm a;
            a.epsilon = n.getEpsilon().convertToDouble();
            return call("rms_norm", a);
          })
          .Case<RopeOp, RopeGradOp>([&](auto rope) {
            attrs::rope a;
            a.head_dim = rope.getHeadDim();
            a.theta = rope.getTheta().convertToDouble();
            a.direction = isa<RopeGradOp>(op) ? -1.0 : 1.0;
            return call("rope", a);
          })
          .Case([&](AttentionOp a) {
            return attention(a, attentionAttrs<attrs::attention>(a),
                             "attention");
          })
          .Case([&](AttentionGradOp a) {
            return attention(a, attentionAttrs<attrs::attention_grad>(a),
                             "attention_grad");
          })
          .Case([&](CacheWriteOp) { return plain("cache_write"); })
          .Case([&](CacheAttentionOp ca) {
            attrs::cache_attention a;
            a.heads = ca.getNumHeads();
            a.kv_heads = ca.getNumKvHeads();
            a.head_dim = ca.getHeadDim();
            a.scale = ca.getEffectiveScale();
            return call("cache_attention", a);
          })
          .Case([&](SiluOp) { return plain("silu"); })
          .Case([&](SwigluOp) { return plain("swiglu"); })
          .Case([&](AddOp) { return plain("add"); })
          .Case([&](MulOp) { return plain("mul"); })
          .Case([&](CrossEntropyOp ce) {
            return crossEntropy(ce, attrs::cross_entropy{}, "cross_entropy");
          })
          .Case([&](CrossEntropyGradOp ce) {
            return crossEntropy(ce, attrs::cross_entropy_grad{},
                                "cross_entropy_grad");
          })
          .Case([&](ReduceSumOp) {
            attrs::reduce_sum a;
            a.has_acc = bool(acc);
            return call("reduce_sum", a);
          })
          .Case([&](SiluGradOp) { return plain("silu_grad"); })
          .Case([&](SwigluGradOp) { return plain("swiglu_grad"); })
          .Case([&](RMSNormGradOp n) {
            attrs::rms_norm_grad a;
            a.epsilon = n.getEpsilon().convertToDouble();
            a.has_acc = bool(acc);
            a.has_residual = bool(n.getResidual());
            return call("rms_norm_grad", a);
          })
          .Case([&](EmbeddingGradOp) {
            attrs::embedding_grad a;
            a.has_acc = bool(acc);
            return call("embedding_grad", a);
          })
          .Case([&](GlobalNormOp g) {
            attrs::global_norm a;
            a.across_ranks = g.getAcrossRanks();
            return call("global_norm", a);
          })
          .Case([&](AllReduceOp) { return plain("all_reduce"); })
          .Case([&](ReduceScatterOp rs) {
            attrs::reduce_scatter a;
            a.world_size = rs.getWorldSize();
            return call("reduce_scatter", a);
          })
          .Case([&](AllGatherOp g) {
            attrs::all_gather a;
            a.world_size = g.getWorldSize();
            return call("all_gather", a);
          })
          .Case([&](AdamWOp w) {
            attrs::adamw a;
            a.beta1 = w.getBeta1().convertToDouble();
            a.beta2 = w.getBeta2().convertToDouble();
            a.epsilon = w.getEpsilon().convertToDouble();
            a.weight_decay = w.getWeightDecay().convertToDouble();
            a.max_grad_norm = w.getMaxGradNorm().convertToDouble();
            return call("adamw", a);
          })
          .Case([&](AdamWGroupOp g) {
            // Operands: params, grads, moments1, moments2 (n each), the
            // four scalars; then new params, moments1, moments2 (n each)
            // and the working copies (k).
            attrs::adamw_group a;
            a.beta1 = g.getBeta1().convertToDouble();
            a.beta2 = g.getBeta2().convertToDouble();
            a.epsilon = g.getEpsilon().convertToDouble();
            a.max_grad_norm = g.getMaxGradNorm().convertToDouble();
            a.n = int64_t(g.getParams().size());
            words.assign(g.getWeightDecays().begin(),
                         g.getWeightDecays().end());
            a.weight_decay = attrs::Array<double>(words);
            a.k = int64_t(g.getWorking().size());
            blocks[0].assign(g.getWorking().begin(), g.getWorking().end());
            a.working = attrs::Array<int64_t>(blocks[0]);
            return call("adamw_group", a);
          })
          .Case([&](SGDOp s) {
            attrs::sgd a;
            a.weight_decay = s.getWeightDecay().convertToDouble();
            a.max_grad_norm = s.getMaxGradNorm().convertToDouble();
            return call("sgd", a);
          })
          .Case([&](fp8::QuantizeOp q) {
            attrs::quantize a;
            a.format = q.getFormat() == fp8::Format::e5m2 ? 1 : 0;
            a.pow2 = q.getScaleRule() == fp8::ScaleRule::pow2;
            words = blockOf(q.getGranularity(), q.getInput());
            a.block = attrs::Array<int64_t>(words);
            return call("quantize", a);
          })
          .Case([&](fp8::QuantizeDualOp q) {
            attrs::quantize_dual a;
            setQuantizeDual(a, q, blocks);
            return call("quantize_dual", a);
          })
          .Case([&](fp8::DequantizeOp d) {
            attrs::dequantize a;
            words = blockOf(d.getGranularity(), d.getData());
            a.block = attrs::Array<int64_t>(words);
            return call("dequantize", a);
          })
          .Case([&](fp8::ScaledMatmulOp m) {
            attrs::scaled_matmul a;
            blocks[0] = blockOf(m.getLhsGranularity(), m.getLhs());
            blocks[1] = blockOf(m.getRhsGranularity(), m.getRhs());
            a.lhs_block = attrs::Array<int64_t>(blocks[0]);
            a.rhs_block = attrs::Array<int64_t>(blocks[1]);
            a.has_acc = bool(acc);
            return call("scaled_matmul", a);
          })
          .Case([&](fp8::AmaxOp m) {
            attrs::amax a;
            words = blockOf(m.getGranularity(), m.getInput());
            a.block = attrs::Array<int64_t>(words);
            return call("amax", a);
          })
          .Default([&](Operation *) {
            return op->emitOpError()
                   << "has no runtime entry point to lower to";
          });
  if (failed(r))
    return failure();
  if (acc) {
    c.operands.erase(c.operands.begin() + op->getNumOperands() - 1);
    c.operands.push_back(acc);
  }
  // A norm gradient's residual (operand 3) goes last.
  if (auto norm = dyn_cast<RMSNormGradOp>(op); norm && norm.getResidual()) {
    c.operands.erase(c.operands.begin() + 3);
    c.operands.push_back(norm.getResidual());
  }
  if (c.entry.empty())
    return std::optional<CallSpec>();
  return std::optional<CallSpec>(std::move(c));
}

std::optional<CallSpec> infir2::fusedCallFor(Operation *producer,
                                             Operation *next) {
  auto q = dyn_cast_or_null<fp8::QuantizeDualOp>(next);
  if (!q || !isa_and_nonnull<fp8::FusedOp>(producer->getParentOp()) ||
      q->getParentOp() != producer->getParentOp() ||
      q.getInput() != producer->getResult(0))
    return std::nullopt;
  // The producer's operands and result, then the quantization's results.
  CallSpec c;
  c.operands.append(producer->operand_begin(), producer->operand_end());
  c.operands.push_back(producer->getResult(0));
  c.operands.append(q->result_begin(), q->result_end());
  std::vector<double> blocks[2];
  if (auto norm = dyn_cast<RMSNormOp>(producer)) {
    attrs::rms_norm_quantize_dual a;
    a.epsilon = norm.getEpsilon().convertToDouble();
    setQuantizeDual(a, q, blocks);
    c.entry = "rms_norm_quantize_dual";
    c.attrs = encoded(a);
    return c;
  }
  if (isa<SwigluOp>(producer)) {
    attrs::swiglu_quantize_dual a;
    setQuantizeDual(a, q, blocks);
    c.entry = "swiglu_quantize_dual";
    c.attrs = encoded(a);
    return c;
  }
  return std::nullopt;
}
