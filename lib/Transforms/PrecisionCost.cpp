//===- PrecisionCost.cpp - FP8 where the step-time model says it pays -----===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "PrecisionCost.h"

#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>

using namespace mlir;
using namespace infir2;

namespace {

/// The tensor a quantization of `v` reads: `v` through reshapes and
/// transposes (views of one buffer's values).
Value sourceOf(Value v) {
  while (isa_and_nonnull<TransposeOp, ReshapeOp>(v.getDefiningOp()))
    v = v.getDefiningOp()->getOperand(0);
  return v;
}

} // namespace

llvm::DenseMap<Operation *, std::string>
infir2::keptHighByCost(ArrayRef<CostCandidate> candidates,
                       const StepTimeTarget &target) {
  // Group the GEMMs by the sources they quantize.
  llvm::EquivalenceClasses<Operation *> groups;
  llvm::DenseMap<Value, Operation *> firstReader;
  for (const CostCandidate &c : candidates) {
    groups.insert(c.gemm);
    for (Value v : c.quantized) {
      auto [it, inserted] = firstReader.try_emplace(sourceOf(v), c.gemm);
      if (!inserted)
        groups.unionSets(it->second, c.gemm);
    }
  }
  // Each group's members, in order.
  std::map<Operation *, SmallVector<const CostCandidate *>> members;
  for (const CostCandidate &c : candidates)
    members[groups.getLeaderValue(c.gemm)].push_back(&c);
  llvm::DenseMap<Operation *, std::string> kept;
  for (auto &[leader, group] : members) {
    // Each GEMM's time in BF16 and FP8; each source's quantization; which
    // sources each GEMM reads.
    size_t n = group.size();
    SmallVector<double> bf16(n), fp8(n);
    SmallVector<Value> sources;
    llvm::DenseMap<Value, unsigned> indexOf;
    SmallVector<SmallVector<unsigned, 2>> reads(n);
    for (size_t i = 0; i < n; ++i) {
      GemmDims d = getGemmDims(cast<GemmOpInterface>(group[i]->gemm));
      bf16[i] = gemmSeconds(target, d.batch * d.m, d.n, d.k, false);
      fp8[i] = gemmSeconds(target, d.batch * d.m, d.n, d.k, true);
      for (Value v : group[i]->quantized) {
        auto [it, inserted] = indexOf.try_emplace(sourceOf(v), sources.size());
        if (inserted)
          sources.push_back(sourceOf(v));
        reads[i].push_back(it->second);
      }
    }
    SmallVector<double> quantize;
    for (Value v : sources)
      quantize.push_back(quantizeSeconds(
          target,
          double(cast<RankedTensorType>(v.getType()).getNumElements())));
    // The time of the group with the GEMMs `choice` marks in FP8: a source
    // is quantized when one of them reads it.
    auto timeOf = [&](const llvm::SmallBitVector &choice) {
      double t = 0;
      llvm::SmallBitVector quantized(sources.size());
      for (size_t i = 0; i < n; ++i) {
        t += choice[i] ? fp8[i] : bf16[i];
        if (choice[i])
          for (unsigned s : reads[i])
            quantized.set(s);
      }
      for (unsigned s : quantized.set_bits())
        t += quantize[s];
      return t;
    };
    // Every choice for a group of at most 12 GEMMs (a layer's q, k and v
    // projections make 9), all or none beyond; a tie keeps high precision
    // (the search starts from no FP8 and takes only what is faster).
    llvm::SmallBitVector none(n), all(n, true), best = none;
    if (n <= 12) {
      for (uint64_t mask = 1; mask < (uint64_t(1) << n); ++mask) {
        llvm::SmallBitVector choice(n);
        for (size_t i = 0; i < n; ++i)
          choice[i] = (mask >> i) & 1;
        if (timeOf(choice) < timeOf(best))
          best = choice;
      }
    } else if (timeOf(all) < timeOf(none)) {
      best = all;
    }
    for (size_t i = 0; i < n; ++i) {
      if (best[i])
        continue;
      if (n == 1) {
        kept[group[i]->gemm] = llvm::formatv(
            "the cost model on {0} keeps it in high precision: {1:f1} us in "
            "FP8 with the quantization of its operands, against {2:f1} us",
            target.name, timeOf(all) * 1e6, timeOf(none) * 1e6);
        continue;
      }
      kept[group[i]->gemm] = llvm::formatv(
          "the cost model on {0} keeps it in high precision: its group of {1} "
          "GEMMs sharing quantized operands takes {2:f1} us with {3} of them "
          "in FP8, against {4:f1} us all in FP8 and {5:f1} us none",
          target.name, n, timeOf(best) * 1e6, best.count(), timeOf(all) * 1e6,
          timeOf(none) * 1e6);
    }
  }
  return kept;
}
