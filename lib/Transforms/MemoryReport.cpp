//===- MemoryReport.cpp - The planned memory, by category -----------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// What --infir2-plan-memory="report=1" and infir2-compile --report-memory
// print from a ModelPlan (MemoryPlan.cpp makes it): the state by kind, the
// training step's peak by category, what is saved for the backward pass,
// each step's arena, and what the trainer allocates.
//
//===----------------------------------------------------------------------===//

#include "infir2/Transforms/MemoryPlan.h"

#include "infir2/Dialect/Runtime/IR/RuntimeDialect.h"

#include "llvm/Support/Format.h"

#include <array>

using namespace mlir;
using namespace infir2;

StringRef infir2::memoryCategoryName(MemoryCategory c) {
  static const char *names[kNumMemoryCategories] = {
      "BF16 weights",
      "FP32 master weights",
      "optimizer moments",
      "gradients",
      "FP8 weight cache",
      "inputs",
      "activations saved for backward",
      "FP8 copies and scales",
      "workspace",
      "recomputed activations"};
  return names[static_cast<int>(c)];
}

std::array<int64_t, kNumMemoryCategories>
infir2::stateByCategory(const ModelPlan &plan) {
  std::array<int64_t, kNumMemoryCategories> state{};
  for (const StateSlot &s : plan.state) {
    MemoryCategory c = s.kind == "param"       ? MemoryCategory::Weights
                       : s.kind == "master"    ? MemoryCategory::Masters
                       : s.kind == "grad"      ? MemoryCategory::Gradients
                       : s.kind == "moment1"   ? MemoryCategory::Moments
                       : s.kind == "moment2"   ? MemoryCategory::Moments
                       : s.kind == "fp8_cache" ? MemoryCategory::WeightCache
                                               : MemoryCategory::Inputs;
    state[static_cast<int>(c)] += alignedBytes(s.bytes);
  }
  return state;
}

void infir2::printMemoryReport(const ModelPlan &plan, llvm::raw_ostream &os) {
  std::array<int64_t, kNumMemoryCategories> state = stateByCategory(plan);
  const FunctionPlan *train = nullptr;
  for (const FunctionPlan &f : plan.functions)
    if (f.symbol == rtir::RuntimeDialect::getStepSymbols()[0])
      train = &f;
  auto gib = [](int64_t b) { return double(b) / (1024.0 * 1024.0 * 1024.0); };
  os << "planned memory (batch " << plan.batch << " x seq " << plan.seqLen
     << " tokens, vocab " << plan.vocab << ")";
  if (plan.zero1WorldSize)
    os << ", per rank: masters and moments sharded over " << plan.zero1WorldSize
       << " ranks (ZeRO-1)";
  os << "\n";
  int64_t total = 0;
  for (int c = 0; c < kNumMemoryCategories; ++c) {
    int64_t bytes = state[c] + (train ? train->peakByCategory[c] : 0);
    total += bytes;
    if (c == int(MemoryCategory::Recomputed) && bytes == 0)
      continue; // only under --memory-budget
    os << llvm::format("  %-32s %12.3f GiB %16lld bytes\n",
                       memoryCategoryName(static_cast<MemoryCategory>(c)).str().c_str(),
                       gib(bytes), (long long)bytes);
  }
  os << llvm::format("  %-32s %12.3f GiB %16lld bytes\n",
                     "peak (training step)", gib(total), (long long)total);
  if (train)
    for (MemoryCategory c :
         {MemoryCategory::SavedActivations, MemoryCategory::FP8})
      os << llvm::format(
          "  %-32s %12.3f GiB %16lld bytes\n",
          (c == MemoryCategory::FP8 ? "FP8 saved, at backward start"
                              : "saved, at backward start"),
          gib(train->atBackwardStart[static_cast<int>(c)]),
          (long long)train->atBackwardStart[static_cast<int>(c)]);
  for (const FunctionPlan &f : plan.functions)
    os << llvm::format("  scratch arena of %-15s %12.3f GiB %16lld bytes\n",
                       f.fn.getSymName().str().c_str(), gib(f.scratchBytes),
                       (long long)f.scratchBytes);
  // What the trainer allocates: the state and one arena for every step.
  int64_t allocated = plan.stateBytes + plan.scratchBytes;
  os << llvm::format("  %-32s %12.3f GiB %16lld bytes\n",
                     "allocated (state + arena)", gib(allocated),
                     (long long)allocated);
}
