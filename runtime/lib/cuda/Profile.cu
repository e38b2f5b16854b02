//===- Profile.cu - Each entry point's GPU time, from CUDA events ---------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "Profile.h"
#include "infir2/runtime/ABI.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>
#include <vector>

namespace infir2::rt::cuda {

namespace {

/// The end of a stream's last interval, not an entry point.
constexpr int32_t kEnd = INFIR2RT_NUM_ENTRIES;

struct Mark {
  cudaEvent_t event;
  int32_t entry;
};

struct EventProfile {
  std::mutex mutex;
  std::map<cudaStream_t, std::vector<Mark>> marks;
  std::vector<cudaEvent_t> pool;
  int64_t calls[INFIR2RT_NUM_ENTRIES] = {};
  double ms[INFIR2RT_NUM_ENTRIES] = {};

  cudaEvent_t take() {
    cudaEvent_t e = nullptr;
    if (!pool.empty()) {
      e = pool.back();
      pool.pop_back();
    } else if (cudaEventCreate(&e) != cudaSuccess) {
      e = nullptr;
    }
    return e;
  }

  /// Gives a stream's marks' events back to the pool.
  void release(std::vector<Mark> &m) {
    for (const Mark &k : m)
      pool.push_back(k.event);
    m.clear();
  }

  void record(cudaStream_t s, int32_t entry) {
    if (cudaEvent_t e = take()) {
      if (cudaEventRecord(e, s) == cudaSuccess)
        marks[s].push_back({e, entry});
      else
        pool.push_back(e);
    }
  }

  ~EventProfile() {
    double total = 0.0;
    int order[INFIR2RT_NUM_ENTRIES];
    for (int i = 0; i < INFIR2RT_NUM_ENTRIES; ++i) {
      order[i] = i;
      total += ms[i];
    }
    if (total == 0.0)
      return;
    static const char *names[] = {
#define INFIR2RT_ENTRY(name, operands, attributes, doc) #name,
#include "infir2/runtime/ABI.def"
    };
    std::sort(order, order + INFIR2RT_NUM_ENTRIES,
              [&](int a, int b) { return ms[a] > ms[b]; });
    std::fprintf(stderr,
                 "profile: %.3f s of GPU time from each call's start to the "
                 "next's (CUDA events, nothing synchronized)\n",
                 total * 1e-3);
    for (int i : order)
      if (calls[i])
        std::fprintf(stderr, "profile: %-22s %8lld calls %9.3f s %5.1f%%\n",
                     names[i], (long long)calls[i], ms[i] * 1e-3,
                     100.0 * ms[i] / total);
  }
};

EventProfile &profile() {
  static EventProfile p;
  return p;
}

} // namespace

void markEntry(void *stream, int32_t entry) {
  EventProfile &p = profile();
  std::lock_guard<std::mutex> guard(p.mutex);
  p.record(static_cast<cudaStream_t>(stream), entry);
}

void closeMarks(cudaStream_t stream) {
  EventProfile &p = profile();
  std::lock_guard<std::mutex> guard(p.mutex);
  auto it = p.marks.find(stream);
  if (it != p.marks.end() && !it->second.empty() &&
      it->second.back().entry != kEnd)
    p.record(stream, kEnd);
}

void accountMarks(cudaStream_t stream) {
  EventProfile &p = profile();
  std::lock_guard<std::mutex> guard(p.mutex);
  auto it = p.marks.find(stream);
  if (it == p.marks.end())
    return;
  std::vector<Mark> &m = it->second;
  for (size_t i = 0; i + 1 < m.size(); ++i) {
    float t = 0.0f;
    if (m[i].entry != kEnd &&
        cudaEventElapsedTime(&t, m[i].event, m[i + 1].event) == cudaSuccess) {
      p.ms[m[i].entry] += t;
      ++p.calls[m[i].entry];
    }
  }
  p.release(m);
}

void forgetMarks(cudaStream_t stream) {
  EventProfile &p = profile();
  std::lock_guard<std::mutex> guard(p.mutex);
  auto it = p.marks.find(stream);
  if (it == p.marks.end())
    return;
  p.release(it->second);
  p.marks.erase(it);
}

} // namespace infir2::rt::cuda
