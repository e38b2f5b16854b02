//===- CudaTensorParallelTest.cpp - CUDA tensor-parallel calls ------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The CUDA backend's tensor-parallel entry points as the 2 ranks of a
// ThreadGroup on one GPU, against the whole computation
// (TensorParallelCases.h), twice: with the group's host functions only (the
// kernels stage through host memory, as over MPI) and with device functions
// (the path NCCL takes; here they stage through host memory themselves),
// the latter also with each rank's calls queued on a step stream of its own
// (asynchronous, as in a trainer).
// Sums over a block or with atomics come in another order than the CPU
// backend's: the loss, its gradient and the embedding's gradient within
// 1e-5 of their largest value; the collectives exactly.
//
//===----------------------------------------------------------------------===//

#include "CudaTestSupport.h"
#include "TensorParallelCases.h"

using namespace infir2::test;
using namespace infir2::test::tp;

namespace {

/// The group's host function `f` on device buffers: staged through host
/// memory, after the stream's work.
int32_t deviceAllReduce(void *impl, float *data, int64_t n, void *stream,
                        char *error, int64_t errorSize) {
  std::vector<float> host(static_cast<size_t>(n));
  cudaStreamSynchronize(static_cast<cudaStream_t>(stream));
  cudaMemcpy(host.data(), data, n * 4, cudaMemcpyDeviceToHost);
  const infir2rt_communicator *c =
      static_cast<const infir2rt_communicator *>(impl);
  int32_t rc = c->all_reduce_sum(c->impl, host.data(), n, error, errorSize);
  cudaMemcpy(data, host.data(), n * 4, cudaMemcpyHostToDevice);
  return rc;
}

int32_t deviceReduceScatter(void *impl, const float *send, float *recv,
                            int64_t n, void *stream, char *error,
                            int64_t errorSize) {
  const infir2rt_communicator *c =
      static_cast<const infir2rt_communicator *>(impl);
  std::vector<float> all(static_cast<size_t>(n * c->size)),
      mine(static_cast<size_t>(n));
  cudaStreamSynchronize(static_cast<cudaStream_t>(stream));
  cudaMemcpy(all.data(), send, all.size() * 4, cudaMemcpyDeviceToHost);
  int32_t rc = c->reduce_scatter_sum(c->impl, all.data(), mine.data(), n, error,
                                     errorSize);
  cudaMemcpy(recv, mine.data(), n * 4, cudaMemcpyHostToDevice);
  return rc;
}

int32_t deviceAllGather(void *impl, const void *send, void *recv, int64_t bytes,
                        void *stream, char *error, int64_t errorSize) {
  const infir2rt_communicator *c =
      static_cast<const infir2rt_communicator *>(impl);
  std::vector<uint8_t> mine(static_cast<size_t>(bytes)),
      all(static_cast<size_t>(bytes * c->size));
  cudaStreamSynchronize(static_cast<cudaStream_t>(stream));
  cudaMemcpy(mine.data(), send, size_t(bytes), cudaMemcpyDeviceToHost);
  int32_t rc =
      c->all_gather(c->impl, mine.data(), all.data(), bytes, error, errorSize);
  cudaMemcpy(recv, all.data(), all.size(), cudaMemcpyHostToDevice);
  return rc;
}

/// Each rank's interface gets device functions over a copy of its host
/// ones (the copy is their `impl`).
struct DeviceWiring {
  std::vector<infir2rt_communicator> host;
  void operator()(ThreadGroup &group) {
    host.resize(size_t(group.size()));
    for (int r = 0; r < group.size(); ++r) {
      host[r] = group.rank(r);
      infir2rt_communicator &c = group.rank(r);
      c.impl = &host[r];
      c.all_reduce_sum = [](void *impl, float *data, int64_t n, char *e,
                            int64_t es) {
        auto *h = static_cast<infir2rt_communicator *>(impl);
        return h->all_reduce_sum(h->impl, data, n, e, es);
      };
      c.reduce_scatter_sum = [](void *impl, const float *s, float *d, int64_t n,
                                char *e, int64_t es) {
        auto *h = static_cast<infir2rt_communicator *>(impl);
        return h->reduce_scatter_sum(h->impl, s, d, n, e, es);
      };
      c.all_gather = [](void *impl, const void *s, void *d, int64_t n, char *e,
                        int64_t es) {
        auto *h = static_cast<infir2rt_communicator *>(impl);
        return h->all_gather(h->impl, s, d, n, e, es);
      };
      c.device_all_reduce_sum = deviceAllReduce;
      c.device_reduce_scatter_sum = deviceReduceScatter;
      c.device_all_gather = deviceAllGather;
    }
  }
};

/// Both ways of reaching the group, on the GPU.
void onGpu(void (*check)(const GroupBackend &)) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  {
    SCOPED_TRACE("staged through host memory");
    check({infir2rt_cuda_backend(), 1e-5});
  }
  auto wiring = std::make_shared<DeviceWiring>();
  auto wire = [wiring](ThreadGroup &g) { (*wiring)(g); };
  {
    SCOPED_TRACE("device functions");
    check({infir2rt_cuda_backend(), 1e-5, wire});
  }
  {
    SCOPED_TRACE("device functions, each rank on a step stream");
    check({infir2rt_cuda_backend(), 1e-5, wire, /*stream=*/true});
  }
}

} // namespace

TEST(CudaTensorParallel, PartialSumsRoundOnce) { onGpu(partialSums); }
TEST(CudaTensorParallel, SequenceSlicesInRankOrder) { onGpu(sequenceSlices); }
TEST(CudaTensorParallel, VocabularyParallelLossIsTheWholeOne) {
  onGpu(vocabularyParallelLoss);
}
TEST(CudaTensorParallel, VocabularyParallelEmbeddingIsTheWholeOne) {
  onGpu(vocabularyParallelEmbedding);
}
TEST(CudaTensorParallel, ShardedGradientNorm) { onGpu(shardedGradientNorm); }
