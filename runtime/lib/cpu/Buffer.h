//===- Buffer.h - Reused temporary storage of the CPU kernels ---*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Internal to the CPU backend: the FP32 (or BF16) copies a kernel makes of
// its operands and results for one call. They come from a pool that keeps
// what earlier calls gave back, so a training step repeats its first step's
// requests without allocating, faulting pages in or zeroing anything; their
// contents are unspecified until written. Large blocks are 2 MiB-aligned
// and ask for transparent huge pages. The pool's high-water mark is what the
// trainer reports beside the compiler's plan (infir2rt_cpu_pool_bytes).
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_CPU_BUFFER_H
#define INFIR2_RUNTIME_CPU_BUFFER_H

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace infir2::rt::cpu {

/// A block of at least `bytes` bytes; its size is returned in `capacity`.
void *poolTake(size_t bytes, size_t &capacity);
/// Gives a block from poolTake back for reuse.
void poolGive(void *block, size_t capacity);

/// Temporary storage for `size()` elements of T, drawn from the pool.
template <typename T> class Scratch {
public:
  Scratch() = default;
  explicit Scratch(int64_t n) { resize(n); }
  Scratch(const Scratch &) = delete;
  Scratch &operator=(const Scratch &) = delete;
  Scratch(Scratch &&o) noexcept : p_(o.p_), capacity_(o.capacity_), n_(o.n_) {
    o.p_ = nullptr;
    o.capacity_ = 0;
    o.n_ = 0;
  }
  ~Scratch() {
    if (p_)
      poolGive(p_, capacity_);
  }

  /// Room for n elements; their values are unspecified.
  T *resize(int64_t n) {
    size_t bytes = size_t(std::max<int64_t>(n, 1)) * sizeof(T);
    if (bytes > capacity_) {
      if (p_)
        poolGive(p_, capacity_);
      p_ = static_cast<T *>(poolTake(bytes, capacity_));
    }
    n_ = n;
    return p_;
  }
  /// Room for n elements, all set to v.
  T *assign(int64_t n, T v) {
    std::fill_n(resize(n), n, v);
    return p_;
  }
  T *data() const { return p_; }
  int64_t size() const { return n_; }
  T &operator[](int64_t i) const { return p_[i]; }

private:
  T *p_ = nullptr;
  size_t capacity_ = 0;
  int64_t n_ = 0;
};

using Buffer = Scratch<float>;

} // namespace infir2::rt::cpu

#endif // INFIR2_RUNTIME_CPU_BUFFER_H
