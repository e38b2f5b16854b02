//===- Buffer.cpp - The CPU kernels' pool of temporary storage -------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "Buffer.h"

#include "infir2/runtime/ABI.h"

#include <sys/mman.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <new>

namespace infir2::rt::cpu {

namespace {

constexpr size_t kPage = 4096, kHuge = size_t(2) << 20;

struct Pool {
  std::mutex mutex;
  std::multimap<size_t, void *> free; ///< by capacity
  size_t held = 0;                    ///< every block, free or taken
};

Pool &pool() {
  static Pool *p = new Pool; // never destroyed: kernels may run at exit
  return *p;
}

} // namespace

void *poolTake(size_t bytes, size_t &capacity) {
  Pool &p = pool();
  {
    std::lock_guard<std::mutex> lock(p.mutex);
    // The smallest free block that fits, unless it is more than twice the
    // request (then a block of its own, so that small requests do not pin
    // large blocks).
    auto it = p.free.lower_bound(bytes);
    if (it != p.free.end() && it->first <= 2 * bytes + kPage) {
      capacity = it->first;
      void *block = it->second;
      p.free.erase(it);
      return block;
    }
  }
  bool huge = bytes >= kHuge;
  size_t align = huge ? kHuge : 64;
  capacity = (bytes + (huge ? kHuge : kPage) - 1) / (huge ? kHuge : kPage) *
             (huge ? kHuge : kPage);
  void *block = std::aligned_alloc(align, capacity);
  if (!block)
    throw std::bad_alloc();
  if (huge)
    madvise(block, capacity, MADV_HUGEPAGE);
  std::lock_guard<std::mutex> lock(p.mutex);
  p.held += capacity;
  return block;
}

void poolGive(void *block, size_t capacity) {
  Pool &p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  p.free.emplace(capacity, block);
}

} // namespace infir2::rt::cpu

extern "C" int64_t infir2rt_cpu_pool_bytes(void) {
  infir2::rt::cpu::Pool &p = infir2::rt::cpu::pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  return int64_t(p.held);
}
