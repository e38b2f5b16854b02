//===- Attributes.h - Each entry point's attributes, by name ----*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// One struct per entry point of ABI.def, infir2::rt::attrs::<entry>, with a
// field per attribute its ATTRS(...) declares, of its type: REAL a double,
// INT an int64_t, BOOL a bool, INTS and REALS an Array of the words. The
// compiler fills one and encode()s it into the call's attribute words (the
// lowering to infir2rt.call); every backend decode<attrs::E>()s the words of
// a descriptor (ABI.h) into one, so no backend reads a word by position and
// a field added to ABI.def reaches both sides by name. Header-only, no
// dependencies beyond the C++ standard library; host code (the CUDA backend
// decodes on the host and passes values to its kernels).
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_ATTRIBUTES_H
#define INFIR2_RUNTIME_ATTRIBUTES_H

#include "infir2/runtime/ABI.h"

#include <cstdint>
#include <cstring>
#include <vector>

namespace infir2::rt::attrs {

/// A run of attribute words read as `T`: a view of a descriptor's words
/// (decode) or of the compiler's values (encode), never owning them.
template <typename T> class Array {
public:
  Array() = default;
  /// A view of `size` doubles at `words` (8 bytes each).
  Array(const void *words, int64_t size) : words_(words), size_(size) {}
  /// A view of `values`, which must outlive the Array.
  explicit Array(const std::vector<double> &values)
      : words_(values.data()), size_(int64_t(values.size())) {}

  int64_t size() const { return size_; }
  T operator[](int64_t i) const {
    double d;
    std::memcpy(&d, static_cast<const char *>(words_) + i * 8, sizeof d);
    return T(d);
  }
  std::vector<T> values() const {
    std::vector<T> out(static_cast<size_t>(size_));
    for (int64_t i = 0; i < size_; ++i)
      out[static_cast<size_t>(i)] = (*this)[i];
    return out;
  }

private:
  const void *words_ = nullptr;
  int64_t size_ = 0;
};

#define ATTRS(...) __VA_ARGS__
#define REAL(name) double name = 0.0;
#define INT(name) int64_t name = 0;
#define BOOL(name) bool name = false;
#define INTS(name, count) Array<int64_t> name;
#define REALS(name, count) Array<double> name;
#define INFIR2RT_ENTRY(entry, operands, attributes, doc)                       \
  struct entry {                                                               \
    attributes                                                                 \
  };
#include "infir2/runtime/ABI.def"
#undef REAL
#undef INT
#undef BOOL
#undef INTS
#undef REALS

namespace detail {

/// Reads a descriptor's attribute words in order. Counts (RANK, ATTR, FLAG
/// in ABI.def) read the descriptor: the dispatcher has checked its
/// signature before a backend decodes it.
struct Reader {
  const int64_t *desc;
  int64_t next = 0;

  const int64_t *word(int64_t i) const {
    return desc + 2 + desc[0] * INFIR2RT_OPERAND_WORDS + i;
  }
  double real(int64_t i) const {
    double d;
    std::memcpy(&d, word(i), sizeof d);
    return d;
  }
  double take() { return real(next++); }
  int64_t rank(int64_t i) const {
    return desc[2 + i * INFIR2RT_OPERAND_WORDS + 2];
  }
  template <typename T> Array<T> takeArray(int64_t count) {
    Array<T> a(word(next), count);
    next += count;
    return a;
  }
};

/// Appends attribute words in order.
struct Writer {
  std::vector<double> &out;
  void put(double v) { out.push_back(v); }
  template <typename T> void put(const Array<T> &a) {
    for (int64_t i = 0; i < a.size(); ++i)
      out.push_back(double(a[i]));
  }
};

} // namespace detail

// Each entry's fields read from, and written to, its words in order.

#define RANK(i) r.rank(i)
#define ATTR(i) int64_t(r.real(i))
#define FLAG(i) (r.real(i) != 0.0 ? 1 : 0)
#define REAL(name) a.name = r.take();
#define INT(name) a.name = int64_t(r.take());
#define BOOL(name) a.name = r.take() != 0.0;
#define INTS(name, count) a.name = r.takeArray<int64_t>(count);
#define REALS(name, count) a.name = r.takeArray<double>(count);
#define INFIR2RT_ENTRY(entry, operands, attributes, doc)                       \
  inline void read(entry &a, detail::Reader &r) { attributes }
#include "infir2/runtime/ABI.def"
#undef RANK
#undef ATTR
#undef FLAG
#undef REAL
#undef INT
#undef BOOL
#undef INTS
#undef REALS

#define REAL(name) w.put(a.name);
#define INT(name) w.put(double(a.name));
#define BOOL(name) w.put(a.name ? 1.0 : 0.0);
#define INTS(name, count) w.put(a.name);
#define REALS(name, count) w.put(a.name);
#define INFIR2RT_ENTRY(entry, operands, attributes, doc)                       \
  inline void write(const entry &a, detail::Writer &w) { attributes }
#include "infir2/runtime/ABI.def"
#undef REAL
#undef INT
#undef BOOL
#undef INTS
#undef REALS
#undef ATTRS

/// The attributes of a call of entry `T` (attrs::<entry>) from its
/// descriptor.
template <typename T> T decode(const int64_t *desc) {
  T a;
  detail::Reader r{desc};
  read(a, r);
  return a;
}

/// `a`'s attribute words, in ABI.def's order, appended to `out`.
template <typename T> void encode(const T &a, std::vector<double> &out) {
  detail::Writer w{out};
  write(a, w);
}

/// The quantization part of a fused producer's attributes (F:
/// attrs::rms_norm_quantize_dual or attrs::swiglu_quantize_dual), as
/// quantize_dual's: its arrays view the fused call's words.
template <typename F> quantize_dual quantizePart(const F &fused) {
  quantize_dual q;
  q.format = fused.format;
  q.scale_rule = fused.scale_rule;
  q.block = fused.block;
  q.block_t = fused.block_t;
  return q;
}

/// The attribute words of `a`.
template <typename T> std::vector<double> encoded(const T &a) {
  std::vector<double> words;
  encode(a, words);
  return words;
}

} // namespace infir2::rt::attrs

#endif // INFIR2_RUNTIME_ATTRIBUTES_H
