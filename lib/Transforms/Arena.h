//===- Arena.h - First-fit arena allocation for the memory planner -*- C++
//-*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The scratch arena of a planned step: first-fit allocation of aligned
// blocks with coalescing frees. Internal to MemoryPlan.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_LIB_TRANSFORMS_ARENA_H
#define INFIR2_LIB_TRANSFORMS_ARENA_H

#include "infir2/Transforms/MemoryPlan.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>

namespace infir2 {

/// First-fit allocation in one arena, with coalescing frees.
class Arena {
public:
  int64_t allocate(int64_t bytes) {
    bytes = alignedBytes(std::max<int64_t>(bytes, 1));
    for (auto it = free_.begin(); it != free_.end(); ++it)
      if (it->second >= bytes) {
        int64_t offset = it->first, rest = it->second - bytes;
        free_.erase(it);
        if (rest)
          free_[offset + bytes] = rest;
        return offset;
      }
    // Grow: extend a free block that ends at the top, or start a new one.
    int64_t offset = top_;
    if (!free_.empty()) {
      auto last = std::prev(free_.end());
      if (last->first + last->second == top_) {
        offset = last->first;
        free_.erase(last);
      }
    }
    top_ = offset + bytes;
    return offset;
  }

  void release(int64_t offset, int64_t bytes) {
    bytes = alignedBytes(std::max<int64_t>(bytes, 1));
    auto it = free_.emplace(offset, bytes).first;
    auto next = std::next(it);
    if (next != free_.end() && it->first + it->second == next->first) {
      it->second += next->second;
      free_.erase(next);
    }
    if (it != free_.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second == it->first) {
        prev->second += it->second;
        free_.erase(it);
      }
    }
  }

  int64_t size() const { return top_; }

private:
  std::map<int64_t, int64_t> free_;
  int64_t top_ = 0;
};

} // namespace infir2

#endif // INFIR2_LIB_TRANSFORMS_ARENA_H
