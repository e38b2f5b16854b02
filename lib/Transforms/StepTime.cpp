//===- StepTime.cpp - A step's predicted time on a target -----------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "infir2/Transforms/StepTime.h"

#include "infir2/Dialect/FP8/IR/FP8Ops.h"
#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"
#include "infir2/Transforms/MemoryPlan.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>
#include <map>

using namespace mlir;
using namespace infir2;

namespace {

/// BF16 and FP8 (block-scaled, cuBLASLt) GEMM rates on the lent H200, in
/// TFLOP/s: `infir2-kernel-bench gemm`, bench/results/2026-11-27-h200-run5.
/// The H100 SXM has the same tensor cores and clocks; its GEMMs of these
/// sizes are compute-bound, so the table serves both.
const MeasuredGemm kHopperGemms[] = {
    {16384, 896, 896, 527.1, 575.9},    {16384, 128, 896, 213.3, 166.9},
    {16384, 4864, 896, 702.1, 919.7},   {16384, 896, 4864, 723.8, 1059.2},
    {4864, 896, 16384, 730.8, 736.2},   {4096, 151936, 896, 627.4, 872.1},
    {151936, 896, 4096, 709.9, 933.6},  {8192, 3584, 3584, 777.4, 1159.5},
    {8192, 18944, 3584, 793.8, 1276.9}, {8192, 3584, 18944, 817.7, 1277.1},
    {18944, 3584, 8192, 792.3, 1010.4},
};

StepTimeTarget hopper(StringRef name, double bytesPerSecond) {
  StepTimeTarget t;
  t.name = name.str();
  t.bf16Flops = 989e12; // dense, SXM
  t.fp8Flops = 1979e12;
  t.f32Flops = 67e12;
  // What a streaming kernel reaches: about 90 % of the HBM peak.
  t.bytesPerSecond = 0.9 * bytesPerSecond;
  t.attentionEfficiency = 0.55; // FlashAttention-2/3 class, BF16
  t.callSeconds = 4e-6;
  t.gemms.assign(std::begin(kHopperGemms), std::end(kHopperGemms));
  return t;
}

/// A GEMM's rate for its shape and operand type: the nearest measured
/// shape's (in log M, N, K), else the peak.
double gemmRate(const StepTimeTarget &t, int64_t m, int64_t n, int64_t k,
                bool fp8, bool f32) {
  double peak = f32 ? t.f32Flops : fp8 ? t.fp8Flops : t.bf16Flops;
  if (f32 || t.gemms.empty())
    return peak;
  const MeasuredGemm *best = nullptr;
  double bestDistance = 0;
  auto d = [](double a, double b) { return std::log(std::max(a, 1.0) / b); };
  for (const MeasuredGemm &g : t.gemms) {
    double distance = std::pow(d(m, g.m), 2) + std::pow(d(n, g.n), 2) +
                      std::pow(d(k, g.k), 2);
    if (!best || distance < bestDistance) {
      best = &g;
      bestDistance = distance;
    }
  }
  return (fp8 ? best->fp8 : best->bf16) * 1e12;
}

double bytesOf(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  return t && t.hasStaticShape() ? double(storedBytes(t)) : 0.0;
}

double elementsOf(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && t.hasStaticShape() ? double(t.getNumElements()) : 0.0;
}

/// The scores of attention (one exp each), half of them when causal; its
/// forward's FLOPs (QKᵀ and PV) are 4 · head_dim per score.
template <typename Op> double attentionScores(Op a) {
  auto q = cast<RankedTensorType>(a.getQuery().getType());
  auto k = cast<RankedTensorType>(a.getKey().getType());
  double scores = double(q.getDimSize(0)) * a.getNumHeads() * q.getDimSize(1) *
                  k.getDimSize(1);
  return a.getCausal() ? scores / 2 : scores;
}

/// What bounds a memory-light op where bandwidth does not: a dual
/// quantization's input (one layout: half), the loss's logits, a sigmoid
/// per element.
void countElementOps(Operation *op, OpTime &c) {
  if (auto q = dyn_cast<fp8::QuantizeOp>(op))
    c.quantized = elementsOf(q.getInput()) / 2;
  else if (auto q = dyn_cast<fp8::QuantizeDualOp>(op))
    c.quantized = elementsOf(q.getInput());
  else if (isa<CrossEntropyOp, CrossEntropyGradOp>(op))
    c.logits = elementsOf(op->getOperand(0));
  else if (isa<SiluOp, SwigluOp, SiluGradOp, SwigluGradOp>(op))
    c.exps = elementsOf(op->getOperand(0));
}

/// The kind a memory-bound op is counted in.
std::string memoryKind(Operation *op) {
  if (isa<fp8::QuantizeOp, fp8::QuantizeDualOp, fp8::DequantizeOp, fp8::AmaxOp>(
          op))
    return "FP8 quantization";
  if (isa<RMSNormOp, RMSNormGradOp>(op))
    return "norms";
  if (isa<CrossEntropyOp, CrossEntropyGradOp, LossWeightOp>(op))
    return "loss";
  if (isa<AdamWOp, AdamWGroupOp, SGDOp, GlobalNormOp>(op))
    return "optimizer";
  if (isa<EmbeddingOp, EmbeddingGradOp>(op))
    return "embedding";
  if (isa<AllReduceOp, ReduceScatterOp, AllGatherOp>(op))
    return "collectives";
  return "elementwise and copies";
}

OpTime costOf(Operation *op, const StepTimeTarget &t) {
  OpTime c;
  for (Value v : op->getOperands())
    c.bytes += bytesOf(v.getType());
  for (Value v : op->getResults())
    c.bytes += bytesOf(v.getType());
  double rate = 0;
  if (auto q = dyn_cast<fp8::ScaledMatmulOp>(op)) {
    auto lhs = cast<RankedTensorType>(q.getLhs().getType());
    auto rhs = cast<RankedTensorType>(q.getRhs().getType());
    int64_t k = lhs.getShape().back(), n = rhs.getDimSize(rhs.getRank() - 2);
    int64_t m = lhs.getNumElements() / k;
    c.kind = "GEMM fp8";
    c.flops = 2.0 * m * n * k;
    rate = gemmRate(t, m, n, k, /*fp8=*/true, /*f32=*/false);
  } else if (auto gemm = dyn_cast<GemmOpInterface>(op)) {
    GemmDims d = getGemmDims(gemm);
    bool f32 =
        cast<ShapedType>(gemm.getGemmLhs().getType()).getElementType().isF32();
    c.kind = f32 ? "GEMM f32" : "GEMM bf16";
    c.flops = 2.0 * d.batch * d.m * d.n * d.k;
    rate = gemmRate(t, d.batch * d.m, d.n, d.k, false, f32);
  } else if (auto a = dyn_cast<AttentionOp>(op)) {
    c.kind = "attention";
    c.exps = attentionScores(a);
    c.flops = 4.0 * a.getHeadDim() * c.exps;
    rate = t.bf16Flops * t.attentionEfficiency;
  } else if (auto a = dyn_cast<AttentionGradOp>(op)) {
    // The probabilities recomputed, then dV, dP, dQ and dK: 2.5 forwards.
    c.kind = "attention";
    c.exps = attentionScores(a);
    c.flops = 2.5 * 4.0 * a.getHeadDim() * c.exps;
    rate = t.bf16Flops * t.attentionEfficiency;
  } else {
    c.kind = memoryKind(op);
    countElementOps(op, c);
  }
  // The table's or the embedding's rows are read where an id looks them
  // up, not whole: only the looked-up rows' bytes count.
  if (auto e = dyn_cast<EmbeddingOp>(op))
    c.bytes = bytesOf(e.getIds().getType()) + 2 * bytesOf(e.getType());
  if (auto e = dyn_cast<EmbeddingGradOp>(op)) {
    // The gradient read, each looked-up row of the result (its accumulator)
    // read and written in the result's type.
    auto table = cast<RankedTensorType>(e.getTableGrad().getType());
    c.bytes = bytesOf(e.getIds().getType()) +
              bytesOf(e.getResultGrad().getType()) +
              2.0 * elementsOf(e.getResultGrad()) *
                  double(storedBytes(
                      RankedTensorType::get({1}, table.getElementType())));
  }
  double seconds = c.bytes / t.bytesPerSecond;
  if (rate > 0)
    seconds = std::max(seconds, c.flops / rate);
  if (t.expsPerSecond > 0)
    seconds = std::max(seconds, c.exps / t.expsPerSecond);
  if (t.quantizedPerSecond > 0)
    seconds = std::max(seconds, c.quantized / t.quantizedPerSecond);
  if (t.logitsPerSecond > 0)
    seconds = std::max(seconds, c.logits / t.logitsPerSecond);
  c.seconds = seconds + t.callSeconds;
  return c;
}

void collect(Block &block, const StepTimeTarget &t, std::vector<OpTime> &out) {
  for (Operation &op : block.without_terminator()) {
    if (auto fused = dyn_cast<fp8::FusedOp>(op)) {
      collect(fused.getBody().front(), t, out);
      continue;
    }
    if (isa<ReshapeOp, SliceOp, ConcatOp, TPCopyOp>(op) ||
        op.getNumResults() == 0)
      continue; // a view
    out.push_back(costOf(&op, t));
  }
}

} // namespace

FailureOr<StepTimeTarget> infir2::lookUpStepTimeTarget(StringRef name,
                                                       StringRef calibration,
                                                       std::string &error) {
  if (name == "h100")
    return hopper(name, 3.35e12); // H100 SXM, HBM3
  if (name == "h200")
    return hopper(name, 4.8e12); // HBM3e
  if (name != "cpu") {
    error = "unknown target '" + name.str() + "': h100, h200 or cpu";
    return failure();
  }
  if (calibration.empty()) {
    error = "the cpu target needs this machine's rates: write them with "
            "`infir2-gemm-peak --json > cpu.json` and pass the file";
    return failure();
  }
  auto buffer = llvm::MemoryBuffer::getFile(calibration);
  if (!buffer) {
    error = "cannot read '" + calibration.str() +
            "': " + buffer.getError().message();
    return failure();
  }
  llvm::Expected<llvm::json::Value> json =
      llvm::json::parse((*buffer)->getBuffer());
  if (!json) {
    error = "'" + calibration.str() +
            "' is not JSON: " + llvm::toString(json.takeError());
    return failure();
  }
  StepTimeTarget t;
  t.name = "cpu";
  const llvm::json::Object *o = json->getAsObject();
  if (!o) {
    error = "'" + calibration.str() +
            "' is not a JSON object (infir2-gemm-peak --json writes one)";
    return failure();
  }
  auto positive = [](std::optional<double> v) {
    return v && std::isfinite(*v) && *v > 0;
  };
  for (auto [key, field] :
       {std::pair<const char *, double *>{"bf16_gflops", &t.bf16Flops},
        {"fp32_gflops", &t.f32Flops},
        {"bandwidth_gbs", &t.bytesPerSecond},
        {"exp_gops", &t.expsPerSecond},
        {"quantize_gops", &t.quantizedPerSecond},
        {"loss_gops", &t.logitsPerSecond}}) {
    std::optional<double> v = o->getNumber(key);
    if (!positive(v)) {
      error = "'" + calibration.str() + "' has no positive \"" + key +
              "\" (infir2-gemm-peak --json writes it)";
      return failure();
    }
    *field = *v * 1e9;
  }
  // GEMM rates by shape, GFLOP/s: BF16, then the CPU backend's FP8 GEMM
  // (which widens the codes and scales and runs the BF16 GEMM); a row
  // without the FP8 rate (an older file) gives FP8 the BF16 one.
  const llvm::json::Value *table = o->get("gemms");
  if (table && !table->getAsArray()) {
    error = "'" + calibration.str() + "': \"gemms\" is not an array";
    return failure();
  }
  if (table)
    for (const llvm::json::Value &g : *table->getAsArray()) {
      const llvm::json::Array *row = g.getAsArray();
      size_t size = row ? row->size() : 0;
      std::optional<double> v[5];
      for (size_t i = 0; (size == 4 || size == 5) && i < size; ++i)
        v[i] = (*row)[i].getAsNumber();
      if (size == 4)
        v[4] = v[3];
      bool sizes = true;
      for (int i = 0; i < 3; ++i)
        sizes = sizes && positive(v[i]) && *v[i] == std::floor(*v[i]) &&
                *v[i] <= double(int64_t(1) << 40);
      if (!sizes || !positive(v[3]) || !positive(v[4])) {
        error = "'" + calibration.str() +
                "': each of \"gemms\" is [M, N, K, BF16 GFLOP/s, FP8 "
                "GFLOP/s], positive integer sizes and positive rates (the FP8 "
                "rate may be left out)";
        return failure();
      }
      // TFLOP/s, as the table holds.
      t.gemms.push_back({int64_t(*v[0]), int64_t(*v[1]), int64_t(*v[2]),
                         *v[3] / 1e3, *v[4] / 1e3});
    }
  // Attention runs on the FP32 units; a call starts a thread team.
  t.fp8Flops = t.bf16Flops;
  t.attentionEfficiency = t.f32Flops / t.bf16Flops;
  t.callSeconds = 10e-6;
  return t;
}

double infir2::gemmSeconds(const StepTimeTarget &target, int64_t m, int64_t n,
                           int64_t k, bool fp8) {
  return 2.0 * m * n * k / gemmRate(target, m, n, k, fp8, /*f32=*/false) +
         target.callSeconds;
}

double infir2::quantizeSeconds(const StepTimeTarget &target, double elements) {
  double seconds = 4.0 * elements / target.bytesPerSecond;
  if (target.quantizedPerSecond > 0)
    seconds = std::max(seconds, elements / target.quantizedPerSecond);
  return seconds + target.callSeconds;
}

OpTime infir2::predictOp(Operation *op, const StepTimeTarget &target) {
  return costOf(op, target);
}

std::vector<OpTime> infir2::predictOps(func::FuncOp fn,
                                       const StepTimeTarget &target) {
  std::vector<OpTime> out;
  if (!fn.isExternal())
    collect(fn.getBody().front(), target, out);
  return out;
}

void infir2::printStepTimeReport(ModuleOp module, const StepTimeTarget &target,
                                 raw_ostream &os) {
  os << "predicted step time on " << target.name << ": "
     << llvm::format("%.4g", target.bf16Flops / 1e12) << " TFLOP/s bf16, "
     << llvm::format("%.4g", target.fp8Flops / 1e12) << " fp8, "
     << llvm::format("%.4g", target.bytesPerSecond / 1e9) << " GB/s\n";
  double step = 0, microBatch = 0, optimizer = 0;
  int64_t tokens = 0;
  for (StringRef name : {"train_step", "optimizer_step"}) {
    auto fn = module.lookupSymbol<func::FuncOp>(name);
    if (!fn)
      continue;
    std::map<std::string, OpTime> rows;
    std::map<std::string, int64_t> calls;
    double total = 0;
    for (OpTime c : predictOps(fn, target)) {
      // Their time depends on the ranks, which a step does not know: one
      // rank sums in place, at no cost.
      if (c.kind == "collectives")
        c.seconds = 0;
      OpTime &r = rows[c.kind];
      r.flops += c.flops;
      r.bytes += c.bytes;
      r.seconds += c.seconds;
      ++calls[c.kind];
      total += c.seconds;
    }
    os << "@" << name << ":\n";
    os << llvm::format("  %-24s %7s %10s %10s %11s %7s\n", "kind", "calls",
                       "GFLOP", "GB", "ms", "share");
    for (auto &[kind, r] : rows)
      os << llvm::format("  %-24s %7lld %10.1f %10.2f %11.3f %6.1f%%\n",
                         kind.c_str(), (long long)calls[kind], r.flops / 1e9,
                         r.bytes / 1e9, r.seconds * 1e3,
                         total > 0 ? 100.0 * r.seconds / total : 0.0);
    os << llvm::format("  %-24s %7s %10s %10s %11.3f\n", "total", "", "", "",
                       total * 1e3);
    step += total;
    (name == "train_step" ? microBatch : optimizer) = total;
    if (name == "train_step")
      for (BlockArgument arg : fn.getArguments())
        if (getBatchInputRole(arg) == StringRef("input_ids"))
          tokens = cast<RankedTensorType>(arg.getType()).getNumElements();
  }
  os << llvm::format("one micro-batch and the optimizer step: %.3f ms",
                     step * 1e3);
  if (tokens > 0 && step > 0)
    os << llvm::format(", %.0f tokens/s", tokens / step);
  os << "\n";
  // With --grad-accum N the optimizer step runs once per N micro-batches.
  os << llvm::format("with --grad-accum N: N x %.3f + %.3f ms",
                     microBatch * 1e3, optimizer * 1e3);
  if (tokens > 0 && microBatch > 0)
    os << llvm::format(", up to %.0f tokens/s", tokens / microBatch);
  os << "\n";
}
