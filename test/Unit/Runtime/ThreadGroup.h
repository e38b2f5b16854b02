//===- ThreadGroup.h - A tensor-parallel group of threads -------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// A group of N ranks in one process, one thread each, behind the runtime's
// communicator interface (infir2rt_communicator): the tensor-parallel
// kernels of either backend run as N ranks without MPI, so that a unit test
// can compare them with each other and with the whole computation on one
// GPU. Each collective posts the rank's buffer, waits for every rank, reads
// the others' in rank order (sums in FP32, rank 0 first), and waits again
// before anyone writes or posts the next one. A rank that never arrives
// (its call failed first) fails the others' collectives after 60 s.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_TEST_UNIT_RUNTIME_THREADGROUP_H
#define INFIR2_TEST_UNIT_RUNTIME_THREADGROUP_H

#include "infir2/runtime/ABI.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace infir2::test {

class ThreadGroup {
public:
  explicit ThreadGroup(int size)
      : size_(size), posted_(size), members_(size), interfaces_(size) {
    for (int r = 0; r < size; ++r) {
      members_[r] = {this, r};
      infir2rt_communicator &c = interfaces_[r];
      c.impl = &members_[r];
      c.rank = r;
      c.size = size;
      c.all_reduce_sum = allReduceSum;
      c.reduce_scatter_sum = reduceScatterSum;
      c.all_gather = allGather;
    }
  }

  int size() const { return size_; }
  /// Rank r's interface (its device functions may be set by a test).
  infir2rt_communicator &rank(int r) { return interfaces_[r]; }

  /// f(r) on one thread per rank; returns when all are done.
  void run(const std::function<void(int)> &f) {
    std::vector<std::thread> threads;
    for (int r = 0; r < size_; ++r)
      threads.emplace_back(f, r);
    for (std::thread &t : threads)
      t.join();
  }

private:
  struct Member {
    ThreadGroup *group;
    int rank;
  };

  /// Waits for every rank; false, for good, once a rank has waited 60 s
  /// (one failed before its collective): the others fail instead of hang.
  bool barrier() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (aborted_)
      return false;
    int64_t generation = generation_;
    if (++arrived_ == size_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
      return true;
    }
    bool arrived = cv_.wait_for(lock, std::chrono::seconds(60), [&] {
      return generation_ != generation || aborted_;
    });
    if (arrived && !aborted_)
      return true;
    aborted_ = true;
    cv_.notify_all();
    return false;
  }

  using Reader = std::function<void(const std::vector<const void *> &)>;

  /// Posts `mine`, lets `read` see every rank's, then waits for all reads;
  /// 1, with `error` set, where a rank never arrived.
  static int32_t exchange(void *impl, const void *mine, const Reader &read,
                          char *error, int64_t errorSize) {
    Member *m = static_cast<Member *>(impl);
    m->group->posted_[m->rank] = mine;
    bool ok = m->group->barrier();
    if (ok)
      read(m->group->posted_);
    if (ok && m->group->barrier())
      return 0;
    std::snprintf(error, size_t(errorSize), "%s",
                  "a rank of the thread group never reached the collective");
    return 1;
  }

  static int32_t allReduceSum(void *impl, float *data, int64_t n, char *error,
                              int64_t errorSize) {
    std::vector<float> sum(size_t(n), 0.0f);
    Reader add = [&](const std::vector<const void *> &all) {
      for (const void *p : all)
        for (int64_t i = 0; i < n; ++i)
          sum[size_t(i)] += static_cast<const float *>(p)[i];
    };
    int32_t rc = exchange(impl, data, add, error, errorSize);
    if (!rc)
      std::memcpy(data, sum.data(), size_t(n) * 4);
    return rc;
  }

  static int32_t reduceScatterSum(void *impl, const float *send, float *recv,
                                  int64_t n, char *error, int64_t errorSize) {
    int rank = static_cast<Member *>(impl)->rank;
    std::vector<float> sum(size_t(n), 0.0f);
    Reader add = [&](const std::vector<const void *> &all) {
      for (const void *p : all)
        for (int64_t i = 0; i < n; ++i)
          sum[size_t(i)] += static_cast<const float *>(p)[rank * n + i];
    };
    int32_t rc = exchange(impl, send, add, error, errorSize);
    if (!rc)
      std::memcpy(recv, sum.data(), size_t(n) * 4);
    return rc;
  }

  static int32_t allGather(void *impl, const void *send, void *recv,
                           int64_t bytes, char *error, int64_t errorSize) {
    std::vector<uint8_t> all;
    Reader concatenate = [&](const std::vector<const void *> &posted) {
      for (const void *p : posted) {
        const uint8_t *b = static_cast<const uint8_t *>(p);
        all.insert(all.end(), b, b + bytes);
      }
    };
    int32_t rc = exchange(impl, send, concatenate, error, errorSize);
    if (!rc)
      std::memcpy(recv, all.data(), all.size());
    return rc;
  }

  int size_;
  std::vector<const void *> posted_;
  std::vector<Member> members_;
  std::vector<infir2rt_communicator> interfaces_;
  std::mutex mutex_;
  std::condition_variable cv_;
  int arrived_ = 0;
  int64_t generation_ = 0;
  bool aborted_ = false;
};

} // namespace infir2::test

#endif // INFIR2_TEST_UNIT_RUNTIME_THREADGROUP_H
