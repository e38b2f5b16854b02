//===- StateLayout.cpp - The state region, slot by slot -------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "io/StateLayout.h"

#include "infir2/runtime/Float.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>

using namespace infir2::rt;

int64_t Extent::numel() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string infir2::rt::storedDtype(const std::string &d) {
  return d == "f32"    ? "F32"
         : d == "bf16" ? "BF16"
         : d == "f16"  ? "F16"
         : d == "f64"  ? "F64"
                       : "";
}

float infir2::rt::readElement(const std::string &dtype, const uint8_t *data,
                              int64_t i) {
  auto load = [&](auto v, int64_t size) {
    std::memcpy(&v, data + i * size, size);
    return v;
  };
  if (dtype == "bf16")
    return bf16ToFloat(load(uint16_t(), 2));
  if (dtype == "f16")
    return halfToFloat(load(uint16_t(), 2));
  if (dtype == "f64")
    return float(load(double(), 8));
  if (dtype == "i32")
    return float(load(int32_t(), 4));
  if (dtype == "i64")
    return float(load(int64_t(), 8));
  return load(float(), 4);
}

void infir2::rt::writeElement(const std::string &dtype, uint8_t *data,
                              int64_t i, float v) {
  auto store = [&](auto x, int64_t size) {
    std::memcpy(data + i * size, &x, size);
  };
  if (dtype == "bf16")
    store(floatToBF16(v), 2);
  else if (dtype == "f16")
    store(floatToHalf(v), 2);
  else if (dtype == "f64")
    store(double(v), 8);
  else if (dtype == "i32")
    store(int32_t(v), 4);
  else if (dtype == "i64")
    store(int64_t(v), 8);
  else
    store(v, 4);
}

std::vector<std::pair<int64_t, int64_t>>
StateLayout::runsOf(SlotKind kind) const {
  std::vector<const ManifestSlot *> byOffset;
  for (const ManifestSlot &s : m_.slots)
    byOffset.push_back(&s);
  std::stable_sort(byOffset.begin(), byOffset.end(),
                   [](const ManifestSlot *a, const ManifestSlot *b) {
                     return a->offset < b->offset;
                   });
  std::vector<std::pair<int64_t, int64_t>> runs;
  // Slots start at multiples of the plan's 64 bytes: a wider gap is no
  // padding, and a run never covers it.
  constexpr int64_t kAlignment = 64;
  bool extend = false; // the previous slot was of `kind`
  for (const ManifestSlot *s : byOffset) {
    if (s->kind != kind) {
      extend = false;
      continue;
    }
    if (extend &&
        s->offset - (runs.back().first + runs.back().second) >= kAlignment)
      extend = false;
    if (extend)
      runs.back().second = s->offset + s->bytes - runs.back().first;
    else
      runs.push_back({s->offset, s->bytes});
    extend = true;
  }
  return runs;
}

const ManifestSlot *StateLayout::find(SlotKind kind,
                                      const std::string &name) const {
  for (const ManifestSlot &s : m_.slots)
    if (s.kind == kind && s.name == name)
      return &s;
  return nullptr;
}

Expected<const ManifestSlot *> StateLayout::get(SlotKind kind,
                                                const std::string &name) const {
  if (const ManifestSlot *s = find(kind, name))
    return s;
  return fail("the compiled model has no %s '%s'", slotKindName(kind),
              name.c_str());
}

Extent StateLayout::extentOf(const ManifestSlot &s, int rank) const {
  if (!sharded() || !isOptimizerState(s) || s.shape.empty())
    return {s.shape, 0, s.numel()};
  const ManifestSlot *whole = find(SlotKind::Param, s.name);
  if (!whole || whole->shape.empty())
    return {s.shape, 0, s.numel()};
  int64_t rows = s.shape[0], rowElems = rows ? s.numel() / rows : 0;
  int64_t first = int64_t(rank) * rows;
  int64_t mine =
      std::max<int64_t>(0, std::min(whole->shape[0], first + rows) - first);
  return {whole->shape, first * rowElems, mine * rowElems};
}

namespace {

/// An element type, decoded once per tensor rather than per element.
enum class Kind { F32, BF16, F16, F64 };

Kind kindOf(const std::string &dtype) { // "bf16" (manifest) or "BF16"
  std::string d = dtype;
  std::transform(d.begin(), d.end(), d.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  return d == "bf16"  ? Kind::BF16
         : d == "f16" ? Kind::F16
         : d == "f64" ? Kind::F64
                      : Kind::F32;
}

/// Elements [begin, begin + count) of `data` as FP32.
void toFloats(Kind k, const uint8_t *data, int64_t begin, int64_t count,
              float *out) {
  switch (k) {
  case Kind::F32:
    std::memcpy(out, data + 4 * begin, 4 * count);
    return;
  case Kind::F64:
    for (int64_t i = 0; i < count; ++i) {
      double d;
      std::memcpy(&d, data + 8 * (begin + i), 8);
      out[i] = float(d);
    }
    return;
  case Kind::BF16:
  case Kind::F16:
    for (int64_t i = 0; i < count; ++i) {
      uint16_t h;
      std::memcpy(&h, data + 2 * (begin + i), 2);
      out[i] = k == Kind::BF16 ? bf16ToFloat(h) : halfToFloat(h);
    }
    return;
  }
}

/// `count` FP32 values into elements [begin, begin + count) of `data`,
/// rounded once to its type.
void fromFloats(Kind k, const float *in, int64_t begin, int64_t count,
                uint8_t *data) {
  switch (k) {
  case Kind::F32:
    std::memcpy(data + 4 * begin, in, 4 * count);
    return;
  case Kind::F64:
    for (int64_t i = 0; i < count; ++i) {
      double d = in[i];
      std::memcpy(data + 8 * (begin + i), &d, 8);
    }
    return;
  case Kind::BF16:
  case Kind::F16:
    for (int64_t i = 0; i < count; ++i) {
      uint16_t h = k == Kind::BF16 ? floatToBF16(in[i]) : floatToHalf(in[i]);
      std::memcpy(data + 2 * (begin + i), &h, 2);
    }
    return;
  }
}

uint64_t splitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// Elements [begin, begin + count) of the normal(0, std) draws keyed by
/// `key`: element i is one half of the Box-Muller pair i / 2, made from the
/// hash of (key, i / 2). Any element can be drawn on its own, so threads
/// share the work and the values do not depend on how many there are.
void normals(uint64_t key, float std, int64_t begin, int64_t count,
             float *out) {
  for (int64_t i = begin; i < begin + count;) {
    uint64_t h = splitMix64(key ^ splitMix64(uint64_t(i >> 1)));
    // u1 in (0, 1] from 24 bits, so |z| < 5.8; u2 in [0, 1).
    float u1 = (float(h >> 40) + 1.0f) * 0x1p-24f;
    float u2 = float(h & 0xffffffu) * 0x1p-24f;
    float r = std::sqrt(-2.0f * std::log(u1));
    float z[2] = {r * std::cos(6.28318531f * u2),
                  r * std::sin(6.28318531f * u2)};
    for (int c = int(i & 1); c < 2 && i < begin + count; ++c, ++i)
      out[i - begin] = std * z[c];
  }
}

} // namespace

std::vector<int64_t> StateLayout::rankShape(const ManifestSlot &s) const {
  if (isOptimizerState(s))
    if (const ManifestSlot *param = find(SlotKind::Param, s.name))
      return param->shape;
  return s.shape;
}

std::vector<int64_t> StateLayout::wholeShape(const ManifestSlot &s) const {
  std::vector<int64_t> shape = rankShape(s);
  if (s.tpDim >= 0)
    shape[s.tpDim] *= m_.tensorParallel;
  return shape;
}

int64_t StateLayout::shardRun(const ManifestSlot &s) const {
  std::vector<int64_t> shape = rankShape(s);
  int64_t inner = 1;
  for (size_t d = std::max<int64_t>(s.tpDim, 0); d < shape.size(); ++d)
    inner *= shape[d];
  return inner;
}

// A shard's element i = o * inner + k is element
// o * inner * N + rank * inner + k of the whole tensor.
int64_t StateLayout::wholeIndex(const ManifestSlot &s, int64_t i) const {
  if (s.tpDim < 0)
    return i;
  int64_t inner = shardRun(s);
  return (i / inner) * inner * m_.tensorParallel + tpRank_ * inner + i % inner;
}

void StateLayout::assembleWhole(const ManifestSlot &s, const uint8_t *gathered,
                                int64_t elementBytes, uint8_t *whole) const {
  int64_t n = 1, inner = shardRun(s), size = m_.tensorParallel;
  for (int64_t d : rankShape(s))
    n *= d;
  for (int64_t r = 0; r < size; ++r)
    for (int64_t o = 0; o < n / inner; ++o)
      std::memcpy(whole + ((o * size + r) * inner) * elementBytes,
                  gathered + (r * n + o * inner) * elementBytes,
                  size_t(inner * elementBytes));
}

Status StateLayout::writeParameter(
    const ManifestSlot &param, uint8_t *state, int rank,
    const std::function<void(int64_t, int64_t, float *)> &values) const {
  Expected<const ManifestSlot *> master = get(SlotKind::Master, param.name);
  if (!master)
    return master.failure();
  Extent e = extentOf(**master, rank);
  uint8_t *mw = state + (*master)->offset;
  uint8_t *w = state + param.offset;
  Kind kind = kindOf(param.dtype);
  // A tensor-parallel shard's elements, in runs of `inner` consecutive
  // elements of the whole tensor, each drawn or read where it lies there.
  int64_t inner = shardRun(param);
  auto wholeValues = [&](int64_t begin, int64_t count, float *out) {
    if (param.tpDim < 0)
      return values(begin, count, out);
    for (int64_t i = begin; i < begin + count;) {
      int64_t run = std::min(inner - i % inner, begin + count - i);
      values(wholeIndex(param, i), run, out + (i - begin));
      i += run;
    }
  };
  constexpr int64_t kChunk = 16384;
  int64_t n = param.numel(), chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (int64_t c = 0; c < chunks; ++c) {
    float chunk[kChunk];
    int64_t begin = c * kChunk, count = std::min(kChunk, n - begin);
    wholeValues(begin, count, chunk);
    int64_t lo = std::max(begin, e.begin),
            hi = std::min(begin + count, e.begin + e.count);
    if (hi > lo) // this rank's rows of the FP32 master
      std::memcpy(mw + 4 * (lo - e.begin), chunk + (lo - begin), 4 * (hi - lo));
    fromFloats(kind, chunk, begin, count, w);
  }
  return Status::ok();
}

Status StateLayout::initialize(uint8_t *state, std::mt19937_64 &rng,
                               int rank) const {
  // One draw of the run's generator keys every parameter's values.
  uint64_t seed = rng();
  for (const ManifestSlot &s : m_.slots) {
    if (s.kind != SlotKind::Param)
      continue;
    uint64_t key = seed;
    for (char ch : s.name) // FNV-1a of the name, from the seed
      key = (key ^ uint8_t(ch)) * 0x100000001b3ull;
    key = splitMix64(key);
    bool normal = s.init == "normal";
    float value = s.init == "ones" ? 1.0f : 0.0f, std = float(s.std);
    Status written = writeParameter(
        s, state, rank, [&](int64_t begin, int64_t count, float *out) {
          if (normal)
            normals(key, std, begin, count, out);
          else
            std::fill(out, out + count, value);
        });
    if (!written)
      return written;
  }
  return Status::ok();
}

Status StateLayout::loadParameter(const ManifestSlot &s, const StoredTensor &t,
                                  const std::string &path, uint8_t *state,
                                  int rank) const {
  if (t.shape != wholeShape(s)) {
    std::string want, got;
    for (int64_t d : wholeShape(s))
      want += (want.empty() ? "" : "x") + std::to_string(d);
    for (int64_t d : t.shape)
      got += (got.empty() ? "" : "x") + std::to_string(d);
    return fail("%s: tensor '%s' has shape [%s], the model expects [%s]",
                path.c_str(), s.name.c_str(), got.c_str(), want.c_str());
  }
  if (t.dtype != "F32" && t.dtype != "BF16" && t.dtype != "F16" &&
      t.dtype != "F64")
    return fail("%s: tensor '%s' has dtype %s (expected F32, BF16, F16 or "
                "F64)",
                path.c_str(), s.name.c_str(), t.dtype.c_str());
  Kind kind = kindOf(t.dtype);
  return writeParameter(s, state, rank,
                        [&](int64_t begin, int64_t count, float *out) {
                          toFloats(kind, t.bytes.data(), begin, count, out);
                        });
}

Status
StateLayout::loadParameters(const std::map<std::string, StoredTensor> &tensors,
                            const std::string &path, uint8_t *state,
                            int rank) const {
  for (const ManifestSlot &s : m_.slots) {
    if (s.kind != SlotKind::Param)
      continue;
    auto it = tensors.find(s.name);
    if (it == tensors.end())
      return fail("%s: tensor '%s' is missing", path.c_str(), s.name.c_str());
    INFIR2_RETURN_IF_ERROR(loadParameter(s, it->second, path, state, rank));
  }
  return Status::ok();
}
