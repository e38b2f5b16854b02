//===- Backend.cpp - The CPU backend's table ------------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The CPU backend as a peer of the others (Backend.h): its entry points
// (Entries.cpp) and host memory for the regions. Nothing is queued: every
// function has done its work when it returns, so synchronizing is nothing.
//
//===----------------------------------------------------------------------===//

#include "infir2/runtime/Backend.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <sys/mman.h>
#include <unistd.h>

#define INFIR2RT_ENTRY(name, operands, attributes, doc)                                       \
  extern "C" int32_t infir2rt_cpu_##name(infir2rt_context *, const int64_t *, \
                                         const char *);
#include "infir2/runtime/ABI.def"

namespace {

/// Host bytes this backend holds for regions (to refuse a model larger than
/// the machine with a message, not an abort).
std::atomic<int64_t> held{0};

constexpr size_t kHuge = size_t(2) << 20, kPage = 4096;

size_t mappedSize(int64_t bytes) {
  return (size_t(bytes) + kHuge - 1) / kHuge * kHuge;
}

/// Anonymous pages (zero), as huge pages where the kernel allows, all
/// faulted in now by every thread (a byte of each page), so that no step
/// pays for page faults.
int32_t allocate(void **ptr, int64_t bytes, char *why, int64_t whySize) {
  auto gib = [](double b) { return b / (1024.0 * 1024.0 * 1024.0); };
  double physical = double(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE);
  int64_t others = held.load();
  if (physical > 0 && double(bytes + others) > physical) {
    std::snprintf(why, size_t(whySize),
                  "the model needs %.1f GiB of host memory as planned (state "
                  "and scratch), and this machine has %.1f GiB",
                  gib(double(bytes + others)), gib(physical));
    return 1;
  }
  size_t size = mappedSize(bytes);
  void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    std::snprintf(why, size_t(whySize),
                  "cannot allocate %.1f GiB of host memory for the model "
                  "(%.1f GiB already allocated)",
                  gib(double(bytes)), gib(double(others)));
    return 1;
  }
  madvise(p, size, MADV_HUGEPAGE);
  auto *region = static_cast<uint8_t *>(p);
  int64_t pages = int64_t(size / kPage);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < pages; ++i)
    region[i * kPage] = 0;
  held += bytes;
  *ptr = p;
  return 0;
}

void release(void *ptr, int64_t bytes) {
  if (!ptr)
    return;
  munmap(ptr, mappedSize(bytes));
  held -= bytes;
}

int32_t open(int32_t, char *why, int64_t whySize) {
  std::snprintf(why, size_t(whySize), "the CPU");
  return 0;
}

int32_t nothing(void *, const void *, int64_t, void *, char *, int64_t) {
  return 0;
}

int32_t zero(void *ptr, int64_t bytes, void *, char *, int64_t) {
  // A slice per thread.
  constexpr int64_t kSlice = int64_t(1) << 22;
  auto *p = static_cast<uint8_t *>(ptr);
  int64_t slices = (bytes + kSlice - 1) / kSlice;
#pragma omp parallel for schedule(static) if (slices > 1)
  for (int64_t i = 0; i < slices; ++i)
    std::memset(p + i * kSlice, 0, size_t(std::min(kSlice, bytes - i * kSlice)));
  return 0;
}

int32_t copy(void *dst, const void *src, int64_t bytes, void *, char *,
             int64_t) {
  std::memmove(dst, src, size_t(bytes));
  return 0;
}

int32_t countNonFinite(const float *data, int64_t n, int64_t *count, void *,
                       char *, int64_t) {
  // Exponent bits all ones: inf or NaN. Integer tests vectorize.
  const auto *x = reinterpret_cast<const uint32_t *>(data);
  int64_t bad = 0;
#pragma omp parallel for simd reduction(+ : bad) if (n > 65536)
  for (int64_t i = 0; i < n; ++i)
    bad += (x[i] & 0x7f800000u) == 0x7f800000u;
  *count = bad;
  return 0;
}

int32_t streamCreate(void **stream, char *, int64_t) {
  *stream = nullptr;
  return 0;
}
void streamDestroy(void *) {}
int32_t synchronize(void *, char *, int64_t) { return 0; }
int64_t memoryInUse() { return 0; }

const infir2rt_backend cpuBackend = {
    "cpu",
    {
#define INFIR2RT_ENTRY(name, operands, attributes, doc) &infir2rt_cpu_##name,
#include "infir2/runtime/ABI.def"
    },
    /*host_memory=*/1,
    open,
    allocate,
    release,
    nothing,
    nothing,
    zero,
    copy,
    countNonFinite,
    streamCreate,
    streamDestroy,
    synchronize,
    memoryInUse,
    /*mark=*/nullptr,
    /*fp8_gemms=*/nullptr, // all: the CPU emulates every scaling
};

} // namespace

extern "C" const infir2rt_backend *infir2rt_cpu_backend(void) {
  return &cpuBackend;
}
