//===- Interpreter.cpp - FP64 reference interpreter -----------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The driver: values (Tensor), the dispatch from an op to its rule, arith
// constants and the entry point. The rules live in ModelOps.cpp,
// GradientOps.cpp, OptimizerOps.cpp and FP8Ops.cpp.
//
//===----------------------------------------------------------------------===//

#include "InterpreterImpl.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace infir2;
using namespace infir2::interp;
using namespace infir2::interp::detail;

Tensor::Tensor(ArrayRef<int64_t> shape, double fill) : shape(shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  data.assign(n, fill);
}

//===----------------------------------------------------------------------===//
// arith.constant
//===----------------------------------------------------------------------===//

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

//===----------------------------------------------------------------------===//
// Dispatch
//===----------------------------------------------------------------------===//

LogicalResult Interpreter::run(Operation *op) {
  if (failed(dispatch(op)))
    return failure();
  if (resultObserver && op->getNumResults() > 0) {
    SmallVector<Tensor> results;
    for (Value r : op->getResults())
      results.push_back(get(r));
    resultObserver(op, results);
  }
  return success();
}

LogicalResult Interpreter::dispatch(Operation *op) {
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](EmbeddingOp o) { return embedding(o); })
      .Case([&](MatmulOp o) { return matmul(o); })
      .Case([&](RMSNormOp o) { return rmsNorm(o); })
      .Case([&](RopeOp o) { return rope(o); })
      .Case([&](AttentionOp o) { return attention(o); })
      .Case([&](CacheWriteOp o) { return cacheWrite(o); })
      .Case([&](CacheAttentionOp o) { return cacheAttention(o); })
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
      .Case([&](SliceOp o) {
        const Tensor &x = get(o.getInput());
        Tensor out(shapeOf(o.getResult()));
        int64_t row = x.getNumElements() / x.shape[0];
        std::copy_n(x.data.begin() + o.getStart() * row, out.getNumElements(),
                    out.data.begin());
        set(o.getResult(), std::move(out));
        return success();
      })
      .Case([&](ConcatOp o) {
        Tensor out(shapeOf(o.getResult()));
        auto at = out.data.begin();
        for (Value v : o.getInputs())
          at = std::copy(get(v).data.begin(), get(v).data.end(), at);
        set(o.getResult(), std::move(out));
        return success();
      })
      .Case([&](LossWeightOp o) {
        const Tensor &targets = get(o.getTargets());
        const Tensor *mask = o.getLossMask() ? &get(o.getLossMask()) : nullptr;
        double total = 0.0;
        for (int64_t t = 0; t < targets.getNumElements(); ++t)
          total += tokenWeight(o, targets, mask, t);
        set(o.getResult(), Tensor({}, total));
        return success();
      })
      .Case([&](RMSNormGradOp o) { return rmsNormGrad(o); })
      .Case([&](RopeGradOp o) { return ropeGrad(o); })
      .Case([&](AttentionGradOp o) { return attentionGrad(o); })
      .Case([&](CrossEntropyGradOp o) { return crossEntropyGrad(o); })
      .Case([&](EmbeddingGradOp o) { return embeddingGrad(o); })
      .Case([&](ReduceSumOp o) { return reduceSum(o); })
      .Case([&](GlobalNormOp o) { return globalNorm(o); })
      .Case([&](AdamWOp o) { return adamw(o); })
      .Case([&](AdamWGroupOp o) { return adamwGroup(o); })
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
      .Case([&](TPCopyOp o) {
        set(o.getResult(), get(o.getInput()));
        return success();
      })
      .Case<TPReduceOp, TPAllGatherOp, TPReduceScatterOp>([&](auto o) {
        return o.emitOpError() << "runs over " << o.getSize()
                               << " tensor-parallel ranks: interpret the "
                                  "function with runRanks over that many "
                                  "ranks, one input set a rank";
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

FailureOr<SmallVector<Tensor>>
infir2::interp::run(FunctionOpInterface fn, ArrayRef<Tensor> inputs,
                    const QuantizationObserver &observer,
                    const ResultObserver &resultsSeen) {
  SmallVector<SmallVector<Tensor>> one{SmallVector<Tensor>(inputs)};
  FailureOr<SmallVector<SmallVector<Tensor>>> results =
      runRanks(fn, one, observer, resultsSeen);
  if (failed(results))
    return failure();
  return std::move(results->front());
}

/// tp_all_gather (each rank's slice of dimension `dim` put in rank order)
/// or tp_reduce_scatter (the sum over the ranks, in rank order, rank r
/// keeping slice r), in step over the ranks.
static void alongDimension(Operation &op, std::vector<Interpreter> &ranks) {
  bool gather = isa<TPAllGatherOp>(op);
  int64_t dim = op.getAttrOfType<IntegerAttr>("dim").getInt(),
          n = static_cast<int64_t>(ranks.size());
  Value in = op.getOperand(0), out = op.getResult(0);
  ArrayRef<int64_t> slice =
      cast<RankedTensorType>((gather ? in : out).getType()).getShape();
  int64_t outer = 1;
  for (int64_t i = 0; i < dim; ++i)
    outer *= slice[i];
  int64_t run = 1;
  for (int64_t i = dim, e = static_cast<int64_t>(slice.size()); i < e; ++i)
    run *= slice[i];
  if (gather) {
    Tensor whole(cast<RankedTensorType>(out.getType()).getShape());
    for (auto [r, interp] : llvm::enumerate(ranks))
      for (int64_t o = 0; o < outer; ++o)
        std::copy_n(interp.env.find(in)->second.data.begin() + o * run, run,
                    whole.data.begin() + (o * n + int64_t(r)) * run);
    for (Interpreter &interp : ranks)
      interp.env[out] = whole;
    return;
  }
  Tensor sum = ranks.front().env.find(in)->second;
  for (Interpreter &interp : llvm::drop_begin(ranks))
    for (auto [s, p] :
         llvm::zip_equal(sum.data, interp.env.find(in)->second.data))
      s += p;
  for (auto [r, interp] : llvm::enumerate(ranks)) {
    Tensor part(slice);
    for (int64_t o = 0; o < outer; ++o)
      std::copy_n(sum.data.begin() + (o * n + int64_t(r)) * run, run,
                  part.data.begin() + o * run);
    interp.env[out] = std::move(part);
  }
}

/// The tensor-parallel ranks a loss's vocabulary is split over (1: none).
static int64_t vocabShards(Operation &op) {
  return llvm::TypeSwitch<Operation *, int64_t>(&op)
      .Case<CrossEntropyOp, CrossEntropyGradOp>(
          [](auto o) { return int64_t(o.getVocabShards()); })
      .Default([](Operation *) { return int64_t(1); });
}

/// Runs the loss (or its gradient) `op` on the ranks' logits put side by
/// side, on the first rank's interpreter; every rank gets the loss, or its
/// columns of the gradient.
static LogicalResult wholeVocabulary(Operation &op,
                                     std::vector<Interpreter> &ranks) {
  Value logits = op.getOperand(0), result = op.getResult(0);
  Tensor own = ranks.front().env.find(logits)->second;
  int64_t width = own.shape.back(), rows = own.getNumElements() / width,
          n = static_cast<int64_t>(ranks.size());
  SmallVector<int64_t> shape(own.shape);
  shape.back() = width * n;
  Tensor whole(shape);
  for (auto [r, interp] : llvm::enumerate(ranks)) {
    const Tensor &part = interp.env.find(logits)->second;
    for (int64_t i = 0; i < rows; ++i)
      std::copy_n(part.data.begin() + i * width, width,
                  whole.data.begin() + (i * n + int64_t(r)) * width);
  }
  Interpreter &first = ranks.front();
  first.env[logits] = std::move(whole);
  LogicalResult ran = first.run(&op);
  first.env[logits] = std::move(own);
  if (failed(ran))
    return failure();
  Tensor value = first.env.find(result)->second;
  for (auto [r, interp] : llvm::enumerate(ranks)) {
    if (value.shape.empty()) { // the loss
      interp.env[result] = value;
      continue;
    }
    Tensor part(ranks.front().env.find(logits)->second.shape);
    for (int64_t i = 0; i < rows; ++i)
      std::copy_n(value.data.begin() + (i * n + int64_t(r)) * width, width,
                  part.data.begin() + i * width);
    interp.env[result] = std::move(part);
  }
  return success();
}

FailureOr<SmallVector<SmallVector<Tensor>>> infir2::interp::runRanks(
    FunctionOpInterface fn, ArrayRef<SmallVector<Tensor>> inputs,
    const QuantizationObserver &observer, const ResultObserver &results) {
  if (fn.isExternal())
    return fn.emitError() << "cannot interpret a function without a body";
  if (!llvm::hasSingleElement(fn.getFunctionBody()))
    return fn.emitError() << "the interpreter runs single-block functions only";
  ArrayRef<Type> argTypes = fn.getArgumentTypes();
  Block &entry = fn.getFunctionBody().front();
  // One interpreter a rank, all running the same ops in step.
  std::vector<Interpreter> ranks(inputs.size());
  for (auto [r, interp] : llvm::enumerate(ranks)) {
    interp.tpRank = static_cast<int64_t>(r);
    interp.tpSize = static_cast<int64_t>(ranks.size());
  }
  ranks.front().observer = observer; // rank 0's
  ranks.front().resultObserver = results;
  for (auto [interp, rankInputs] : llvm::zip_equal(ranks, inputs)) {
    if (rankInputs.size() != argTypes.size())
      return fn.emitError() << "expects " << argTypes.size() << " inputs, got "
                            << rankInputs.size();
    for (auto [i, arg, input] :
         llvm::enumerate(entry.getArguments(), rankInputs)) {
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
  }
  for (Operation &op : entry) {
    if (op.hasTrait<OpTrait::IsTerminator>()) {
      SmallVector<SmallVector<Tensor>> results(ranks.size());
      for (auto [interp, out] : llvm::zip_equal(ranks, results))
        for (Value v : op.getOperands())
          out.push_back(interp.env.find(v)->second);
      return results;
    }
    if (auto reduce = dyn_cast<TPReduceOp>(op);
        reduce && reduce.getSize() == static_cast<int64_t>(ranks.size())) {
      // The sum over the group, in rank order, the same on every rank.
      Tensor sum = ranks.front().env.find(reduce.getInput())->second;
      for (Interpreter &interp : llvm::drop_begin(ranks)) {
        const Tensor &part = interp.env.find(reduce.getInput())->second;
        for (auto [s, p] : llvm::zip_equal(sum.data, part.data))
          s += p;
      }
      for (Interpreter &interp : ranks)
        interp.env[reduce.getResult()] = sum;
      continue;
    }
    // Sequence parallelism's collectives: the ranks' slices of a dimension
    // put together, or the sum's slices handed out.
    if (isa<TPAllGatherOp, TPReduceScatterOp>(op) &&
        op.getAttrOfType<IntegerAttr>("size").getInt() ==
            static_cast<int64_t>(ranks.size())) {
      alongDimension(op, ranks);
      continue;
    }
    // A vocabulary-parallel loss: the op on the whole logits (the ranks'
    // columns side by side), a gradient's columns back to their ranks.
    if (auto shards = vocabShards(op);
        shards > 1 && shards == static_cast<int64_t>(ranks.size())) {
      if (failed(wholeVocabulary(op, ranks)))
        return failure();
      continue;
    }
    // A tensor-parallel global norm: each rank's squares of its shards
    // (the first tp_shards gradients) summed over the ranks, the whole
    // gradients' counted once.
    if (auto norm = dyn_cast<GlobalNormOp>(op);
        norm && norm.getTpShards() > 0 && ranks.size() > 1) {
      double shards = 0.0, whole = 0.0;
      double scale = ranks.front().env.find(norm.getScale())->second.data[0];
      for (auto [r, interp] : llvm::enumerate(ranks))
        for (auto [g, grad] : llvm::enumerate(norm.getGrads())) {
          if (int64_t(g) >= norm.getTpShards() && r > 0)
            continue;
          for (double x : interp.env.find(grad)->second.data)
            (int64_t(g) < norm.getTpShards() ? shards : whole) +=
                (scale * x) * (scale * x);
        }
      for (Interpreter &interp : ranks)
        interp.env[norm.getNorm()] = Tensor({}, std::sqrt(shards + whole));
      continue;
    }
    for (Interpreter &interp : ranks)
      if (failed(interp.run(&op)))
        return failure();
  }
  return fn.emitError() << "function body has no terminator";
}
