//===- Device.cpp - Where a trainer's steps run ---------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "Device.h"

#ifdef INFIR2_HAVE_CUDA
#include "infir2/runtime/CUDA.h"
#endif
#include "infir2/runtime/Error.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <new>
#include <sys/mman.h>
#include <unistd.h>

using namespace infir2::rt;

int infir2::rt::localRank() {
  for (const char *var : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                          "SLURM_LOCALID", "LOCAL_RANK"})
    if (const char *v = std::getenv(var))
      return std::atoi(v);
  return 0;
}

Device::HostRegion::~HostRegion() {
  if (p)
    munmap(p, size);
}

Device::~Device() {
#ifdef INFIR2_HAVE_CUDA
  if (stream_)
    infir2rt_cuda_stream_destroy(stream_);
  infir2rt_cuda_free(deviceState_);
  infir2rt_cuda_free(deviceScratch_);
#endif
}

/// Sets `bytes` at `p` to zero, a slice per thread.
static void zeroInParallel(uint8_t *p, size_t bytes) {
  constexpr size_t kSlice = size_t(1) << 22;
  int64_t slices = int64_t((bytes + kSlice - 1) / kSlice);
#pragma omp parallel for schedule(static) if (slices > 1)
  for (int64_t i = 0; i < slices; ++i)
    std::memset(p + i * kSlice, 0, std::min(kSlice, bytes - i * kSlice));
}

/// Allocates `bytes` (+ slack) of zeroed host memory into `region`, after
/// `others` bytes already taken; false with `error` when the machine has
/// less physical memory than the two need, or the allocation fails.
static bool allocateHost(uint8_t *&region, size_t &mapped, int64_t bytes,
                         int64_t others, std::string &error) {
  auto gib = [](double b) { return b / (1024.0 * 1024.0 * 1024.0); };
  double physical = double(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE);
  char text[256];
  if (physical > 0 && double(bytes + others) > physical) {
    std::snprintf(text, sizeof text,
                  "the model needs %.1f GiB of host memory as planned (state "
                  "and scratch), and this machine has %.1f GiB",
                  gib(double(bytes + others)), gib(physical));
    error = text;
    return false;
  }
  // Anonymous pages are zero; touching one byte of each (by every thread)
  // faults them all in now, as huge pages where the kernel allows, instead
  // of during the first steps.
  constexpr size_t kHuge = size_t(2) << 20, kPage = 4096;
  size_t size = (size_t(bytes) + 64 + kHuge - 1) / kHuge * kHuge;
  void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  region = p == MAP_FAILED ? nullptr : static_cast<uint8_t *>(p);
  mapped = region ? size : 0;
  if (region) {
    madvise(region, size, MADV_HUGEPAGE);
    int64_t pages = int64_t(size / kPage);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < pages; ++i)
      region[i * kPage] = 0;
  } else {
    std::snprintf(text, sizeof text,
                  "cannot allocate %.1f GiB of host memory for the model "
                  "(%.1f GiB already allocated)",
                  gib(double(bytes)), gib(double(others)));
    error = text;
    return false;
  }
  return true;
}

bool Device::open(const std::string &choice, int local, int64_t stateBytes,
                  int64_t scratchBytes, std::string &notice,
                  std::string &error) {
  if (choice != "auto" && choice != "cuda" && choice != "cpu") {
    error = "--device must be auto, cuda or cpu, got '" + choice + "'";
    return false;
  }
  // The host copy of the state; 64 bytes of slack as the compiled step's
  // alignment allows. A model larger than the machine is an error naming
  // the planned and the available memory, not an abort.
  if (!allocateHost(state_.p, state_.size, stateBytes, 0, error))
    return false;
  auto useCpu = [&] {
    return allocateHost(scratch_.p, scratch_.size, scratchBytes, stateBytes,
                        error);
  };
  if (choice == "cpu")
    return useCpu();
#ifndef INFIR2_HAVE_CUDA
  if (choice == "cuda") {
    error = "--device=cuda: this trainer was built without the CUDA backend "
            "(build InfiR2 where nvcc is, with INFIR2_ENABLE_CUDA=ON)";
    return false;
  }
  notice = "built without the CUDA backend: training on the CPU";
  return useCpu();
#else
  char why[512] = {0};
  int32_t device = 0, major = 0, minor = 0;
  std::string unusable;
  if (infir2rt_cuda_select(local, &device, &major, &minor, why, sizeof why))
    unusable = why;
  if (!unusable.empty()) {
    if (choice == "cuda") {
      error = "--device=cuda: " + unusable;
      return false;
    }
    notice = unusable + ": training on the CPU (--device cpu chooses it "
                        "without this notice)";
    return useCpu();
  }
  name_ = why;
  inUseBeforeRegions_ = infir2rt_cuda_memory_in_use();
  if (infir2rt_cuda_malloc(reinterpret_cast<void **>(&deviceState_),
                           stateBytes + 64, why, sizeof why) ||
      infir2rt_cuda_malloc(reinterpret_cast<void **>(&deviceScratch_),
                           scratchBytes + 64, why, sizeof why) ||
      infir2rt_cuda_stream_create(&stream_, why, sizeof why)) {
    error = name_ + ": cannot hold the state (" +
            std::to_string(stateBytes >> 20) + " MiB) and the scratch arena (" +
            std::to_string(scratchBytes >> 20) + " MiB): " + why;
    return false;
  }
  gpu_ = true;
  return true;
#endif
}

void Device::attach(infir2rt_context &ctx) {
  infir2::rt::clearCallError(ctx);
  ctx.device = nullptr;
  ctx.stream = nullptr;
  if (!gpu_) {
    ctx.regions[0] = state_.data();
    ctx.regions[1] = scratch_.data();
    return;
  }
#ifdef INFIR2_HAVE_CUDA
  ctx.regions[0] = deviceState_;
  ctx.regions[1] = deviceScratch_;
  ctx.device = infir2rt_cuda_entries();
  ctx.stream = stream_;
#endif
}

#ifdef INFIR2_HAVE_CUDA
namespace {
bool ok(int32_t rc, const char *why, std::string &error) {
  if (rc)
    error = why;
  return rc == 0;
}
} // namespace
#endif

bool Device::upload(int64_t offset, int64_t bytes, std::string &error) {
  if (!gpu_)
    return true;
#ifdef INFIR2_HAVE_CUDA
  char why[512] = {0};
  return ok(infir2rt_cuda_memcpy(deviceState_ + offset, state_.data() + offset,
                                 bytes, 1, why, sizeof why),
            why, error);
#else
  return true;
#endif
}

bool Device::download(int64_t offset, int64_t bytes, std::string &error) {
  if (!gpu_)
    return true;
#ifdef INFIR2_HAVE_CUDA
  char why[512] = {0};
  return ok(infir2rt_cuda_memcpy(state_.data() + offset, deviceState_ + offset,
                                 bytes, 0, why, sizeof why),
            why, error);
#else
  return true;
#endif
}

bool Device::zero(int64_t offset, int64_t bytes, std::string &error) {
  zeroInParallel(state_.data() + offset, size_t(bytes));
  if (!gpu_)
    return true;
#ifdef INFIR2_HAVE_CUDA
  char why[512] = {0};
  return ok(infir2rt_cuda_zero(deviceState_ + offset, bytes, stream_, why,
                               sizeof why),
            why, error);
#else
  return true;
#endif
}

bool Device::countNonFinite(int64_t offset, int64_t n, int64_t &count,
                            std::string &error) {
  count = 0;
  if (!gpu_) {
    // Exponent bits all ones: inf or NaN. Integer tests vectorize.
    const uint32_t *x =
        reinterpret_cast<const uint32_t *>(state_.data() + offset);
    int64_t bad = 0;
#pragma omp parallel for simd reduction(+ : bad) if (n > 65536)
    for (int64_t i = 0; i < n; ++i)
      bad += (x[i] & 0x7f800000u) == 0x7f800000u;
    count = bad;
    return true;
  }
#ifdef INFIR2_HAVE_CUDA
  char why[512] = {0};
  return ok(infir2rt_cuda_count_nonfinite(
                reinterpret_cast<const float *>(deviceState_ + offset), n,
                stream_, &count, why, sizeof why),
            why, error);
#else
  return true;
#endif
}

int64_t Device::bytesInUse() const {
#ifdef INFIR2_HAVE_CUDA
  if (gpu_)
    return infir2rt_cuda_memory_in_use();
#endif
  return 0;
}

bool Device::finish(std::string &error) {
  if (!gpu_)
    return true;
#ifdef INFIR2_HAVE_CUDA
  char why[512] = {0};
  return ok(infir2rt_cuda_synchronize(stream_, why, sizeof why), why, error);
#else
  return true;
#endif
}
