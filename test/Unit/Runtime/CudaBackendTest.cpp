//===- CudaBackendTest.cpp - The CUDA backend's entry points --------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Every entry point of ABI.def has a CUDA version, at its index in the table
// a trainer points ctx->device at (these run without a GPU); the collectives
// of one rank copy; the probe answers with or without a GPU.
//
//===----------------------------------------------------------------------===//

#include "CudaTestSupport.h"
#include "infir2/runtime/Backend.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace infir2::test;

// Every runtime entry point has a CUDA version: taking the address of
// infir2rt_cuda_<name> for each name in ABI.def makes a missing one a link
// error. The count catches an entry added to ABI.def by mistake. (Runs
// without a GPU.)
TEST(CudaBackend, ImplementsEveryEntryPoint) {
  std::vector<std::pair<const char *, const void *>> entries = {
#define INFIR2RT_ENTRY(name, operands, attributes, doc)                                       \
  {#name, reinterpret_cast<const void *>(&infir2rt_cuda_##name)},
#include "infir2/runtime/ABI.def"
  };
  EXPECT_EQ(entries.size(), 40u);
}

// The table a trainer points ctx->backend at holds each entry point at its
// INFIR2RT_ENTRY_<name> index, so that the CPU-named calls of a compiled
// step reach the CUDA version of the same op. (Runs without a GPU.)
TEST(CudaBackend, EntryTableIsInAbiOrder) {
  const infir2rt_entry_fn *table = infir2rt_cuda_backend()->entries;
#define INFIR2RT_ENTRY(name, operands, attributes, doc)                                       \
  EXPECT_EQ(reinterpret_cast<const void *>(table[INFIR2RT_ENTRY_##name]),      \
            reinterpret_cast<const void *>(&infir2rt_cuda_##name))             \
      << #name;
#include "infir2/runtime/ABI.def"
}

// ZeRO-1's collectives alone (one rank, world size 1): the shards are the
// wholes, on both backends.
TEST(CudaBackend, ShardCollectivesAloneCopy) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  std::mt19937_64 rng = seededRng();
  for (Entry cpu : {infir2rt_reduce_scatter, infir2rt_all_gather}) {
    Call c;
    int a = c.add({5, 3}, INFIR2RT_F32), b = c.add({7}, INFIR2RT_F32);
    c.add({5, 3}, INFIR2RT_F32);
    c.add({7}, INFIR2RT_F32);
    fill(c, a, INFIR2RT_F32, 5, 3, rng);
    fill(c, b, INFIR2RT_F32, 1, 7, rng);
    c.attrs({1.0});
    compare(c, cpu,
            cpu == infir2rt_reduce_scatter ? infir2rt_cuda_reduce_scatter
                                           : infir2rt_cuda_all_gather);
  }
}

// The all-reduce alone (no communicator): the outputs are the inputs.
TEST(CudaBackend, AllReduceAloneCopies) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  std::mt19937_64 rng(7);
  Call c;
  int a = c.add({100}, INFIR2RT_F32), b = c.add({3, 5}, INFIR2RT_F32);
  c.add({100}, INFIR2RT_F32);
  c.add({3, 5}, INFIR2RT_F32);
  fill(c, a, INFIR2RT_F32, 1, 100, rng);
  fill(c, b, INFIR2RT_F32, 3, 5, rng);
  compare(c, infir2rt_all_reduce, infir2rt_cuda_all_reduce);
}

// Runs everywhere: without a GPU the probe must say so (and not crash).
TEST(CudaProbe, AnswersWithOrWithoutAGpu) {
  int32_t major = 0, minor = 0;
  char why[256] = {0};
  int32_t rc = infir2rt_cuda_probe(&major, &minor, why, sizeof why);
  std::printf("CUDA probe: %s\n", why);
  EXPECT_NE(std::string(why), "");
  if (rc == 0) {
    EXPECT_GE(major, 1);
  }
}

} // namespace
