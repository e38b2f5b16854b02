//===- TensorParallelThreadsTest.cpp - CPU tensor-parallel calls ----------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The CPU backend's tensor-parallel entry points as the 2 ranks of a
// ThreadGroup against the whole computation (TensorParallelCases.h): the
// harness the CUDA backend's test runs on, checked where there is no GPU.
// The CPU backend's sums over a group of two are the whole call's in the
// same order, so its tolerance is 0 (bit for bit) where the cases allow.
//
//===----------------------------------------------------------------------===//

#include "TensorParallelCases.h"

using namespace infir2::test::tp;

namespace {
GroupBackend cpu() { return {infir2rt_cpu_backend(), 0.0}; }
} // namespace

TEST(TensorParallelThreads, PartialSumsRoundOnce) { partialSums(cpu()); }
TEST(TensorParallelThreads, SequenceSlicesInRankOrder) {
  sequenceSlices(cpu());
}
TEST(TensorParallelThreads, VocabularyParallelLossIsTheWholeOne) {
  vocabularyParallelLoss(cpu());
}
TEST(TensorParallelThreads, VocabularyParallelEmbeddingIsTheWholeOne) {
  vocabularyParallelEmbedding(cpu());
}
TEST(TensorParallelThreads, ShardedGradientNorm) { shardedGradientNorm(cpu()); }
